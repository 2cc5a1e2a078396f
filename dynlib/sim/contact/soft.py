"""Soft (compliant) contact: a spring-damper normal force and regularised Coulomb friction per point.

For each contact point (`dynlib.sim.contact.points`) against the ground half-space
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

`SoftParams` (stiffness, damping, friction, slip_velocity: the scenario's keys)
are the parameters of `soft_forces`, which the ``body_forces`` stage of the
simulation step (`dynlib.sim.stages`) runs after the external wrenches when the
contact model is soft.
"""
from typing import NamedTuple

from ..._numba.decorators import inline_kernel
from .points import add_point_force, point_jacobian, point_position


class SoftParams(NamedTuple):
    stiffness: float = 1.0e5     # k, N/m
    damping: float = 1.0e3       # b, N s/m
    friction: float = 0.8        # μ
    slip_velocity: float = 0.01  # ε, m/s


@inline_kernel
def soft_forces(m, d, p, pts, v, w, fext):
    """fext += the soft contact forces at (q, v) (placements at q done); w.x, w.pen, w.force of every point."""
    n = pts.normal
    for c in range(pts.body.shape[0]):
        b, xc, fc = pts.body[c], w.x[c], w.force[c]
        point_position(d.oR, d.op, b, pts.p[c], pts.radius[c], n, xc)
        w.pen[c] = pts.height - (n[0] * xc[0] + n[1] * xc[1] + n[2] * xc[2])
        fc[:] = 0.0
        if w.pen[c] <= 0.0:
            continue
        Jp = w.Jp
        point_jacobian(d.oR, d.op, m.S, m.parent, m.idx_v, m.nvj, b, xc, Jp)
        u0 = u1 = u2 = 0.0
        for j in range(v.shape[0]):
            u0 += Jp[0, j] * v[j]
            u1 += Jp[1, j] * v[j]
            u2 += Jp[2, j] * v[j]
        un = n[0] * u0 + n[1] * u1 + n[2] * u2
        lam = max(p.stiffness * w.pen[c] - p.damping * un, 0.0)
        if lam == 0.0:
            continue
        t0, t1, t2 = u0 - un * n[0], u1 - un * n[1], u2 - un * n[2]
        s = -p.friction * lam / (t0 * t0 + t1 * t1 + t2 * t2 + p.slip_velocity * p.slip_velocity) ** 0.5
        fc[0] = lam * n[0] + s * t0
        fc[1] = lam * n[1] + s * t1
        fc[2] = lam * n[2] + s * t2
        add_point_force(d.oR, d.op, b, xc, fc, fext)
