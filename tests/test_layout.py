"""The shape of the code (STYLE.md, issue 14): short compiled functions, and shorter pipeline stages.

An AST scan of dynlib's sources: a compiled function is one decorated with numba's
``njit``/``jit`` or with dynlib's ``jit``, ``kernel``, ``inline_kernel`` or ``allocating_kernel``
(`dynlib._numba.decorators`, or a module-level alias of them); none may exceed 80
lines (from its ``def`` to its last line, docstring included). An inlined kernel
(``inline_kernel``: the stages of the simulation pipeline, `dynlib.sim.stages`, and
the pieces they inline, inlined into every caller) must stay within 40 lines.
numba and llvmlite are imported in one folder only, dynlib/_numba/.
"""
import ast
import inspect
import sys
from pathlib import Path

import pytest

import dynlib
import dynlib.sim.simulate  # noqa: F401 (imports every stage kernel: controllers, dynamics, contact models)
from dynlib.sim import stages

DYNLIB = Path(dynlib.__file__).resolve().parent
COMPILED_MAX = 80
STAGE_MAX = 40
DECORATORS = {"jit", "njit", "kernel", "inline_kernel", "allocating_kernel"}


def _decorator_name(node):
    """The name a decorator expression calls or names: `jit`, `jit(...)`, `numba.njit(...)` -> jit, jit, njit."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _compiled_aliases(tree):
    """Names bound at module level to a compiled decorator (`_jit = kernel`, `kernel = jit(nrt=False)`)."""
    names = set(DECORATORS)
    for node in tree.body:
        if isinstance(node, ast.Assign) and _decorator_name(node.value) in names:
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def compiled_functions():
    """{(path relative to dynlib, function name): length in lines} of every compiled function in dynlib."""
    found = {}
    for path in sorted(DYNLIB.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases = _compiled_aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(_decorator_name(d) in aliases for d in node.decorator_list):
                found[(str(path.relative_to(DYNLIB)), node.name)] = node.end_lineno - node.lineno + 1
    return found


COMPILED = compiled_functions()


def test_the_scan_finds_the_kernels_it_must():
    # a scan that recognised no decorator would pass every length check below
    for key in [("algorithms/aba.py", "aba_kernel"), ("sim/simulate.py", "_run"), ("core/spatial.py", "vec6"),
                ("sim/controllers.py", "control_torque"), ("sim/contact/unilateral.py", "pgs")]:
        assert key in COMPILED, key
    assert len(COMPILED) > 100


@pytest.mark.parametrize("key", sorted(COMPILED), ids=lambda k: f"{k[0]}:{k[1]}")
def test_no_compiled_function_is_over_80_lines(key):
    assert COMPILED[key] <= COMPILED_MAX, f"{key[0]}: {key[1]} has {COMPILED[key]} lines"


def inlined_kernels():
    """{(path relative to dynlib, function name): length in lines} of every `inline_kernel` in dynlib."""
    found = {}
    for path in sorted(DYNLIB.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(_decorator_name(d) == "inline_kernel"
                                                         for d in node.decorator_list):
                found[(str(path.relative_to(DYNLIB)), node.name)] = node.end_lineno - node.lineno + 1
    return found


INLINED = inlined_kernels()


def test_every_pipeline_stage_is_an_inlined_kernel():
    for key in [("sim/stages.py", "body_forces"), ("sim/stages.py", "acceleration"),
                ("sim/stages.py", "recorded_acceleration"),
                ("sim/controllers.py", "control_torque"), ("sim/controllers.py", "pd_torque"),
                ("sim/controllers.py", "commanded_acceleration"), ("sim/dynamics.py", "joint_forces"),
                ("sim/dynamics.py", "implicit_acceleration"), ("sim/contact/soft.py", "soft_forces"),
                ("sim/contact/bilateral.py", "bilateral_acceleration"), ("sim/stages.py", "impulse_acceleration"),
                ("sim/simulate.py", "evaluate")]:
        assert key in INLINED, key
    for name in stages.__all__:  # the stages the loop runs are those kernels
        fn = getattr(stages, name).py_func
        assert (str(Path(inspect.getsourcefile(fn)).resolve().relative_to(DYNLIB)), fn.__name__) in INLINED


@pytest.mark.parametrize("key", sorted(INLINED), ids=lambda k: f"{k[0]}:{k[1]}")
def test_no_inlined_kernel_is_over_40_lines(key):
    assert key in COMPILED, f"inlined kernel {key} is not a compiled function"
    assert INLINED[key] <= STAGE_MAX, f"{key[0]}: {key[1]} has {INLINED[key]} lines"


def test_every_test_module_says_whether_numba_changes_it():
    """CI's lowest-numba pass runs only the `kernels` tests: a new test module must be sorted into
    conftest's KERNEL_MODULES or NUMBA_INDEPENDENT, or it would silently skip that pass."""
    import conftest

    tests = Path(conftest.__file__).resolve().parent
    found = {p.relative_to(tests).as_posix() for p in tests.rglob("test_*.py")}
    assert not conftest.KERNEL_MODULES & conftest.NUMBA_INDEPENDENT
    assert found == conftest.KERNEL_MODULES | conftest.NUMBA_INDEPENDENT, (
        f"unsorted: {sorted(found - conftest.KERNEL_MODULES - conftest.NUMBA_INDEPENDENT)}, "
        f"gone: {sorted((conftest.KERNEL_MODULES | conftest.NUMBA_INDEPENDENT) - found)}")


COMPILERS = ("numba", "llvmlite")


def compiler_imports():
    """[(path relative to the repository, line)] of every import of numba or llvmlite (at any depth:
    module level or inside a function) in dynlib and cli outside dynlib/_numba/."""
    found = []
    for top in (DYNLIB, DYNLIB.parent / "cli"):
        for path in sorted(top.rglob("*.py")):
            rel = path.relative_to(DYNLIB.parent).as_posix()
            if rel.startswith("dynlib/_numba/"):
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                else:
                    continue
                if any(n.split(".")[0] in COMPILERS for n in names):
                    found.append((rel, node.lineno))
    return found


def test_numba_and_llvmlite_are_imported_in_dynlib_numba_only():
    assert compiler_imports() == []


def test_the_import_scan_sees_an_import_inside_a_function(tmp_path, monkeypatch):
    # a scan that saw nothing would pass the test above
    pkg = tmp_path / "dynlib"
    (pkg / "sim").mkdir(parents=True)
    (pkg / "sim" / "x.py").write_text("def f():\n    from numba.core import event\n    import llvmlite.binding\n")
    (pkg / "_numba").mkdir()
    (pkg / "_numba" / "y.py").write_text("import numba\n")
    monkeypatch.setattr(sys.modules[__name__], "DYNLIB", pkg)
    assert compiler_imports() == [("dynlib/sim/x.py", 2), ("dynlib/sim/x.py", 3)]


# ---------------------------------------------------------------- the floors (issue 32)

# dynlib's folders from the ground up: a module imports from its own floor or the ones below, never above;
# the modules at dynlib's root are for every floor (errors, processes) or the public API (__init__, lazy)
FLOORS = ("_numba", "core", "algorithms", "files", "sim", "motion", "runs")
ROOT_MAX = 8
FUNCTION_MAX = 80
PARAMETERS_MAX = 16


def _floor(module):
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 and parts[1] in FLOORS else None


def test_each_floor_is_a_folder_and_the_root_is_small():
    folders = {p.name for p in DYNLIB.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(FLOORS)
    root = sorted(p.name for p in DYNLIB.glob("*.py"))
    assert len(root) <= ROOT_MAX, root


def test_the_tests_mirror_the_folders():
    tests = Path(__file__).resolve().parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - {"cli"} <= set(FLOORS), sorted(folders - {"cli"} - set(FLOORS))
    for floor in FLOORS:
        for module in (DYNLIB / floor).rglob("*.py"):
            if module.name == "__init__.py" and module.parent == DYNLIB / floor:
                continue
            assert (tests / floor).is_dir(), f"dynlib/{floor}/ has no tests/{floor}/"


def test_no_module_imports_from_a_floor_above_its_own():
    from test_imports import import_graph

    graph = import_graph(DYNLIB.parent, "dynlib")
    assert "dynlib._numba.decorators" in graph["dynlib.sim.stages"]  # the graph was read
    up = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                if _floor(a) is not None and _floor(b) is not None and _floor(b) > _floor(a))
    assert up == [], "imports from a higher floor: " + "; ".join(up)


def _functions(top):
    """[(path relative to the repo, name, lines, parameters without self/cls)] of every function under `top`."""
    found = []
    for path in sorted(top.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                count = len(names) - (names[:1] in (["self"], ["cls"])) + bool(a.vararg) + bool(a.kwarg)
                found.append((path.relative_to(top.parent).as_posix(), node.name,
                              node.end_lineno - node.lineno + 1, count))
    return found


FUNCTIONS = _functions(DYNLIB) + _functions(DYNLIB.parent / "cli")


def test_the_function_scan_reads_every_function():
    names = {(p, n) for p, n, _, _ in FUNCTIONS}
    assert ("dynlib/files/urdf.py", "load") in names and ("cli/main.py", "main") in names
    assert len(FUNCTIONS) > 900


def test_no_function_is_over_80_lines():
    long = [f"{p}: {n} has {lines} lines" for p, n, lines, _ in FUNCTIONS if lines > FUNCTION_MAX]
    assert long == [], "; ".join(long)


def test_no_library_function_takes_over_16_parameters():
    """dynlib's functions; cli's commands take one parameter per option (click) and are exempt."""
    wide = [f"{p}: {n} takes {k}" for p, n, _, k in FUNCTIONS if p.startswith("dynlib/") and k > PARAMETERS_MAX]
    assert wide == [], "; ".join(wide)
