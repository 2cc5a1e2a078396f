"""A URDF's joint limits held in the simulation: position limits as a compliant limit torque, effort limits
as motor torque saturation; two steps of the one evaluation (`dynlib.sim.stages`), switched by data.

Position limits (``<limit lower upper>`` of revolute and prismatic joints; continuous joints and
free-flyers have none). The model, and why: a compliant, one-sided limit in the spirit of MuJoCo's
soft constraints (solref = (timeconst, dampratio)): past a limit, by r > 0 (q - upper, or lower - q),
the joint gets the torque that gives it, alone, the reference acceleration

    a_ref = -b v_out - k r,   b = 2 / timeconst,   k = 1 / (timeconst² dampratio²)

(v_out the velocity away from the range), scaled by the joint's effective inertia at q,
``1 / (M⁻¹)_kk`` (the inertia a torque on joint k meets with every other joint free: CRBA, then
the LTDL factor of M on its tree sparsity and one solve per joint past its limit), and clipped so that it
never pulls the joint outward (a limit pushes; it does not hold a joint that leaves it). It is a
generalized force summed into ``tau_total`` after the joint friction, so it works unchanged with every
integrator and every contact model (the contact stages see it as part of tau); it is a smooth function
of the state where it acts and exactly zero elsewhere, so a motion that does not reach a limit is bit
for bit the unlimited one, and rk4 keeps its order away from the limit event (only the event itself is
not smooth). A rigid limit (a unilateral constraint with restitution 0, as the `unilateral` contacts'
projected impulses) would hold the limit exactly, but only as a velocity jump between steps: the
semi-implicit Euler step alone, each evaluation of an rk4 step seeing another constraint state, and a
second solver beside the contact models'. Dissipation: the damping is critical (dampratio 1), so a
joint that hits its limit comes to rest on it without bouncing and the limit does no net positive work.

timeconst: MuJoCo's default 0.02 s lets a fast fall sink too deep (the kuka's joint_2 reaches its limit
at about 9 rad/s: v / (e ω) = 0.066 rad with ω = 50/s); ``TIMECONST = 0.004 s`` (ω = 250/s) keeps the
same fall within 0.02 rad, and a joint pressed by a static load a_free sinks a_free / k (gravity on the
kuka's shoulder: below 1e-3 rad). As MuJoCo does, the time constant is at least two steps
(``max(TIMECONST, 2 dt)``): ω dt <= 0.5, inside the stability region of every scheme (euler's is 2 on
this critically damped, real double pole).

Effort limits (``<limit effort>``): the controller's motor torque saturates at ±effort
(`saturate`), before the joint friction, so the recorded ``tau`` is the torque applied. A PD's gains
taken implicitly (`dynlib.sim.dynamics`, IMPLICIT_GAINS) would move the applied torque past the
bound after the acceleration stage: a saturated joint has no implicit gain (its torque does not
depend on the state), and a joint whose implicit torque ends past its bound is pinned to it and the
evaluation runs again (`over_effort`: at most once more, only at a saturation's onset).

Without limits (``limits=False``), the `Limits` record has empty arrays: both steps loop over nothing.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._numba.decorators import inline_kernel, kernel
from ..algorithms.crba import crba_kernel
from ..algorithms.linalg import ltdl, ltdl_solve
from ..core import joints as J

TIMECONST = 0.002  # s, the limit's time constant (MuJoCo's solref[0]; at least 2 dt)
DAMPRATIO = 1.0    # critical damping (MuJoCo's solref[1] default)


class Limits(NamedTuple):
    """The limits a run holds: position limits (the limited coordinates; none: empty) and effort limits
    (none: empty), with the workspace of both steps."""

    q_index: np.ndarray   # (nl,) int64 the q index of each coordinate with a position limit
    v_index: np.ndarray   # (nl,) int64 its v index
    lower: np.ndarray     # (nl,) its limits
    upper: np.ndarray     # (nl,)
    stiffness: float      # k = 1 / (timeconst² dampratio²), 1/s²
    damping: float        # b = 2 / timeconst, 1/s
    dt: float             # the run's step, s
    side: np.ndarray      # (nl,) +1: held at its upper limit in this evaluation, -1: at its lower, 0: free
    depth: np.ndarray     # (nl,) r: how far past that limit (< 0: the distance to it)
    force: np.ndarray     # (nv,) the limit torque of the last evaluation (zero on a joint inside its range)
    unit: np.ndarray      # (nv,) scratch: a unit torque
    x: np.ndarray         # (nv,) scratch: M⁻¹ times it
    effort: np.ndarray    # (nv,) the motor torque bounds (inf: none); empty: no saturation
    gain_m: np.ndarray    # (nv,) the implicit PD gains of the run (`dynamics.Implicit`), restored on joints that
    gain_v: np.ndarray    # (nv,) do not saturate; empty: no implicit gains
    pinned: np.ndarray    # (nv,) ±1: the joint's motor torque is held at ±effort in this evaluation; 0: free


def limits_record(model, dt, position, effort, gain_m, gain_v) -> Limits:
    """The Limits of a run of `model` at step dt: its position limits if `position`, its effort limits if `effort`
    (any finite one), the implicit gains (gain_m, gain_v) to restore."""
    nv = model.nv
    lo, hi = np.asarray(model.lower, float), np.asarray(model.upper, float)
    vi = np.array(held_coordinates(model) if position else [], dtype=np.int64)
    qi = np.array([int(model.arrays.idx_q[model.arrays.dof_body[k]]) for k in vi], dtype=np.int64)
    tc = max(TIMECONST, 2.0 * dt)
    bound = np.asarray(model.effort, float)
    saturates = effort and bool(np.any(np.isfinite(bound)))
    gains = saturates and bool(np.any(gain_m != 0) or np.any(gain_v != 0))
    none = np.zeros(0)
    return Limits(qi, vi, lo[qi].copy(), hi[qi].copy(), 1.0 / (tc * DAMPRATIO) ** 2, 2.0 / tc, float(dt),
                  np.zeros(qi.size), np.zeros(qi.size),
                  np.zeros(nv), np.zeros(nv), np.zeros(nv), bound.copy() if saturates else none,
                  gain_m.copy() if gains else none, gain_v.copy() if gains else none,
                  np.zeros(nv) if saturates else none)


def held_coordinates(model) -> list:
    """The v indices of the coordinates whose position limits a run holds: revolute and prismatic joints with a
    finite lower or upper limit, in coordinate order."""
    a, lo, hi = model.arrays, np.asarray(model.lower), np.asarray(model.upper)
    return [int(a.idx_v[i]) for i in range(model.nb)
            if a.jtype[i] in (J.REVOLUTE, J.PRISMATIC) and (np.isfinite(lo[a.idx_q[i]]) or np.isfinite(hi[a.idx_q[i]]))]


# ------------------------------------------------------------------ position limits

@kernel
def past_limits(q_index, v_index, lower, upper, dt, q, v, side, depth, force):
    """For each limited coordinate j: side[j] = +1 (its upper limit) or -1 (lower) when it is past that limit or
    would pass it within two steps at its velocity, else 0; depth[j] = how far past it (< 0: the distance to
    it). force = 0. Returns the number of coordinates with a side."""
    n = 0
    for k in range(force.shape[0]):
        force[k] = 0.0
    for j in range(q_index.shape[0]):
        x, vj = q[q_index[j]], v[v_index[j]]
        s = 1.0 if x - upper[j] > lower[j] - x else -1.0  # the nearer limit
        r = s * (x - upper[j] if s > 0.0 else x - lower[j])
        side[j] = s if (r > 0.0 or r + 2.0 * dt * s * vj > 0.0) else 0.0
        depth[j] = r
        if side[j] != 0.0:
            n += 1
    return n


@kernel
def hold_forces(dof_parent, LD, v_index, side, depth, k, b, dt, v, unit, x, force, tau_total):
    """force[v_index[j]] = the limit torque a_ref / (M⁻¹)_kk of each coordinate with a side (LD the LTDL factor
    of M): past the limit a_ref = -b v_out - k r; moving out faster than it can stop at the limit within a step,
    at most the deceleration that stops it there; only pushing inward. tau_total += force."""
    for j in range(v_index.shape[0]):
        s = side[j]
        if s == 0.0:
            continue
        c = v_index[j]
        r, vo = depth[j], s * v[c]
        a_ref = -k * r - b * vo if r > 0.0 else 0.0
        if vo > 0.0:
            allowed = max(-r - dt * vo, 0.0) / dt  # reaches the limit in two steps, whatever the scheme
            if vo > allowed:
                a_ref = min(a_ref, (allowed - vo) / dt)
        if a_ref < 0.0:
            unit[c] = 1.0
            ltdl_solve(LD, dof_parent, unit, x)
            unit[c] = 0.0
            force[c] = s * a_ref / x[c]
            tau_total[c] += force[c]


@inline_kernel
def limit_torques(m, d, lim, q, v, tau_total):
    """tau_total += the limit torques at (q, v), in lim.force (nv,) (zero where no joint is past a limit)."""
    if lim.q_index.shape[0] == 0:
        return
    if past_limits(lim.q_index, lim.v_index, lim.lower, lim.upper, lim.dt, q, v, lim.side, lim.depth,
                   lim.force) == 0:
        return
    crba_kernel(m, d, q, d.M)
    if ltdl(d.M, m.dof_parent, d.L):
        hold_forces(m.dof_parent, d.L, lim.v_index, lim.side, lim.depth, lim.stiffness, lim.damping, lim.dt, v,
                    lim.unit, lim.x, lim.force, tau_total)


# ------------------------------------------------------------------ effort limits

@kernel
def saturate(effort, pinned, gain_m0, gain_v0, gain_m, gain_v, tau):
    """tau = the motor torque clipped to ±effort (a pinned joint: pinned·effort); the implicit gains (gain_m,
    gain_v, of `dynamics.Implicit`) zero on a saturated joint, the run's own (gain_m0, gain_v0) elsewhere."""
    gains = gain_m0.shape[0] > 0
    for k in range(effort.shape[0]):
        e = effort[k]
        held = True
        if pinned[k] != 0.0:
            tau[k] = pinned[k] * e
        elif tau[k] > e:
            tau[k] = e
        elif tau[k] < -e:
            tau[k] = -e
        else:
            held = False
        if gains:
            gain_m[k] = 0.0 if held else gain_m0[k]
            gain_v[k] = 0.0 if held else gain_v0[k]


@kernel
def over_effort(effort, gain_m0, pinned, tau):
    """After the implicit gains' torque: pin (pinned = ±1) every joint with gains whose applied torque tau is
    past its bound; whether any was. Without implicit gains: False (nothing moves tau after `saturate`)."""
    if gain_m0.shape[0] == 0:
        return False
    over = False
    for k in range(effort.shape[0]):
        if abs(tau[k]) > effort[k] and pinned[k] == 0.0:
            pinned[k] = math.copysign(1.0, tau[k])
            over = True
    return over


@kernel
def unpin(pinned):
    for k in range(pinned.shape[0]):
        pinned[k] = 0.0
