"""dynlib.sim.limits: a simulated motion checked against the URDF's position, velocity and effort limits,
one record per coordinate and kind, on tables built around arm6's limits (each count known by construction)
and on a real run through `dyn simulate` (one warning line per record)."""
import numpy as np

from dynlib.files.columns import tau_columns
from dynlib.files.trajectory import read_trajectory
from dynlib.sim.limits import EFFORT, POSITION, SATURATED, VELOCITY, beyond, excursions
from helpers import ROBOTS_DIR, invoke, sample

ARM = sample("arm6")


def test_beyond_counts_rows_first_time_and_extreme_per_column():
    t = np.array([0.0, 0.5, 1.0, 1.5])
    x = np.array([[0.0, 5.0], [2.5, 5.0], [-3.0, np.nan], [1.0, 9.0]])
    found = beyond(t, x, np.array([-2.0, -np.inf]), np.array([2.0, np.inf]))
    assert found == [(0, 2, 0.5, -3.0)]  # column 1 has no limit; NaN is not counted


def test_each_kind_is_one_record_per_coordinate():
    n = 5
    t = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    q, v, tau = np.zeros((n, ARM.nq)), np.zeros((n, ARM.nv)), np.zeros((n, ARM.nv))
    k = int(np.flatnonzero(np.isfinite(ARM.upper))[0])
    q[3:, k] = ARM.upper[k] + 0.1  # two rows past the upper limit, from t = 0.3
    tau[1, 2] = -1.5 * ARM.effort[2]
    v[4, 4] = 2 * ARM.velocity_limit[4]
    found = excursions(ARM, t, q, v, tau)
    assert [(e.kind, e.name, e.rows, e.first) for e in found] == [
        (POSITION, ARM.q_names[k], 2, 0.3), (EFFORT, ARM.v_names[2], 1, 0.1), (VELOCITY, ARM.v_names[4], 1, 0.4)]
    assert found[0].limit == (ARM.lower[k], ARM.upper[k]) and found[1].extreme == -1.5 * ARM.effort[2]
    assert "position limits" in found[0].message() and "switched off" in found[1].message()
    assert excursions(ARM, t, np.zeros_like(q), np.zeros_like(v), np.zeros_like(tau)) == []


def test_held_limits_report_saturation_and_only_excursions_past_the_slack():
    """A run that held its limits: a torque at its bound is one SATURATED record (first time), a position a little
    past a held limit (its compliance) is not reported, one farther past is, and no message says 'switched off'."""
    n = 5
    t = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    q, v, tau = np.zeros((n, ARM.nq)), np.zeros((n, ARM.nv)), np.zeros((n, ARM.nv))
    q[1:, 0] = ARM.upper[0] + 0.001  # within the slack
    q[3:, 2] = ARM.upper[2] + 0.05   # past it
    tau[2:, 1] = -ARM.effort[1]
    found = excursions(ARM, t, q, v, tau, {"position": True, "effort": True})
    assert [(e.kind, e.name, e.rows, e.first) for e in found] == [
        (POSITION, ARM.q_names[2], 2, 0.3), (SATURATED, ARM.v_names[1], 3, 0.2)]
    assert all(e.held and "switched off" not in e.message() for e in found)
    assert "saturated" in found[1].message()


def test_simulate_says_each_excursion_once(tmp_path):
    """arm6 driven at 200 N·m on shoulder_pan (limit 150): the saturation and the velocities it reaches are each
    one warning line, the ones `excursions` finds in the file written (which holds the applied torque)."""
    out = tmp_path / "run.csv"
    r = invoke("simulate", ROBOTS_DIR / "arm6.urdf", "--steps", "300", "--tau", "200,0,0,0,0,0",
               "--columns", "q,qd,tau", "-o", out)
    assert r.returncode == 0, r.stderr
    run = read_trajectory(out)
    found = excursions(ARM, run.time, run.columns([f"q.{n}" for n in ARM.q_names]),
                       run.columns([f"qd.{n}" for n in ARM.v_names]), run.columns(tau_columns(ARM)),
                       {"position": True, "effort": True})
    assert any(e.kind == SATURATED and e.name == "shoulder_pan" for e in found)
    assert np.max(np.abs(run.columns(["tau.shoulder_pan"]))) == ARM.effort[0]
    warned = [line for line in r.stderr.splitlines() if line.startswith("dyn: warning:")]
    assert warned == [f"dyn: warning: {e.message()}" for e in found]
