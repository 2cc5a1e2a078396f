"""Fixtures shared by the whole suite (the importable helpers are in tests/helpers.py).

- `robots_dir`: the repo's robots/ folder (`helpers.ROBOTS_DIR`);
- `erd_path`: a function giving an example-robot-data URDF path (skips when absent);
- `random_tree`: a function ``random_tree(nb, seed, floating_base=False)`` -> Model,
  writing the random URDF under this session's temporary folder;
- `model`: the identity-test models: every sample robot with a fixed base, the legged
  ones also with a floating base, and random trees with both (ids such as
  ``arm6-fixed``, ``quadruped-floating``, ``tree9-floating``).
"""
import functools
import os

import pytest

import helpers

# (id, spec) of the models every identity test runs on: the sample robots and random
# trees of several sizes (one of them with planar joints too)
PLANAR_TYPES = ("revolute", "planar", "prismatic", "fixed")
TREES = (("tree1", 1, 0, helpers.TREE_JOINT_TYPES), ("tree4", 4, 1, helpers.TREE_JOINT_TYPES),
         ("tree9", 9, 2, helpers.TREE_JOINT_TYPES), ("tree20", 20, 3, helpers.TREE_JOINT_TYPES),
         ("planar-tree8", 8, 6, PLANAR_TYPES))
# the arms and pendulums have a massless base link: on a free-flyer their first joint
# duplicates a root rotation and M(q) is singular, so they run with a fixed base only
FLOATING_SAMPLES = ("quadruped", "biped")
MODEL_CASES = [(f"{name}-{base}", ("sample", name, base == "floating"))
               for name in helpers.SAMPLE_ROBOTS for base in ("fixed", "floating")
               if base == "fixed" or name in FLOATING_SAMPLES]
MODEL_CASES += [(f"{tag}-{base}", ("tree", (nb, seed, types), base == "floating"))
                for tag, nb, seed, types in TREES for base in ("fixed", "floating")]


@pytest.fixture(scope="session")
def robots_dir():
    return helpers.ROBOTS_DIR


@pytest.fixture(scope="session")
def erd_path():
    return helpers.erd_path


@pytest.fixture(scope="session")
def random_tree(tmp_path_factory):
    return functools.partial(helpers.random_tree, directory=tmp_path_factory.mktemp("trees"))


@pytest.fixture(scope="session", params=[spec for _, spec in MODEL_CASES], ids=[i for i, _ in MODEL_CASES])
def model(request, random_tree):
    kind, what, floating = request.param
    if kind == "sample":
        return helpers.sample(what, floating)
    nb, seed, types = what
    return random_tree(nb, seed, floating_base=floating, joint_types=types)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "call":
        report = outcome.get_result()
        helpers.merge_pending(report.passed and not hasattr(report, "wasxfail"))


def pytest_terminal_summary(terminalreporter, config):
    """With -v (or DYN_TEST_ERRORS=1): the worst relative error of every named check."""
    if not helpers.WORST or not (config.getoption("verbose") > 0 or os.environ.get("DYN_TEST_ERRORS")):
        return
    terminalreporter.section("worst relative errors per check")
    width = max(len(k) for k in helpers.WORST)
    for what, (err, where) in sorted(helpers.WORST.items()):
        terminalreporter.write_line(f"{what:<{width}}  {err:9.2e}  {where}")


def pytest_sessionstart(session):
    """Compile (or load from numba's cache) every kernel the commands use, once, before any test.

    On a fresh clone this is where the first-run compilation happens, so that no
    test's output depends on whether an earlier test happened to compile a kernel
    (the commands print a one-time 'compiling' notice on standard error).
    """
    import numpy as np

    import dynlib

    m = dynlib.load(helpers.ROBOTS_DIR / "double_pendulum.urdf")
    q = v = np.zeros(m.nq)
    dynlib.rnea(m, q, v, v)
    dynlib.aba(m, q, v, v)
    dynlib.crba(m, q)
    dynlib.frame_jacobian(m, q, "tip")
    dynlib.simulate(m, dt=1e-3, steps=2)
