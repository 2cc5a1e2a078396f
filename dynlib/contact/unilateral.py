"""Unilateral contact: velocity-level time stepping with Coulomb friction, projected Gauss–Seidel.

One step from (q, v) to (q+, v+) (semi-implicit Euler on impulses, Stewart–Trinkle
/ Anitescu style; the scenario's `integrator` must be ``semi-implicit``):

1. free velocity ``v_free = v + dt M⁻¹ (τ − h)`` (M + dt B under implicit joint friction);
2. per contact point c (`dynlib.contact.points`), the rows of its Jacobian in the
   contact frame (n, t1, t2) — ``Jc`` (3 nc, nv) — and the Delassus matrix
   ``D = Jc M⁻¹ Jcᵀ`` (Cholesky of M);
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

The same solver with a compliance term on the diagonal of D is the relaxed model
(`dynlib.contact.relaxed`). O(nv³ + nc nv² + iterations · nc²) per step.
"""
from ..compiled import jit
from ..algorithms.linalg import cholesky, cholesky_solve
from .points import delassus, point_jacobian, point_position
from .relaxed import relaxed_row


@jit
def contact_rows(oR, op, S, parent, idx_v, nvj, body, p, radius, frame, height, x, pen, Jp, Jc):
    """x, pen = h − n·x and Jc rows (n, t1, t2)·Jp of every point (placements done)."""
    nv = Jp.shape[1]
    for c in range(body.shape[0]):
        xc = x[c]
        point_position(oR, op, body[c], p[c], radius[c], frame[0], xc)
        pen[c] = height - (frame[0, 0] * xc[0] + frame[0, 1] * xc[1] + frame[0, 2] * xc[2])
        point_jacobian(oR, op, S, parent, idx_v, nvj, body[c], xc, Jp)
        for i in range(3):
            for j in range(nv):
                Jc[3 * c + i, j] = frame[i, 0] * Jp[0, j] + frame[i, 1] * Jp[1, j] + frame[i, 2] * Jp[2, j]


@jit
def pgs(D, R, w, target, active, mu, lam, tol, max_iter):
    """Projected Gauss–Seidel on min ½ λᵀ(D + diag R)λ + λᵀ(w − target), λ_c in the friction cone.

    w = Jc v_free; rows (n, t1, t2) per point; inactive points keep λ = 0.
    Returns (sweeps, last change relative to max(max λn, 1e-12 N s))."""
    nc = active.shape[0]
    m = 3 * nc
    for c in range(nc):
        if not active[c]:
            lam[3 * c] = lam[3 * c + 1] = lam[3 * c + 2] = 0.0
    change = 0.0
    for it in range(1, max_iter + 1):
        change, big = 0.0, 1e-12
        for c in range(nc):
            if not active[c]:
                continue
            o0, o1, o2 = lam[3 * c], lam[3 * c + 1], lam[3 * c + 2]
            r = 3 * c
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
            change = max(change, abs(lam[3 * c] - o0), abs(lam[3 * c + 1] - o1), abs(lam[3 * c + 2] - o2))
            big = max(big, abs(lam[3 * c]))
        change /= big
        if change <= tol:
            return it, change
    return max_iter, change


@jit
def impulse_accel(oR, op, S, parent, idx_v, nvj, body, p, radius, frame, height, relaxed, mu, beta, gains, tol,
                  max_iter, dt, M, L, tau_h, v, x, pen, force, Jp, Jc, Y, D, R, w, target, active, lam, stats, a):
    """a = (v+ − v)/dt of one time step with contact impulses (placements and M, τ − h done);
    force = λ/dt per point (world). False if M is not positive definite."""
    nc, nv = body.shape[0], v.shape[0]
    if not cholesky(M, L):
        return False
    cholesky_solve(L, tau_h, a)  # free acceleration
    contact_rows(oR, op, S, parent, idx_v, nvj, body, p, radius, frame, height, x, pen, Jp, Jc)
    delassus(L, Jc, Y, D)
    for r in range(3 * nc):
        s = 0.0
        u = 0.0
        for j in range(nv):
            s += Jc[r, j] * (v[j] + dt * a[j])
            u += Jc[r, j] * v[j]
        w[r] = s
        c, i = r // 3, r % 3
        gap = -pen[c]
        if relaxed:
            active[c] = gap < 0.0
            R[r], target[r] = relaxed_row(D[r, r], u, gap, i == 0, dt, gains[0], gains[1])
        else:
            active[c] = True
            R[r] = 0.0
            target[r] = 0.0 if i > 0 else (-gap / dt if gap > 0.0 else -beta * gap / dt)
    it, change = pgs(D, R, w, target, active, mu, lam, tol, max_iter)
    if change > tol:
        stats[0] += 1.0
        stats[2] = max(stats[2], change)
    stats[1] = max(stats[1], float(it))
    for j in range(nv):
        s = 0.0
        for r in range(3 * nc):
            s += Y[r, j] * lam[r]
        a[j] += s / dt
    for c in range(nc):
        for i in range(3):
            force[c, i] = (frame[0, i] * lam[3 * c] + frame[1, i] * lam[3 * c + 1]
                           + frame[2, i] * lam[3 * c + 2]) / dt
    return True
