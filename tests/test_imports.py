"""No import cycle inside dynlib: the module graph, read from the source (AST), has no loop;
and the plain `dyn simulate` and `dyn inverse` import only what they use (a child process each).

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
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ARM6 = REPO / "robots" / "arm6.urdf"


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
    assert len(graph) > 30 and "dynlib.runs.scenario.run" in graph  # the whole package was read
    assert "dynlib.sim.simulate" in graph["dynlib.runs.scenario.run"]  # function-level imports count
    found = cycles(graph)
    assert found == [], "import cycles in dynlib: " + "; ".join(" ⇄ ".join(c) for c in found)


def test_simulate_knows_nothing_of_scenarios():
    graph = import_graph(REPO, "dynlib")
    reach, todo = set(), ["dynlib.sim.simulate"]
    while todo:
        for w in graph[todo.pop()] - reach:
            reach.add(w)
            todo.append(w)
    assert not {m for m in reach if m.startswith(("dynlib.runs.scenario", "dynlib.runs.sweep", "dynlib.runs.checks"))}


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


# ------------------------------------------------------------------ what a whole command imports

# a child process runs the command as the console script does, then reports sys.modules
_REPORT = ("import sys\nfrom cli.main import dyn\ncode = 0\n"
           "try:\n    dyn(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
           "sys.stderr.write(f'\\nEXIT {code or 0} MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n")
# imported by no plain run: tables of pandas, figures, Parquet and Arrow's compute functions for CSV
# files, scipy beyond its top level (numba imports scipy itself; the kernels are loaded without
# numba.np.arraymath, whose BLAS check imports scipy.linalg), and the other commands' machinery (dyn view's
# mesh readers: trimesh, pycollada, fast-simplification)
NEVER = ("pandas", "matplotlib", "pyarrow.parquet", "pyarrow.compute", "scipy.linalg", "scipy.signal",
         "scipy.interpolate", "dynlib.runs.sweep", "dynlib.runs.checks", "dynlib.runs.view", "dynlib.files.figures",
         "dynlib.motion.identification", "dynlib.motion.contact_id", "trimesh", "collada", "fast_simplification")


def imported_by(*args) -> set:
    """The modules that `dyn ARGS` (a child process, the kernel cache of this session) imported."""
    r = subprocess.run([sys.executable, "-c", _REPORT, *map(str, args)], capture_output=True, text=True,
                       cwd=REPO, env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
                           str(REPO), os.environ.get("PYTHONPATH")]))))
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    assert last.startswith("EXIT 0 MODULES "), r.stderr
    return set(last.split()[3:])


def loaded(modules, names):
    """The names of `names` in `modules`, a name counting with its submodules."""
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory):
    path = tmp_path_factory.mktemp("imports") / "traj.csv"
    r = subprocess.run([sys.executable, "-m", "cli.main", "-q", "simulate", ARM6, "--steps", "20", "-o", path],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return path


def test_the_report_sees_what_a_command_imports(trajectory):
    # the kernels, the URDF reader and the CSV writer are in: the check below can fail (a longer run,
    # whose CSV is written by Arrow; a short one's is not: test_plain_simulate_imports_only_what_it_uses)
    mods = imported_by("simulate", ARM6, "--steps", "2000", "-o", trajectory.parent / "sim.csv")
    assert loaded(mods, ("numba", "lxml", "pyarrow.csv", "dynlib.sim.simulate", "dynlib.files.trajectory.csv")) == \
        ["dynlib.files.trajectory.csv", "dynlib.sim.simulate", "lxml", "numba", "pyarrow.csv"]
    # and a Parquet output imports pyarrow.parquet
    assert "pyarrow.parquet" in imported_by("simulate", ARM6, "--steps", "10", "-o", trajectory.parent / "s.parquet")


# what a robot's run without a scenario file does not import: its options are checked without the
# scenario schema (dynlib.runs.scenario.plain), so neither pydantic nor the schema is imported
NO_SCHEMA = ("pydantic", "pydantic_core", "dynlib.runs.scenario.schema")
# nor does a short run import Arrow: its small CSV is written in Python (dynlib.files.trajectory.csv_text)


def test_plain_simulate_imports_only_what_it_uses(trajectory):
    mods = imported_by("simulate", ARM6, "--steps", "10", "--q0", "elbow=0.3", "--tau", "0.1,0,0,0,0,0",
                       "--integrator", "semi-implicit", "--dt", "2e-3", "-o", trajectory.parent / "sim.csv")
    assert "dynlib.runs.scenario.plain" in mods and "dynlib.files.trajectory.csv_text" in mods
    assert loaded(mods, NEVER + NO_SCHEMA + ("pyarrow",)) == []


def test_plain_energy_check_imports_no_scenario_schema():
    mods = imported_by("energy-check", ARM6, "--duration", "0.01", "--no-joint-friction")
    assert loaded(mods, NO_SCHEMA) == []


def test_a_scenario_file_is_validated_by_the_schema(trajectory):
    # the same run from a scenario file imports the schema: the check above can fail
    mods = imported_by("simulate", REPO / "scenarios" / "arm6_pd.yaml", "--steps", "10", "-o",
                       trajectory.parent / "pd.csv")
    assert loaded(mods, NO_SCHEMA) == sorted(NO_SCHEMA)


def test_plain_inverse_imports_no_scenario_schema(trajectory):
    # no scenario on this path: neither pydantic nor the scenario package, nor anything of NEVER.
    # A plain run loads its kernels from the cache: the first run on a cold cache (this test alone)
    # compiles them, and numba's compiler imports scipy.linalg
    imported_by("inverse", ARM6, trajectory, "-o", trajectory.parent / "tau.csv")
    mods = imported_by("inverse", ARM6, trajectory, "-o", trajectory.parent / "tau.csv")
    assert "dynlib.motion.inverse" in mods
    assert loaded(mods, NEVER + ("pydantic", "pydantic_core", "dynlib.runs.scenario")) == []


def test_the_library_simulates_without_the_scenario_schema():
    # dynlib.simulate on a loaded model: no pydantic, no scenario package, no click, no Arrow
    code = ("import sys\nimport dynlib\nm = dynlib.load(sys.argv[1])\n"
            "r = dynlib.simulate(m, dt=1e-3, steps=10)\nassert r.q.shape[0] == 11\n"
            "print('MODULES', ' '.join(sorted(sys.modules)))")
    for _ in range(2):  # the first may compile the loop (the library records the energy, dyn simulate does not)
        r = subprocess.run([sys.executable, "-c", code, str(ARM6)], capture_output=True, text=True, cwd=REPO)
        assert r.returncode == 0 and r.stdout.startswith("MODULES "), r.stderr
    mods = set(r.stdout.split()[1:])
    assert "dynlib.sim.simulate" in mods and "numba" in mods
    assert loaded(mods, NEVER + ("pydantic", "pydantic_core", "dynlib.runs.scenario", "click", "pyarrow")) == []


# ------------------------------------------------------------------ the exit

_EXIT = ("import gc, sys\nfrom click.testing import CliRunner\nfrom cli import main\n"
         "CliRunner().invoke(main.dyn, sys.argv[1:])\nin_process = gc.get_freeze_count()\n"
         "sys.argv[0] = 'dyn'\ntry:\n    main.run()\nexcept SystemExit as exc:\n"
         "    print(in_process, gc.get_freeze_count(), exc.code)\n")


@pytest.mark.parametrize("args, code", [(("simulate", ARM6, "--steps", "5", "-o", "-"), 0),
                                        (("simulate", ARM6, "--steps", "0"), 2)])
def test_the_console_script_exits_without_collecting_what_the_command_left(args, code):
    # cli.main.run (the console script) freezes the objects alive when the command ends, so the
    # interpreter's exit does not walk numba's objects (0.2-0.3 s); `dyn` called in-process (a
    # CliRunner) freezes nothing, and the exit code passes through either way
    r = subprocess.run([sys.executable, "-c", _EXIT, *map(str, args)], capture_output=True, text=True, cwd=REPO)
    in_process, frozen, exit_code = r.stdout.split()[-3:]
    assert int(in_process) == 0 and int(frozen) > 10_000, r.stdout
    assert int(exit_code) == code


def test_the_console_script_is_run():
    text = (REPO / "pyproject.toml").read_text()
    assert 'dyn = "cli.main:run"' in text
