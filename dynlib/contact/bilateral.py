"""Bilateral contact: contact points held in place by acceleration-level equality constraints.

Each point c (`dynlib.contact.points`) is held at a target x*_c (its world
position at t = 0 unless targets are given). With ``Jc`` the (3 nc, nv) stacked
point Jacobians (world-aligned, ``ẋ = Jc v``) and ``J̇c v`` the points' classical
accelerations at zero joint acceleration (from the bias pass of
`dynlib.algorithms.kinematics.motion`), the constrained dynamics are the KKT system

    [ M   Jcᵀ ] [  a ]   [ τ − h ]
    [ Jc   0  ] [ −λ ] = [   γ   ],     γ = −J̇c v − kp (x − x*) − kd ẋ

(Baumgarte stabilisation: the position error obeys ë + kd ė + kp e = 0; gains
`baumgarte_kp` (1/s²), `baumgarte_kd` (1/s), default ω², 2ω with ω = 100 rad/s).
It is solved through its Schur complement: a Cholesky of M (``M + dt B`` under
implicit joint friction), ``a0 = M⁻¹ (τ − h)``, ``Y = M⁻¹ Jcᵀ``, the Delassus
matrix ``D = Jc M⁻¹ Jcᵀ`` (plus ``1e-12 · max diag(D)`` on its diagonal, so
that redundant points — a box's eight corners — still factor; the forces then
take the minimum-norm split), ``D λ = γ − Jc a0``, ``a = a0 + Y λ``. λ_c is the
world force on the robot at point c: it may pull. Cost O(nv³ + nc nv² + nc³)
per evaluation, inside the compiled loop.
"""
from ..compiled import jit
from ..algorithms.linalg import cholesky, cholesky_solve
from .points import delassus, point_jacobian, point_position


@jit
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


@jit
def bilateral_accel(oR, op, S, parent, idx_v, nvj, bv, ba, body, p, radius, normal, height, target, kp, kd,
                    M, L, tau_h, v, x, pen, force, Jc, Y, D, DL, gam, lam, bias, a):
    """a = the constrained acceleration, force = λ per point (placements, M, tau_h = τ − h and the
    bias pass bv, ba done). False if M or D is not positive definite."""
    nc, nv = body.shape[0], v.shape[0]
    for c in range(nc):
        xc = x[c]
        point_position(oR, op, body[c], p[c], radius[c], normal, xc)
        pen[c] = height - (normal[0] * xc[0] + normal[1] * xc[1] + normal[2] * xc[2])
        point_jacobian(oR, op, S, parent, idx_v, nvj, body[c], xc, Jc[3 * c:3 * c + 3])
        point_bias(oR, op, bv, ba, body[c], xc, bias)
        for i in range(3):
            u = 0.0
            for j in range(nv):
                u += Jc[3 * c + i, j] * v[j]
            gam[3 * c + i] = -bias[i] - kp * (xc[i] - target[c, i]) - kd * u
    # Schur complement: a0 = M^-1 (τ - h), Y = M^-1 Jcᵀ, D = Jc Y
    if not cholesky(M, L):
        return False
    cholesky_solve(L, tau_h, a)
    m = 3 * nc
    delassus(L, Jc, Y, D)
    dmax = 0.0
    for r in range(m):
        s = 0.0
        for j in range(nv):
            s += Jc[r, j] * a[j]
        lam[r] = gam[r] - s
        dmax = max(dmax, D[r, r])
    for r in range(m):
        D[r, r] += 1e-12 * dmax
    if not cholesky(D, DL):
        return False
    cholesky_solve(DL, lam, lam)
    for j in range(nv):
        s = 0.0
        for r in range(m):
            s += Y[r, j] * lam[r]
        a[j] += s
    for c in range(nc):
        for i in range(3):
            force[c, i] = lam[3 * c + i]
    return True
