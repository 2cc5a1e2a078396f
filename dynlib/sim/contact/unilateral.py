"""Unilateral contact: velocity-level time stepping with Coulomb friction, projected Gauss–Seidel.

One step from (q, v) to (q+, v+) (semi-implicit Euler on impulses, Stewart–Trinkle
/ Anitescu style; the scenario's `integrator` must be ``semi-implicit``):

1. free velocity ``v_free = v + dt M⁻¹ (τ − h)`` (M + dt B under implicit joint friction);
2. per contact point c (`dynlib.sim.contact.points`), the rows of its Jacobian in the
   contact frame (n, t1, t2) — ``Jc`` (3 nc, nv) — and the Delassus matrix
   ``D = Jc M⁻¹ Jcᵀ`` (M factorised as Lᵀ D L along the tree, `linalg.ltdl`);
3. impulses λ_c = (λn, λt1, λt2) with contact velocities ``u = Jc v_free + D λ``:

   - normal: ``λn ≥ 0``, ``u_n ≥ b_c``, ``λn (u_n − b_c) = 0`` (complementarity), with
     ``b_c = −g/dt`` for a gap g = n·x − height > 0 (the point may close the gap in
     this step but not cross it: no impact is missed) and ``b_c = −β g / dt`` for a
     penetration (g < 0: a fraction β = `penetration_correction` of the depth,
     default 0.2, is pushed out per step: Baumgarte-like position stabilisation at
     velocity level, it adds no energy beyond that velocity);
   - friction: ``|λt| ≤ μ λn`` (the exact circular cone), maximal dissipation;

   solved by projected Gauss–Seidel over the points: for each point the normal
   update ``λn ← max(0, λn − (u_n − b_n) / D_nn)``, then the tangential update
   ``λt ← λt − u_t / e`` (both rows at once, e the largest eigenvalue of their
   2×2 block of D: one scalar step, so that a fixed point on the cone's edge
   opposes the slip, ``λt ∝ −u_t``, maximal dissipation) projected onto the disk
   of radius μ λn.
   Warm start: the previous step's impulses. Stops when a sweep changes no
   impulse by more than `tolerance` × max|λ| (default 1e-8) or after
   `max_iterations` sweeps (default 200); steps that stop on the limit are
   counted and reported (`SimulationResult.contact_solver`);
4. ``v+ = v_free + M⁻¹ Jcᵀ λ``, ``q+ = q ⊕ dt v+``. The recorded acceleration is
   ``(v+ − v) / dt`` and the recorded contact force λ/dt (world-aligned).

O(nv³ + nc nv² + iterations · nc²) per step.

`UnilateralContact` is the model's pair: `UnilateralParams` (friction, tolerance,
max_iterations, penetration_correction: the scenario's keys) and the impulse
step's workspace `ImpulseWork`, on which the ``acceleration`` stage of the
simulation step runs when the contact model is unilateral
(`dynlib.sim.stages.impulse_acceleration`): steps 1–2 are `free_step`, the rows'
targets of step 3 `unilateral_rows`, the solve and step 4 `apply_impulses` (with
`pgs`). The relaxed model (`dynlib.sim.contact.relaxed`) shares `free_step`, `pgs`,
`apply_impulses` and the type of the workspace, with rows of its own.
"""
from typing import NamedTuple

import numpy as np

from ..._numba.decorators import inline_kernel, kernel
from ...algorithms.kinematics import placements
from ...algorithms.linalg import ltdl, ltdl_solve
from ..dynamics import mass_and_bias
from ..mimic import couple_rows
from .points import delassus, point_jacobian, point_position


class UnilateralParams(NamedTuple):
    friction: float = 0.8                # μ
    tolerance: float = 1e-8              # PGS: relative change that ends the sweeps
    max_iterations: int = 200            # PGS: sweep limit
    penetration_correction: float = 0.2  # β
    integrator = "semi-implicit"         # the scheme the model steps with (not a parameter)


class ImpulseWork(NamedTuple):
    """Workspace of the impulse step (unilateral and relaxed contact)."""

    Jp: np.ndarray      # (3, nv) one point's Jacobian
    Jc: np.ndarray      # (3 nc, nv) the stacked contact-frame Jacobians, rows (n, t1, t2) per point
    Y: np.ndarray       # (3 nc, nv) rows of M^-1 Jcᵀ
    D: np.ndarray       # (3 nc, 3 nc) Delassus matrix Jc M^-1 Jcᵀ
    target: np.ndarray  # (3 nc,) the rows' target velocities
    lam: np.ndarray     # (3 nc,) impulses (the warm start of the next step)
    u: np.ndarray       # (3 nc,) contact velocities Jc v
    u_free: np.ndarray  # (3 nc,) contact velocities at the free velocity
    R: np.ndarray       # (3 nc,) compliance on the diagonal of D (relaxed; 0 unilateral)
    active: np.ndarray  # (nc,) bool: points in the solve
    stats: np.ndarray   # (3,) steps stopped on the iteration limit, most sweeps, worst relative change


class UnilateralContact(NamedTuple):
    """Unilateral contact's parameters and workspace (zero-size when the simulation's model is another)."""

    params: UnilateralParams
    work: ImpulseWork


def impulse_work(nc, nv) -> ImpulseWork:
    r = 3 * nc
    return ImpulseWork(np.zeros((3, nv)), np.zeros((r, nv)), np.zeros((r, nv)), np.zeros((r, r)), np.zeros(r),
                       np.zeros(r), np.zeros(r), np.zeros(r), np.zeros(r), np.zeros(nc, dtype=np.bool_), np.zeros(3))


@kernel
def contact_rows(m, d, pts, st, w):
    """st.x, st.pen = h − n·x and the rows (n, t1, t2)·Jp of w.Jc of every point (placements done)."""
    nv, frame = w.Jp.shape[1], pts.frame
    for c in range(pts.body.shape[0]):
        xc = st.x[c]
        point_position(d.oR, d.op, pts.body[c], pts.p[c], pts.radius[c], frame[0], xc)
        st.pen[c] = pts.height - (frame[0, 0] * xc[0] + frame[0, 1] * xc[1] + frame[0, 2] * xc[2])
        point_jacobian(d.oR, d.op, m.S, m.parent, m.idx_v, m.nvj, pts.body[c], xc, w.Jp)
        for i in range(3):
            for j in range(nv):
                w.Jc[3 * c + i, j] = frame[i, 0] * w.Jp[0, j] + frame[i, 1] * w.Jp[1, j] + frame[i, 2] * w.Jp[2, j]


@kernel
def free_step(m, d, pts, st, w, fo, im, e, dt, q, v, a):
    """a = the free acceleration M⁻¹ (τ − h); the contact rows w.Jc, Y = M⁻¹ Jcᵀ, D = Jc M⁻¹ Jcᵀ, the
    contact velocities w.u = Jc v and w.u_free = Jc (v + dt a). False if M is not positive definite."""
    mass_and_bias(m, d, fo, im, e, q, v)
    placements(m, d, q)
    if not ltdl(d.M, m.dof_parent, d.L):
        return False
    ltdl_solve(d.L, m.dof_parent, e.tau_h, a)
    contact_rows(m, d, pts, st, w)
    couple_rows(e.coupling, w.Jc)  # mimic joints: J G (`dynlib.sim.mimic`; none: nothing)
    delassus(d.L, m.dof_parent, w.Jc, w.Y, w.D)
    for r in range(w.Jc.shape[0]):
        s = 0.0
        u = 0.0
        for j in range(v.shape[0]):
            s += w.Jc[r, j] * (v[j] + dt * a[j])
            u += w.Jc[r, j] * v[j]
        w.u_free[r] = s
        w.u[r] = u
    return True


@inline_kernel  # called per point and sweep: inlined, not a call passing seven arrays
def pgs_point(D, R, w, target, mu, lam, c):
    """One PGS update of point c: normal impulse, then both tangential ones projected onto the disk of radius
    μ λn. Returns the largest change of its three impulses."""
    m, r = lam.shape[0], 3 * c
    o0, o1, o2 = lam[r], lam[r + 1], lam[r + 2]
    u = w[r] - target[r] + R[r] * lam[r]
    for j in range(m):
        u += D[r, j] * lam[j]
    lam[r] = max(lam[r] - u / (D[r, r] + R[r]), 0.0)
    # tangential: one step of size 1/(largest eigenvalue of the 2x2 block), then onto the disk
    u1 = w[r + 1] - target[r + 1] + R[r + 1] * lam[r + 1]
    u2 = w[r + 2] - target[r + 2] + R[r + 2] * lam[r + 2]
    for j in range(m):
        u1 += D[r + 1, j] * lam[j]
        u2 += D[r + 2, j] * lam[j]
    a11, a22, a12 = D[r + 1, r + 1] + R[r + 1], D[r + 2, r + 2] + R[r + 2], D[r + 1, r + 2]
    emax = 0.5 * (a11 + a22) + (0.25 * (a11 - a22) ** 2 + a12 * a12) ** 0.5
    t1, t2 = lam[r + 1] - u1 / emax, lam[r + 2] - u2 / emax
    tn = (t1 * t1 + t2 * t2) ** 0.5
    if tn > mu * lam[r]:
        sc = mu * lam[r] / tn
        t1 *= sc
        t2 *= sc
    lam[r + 1] = t1
    lam[r + 2] = t2
    return max(abs(lam[r] - o0), abs(lam[r + 1] - o1), abs(lam[r + 2] - o2))


@kernel
def pgs(D, R, w, target, active, mu, lam, tol, max_iter):
    """Projected Gauss–Seidel on min ½ λᵀ(D + diag R)λ + λᵀ(w − target), λ_c in the friction cone.

    w = Jc v_free; rows (n, t1, t2) per point; inactive points keep λ = 0.
    Returns (sweeps, last change relative to max(max λn, 1e-12 N s))."""
    nc = active.shape[0]
    for c in range(nc):
        if not active[c]:
            lam[3 * c] = lam[3 * c + 1] = lam[3 * c + 2] = 0.0
    change = 0.0
    for it in range(1, max_iter + 1):
        change, big = 0.0, 1e-12
        for c in range(nc):
            if not active[c]:
                continue
            change = max(change, pgs_point(D, R, w, target, mu, lam, c))
            big = max(big, abs(lam[3 * c]))
        change /= big
        if change <= tol:
            return it, change
    return max_iter, change


@kernel
def apply_impulses(mu, tol, max_iter, pts, st, w, dt, a):
    """Solve for the impulses λ (PGS with friction μ, tolerance and sweep limit, warm-started from the last
    step's), then a += M⁻¹ Jcᵀ λ / dt and st.force = λ / dt per point (world); counts a solve that stops on the
    iteration limit in w.stats. (The model's parameters as numbers: one compile for both impulse models.)"""
    it, change = pgs(w.D, w.R, w.u_free, w.target, w.active, mu, w.lam, tol, max_iter)
    if change > tol:
        w.stats[0] += 1.0
        w.stats[2] = max(w.stats[2], change)
    w.stats[1] = max(w.stats[1], float(it))
    for j in range(a.shape[0]):
        s = 0.0
        for r in range(w.lam.shape[0]):
            s += w.Y[r, j] * w.lam[r]
        a[j] += s / dt
    frame = pts.frame
    for c in range(pts.body.shape[0]):
        for i in range(3):
            st.force[c, i] = (frame[0, i] * w.lam[3 * c] + frame[1, i] * w.lam[3 * c + 1]
                             + frame[2, i] * w.lam[3 * c + 2]) / dt


@kernel
def unilateral_rows(p, st, w, dt):
    """Every point in the solve, no compliance; target velocity of a normal row −g/dt for a gap g > 0
    (close it, do not cross it), −β g/dt for a penetration; 0 for the friction rows."""
    for r in range(w.target.shape[0]):
        c, i = r // 3, r % 3
        gap = -st.pen[c]
        w.active[c] = True
        w.R[r] = 0.0
        w.target[r] = 0.0 if i > 0 else (-gap / dt if gap > 0.0 else -p.penetration_correction * gap / dt)

