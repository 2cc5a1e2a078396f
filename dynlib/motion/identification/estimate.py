"""The linear identification problem, its base parameters, and its two estimators.

Unknowns ``theta = (pi, phi, r)``: ten inertial parameters per body (`dynlib.regressor`),
the identified friction terms per revolute or prismatic DoF
(`dynlib.algorithms.regressor.friction_regressor`) and, when identified, the rotor
inertia (armature) r of each of those DoFs, whose column is the DoF's acceleration
(the torque armature·q̈; Pinocchio's ``model.armature``). Every sample gives one equation
per DoF k, ``W_k(q, v, a) theta = y_k``: y is the measured generalized force minus
the URDF friction terms and the armature torque that are not identified (held at
their URDF or given values).

Data (`Stack`): per DoF k, the sums of products ``[W_k S | y_k]^T [W_k S | y_k]``
over the samples, on the columns that can be nonzero in row k (the bodies DoF k
carries, its own friction terms), the columns scaled by a typical size S of
their parameter (`LinearModel.scale`) so that these normal equations are well
conditioned; built a block of rows at a time, so a long recording never holds
its whole regressor. Everything after works on these small matrices.

Base parameters (`base_parameters`): the columns of a regressor sampled at
random states (uniform within the position limits, velocities and accelerations
in [-1, 1]) scaled to unit norm, QR with column pivoting; the rank r is the
number of |R_ii| above 1e-8 |R_00|. The first r pivots are the base columns and
``beta = theta_b + K theta_d`` with ``K = R_11^-1 R_12`` (unscaled), so that
``W theta = W_b beta`` for every motion.

Estimators:

- `weighted_least_squares`: beta by ordinary least squares, then again with each
  DoF's equations weighted by the inverse of its residual variance (Gautier's
  weighted least squares; s_k is at least 0.1 % of the DoF's rms torque, a noise
  floor below which the model's own errors dominate); the covariance
  ``(sum_k W_bk^T W_bk / s_k^2)^-1`` gives the standard deviations.
- `regularised`: the full theta minimising the weighted residual plus
  ``|S^-1 (theta - theta_0)|^2``, a Gaussian prior at the URDF's values theta_0
  with standard deviations S: per body `prior_std` times its URDF mass (at least
  1 % of the moving mass), that mass times a length and times the length
  squared, the length being the body's radius of gyration (at least 5 cm); per
  friction term `prior_std` times its URDF value or the DoF's rms torque,
  whichever is larger. The data decide every direction they excite; the
  directions they do not (the non-base combinations) stay at the URDF's values.
- `physically_consistent`: that estimate projected, in the metric of its own
  Hessian H, onto the physically consistent set: minimise
  ``(theta - theta*)^T H (theta - theta*)`` subject to, per body, the pseudo-inertia of the link
  that carries the body's identified parameters (`parameters.BodyLinks`)
  positive semidefinite (Wensing, Kim and Slotine's LMI:
  ``J(pi_j) - J(the other links) >= 0``), and damping, Coulomb friction and armature >= 0.
  A semidefinite program in the whitened variable x = H^1/2 (theta - theta*)
  (objective |x|^2), solved by Clarabel (PSD triangle cones).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg as sl

from ..._numba.decorators import allocating_kernel
from ..._numba import parallel
from ...algorithms.regressor import (FRICTION_TERMS, check_friction_terms, friction_column, friction_dofs,
                                    friction_regressor, inertial_parameters, regressor, regressor_kernel)
from ...errors import InputError, NumericalError
from ...sim.dynamics import joint_friction
from . import parameters as P

BLOCK_ROWS = 4096
RANK_TOLERANCE = 1e-8
NOISE_FLOOR = 1e-3
PARAMETER_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
_FRICTION_NAME = {"viscous": "damping", "coulomb": "friction", "offset": "offset"}


def _body_scales(model):
    """(nb, 3): per body a mass, a length and their products' scale: (m, m l, m l^2) with m the URDF
    mass (at least 1 % of the moving mass) and l its radius of gyration about the origin (at least 5 cm)."""
    pis = inertial_parameters(model).reshape(model.nb, 10)
    floor = 0.01 * max(float(pis[:, 0].sum()), 1e-3)
    out = np.empty((model.nb, 3))
    for j, pi in enumerate(pis):
        m = max(pi[0], floor)
        I = P.rotational_inertia(pi)
        gyration = np.sqrt(max(np.trace(I), 0.0) / (2 * pi[0])) if pi[0] > 0 else 0.0
        length = max(gyration, 0.05)
        out[j] = m, m * length, m * length ** 2
    return out


class LinearModel:
    """The columns of the identification problem for one model and friction terms.

    `scale` (p,): a typical size of each parameter (`_body_scales`; 1 for friction), by
    which the columns are multiplied before their products are summed, so that the
    normal equations are well scaled whatever the units.
    """

    def __init__(self, model, terms=("viscous", "coulomb"), smoothing=1e-3, armature=False):
        check_friction_terms(terms, smoothing)
        self.model = model
        self.terms = tuple(t for t in FRICTION_TERMS if t in terms)  # a fixed order
        self.armature = bool(armature)  # the rotor inertias identified (a last group of columns), or held
        self.smoothing = float(smoothing)
        self.fdofs = friction_dofs(model)
        self.n_pi = 10 * model.nb
        groups = self.terms + (("armature",) if self.armature else ())
        self.p = self.n_pi + len(groups) * self.fdofs.size
        a = model.arrays
        names = [f"{model.joint_names[j]}.{n}" for j in range(model.nb) for n in PARAMETER_NAMES]
        names += [f"{model.v_names[k]}.{_FRICTION_NAME.get(t, t)}" for t in groups for k in self.fdofs]
        self.names = tuple(names)
        self.active = []
        for k in range(model.nv):
            i = a.dof_body[k]
            cols = [c for j in range(i, a.subtree_end[i]) for c in range(10 * j, 10 * j + 10)]
            where = np.flatnonzero(self.fdofs == k)
            for g in range(len(groups)):
                cols += [self.n_pi + g * self.fdofs.size + int(w) for w in where]
            self.active.append(np.array(cols, dtype=np.int64))
        urdf = {"viscous": a.damping, "coulomb": a.friction, "armature": a.armature}
        self.theta0 = np.concatenate([inertial_parameters(model)]
                                     + [urdf[t][self.fdofs] if t in urdf else np.zeros(self.fdofs.size)
                                        for t in groups])
        n = self.n_pi + len(self.terms) * self.fdofs.size
        self.armature_slice = slice(n, n + self.fdofs.size) if self.armature else None
        self.held = tuple(t for t in ("viscous", "coulomb") if t not in self.terms)
        # positions in theta of each friction term's block
        self.friction_slice = {t: slice(self.n_pi + g * self.fdofs.size, self.n_pi + (g + 1) * self.fdofs.size)
                               for g, t in enumerate(self.terms)}
        self.scale = np.ones(self.p)
        if model.nb:
            self.scale[:self.n_pi] = np.repeat(_body_scales(model), (1, 3, 6), axis=1).reshape(-1)

    def columns(self, q, v, a):
        """W (N, nv, p) for rows of q, v, a."""
        parts = [regressor(self.model, q, v, a)]
        if self.terms:
            parts.append(friction_regressor(self.model, v, self.terms, self.smoothing))
        if self.armature:
            A = np.asarray(a, dtype=float).reshape(len(parts[0]), self.model.nv)
            R = np.zeros((len(A), self.model.nv, self.fdofs.size))
            R[:, self.fdofs, np.arange(self.fdofs.size)] = A[:, self.fdofs]
            parts.append(R)
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=2)

    def held_friction(self, v):
        """(N, nv): the URDF friction terms that are not identified, at velocities v."""
        a = self.model.arrays
        return joint_friction.py_func(a.damping if "viscous" in self.held else 0.0,
                                      a.friction if "coulomb" in self.held else 0.0, self.smoothing, v)

    def armatures(self, theta):
        """(nv,) the rotor inertias of parameters theta: the identified ones, the model's elsewhere."""
        arm = self.model.arrays.armature.copy()
        if self.armature:
            arm[self.fdofs] = theta[self.armature_slice]
        return arm

    def with_parameters(self, theta):
        """The model with theta's inertial parameters and armature (`armatures`; its friction arrays unchanged)."""
        import dataclasses

        from ...core.spatial import skew

        inertia = np.empty((self.model.nb, 6, 6))
        for j in range(self.model.nb):
            pi = theta[10 * j:10 * j + 10]
            hx = skew(pi[1:4])
            inertia[j, :3, :3] = pi[0] * np.eye(3)
            inertia[j, :3, 3:] = -hx
            inertia[j, 3:, :3] = hx
            inertia[j, 3:, 3:] = P.rotational_inertia(pi)
        return dataclasses.replace(self.model, arrays=self.model.arrays._replace(inertia=inertia,
                                                                                 armature=self.armatures(theta)))

    def predict(self, theta, q, v, a):
        """The motor torques (N, nv) of parameters theta: RNEA of the model with theta's inertias and
        armature plus the friction terms (identified and held)."""
        from ...algorithms.rnea import rnea

        tau = rnea(self.with_parameters(theta), q, v, a) + self.held_friction(v)
        n = self.fdofs.size
        for t, s in self.friction_slice.items():
            col = friction_column.py_func(FRICTION_TERMS.index(t), v[:, self.fdofs], self.smoothing)
            tau[:, self.fdofs] += col * theta[s][:n]
        return tau


@allocating_kernel
def _normal_equations(m, d, Q, V, A, Y, gravity, active, n_active, scale, n_pi, nf, codes, smoothing):
    """G (nv, c + 1, c + 1): per DoF k, the lower triangle of sum over the rows of x x^T with
    x = (W_k[active_k] * scale[active_k], y_k); W from `regressor_kernel`, the friction columns and
    (code -1) the armature's, the DoF's acceleration."""
    nv = Y.shape[1]
    c = active.shape[1]
    G = np.zeros((nv, c + 1, c + 1))
    W = np.empty((nv, n_pi))
    x = np.empty(c + 1)
    for n in range(Q.shape[0]):
        regressor_kernel(m, d, Q[n], V[n], A[n], gravity, W)
        for k in range(nv):
            nk = n_active[k]
            for i in range(nk):
                col = active[k, i]
                if col < n_pi:
                    x[i] = W[k, col] * scale[col]
                elif codes[(col - n_pi) // nf] < 0:
                    x[i] = A[n, k] * scale[col]
                else:
                    x[i] = friction_column(codes[(col - n_pi) // nf], V[n, k], smoothing) * scale[col]
            x[nk] = Y[n, k]
            for i in range(nk + 1):
                xi = x[i]
                for j in range(i + 1):
                    G[k, i, j] += xi * x[j]
    return G


class Stack:
    """Per DoF k, the sums of products of [W_k S | y_k] over the samples (S = `LinearModel.scale`),
    on the columns active in row k, and the number of samples."""

    def __init__(self, lm: LinearModel):
        self.lm = lm
        self.G = [np.zeros((c.size + 1, c.size + 1)) for c in lm.active]
        self.rows = 0

    def add(self, q, v, a, tau):
        """Add the samples q (N, nq), v, a (N, nv) with measured generalized forces tau (N, nv)."""
        lm = self.lm
        model = lm.model
        Q, V, A = (np.ascontiguousarray(x, dtype=float) for x in (q, v, a))
        # the torques the parameters must explain: the held friction terms and the rotors' inertia
        # (armature, when known: not an inertial parameter of a body; identified: its columns) taken out
        held = model.arrays.armature.copy()
        if lm.armature:
            held[lm.fdofs] = 0.0
        Y = np.ascontiguousarray(tau - lm.held_friction(V) - held * A, dtype=float)
        n_active = np.array([c.size for c in lm.active], dtype=np.int64)
        active = np.zeros((model.nv, max(n_active.max(initial=0), 1)), dtype=np.int64)
        for k, c in enumerate(lm.active):
            active[k, :c.size] = c
        codes = np.array([FRICTION_TERMS.index(t) for t in lm.terms] + [-1] * lm.armature or [0], dtype=np.int64)
        blocks = parallel.run(model, len(Q), _normal_equations, (Q,), (V,), (A,), (Y,), model.arrays.gravity,
                              active, n_active, lm.scale, lm.n_pi, max(lm.fdofs.size, 1), codes, lm.smoothing)
        G = sum(g for _, g in blocks)
        for k, nk in enumerate(n_active):
            low = G[k, :nk + 1, :nk + 1]  # the kernel fills lower triangles
            self.G[k] += np.tril(low) + np.tril(low, -1).T
        self.rows += len(Q)
        return self

    def restricted(self, lm: LinearModel) -> "Stack":
        """The same sums for `lm`, whose parameters are some of this stack's (the same model, fewer
        friction terms among those identified, the held ones unchanged): rows and columns dropped."""
        if lm.held != self.lm.held or lm.armature != self.lm.armature:
            raise InputError("a restricted stack cannot change the friction terms or armature held at the URDF")
        where = {n: i for i, n in enumerate(self.lm.names)}
        out = Stack(lm)
        for k, cols in enumerate(lm.active):
            pos = {int(c): i for i, c in enumerate(self.lm.active[k])}
            ix = [pos[where[lm.names[c]]] for c in cols] + [len(self.lm.active[k])]
            out.G[k] = self.G[k][np.ix_(ix, ix)].copy()
        out.rows = self.rows
        return out

    def quadratic(self, k, columns):
        """(H, g, c): DoF k's |W_k S z - y_k|^2 = z^T H z - 2 g^T z + c for z on `columns` (indices into theta)."""
        cols = self.lm.active[k]
        pos = np.full(self.lm.p, -1)
        pos[np.asarray(columns)] = np.arange(len(columns))
        mine = np.flatnonzero(pos[cols] >= 0)
        at = pos[cols[mine]]
        n = len(columns)
        H = np.zeros((n, n))
        H[np.ix_(at, at)] = self.G[k][np.ix_(mine, mine)]
        g = np.zeros(n)
        g[at] = self.G[k][mine, -1]
        return H, g, float(self.G[k][-1, -1])


class Base(NamedTuple):
    """Base parameters beta = B theta (B (r, p)): `columns` (r,) the base columns of theta,
    `names` their expressions, `rank` r."""

    columns: np.ndarray
    B: np.ndarray
    names: tuple
    rank: int


def base_parameters(lm: LinearModel, seed=0, samples=None) -> Base:
    """The base parameters of `lm` from a regressor sampled at random states (see the module docstring)."""
    from ...algorithms.configuration import random_configuration

    model = lm.model
    rng = np.random.default_rng(seed)
    n = samples or max(100, 4 * lm.p // max(model.nv, 1) + 10)
    Q = np.array([random_configuration(model, rng) for _ in range(n)])
    V = rng.uniform(-1, 1, (n, model.nv))
    A = rng.uniform(-1, 1, (n, model.nv))
    W = lm.columns(Q, V, A).reshape(n * model.nv, lm.p)
    norms = np.linalg.norm(W, axis=0)
    live = np.flatnonzero(norms > 1e-12 * max(norms.max(initial=0.0), 1e-300))
    if live.size == 0:
        raise InputError(f"robot '{model.name}': no parameter has any effect on the joint torques")
    Ws = W[:, live] / norms[live]
    _, R, piv = sl.qr(Ws, mode="economic", pivoting=True, check_finite=False)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > RANK_TOLERANCE * d[0]))
    Kh = sl.solve_triangular(R[:r, :r], R[:r, r:], check_finite=False)
    Kh[np.abs(Kh) < 1e-9] = 0.0
    base, dep = live[piv[:r]], live[piv[r:]]
    order = np.argsort(base)
    base, Kh = base[order], Kh[order]
    B = np.zeros((r, lm.p))
    B[np.arange(r), base] = 1.0
    B[:, dep] = Kh * norms[dep][None, :] / norms[base][:, None]
    names = []
    for i in range(r):
        terms = [lm.names[base[i]]]
        for c in np.flatnonzero(B[i] != 0):
            if c != base[i]:
                terms.append(f"{B[i, c]:+.6g}*{lm.names[c]}")
        names.append(" ".join(terms))
    return Base(base, B, tuple(names), r)


class WLS(NamedTuple):
    beta: np.ndarray      # (r,) base parameters
    std: np.ndarray       # (r,) their standard deviations
    sigma: np.ndarray     # (nv,) residual standard deviation of each DoF's equations
    condition: float      # of the base regressor on the data (unweighted)
    condition_scaled: float  # the same with unit-norm columns


def _solve_normal(H, g):
    """x with H x = g for a symmetric positive semidefinite H (least norm where H is singular)."""
    try:
        return sl.cho_solve(sl.cho_factor(H, check_finite=False), g, check_finite=False)
    except (np.linalg.LinAlgError, sl.LinAlgError):
        return np.linalg.lstsq(H, g, rcond=1e-13)[0]


def _condition(H):
    """The condition number of a matrix W from H = W^T W."""
    ev = np.linalg.eigvalsh(0.5 * (H + H.T))
    return float(np.sqrt(ev[-1] / ev[0])) if ev[0] > 0 else float("inf")


def _standard_deviations(H):
    """sqrt(diag(H^-1)) for the information matrix H; inf for a parameter the data do not determine
    (its column is zero — a joint that never moves — or it lies along a direction H does not see)."""
    d = np.sqrt(np.maximum(np.diag(H), 0.0))
    std = np.full(d.size, np.inf)
    live = d > 1e-12 * max(d.max(initial=0.0), 1e-300)
    if not np.any(live):
        return std
    C = H[np.ix_(live, live)] / np.outer(d[live], d[live])  # unit diagonal: the scales out of the way
    lam, V = np.linalg.eigh(0.5 * (C + C.T))
    seen = lam > 1e-10 * lam[-1]
    sub = np.sqrt((V[:, seen] ** 2) @ (1.0 / lam[seen])) / d[live]
    sub[np.linalg.norm(V[:, ~seen], axis=1) > 1e-3] = np.inf
    std[live] = sub
    return std


def weighted_least_squares(stack: Stack, base: Base) -> WLS:
    """Base parameters by OLS, then weighted by the inverse residual variance of each DoF (Gautier)."""
    lm = stack.lm
    nv = len(stack.G)
    r = base.rank
    sb = lm.scale[base.columns]
    quads = [stack.quadratic(k, base.columns) for k in range(nv)]
    used = [k for k in range(nv) if np.any(quads[k][0])]
    if not used:
        raise InputError("no DoF's torque depends on the parameters")
    H = sum(q[0] for q in quads)
    z = _solve_normal(H, sum(q[1] for q in quads))
    n_eq = stack.rows * len(used)
    res = np.array([max(c - 2 * g @ z + z @ Hk @ z, 0.0) for Hk, g, c in quads])
    sigma2 = res / max(stack.rows, 1) * n_eq / max(n_eq - r, 1)
    # a noise floor of NOISE_FLOOR of each DoF's rms torque (or of the mean over the DoFs, for a root row
    # measured as zero): below it the model's own errors dominate, and it keeps the weights finite
    rms = np.sqrt(np.array([q[2] for q in quads]) / max(stack.rows, 1))
    mean = float(np.mean(rms[used])) if np.any(rms[used] > 0) else 1.0
    floor = NOISE_FLOOR * np.where(rms > 0, rms, mean)
    sigma = np.sqrt(np.maximum(sigma2, floor ** 2))
    Hw = sum(q[0] / s ** 2 for q, s in zip(quads, sigma))
    zw = _solve_normal(Hw, sum(q[1] / s ** 2 for q, s in zip(quads, sigma)))
    std = _standard_deviations(Hw) * sb
    d = np.sqrt(np.maximum(np.diag(H), 1e-300))
    return WLS(zw * sb, std, sigma, _condition(H / np.outer(sb, sb)), _condition(H / np.outer(d, d)))


def prior_scales(lm: LinearModel, recordings, prior_std=1.0):
    """S (p,): the prior's standard deviation of each parameter (see the module docstring)."""
    S = lm.scale.copy()
    if lm.friction_slice:
        tau = np.concatenate([r.tau for r in recordings])
        rms = np.maximum(np.sqrt(np.mean(tau ** 2, axis=0))[lm.fdofs], 1e-6)
        for t, s in lm.friction_slice.items():
            S[s] = np.maximum(np.abs(lm.theta0[s]), rms)  # N m per rad/s, N m: the DoF's rms torque as a scale
    if lm.armature:  # kg m^2: the DoF's rms torque over its rms acceleration, an inertia the data can see
        tau = np.concatenate([r.tau for r in recordings])[:, lm.fdofs]
        acc = np.concatenate([r.a for r in recordings])[:, lm.fdofs]
        rms_a = np.maximum(np.sqrt(np.mean(acc ** 2, axis=0)), 1e-6)
        inertia = np.maximum(np.sqrt(np.mean(tau ** 2, axis=0)) / rms_a, 1e-6)
        S[lm.armature_slice] = np.maximum(np.abs(lm.theta0[lm.armature_slice]), inertia)
    return prior_std * S


def regularised(stack: Stack, sigma, theta0, S):
    """(theta*, M): the minimiser of sum_k |W_k theta - y_k|^2 / sigma_k^2 + |S^-1 (theta - theta0)|^2,
    and M (p, p) with theta = theta* + M x for the whitened step x: the objective grows by |x|^2.

    Through the eigenvectors of the Hessian H = V diag(lam) V^T in the scaled variable
    z = theta / `LinearModel.scale` (M = diag(scale) V diag(lam)^-1/2); eigenvalues below the
    prior's own (round-off in the data's null space) are raised to it.
    """
    lm = stack.lm
    all_cols = np.arange(lm.p)
    prior = (lm.scale / S) ** 2
    H = np.diag(prior)
    g = lm.scale * theta0 / S ** 2
    for k in range(len(stack.G)):
        Hk, gk, _ = stack.quadratic(k, all_cols)
        H += Hk / sigma[k] ** 2
        g += gk / sigma[k] ** 2
    lam, V = np.linalg.eigh(0.5 * (H + H.T))
    lam = np.maximum(lam, prior.min())
    z = V @ ((V.T @ g) / lam)
    return lm.scale * z, lm.scale[:, None] * (V / np.sqrt(lam))


def _svec_rows(n):
    """(index pairs, scale) of Clarabel's PSD triangle: upper triangle by columns, off-diagonals x sqrt(2)."""
    pairs, scale = [], []
    for c in range(n):
        for r in range(c + 1):
            pairs.append((r, c))
            scale.append(1.0 if r == c else np.sqrt(2.0))
    return pairs, np.array(scale)


def physically_consistent(lm: LinearModel, links: P.BodyLinks, theta_star, M, S):
    """theta = theta_star + M x with the smallest |x| (`regularised`'s metric) such that every carrier
    link's pseudo-inertia is positive semidefinite and damping, Coulomb friction >= 0 (see the module
    docstring).

    Returns (theta, status): status is Clarabel's.
    """
    import clarabel
    import scipy.sparse as sp

    p = lm.p
    D = P.pseudo_inertia_map()
    pairs, sc = _svec_rows(4)
    Dsvec = np.array([D[4 * r + c] for r, c in pairs]) * sc[:, None]  # (10, 10): svec(J(pi)) = Dsvec pi
    rows_A, rows_b, cones = [], [], []
    for j in range(lm.model.nb):
        Jo = P.pseudo_inertia(links.others_in_body(j))
        scale = 1.0 / max(lm.scale[10 * j], 1e-12)
        cols = slice(10 * j, 10 * j + 10)
        rows_A.append(-scale * Dsvec @ M[cols])
        rows_b.append(scale * (Dsvec @ theta_star[cols] - np.array([Jo[r, c] for r, c in pairs]) * sc))
        cones.append(clarabel.PSDTriangleConeT(4))
    nonneg = [i for t in ("viscous", "coulomb") if t in lm.friction_slice
              for i in range(p)[lm.friction_slice[t]]]
    if lm.armature:
        nonneg += list(range(p)[lm.armature_slice])
    if nonneg:
        idx = np.array(nonneg)
        rows_A.append(-M[idx] / S[idx, None])
        rows_b.append(theta_star[idx] / S[idx])
        cones.append(clarabel.NonnegativeConeT(len(nonneg)))
    A = np.vstack(rows_A)
    b = np.concatenate(rows_b)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.max_iter = 500
    Pm = sp.identity(p, format="csc") * 2.0
    sol = clarabel.DefaultSolver(Pm, np.zeros(p), sp.csc_matrix(A), b, cones, settings).solve()
    status = str(sol.status)
    if status not in ("Solved", "AlmostSolved"):
        raise NumericalError(f"the physically consistent estimate did not solve (Clarabel: {status}); "
                             "the least-squares estimate (method 'least-squares') shows the data's own fit")
    return theta_star + M @ np.asarray(sol.x), status
