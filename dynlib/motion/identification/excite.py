"""Excitation trajectories: a Fourier series per joint, optimised for identification.

Each joint follows a finite Fourier series of period T_p (Swevers, Ganseman,
Tükel, De Schutter and Van Brussel 1997)::

    q_i(t) = q0_i + sum_{l=1..L} a_il / (l w) sin(l w t) - b_il / (l w) cos(l w t),  w = 2 pi / T_p
    v_i(t) = sum_l a_il cos(l w t) + b_il sin(l w t)

so it is periodic and q, v, a are exact. With sum_l a_il = 0 and sum_l l b_il = 0
the robot starts (and ends every period) at rest. The coefficients minimise the
condition number of the base regressor (the inertial base parameters and
viscous friction, `estimate.base_parameters`; Coulomb friction's sign(v) columns
are left out: they are not smooth in the coefficients, and any trajectory that
reverses every joint excites them) sampled over one period, subject to
the URDF's position limits, velocity limits and effort limits (the torques of
the URDF's own model, joint friction included), each with a `margin` (a fraction
of the limit, of the range for positions) — SLSQP (scipy), from a random feasible
start, with the objective's gradient from the singular vectors. Joints without limits get ±pi rad or ±0.5 m, 3 rad/s or 1 m/s. The result
is then checked on every output sample; should it pass a limit between the
optimiser's grid points, the oscillation is scaled down until it does not.

Public: `excitation(model, duration, harmonics, ...)` -> `Excitation`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._numba.decorators import allocating_kernel
from ...errors import InputError
from ...core.joints import PRISMATIC, REVOLUTE
from . import estimate as E

DEFAULT_RANGE = {REVOLUTE: math.pi, PRISMATIC: 0.5}
DEFAULT_VELOCITY = {REVOLUTE: 3.0, PRISMATIC: 1.0}
MAX_PERIOD = 10.0


@allocating_kernel
def _gram(W):
    """W^T W, lower and upper triangles, by plain loops."""
    n, r = W.shape
    G = np.zeros((r, r))
    for k in range(n):
        for i in range(r):
            wi = W[k, i]
            if wi != 0.0:
                for j in range(i + 1):
                    G[i, j] += wi * W[k, j]
    for i in range(r):
        for j in range(i):
            G[j, i] = G[i, j]
    return G


class Excitation(NamedTuple):
    time: np.ndarray      # (N,)
    q: np.ndarray         # (N, nq)
    v: np.ndarray         # (N, nv)
    a: np.ndarray         # (N, nv)
    tau: np.ndarray       # (N, nv) the URDF model's torques along it (joint friction included)
    period: float
    condition: float      # of the base regressor over one period (the optimised objective)
    initial_condition: float  # the same at the random start
    coefficients: np.ndarray  # (nv, 2 L + 1): a_i1..a_iL, b_i1..b_iL, q0_i


def _limits(model, margin):
    a = model.arrays
    jt = a.jtype
    lo = np.where(np.isfinite(model.lower), model.lower, [-DEFAULT_RANGE[t] for t in jt])
    hi = np.where(np.isfinite(model.upper), model.upper, [DEFAULT_RANGE[t] for t in jt])
    pad = margin * (hi - lo) / 2
    vmax = np.where(np.isfinite(model.velocity_limit), model.velocity_limit, [DEFAULT_VELOCITY[t] for t in jt])
    return lo + pad, hi - pad, (1 - margin) * vmax, (1 - margin) * model.effort


class _Series:
    """The linear maps from the coefficients x (nv (2L + 1),) to q, v, a at times t."""

    def __init__(self, nv, L, period, t):
        self.nv, self.L = nv, L
        w = 2 * math.pi / period
        lw = w * np.arange(1, L + 1)
        s, c = np.sin(np.outer(t, lw)), np.cos(np.outer(t, lw))
        ones = np.ones((t.size, 1))
        # per joint: q = [s/lw, -c/lw, 1] x_i, v = [c, s, 0] x_i, a = [-s lw, c lw, 0] x_i
        self.Bq = np.hstack([s / lw, -c / lw, ones])
        self.Bv = np.hstack([c, s, 0 * ones])
        self.Ba = np.hstack([-s * lw, c * lw, 0 * ones])

    def eval(self, x):
        X = x.reshape(self.nv, 2 * self.L + 1).T
        return self.Bq @ X, self.Bv @ X, self.Ba @ X


def excitation(model, duration, harmonics=5, *, dt=1e-3, period=None, friction_smoothing=1e-3, margin=0.05,
               seed=0, iterations=100, grid=None) -> Excitation:
    """An excitation trajectory of `duration` seconds sampled every `dt` (see the module docstring).

    period: of the Fourier series (default: the duration, split into equal periods of at
    most 10 s). harmonics: L. friction_smoothing: dyn's ε, in the torques checked against the
    effort limits. margin: the fraction of each limit kept free. seed: of the random start.
    iterations: of SLSQP. grid: samples per period for the objective and the constraints.
    """
    from scipy.optimize import minimize

    L, period = _check_arguments(model, duration, harmonics, dt, margin, period)
    nv = model.nv
    _check_fits_in_memory(duration, dt, nv)
    lo, hi, vmax, emax = _limits(model, margin)
    rng = np.random.default_rng(seed)
    n_grid = grid or max(20 * L, 100)
    S = _Series(nv, L, period, np.linspace(0.0, period, n_grid, endpoint=False))
    lm = E.LinearModel(model, ("viscous",), friction_smoothing)
    log_condition = _LogCondition(S, lm, E.base_parameters(lm, seed=seed).columns)
    torques = _torques(model, friction_smoothing)
    eq = _rest_conditions(nv, L)
    constraints = _limit_constraints(S, nv, n_grid, eq, lo, hi, vmax, emax, torques)

    x0 = _feasible_start(model, S, L, rng, lo, hi, vmax, eq, torques, emax)
    start = log_condition(x0)
    res = minimize(log_condition, x0, args=(True,), jac=True, method="SLSQP", constraints=constraints,
                   options={"maxiter": int(iterations), "ftol": 1e-6})
    x = res.x if np.isfinite(res.fun) and res.fun <= start else x0
    # project back onto the rest conditions (SLSQP keeps them only to its tolerance)
    x = x - eq.T @ np.linalg.lstsq(eq @ eq.T, eq @ x, rcond=None)[0]
    time_ = np.arange(int(round(duration / dt)) + 1) * dt
    X, (q, v, acc, tau) = _within_limits(model, _Series(nv, L, period, time_), x.reshape(nv, 2 * L + 1).copy(),
                                         torques, lo, hi, vmax, emax)
    return Excitation(time_, q, v, acc, tau, float(period), float(math.exp(log_condition(X.reshape(-1)))),
                      float(math.exp(start)), X)


def _check_arguments(model, duration, harmonics, dt, margin, period):
    """(L, period): the number of harmonics and the period (default: the duration split into
    periods of at most `MAX_PERIOD`), after the checks of every argument."""
    a = model.arrays
    if model.nb == 0 or np.any((a.jtype != REVOLUTE) & (a.jtype != PRISMATIC)):
        raise InputError(f"robot '{model.name}': an excitation trajectory needs a fixed-base robot whose joints are "
                         "all revolute, continuous or prismatic (a free-flyer or planar root cannot be commanded)")
    for name, x, low in (("duration", duration, 0.0), ("dt", dt, 0.0)):
        if not (isinstance(x, (int, float)) and math.isfinite(x) and x > low):
            raise InputError(f"{name} must be a positive number of seconds, got {x!r}")
    if isinstance(harmonics, bool) or int(harmonics) != harmonics or harmonics < 1:
        raise InputError(f"harmonics must be a positive integer, got {harmonics!r}")
    if not 0 <= margin < 1:
        raise InputError(f"margin must be in [0, 1), got {margin!r}")
    if dt > duration:
        raise InputError(f"dt {dt} s is longer than the duration {duration} s")
    L = int(harmonics)
    if period is None:
        period = duration / math.ceil(duration / MAX_PERIOD - 1e-9)
    if not (math.isfinite(period) and 0 < period <= duration):
        raise InputError(f"period must be in (0, duration], got {period!r}")
    if L > period / (2 * dt):  # the samples could not tell the highest harmonic (and its arrays would not fit)
        raise InputError(f"harmonics {L}: the highest, {L / period:.3g} Hz, is above the Nyquist frequency "
                         f"{1 / (2 * dt):.3g} Hz of samples every dt = {dt:g} s; give at most "
                         f"{math.floor(period / (2 * dt))} harmonics, or a smaller dt")
    return L, period


def _check_fits_in_memory(duration, dt, nv):
    """InputError when the output samples would not fit in this machine's memory."""
    samples = math.floor(duration / dt + 0.5) + 1
    from ...files.output import memory_shortfall  # here: not a source of the kernels' cache key

    over = memory_shortfall(samples * (1 + 4 * nv) * 8 * 2)  # time, q, v, a and the torques checked, and a copy
    if over:
        raise InputError(f"duration {duration:g} s at dt = {dt:g} s makes {samples:.3g} samples, which need "
                         f"{over}; give a shorter duration or a larger dt")


def _torques(model, friction_smoothing):
    """torques(q, v, a): the URDF model's joint torques, joint friction included."""
    from ...algorithms.rnea import rnea
    from ..inverse import joint_friction_torques

    def torques(q, v, acc):
        return rnea(model, q, v, acc) + joint_friction_torques(model, v, friction_smoothing)

    return torques


class _LogCondition:
    """The objective: log cond(W_b) of the base regressor's columns `cols` over the grid of `S`."""

    def __init__(self, S, lm, cols):
        self.S, self.lm, self.cols = S, lm, cols

    def __call__(self, x, gradient=False):
        """log cond(W_b) over the grid, and its gradient: d sigma = u^T dW v, with dW from central
        differences of the regressor in each joint's q, v and a (6 nv regressor calls)."""
        S, lm, cols = self.S, self.lm, self.cols
        nv, L = S.nv, S.L
        q, v, acc = S.eval(x)
        W = lm.columns(q, v, acc)[:, :, cols]
        Wf = np.ascontiguousarray(W.reshape(-1, cols.size))
        lam, Vec = np.linalg.eigh(_gram(Wf))  # W^T W: small, and no multi-threaded BLAS on the tall W
        lam = np.maximum(lam, 1e-300)
        f = float(0.5 * np.log(lam[-1] / lam[0]))
        if not gradient:
            return f
        s1, sn = np.sqrt(lam[-1]), np.sqrt(lam[0])
        v1, vn = Vec[:, -1], Vec[:, 0]
        u1, un = Wf @ v1 / s1, Wf @ vn / sn
        G = (np.outer(u1, v1) / s1 - np.outer(un, vn) / sn).reshape(W.shape)
        grad = np.zeros((nv, 2 * L + 1))
        for which, B in ((0, S.Bq), (1, S.Bv), (2, S.Ba)):
            for i in range(nv):
                args = [q, v, acc]
                h = 1e-6 * max(1.0, float(np.abs(args[which][:, i]).max()))
                plus, minus = [x.copy() for x in args], [x.copy() for x in args]
                plus[which][:, i] += h
                minus[which][:, i] -= h
                dW = (lm.columns(*plus)[:, :, cols] - lm.columns(*minus)[:, :, cols]) / (2 * h)
                grad[i] += np.einsum("nkc,nkc->n", G, dW) @ B
        return f, grad.reshape(-1)


def _rest_conditions(nv, L):
    """eq (2 nv, nv (2L + 1)): eq @ x = 0 starts every joint at rest (sum a = 0, sum l b = 0)."""
    eq = np.zeros((2 * nv, nv * (2 * L + 1)))
    for i in range(nv):
        o = i * (2 * L + 1)
        eq[2 * i, o:o + L] = 1.0
        eq[2 * i + 1, o + L:o + 2 * L] = np.arange(1, L + 1)
    return eq


def _limit_constraints(S, nv, n_grid, eq, lo, hi, vmax, emax, torques):
    """SLSQP's constraints: at rest at the start (`eq`), positions, velocities and (where the URDF
    gives them) efforts within their limits on the grid of `S`."""
    blocks_q = [np.kron(np.eye(nv)[i], S.Bq) for i in range(nv)]
    blocks_v = [np.kron(np.eye(nv)[i], S.Bv) for i in range(nv)]
    Mq, Mv = np.vstack(blocks_q), np.vstack(blocks_v)  # (nv n_grid, n_x), joint-major
    lo_g, hi_g = np.repeat(lo, n_grid), np.repeat(hi, n_grid)
    vm_g = np.repeat(vmax, n_grid)
    limited = np.isfinite(emax)

    def effort_slack(x):
        q, v, acc = S.eval(x)
        tau = torques(q, v, acc)[:, limited]
        return np.concatenate([(emax[limited] - tau).ravel(), (emax[limited] + tau).ravel()])

    constraints = [
        {"type": "eq", "fun": lambda x: eq @ x, "jac": lambda x: eq},
        {"type": "ineq", "fun": lambda x: np.concatenate([Mq @ x - lo_g, hi_g - Mq @ x]),
         "jac": lambda x: np.vstack([Mq, -Mq])},
        {"type": "ineq", "fun": lambda x: np.concatenate([vm_g - Mv @ x, vm_g + Mv @ x]),
         "jac": lambda x: np.vstack([-Mv, Mv])},
    ]
    if np.any(limited):
        constraints.append({"type": "ineq", "fun": effort_slack})
    return constraints


def _within_limits(model, out, X, torques, lo, hi, vmax, emax):
    """(X, (q, v, a, tau)) on every output sample of `out`: the oscillation of the coefficients X
    (nv, 2L + 1) scaled down about the same centre until every limit holds."""
    limited = np.isfinite(emax)
    for _ in range(200):
        q, v, acc = out.eval(X.reshape(-1))
        tau = torques(q, v, acc)
        ok = (np.all(q >= lo - 1e-12) and np.all(q <= hi + 1e-12) and np.all(np.abs(v) <= vmax + 1e-12)
              and np.all(np.abs(tau[:, limited]) <= emax[limited]))
        if ok:
            return X, (q, v, acc, tau)
        X[:, :-1] *= 0.98  # a smaller oscillation about the same centre
    raise InputError(f"robot '{model.name}': no excitation found within the limits (are the effort limits "
                     "below the torque that holds the robot against gravity?)")


def _feasible_start(model, S, L, rng, lo, hi, vmax, eq, torques, emax):
    """Random coefficients at rest at t = 0, scaled until the grid is within every limit."""
    nv = model.nv
    x = np.zeros((nv, 2 * L + 1))
    x[:, :2 * L] = rng.normal(size=(nv, 2 * L)) / np.tile(np.arange(1, L + 1), 2)
    x[:, 2 * L] = (lo + hi) / 2
    flat = x.reshape(-1)
    flat -= eq.T @ np.linalg.lstsq(eq @ eq.T, eq @ flat, rcond=None)[0]
    x = flat.reshape(nv, 2 * L + 1)
    q, v, _ = S.eval(x.reshape(-1))
    osc_q = np.max(np.abs(q - x[:, 2 * L]), axis=0)
    osc_v = np.max(np.abs(v), axis=0)
    s = np.min(np.concatenate([0.5 * (hi - lo) / 2 / np.maximum(osc_q, 1e-12), 0.5 * vmax / np.maximum(osc_v, 1e-12)]))
    x[:, :2 * L] *= s
    limited = np.isfinite(emax)
    for _ in range(100):
        q, v, acc = S.eval(x.reshape(-1))
        if np.all(np.abs(torques(q, v, acc)[:, limited]) <= emax[limited]):
            return x.reshape(-1)
        x[:, :2 * L] *= 0.8
    raise InputError(f"robot '{model.name}': even a slow motion about the middle of the joint ranges needs more "
                     "torque than the URDF's effort limits allow")
