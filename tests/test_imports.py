"""No import cycle inside dynlib: the module graph, read from the source (AST), has no loop.

Every `import` and `from … import` counts, at module level or inside a function
(a function-level import that closes a loop is a cycle a refactoring can turn
into an import-time failure). An edge goes to the module that is imported:

- ``from . import x`` and ``from .pkg import x``: to the submodule ``pkg.x`` when
  there is one, else to ``pkg`` itself (its ``__init__``, which re-exports x);
- importing ``a.b.c`` also runs the ``__init__`` of the packages ``a.b`` and
  ``a`` on the way: an edge to each of them, except the packages the importer
  is itself inside (they are already being imported when it runs);
- `importlib.import_module` with a computed name (dynlib's lazy top-level
  names) is not read.
"""
import ast
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def modules(root: Path, package: str) -> dict:
    """{dotted module name: (path, is a package)} for every .py file under root/package."""
    out = {}
    for path in (root / package).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def _absolute(importer, is_package, level, name):
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _ancestors(name):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(root: Path, package: str) -> dict:
    """{module: set of modules it imports (see the module docstring)}, within `package`."""
    mods = modules(root, package)
    graph = {m: set() for m in mods}
    for importer, (path, is_package) in mods.items():
        targets = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(importer, is_package, node.level, node.module) if node.level else node.module
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in mods else base)
        inside = set(_ancestors(importer)) | {importer}
        for target in targets:
            while target and target not in mods:  # `import a.b.func`-like names: the module part
                target = target.rpartition(".")[0]
            if not target:
                continue
            for t in [a for a in _ancestors(target) if a not in inside] + [target]:
                if t != importer:
                    graph[importer].add(t)
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_dynlib_has_no_import_cycle():
    graph = import_graph(REPO, "dynlib")
    assert len(graph) > 30 and "dynlib.scenario.run" in graph  # the whole package was read
    assert "dynlib.simulate" in graph["dynlib.scenario.run"]  # function-level imports count
    found = cycles(graph)
    assert found == [], "import cycles in dynlib: " + "; ".join(" ⇄ ".join(c) for c in found)


def test_simulate_knows_nothing_of_scenarios():
    graph = import_graph(REPO, "dynlib")
    reach, todo = set(), ["dynlib.simulate"]
    while todo:
        for w in graph[todo.pop()] - reach:
            reach.add(w)
            todo.append(w)
    assert not {m for m in reach if m.startswith(("dynlib.scenario", "dynlib.sweep", "dynlib.checks"))}


def write_package(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_graph_sees_cycles_through_functions_and_package_reexports(tmp_path):
    # a cycle only through a function-level import
    write_package(tmp_path, {"p/__init__.py": "", "p/a.py": "from . import b\n",
                             "p/b.py": "def f():\n    from .a import g\n"})
    assert cycles(import_graph(tmp_path, "p")) == [["p.a", "p.b"]]
    # a submodule importing a name from its package's __init__, which imports the submodule: a loop
    # (``from . import VERSION`` fails while q/__init__.py is still at its first line)
    write_package(tmp_path, {"q/__init__.py": "from .run import run\nVERSION = 1\n",
                             "q/run.py": "from . import VERSION, load\n", "q/load.py": ""})
    assert cycles(import_graph(tmp_path, "q")) == [["q", "q.run"]]
    # importing a package's submodule from outside runs the package's __init__ (an edge to it)
    write_package(tmp_path, {"r/__init__.py": "", "r/s/__init__.py": "from ..t import x\n", "r/s/m.py": "",
                             "r/t.py": "from .s.m import y\n"})
    assert cycles(import_graph(tmp_path, "r")) == [["r.s", "r.t"]]
    # and no cycle where there is none
    write_package(tmp_path, {"ok/__init__.py": "from .a import f\n", "ok/a.py": "from .b import g\n",
                             "ok/b.py": "import os\n"})
    assert cycles(import_graph(tmp_path, "ok")) == []
