"""dynlib.motion.derivatives: velocities and accelerations estimated from sampled configurations.

Against motions with exact derivatives (`smooth_motion`, also used by test_inverse.py):
polynomial exactness, second-order convergence on non-uniform grids, the free-flyer
on SE(3) (large rotations, quaternion sign flips), Savitzky–Golay's chart kernel
against scipy's filter, continuous-joint unwrapping, and the argument errors.
"""
import numpy as np
import pytest
from scipy.signal import savgol_filter
from scipy.spatial.transform import Rotation

from dynlib.motion import derivatives as D
from dynlib.errors import InputError
from dynlib.core.joints import FREEFLYER, PLANAR
from helpers import assert_close, sample


def _rot(axis, angle):
    """(K, 3, 3) rotations about a fixed unit axis by K angles."""
    return Rotation.from_rotvec(np.outer(angle, axis)).as_matrix()


def smooth_motion(model, t, seed=0, amplitude=0.6, spin=1.0):
    """(Q, V, A): a smooth motion of `model` at times t with its exact derivatives.

    Joint coordinates: c + A sin(ωt + φ). Free-flyer: p(t) = p0 + B sin(Ωt + ψ) and
    R(t) = R0 exp(α(t) n1) exp(β(t) n2) with α, β sinusoids of amplitude `spin`·(2, 1.5)
    rad (rotations far beyond small angles), so that the body twist is
    ω = α̇ R2ᵀ n1 + β̇ n2, v = Rᵀ ṗ, and its derivative ω̇ = α̈ R2ᵀ n1 − α̇ β̇ n2 × R2ᵀ n1 + β̈ n2,
    v̇ = Rᵀ p̈ − ω × v.
    """
    rng = np.random.default_rng(seed)
    t = np.asarray(t, dtype=float)[:, None]
    n = t.shape[0]
    Q = np.zeros((n, model.nq))
    V = np.zeros((n, model.nv))
    A = np.zeros((n, model.nv))
    ar = model.arrays
    for i in range(model.nb):
        iq, iv, jt = ar.idx_q[i], ar.idx_v[i], ar.jtype[i]
        if jt == FREEFLYER:
            B, Om, ps = rng.uniform(0.1, 0.3, 3), rng.uniform(1, 3, 3), rng.uniform(0, 6, 3)
            p = rng.uniform(-1, 1, 3) + B * np.sin(Om * t + ps)
            pd = B * Om * np.cos(Om * t + ps)
            pdd = -B * Om ** 2 * np.sin(Om * t + ps)
            n1, n2 = (x / np.linalg.norm(x) for x in rng.normal(size=(2, 3)))
            wa, wb, fa, fb = rng.uniform(1, 2), rng.uniform(1, 2), rng.uniform(0, 6), rng.uniform(0, 6)
            al, ald, aldd = (2 * spin * f for f in (np.sin(wa * t[:, 0] + fa), wa * np.cos(wa * t[:, 0] + fa),
                                                      -wa ** 2 * np.sin(wa * t[:, 0] + fa)))
            be, bed, bedd = (1.5 * spin * f for f in (np.sin(wb * t[:, 0] + fb), wb * np.cos(wb * t[:, 0] + fb),
                                                        -wb ** 2 * np.sin(wb * t[:, 0] + fb)))
            R0 = Rotation.random(random_state=seed).as_matrix()
            R2 = _rot(n2, be)
            R = R0 @ _rot(n1, al) @ R2
            m = np.einsum("kji,j->ki", R2, n1)  # R2ᵀ n1
            w = ald[:, None] * m + bed[:, None] * n2
            wd = aldd[:, None] * m - (ald * bed)[:, None] * np.cross(n2, m) + bedd[:, None] * n2
            v = np.einsum("kji,kj->ki", R, pd)
            vd = np.einsum("kji,kj->ki", R, pdd) - np.cross(w, v)
            Q[:, iq:iq + 3] = p
            Q[:, iq + 3:iq + 7] = Rotation.from_matrix(R).as_quat()  # x y z w
            V[:, iv:iv + 6] = np.hstack([v, w])
            A[:, iv:iv + 6] = np.hstack([vd, wd])
        elif jt == PLANAR:  # x, y in the plane and θ; body-frame (vx, vy, ω)
            c, amp, om, ph = rng.uniform(-0.3, 0.3, 3), rng.uniform(0.1, 0.5, 3), rng.uniform(1, 3, 3), rng.uniform(0, 6, 3)
            x = c + amp * np.sin(om * t + ph)
            xd = amp * om * np.cos(om * t + ph)
            xdd = -amp * om ** 2 * np.sin(om * t + ph)
            th, thd, thdd = x[:, 2], xd[:, 2], xdd[:, 2]
            ct, st = np.cos(th), np.sin(th)
            vx, vy = ct * xd[:, 0] + st * xd[:, 1], -st * xd[:, 0] + ct * xd[:, 1]
            ax = ct * xdd[:, 0] + st * xdd[:, 1] + thd * vy
            ay = -st * xdd[:, 0] + ct * xdd[:, 1] - thd * vx
            Q[:, iq:iq + 3] = x
            V[:, iv:iv + 3] = np.column_stack([vx, vy, thd])
            A[:, iv:iv + 3] = np.column_stack([ax, ay, thdd])
        else:
            c, om, ph = rng.uniform(-0.5, 0.5), rng.uniform(1, 4), rng.uniform(0, 6)
            amp = amplitude * (0.1 if jt == 1 else 1.0)  # prismatic: decimetres
            Q[:, iq] = c + amp * np.sin(om * t[:, 0] + ph)
            V[:, iv] = amp * om * np.cos(om * t[:, 0] + ph)
            A[:, iv] = -amp * om ** 2 * np.sin(om * t[:, 0] + ph)
    return Q, V, A


def jittered_times(n, dt, jitter, seed=0):
    """n increasing times with steps dt·(1 ± jitter), a smooth pattern (so that it refines)."""
    s = np.arange(n - 1)
    steps = dt * (1 + jitter * np.sin(0.37 * s + seed) * np.cos(0.11 * s))
    return np.concatenate([[0.0], np.cumsum(steps)])


def inner(x, k):
    return x[k:-k]


FF = sample("quadruped", True)
ARM = sample("arm6")


def test_central_is_exact_for_quadratics_on_a_non_uniform_grid():
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.uniform(0.5e-3, 2e-3, 50))
    c0, c1, c2 = rng.normal(size=(3, ARM.nq))
    Q = c0 + c1 * t[:, None] + c2 * t[:, None] ** 2
    V, A = D.central(ARM, t, Q)
    assert_close(V, c1 + 2 * c2 * t[:, None], 1e-9, "central v exact on quadratics")
    assert_close(A, np.broadcast_to(2 * c2, A.shape), 1e-6, "central a exact on quadratics")


@pytest.mark.parametrize("model", [ARM, FF, sample("planar3")], ids=["arm6", "quadruped-floating", "planar3"])
def test_central_velocity_converges_at_second_order_on_non_uniform_steps(model):
    errs = []
    for dt in (4e-3, 2e-3):
        t = jittered_times(int(1.0 / dt), dt, 0.3)
        Q, V, A = smooth_motion(model, t)
        Ve, Ae = D.central(model, t, Q)
        errs.append((np.abs(Ve - V)[1:-1].max(), np.abs(inner(Ae - A, 1)).max()))
    (v1, a1), (v2, a2) = errs
    assert v1 / v2 > 3.5, f"velocity error {v1:.2e} -> {v2:.2e} when halving the step"
    assert a1 / a2 > 1.8, f"acceleration error {a1:.2e} -> {a2:.2e} when halving the step"


def test_central_on_the_free_flyer_matches_the_body_twist_through_large_rotations():
    t = np.arange(3001) * 1e-3
    Q, V, A = smooth_motion(FF, t, spin=2.0)  # α up to 4 rad: rotations well past π
    Ve, Ae = D.central(FF, t, Q)
    assert_close(inner(Ve, 1), inner(V, 1), 1e-5, "central free-flyer v")
    assert_close(inner(Ae, 1), inner(A, 1), 1e-4, "central free-flyer a")


def test_quaternion_sign_flips_change_nothing():
    t = np.arange(400) * 1e-3
    Q, _, _ = smooth_motion(FF, t, spin=2.0)
    flipped = Q.copy()
    flipped[::3, 3:7] *= -1  # q and -q are the same rotation
    for method in ("central", "savgol"):
        assert_close(np.hstack(D.estimate(FF, t, flipped, method)), np.hstack(D.estimate(FF, t, Q, method)),
                     1e-9, f"{method}: quaternion sign")


@pytest.mark.parametrize("model", [ARM, FF], ids=["arm6", "quadruped-floating"])
def test_savgol_is_exact_for_polynomials_up_to_its_order(model):
    """Joint angles cubic in t, and a free-flyer rotating about a fixed axis by a cubic angle
    (its chart coordinates are then cubic too), translating along a cubic: exact at every row."""
    rng = np.random.default_rng(2)
    t = np.arange(300) * 2e-3
    c = rng.normal(size=(4, model.nv))
    X = c[0] + c[1] * t[:, None] + c[2] * t[:, None] ** 2 + c[3] * t[:, None] ** 3
    Xd = c[1] + 2 * c[2] * t[:, None] + 3 * c[3] * t[:, None] ** 2
    Xdd = 2 * c[2] + 6 * c[3] * t[:, None]
    if not model.has_floating_base:
        Q, V, A = X, Xd, Xdd
    else:  # p = X[:, :3] in the world, R = exp(θ n) about a world-fixed axis n with θ = X[:, 3]
        n = np.array([0.6, 0.0, 0.8])
        th, thd, thdd = X[:, 3], Xd[:, 3], Xdd[:, 3]
        R = _rot(n, th)
        Q = np.hstack([X[:, :3], Rotation.from_matrix(R).as_quat(), X[:, 6:]])
        w = thd[:, None] * n
        v = np.einsum("kji,kj->ki", R, Xd[:, :3])
        vd = np.einsum("kji,kj->ki", R, Xdd[:, :3]) - np.cross(w, v)
        V = np.hstack([v, w, Xd[:, 6:]])
        A = np.hstack([vd, thdd[:, None] * n, Xdd[:, 6:]])
    Ve, Ae = D.savgol(model, t, Q, window=0.05, polyorder=3)
    if model.has_floating_base:
        # exact for the rotation (chart coordinates cubic); the translation's chart
        # coordinates are Rᵀ(p_j − p_k)-like, not polynomial: check it to filter accuracy
        assert_close(Ve[:, 3:6], V[:, 3:6], 1e-9, "savgol exact: free-flyer rotation")
        assert_close(Ae[:, 3:6], A[:, 3:6], 1e-7, "savgol exact: free-flyer rotation a")
        assert_close(Ve[:, :3], V[:, :3], 1e-4, "savgol free-flyer translation v")
        Ve, Ae, V, A = Ve[:, 6:], Ae[:, 6:], V[:, 6:], A[:, 6:]
    assert_close(Ve, V, 1e-9, "savgol exact on cubics: v")
    assert_close(Ae, A, 1e-7, "savgol exact on cubics: a")


@pytest.mark.parametrize("L, order, dt", [(5, 2, 0.01), (31, 5, 1e-2), (101, 4, 1e-3), (1001, 6, 1e-4)])
def test_savgol_weights_differentiate_polynomials_exactly_even_for_wide_windows(L, order, dt):
    """Every row p of the weights gives the derivatives at sample p of any polynomial of the
    order. (scipy's savgol_coeffs, unscaled, is off by 8e-9 at L = 101 and by 100 % at 1001.)"""
    rng = np.random.default_rng(L)
    t = np.arange(L) * dt
    c = rng.standard_normal(order + 1) / (L * dt) ** np.arange(order + 1)  # values of order 1 over the window
    P = np.polynomial.polynomial
    y, d1, d2 = P.polyval(t, c), P.polyval(t, P.polyder(c)), P.polyval(t, P.polyder(c, 2))
    W1, W2 = D.savgol_weights(L, order, dt)
    assert np.max(np.abs(W1 @ y - d1)) <= 1e-12 * np.max(np.abs(d1))
    assert np.max(np.abs(W2 @ y - d2)) <= 1e-12 * np.max(np.abs(d2))


def test_savgol_chart_kernel_is_scipys_filter_where_the_chart_is_flat():
    """A free-flyer that only translates (constant identity orientation): its chart coordinates
    are p_j − p_k, so the kernel must give what scipy's filter gives on x, y, z,
    ends (mode='interp') included (to scipy's own accuracy, see the test above)."""
    t = np.arange(500) * 1e-3
    Q, _, _ = smooth_motion(FF, t)
    Q[:, 3:7] = [0, 0, 0, 1]
    rng = np.random.default_rng(3)
    Q[:, :3] += rng.normal(scale=1e-3, size=(len(t), 3))
    V, A = D.savgol(FF, t, Q, window=0.08, polyorder=4)
    L = D.savgol_length(0.08, 1e-3)
    for deriv, out in ((1, V), (2, A)):
        ref = savgol_filter(Q[:, :3], L, 4, deriv=deriv, delta=1e-3, axis=0, mode="interp")
        # the same weights summed in another order: round-off of eps·|q|·Σ|w|, Σ|w| ~ 1/dt² for a
        assert_close(out[:, :3], ref, 1e-8, f"savgol kernel = scipy, deriv {deriv}")
        assert np.all(out[:, 3:6] == 0)


def test_continuous_joints_are_unwrapped():
    arm7 = sample("arm7")
    k = arm7.joint_types.index("continuous")
    t = np.arange(1000) * 1e-3
    Q, _, _ = smooth_motion(arm7, t)
    Q[:, k] = 3.0 + 2.0 * t  # crosses π
    wrapped = Q.copy()
    wrapped[:, k] = (Q[:, k] + np.pi) % (2 * np.pi) - np.pi
    assert np.abs(np.diff(wrapped[:, k])).max() > 6
    for method in ("central", "savgol"):
        V, A = D.estimate(arm7, t, wrapped, method)
        assert_close(V[:, k], np.full(len(t), 2.0), 1e-8, f"{method}: unwrapped continuous joint")


def test_noise_savgol_beats_central_by_more_than_ten_times():
    t = np.arange(2001) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    noisy = Q + np.random.default_rng(4).normal(scale=1e-4, size=Q.shape)
    errs = {m: np.sqrt(np.mean(inner(D.estimate(ARM, t, noisy, m)[1] - A, 50) ** 2)) for m in ("central", "savgol")}
    assert errs["savgol"] * 10 < errs["central"], errs


@pytest.mark.parametrize("kwargs, message", [
    (dict(window=0.1, polyorder=1), "polyorder must be at least 2"),
    (dict(window=0.002, polyorder=4), "holds 3 samples .* too few for polyorder 4"),
    (dict(window=5.0, polyorder=4), "spans 5001 samples, but the trajectory has 200"),
    (dict(window=-1.0, polyorder=4), "positive number of seconds"),
])
def test_savgol_argument_errors(kwargs, message):
    t = np.arange(200) * 1e-3
    Q, _, _ = smooth_motion(ARM, t)
    with pytest.raises(InputError, match=message):
        D.savgol(ARM, t, Q, **kwargs)


def test_savgol_needs_uniform_sampling_and_names_the_sample():
    t = np.arange(200) * 1e-3
    t[120:] += 0.5e-3
    Q, _, _ = smooth_motion(ARM, t)
    with pytest.raises(InputError, match="needs uniform sampling") as exc:
        D.savgol(ARM, t, Q)
    assert exc.value.row == 120
    D.central(ARM, t, Q)  # central takes it


def test_estimation_needs_increasing_time_and_enough_samples():
    t = np.arange(20) * 1e-3
    t[7] = t[6]
    Q, _, _ = smooth_motion(ARM, np.arange(20) * 1e-3)
    for method in ("central", "savgol"):
        with pytest.raises(InputError, match="does not increase") as exc:
            D.estimate(ARM, t, Q, method, window=0.01)
        assert exc.value.row == 7
    with pytest.raises(InputError, match="at least 3 samples"):
        D.central(ARM, t[:2], Q[:2])
    with pytest.raises(InputError, match=r"shape \(N, 6\)"):
        D.central(ARM, t, Q[:, :5])
    with pytest.raises(InputError, match="'central' or 'savgol'"):
        D.estimate(ARM, t, Q, "spline")

