"""The kernel cache's key: which of dynlib's sources hold or feed compiled code, and their hash.

Numba keys a cached function on its own source file only, so a kernel whose callee in
another file changed would load old machine code. dyn's cache folder is named after a hash
of every source that holds or feeds compiled code (`kernel_sources`: the modules that define
kernels, the model's records, and what they import at module level): any change to those (an
upgrade, a developer's edit, another checkout) is another folder and stale code never loads,
while an edit elsewhere (a command's Python, a file reader, a page template, a message) keeps
every cached kernel (`dynlib._numba.cache`).
"""
import os
import re
from functools import lru_cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent.parent  # dynlib/

_IMPORT = re.compile(r"^(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))", re.M)
_IMPORT_LINE = re.compile(r"\n(?=from[ \t]|import[ \t])")  # where _IMPORT can match: found at C speed
_DECORATORS = {"jit", "kernel", "inline_kernel", "allocating_kernel"}  # dyn's names for "compiled" (decorators.py)
_COMPILERS = ("numba", "llvmlite")
# define the records every kernel takes (ModelArrays, Data) without importing them
_ARGUMENT_MODULES = ("core/model.py",)


def _module_imports(rel, text, files):
    """(modules, defines): the dynlib modules (paths relative to dynlib, ``algorithms/rnea.py``) that the
    module `rel` imports at module level (column 0, where compiled code can see them), and whether it
    defines compiled code (imports numba or llvmlite, or one of dyn's compile decorators); `files`: every
    dynlib source by its relative path."""
    package = rel.split("/")[:-1]
    found, defines = set(), False
    for m in _import_statements(text):
        dots, name, names, plain = m.groups()
        if plain is not None:  # import a.b, c as d
            mods = [x.split(" as ")[0].strip() for x in plain.split("#")[0].split(",")]
            defines |= any(x.split(".")[0] in _COMPILERS for x in mods)
            found |= {_module_file(x.split(".")[1:], [], files) for x in mods if x.split(".")[0] == "dynlib"}
            continue
        imported = [x.split(" as ")[0].strip() for x in re.sub(r"#[^\n]*", "", names).strip("()").split(",")]
        imported = [x for x in imported if x and x != "\\"]
        if not dots:
            defines |= name.split(".")[0] in _COMPILERS
            if name.split(".")[0] != "dynlib":
                continue
            base = name.split(".")[1:]
        else:
            base = (package[:len(package) - (len(dots) - 1)] if len(dots) > 1 else package) + \
                [p for p in name.split(".") if p]
        defines |= bool(_DECORATORS.intersection(imported))
        found |= {_module_file(base, [x], files) for x in imported}
    found.discard(None)
    return found, defines


def _import_statements(text):
    """The matches of `_IMPORT` in `text`, as ``_IMPORT.finditer(text)`` gives them: tried only at the start of
    the text and of the lines that begin with ``from`` or ``import`` (a third of the time of a start-up's
    hash of the sources)."""
    end = 0
    for start in (0, *(m.end() for m in _IMPORT_LINE.finditer(text))):
        m = _IMPORT.match(text, start) if start >= end else None
        if m:
            end = m.end()
            yield m


def _module_file(base, names, files):
    """The file (relative to dynlib) that ``from <base> import <names[0]>`` reads: the submodule when there
    is one, else the module or package `base` itself; None outside dynlib."""
    for parts in ([*base, *names], base):
        for candidate in ("/".join(parts) + ".py", "/".join([*parts, "__init__.py"])):
            if parts and candidate in files:
                return candidate
    return "__init__.py" if not base and not names else None


@lru_cache(maxsize=None)
def kernel_sources() -> tuple:
    """(paths, {path: contents}): the dynlib source files (relative paths, sorted) that hold or feed compiled
    code: every module that defines a kernel (imports numba, llvmlite or one of dyn's compile decorators),
    `dynlib.core.model` (the kernels' argument records) and, transitively, every dynlib module those import at
    module level: the names a kernel can see when numba compiles it (module-level globals) and the records
    it is given (numba keys a cached kernel on its arguments' types, a record's class by name only, so a
    record whose fields changed must change the folder; tests/_numba/test_compiled.py checks that every record
    type a kernel was compiled for is defined in one of these files). Edits elsewhere (commands' Python,
    file readers, pages, messages) keep the cache. Compiled code must therefore reference module-level
    names only: an overload does not import inside its body (tests/_numba/test_compiled.py checks it)."""
    texts = {}
    for top, dirs, names in os.walk(_HERE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in names:
            if n.endswith(".py"):
                path = os.path.join(top, n)
                with open(path, "rb") as f:
                    texts[os.path.relpath(path, _HERE).replace(os.sep, "/")] = f.read()
    graph, todo = {}, list(_ARGUMENT_MODULES)
    for rel, data in texts.items():
        graph[rel], defines = _module_imports(rel, data.decode("utf-8", "replace"), texts)
        if defines:
            todo.append(rel)
    closure = set()
    while todo:
        rel = todo.pop()
        if rel not in closure and rel in graph:
            closure.add(rel)
            todo.extend(graph[rel])
    return tuple(sorted(closure)), {rel: texts[rel] for rel in closure}


@lru_cache(maxsize=None)
def sources_hash() -> str:
    """A hash of the dynlib sources that hold or feed compiled code (`kernel_sources`: names and contents)."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    names, texts = kernel_sources()
    for rel in names:
        name, data = rel.encode(), texts[rel]
        h.update(b"%d:%s:%d:" % (len(name), name, len(data)))
        h.update(data)
    return h.hexdigest()

