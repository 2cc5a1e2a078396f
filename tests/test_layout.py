"""The shape of the code (STYLE.md, issue 14): short compiled functions, and shorter pipeline stages.

An AST scan of dynlib's sources: a compiled function is one decorated with numba's
``njit``/``jit`` or with dynlib's ``jit``, ``kernel``, ``inline_kernel`` or ``stage``
(or a module-level alias of them, such as ``_jit = kernel``); none may exceed 80
lines (from its ``def`` to its last line, docstring included). A stage kernel is a
kernel registered in the dispatch registry of `dynlib.stages` (``@stage(...)``):
each step of the simulation pipeline, which must stay within 40 lines.
"""
import ast
import inspect
from pathlib import Path

import pytest

import dynlib
import dynlib.simulate  # registers every stage kernel (controllers, dynamics, contact models)
from dynlib import stages

DYNLIB = Path(dynlib.__file__).resolve().parent
COMPILED_MAX = 80
STAGE_MAX = 40
DECORATORS = {"jit", "njit", "kernel", "inline_kernel", "stage"}


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
    for key in [("algorithms/aba.py", "aba_kernel"), ("simulate.py", "_run"), ("spatial.py", "vec6"),
                ("controllers.py", "pd_torque"), ("contact/unilateral.py", "pgs")]:
        assert key in COMPILED, key
    assert len(COMPILED) > 100


@pytest.mark.parametrize("key", sorted(COMPILED), ids=lambda k: f"{k[0]}:{k[1]}")
def test_no_compiled_function_is_over_80_lines(key):
    assert COMPILED[key] <= COMPILED_MAX, f"{key[0]}: {key[1]} has {COMPILED[key]} lines"


def _stage_kernels():
    out = {}
    for (name, cls), kernel in stages.kernels().items():
        fn = kernel.py_func
        path = Path(inspect.getsourcefile(fn)).resolve().relative_to(DYNLIB)
        out[(name, cls.__name__ if cls else "-", str(path), fn.__name__)] = (str(path), fn.__name__)
    return out


STAGE_KERNELS = _stage_kernels()


def test_every_pipeline_stage_has_kernels():
    names = {k[0] for k in STAGE_KERNELS}
    assert names == {"control", "target", "joint_forces", "body_forces", "acceleration", "recorded_acceleration"}
    params = {k[1] for k in STAGE_KERNELS}
    for cls in ("ZeroParams", "PDParams", "ComputedTorqueParams", "SoftParams", "BilateralParams",
                "UnilateralParams", "RelaxedParams", "Free", "ImplicitFriction", "ExternalWrenches"):
        assert cls in params


@pytest.mark.parametrize("key", sorted(STAGE_KERNELS), ids=lambda k: f"{k[0]}:{k[1]}:{k[3]}")
def test_no_stage_kernel_is_over_40_lines(key):
    where = STAGE_KERNELS[key]
    assert where in COMPILED, f"stage kernel {where} is not a compiled function"
    assert COMPILED[where] <= STAGE_MAX, f"{where[0]}: {where[1]} has {COMPILED[where]} lines"


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
