"""dynlib.motion.contact_id: joint torques and contact wrenches of floating-base motions.

Round trips: the floating-base sample robots (and solo12 of example-robot-data) are
simulated here with bilateral contacts (`simulate_bilateral`: constrained forward
dynamics with Baumgarte stabilisation, the contact wrenches known), and the motion
is fed back: one contact gives back the simulated wrench and torques exactly;
several contacts give back the total wrench (the split is not unique), exact
torques when the simulated wrenches are passed as guesses, and a zero root residual.
Each mode is checked against its defining optimality (KKT) conditions; over time,
the root equations hold at every frame and smoothing never increases the wrenches'
variation. Pinocchio is the oracle for one single-contact wrench.

Run as a script (`python tests/motion/test_contact_inverse.py`) to rewrite the sample
motions scenarios/contact_id_quadruped*.csv that the README walks through.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dynlib
from dynlib.motion import derivatives
from dynlib.files.columns import WRENCH, tau_columns
from dynlib.motion import friction_cones as cones, wrench_distribution as distribution
from dynlib.motion import contact_id as ci
from dynlib.errors import InputError
from dynlib.files.trajectory import read_trajectory, write_trajectory
from helpers import assert_close, sample

TOL = 1e-9
FEET4 = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")
FEET2 = ("left_foot", "right_foot")
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


# ----------------------------------------------------------------------------- simulation

def _vee_skew(R):
    return 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])


def simulate_bilateral(model, q0, frames, duration, dt, controller, *, point=False, windows=None,
                       kp=400.0, kd=40.0):
    """Semi-implicit Euler of `model` with bilateral contacts that hold `frames` in place.

    Each step solves M a + h = tau + Σ Jᵀw with J a + J̇v = −kp e − kd J v (e: the
    frame's drift from where it was when the contact started; J: the frame's
    local_world_aligned Jacobian, linear rows only when `point`), by the Schur
    complement with a pseudo-inverse (redundant contacts: the minimum-norm split).
    windows: {frame: [(start, stop), …]} when a contact is on (default: always); a contact
    that starts mid-motion takes an inelastic impulse. controller(t, q, v) -> joint
    torques (nv − 6,). Returns a dict of arrays: t, q, v, a (the exact acceleration of
    each row's state), tau (root entries zero), w (N, k, 6) and active (N, k).
    """
    windows = windows or {}
    rows = 3 if point else 6
    n = int(round(duration / dt)) + 1
    q, v = np.array(q0, dtype=float), np.zeros(model.nv)
    anchor = {}
    out = {k: [] for k in ("t", "q", "v", "a", "tau", "w", "active")}
    for step in range(n):
        t = step * dt
        on = [f for f in frames if f not in windows or any(lo <= t + 1e-12 <= hi for lo, hi in windows[f])]
        new = [f for f in on if f not in anchor]
        for f in list(anchor):
            if f not in on:
                del anchor[f]
        M = dynlib.crba(model, q)
        Minv = np.linalg.inv(M)
        J = [dynlib.frame_jacobian(model, q, f)[:rows] for f in on]
        if new and step > 0 and on:  # touchdown: an inelastic impulse on every active contact
            Jc = np.vstack(J)
            v = v - Minv @ Jc.T @ np.linalg.pinv(Jc @ Minv @ Jc.T) @ (Jc @ v)
        for f in new:
            anchor[f] = dynlib.frame_placement(model, q, f)
        tau = np.zeros(model.nv)
        tau[6:] = controller(t, q, v)
        a0 = Minv @ (tau - dynlib.nonlinear_effects(model, q, v))
        w = np.zeros((len(frames), 6))
        a = a0
        if on:
            Jc = np.vstack(J)
            rhs = []
            for f, Jf in zip(on, J):
                T = dynlib.frame_placement(model, q, f)
                e = np.r_[T[:3, 3] - anchor[f][:3, 3], _vee_skew(T[:3, :3] @ anchor[f][:3, :3].T)][:rows]
                jdv = dynlib.frame_jacobian_dot_times_v(model, q, v, f)[:rows]
                rhs.append(-kp * e - kd * (Jf @ v) - jdv)
            lam = np.linalg.pinv(Jc @ Minv @ Jc.T, rcond=1e-12) @ (np.concatenate(rhs) - Jc @ a0)
            a = a0 + Minv @ Jc.T @ lam
            for k, f in enumerate(on):
                w[frames.index(f), :rows] = lam[rows * k:rows * (k + 1)]
        for key, val in (("t", t), ("q", q), ("v", v), ("a", a), ("tau", tau), ("w", w),
                         ("active", [f in on for f in frames])):
            out[key].append(np.array(val, dtype=float) if key != "active" else np.array(val))
        v = v + dt * a
        q = dynlib.integrate(model, q, v * dt)
    return {k: np.array(x) for k, x in out.items()}


def pd(model, q_ref, wn=20.0, zeta=0.7, floor=0.1, hold=None):
    """Joint PD torques toward q_ref(t) (nq,) for a floating-base model, plus the static torques
    that hold q_ref(0) up on the point or full contacts `hold` = (frames, rows) (least-norm
    split, by lstsq). Each joint's gains are scaled by max(its diagonal of M, floor) (natural
    frequency wn rad/s, damping ratio zeta), so that the explicit integration stays stable on
    light distal links and the legs stay stiff enough to carry the body."""
    q0 = q_ref(0.0)
    inertia = np.maximum(np.diag(dynlib.crba(model, q0))[6:], floor)
    ff = np.zeros(model.nv - 6)
    if hold:
        frames, rows = hold
        g = dynlib.gravity_torques(model, q0)
        J = np.vstack([dynlib.frame_jacobian(model, q0, f)[:rows] for f in frames])
        ff = g[6:] - J[:, 6:].T @ np.linalg.lstsq(J[:, :6].T, g[:6], rcond=None)[0]

    def controller(t, q, v):
        return ff + inertia * (wn ** 2 * (q_ref(t)[7:] - q[7:]) - 2 * zeta * wn * v[6:])
    return controller


def posture(model, z, **joints):
    q = model.q_neutral.copy()
    q[2] = z
    for name, value in joints.items():
        q[model.q_names.index(name)] = value
    return q


def quadruped_stance():
    model = sample("quadruped", floating_base=True)
    legs = {f"{leg}_{j}": val for leg in ("lf", "lh", "rf", "rh") for j, val in (("hfe", 0.8), ("kfe", -1.6))}
    return model, posture(model, 0.368353, **legs)


def biped_stance():
    model = sample("biped", floating_base=True)
    legs = {f"{side}_{j}": val for side in ("left", "right")
            for j, val in (("hip_pitch", -0.4), ("knee", 0.8), ("ankle_pitch", -0.4))}
    return model, posture(model, 0.732636, **legs)


def sway(q0, model, amplitude, freq, names):
    """q_ref(t): q0 with the named joints swaying sinusoidally (different phases)."""
    idx = [model.q_names.index(n) for n in names]

    def q_ref(t):
        q = q0.copy()
        q[idx] += amplitude * np.sin(2 * np.pi * freq * t + np.arange(len(idx)))
        return q
    return q_ref


def total_wrench(model, q, w, frames):
    """Σ_c of each contact wrench moved to the world origin: (N, 6) (f, τ + p × f)."""
    out = np.zeros((len(q), 6))
    for c, f in enumerate(frames):
        p = np.array([dynlib.frame_placement(model, qq, f)[:3, 3] for qq in q])
        out[:, :3] += w[:, c, :3]
        out[:, 3:] += w[:, c, 3:] + np.cross(p, w[:, c, :3])
    return out


def cid(model, sim, frames, **kw):
    return ci.contact_inverse_dynamics(model, (sim["t"], sim["q"], sim["v"], sim["a"]), list(frames), **kw)


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def biped_one_foot():
    """The biped on its left foot (6D), the other leg and the hips swaying."""
    model, q0 = biped_stance()
    q_ref = sway(q0, model, 0.3, 1.3, ["right_hip_roll", "right_hip_pitch", "right_knee", "left_hip_pitch"])
    return model, simulate_bilateral(model, q0, ["left_foot"], 1.0, 2e-3, pd(model, q_ref, hold=(["left_foot"], 6)))


@pytest.fixture(scope="module")
def biped_two_feet():
    """The biped on both flat feet (two 6D contacts, redundant: J has rank 10 of 12)."""
    model, q0 = biped_stance()
    q_ref = sway(q0, model, 0.25, 1.0, ["left_hip_pitch", "left_knee", "right_hip_pitch", "right_knee"])
    return model, simulate_bilateral(model, q0, list(FEET2), 1.0, 2e-3, pd(model, q_ref, hold=(FEET2, 6)))


def _smoothstep(t, t0, t1):
    x = np.clip((t - t0) / (t1 - t0), 0.0, 1.0)
    return x * x * (3 - 2 * x)


def quadruped_motion(duration=2.5, dt=1e-3, lift=(1.0, 1.6), lean=(-0.05, -0.06)):
    """The quadruped on four point feet, swaying a little; it leans its trunk by `lean` (x, y)
    away from lf_foot in the half second before lift[0] (so that its centre of mass is inside
    the other three feet), lifts lf_foot from lift[0] to lift[1] (it comes down with a small
    touchdown impulse), and leans back in the half second after."""
    model, q0 = quadruped_stance()
    base = sway(q0, model, 0.05, 0.8, ["lf_hfe", "rf_hfe", "lh_hfe", "rh_hfe", "lf_haa", "rh_haa"])
    # joint offsets that move the trunk by `lean` with the feet in place (root at the identity)
    shift = np.zeros(model.nq)
    for f in FEET4:
        leg = f.split("_")[0]
        cols = [model.v_names.index(f"{leg}_{j}") for j in ("haa", "hfe", "kfe")]
        J = dynlib.frame_jacobian(model, q0, f)[:3, cols]
        shift[[c + 1 for c in cols]] = np.linalg.solve(J, -np.array([lean[0], lean[1], 0.0]))
    i_hfe, i_kfe = model.q_names.index("lf_hfe"), model.q_names.index("lf_kfe")

    def q_ref(t):
        q = base(t) + shift * (_smoothstep(t, lift[0] - 0.5, lift[0]) - _smoothstep(t, lift[1], lift[1] + 0.5))
        if lift[0] <= t <= lift[1]:
            s = np.sin(np.pi * (t - lift[0]) / (lift[1] - lift[0])) ** 2
            q[i_hfe] += 0.5 * s
            q[i_kfe] -= 0.8 * s
        return q
    windows = {"lf_foot": [(-1.0, lift[0] - dt / 2), (lift[1], np.inf)]}
    return model, simulate_bilateral(model, q0, list(FEET4), duration, dt, pd(model, q_ref, hold=(FEET4, 3)),
                                     point=True, windows=windows)


@pytest.fixture(scope="module")
def quadruped_lift():
    return quadruped_motion(dt=2e-3)


@pytest.fixture(scope="module")
def quadruped_four_feet():
    model, q0 = quadruped_stance()
    q_ref = sway(q0, model, 0.15, 0.8, ["lf_hfe", "rf_hfe", "lh_hfe", "rh_hfe", "lf_haa", "rh_haa"])
    return model, simulate_bilateral(model, q0, list(FEET4), 1.0, 2e-3, pd(model, q_ref, hold=(FEET4, 3)),
                                     point=True)


# ----------------------------------------------------------------------------- round trips

def test_one_contact_gives_back_the_simulated_wrench_and_torques(biped_one_foot):
    model, sim = biped_one_foot
    r = cid(model, sim, ["left_foot"])
    assert_close(r.wrenches[:, 0], sim["w"][:, 0], TOL, "one contact: wrench")
    assert_close(r.tau, sim["tau"], TOL, "one contact: torques")
    assert r.residual.max() <= 1e-9 * np.abs(sim["w"]).max()
    assert np.all(r.tau[:, :6] == 0)


def test_one_contact_wrench_does_not_depend_on_the_weights(biped_one_foot):
    model, sim = biped_one_foot
    ref = cid(model, sim, ["left_foot"])
    for kw in ({"weight": [1, 2, 3, 4, 5, 6]}, {"guesses": {"left_foot": [10, 0, 50, 1, 2, 3]}},
               {"over_time": True, "smoothing": 50.0}):
        assert_close(cid(model, sim, ["left_foot"], **kw).wrenches, ref.wrenches, TOL, "one contact: unique")


def test_two_feet_total_wrench_and_root_residual(biped_two_feet):
    model, sim = biped_two_feet
    r = cid(model, sim, FEET2)
    scale = np.abs(sim["w"]).max()
    assert r.residual.max() <= 1e-9 * scale
    assert_close(total_wrench(model, sim["q"], r.wrenches, FEET2), total_wrench(model, sim["q"], sim["w"], FEET2),
                 TOL, "two feet: total wrench")
    # the torques differ from the applied ones by exactly the joints' share of the split's difference
    J = np.stack([dynlib.frame_jacobian(model, sim["q"], f) for f in FEET2], axis=1)
    dtau = np.einsum("nkrv,nkr->nv", J, sim["w"] - r.wrenches)
    assert_close(r.tau, sim["tau"] + dtau, TOL, "two feet: torques up to the split")


def test_simulated_wrenches_as_guesses_come_back_unchanged(biped_two_feet, quadruped_four_feet):
    """Guesses that already satisfy the root equations are the answer; the torques are then exact."""
    for (model, sim), frames, point in ((biped_two_feet, FEET2, False), (quadruped_four_feet, FEET4, True)):
        guesses = {f: sim["w"][:, c] for c, f in enumerate(frames)}
        r = cid(model, sim, frames, guesses=guesses, point=point)
        assert_close(r.wrenches, sim["w"], TOL, "guesses unchanged")
        assert_close(r.tau, sim["tau"], TOL, "guesses: torques exact")


def test_quadruped_point_feet_total_force(quadruped_four_feet):
    model, sim = quadruped_four_feet
    r = cid(model, sim, FEET4, point=True)
    assert np.all(r.wrenches[:, :, 3:] == 0)
    assert r.residual.max() <= 1e-9 * np.abs(sim["w"]).max()
    assert_close(total_wrench(model, sim["q"], r.wrenches, FEET4), total_wrench(model, sim["q"], sim["w"], FEET4),
                 TOL, "quadruped: total wrench")
    # standing still-ish: the feet carry the weight
    fz = r.wrenches[:, :, 2].sum(axis=1)
    assert abs(fz.mean() - 12.0 * 9.81) < 0.05 * 12.0 * 9.81


def test_solo12_round_trip(erd_path):
    """example-robot-data's solo12 (URDF without a floating joint: root added), four point feet."""
    model = dynlib.load(erd_path("solo_description/robots/solo12.urdf"), floating_base=True)
    feet = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    q0 = model.q_neutral.copy()
    q0[2] = 0.3
    for leg in ("FL", "FR", "HL", "HR"):
        q0[model.q_names.index(f"{leg}_HFE")] = 0.8 if leg[0] == "F" else -0.8
        q0[model.q_names.index(f"{leg}_KFE")] = -1.6 if leg[0] == "F" else 1.6
    q_ref = sway(q0, model, 0.2, 1.5, ["FL_HFE", "HR_HFE", "FR_HAA"])
    sim = simulate_bilateral(model, q0, list(feet), 0.4, 2e-3, pd(model, q_ref, floor=0.01, hold=(feet, 3)),
                             point=True)
    r = cid(model, sim, feet, point=True, joint_friction=False)
    assert r.residual.max() <= 1e-9 * max(1.0, np.abs(sim["w"]).max())
    assert_close(total_wrench(model, sim["q"], r.wrenches, feet), total_wrench(model, sim["q"], sim["w"], feet),
                 TOL, "solo12: total wrench")
    g = cid(model, sim, feet, point=True, joint_friction=False,
            guesses={f: sim["w"][:, c] for c, f in enumerate(feet)})
    assert_close(g.tau, sim["tau"], TOL, "solo12: torques with the simulated wrenches as guesses")


def test_an_arm_held_at_its_base_is_the_fixed_base_inverse_dynamics():
    """arm6 with a free-flyer root, resting (root at rest at the identity) on one contact at
    base_link: its joint torques are those of the fixed-base arm, URDF joint friction
    included, and the contact wrench is what holds the whole arm (weight included) up."""
    fixed, floating = sample("arm6"), sample("arm6", floating_base=True)
    rng = np.random.default_rng(5)
    n = 8
    qj = np.array([dynlib.random_configuration(fixed, rng) for _ in range(n)])
    vj, aj = rng.uniform(-1, 1, (2, n, fixed.nv))
    q = np.hstack([np.tile([0, 0, 0, 0, 0, 0, 1.0], (n, 1)), qj])
    v, a = (np.hstack([np.zeros((n, 6)), x]) for x in (vj, aj))
    r = ci.contact_inverse_dynamics(floating, (None, q, v, a), ["base_link"])
    expected = dynlib.rnea(fixed, qj, vj, aj) + fixed.arrays.damping * vj + fixed.arrays.friction * np.tanh(vj / 1e-3)
    assert_close(r.tau[:, 6:], expected, TOL, "arm held at its base: torques")
    static = ci.contact_inverse_dynamics(floating, (None, q, 0 * v, 0 * a), ["base_link"])
    assert_close(static.wrenches[:, 0, 2], np.full(n, 9.81 * floating.total_mass), TOL, "arm at rest: weight")
    bare = ci.contact_inverse_dynamics(floating, (None, q, v, a), ["base_link"], joint_friction=False)
    assert_close(bare.tau[:, 6:], dynlib.rnea(fixed, qj, vj, aj), TOL, "arm: no joint friction")


@pytest.mark.oracle
def test_one_contact_wrench_against_pinocchio(erd_path):
    """talos_reduced on its left sole: w = J_root^-T (rnea root rows), all by Pinocchio."""
    pin = pytest.importorskip("pinocchio")
    from helpers import PinMap

    path = erd_path("talos_data/robots/talos_reduced.urdf")
    model = dynlib.load(path, floating_base=True)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    pd_ = pm.createData()
    maps = PinMap(model, pm)
    rng = np.random.default_rng(7)
    frame = "left_sole_link"
    for _ in range(3):
        q = dynlib.random_configuration(model, rng, scale=1.0)
        v, a = rng.uniform(-1, 1, (2, model.nv))
        r = ci.contact_inverse_dynamics(model, (None, q[None], v[None], a[None]), [frame], joint_friction=False)
        qp, vp, ap = maps.q(q), maps.v(v), maps.v(a)
        tau = pin.rnea(pm, pd_, qp, vp, ap)
        pin.computeJointJacobians(pm, pd_, qp)
        pin.updateFramePlacements(pm, pd_)
        J = pin.getFrameJacobian(pm, pd_, pm.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED)
        w = np.linalg.solve(J[:, :6].T, tau[:6])
        assert_close(r.wrenches[0, 0], w, 1e-9, "one contact vs Pinocchio")
        assert_close(r.tau[0, 6:], maps.v_back(tau - J.T @ w)[6:], 1e-9, "one contact torques vs Pinocchio")


# ----------------------------------------------------------------------------- optimality (KKT)

def _random_problem(seed, frames=FEET4, n=40, model=None):
    model = model or sample("quadruped", floating_base=True)
    rng = np.random.default_rng(seed)
    q = np.array([dynlib.random_configuration(model, rng, scale=1.0) for _ in range(n)])
    v, a = rng.uniform(-1, 1, (2, n, model.nv))
    return model, (np.arange(n) * 0.01, q, v, a), ci.root_problem(model, q, v, a, frames)


def _in_row_space(A, x):
    """max over rows of ‖x − Aᵀλ‖ / ‖x‖ for the best λ: x ∈ range(Aᵀ)."""
    worst = 0.0
    for At, xt in zip(A, x):
        lam = np.linalg.lstsq(At.T, xt, rcond=None)[0]
        worst = max(worst, np.linalg.norm(At.T @ lam - xt) / max(1.0, np.linalg.norm(xt)))
    return worst


@pytest.mark.parametrize("guessed", [False, True])
def test_per_frame_solution_satisfies_kkt(guessed):
    """A w = b and W(w − g) = Aᵀλ: the stationarity of min (w−g)ᵀW(w−g) s.t. A w = b."""
    model, motion, prob = _random_problem(1)
    rng = np.random.default_rng(2)
    guesses = {f: rng.uniform(-50, 50, 6) for f in FEET4[:3]} if guessed else None
    r = ci.contact_inverse_dynamics(model, motion, FEET4, guesses=guesses)
    w = r.wrenches.reshape(len(motion[0]), -1)
    g = np.zeros_like(w)
    if guessed:
        g[:, :18] = np.concatenate([guesses[f] for f in FEET4[:3]])
    W = np.tile(ci.GUESS_WEIGHT if guessed else ci.WEIGHT, 4)
    assert_close(np.einsum("nik,nk->ni", prob.A, w), prob.b[:, :6], 1e-11, "per frame: A w = b")
    assert _in_row_space(prob.A, W * (w - g)) < 1e-11


def test_per_frame_matches_the_closed_form_kkt_solve():
    """Against the KKT matrix [[2W, Aᵀ], [A, 0]] solved densely, frame by frame."""
    model, motion, prob = _random_problem(3, n=10)
    r = ci.contact_inverse_dynamics(model, motion, FEET4)
    W = np.diag(np.tile(ci.WEIGHT, 4))
    for t in range(10):
        A = prob.A[t]
        K = np.block([[2 * W, A.T], [A, np.zeros((6, 6))]])
        x = np.linalg.solve(K, np.r_[np.zeros(24), prob.b[t, :6]])
        assert_close(r.wrenches[t].ravel(), x[:24], 1e-10, "per frame vs dense KKT")


def test_point_contacts_that_cannot_explain_the_motion_leave_a_least_squares_residual():
    """One point foot cannot make a moment: the root equations hold in the least-squares
    sense (the residual is orthogonal to what the force can do)."""
    model, motion, prob = _random_problem(4, frames=("lf_foot",), n=20)
    r = ci.contact_inverse_dynamics(model, motion, ["lf_foot"], point=True)
    res = prob.b[:, :6] - np.einsum("nik,nk->ni", prob.A, r.wrenches.reshape(20, 6))
    assert np.all(r.residual > 1e-3)
    assert_close(r.residual, np.linalg.norm(res, axis=1), 1e-10, "residual reported")
    ortho = np.einsum("nik,ni->nk", prob.A[:, :, :3], res)
    assert np.abs(ortho).max() < 1e-9 * np.abs(prob.b[:, :6]).max()


# ----------------------------------------------------------------------------- over time

def _variation(w, squared=True):
    """Σ_t ‖w_t − w_t−1‖² (squared) or Σ_t ‖w_t − w_t−1‖ over all rows (inactive wrenches are zero)."""
    n = np.linalg.norm(np.diff(w, axis=0).reshape(len(w) - 1, -1), axis=1)
    return float(np.sum(n ** 2) if squared else np.sum(n))


def test_over_time_without_smoothing_is_the_per_frame_solution():
    model, motion, _ = _random_problem(5, n=30)
    a = ci.contact_inverse_dynamics(model, motion, FEET4)
    b = ci.contact_inverse_dynamics(model, motion, FEET4, over_time=True, smoothing=0.0, min_torque=3.0)
    assert_close(b.wrenches, a.wrenches, 1e-10, "over time, s = 0: per frame")


def test_over_time_satisfies_kkt():
    """μW(w − g) + s DᵀD w ∈ range(Aᵀ) frame by frame, and A w = b at every frame."""
    model, motion, prob = _random_problem(6, n=50)
    s, mu = 7.0, 2.0
    r = ci.contact_inverse_dynamics(model, motion, FEET4, over_time=True, smoothing=s, min_torque=mu)
    w = r.wrenches.reshape(50, -1)
    DtDw = np.zeros_like(w)
    d = np.diff(w, axis=0)
    DtDw[1:] += d
    DtDw[:-1] -= d
    grad = mu * np.tile(ci.WEIGHT, 4) * w + s * DtDw
    assert_close(np.einsum("nik,nk->ni", prob.A, w), prob.b[:, :6], 1e-11, "over time: A w = b")
    assert _in_row_space(prob.A, grad) < 1e-10


def _dense_over_time(A, b, weight, guess, mask, s, mu):
    """The over-time problem's KKT system [[μW + s DᵀD, Cᵀ], [C, 0]] built densely on the
    active entries (C, d: the reduced root equations) and solved by numpy."""
    n, K = mask.shape
    C, d, keep = distribution.reduced_constraints(A, b, np.broadcast_to(weight, mask.shape), mask)
    D = np.zeros(((n + 1) * K, n * K))                      # every entry's differences, zero outside
    for t in range(n + 1):
        if t < n:
            D[t * K:(t + 1) * K, t * K:(t + 1) * K] += np.eye(K)
        if t > 0:
            D[t * K:(t + 1) * K, (t - 1) * K:t * K] -= np.eye(K)
    D = D[K:-K]                                              # interior differences only
    H = mu * np.diag(np.tile(weight, n)) + s * D.T @ D
    Cb = np.zeros((6 * n, n * K))
    for t in range(n):
        Cb[6 * t:6 * t + 6, t * K:(t + 1) * K] = C[t]
    on, rows = mask.ravel(), keep.ravel()
    H, Cb = H[np.ix_(on, on)], Cb[np.ix_(rows, on)]
    kkt = np.block([[H, Cb.T], [Cb, np.zeros((len(Cb), len(Cb)))]])
    rhs = np.r_[mu * np.tile(weight, n)[on] * guess.ravel()[on], d.ravel()[rows]]
    w = np.zeros(n * K)
    w[on] = np.linalg.solve(kkt, rhs)[:on.sum()]
    return w.reshape(n, K)


@pytest.mark.parametrize("point", [False, True])
def test_over_time_block_elimination_equals_a_dense_kkt_solve(monkeypatch, point):
    """Contacts switching on and off, guesses, and chunks of 7 rows (the forward pass
    carried across chunk boundaries): the block tri-diagonal solve equals a dense solve."""
    model, motion, prob = _random_problem(9, n=40)
    monkeypatch.setattr(distribution, "CHUNK", 7)
    mask = np.ones((40, 4, 6), dtype=bool)
    if point:
        mask[:, :, 3:] = False
    mask[5:16, 0] = False
    mask[20:22, 3] = False
    mask[30:, 1] = False
    mask = mask.reshape(40, 24)
    weight = np.tile(ci.WEIGHT, 4)
    guess = np.random.default_rng(9).normal(size=(40, 24)) * 20
    for s, mu in ((0.0, 1.0), (3.0, 2.0), (500.0, 0.5)):
        w = distribution.solve_over_time(prob.A, prob.b[:, :6], weight, guess, mask, s, mu)
        ref = _dense_over_time(prob.A, prob.b[:, :6], weight, np.where(mask, guess, 0.0), mask, s, mu)
        assert_close(w, ref, 1e-9, f"over time, s = {s}, point = {point}: block elimination vs dense")
        assert np.all(w[~mask] == 0)


def test_over_time_keeps_the_root_equations_at_thousands_of_frames():
    model, motion, _ = _random_problem(7, n=3000)
    r = ci.contact_inverse_dynamics(model, motion, FEET4, over_time=True, smoothing=20.0)
    assert r.residual.max() < 1e-10 * np.abs(r.wrenches).max()


def test_smoothing_never_increases_the_variation(quadruped_lift):
    """The variation Σ‖w_t − w_t−1‖² (what --smoothing weighs; an inactive wrench is zero)
    never increases with the smoothing weight: each solution is the optimum of the
    trade-off, so s₁ V(w₁) + N(w₁) <= s₁ V(w₂) + N(w₂) and s₂ V(w₂) + N(w₂) <= s₂ V(w₁) + N(w₁)
    give (s₂ − s₁)(V(w₁) − V(w₂)) >= 0. The root equations hold throughout. (The sum of
    norms Σ‖w_t − w_t−1‖ carries no such guarantee: on this motion it rises from s = 0 to
    s = 0.1 before it falls.)"""
    model, sim = quadruped_lift
    variation, lf = [], []
    for s in (0.0, 0.1, 1.0, 10.0, 100.0, 1000.0):
        r = cid(model, sim, FEET4, point=True, over_time=True, smoothing=s, active={"lf_foot": sim["active"][:, 0]})
        assert r.residual.max() < 1e-9 * np.abs(r.wrenches).max()
        variation.append(_variation(r.wrenches))
        lf.append(r.wrenches[np.flatnonzero(~sim["active"][:, 0])[0] - 1, 0, 2])  # lf_foot's fz just before lift-off
    assert all(b <= a * (1 + 1e-12) for a, b in zip(variation, variation[1:])), variation
    assert variation[-1] < variation[0]
    assert lf[-1] < lf[0]  # the load leaves the lifting foot earlier


def test_windows_switch_contacts_and_inactive_wrenches_are_zero():
    model, motion, _ = _random_problem(8, n=60)
    t = motion[0]
    inf, C = np.inf, ci.ContactFrame
    contacts = [C("lf_foot", ((0, 0.2),)), C("lf_foot", ((0.4, inf),)), "rf_foot", C("lh_foot", ((-inf, 0.3),)),
                "rh_foot"]
    r = ci.contact_inverse_dynamics(model, motion, contacts, over_time=True, smoothing=5.0)
    lf = ((t >= 0) & (t <= 0.2)) | (t >= 0.4)
    assert np.array_equal(r.active[:, 0], lf) and np.array_equal(r.active[:, 2], t <= 0.3)
    assert np.all(r.wrenches[~r.active] == 0)
    assert r.residual.max() < 1e-9 * np.abs(r.wrenches).max()


# ----------------------------------------------------------------------------- contacts that come and go

def test_flight_rows_report_the_whole_root_wrench():
    model, motion, prob = _random_problem(9, n=20)
    active = {"lf_foot": (np.arange(20) % 3 != 0).astype(float)}
    for kw in ({}, {"over_time": True}):
        r = ci.contact_inverse_dynamics(model, motion, ["lf_foot"], active=active, **kw)
        flight = np.arange(20) % 3 == 0
        assert np.all(r.wrenches[flight] == 0)
        assert_close(r.residual[flight], np.linalg.norm(prob.b[flight, :6], axis=1), 1e-12, "flight residual")
        assert r.residual[~flight].max() < 1e-9 * np.abs(r.wrenches).max()
        assert_close(r.tau[:, 6:], prob.b[:, 6:] - np.einsum("nrv,nr->nv", prob.J[:, 0, :, 6:], r.wrenches[:, 0]),
                     1e-12, "torques follow")


def test_windows_and_active_columns_combine(tmp_path):
    model, motion, _ = _random_problem(10, n=10)
    t = motion[0]
    names = ["time"] + [f"q.{n}" for n in model.q_names] + [f"qd.{n}" for n in model.v_names] + \
        [f"qdd.{n}" for n in model.v_names] + ["active.rf_foot"]
    act = np.r_[np.ones(5), np.zeros(5)]
    data = np.column_stack([t, motion[1], motion[2], motion[3], act])
    path = tmp_path / "m.csv"
    write_trajectory(path, names, data)
    traj = read_trajectory(path)
    r = ci.contact_inverse_dynamics(model, traj, [ci.ContactFrame("lf_foot", ((0.02, 0.07),)), "rf_foot"])
    assert np.array_equal(r.active[:, 0], (t >= 0.02 - 1e-12) & (t <= 0.07 + 1e-12))
    assert np.array_equal(r.active[:, 1], act > 0)
    # without --contact: the frames of the active.* columns
    r2 = ci.contact_inverse_dynamics(model, traj, [])
    assert r2.frames == ("rf_foot",)


# ----------------------------------------------------------------------------- friction

def test_friction_solution_satisfies_kkt_and_the_cones():
    """Per frame: Clarabel's multipliers give P w + q + Eᵀz = 0 with z in the dual cones
    (SOC and R+ are self-dual) and complementarity zᵀs = 0; w is in the cones and A w = b."""
    model, motion, prob = _random_problem(11, n=40)
    mu = 0.6
    W = np.tile(ci.WEIGHT, 4)
    r = ci.contact_inverse_dynamics(model, motion, FEET4, friction=mu, point=True)
    w = r.wrenches.reshape(40, -1)
    assert np.all(cones.in_cones(r.wrenches, r.active, mu, tol=1e-7))
    mask = np.tile(np.r_[np.ones(3, bool), np.zeros(3, bool)], 4)
    checked = 0
    for t in np.flatnonzero(r.feasible):
        assert_close(prob.A[t] @ w[t], prob.b[t, :6], 1e-8, "friction: A w = b")
        C, d, keep = distribution.reduced_constraints(prob.A[t:t + 1], prob.b[t:t + 1, :6], W[None], mask[None])
        C = C[0][keep[0]][:, mask]
        wt, status, z = cones.friction_frame(prob.A[t], prob.b[t, :6], W, np.zeros(24), mask, mu)
        assert status == "Solved"
        assert_close(wt, w[t], 1e-7, "friction: same frame, same answer")
        nn, t1, t2 = cones.tangents((0, 0, 1))
        E = [C]
        for c in range(4):
            blk = np.zeros((4, 12))
            blk[:, 3 * c:3 * c + 3] = -np.array([nn, mu * nn, t1, t2]) / np.array([[1.0]] + [[max(1.0, mu)]] * 3)
            E.append(blk)
        E = np.vstack(E)
        x = wt[mask]
        stat = W[mask] * x + E.T @ z
        assert np.abs(stat).max() < 1e-6 * max(1.0, np.abs(W[mask] * x).max())
        s = -E[C.shape[0]:] @ x
        zc = z[C.shape[0]:].reshape(4, 4)
        assert np.all(zc[:, 0] >= -1e-9) and np.all(zc[:, 1] >= np.hypot(zc[:, 2], zc[:, 3]) - 1e-7)
        assert abs(zc.ravel() @ s) < 1e-6 * max(1.0, np.abs(x).max())
        checked += 1
    assert checked > 10


def test_friction_keeps_solutions_already_in_the_cones(quadruped_four_feet):
    model, sim = quadruped_four_feet
    free = cid(model, sim, FEET4, point=True)
    cone = cid(model, sim, FEET4, point=True, friction=1e3)
    assert np.array_equal(free.wrenches, cone.wrenches) and cone.feasible.all()


def test_friction_costs_at_least_as_much_and_pulls_forces_into_the_cones(quadruped_four_feet):
    model, sim = quadruped_four_feet
    free = cid(model, sim, FEET4, point=True)
    mu = 0.05
    cone = cid(model, sim, FEET4, point=True, friction=mu)
    W = np.tile(ci.WEIGHT, 4)
    cost = lambda r: np.einsum("nk,k,nk->n", r.wrenches.reshape(len(r.time), -1), W, r.wrenches.reshape(len(r.time), -1))  # noqa: E731
    assert np.all(cost(cone)[cone.feasible] >= cost(free)[cone.feasible] * (1 - 1e-9))
    assert np.all(cones.in_cones(cone.wrenches, cone.active, mu, tol=1e-7))
    assert cone.residual[cone.feasible].max() < 1e-7 * np.abs(cone.wrenches).max()


def test_infeasible_frames_are_reported_not_hidden():
    """Pulled down faster than gravity, the ground would have to pull: no normal force >= 0
    meets the root equations. Those rows are flagged, keep wrenches in the cones, and
    report the root residual."""
    model, q0 = biped_stance()
    n = 6
    q = np.tile(q0, (n, 1))
    v = np.zeros((n, model.nv))
    a = np.zeros((n, model.nv))
    a[:, 2] = np.linspace(-5.0, -20.0, n)  # root body-frame z (the root is level): 5 … 20 m/s² down
    r = ci.contact_inverse_dynamics(model, (np.arange(n) * 0.1, q, v, a), list(FEET2), friction=0.5)
    pulls = a[:, 2] < -9.81
    assert np.array_equal(~r.feasible, pulls)
    assert np.all(r.residual[pulls] > 1.0) and r.residual[~pulls].max() < 1e-7
    assert np.all(r.wrenches[pulls][:, :, 2] >= -1e-6)


# ----------------------------------------------------------------------------- derivatives from positions

def test_positions_only_central_and_savgol_recover_the_forces(quadruped_four_feet):
    """From q alone (the semi-implicit Euler makes the second difference of joint angles the
    recorded acceleration), both estimators recover the total wrench; with noise on q,
    Savitzky–Golay is far closer than central differences."""
    model, sim = quadruped_four_feet
    truth = total_wrench(model, sim["q"], sim["w"], FEET4)
    inner = slice(30, -30)
    for method in ("central", "savgol"):
        r = ci.contact_inverse_dynamics(model, derivatives.Motion(
            sim["t"], sim["q"], *derivatives.estimate(model, sim["t"], sim["q"], method, window=0.04),
            method), list(FEET4), point=True)
        err = np.abs(total_wrench(model, sim["q"], r.wrenches, FEET4) - truth)[inner].max()
        assert err < 0.05 * np.abs(truth).max(), (method, err)
    rng = np.random.default_rng(0)
    noisy = sim["q"] + rng.normal(0, 2e-5, sim["q"].shape)
    noisy[:, 3:7] /= np.linalg.norm(noisy[:, 3:7], axis=1, keepdims=True)
    errs = {}
    for method in ("central", "savgol"):
        v, a = derivatives.estimate(model, sim["t"], noisy, method, window=0.08)
        r = ci.contact_inverse_dynamics(model, (sim["t"], noisy, v, a), list(FEET4), point=True)
        errs[method] = np.sqrt(np.mean((total_wrench(model, noisy, r.wrenches, FEET4) - truth)[inner, 2] ** 2))
    assert errs["savgol"] < 0.1 * errs["central"], errs


# ----------------------------------------------------------------------------- arguments

@pytest.mark.parametrize("kw, match", [
    ({"over_time": True, "min_torque": 0.0}, "min_torque"),
    ({"over_time": True, "smoothing": -1.0}, "smoothing"),
    ({"friction": -0.1}, "friction"),
    ({"friction": 0.5, "over_time": True}, "over-time"),
    ({"guesses": {"rf_foot": [0, 0, 1]}}, "guess"),
    ({"guesses": {"trunk": [0] * 6}}, "not a contact"),
    ({"weight": [1, 1, 1, 1, 1, 0]}, "weight"),
])
def test_bad_arguments(kw, match):
    model, motion, _ = _random_problem(12, n=3)
    with pytest.raises(InputError, match=match):
        ci.contact_inverse_dynamics(model, motion, ["lf_foot", "rf_foot"], **kw)


def test_bad_contacts():
    model, motion, _ = _random_problem(12, n=3)
    with pytest.raises(InputError, match="did you mean 'lf_foot'"):
        ci.contact_inverse_dynamics(model, motion, ["lf_fot"])
    with pytest.raises(InputError, match="did you mean 'lf_foot'"):  # a frame name, not FRAME@START:STOP text
        ci.contact_inverse_dynamics(model, motion, ["lf_foot@0:1"])
    for window in ((2.0, 1.0), (0.0, float("nan")), (0.0,), "0:1"):
        with pytest.raises(InputError, match="time window"):
            ci.contact_inverse_dynamics(model, motion, [ci.ContactFrame("lf_foot", (window,))])
    with pytest.raises(InputError, match="no contact frames"):
        ci.contact_inverse_dynamics(model, motion, [])
    fixed = sample("quadruped")
    with pytest.raises(InputError, match="free-flyer"):
        ci.contact_inverse_dynamics(fixed, (None, motion[1][:, 7:], motion[2][:, 6:], motion[3][:, 6:]), ["lf_foot"])


def test_merging_contacts():
    """A frame named twice has the union of its windows; a mention without windows: always."""
    C = ci.ContactFrame
    merged = ci.merge_contacts([C("a", ((0, 1),)), "b", C("a", ((2, 3),)), C("b", ((0, 1),))], point={"b"})
    assert merged == [C("a", ((0.0, 1.0), (2.0, 3.0))), C("b", (), True)]
    assert ci.merge_contacts(["a", "b"], point=True) == [C("a", (), True), C("b", (), True)]
    assert ci.merge_contacts([C("a", ((0, 1),), point=True), C("a")]) == [C("a", (), True)]


# ----------------------------------------------------------------------------- sample motion

SAMPLE = SCENARIOS / "contact_id_quadruped.csv"
SAMPLE_NOISY = SCENARIOS / "contact_id_quadruped_noisy.csv"
SAMPLE_EVERY, SAMPLE_NOISE = 5, 1e-4  # rows: every 5th step of 1 ms (200 Hz); noise: σ in m and rad


def sample_tables(every=SAMPLE_EVERY, noise=SAMPLE_NOISE, seed=0):
    """The README's sample motions as (names, data) tables: the quadruped on four point feet,
    swaying, lf_foot off the ground from 1.0 s to 1.6 s (simulated at 1 kHz, kept at 200 Hz).

    - exact: time, q, qd, qdd, tau (applied), contact.<foot>.* (simulated), active.<foot>;
    - noisy: time, q (Gaussian noise of σ = `noise` on every coordinate, quaternion
      renormalised), active.<foot>: what a motion-capture recording gives.
    """
    model, sim = quadruped_motion()
    rows = slice(None, None, every)
    n = len(sim["t"][rows])
    active = sim["active"][rows].astype(float)
    q = sim["q"][rows]
    names = (["time"] + [f"q.{x}" for x in model.q_names] + [f"qd.{x}" for x in model.v_names]
             + [f"qdd.{x}" for x in model.v_names] + tau_columns(model)
             + [f"contact.{f}.{c}" for f in FEET4 for c in WRENCH] + [f"active.{f}" for f in FEET4])
    exact = np.column_stack([sim["t"][rows], q, sim["v"][rows], sim["a"][rows], sim["tau"][rows],
                             sim["w"][rows].reshape(n, -1), active])
    rng = np.random.default_rng(seed)
    noisy_q = q + rng.normal(0.0, noise, q.shape)
    noisy_q[:, 3:7] /= np.linalg.norm(noisy_q[:, 3:7], axis=1, keepdims=True)
    noisy_names = ["time"] + [f"q.{x}" for x in model.q_names] + [f"active.{f}" for f in FEET4]
    noisy = np.column_stack([sim["t"][rows], noisy_q, active])
    return (names, exact), (noisy_names, noisy)


def test_sample_motion_files_are_what_the_simulation_gives():
    """scenarios/contact_id_quadruped*.csv are this file's simulation (rerun the script to rewrite them)."""
    (names, exact), (noisy_names, noisy) = sample_tables()
    for path, ref_names, ref in ((SAMPLE, names, exact), (SAMPLE_NOISY, noisy_names, noisy)):
        traj = read_trajectory(path)
        assert traj.names == ref_names
        assert_close(traj.data, ref, 1e-7, f"sample file {path.name}")


def test_sample_motion_round_trip():
    """contact-id on the sample file gives back the simulated total wrench (exact
    derivatives); from the noisy positions, savgol gets close and central does not."""
    model = sample("quadruped", floating_base=True)
    traj = read_trajectory(SAMPLE)
    truth = traj.columns([f"contact.{f}.{c}" for f in FEET4 for c in WRENCH]).reshape(len(traj), 4, 6)
    q = traj.columns([f"q.{x}" for x in model.q_names])
    r = ci.contact_inverse_dynamics(model, traj, [], point=True)
    assert r.frames == FEET4 and np.array_equal(r.active, truth[:, :, 2] != 0)
    assert_close(total_wrench(model, q, r.wrenches, FEET4), total_wrench(model, q, truth, FEET4), 1e-9,
                 "sample: total wrench")
    noisy = read_trajectory(SAMPLE_NOISY)
    fz = truth[:, :, 2].sum(axis=1)
    rms = {}
    for method in ("central", "savgol"):
        est = ci.contact_inverse_dynamics(model, noisy, [], point=True, derivatives=method)
        rms[method] = np.sqrt(np.mean((est.wrenches[:, :, 2].sum(axis=1) - fz) ** 2))
    assert rms["savgol"] < 0.25 * rms["central"], rms


if __name__ == "__main__":
    (names, exact), (noisy_names, noisy) = sample_tables()
    write_trajectory(SAMPLE, names, exact)
    write_trajectory(SAMPLE_NOISY, noisy_names, noisy)
    print(f"wrote {SAMPLE} ({len(exact)} rows) and {SAMPLE_NOISY}")
