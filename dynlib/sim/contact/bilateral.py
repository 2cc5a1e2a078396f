"""Bilateral contact: contact points held in place by acceleration-level equality constraints.

Each point c (`dynlib.sim.contact.points`) is held at a target x*_c (its world
position at t = 0 unless targets are given). With ``Jc`` the (3 nc, nv) stacked
point Jacobians (world-aligned, ``ẋ = Jc v``) and ``J̇c v`` the points' classical
accelerations at zero joint acceleration (from the bias pass of
`dynlib.algorithms.kinematics.motion`), the constrained dynamics are the KKT system

    [ M   Jcᵀ ] [  a ]   [ τ − h ]
    [ Jc   0  ] [ −λ ] = [   γ   ],     γ = −J̇c v − kp (x − x*) − kd ẋ

(Baumgarte stabilisation: the position error obeys ë + kd ė + kp e = 0; gains
`baumgarte_kp` (1/s²), `baumgarte_kd` (1/s), default ω², 2ω with ω = 100 rad/s).
It is solved through its Schur complement: M (``M + dt B`` under implicit joint
friction) factorised along the tree as Lᵀ D L (`linalg.ltdl`), ``a0 = M⁻¹ (τ − h)``, ``Y = M⁻¹ Jcᵀ``, the Delassus
matrix ``D = Jc M⁻¹ Jcᵀ`` (plus ``1e-12 · max diag(D)`` on its diagonal, so
that redundant points — a box's eight corners — still factor; the forces then
take the minimum-norm split), ``D λ = γ − Jc a0``, ``a = a0 + Y λ``. λ_c is the
world force on the robot at point c: it may pull. Cost O(nv³ + nc nv² + nc³)
per evaluation, inside the compiled loop.

`BilateralContact` is the model's pair: `BilateralParams` (baumgarte_kp,
baumgarte_kd: the scenario's keys) and its workspace `BilateralWork`, on which
`bilateral_acceleration` runs in the ``acceleration`` stage of the simulation step
(`dynlib.sim.stages`) when the contact model is bilateral; the targets x* are the
points' (`dynlib.sim.contact.points.Points`).
"""
from typing import NamedTuple

import numpy as np

from ..._numba.decorators import inline_kernel, kernel
from ...algorithms.kinematics import motion, placements
from ...algorithms.linalg import cholesky, cholesky_solve, ltdl, ltdl_solve
from ..dynamics import mass_and_bias
from ..mimic import couple_rows, expand
from .points import delassus, point_jacobian, point_position


class BilateralParams(NamedTuple):
    baumgarte_kp: float = 1.0e4  # kp, 1/s²
    baumgarte_kd: float = 200.0  # kd, 1/s


class BilateralWork(NamedTuple):
    Jc: np.ndarray     # (3 nc, nv) the stacked point Jacobians
    Y: np.ndarray      # (3 nc, nv) rows of M^-1 Jcᵀ
    D: np.ndarray      # (3 nc, 3 nc) Delassus matrix Jc M^-1 Jcᵀ
    DL: np.ndarray     # (3 nc, 3 nc) its Cholesky factor
    bias: np.ndarray   # (3,) a point's bias acceleration
    gamma: np.ndarray  # (3 nc,) the constraints' right-hand side γ
    lam: np.ndarray    # (3 nc,) the multipliers: the forces
    zero6: np.ndarray  # (6,) zeros, never written: the world's acceleration of the bias pass


class BilateralContact(NamedTuple):
    """Bilateral contact's parameters and workspace (zero-size when the simulation's model is another)."""

    params: BilateralParams
    work: BilateralWork


def bilateral_work(nc, nv) -> BilateralWork:
    r = 3 * nc
    return BilateralWork(np.zeros((r, nv)), np.zeros((r, nv)), np.zeros((r, r)), np.zeros((r, r)), np.zeros(3),
                         np.zeros(r), np.zeros(r), np.zeros(6))


@kernel
def point_bias(oR, op, bv, ba, b, x, out):
    """out (3,) = world classical acceleration of the body-b material point at x at zero joint acceleration:
    R (a_lin + a_ang × r + ω × (v_lin + ω × r)), r = Rᵀ (x − op_b), body-frame bias velocity bv and acceleration ba."""
    R = oR[b]
    d0, d1, d2 = x[0] - op[b, 0], x[1] - op[b, 1], x[2] - op[b, 2]
    r0 = R[0, 0] * d0 + R[1, 0] * d1 + R[2, 0] * d2
    r1 = R[0, 1] * d0 + R[1, 1] * d1 + R[2, 1] * d2
    r2 = R[0, 2] * d0 + R[1, 2] * d1 + R[2, 2] * d2
    v0, v1, v2, w0, w1, w2 = bv[b, 0], bv[b, 1], bv[b, 2], bv[b, 3], bv[b, 4], bv[b, 5]
    a0, a1, a2, e0, e1, e2 = ba[b, 0], ba[b, 1], ba[b, 2], ba[b, 3], ba[b, 4], ba[b, 5]
    u0 = v0 + w1 * r2 - w2 * r1
    u1 = v1 + w2 * r0 - w0 * r2
    u2 = v2 + w0 * r1 - w1 * r0
    c0 = a0 + e1 * r2 - e2 * r1 + w1 * u2 - w2 * u1
    c1 = a1 + e2 * r0 - e0 * r2 + w2 * u0 - w0 * u2
    c2 = a2 + e0 * r1 - e1 * r0 + w0 * u1 - w1 * u0
    for i in range(3):
        out[i] = R[i, 0] * c0 + R[i, 1] * c1 + R[i, 2] * c2


@kernel
def constraint_rows(m, d, p, pts, st, w, v):
    """st.x, st.pen, the rows of w.Jc and γ = −J̇c v − kp (x − x*) − kd ẋ (in w.gamma) of every point
    (placements and the bias pass d.v, d.a done)."""
    nv = v.shape[0]
    for c in range(pts.body.shape[0]):
        xc = st.x[c]
        point_position(d.oR, d.op, pts.body[c], pts.p[c], pts.radius[c], pts.normal, xc)
        st.pen[c] = pts.height - (pts.normal[0] * xc[0] + pts.normal[1] * xc[1] + pts.normal[2] * xc[2])
        point_jacobian(d.oR, d.op, m.S, m.parent, m.idx_v, m.nvj, pts.body[c], xc, w.Jc[3 * c:3 * c + 3])
        point_bias(d.oR, d.op, d.v, d.a, pts.body[c], xc, w.bias)
        for i in range(3):
            u = 0.0
            for j in range(nv):
                u += w.Jc[3 * c + i, j] * v[j]
            w.gamma[3 * c + i] = -w.bias[i] - p.baumgarte_kp * (xc[i] - pts.target[c, i]) - p.baumgarte_kd * u


@kernel
def constrained_acceleration(m, d, w, st, tau_h, a):
    """a = a0 + Y λ with D λ = γ − Jc a0, a0 = M⁻¹ (τ − h) (Schur complement of the KKT system); st.force = λ.
    False if M or D is not positive definite."""
    nv, nr = a.shape[0], w.Jc.shape[0]
    if not ltdl(d.M, m.dof_parent, d.L):
        return False
    ltdl_solve(d.L, m.dof_parent, tau_h, a)
    delassus(d.L, m.dof_parent, w.Jc, w.Y, w.D)
    dmax = 0.0
    for r in range(nr):
        s = 0.0
        for j in range(nv):
            s += w.Jc[r, j] * a[j]
        w.lam[r] = w.gamma[r] - s
        dmax = max(dmax, w.D[r, r])
    for r in range(nr):
        w.D[r, r] += 1e-12 * dmax
    if not cholesky(w.D, w.DL):
        return False
    cholesky_solve(w.DL, w.lam, w.lam)
    for j in range(nv):
        s = 0.0
        for r in range(nr):
            s += w.Y[r, j] * w.lam[r]
        a[j] += s
    for r in range(nr):
        st.force[r // 3, r % 3] = w.lam[r]
    return True


@kernel
def bilateral_rows(m, d, bc, pts, st, fo, im, e, q, v):
    """d.M = M (+ dt B), e.tau_h = τ − h (`mass_and_bias`), and every point's constraint rows (bc.work.Jc, γ)."""
    mass_and_bias(m, d, fo, im, e, q, v)
    placements(m, d, q)
    motion(m, d, v, d.zeros_v, bc.work.zero6)  # the world's acceleration in the bias pass: none
    constraint_rows(m, d, bc.params, pts, st, bc.work, v)
    couple_rows(e.coupling, bc.work.Jc)  # mimic joints: J G (`dynlib.sim.mimic`; none: nothing)


@inline_kernel
def bilateral_acceleration(m, d, cm, fo, im, e, q, v, a):
    """a = the acceleration with every point held (KKT system; cm: `dynlib.sim.contact.ContactModel`);
    cm.state.force = λ per point. False if M (+ dt B) or the Delassus matrix is not positive definite."""
    bilateral_rows(m, d, cm.bilateral, cm.points, cm.state, fo, im, e, q, v)
    ok = constrained_acceleration(m, d, cm.bilateral.work, cm.state, e.tau_h, a)
    expand(e.coupling, a)
    return ok
