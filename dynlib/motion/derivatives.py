"""Velocities and accelerations of a sampled motion, estimated on the configuration manifold.

Given configurations ``q`` (N, nq) sampled at increasing times ``t`` (N,), estimate
``v`` (N, nv), the tangent velocity of `dynlib.difference` (q̇ for joint angles; the
body-frame twist for a free-flyer, as in Pinocchio), and ``a = dv/dt`` (N, nv).

Both estimators are a polynomial fit in the chart centred at each sample: the
neighbours q_j of sample k are expressed as ``x_j = difference(q_k, q_j)`` (so
x_k = 0), and ``v_k = Σ_j w1_kj x_j``, ``a_k = Σ_j w2_kj x_j`` with the weights of the
first and second derivative at t_k of the fitted polynomial. In that chart the
derivative at its centre *is* the tangent velocity, and the second derivative is
the derivative of the body twist (with M(t) = M_k exp(x(t)): V = J_r(x) ẋ and
V̇(t_k) = ẍ − ½ ad_ẋ ẋ = ẍ). Rotations of any size and quaternion sign flips are
therefore handled exactly; only the samples' spacing limits the accuracy.

- `central`: the three-point Lagrange stencil on the (possibly non-uniform) time
  grid, one-sided at the two ends. v is second order in the step; a is second
  order on uniform steps and first order in the change of step otherwise.
- `savgol`: Savitzky–Golay, the least-squares polynomial of order `polyorder` over
  a window of `window` seconds (L = 2·round(window / 2dt) + 1 samples), fitted over
  the first / last full window at the ends (scipy's ``mode='interp'``). It needs
  uniform sampling. The weights come from `savgol_weights` (better conditioned
  than scipy's), and every joint goes through the chart kernel below.

``continuous`` joints are unwrapped first: a step of more than π between two
samples is read as a wrap of 2π (a recording in [-π, π)), not as a motion.

Public: `central(model, t, q)`, `savgol(model, t, q, window, polyorder)`, `savgol_weights`,
`estimate(model, t, q, method, ...)`, each -> (v, a);
`motion_from_trajectory(model, traj, ...)` -> `Motion`, the q, v, a of a trajectory
file's rows (given or estimated, with `--columns`-style name templates,
`dynlib.files.column_map`), shared by the commands that read recorded motions
(`inverse`, `contact-id`). Configurations between samples are interpolated by
`dynlib.algorithms.configuration.interpolate`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._numba.decorators import allocating_kernel
from ..core import joints as J
from ..files.column_map import MOTION_PARTS, check_known_coordinates, check_quaternions, source_columns
from ..errors import InputError, TrajectoryError

METHODS = ("given", "central", "savgol")
UNIFORM_TOLERANCE = 1e-3  # savgol: largest |dt_k - mean dt| / mean dt taken as uniform sampling


# ------------------------------------------------------------------ the chart kernel

@allocating_kernel
def _chart_fit(jtype, idx_q, idx_v, nvj, Q, start, widx, W1, W2, V, A):
    """For the joints listed (jtype, idx_q, idx_v, nvj), add to V[k], A[k]
    Σ_j W[widx[k], j] · difference(Q[k], Q[start[k] + j]); O(N · L · n).

    An angle's or a displacement's difference is a subtraction, written out here
    (it is most of the work); free-flyer and planar joints use their own."""
    x = np.zeros(6)
    L = W1.shape[1]
    for i in range(jtype.shape[0]):
        iq, iv, t = idx_q[i], idx_v[i], jtype[i]
        for k in range(Q.shape[0]):
            w, s0 = widx[k], start[k]
            if t == J.FREEFLYER or t == J.PLANAR:
                for j in range(L):
                    if s0 + j == k:
                        continue  # the chart's centre: difference(q_k, q_k) = 0
                    J.difference_joint(t, Q[k], Q[s0 + j], iq, 0, x)
                    for r in range(nvj[i]):
                        V[k, iv + r] += W1[w, j] * x[r]
                        A[k, iv + r] += W2[w, j] * x[r]
            else:
                qk, s1, s2 = Q[k, iq], 0.0, 0.0
                for j in range(L):
                    dx = Q[s0 + j, iq] - qk
                    s1 += W1[w, j] * dx
                    s2 += W2[w, j] * dx
                V[k, iv] += s1
                A[k, iv] += s2


def _fit(model, Q, start, widx, W1, W2, V, A):
    """Run `_chart_fit` for every joint of `model`."""
    a = model.arrays
    _chart_fit(a.jtype, a.idx_q, a.idx_v, a.nvj, Q, start.astype(np.int64), widx.astype(np.int64),
               np.ascontiguousarray(W1), np.ascontiguousarray(W2), V, A)


# ------------------------------------------------------------------ checks

def _arguments(model, t, q, min_samples, what):
    """(t, Q) as float arrays after the boundary checks; Q with continuous joints unwrapped."""
    t = np.asarray(t, dtype=np.float64)
    Q = np.array(q, dtype=np.float64, ndmin=2)  # a copy: unwrapping writes into it
    if t.ndim != 1 or Q.ndim != 2 or Q.shape != (t.shape[0], model.nq):
        raise InputError(f"{what}: expected t of shape (N,) and q of shape (N, {model.nq}) "
                         f"for robot '{model.name}', got {t.shape} and {np.shape(q)}")
    n = t.shape[0]
    if n < min_samples:
        raise InputError(f"{what}: needs at least {min_samples} samples, got {n}")
    for name, arr in (("time", t), ("q", Q)):
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            raise InputError(f"{name} has a non-finite value", row=int(bad[0][0]))
    step = np.diff(t)
    if np.any(step <= 0):
        k = int(np.flatnonzero(step <= 0)[0]) + 1
        raise InputError(f"time {float(t[k])!r} does not increase (previous sample {float(t[k - 1])!r}); "
                         "estimating derivatives needs increasing time", row=k)
    for i, jt in enumerate(model.joint_types):
        if jt == "continuous":
            c = model.arrays.idx_q[i]
            Q[:, c] = np.unwrap(Q[:, c])
    return t, np.ascontiguousarray(Q)


# ------------------------------------------------------------------ estimators

def central(model, t, q):
    """(v, a) by three-point differences in the chart at each sample, one-sided at the ends.

    t (N,) increasing (steps may vary), q (N, nq), N >= 3. Returns v, a (N, nv).
    """
    t, Q = _arguments(model, t, q, 3, "central differences")
    n = t.shape[0]
    start = np.clip(np.arange(n) - 1, 0, n - 3)
    s = t[start[:, None] + np.arange(3)] - t[:, None]  # (N, 3) node offsets from t_k
    W1 = np.empty((n, 3))
    W2 = np.empty((n, 3))
    for j, (p, r) in enumerate(((1, 2), (0, 2), (0, 1))):
        den = (s[:, j] - s[:, p]) * (s[:, j] - s[:, r])  # Lagrange basis l_j(τ) = (τ-s_p)(τ-s_r)/den
        W1[:, j] = -(s[:, p] + s[:, r]) / den
        W2[:, j] = 2.0 / den
    V = np.zeros((n, model.nv))
    A = np.zeros((n, model.nv))
    _fit(model, Q, start, np.arange(n), W1, W2, V, A)
    return V, A


def savgol_length(window, dt):
    """The odd number of samples L = 2·round(window / 2dt) + 1 that a window of `window` s spans."""
    return 2 * int(round(window / (2.0 * dt))) + 1


def savgol(model, t, q, window=0.1, polyorder=4):
    """(v, a) by a Savitzky–Golay filter over `window` seconds with polynomials of order `polyorder`.

    t (N,) uniformly sampled (steps within 0.1 % of their mean), q (N, nq). The
    window must hold more samples than `polyorder` and at most N. Returns v, a (N, nv).
    """
    polyorder = int(polyorder)
    if polyorder < 2:
        raise InputError(f"Savitzky–Golay polyorder must be at least 2 to estimate accelerations, got {polyorder}")
    if not (np.isfinite(window) and window > 0):
        raise InputError(f"Savitzky–Golay window must be a positive number of seconds, got {window!r}")
    t, Q = _arguments(model, t, q, 2, "Savitzky–Golay")
    n = t.shape[0]
    dt = (t[-1] - t[0]) / (n - 1)
    off = np.abs(np.diff(t) - dt)
    if off.max() > UNIFORM_TOLERANCE * dt:
        k = int(off.argmax()) + 1
        step = np.diff(t)
        raise InputError(f"Savitzky–Golay needs uniform sampling: the time step here is {t[k] - t[k - 1]:.6g} s, "
                         f"the mean step {dt:.6g} s (more than {UNIFORM_TOLERANCE:.1%} apart; the steps range "
                         f"from {step.min():.6g} to {step.max():.6g} s, rms jitter {step.std():.3g} s = "
                         f"{step.std() / dt:.2%} of the step); resample the recording at a uniform rate "
                         f"(--resample HZ, e.g. --resample {_rate(dt)}), or use central differences", row=k)
    L = savgol_length(window, dt)
    if L <= polyorder:
        raise InputError(f"Savitzky–Golay window {window:g} s holds {L} samples at a step of {dt:.6g} s, "
                         f"too few for polyorder {polyorder}; widen the window or lower the order")
    if L > n:
        raise InputError(f"Savitzky–Golay window {window:g} s spans {L} samples, but the trajectory has "
                         f"{n}; shorten the window to at most {(n - 1 - (n % 2 == 0)) * dt:.6g} s")
    V = np.zeros((n, model.nv))
    A = np.zeros((n, model.nv))
    start = np.clip(np.arange(n) - L // 2, 0, n - L)
    W1, W2 = savgol_weights(L, polyorder, dt)
    _fit(model, Q, start, np.arange(n) - start, W1, W2, V, A)
    return V, A


def _rate(dt):
    """A round sampling rate (Hz) near 1/dt, as a resampling suggestion."""
    hz = 1.0 / dt
    digits = max(0, 2 - int(np.floor(np.log10(hz))))  # three significant digits
    return f"{round(hz, digits):g}"


def savgol_weights(L, polyorder, dt):
    """(W1, W2), each (L, L): row p holds the weights that give the first and second
    derivative at sample p of the least-squares polynomial of order `polyorder`
    through L samples dt apart.

    The samples' offsets are scaled to [-1, 1] before the fit (QR of the
    Vandermonde matrix): exact for polynomials to ~1e-14 also for wide windows,
    where unscaled offsets (scipy's savgol_coeffs) lose 8 digits at L = 101 and
    all of them at L = 1001, polyorder 6.
    """
    scale = max(L // 2, 1)
    offsets = np.arange(L, dtype=np.float64)
    W1, W2 = np.empty((L, L)), np.empty((L, L))
    for p in range(L):
        Qv, R = np.linalg.qr(np.vander((offsets - p) / scale, polyorder + 1, increasing=True))
        coef = np.linalg.solve(R, Qv.T)  # row i: the weights of the fit's coefficient of u^i
        W1[p] = coef[1] / (scale * dt)
        W2[p] = 2.0 * coef[2] / (scale * dt) ** 2
    return W1, W2


def estimate(model, t, q, method="central", *, window=0.1, polyorder=4):
    """(v, a) by `method`, 'central' or 'savgol' (see those functions)."""
    if method == "central":
        return central(model, t, q)
    if method == "savgol":
        return savgol(model, t, q, window, polyorder)
    raise InputError(f"derivative estimation method must be 'central' or 'savgol', got {method!r}")


# ------------------------------------------------------------------ a trajectory's motion

class Motion(NamedTuple):
    """The motion in a trajectory's rows: time (N,), q (N, nq), v and a (N, nv), and
    `derivatives`, how v and a were obtained ('given', 'central' or 'savgol')."""

    time: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    derivatives: str


def motion_from_trajectory(model, traj, *, derivatives="auto", window=0.1, polyorder=4, columns=None):
    """The q, v, a of every row of `traj` (a `dynlib.files.trajectory.Trajectory`).

    derivatives: 'given' (v, a from the qd.* and qdd.* columns), 'central', 'savgol'
    (estimated from q alone; see those functions), or 'auto': 'given' when every qd.*
    and qdd.* column is there, 'central' when none is. `columns`: a dict of name
    templates (see `source_columns`). Raises TrajectoryError naming the missing
    columns (and what was found), a column that names a coordinate the robot does
    not have, a non-finite value, non-increasing time or non-uniform sampling (with
    the row), and InputError for bad options.
    """
    from ..files.trajectory import check_increasing_time, require_columns

    if derivatives not in METHODS + ("auto",):
        raise InputError(f"derivatives must be one of auto, {', '.join(METHODS)}, got {derivatives!r}")
    columns = dict(columns or {})
    check_known_coordinates(model, traj, [p for p in MOTION_PARTS if p not in columns])
    qcols = source_columns(model, "q", columns)
    dcols = source_columns(model, "qd", columns) + source_columns(model, "qdd", columns)
    if derivatives == "auto":
        # given when every qd.* and qdd.* is there; estimated from q when no qdd.* is (a
        # recording's measured velocities, qd.* alone, are not enough: a needs them differentiated)
        present = [c for c in dcols if traj.has(c)]
        if not any(traj.has(c) for c in dcols[model.nv:]):
            present = []
        if present and len(present) < len(dcols):
            missing = [c for c in dcols if not traj.has(c)]
            raise TrajectoryError(f"has {len(present)} of the {len(dcols)} velocity and acceleration columns; "
                                  f"missing {', '.join(repr(c) for c in missing[:4])}"
                                  f"{f', … ({len(missing) - 4} more)' if len(missing) > 4 else ''}: give them all, "
                                  "or estimate them from q with --derivatives central or savgol", file=traj.path)
        derivatives = "given" if present else "central"
    given = derivatives == "given"
    require_columns(traj, qcols + (dcols if given else []))
    n = model.nv
    blocks = [(qcols, traj.finite_columns(qcols))]
    if given:
        blocks += [(dcols[:n], traj.finite_columns(dcols[:n])), (dcols[n:], traj.finite_columns(dcols[n:]))]
    Q = blocks[0][1]
    check_quaternions(model, traj, qcols, Q)
    t = traj.time
    if given:
        return Motion(t, Q, blocks[1][1], blocks[2][1], "given")
    check_increasing_time(traj)
    try:
        V, A = estimate(model, t, Q, derivatives, window=window, polyorder=polyorder)
    except InputError as exc:
        if exc.row is None:  # too few samples for the method, or for the window: the file's fault too
            raise TrajectoryError(exc.message, file=traj.path) from None
        raise TrajectoryError(exc.message, file=traj.path, column="time", **traj.locate(exc.row)) from None
    return Motion(t, Q, V, A, derivatives)
