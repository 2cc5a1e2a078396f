"""dynlib.checks: the checks behind `dyn energy-check`, on good and deliberately broken models."""
import dataclasses

import numpy as np
import pytest

import dynlib
from dynlib.checks import energy_check, model_checks, simpson_cumulative
from dynlib.scenario import load_scenario
from helpers import ROBOTS_DIR


def free_motion(robot, **overrides):
    base = {"control": {"type": "zero"}, "joint_friction": "none"}
    base.update(overrides)
    return load_scenario(str(ROBOTS_DIR / robot), base)


def by_name(report):
    return {c.name: c for c in report.checks}


def test_simpson_is_exact_for_cubics_and_fourth_order():
    t = np.linspace(0, 1, 101)
    np.testing.assert_allclose(simpson_cumulative(t, 3 * t ** 2), t ** 3, atol=1e-13)
    errs = []
    for n in (41, 81):
        t = np.linspace(0, 2, n)
        errs.append(abs(simpson_cumulative(t, np.cos(5 * t))[-1] - np.sin(10) / 5))
    assert errs[1] < errs[0] / 12  # fourth order: 16x per halving, allow noise


@pytest.mark.parametrize("robot", ["pendulum", "double_pendulum", "planar3", "arm6", "arm7"])
def test_rk4_free_motion_passes_on_fixed_base_samples(robot):
    report = energy_check(free_motion(f"{robot}.urdf"), random_initial=True, seed=0)
    assert report.passed, [c for c in report.checks if not c.passed]


@pytest.mark.parametrize("robot", ["quadruped", "biped"])
def test_rk4_free_motion_passes_floating(robot):
    report = energy_check(free_motion(f"{robot}.urdf", floating_base=True), random_initial=True, seed=1)
    checks = by_name(report)
    assert report.passed, [c for c in report.checks if not c.passed]
    assert "quaternion_norm" in checks


def test_explicit_euler_at_large_dt_fails_the_drift_check():
    report = energy_check(free_motion("arm6.urdf", integrator="euler", dt=1e-2), random_initial=True)
    assert not by_name(report)["energy_drift"].passed


def test_drift_shrinks_at_the_integrators_order():
    def drift(integrator, dt):
        sc = free_motion("double_pendulum.urdf", integrator=integrator, dt=dt, duration=0.5,
                         initial={"q": {"joint1": 1.0}})
        return by_name(energy_check(sc))["energy_drift"].value

    # rk4: fourth order (16x per halving), euler: first order (2x)
    assert drift("rk4", 4e-3) / drift("rk4", 2e-3) > 10
    ratio = drift("euler", 2e-3) / drift("euler", 1e-3)
    assert 1.6 < ratio < 2.5


def test_work_energy_balance_with_torques_and_friction():
    # a smooth friction law (tanh over 0.1 rad/s) keeps the dynamics smooth enough for RK4's
    # fourth order; the default 1e-3 rad/s makes the run itself less accurate, which the check
    # rightly reports (see the next test)
    def imbalance(smoothing):
        sc = load_scenario(str(ROBOTS_DIR / "arm6.urdf"),
                           {"control": {"type": "constant", "tau": {"shoulder_lift": 5.0, "elbow": -2.0}},
                            "friction_integration": "explicit", "dt": 2e-4, "duration": 0.2,
                            "friction_smoothing": smoothing})
        report = energy_check(sc, tolerance=1e-6)
        assert report.settings["work_energy_balance"] is True
        return by_name(report)["energy_drift"]

    assert imbalance(0.1).passed
    assert imbalance(1e-3).value > 100 * imbalance(0.1).value


def test_work_energy_balance_catches_unaccounted_energy():
    # the same torques without counting their work would be a large "drift": the check is not vacuous
    sc = load_scenario(str(ROBOTS_DIR / "arm6.urdf"),
                       {"control": {"type": "constant", "tau": {"shoulder_lift": 5.0}}, "joint_friction": "none",
                        "duration": 0.5})
    from dynlib.checks import drift_checks
    from dynlib.simulate import simulate
    from dynlib.scenario import controller

    r = simulate(sc.model, dt=sc.dt, steps=sc.n_steps, controller=controller(sc), joint_friction=False)
    balanced, _ = drift_checks(sc.model, r.time, r.q, r.v, r.a, tolerance=1e-6, work_energy=True)
    plain, _ = drift_checks(sc.model, r.time, r.q, r.v, r.a, tolerance=1e-6, work_energy=False)
    assert balanced[0].passed and not plain[0].passed


def test_non_positive_definite_inertia_fails_the_mass_matrix_check():
    model = dynlib.load(ROBOTS_DIR / "double_pendulum.urdf")
    bad = model.arrays.inertia.copy()
    bad[1] = -bad[1]  # a body with negative mass and inertia: M is indefinite somewhere
    broken = dataclasses.replace(model, arrays=model.arrays._replace(inertia=bad))
    checks = {c.name: c for c in model_checks(broken)}
    assert not checks["mass_matrix_positive_definite"].passed
    good = {c.name: c for c in model_checks(model)}
    assert all(c.passed for c in good.values())
