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

`SoftContact` is the model's pair: `SoftParams` (stiffness, damping, friction,
slip_velocity: the scenario's keys) and its workspace `SoftWork`, on which
`soft_forces` runs in the ``body_forces`` stage of the simulation step
(`dynlib.sim.stages`), after the external wrenches, when the contact model is soft.
"""
from typing import NamedTuple

import numpy as np

from ..._numba.decorators import inline_kernel
from .points import add_point_force, point_jacobian, point_position


class SoftParams(NamedTuple):
    stiffness: float = 1.0e5     # k, N/m
    damping: float = 1.0e3       # b, N s/m
    friction: float = 0.8        # μ
    slip_velocity: float = 0.01  # ε, m/s


class SoftWork(NamedTuple):
    Jp: np.ndarray  # (3, nv) one point's Jacobian


class SoftContact(NamedTuple):
    """Soft contact's parameters and workspace (zero-size when the simulation's model is another)."""

    params: SoftParams
    work: SoftWork


def soft_work(nc, nv) -> SoftWork:
    return SoftWork(np.zeros((3, nv)))


@inline_kernel
def soft_forces(m, d, sc, pts, st, v, fext):
    """fext += the soft contact forces at (q, v) (placements at q done; sc: `SoftContact`); st.x, st.pen,
    st.force of every point."""
    n, p = pts.normal, sc.params
    for c in range(pts.body.shape[0]):
        b, xc, fc = pts.body[c], st.x[c], st.force[c]
        point_position(d.oR, d.op, b, pts.p[c], pts.radius[c], n, xc)
        st.pen[c] = pts.height - (n[0] * xc[0] + n[1] * xc[1] + n[2] * xc[2])
        fc[:] = 0.0
        if st.pen[c] <= 0.0:
            continue
        Jp = sc.work.Jp
        point_jacobian(d.oR, d.op, m.S, m.parent, m.idx_v, m.nvj, b, xc, Jp)
        u0 = u1 = u2 = 0.0
        for j in range(v.shape[0]):
            u0 += Jp[0, j] * v[j]
            u1 += Jp[1, j] * v[j]
            u2 += Jp[2, j] * v[j]
        un = n[0] * u0 + n[1] * u1 + n[2] * u2
        lam = max(p.stiffness * st.pen[c] - p.damping * un, 0.0)
        if lam == 0.0:
            continue
        t0, t1, t2 = u0 - un * n[0], u1 - un * n[1], u2 - un * n[2]
        s = -p.friction * lam / (t0 * t0 + t1 * t1 + t2 * t2 + p.slip_velocity * p.slip_velocity) ** 0.5
        fc[0] = lam * n[0] + s * t0
        fc[1] = lam * n[1] + s * t1
        fc[2] = lam * n[2] + s * t2
        add_point_force(d.oR, d.op, b, xc, fc, fext)
