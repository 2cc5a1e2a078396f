"""Relaxed contact: the unilateral problem with MuJoCo-style soft constraints (convex, unique).

Same time step as `dynlib.sim.contact.unilateral` (free velocity, contact rows
(n, t1, t2) per point, Delassus matrix D, PGS with the exact friction cone),
but each row r of a point in contact (gap g = n·x − height < 0; points above
the ground are left out) is softened as in MuJoCo's constraint model:

- impedance ``d = 0.9`` (MuJoCo's solimp, taken constant);
- reference acceleration ``a_ref = −b u − k g`` (normal row; friction rows
  ``−b u``), ``b = 2 / (d τ)``, ``k = 1 / (d² τ² ζ²)`` with τ = `time_constant`
  (s, default 0.02) and ζ = `damping_ratio` (default 1): the penetration behaves
  like a mass-spring-damper of that time constant and damping ratio. Or MuJoCo's
  direct form (its negative ``solref``): `stiffness_per_mass` (1/s²) and
  `damping_per_mass` (1/s), a stiffness and a damping per unit of the row's
  effective mass (not soft contact's `stiffness` in N/m and `damping` in N·s/m),
  give ``k = stiffness_per_mass / d²``, ``b = damping_per_mass / d`` (a key not
  given is 0); the two forms cannot be mixed;
- compliance ``R_r = (1 − d)/d · D_rr`` on the diagonal.

The impulses solve ``min ½ λᵀ (D + R) λ + λᵀ (Jc v_free − u_ref)`` over the
friction cones, ``u_ref = u + dt a_ref``: with R > 0 the objective is strictly
convex, so the solution is unique (and PGS converges to it from any warm
start). Consequences: contacts sink a little under load — at rest a point
carrying its share W with Delassus entry D_nn sits at depth
``(1 − d)/d · D_nn W / k`` (for a lone ball of mass m, ``(1 − d)/d · g / k``) — and
friction is slightly compliant (slow creep under a tangential load below μ λn).

`RelaxedContact` is the model's pair: `RelaxedParams` (friction, time_constant,
damping_ratio or stiffness_per_mass, damping_per_mass, tolerance, max_iterations:
the scenario's keys) and its own impulse workspace (`unilateral.ImpulseWork`), on
which the ``acceleration`` stage of the simulation step runs when the contact model
is relaxed (`dynlib.sim.stages.impulse_acceleration`): the free step, PGS and the
impulses of `dynlib.sim.contact.unilateral`, with the rows of `relaxed_rows`.
"""
import math
from typing import NamedTuple

from ..._numba.decorators import kernel
from .unilateral import ImpulseWork

IMPEDANCE = 0.9


class RelaxedParams(NamedTuple):
    friction: float = 0.8        # μ
    time_constant: float = 0.02  # τ, s
    damping_ratio: float = 1.0   # ζ
    tolerance: float = 1e-8      # PGS: relative change that ends the sweeps
    max_iterations: int = 200    # PGS: sweep limit
    stiffness_per_mass: float = math.nan  # direct form: k·d², 1/s² (NaN, both: not given, the time-constant form)
    damping_per_mass: float = math.nan    # direct form: b·d, 1/s
    integrator = "semi-implicit"  # the scheme the model steps with (not a parameter)


class RelaxedContact(NamedTuple):
    """Relaxed contact's parameters and workspace (zero-size when the simulation's model is another)."""

    params: RelaxedParams
    work: ImpulseWork


# the two ways of giving the constraint's spring and damper (scenario keys; one or the other)
TIME_CONSTANT_FORM = ("time_constant", "damping_ratio")
DIRECT_FORM = ("stiffness_per_mass", "damping_per_mass")
# the direct form's keys before they had their own names (an error naming the new key): new key, its unit, and
# the unit of the old key's meaning (soft contact's)
RENAMED = {"stiffness": ("stiffness_per_mass", "1/s²", "N/m"), "damping": ("damping_per_mass", "1/s", "N·s/m")}


@kernel
def relaxed_row(Drr, u, gap, normal_row, dt, tc, zeta, k_direct, b_direct):
    """(R_r, u_ref) of one contact row: compliance and target velocity (see the module docstring)."""
    d = IMPEDANCE
    if math.isnan(k_direct) and math.isnan(b_direct):
        b = 2.0 / (d * tc)
        k = 1.0 / (d * d * tc * tc * zeta * zeta)
    else:  # MuJoCo's direct form
        b = (0.0 if math.isnan(b_direct) else b_direct) / d
        k = (0.0 if math.isnan(k_direct) else k_direct) / (d * d)
    a_ref = -b * u - (k * gap if normal_row else 0.0)
    return (1.0 - d) / d * Drr, u + dt * a_ref


@kernel
def relaxed_rows(p, st, w, dt):
    """Points below the ground in the solve (the others keep λ = 0); compliance R and target velocity of every row."""
    for r in range(w.target.shape[0]):
        c, i = r // 3, r % 3
        gap = -st.pen[c]
        w.active[c] = gap < 0.0
        w.R[r], w.target[r] = relaxed_row(w.D[r, r], w.u[r], gap, i == 0, dt, p.time_constant, p.damping_ratio,
                                       p.stiffness_per_mass, p.damping_per_mass)

