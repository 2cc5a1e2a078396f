"""Bilateral contact (dynlib.sim.contact.bilateral): points held in place.

The constrained acceleration equals a dense KKT solve built from the public
kernels (CRBA, nonlinear effects, frame Jacobians and J̇v); welded feet drift
less than 1e-4 m over seconds, and their forces pull when the trunk is pulled up;
standing under PD the feet carry m g.
"""
import functools

import numpy as np
import pytest

import dynlib
from dynlib.runs.scenario import load_scenario, run
from dynlib.sim.simulate import simulate as _simulate

from helpers import ROBOTS_DIR

# the KKT solve at random states, some past the quadruped's joint limits: without the limits
simulate = functools.partial(_simulate, limits=False)

SCENARIOS = ROBOTS_DIR.parent / "scenarios"
FEET = ("lf_foot", "lh_foot", "rf_foot", "rh_foot")
OFFSET = np.array([0.0, 0.0, -0.02])
MG = 12.0 * 9.81


def quad():
    return dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True)


def feet_positions(model, Q):
    """(N, 4, 3) world positions of the feet's lowest points, from frame placements."""
    out = []
    for f in FEET:
        T = dynlib.frame_placement(model, Q, f)
        out.append(T[:, :3, 3] + T[:, :3, :3] @ OFFSET)
    return np.stack(out, axis=1)


def test_constrained_acceleration_equals_a_dense_kkt_solve():
    model = quad()
    rng = np.random.default_rng(3)
    q = model.q_neutral.copy()
    q[2] = 0.36
    q[7:] = rng.uniform(-0.5, 0.5, 12)
    axis = rng.normal(size=3)
    q[3:7] = np.r_[np.sin(0.1) * axis / np.linalg.norm(axis), np.cos(0.1)]
    v = rng.normal(size=model.nv)
    kp, kd = 1.0e4, 200.0
    r = simulate(model, q, v, dt=1e-3, steps=1, contacts={"model": "bilateral", "points": [
        {"frame": f, "offset": tuple(OFFSET)} for f in FEET], "baumgarte_kp": kp, "baumgarte_kd": kd})
    M = dynlib.crba(model, q)
    h = dynlib.nonlinear_effects(model, q, v)
    rows, gam = [], []
    for f in FEET:
        T = dynlib.frame_placement(model, q, f)
        rw = T[:3, :3] @ OFFSET
        J = dynlib.frame_jacobian(model, q, f, "local_world_aligned")
        Jp = J[:3] - np.cross(rw, J[3:].T).T  # velocity of the point: v_f + w x r
        w = J[3:] @ v
        af = dynlib.frame_jacobian_dot_times_v(model, q, v, f, "local_world_aligned")
        bias = af[:3] + np.cross(af[3:], rw) + np.cross(w, np.cross(w, rw))
        rows.append(Jp)
        gam.append(-bias - kd * (Jp @ v))  # at t = 0 the points are on their targets
    Jc, gam = np.vstack(rows), np.concatenate(gam)
    n, m = model.nv, Jc.shape[0]
    K = np.block([[M, Jc.T], [Jc, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.r_[-h, gam])
    assert np.allclose(r.a[0], sol[:n], rtol=1e-8, atol=1e-8 * np.abs(sol[:n]).max())
    assert np.allclose(r.contact_force[0].reshape(-1), -sol[n:], rtol=1e-7, atol=1e-7 * np.abs(sol[n:]).max())


def test_welded_feet_do_not_drift_and_pull_when_the_trunk_is_pulled_up():
    sc = load_scenario(SCENARIOS / "contact_bilateral_welded.yaml")
    r = run(sc)
    assert r.diverged is None
    X = feet_positions(sc.model, r.q)
    assert np.abs(X - X[0]).max() < 1e-4  # over 3 s, through a 250 N pull
    i = np.searchsorted(r.time, 1.9)
    fz = r.contact_force[i, :, 2]
    assert np.all(fz < 0)  # the feet hold the trunk down
    assert fz.sum() == pytest.approx(MG - 250.0, rel=0.02)
    assert r.contact_force[-1, :, 2].sum() == pytest.approx(MG, rel=0.01)


def test_standing_on_welded_feet_carries_the_weight():
    r = run(load_scenario(SCENARIOS / "contact_bilateral_standing.yaml"))
    assert r.contact_force[-1, :, 2].sum() == pytest.approx(MG, rel=0.01)
    assert np.abs(r.v[-1, :6]).max() < 1e-6
    names, data = r.table(("q", "contact"))
    assert data[-1, names.index("contact.rh_foot.fz")] == r.contact_force[-1, 3, 2]
