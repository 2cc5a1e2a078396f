"""Stiff PD gains on light links at the user's control rate (#15 item 1): semi-implicit and euler take
the gains implicitly (dynlib.sim.dynamics), rk4 keeps them explicit and warns beyond its stability limit."""
import functools
import warnings

import numpy as np
import pytest

import dynlib
from dynlib.algorithms.crba import crba
from dynlib.sim.controllers import PD, RK4_REAL_LIMIT, StiffGainsWarning
from dynlib.runs.scenario import load_scenario, run_scenario
from dynlib.sim.simulate import simulate as _simulate
from helpers import ROBOTS_DIR, erd_path, sample

# the implicit PD gains themselves: unsaturated, without joint limits
simulate = functools.partial(_simulate, limits=False)

KP, KD, DT = 200.0, 30.0, 1e-3  # the gains a user set on every joint, at 1 kHz
TARGET = 0.3                    # rad, every arm joint


def stiff_robot(name):
    """(model, q0, target dict): the sample iiwa-like arm7, or example-robot-data's panda (7 arm joints)."""
    if name == "arm7":
        model = sample("arm7")
    else:
        model = dynlib.load(erd_path("panda_description/urdf/panda.urdf"))
    q0 = model.q_neutral.copy()
    arm = [n for n in model.q_names if "finger" not in n]
    return model, q0, {n: TARGET for n in arm}


def stiff_pd(target):
    return PD(kp=KP, kd=KD, target=target, gravity_compensation=True)


def target_vector(model, q0, target):
    q = q0.copy()
    for name, x in target.items():
        q[model.q_names.index(name)] = x
    return q


@pytest.fixture(scope="module", params=["arm7", "panda"])
def robot(request):
    return stiff_robot(request.param)


def test_the_gains_are_beyond_the_explicit_limit_on_the_light_link(robot):
    model, q0, _ = robot
    light = np.diag(crba(model, q0)).min()
    assert KD * DT / light > RK4_REAL_LIMIT > 2.0  # the case: kd dt / M_ii far beyond every explicit scheme's limit


@pytest.mark.parametrize("integrator", ["semi-implicit", "euler"])
def test_stiff_pd_reaches_its_target_at_1khz(robot, integrator):
    model, q0, target = robot
    # joint friction off: its Coulomb dead band (friction / kp) would be the error, not the integration
    r = simulate(model, q0, dt=DT, steps=3000, integrator=integrator, controller=stiff_pd(target),
                 joint_friction=False)
    assert r.diverged is None
    assert np.abs(r.q_final - target_vector(model, q0, target)).max() < 1e-3
    assert np.abs(r.v_final).max() < 1e-2


def test_the_explicit_form_of_the_same_gains_diverges(robot):
    model, q0, target = robot
    r = simulate(model, q0, dt=DT, steps=3000, integrator="semi-implicit", controller=stiff_pd(target),
                 gain_integration="explicit")
    assert r.diverged is not None and r.diverged.step < 200


def test_rk4_warns_naming_the_joint_the_gain_and_the_limit_and_diverges(robot):
    model, q0, target = robot
    light = model.v_names[int(np.argmin(np.diag(crba(model, q0))))]
    with pytest.warns(StiffGainsWarning) as caught:
        r = simulate(model, q0, dt=DT, steps=3000, integrator="rk4", controller=stiff_pd(target))
    text = [str(w.message) for w in caught if issubclass(w.category, StiffGainsWarning)]
    hit = [t for t in text if f"'{light}'" in t]
    assert hit and "kd = 30" in hit[0] and f"{RK4_REAL_LIMIT:.3f}" in hit[0] and "dt = 0.001" in hit[0]
    assert r.diverged is not None  # the warning was right
    # at a step below the largest stable one it names, rk4 no longer warns for that joint
    dt_ok = float(hit[0].split("stable for dt <= ")[1].split(" s")[0])
    assert dt_ok < DT
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        simulate(model, q0, dt=0.95 * dt_ok, steps=10, integrator="rk4", controller=stiff_pd(target))
    assert not any(f"'{light}'" in str(w.message) for w in again)


def test_the_sample_pd_scenario_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", StiffGainsWarning)
        r = run_scenario(load_scenario(ROBOTS_DIR.parent / "scenarios" / "arm6_pd.yaml", {"steps": 50}))
    assert r.diverged is None


@pytest.mark.parametrize("integrator", ["semi-implicit", "euler"])
def test_the_recorded_torque_is_the_one_applied_inverse_dynamics_gives_it_back(integrator):
    model, q0, target = stiff_robot("arm7")
    eps = 1e-3
    r = simulate(model, q0, dt=DT, steps=400, integrator=integrator, controller=stiff_pd(target))
    assert r.diverged is None and np.abs(r.tau).max() > 10.0
    D, F = model.arrays.damping, model.arrays.friction
    back = dynlib.rnea(model, r.q, r.v, r.a) + D * r.v + F * np.tanh(r.v / eps)
    assert np.allclose(back, r.tau, rtol=1e-9, atol=1e-9)


def test_the_applied_torque_is_the_pd_at_the_next_state_under_semi_implicit():
    # backward Euler in the gains: with q+ = q + dt v+ (revolute joints), the torque applied in step k is
    # exactly kp (q* - q_{k+1}) - kd v_{k+1} (+ g(q_k)): the PD evaluated at the state the step reaches
    model, q0, target = stiff_robot("arm7")
    q_star = target_vector(model, q0, target)
    r = simulate(model, q0, dt=DT, steps=200, integrator="semi-implicit", controller=stiff_pd(target),
                 joint_friction=False)
    g = dynlib.gravity_torques(model, r.q[:-1])
    expected = KP * (q_star - r.q[1:]) - KD * r.v[1:] + g
    assert np.allclose(r.tau[:-1], expected, rtol=1e-10, atol=1e-9)


def test_soft_gains_give_the_explicit_trajectory_to_first_order():
    # arm6's sample gains are soft: the implicit and explicit forms differ by O(dt), halving with dt
    sc = load_scenario(ROBOTS_DIR.parent / "scenarios" / "arm6_pd.yaml")
    model, c = sc.model, sc.control
    q0 = model.q_neutral.copy()
    q0[model.q_names.index("shoulder_lift")], q0[model.q_names.index("elbow")] = -0.5, 0.5
    pd = PD(c.kp, c.kd, c.target, gravity_compensation=True)
    gaps = []
    for dt in (1e-3, 5e-4):
        steps = int(round(0.5 / dt))
        runs = [simulate(model, q0, dt=dt, steps=steps, integrator="semi-implicit", controller=pd,
                         joint_friction=False, gain_integration=mode) for mode in ("implicit", "explicit")]
        assert all(x.diverged is None for x in runs)
        gaps.append(np.abs(runs[0].q - runs[1].q).max())
    assert gaps[0] > 0.0
    assert 1.6 < gaps[0] / gaps[1] < 2.4  # first order


def test_the_work_energy_balance_closes_at_first_order_with_the_recorded_rows():
    # the rows' qdd is the acceleration the applied torque produced (M a + h = tau, no friction here), so the
    # work of step k, dt ½(v_k + v_k+1)ᵀ(M a_k + h_k), balances the energy up to the scheme's O(dt) error
    from dynlib.runs.checks import drift_checks

    model, q0, target = stiff_robot("arm7")
    drifts = []
    for dt in (1e-3, 5e-4):
        r = simulate(model, q0, dt=dt, steps=int(round(0.5 / dt)), integrator="semi-implicit",
                     controller=stiff_pd(target), joint_friction=False)
        checks, series = drift_checks(model, r.time, r.q, r.v, r.a, tolerance=1e-3, work_energy=True,
                                      impulses=True)
        assert np.abs(series["work"]).max() > 1.0  # the controller did work
        drifts.append(checks[0].value)
    assert drifts[0] < 1e-4
    assert 1.6 < drifts[0] / drifts[1] < 2.4


def test_dyn_simulate_prints_the_rk4_warning(tmp_path):
    import subprocess
    import sys

    scenario = tmp_path / "stiff.yaml"
    scenario.write_text(f"dyn: 1\nrobot: {ROBOTS_DIR / 'arm7.urdf'}\ndt: 0.001\nduration: 0.01\nintegrator: rk4\n"
                        "control: {type: pd, kp: 200, kd: 30, gravity_compensation: true}\n")
    done = subprocess.run([sys.executable, "-m", "cli.main", "simulate", str(scenario), "-o", tmp_path / "out.csv"],
                          capture_output=True, text=True)
    lines = [x for x in done.stderr.splitlines() if x.startswith("dyn: warning: rk4")]
    assert any("'joint7'" in x and "kd = 30" in x for x in lines), done.stderr
