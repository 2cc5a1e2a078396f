"""dynlib.runs.checks: the checks behind `dyn energy-check`, on good and deliberately broken models."""
import dataclasses
import importlib

import numpy as np
import pytest

import dynlib
from dynlib.runs.checks import drift_checks, energy_check, model_checks, simpson_cumulative
from dynlib.runs.scenario import load_scenario, run
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
    from dynlib.sim.simulate import simulate
    from dynlib.runs.scenario import controller

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


# ------------------------------------------------------------------ the step
# example-robot-data's kinova fails the default tolerance at dt = 1 ms with RK4 (drift 1.06e-3)
# and passes at a finer step: a sound model, a step too large for it
KINOVA = "kinova_description/robots/kinova.urdf"


def kinova(erd_path, **overrides):
    # the kinova's free fall through its joint limits (held, its motion reaches them and passes at 1 ms)
    return load_scenario(str(erd_path(KINOVA)), {"control": {"type": "zero"}, "joint_friction": "none",
                                                 "limits": {"position": False, "effort": False}, **overrides})


def drifts(report):
    return [(a["dt"], a["energy_drift"]) for a in report.settings["refinement"]]


def test_energy_check_chooses_the_step_where_the_drift_converges(erd_path):
    report = energy_check(kinova(erd_path), random_initial=True)
    assert report.passed, [c for c in report.checks if not c.passed]
    s = report.settings
    runs = drifts(report)
    assert s["dt_fixed"] is False and s["drift_cause"] is None and s["dt"] == s["passing_dt"] == runs[-1][0]
    assert runs[0][0] == 1e-3 and s["dt"] < 1e-3 and s["steps"] == round(1.0 / s["dt"])
    # halving, and the coarsest step that passes: every coarser one failed
    assert all(b[0] == a[0] / 2 for a, b in zip(runs, runs[1:]))
    assert all(d > 1e-6 for _, d in runs[:-1]) and runs[-1][1] <= 1e-6
    # the drift falls at RK4's order, 16x per halving (measured 26, 17, 16)
    assert all(a[1] / b[1] > 10 for a, b in zip(runs, runs[1:]))
    assert by_name(report)["energy_drift"].value == runs[-1][1]
    assert any("chosen" in n for n in report.notes)
    # the same step, fixed, gives the same run (the refinement is energy_check at that step)
    fixed = energy_check(kinova(erd_path, dt=s["dt"]), random_initial=True)
    assert fixed.settings["dt_fixed"] is True and by_name(fixed)["energy_drift"].value == runs[-1][1]


def test_a_fixed_step_that_fails_is_blamed_on_the_step_and_the_integrator(erd_path):
    report = energy_check(kinova(erd_path, dt=1e-3, integrator="rk4"), random_initial=True)
    s = report.settings
    assert not report.passed and s["dt_fixed"] is True and s["dt"] == 1e-3
    assert s["drift_cause"] == "integration_error"
    (dt0, d0), (dt1, d1), (dt2, d2) = drifts(report)[:3]
    assert (dt1, dt2) == (dt0 / 2, dt0 / 4) and d0 / d1 > 10 and d1 / d2 > 10
    note = " ".join(report.notes)
    assert "because of the time step" in note and "integration error of rk4" in note
    # the step it names passes when run on its own
    assert s["passing_dt"] < 1e-3
    again = energy_check(kinova(erd_path, dt=s["passing_dt"], integrator="rk4"), random_initial=True)
    assert again.passed and f"{s['passing_dt']:.4g} s" in note


def non_rigid(model, body):
    """`model` with body's spatial inertia no rigid body has: its upper-right block -[m c]x flipped.

    A rigid body's spatial inertia is symmetric: the same centre of mass c in its momentum m (v - c x w)
    and in its angular momentum. With the block flipped, the forward dynamics (the ABA reads the whole
    6x6 matrix) is no longer the Euler-Lagrange equation of the kinetic energy ½ vᵀ I v (which, like the
    RNEA and the CRBA, reads m, m c and the rotational block): the free motion does work on itself, and
    the energy drifts by the same amount at every step. (A link whose principal moments violate the
    triangle inequality is no real body either, but its inertia is still symmetric positive definite:
    its motion conserves energy, and the check passes it.)
    """
    bad = model.arrays.inertia.copy()
    bad[body, 0:3, 3:6] *= -1
    return dataclasses.replace(model, arrays=model.arrays._replace(inertia=bad))


@pytest.mark.parametrize("dt", [None, 1e-3])
def test_a_model_that_does_not_conserve_energy_is_not_blamed_on_the_step(dt):
    # the motion without the limits, which would take energy on the steps where arm6 reaches one
    sc = free_motion("arm6.urdf", limits={"position": False, "effort": False}, **({} if dt is None else {"dt": dt}))
    sound = energy_check(sc, random_initial=True)
    assert sound.passed and sound.settings["drift_cause"] is None
    sc._model = non_rigid(sc.model, sc.model.nb - 1)
    report = energy_check(sc, random_initial=True)
    checks = by_name(report)
    assert not report.passed and not checks["energy_drift"].passed and not checks["fd_id_roundtrip"].passed
    s = report.settings
    assert s["drift_cause"] == "not_integration_error" and s["passing_dt"] is None and s["dt"] == 1e-3
    assert s["dt_fixed"] is (dt is not None)
    values = [d for _, d in drifts(report)]
    assert len(values) >= 2 and max(values) < 1.01 * min(values)  # a smaller step changes nothing
    note = " ".join(report.notes)
    assert "not because of the time step" in note and "integration error" not in note


def test_a_motion_that_blows_up_at_the_same_time_at_every_step_is_not_blamed_on_the_step(erd_path):
    # example-robot-data's iCub: a nearly singular mass matrix (λ_min/λ_max 6e-11 at the seeded state):
    # the free motion leaves max_state at t ≈ 0.045 s whatever the step; FD∘ID loses its digits too
    sc = load_scenario(str(erd_path("icub_description/robots/icub.urdf")),
                       {"control": {"type": "zero"}, "joint_friction": "none"})
    report = energy_check(sc, random_initial=True)
    s = report.settings
    assert not report.passed and s["drift_cause"] == "not_integration_error" and s["dt"] == 1e-3
    times = [a["diverged_at"] for a in s["refinement"]]
    assert len(times) >= 2 and None not in times and max(times) - min(times) <= 1e-3 + 0.05 * max(times)
    assert "not because of the time step" in " ".join(report.notes)


# ------------------------------------------------------------------ contacts
# With the default tolerance (1e-6), the sample contact scenarios give (energy_drift, the
# work-energy imbalance, as energy_check reports it on each):
# passed: contact_bilateral_standing (1.1e-7), contact_soft_quadruped (7.2e-11); failed, by
# accuracy, not by a missing force: contact_bilateral_welded (1.3e-5: Simpson across the wrench's
# on/off steps, second order), contact_soft_ball (7.0e-2) and contact_soft_box (2.7e-2: the
# penalty force jumps by b·|ṗ| when a point touches down), the unilateral and relaxed ones
# (1.2e-4 to 3.5e-3: semi-implicit Euler, first order).
# Each falls with the step, which energy-check says (rerun at dt/2 and dt/4: integration error).
SCENARIOS = ROBOTS_DIR.parent / "scenarios"
OBSERVED = {"contact_bilateral_standing": True, "contact_soft_quadruped": True, "contact_bilateral_welded": False,
            "contact_soft_ball": False, "contact_soft_box": False, "contact_unilateral_ball": False,
            "contact_unilateral_box_slope": False, "contact_unilateral_quadruped": False,
            "contact_relaxed_ball": False, "contact_relaxed_quadruped": False}


def ball(name="contact_soft_ball", **overrides):
    return load_scenario(SCENARIOS / f"{name}.yaml", {"duration": 0.6, **overrides})  # the first bounce: t ≈ 0.29 s


def centre_height(report, sc):
    """The ball's centre height along energy_check's own run: its potential is m g z (zero at z = 0)."""
    U = report.series["potential"]
    return U / U[0] * sc.initial.q["root.z"]


def test_energy_check_simulates_the_contacts():
    sc = ball()
    report = energy_check(sc)
    assert report.settings["contacts"] == "soft" and report.settings["work_energy_balance"] is True
    z = centre_height(report, sc)
    # soft contact, k = 1e4 N/m: the 1 kg ball dropped from 0.4 m above the ground sinks
    # about sqrt(2 m g h / k) ≈ 2.8 cm into it, then bounces; its centre stays far above the floor
    assert 0.05 < z.min() < 0.1 and z[-1] > z.min()
    # the same run without its contact block falls through the floor (what energy-check ran before)
    free = energy_check(ball(contacts=None, **{"output.columns": ["q"]}))
    assert free.settings["contacts"] is None and centre_height(free, sc).min() < -0.5


def test_contact_work_is_in_the_balance_and_shrinks_with_dt():
    def drifts(dt):
        sc = ball(dt=dt)
        r = run(sc, every=1, energy=False)
        balance, _ = drift_checks(sc.model, r.time, r.q, r.v, r.a, tolerance=1e-6, work_energy=True)
        plain, _ = drift_checks(sc.model, r.time, r.q, r.v, r.a, tolerance=1e-6)
        assert by_name(energy_check(sc))["energy_drift"].value == balance[0].value  # the check is this balance
        return balance[0].value, plain[0].value

    (b1, p1), (b2, p2), (b3, _) = drifts(1e-3), drifts(5e-4), drifts(2.5e-4)
    # the damper takes a large share of the energy at the bounce: E(t) - E(0) is far from zero,
    # and the work of the contact forces accounts for nearly all of it, better at a smaller dt
    assert p1 > 0.1 and p2 > 0.1
    assert b1 < p1 / 5 and b3 < b2 < b1


@pytest.mark.parametrize("name", ["contact_unilateral_ball", "contact_relaxed_ball"])
def test_impulse_contacts_balance_the_impact_at_first_order(name):
    def imbalance(dt, impulses=True):
        sc = ball(name, dt=dt)
        r = run(sc, every=1, energy=False)
        return drift_checks(sc.model, r.time, r.q, r.v, r.a, tolerance=1e-6, work_energy=True,
                            impulses=impulses)[0][0].value

    assert by_name(energy_check(ball(name)))["energy_drift"].value == imbalance(1e-3)
    # semi-implicit Euler: first order, the impact's work counted over its step
    ratio = imbalance(1e-3) / imbalance(5e-4)
    assert 1.6 < ratio < 2.5
    # counting the impulse with the velocity before the impact (Simpson on the samples) would not balance
    assert imbalance(1e-3, impulses=False) > 10 * imbalance(1e-3)


def test_a_contact_run_that_did_not_check_does_not_pass(monkeypatch):
    # diverged: a penalty too stiff for explicit Euler at this dt
    report = energy_check(ball(integrator="euler", **{"contacts.stiffness": 1e9}))
    drift = by_name(report)["energy_drift"]
    assert not drift.passed and "diverged" in drift.detail and not report.passed
    # a runner that drops the contact block (the old energy-check): the check fails, it does not pass
    runner = importlib.import_module("dynlib.runs.scenario.run")  # the module (dynlib.runs.scenario.run is the function)
    monkeypatch.setattr(runner, "contacts", lambda sc: None)
    report = energy_check(ball())
    drift = by_name(report)["energy_drift"]
    assert not drift.passed and "not simulated" in drift.detail and report.settings["contacts"] is None


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OBSERVED))
def test_sample_contact_scenarios_with_the_default_tolerance(name):
    sc = load_scenario(SCENARIOS / f"{name}.yaml")
    report = energy_check(sc)
    drift = by_name(report)["energy_drift"]
    assert report.settings["contacts"] == sc.contacts.model and drift.detail.startswith("work-energy imbalance")
    assert np.isfinite(drift.value) and drift.passed is OBSERVED[name], drift.value
    # the scenarios fix dt: a failure is rerun at dt/2 and dt/4, and each imbalance falls with the step
    # (at order 0.7 to 2: contacts and switching forces cost RK4 its order; semi-implicit Euler, 1)
    runs = report.settings["refinement"]
    assert report.settings["dt"] == sc.dt and report.settings["dt_fixed"] is True
    if not drift.passed:
        assert report.settings["drift_cause"] == "integration_error", report.notes
        assert [a["dt"] for a in runs[:3]] == [sc.dt, sc.dt / 2, sc.dt / 4]
        assert runs[2]["energy_drift"] < runs[0]["energy_drift"] / 1.5


def test_order_causes_name_what_the_scenario_has():
    # the words of a drift that falls below the integrator's order: only what the scenario has (issue 29)
    from dynlib.runs.checks import order_causes

    plain = free_motion("double_pendulum.urdf")
    assert order_causes(plain, plain.model.q_neutral, 1e-3) == ""
    arm6 = load_scenario(str(ROBOTS_DIR / "arm6.urdf"), {"control": {"type": "zero"}})
    words = order_causes(arm6, arm6.model.q_neutral, 1e-3)
    assert "rk4's implicit friction on shoulder_lift, elbow, wrist_1, wrist_2, wrist_3" in words
    assert "first order in that term" in words and "tanh kink" in words and "contact" not in words
    ball = load_scenario(str(ROBOTS_DIR.parent / "scenarios" / "contact_soft_ball.yaml"))
    assert "soft contacts" in order_causes(ball, ball.model.q_neutral, ball.dt)


def test_energy_check_passes_on_a_panda_with_coupled_fingers(erd_path):
    """Issue 28 item 8: the Panda's fingers are one coordinate (panda_finger_joint2 mimics panda_finger_joint1);
    the coupling does no work, so the free motion's energy is conserved (rk4, no friction, no torque), and with
    torques and the fingers' friction the work-energy balance holds (a follower's friction acts on it, through
    the multiplier on its leader)."""
    path = str(erd_path("panda_description/urdf/panda.urdf"))
    free = load_scenario(path, {"control": {"type": "zero"}, "joint_friction": "none", "duration": 0.5,
                                "limits": {"position": False, "effort": False}})
    report = energy_check(free, random_initial=True, seed=3)
    assert report.passed, [c.as_dict() for c in report.checks]
    q0 = np.array(report.settings["q0"])
    assert abs(q0[8] - q0[7]) == 0.0  # the random start is coupled (no MimicStateWarning)
    driven = load_scenario(path, {"control": {"type": "constant", "tau": {"panda_joint2": 3.0,
                                                                          "panda_finger_joint1": 0.5}},
                                  "friction_integration": "explicit", "friction_smoothing": 0.1, "dt": 5e-4,
                                  "duration": 0.2, "initial": {"q": {"panda_finger_joint1": 0.02}}})
    report = energy_check(driven, tolerance=1e-6)
    assert report.settings["work_energy_balance"] is True
    assert by_name(report)["energy_drift"].passed, by_name(report)["energy_drift"].as_dict()
