"""Fixtures shared by the whole suite (the importable helpers are in tests/helpers.py).

- `robots_dir`: the repo's robots/ folder (`helpers.ROBOTS_DIR`);
- `erd_path`: a function giving an example-robot-data URDF path (skips when absent);
- `random_tree`: a function ``random_tree(nb, seed, floating_base=False)`` -> Model,
  writing the random URDF under this session's temporary folder;
- `model`: the identity-test models: every sample robot with a fixed base, the legged
  ones also with a floating base, and random trees with both (ids such as
  ``arm6-fixed``, ``quadruped-floating``, ``tree9-floating``).

The `kernels` marker: every test of a module in `KERNEL_MODULES` carries it (CI's lowest-numba
pass runs only those, `-m "kernels and not readme"`); a module in `NUMBA_INDEPENDENT` tests what
numba does not change, and marks its few kernel tests itself (`@pytest.mark.kernels`).
tests/test_layout.py checks that every test module is in exactly one of the two.
"""
import functools
import os
from pathlib import Path

import pytest
from hypothesis import settings

import helpers

# CI (the CI environment variable set, as CI services do): hypothesis draws the same examples in every
# run and keeps no example database, so that a red CI is the code's change, not a new draw
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

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


# modules (relative to tests/) whose tests run dynlib's compiled kernels: algorithms, simulation,
# contacts, scenarios, inverse and contact-id, identification, checks, sweeps, the one-call path,
# threads and the kernel cache
KERNEL_MODULES = frozenset({
    "_numba/test_compiled.py", "_numba/test_one.py", "_numba/test_parallel.py", "algorithms/test_aba.py",
    "algorithms/test_configuration.py", "algorithms/test_coriolis.py", "algorithms/test_crba.py", "algorithms/test_derivatives.py",
    "algorithms/test_energy.py", "algorithms/test_forward.py", "algorithms/test_inertia_box.py", "algorithms/test_jacobians.py",
    "algorithms/test_kinematics.py", "algorithms/test_linalg.py", "algorithms/test_regressor.py",
    "algorithms/test_rnea.py", "algorithms/test_task_space.py", "cli/test_contact_id.py",
    "cli/test_energy_check.py", "cli/test_identify.py", "cli/test_inverse.py", "cli/test_linearize.py", "cli/test_published_models.py",
    "cli/test_simulate.py", "cli/test_sweep.py", "core/test_joints.py", "core/test_mimic.py", "core/test_model.py",
    "core/test_pinocchio_order.py",
    "core/test_spatial.py", "files/test_locks.py",
    "motion/test_contact_cones.py", "motion/test_contact_distribution.py", "motion/test_contact_inverse.py",
    "motion/test_derivatives.py", "motion/test_identify.py", "motion/test_linearize.py", "motion/test_inverse.py", "runs/test_checks.py",
    "runs/test_contact_scenarios.py", "runs/test_scenario.py", "runs/test_sweep.py",
    "sim/test_contact_bilateral.py", "sim/test_contact_points.py", "sim/test_contact_relaxed.py",
    "sim/test_contact_soft.py", "sim/test_contact_unilateral.py", "sim/test_controllers.py",
    "sim/test_dynamics.py", "sim/test_integrators.py", "sim/test_joint_limits.py", "sim/test_mimic.py", "sim/test_simulate.py",
    "sim/test_stiff_gains.py",
    "test_pinocchio.py",
})
# modules about what numba does not change: readers and writers (URDF, CSV, Parquet, bags), pages,
# files and processes, the docs, the code's layout and imports
NUMBA_INDEPENDENT = frozenset({
    "cli/test_common.py", "cli/test_info.py", "cli/test_plot.py", "cli/test_view.py", "files/test_column_map.py",
    "files/test_columns.py", "files/test_gains.py", "files/test_mimic.py", "sim/test_limits.py",
    "files/test_output.py", "files/test_packages.py", "files/test_recordings.py", "files/test_trajectory.py",
    "files/test_urdf.py", "files/test_urdf_visuals.py", "runs/test_view.py", "runs/test_view_browser.py",
    "test_bad_inputs.py", "test_docs.py", "test_faults.py", "test_faults_files.py", "test_fuzz.py",
    "test_imports.py", "test_layout.py", "test_readme.py",
})
TESTS_DIR = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m selects on the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.is_relative_to(TESTS_DIR) and item.path.relative_to(TESTS_DIR).as_posix() in KERNEL_MODULES:
            item.add_marker(pytest.mark.kernels)
    if hasattr(config, "workerinput"):  # a pytest-xdist worker (every worker sorts alike)
        # the groups first (the README's blocks: minutes, in order, on one worker), so that the other
        # workers share the rest meanwhile instead of waiting for the group at the end
        items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


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
