"""Relaxed contact: the unilateral problem with MuJoCo-style soft constraints (convex, unique).

Same time step as `dynlib.contact.unilateral` (free velocity, contact rows
(n, t1, t2) per point, Delassus matrix D, PGS with the exact friction cone),
but each row r of a point in contact (gap g = n·x − height < 0; points above
the ground are left out) is softened as in MuJoCo's constraint model:

- impedance ``d = 0.9`` (MuJoCo's solimp, taken constant);
- reference acceleration ``a_ref = −b u − k g`` (normal row; friction rows
  ``−b u``), ``b = 2 / (d τ)``, ``k = 1 / (d² τ² ζ²)`` with τ = `time_constant`
  (s, default 0.02) and ζ = `damping_ratio` (default 1): the penetration behaves
  like a mass-spring-damper of that time constant and damping ratio;
- compliance ``R_r = (1 − d)/d · D_rr`` on the diagonal.

The impulses solve ``min ½ λᵀ (D + R) λ + λᵀ (Jc v_free − u_ref)`` over the
friction cones, ``u_ref = u + dt a_ref``: with R > 0 the objective is strictly
convex, so the solution is unique (and PGS converges to it from any warm
start). Consequences: contacts sink a little under load — at rest a point
carrying its share W with Delassus entry D_nn sits at depth
``(1 − d)/d · D_nn W / k`` (for a lone ball of mass m, ``(1 − d)/d · g / k``) — and
friction is slightly compliant (slow creep under a tangential load below μ λn).
"""
from ..compiled import jit

IMPEDANCE = 0.9


@jit
def relaxed_row(Drr, u, gap, normal_row, dt, tc, zeta):
    """(R_r, u_ref) of one contact row: compliance and target velocity (see the module docstring)."""
    d = IMPEDANCE
    b = 2.0 / (d * tc)
    k = 1.0 / (d * d * tc * tc * zeta * zeta)
    a_ref = -b * u - (k * gap if normal_row else 0.0)
    return (1.0 - d) / d * Drr, u + dt * a_ref
