"""Where dyn's compiled kernels are kept, how they load, and what happens when that fails.

Every dynlib kernel is made by `jit`: ``numba.njit`` with a cache of dyn's own.

Where the cache lives. Numba writes dyn's kernels into one folder per dyn
source tree and numba version (`cache_folder`)::

    <root>/<dyn version>-<hash of the kernels' sources, 12 digits>-numba<version>-py<XY>/

with a subfolder per dynlib subpackage (``algorithms/``, ``contact/``, ...).
<root> is ``$DYN_CACHE_DIR`` when it is set, else ``$NUMBA_CACHE_DIR/dyn``
when that is set, else ``$XDG_CACHE_HOME/dyn`` or ``~/.cache/dyn``. Numba keys
a cached function on its own source file only, so a kernel whose callee in
another file changed would load old machine code; here the hash covers every
source that holds or feeds compiled code (`kernel_sources`: the modules that
define kernels, the model's records, and what they import at module level),
so any change to those (an upgrade, a developer's edit, another checkout) is
another folder and stale code never loads, while an edit elsewhere (a
command's Python, a file reader, a page template, a message) keeps every
cached kernel. Nothing is deleted when dynlib is imported, and two versions
of dyn side by side keep their own kernels. When
a new folder is made (that is, after a compile), folders of dyn's naming
beyond the three most recently used are removed, and only folders holding
nothing but dyn's cache files. Other numba users in the same process keep
numba's own cache: dyn reads ``NUMBA_CACHE_DIR``, it never sets it.

Read-only installs. The cache is the user's, not the package's: an install in
root-owned site-packages compiles once per user and loads afterwards. When no
cache can be written (no writable home or cache folder, a full disk), the
kernels are compiled in memory for the run, with one `CacheWarning`; a
damaged cache file (truncated, corrupt) is discarded and its kernel compiled
again, with one `CacheWarning`. Results are the same either way. A cache
folder made read-only after it was filled still loads.

Loading without numba's compiler start-up. Before it loads a cached function,
numba refreshes its whole target context: it imports every lowering module
(numba.np.arraymath among them, whose BLAS check imports scipy.linalg),
initialises its runtime (NRT) and rebuilds the typing tables, about 0.3 s of
every short `dyn` run. Numba added that refresh (numba PR #2202, "target
context not init'ed when loading from cache") because object code loaded into
an uninitialised context can name symbols the JIT linker does not know yet
(the runtime's ``NRT_*`` functions, the hash secret of
numba.cpython.hashing, those of extensions); LLVM then aborts the process
("Program used external function ... which could not be resolved"). dyn's
loader does the part of the refresh that loading needs: it reads the
undefined symbols of the cached object code (ELF) and makes sure every one
resolves before the code is loaded, initialising the runtime when only
``NRT_*`` symbols are missing and doing numba's full refresh for anything
else, for object-mode code, or for an object file it cannot read (another
platform). Compiling is unchanged: numba refreshes before it compiles.

Numba internals. The cache is numba's `FunctionCache` with a locator of dyn's
own, set on each dispatcher (``dispatcher._cache``); the loader calls numba's
``Cache._load_overload``; `jit` (nrt=False) passes numba's private ``_nrt``
option. Each of these is checked once, at the first `jit`: when one is missing
or its signature changed, dyn uses numba's public behaviour for that part
instead (numba's own cache pointed at the same folder, numba's own loading,
kernels with the runtime) -- a slower start-up, the same results.
`boundary()` says which parts are in use; `stats` counts the loads.
"""
import contextlib
import os
import re
import sys
import warnings
from functools import lru_cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent.parent  # dynlib/
_FORMAT = "dyn-kernel-1"  # the layout of a cached entry (see Impl.reduce in _make_cache_class)
_KEEP = 3  # older cache folders of dyn's naming kept besides the current one
_TAG = "CACHEDIR.TAG"  # https://bford.info/cachedir/: backup tools skip the folder
_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
             "# Compiled kernels of dyn (dynlib): a cache, recreated when needed.\n")
_FOLDER_NAME = re.compile(r"[0-9A-Za-z.+_!]+-[0-9a-f]{12}-numba[0-9A-Za-z.+_]+-py\d+")
_SAVE_LOCK = "save.lock"  # in each cache subfolder: flock'ed while an entry is saved (see DynCache.save_overload)
_OWN_FILE = re.compile(r".+\.(nbi|nbc)(\.tmp\.[0-9a-f]+)?|CACHEDIR\.TAG|save\.lock")

stats = {"fast_loads": 0, "numba_loads": 0, "refreshes": 0, "discarded": 0, "saved": 0, "unsaved": 0}
"""Counts for this process: kernels loaded by dyn's loader and by numba's own, full
context refreshes done for a load, damaged entries discarded, compiled kernels saved
and not saved."""

_warned = set()
_unwritable = []  # the first save that failed (then no more saves are tried)
_before_compile = []  # callbacks for the first compile of this process (see on_first_compile)


class CacheWarning(UserWarning):
    """The kernel cache could not be used as it should; the results are not affected."""


def _warn(kind, message):
    """One `CacheWarning` of each kind per process."""
    if kind not in _warned:
        _warned.add(kind)
        warnings.warn(message, CacheWarning, stacklevel=3)


# ---------------------------------------------------------------- the folder


_IMPORT = re.compile(r"^(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))", re.M)
_DECORATORS = {"jit", "kernel", "inline_kernel"}  # dyn's names for "compiled" (this module and dynlib.core.spatial)
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
    for m in _IMPORT.finditer(text):
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


def cache_root():
    """The folder under which dyn keeps its caches (see the module docstring), or None
    when there is none (no DYN_CACHE_DIR and no home directory)."""
    for var, sub in (("DYN_CACHE_DIR", ""), ("NUMBA_CACHE_DIR", "dyn")):
        value = os.environ.get(var)
        if value:
            return Path(os.path.abspath(os.path.expanduser(value))) / sub
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "dyn"
    try:
        return Path.home() / ".cache" / "dyn"
    except RuntimeError:
        return None


def cache_folder():
    """The folder of this dyn source tree and numba version (numba writes dyn's kernels
    there), or None when there is no cache root."""
    root = cache_root()
    if root is None:
        return None
    import numba

    from .. import __version__

    py = f"{sys.version_info[0]}{sys.version_info[1]}"
    return root / f"{__version__}-{sources_hash()[:12]}-numba{numba.__version__}-py{py}"


def cache_folders():
    """Folders that may hold dyn's compiled kernels (numba's ``*.nbi`` index files):
    the cache folder, then its subfolders."""
    if _boundary().cache == "numba-default":  # numba's own places, next to each source
        for top, dirs, _ in os.walk(_HERE):
            if "__pycache__" in dirs:
                yield Path(top) / "__pycache__"
            dirs[:] = [d for d in dirs if d != "__pycache__"]
        return
    folder = cache_folder()
    if folder is None:
        return
    yield folder
    with contextlib.suppress(OSError):
        yield from sorted(p for p in folder.iterdir() if p.is_dir())


def cache_is_warm() -> bool:
    """True when compiled ABA and RNEA kernels are in the cache (the first run compiles)."""
    names = set()
    for folder in cache_folders():
        with contextlib.suppress(OSError):
            names.update(p.name for p in folder.glob("*.nbi"))
    return any(n.startswith("aba.") for n in names) and any(n.startswith("rnea.") for n in names)


def cache_writable() -> bool:
    """Whether compiled kernels can be saved (False after a save failed in this process)."""
    folder = cache_folder()
    if folder is None or _unwritable:
        return False
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    effective = os.access in os.supports_effective_ids
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK, effective_ids=effective)


def on_first_compile(callback) -> bool:
    """Call `callback()` once, just before the first dynlib kernel of this process is
    compiled (a kernel not in the cache: the command line's compile notice). Returns
    False when dyn's cache is not in use (numba's own cache cannot tell)."""
    if _boundary().cache != "dyn":
        return False
    _before_compile.append(callback)
    return True


_COUNTS = "compile-counts.json"  # in the cache root: kept across dyn versions (pruning removes folders only)
_COUNTS_SHIPPED = {"simulate": 91}
"""Compiles of a first run of `dyn simulate robot.urdf` (numba compile events, a kernel's helpers included:
the one simulation loop with every stage's kernels, whatever the scenario), for the progress line of a
fresh install; a later run records its own."""


def expected_compiles(task):
    """How many kernels `task` (e.g. a command's name) compiled the last time it compiled any, or
    the shipped figure, or None when unknown: the total of a progress line."""
    root = cache_root()
    if root is not None:
        import json

        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            n = json.loads((root / _COUNTS).read_text()).get(task)
            if isinstance(n, int) and n > 0:
                return n
    return _COUNTS_SHIPPED.get(task)


def record_compiles(task, n):
    """Remember that `task` compiled `n` kernels (`expected_compiles`); silently nothing when the
    cache root cannot be written."""
    root = cache_root()
    if root is None or n <= 0 or not cache_writable():
        return
    import json

    path = root / _COUNTS
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        counts = {}
        with contextlib.suppress(OSError, ValueError):
            counts = dict(json.loads(path.read_text()))
        counts[task] = int(n)
        tmp = path.with_name(f"{_COUNTS}.tmp.{os.getpid():x}")
        tmp.write_text(json.dumps(counts, sort_keys=True))
        os.replace(tmp, path)


def _package_dir(py_file):
    """The folder of `py_file` relative to dynlib, or None when it is not in dynlib."""
    try:
        return Path(py_file).resolve().parent.relative_to(_HERE)
    except (ValueError, OSError):
        return None


def _new_folder(folder):
    """A cache folder was just made: tag it as a cache, and prune old folders of dyn's naming."""
    with contextlib.suppress(OSError):
        with open(folder / _TAG, "x") as f:
            f.write(_TAG_TEXT)
    with contextlib.suppress(OSError):
        prune_cache(folder.parent, keep=_KEEP, current=folder)


def prune_cache(root, keep=_KEEP, current=None):
    """Remove cache folders of dyn's naming under `root` beyond the `keep` most recently
    used (besides `current`); a folder holding anything but dyn's cache files, or another
    user's, is kept. Returns the folders removed."""
    old = []
    for p in Path(root).iterdir():
        if p != current and _FOLDER_NAME.fullmatch(p.name) and p.is_dir() and not p.is_symlink():
            st = p.stat()
            if st.st_uid == os.geteuid():
                old.append((st.st_mtime, p))
    removed = []
    for _, p in sorted(old, reverse=True)[keep:]:
        if _only_cache_files(p):
            import shutil

            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def _only_cache_files(folder):
    if not (folder / _TAG).is_file():
        return False
    for top, dirs, names in os.walk(folder, followlinks=False):
        if any(os.path.islink(os.path.join(top, d)) for d in dirs):
            return False
        if not all(_OWN_FILE.fullmatch(n) for n in names):
            return False
    return True


_touched = []


def _touch(folder):
    """Mark the cache folder as used, once per process (pruning keeps the most recently used)."""
    if not _touched:
        _touched.append(folder)
        with contextlib.suppress(OSError):
            os.utime(folder)


# ---------------------------------------------------------------- numba's internals, checked once


def boundary() -> dict:
    """Which of numba's internals dyn uses (each checked once, at the first `jit`):

    - ``cache``: "dyn" (dyn's cache locator), "numba" (numba's own cache, pointed at
      the same folder) or "numba-default" (numba's own cache where numba puts it);
    - ``fast_load``: dyn's loader (False: numba's own loading, with its full refresh);
    - ``nrt_option``: numba's ``_nrt`` option (False: every kernel has the runtime);
    - ``notes``: why a part fell back.
    """
    b = _boundary()
    return {"cache": b.cache, "fast_load": b.fast_load, "nrt_option": b.nrt_option, "notes": list(b.notes)}


class _Boundary:
    def __init__(self):
        self.notes = []
        self.cache_class = self._check(self._cache_class)
        self.cache = "dyn" if self.cache_class else self._numba_cache()
        self.fast_load = self.cache == "dyn" and self._check(self._fast_load)
        self.nrt_option = self._check(self._nrt_option)

    def _check(self, probe):
        try:
            return probe()
        except Exception as exc:  # a numba that changed: use its public behaviour
            self.notes.append(f"{probe.__name__.strip('_')}: {type(exc).__name__}: {exc}")
            return False

    @staticmethod
    def _cache_class():
        from numba import njit
        from numba.core import caching, serialize

        for owner, name in ((caching, "_CacheLocator"), (caching, "FunctionCache"), (caching, "CacheImpl"),
                            (caching, "CompileResultCacheImpl"), (caching, "NullCache"), (serialize, "dumps")):
            if not hasattr(owner, name):
                raise AttributeError(f"{owner.__name__}.{name} is missing")
        if not isinstance(vars(caching.CacheImpl).get("_locator_classes"), list):
            raise AttributeError("numba.core.caching.CacheImpl._locator_classes is missing")
        cls = _make_cache_class(caching, serialize)

        def probe():
            pass

        if not isinstance(getattr(njit(probe), "_cache", None), caching.NullCache):
            raise AttributeError("a dispatcher has no _cache")
        if cache_folder() is not None and not isinstance(cls(probe)._impl.locator, cls.locator_class):
            raise TypeError("numba chose another cache locator (NUMBA_CACHE_LOCATOR_CLASSES?)")
        return cls

    @staticmethod
    def _numba_cache():
        from numba.core import config

        return "numba" if hasattr(config, "CACHE_DIR") else "numba-default"

    @staticmethod
    def _fast_load():
        import inspect

        from numba.core.caching import Cache
        from numba.core.runtime import rtsys

        params = list(inspect.signature(Cache._load_overload).parameters)
        if params != ["self", "sig", "target_context"]:
            raise TypeError(f"Cache._load_overload{tuple(params)}: its signature changed")
        import llvmlite.binding as ll

        for owner, name in ((rtsys, "initialize"), (ll, "address_of_symbol")):
            if not callable(getattr(owner, name, None)):
                raise AttributeError(f"{name} is missing")
        return True

    @staticmethod
    def _nrt_option():
        from numba.core.cpu import CPUTargetOptions

        if not hasattr(CPUTargetOptions, "_nrt"):
            raise AttributeError("numba.core.cpu.CPUTargetOptions has no _nrt option")
        return True


@lru_cache(maxsize=None)
def _boundary():
    return _Boundary()


# ---------------------------------------------------------------- the decorator


def jit(fn=None, *, nrt=True, **options):
    """``numba.njit(cache=True, **options)``, as ``@jit``, ``@jit(...)`` or ``jit()(f)``,
    cached in dyn's cache folder and loaded without numba's compiler start-up
    (see the module docstring).

    nrt=False compiles without numba's runtime (``_nrt=False``: the kernel must not
    allocate), which spares the reference counting of every array argument; when
    numba no longer has that option, the kernel is compiled with the runtime.
    """

    def decorate(f):
        import inspect

        from numba import njit

        b = _boundary()
        opts = dict(options)
        if not nrt and b.nrt_option:
            opts["_nrt"] = False
        if b.cache_class and _package_dir(inspect.getfile(f)) is not None:
            dispatcher = njit(**opts)(f)
            try:
                dispatcher._cache = b.cache_class(f)
                return dispatcher
            except Exception:  # no folder at all (no home directory), or a function numba cannot locate
                if cache_folder() is None:
                    _warn("unwritable", "no folder for the kernel cache (no home directory and no DYN_CACHE_DIR): "
                                        "the kernels are compiled in memory, in every run")
                    return dispatcher
        return _numba_cached(njit, f, opts)

    return decorate if fn is None else decorate(fn)


def _numba_cached(njit, f, opts):
    """numba's own cache (the fallback), pointed at dyn's cache folder while the dispatcher is made."""
    folder = cache_folder() if _boundary().cache == "numba" else None
    if folder is None:
        return njit(cache=True, **opts)(f)
    from numba.core import config

    saved = config.CACHE_DIR
    config.CACHE_DIR = str(folder)
    try:
        return njit(cache=True, **opts)(f)
    except RuntimeError:  # numba found no writable place at all
        _warn("unwritable", f"cannot write the kernel cache in {folder}: the kernels are compiled in memory, "
                            "in every run (set DYN_CACHE_DIR to a writable folder)")
        return njit(**opts)(f)
    finally:
        config.CACHE_DIR = saved


# ---------------------------------------------------------------- the cache classes


class _Damaged(Exception):
    """A cache entry that cannot be what dyn wrote."""


def _make_cache_class(caching, serialize):
    """numba's FunctionCache with dyn's locator, a checksum on every entry, dyn's loader,
    and failures to read or write turned into a compile in memory (see the module docstring)."""

    class Locator(caching._CacheLocator):
        def __init__(self, py_func, py_file, folder, package_dir):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._folder = folder
            self._path = str(folder / package_dir)

        @classmethod
        def from_function(cls, py_func, py_file):
            folder, package_dir = cache_folder(), _package_dir(py_file)
            if folder is None or package_dir is None:
                return None
            return cls(py_func, py_file, folder, package_dir)

        def ensure_cache_path(self):
            fresh = not self._folder.is_dir()
            super().ensure_cache_path()
            if fresh:
                _new_folder(self._folder)

        def get_cache_path(self):
            return self._path

        def get_source_stamp(self):
            return sources_hash()  # the folder is already keyed by the kernels' sources

        def get_disambiguator(self):
            return str(self._lineno)

    import hashlib

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [Locator]

        def reduce(self, cres):
            blob = serialize.dumps(super().reduce(cres))
            return _FORMAT, hashlib.blake2b(blob, digest_size=16).digest(), blob

        def rebuild(self, target_context, data):
            if not (isinstance(data, tuple) and len(data) == 3 and data[0] == _FORMAT):
                raise _Damaged("not an entry dyn wrote")
            _, digest, blob = data
            if hashlib.blake2b(blob, digest_size=16).digest() != digest:
                raise _Damaged("checksum mismatch")
            import pickle

            payload = pickle.loads(blob)
            if not _symbols_ready(payload, target_context):
                return None  # numba compiles it
            return super().rebuild(target_context, payload)

    class DynCache(caching.FunctionCache):
        _impl_class = Impl
        locator_class = Locator

        def __init__(self, py_func):
            super().__init__(py_func)
            self._dyn_name = f"{py_func.__module__}.{py_func.__qualname__}"
            self._dyn_folder = self._impl.locator._folder

        def load_overload(self, sig, target_context):
            fast = _boundary().fast_load
            try:
                if fast:
                    guard = getattr(self, "_guard_against_spurious_io_errors", contextlib.nullcontext)
                    with guard():
                        cres = self._load_overload(sig, target_context)
                else:
                    cres = super().load_overload(sig, target_context)
            except OSError:  # unreadable: compile
                _compiling()
                return None
            except Exception as exc:  # noqa: BLE001 (truncated or corrupt: whatever unpickling raises)
                self._discard(exc)
                return None
            if cres is not None and not _same_args(cres, sig):  # (see save_overload)
                self._discard(_Damaged(f"the entry for {sig} holds the code of {cres.signature.args}"))
                return None
            if cres is not None:
                stats["fast_loads" if fast else "numba_loads"] += 1
                _touch(self._dyn_folder)
            else:
                _compiling()
            return cres

        def _discard(self, exc):
            stats["discarded"] += 1
            _compiling()
            with contextlib.suppress(OSError):
                self.flush()  # an empty index: the damaged entry is forgotten, its file overwritten later
            _warn("damaged", f"discarded a damaged kernel cache entry of {self._dyn_name} in {self.cache_path} "
                             f"({type(exc).__name__}: {exc}); compiling it again")

        def save_overload(self, sig, data):
            """numba's save under a lock of the folder: numba reads the index, names a data file after the
            count of entries and writes both back, so two processes saving two signatures of one kernel at
            once could both take the name ``.0.nbc``, and the index kept could point one signature at the
            other's machine code (`load_overload` checks the signature of what it loads as well)."""
            if _unwritable:
                return
            try:
                self._impl.locator.ensure_cache_path()  # (a new folder is made, tagged and pruned there)
                with _locked(Path(self._cache_path) / _SAVE_LOCK):
                    super().save_overload(sig, data)
                stats["saved"] += 1
            except OSError as exc:  # read-only, full, gone
                stats["unsaved"] += 1
                _unwritable.append(exc)
                _warn("unwritable", f"cannot write the kernel cache in {self._dyn_folder} "
                                    f"({exc.strerror or exc}): the kernels are compiled in memory, and later runs "
                                    "compile them again (set DYN_CACHE_DIR to a writable folder)")
            except Exception as exc:  # noqa: BLE001 (a damaged index that could not be replaced when it was read)
                stats["unsaved"] += 1
                self._discard(exc)

    return DynCache


def _same_args(cres, sig) -> bool:
    """Whether a loaded compile result is the code of the argument types `sig` (a tuple of
    numba types, or a signature) that it was loaded for."""
    from numba.core import sigutils

    try:
        args = sigutils.normalize_signature(sig)[0]
    except Exception:  # noqa: BLE001 (a form numba's loader took but this cannot read: numba's word stands)
        return True
    return tuple(cres.signature.args) == tuple(args)


@contextlib.contextmanager
def _locked(path):
    """An exclusive flock on `path` (made if needed) for the block; no lock where the system or the
    file system has none (the signature check on loading still holds)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _compiling():
    """A kernel is about to be compiled: run the callbacks of `on_first_compile`."""
    while _before_compile:
        _before_compile.pop(0)()


# ---------------------------------------------------------------- loading object code safely

_refreshed = []


def _symbols_ready(payload, target_context):
    """Make every symbol the cached object code uses resolvable before it is loaded
    (see the module docstring); False when that cannot be done (then it is compiled)."""
    import llvmlite.binding as ll

    try:
        (_, kind, data), objectmode, lifted = payload[0], payload[4], payload[5]
        obj = data[0] if kind == "object" and not objectmode and not lifted else None
    except (TypeError, ValueError, IndexError):
        obj = None
    needed = None if obj is None else _undefined_symbols(obj)
    if needed is None:  # nothing dyn can read: numba's full refresh, as numba's own loading does
        _refresh(target_context)
        return True
    missing = [s for s in needed if not ll.address_of_symbol(s)]
    if missing and all(s.startswith("NRT_") for s in missing):
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
        missing = [s for s in missing if not ll.address_of_symbol(s)]
    if missing:
        _refresh(target_context)
        missing = [s for s in missing if not ll.address_of_symbol(s)]
    return not missing


def _refresh(target_context):
    if not _refreshed:
        stats["refreshes"] += 1
        target_context.refresh()
        _refreshed.append(True)


def _undefined_symbols(obj):
    """The names an ELF64 little-endian object file uses but does not define, or None
    for any other format."""
    if obj[:6] != b"\x7fELF\x02\x01":
        return None
    import struct

    try:
        shoff, = struct.unpack_from("<Q", obj, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
        names = []
        for _, kind, _, _, offset, size, link, _, _, entsize in sections:
            if kind != 2 or not entsize:  # SHT_SYMTAB
                continue
            strings = sections[link][4]
            for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
                name, _, _, shndx = struct.unpack_from("<IBBH", obj, at)
                if shndx == 0 and name:  # SHN_UNDEF
                    start = strings + name
                    names.append(obj[start:obj.index(b"\0", start)].decode())
        return names
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        return None
