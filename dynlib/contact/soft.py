"""Soft (compliant) contact: a spring-damper normal force and regularised Coulomb friction per point.

For each contact point (`dynlib.contact.points`) against the ground half-space
``n·x <= height`` (n the unit normal), at the state (q, v) of a right-hand side
evaluation (so it works with every integrator):

- penetration depth ``p = height - n·x`` (> 0 inside the ground) and its rate
  ``ṗ = -n·ẋ``, with ``ẋ = Jp v`` the point's world velocity;
- normal force ``λ = max(k p + b ṗ, 0)`` when ``p > 0``, else 0 (SPEC §7:
  ``max(-k·p - b·ṗ, 0)`` with its p the signed distance ``n·x - height``),
  k = `stiffness` (N/m), b = `damping` (N s/m); the force never pulls;
- friction ``f_t = -μ λ u_t / sqrt(|u_t|² + ε²)``, u_t = ẋ - (n·ẋ) n the
  tangential slip velocity, μ = `friction`, ε = `slip` (m/s): Coulomb's law
  regularised so that |f_t| < μ λ and the force is smooth at u_t = 0 (a body
  on a slope below the friction angle creeps at about ε tan(θ)/(μ - tan θ)
  instead of sticking exactly).

The world force ``f = λ n + f_t`` at x joins the body wrenches ``f_ext`` of the
forward dynamics (`add_point_force`). At rest under gravity a point carrying
weight W sits at ``p = W / k``. With b = 0 and μ = 0 the contact is conservative
(potential ``½ k p²`` while p > 0). Stiff choices (large k, b or μλ/ε against
small effective masses) need a smaller dt, as any explicit penalty method.
O(nc · depth).
"""
from ..compiled import jit
from .points import add_point_force, point_jacobian, point_position


@jit
def soft_forces(oR, op, S, parent, idx_v, nvj, body, p, radius, normal, height, k, b, mu, eps, v,
                x, pen, force, Jp, fext):
    """Adds the soft contact forces at velocity v to fext (placements done); fills x, pen, force."""
    for c in range(body.shape[0]):
        bi = body[c]
        xc, fc = x[c], force[c]
        point_position(oR, op, bi, p[c], radius[c], normal, xc)
        pen[c] = height - (normal[0] * xc[0] + normal[1] * xc[1] + normal[2] * xc[2])
        fc[:] = 0.0
        if pen[c] <= 0.0:
            continue
        point_jacobian(oR, op, S, parent, idx_v, nvj, bi, xc, Jp)
        u0 = u1 = u2 = 0.0
        for j in range(v.shape[0]):
            u0 += Jp[0, j] * v[j]
            u1 += Jp[1, j] * v[j]
            u2 += Jp[2, j] * v[j]
        un = normal[0] * u0 + normal[1] * u1 + normal[2] * u2
        lam = max(k * pen[c] - b * un, 0.0)
        if lam == 0.0:
            continue
        t0, t1, t2 = u0 - un * normal[0], u1 - un * normal[1], u2 - un * normal[2]
        s = -mu * lam / (t0 * t0 + t1 * t1 + t2 * t2 + eps * eps) ** 0.5
        fc[0] = lam * normal[0] + s * t0
        fc[1] = lam * normal[1] + s * t1
        fc[2] = lam * normal[2] + s * t2
        add_point_force(oR, op, bi, xc, fc, fext)
