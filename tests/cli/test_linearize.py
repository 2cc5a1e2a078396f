"""`dyn linearize`: the continuous linearization at a point, its default point (an equilibrium),
its inputs, outputs and bad input."""
import json

import numpy as np
import pytest

import dynlib
from dynlib.motion.linearize import continuous
from helpers import ROBOTS_DIR, invoke

SCENARIOS_DIR = ROBOTS_DIR.parent / "scenarios"

PENDULUM = ROBOTS_DIR / "pendulum.urdf"
DOUBLE = ROBOTS_DIR / "double_pendulum.urdf"
ARM6 = ROBOTS_DIR / "arm6.urdf"


def _run(*args):
    r = invoke("linearize", *map(str, args))
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _error(*args):
    r = invoke("linearize", *map(str, args))
    assert r.exit_code == 2, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dyn: error: "), r.stderr
    return lines[0]


def test_pendulum_hanging_is_the_textbook_linearization():
    d = _run(PENDULUM)
    assert set(d) == {"A", "B", "state", "input", "point", "dt", "integrator"}
    assert d["state"] == ["q.hinge", "qd.hinge"] and d["input"] == ["hinge"]
    assert d["dt"] is None and d["integrator"] is None
    model = dynlib.load(PENDULUM)
    A, B = continuous(model, np.zeros(1), np.zeros(1), np.zeros(1))
    np.testing.assert_array_equal(d["A"], A)
    np.testing.assert_array_equal(d["B"], B)
    assert d["A"][1][0] < 0  # hanging: stable


@pytest.mark.parametrize("args", [(DOUBLE, "--q", "joint1=2.5", "--q", "joint2=-0.4"),
                                  (ARM6, "--q", "shoulder_lift=-0.7", "--q", "elbow=1.1"),
                                  (ROBOTS_DIR / "quadruped.urdf", "--floating-base", "--q", "root.z=0.3")])
def test_the_default_point_is_an_equilibrium(args):
    """tau defaults to the torque holding q at rest: the dynamics there is zero, and so is A x* + B u* (the
    point itself, x* = 0, u* = 0 in deviations) — checked as the holding torque's acceleration instead."""
    d = _run(*args)
    model = dynlib.load(args[0], floating_base="--floating-base" in args)
    q, qd, tau = (np.array(d["point"][k]) for k in ("q", "qd", "tau"))
    ar = model.arrays
    qdd = dynlib.aba(model, q, qd, tau - ar.damping * qd - ar.friction * np.tanh(qd / 1e-3))
    assert np.max(np.abs(qdd)) < 1e-9 and not np.any(qd)
    assert np.abs(tau).max() > 0.1 or "--floating-base" in args  # gravity compensation, not zero
    A, B = np.array(d["A"]), np.array(d["B"])
    x = np.concatenate([np.zeros(model.nv), qd])
    u = np.zeros(B.shape[1])
    np.testing.assert_array_equal(A @ x + B @ u, 0.0)


def test_floating_base_root_is_not_an_input_by_default():
    d = _run(ROBOTS_DIR / "quadruped.urdf", "--floating-base")
    model = dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True)
    assert d["input"] == list(model.v_names[6:])
    assert d["state"][:2] == ["q.root.vx", "q.root.vy"] and d["state"][18] == "qd.root.vx"
    assert np.array(d["B"]).shape == (36, 12)


def test_input_keeps_those_columns_in_that_order():
    full = np.array(_run(DOUBLE, "--q", "joint1=0.3")["B"])
    d = _run(DOUBLE, "--q", "joint1=0.3", "--input", "joint2,joint1")
    assert d["input"] == ["joint2", "joint1"]
    np.testing.assert_array_equal(np.array(d["B"]), full[:, [1, 0]])


def test_point_from_the_scenario_and_options(tmp_path):
    d = _run(SCENARIOS_DIR / "arm6_pd.yaml", "--qd", "elbow=0.2", "--tau", "elbow=1.5")
    model = dynlib.load(ARM6)
    k = model.v_names.index("elbow")
    assert d["point"]["qd"][k] == 0.2 and d["point"]["tau"][k] == 1.5 and sum(map(abs, d["point"]["tau"])) == 1.5
    from dynlib.runs.scenario import initial_state, load_scenario

    q0, _ = initial_state(load_scenario(SCENARIOS_DIR / "arm6_pd.yaml"))
    np.testing.assert_array_equal(d["point"]["q"], q0)


def test_scenario_controller_is_left_out_and_said(tmp_path):
    r = invoke("linearize", str(SCENARIOS_DIR / "arm6_pd.yaml"))
    assert r.exit_code == 0 and "controller left out" in r.stderr
    assert json.loads(r.stdout)["A"] == _run(ARM6, "--q", ",".join(map(str, json.loads(r.stdout)["point"]["q"])))["A"]


def test_gravity_option_scales_the_gravity_block():
    g = np.array(_run(PENDULUM, "--gravity", "0,0,-19.62")["A"])
    assert g[1][0] == pytest.approx(2 * np.array(_run(PENDULUM)["A"])[1][0], rel=1e-12)


def test_no_joint_friction_changes_the_velocity_block():
    with_f = np.array(_run(ARM6)["A"])
    without = np.array(_run(ARM6, "--no-joint-friction")["A"])
    np.testing.assert_array_equal(with_f[:6], without[:6])
    assert np.abs(with_f[6:, 6:] - without[6:, 6:]).max() > 1.0


def test_json_and_npz_files(tmp_path):
    d = _run(DOUBLE, "--q", "joint1=0.3")
    r = invoke("linearize", str(DOUBLE), "--q", "joint1=0.3", "-o", str(tmp_path / "lin.json"))
    assert r.exit_code == 0 and r.stdout == ""
    assert json.loads((tmp_path / "lin.json").read_text()) == d
    r = invoke("linearize", str(DOUBLE), "--q", "joint1=0.3", "-o", str(tmp_path / "lin.npz"))
    assert r.exit_code == 0, r.stderr
    z = np.load(tmp_path / "lin.npz")
    np.testing.assert_array_equal(z["A"], d["A"])
    np.testing.assert_array_equal(z["B"], d["B"])
    assert list(z["state"]) == d["state"] and list(z["input"]) == d["input"]
    np.testing.assert_array_equal(z["q"], d["point"]["q"])


@pytest.mark.parametrize("args, words", [
    (("--input", "joint3"), "--input: unknown coordinate 'joint3'"),
    (("--input", "joint1,joint1"), "--input: coordinate 'joint1' given twice"),
    (("--q", "knee=1"), "--q: robot 'double_pendulum' has no coordinate 'knee'"),
    (("--qd", "joint1=nan"), "--qd"),
    (("--tau", "ankle=1"), "--tau: unknown coordinate 'ankle'"),
    (("--tau", "1,2,3"), "--tau: expected 2 numbers"),
    (("--tau", "joint1=inf"), "--tau: the point's tau is not finite"),
    (("-o", "lin.csv"), "must end in .json or .npz"),
    (("--integrator", "euler"), "--integrator needs --dt"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, words):
    line = _error(DOUBLE, *[str(tmp_path / a) if a.startswith("lin.") else a for a in args])
    assert words in line
    assert not list(tmp_path.iterdir())


def test_help():
    r = invoke("linearize", "--help")
    assert r.exit_code == 0 and "--input" in r.output


@pytest.mark.parametrize("integrator", ["semi-implicit", "euler"])
def test_discrete_is_dyn_simulates_step_and_the_point_is_its_fixed_point(tmp_path, integrator):
    """--dt: the step map's A, B (dynlib.motion.linearize.discrete, checked against differences of the simulated
    step in tests/motion/test_linearize.py); dyn simulate from the default point with its torque stays there."""
    args = (ARM6, "--q", "shoulder_lift=-0.7", "--q", "elbow=1.1", "--dt", "0.002", "--integrator", integrator)
    d = _run(*args)
    assert d["dt"] == 0.002 and d["integrator"] == integrator
    model = dynlib.load(ARM6)
    q, qd, tau = (np.array(d["point"][k]) for k in ("q", "qd", "tau"))
    from dynlib.motion.linearize import discrete
    from dynlib.sim.controllers import Constant

    A, B = discrete(model, q, qd, tau, 0.002, integrator)
    np.testing.assert_array_equal(d["A"], A)
    np.testing.assert_array_equal(d["B"], B)
    r = dynlib.simulate(model, q, qd, dt=0.002, steps=3, integrator=integrator, controller=Constant(tau=tau))
    assert np.abs(r.q[-1] - q).max() < 1e-12 and np.abs(r.v[-1]).max() < 1e-12
    assert _run(*args[:-4]) != d  # the continuous one differs


def test_rk4_with_stiff_friction_is_one_line(tmp_path):
    line = _error(ARM6, "--dt", "0.01", "--integrator", "rk4", "-o", tmp_path / "lin.json")
    assert "--integrator: rk4 at dt = 0.01 takes the friction of" in line and "wrist_3" in line
    assert not list(tmp_path.iterdir())
    d = _run(ARM6, "--dt", "0.01", "--integrator", "rk4", "--no-joint-friction")
    assert d["integrator"] == "rk4" and np.array(d["A"]).shape == (12, 12)


def test_default_integrator_with_dt_is_semi_implicit():
    d = _run(PENDULUM, "--dt", "0.01")
    assert d["integrator"] == "semi-implicit" and d["dt"] == 0.01


def test_the_readme_walk_through_balances_the_cartpole(tmp_path):
    # the README's cart-pole: dyn linearize's discrete A, B with the cart as the only input, an LQR gain
    # in scipy's five lines, written as a gain file, then dyn simulate's state-feedback scenario from
    # 0.1 rad off upright; the sample gain file is the one these steps write (it cannot drift)
    import shutil

    import scipy.linalg as sl

    lin_path = tmp_path / "lin.json"
    r = invoke("linearize", ROBOTS_DIR / "cartpole.urdf", "--input", "cart", "--dt", "0.01", "-o", lin_path)
    assert r.exit_code == 0, r.stderr
    lin = json.loads(lin_path.read_text())
    assert lin["state"] == ["q.cart", "q.pole", "qd.cart", "qd.pole"] and lin["input"] == ["cart"]
    A, B = np.array(lin["A"]), np.array(lin["B"])
    P = sl.solve_discrete_are(A, B, np.eye(len(A)), np.eye(B.shape[1]))
    K = np.linalg.solve(B.T @ P @ B + np.eye(B.shape[1]), B.T @ P @ A)
    assert np.abs(np.linalg.eigvals(A)).max() > 1.03  # upright is unstable (1.042 per step) ...
    assert np.abs(np.linalg.eigvals(A - B @ K)).max() < 0.995  # ... and the gain stabilises dyn's step
    (tmp_path / "scenarios").mkdir()
    gain = tmp_path / "scenarios" / "cartpole_gain.csv"
    dynlib.write_gain(gain, K, lin["input"], lin["state"])
    inputs, K_sample = dynlib.read_gain(SCENARIOS_DIR / "cartpole_gain.csv", dynlib.load(ROBOTS_DIR / "cartpole.urdf"))
    assert inputs == ("cart",) and np.allclose(K_sample, K, rtol=1e-9, atol=1e-12)
    shutil.copy(SCENARIOS_DIR / "cartpole_balance.yaml", tmp_path / "scenarios")
    shutil.copytree(ROBOTS_DIR, tmp_path / "robots")
    out = tmp_path / "balance.csv"
    r = invoke("simulate", tmp_path / "scenarios" / "cartpole_balance.yaml", "-o", out)
    assert r.exit_code == 0, r.stderr
    traj = dynlib.read_trajectory(out)
    t, pole, cart = traj.column("time"), traj.column("q.pole"), traj.column("q.cart")
    assert pole[0] == 0.1 and np.abs(pole[t >= 2.5]).max() < 0.05  # balanced (0.004 rad)
    assert np.abs(cart).max() < 1.0 and np.abs(traj.column("tau.cart")).max() < 20.0  # no limit reached
    assert np.all(traj.column("tau.pole") == 0.0)  # the pole has no motor


def test_the_readme_shows_the_balancing_scenario_as_it_is():
    readme = (ROBOTS_DIR.parent / "README.md").read_text(encoding="utf-8")
    shown = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    sample = (SCENARIOS_DIR / "cartpole_balance.yaml").read_text(encoding="utf-8")
    assert shown == "".join(ln + "\n" for ln in sample.splitlines() if not ln.startswith("#"))
