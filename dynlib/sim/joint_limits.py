"""A URDF's joint limits held in the simulation: position limits as a one-sided limit torque, effort limits
as motor torque saturation; steps of the one evaluation (`dynlib.sim.stages`), switched by data.

Position limits (``<limit lower upper>`` of revolute and prismatic joints; continuous joints and
free-flyers have none). The model, and why: a unilateral limit in the spirit of MuJoCo's soft
constraints (solref = (timeconst, dampratio), impedance 1), solved as a generalized force. At each
evaluation, a coordinate at or near its limit (past it, or reaching it within two steps at its
velocity: `past_limits`) gets a bound on its outward acceleration (`limit_targets`):

- past the limit by r > 0, MuJoCo's reference acceleration ``-b v_out - k r`` with
  ``b = 2 / timeconst``, ``k = 1 / (timeconst² dampratio²)``: a critically damped return to the limit;
- moving outward faster than it can stop at the limit within the next step, the deceleration that
  stops it there (a speculative stop, as speculative contacts in game engines): a joint whose
  velocity would carry it past the limit in one step (the panda's wrist reaches it at 36 rad/s,
  0.036 rad per step) is stopped at it, not a step's travel beyond.

The limit torques are the smallest inward torques λ >= 0 that meet those bounds given the acceleration
the other forces produce, ``a_free = M⁻¹ (tau_total - h)`` (one ABA with the body wrenches), with the
coupling between joints at their limits through the columns of ``M⁻¹`` (an O(n) solve each on that ABA's
factorization, `dynlib.algorithms.aba.aba_solve`; projected Gauss-Seidel on the few joints at a limit,
`hold_forces`; exact for one). So a
motor pressing a light joint against its limit (arm7's joint1 at its 176 N·m: 1.8e4 rad/s² free) is
held at it, not sunk to a_free / k. The torque never pulls (a limit pushes; it does not hold a joint
that leaves it) and is summed into ``tau_total`` after the joint friction and the body wrenches, so it
works unchanged with every integrator and every contact model (the contact stages see it as part of
tau; their own constraint forces are not in a_free). It is exactly zero where no joint is at or near a
limit: a motion that stays away from the limits is bit for bit the unlimited one, and rk4 keeps its
order there (only the limit event is not smooth). Energy: the bounds only slow an outward motion and
return a penetrated joint critically damped, so a limit takes energy and never gives it (the
`dynlib.runs.checks` ``limit_work`` check).

Why not the alternatives. A compliant limit force alone (MuJoCo's solref with the effective inertia,
no a_free) penetrates by v / (e ω) at impact and a_free / k under a load: with MuJoCo's default
timeconst 0.02 s the kuka's fall sinks 0.066 rad, the panda's wrist 0.06 rad even at 2 ms. A
velocity projection after the step (rigid, restitution 0, as the `unilateral` contacts) lives
between steps: it holds for semi-implicit Euler, but each of rk4's evaluations would see another
constraint state, and it is a second solver beside the contact models'. The bound here is an
acceleration-level constraint inside each evaluation: the same for every scheme.

timeconst: ``max(TIMECONST, 2 dt)``, 2 ms at the default 1 ms step (MuJoCo's rule: at least two
steps; ω dt <= 0.5, inside every scheme's stability region on this critically damped pole). The
cost is paid only at a limit, and little there: the acceleration with the limit torques is
``a_free + Σ_j M⁻¹ e_j λ_j``, which is the acceleration stage's own when that stage is the plain ABA
(no implicit terms, no contact model that constrains the motion): then that stage does not run again,
and a step at a limit costs one ABA and one O(n) solve per joint held, about a free step
(`benchmarks/bench_limits.py`). Elsewhere (implicit friction or gains, bilateral, unilateral or relaxed
contacts) the stage runs on tau_total with the limit torques, as before.

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
from ..algorithms.aba import aba_kernel, aba_solve
from ..algorithms.crba import crba_kernel
from ..algorithms.linalg import ltdl, ltdl_solve
from ..algorithms.rnea import rnea_kernel
from ..core import joints as J
from .contact import BILATERAL, RELAXED, UNILATERAL
from .dynamics import FREE
from .mimic import couple_bias, couple_matrix

TIMECONST = 0.002  # s, the limit's time constant (MuJoCo's solref[0]; at least 2 dt)
DAMPRATIO = 1.0    # critical damping (MuJoCo's solref[1] default)
SWEEPS = 30        # projected Gauss-Seidel sweeps over the joints at their limits, at most
TOLERANCE = 1e-10  # rad/s²: ... until no joint's acceleration changes by more


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
    target: np.ndarray    # (nl,) the largest outward acceleration allowed (inf: none)
    lam: np.ndarray       # (nl,) the inward limit torque
    cols: np.ndarray      # (nl, nv) M⁻¹ e_j of each coordinate with a bound
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
                  np.zeros(qi.size), np.zeros(qi.size), np.zeros(qi.size), np.zeros(qi.size), np.zeros((qi.size, nv)),
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
def limit_targets(v_index, side, depth, k, b, dt, v, target):
    """target[j] = the largest outward acceleration coordinate j with a side may have (inf: no bound): past
    its limit -b v_out - k r; moving out faster than it can stop at the limit within a step, at most the
    deceleration that stops it there. Returns the number of bounds."""
    n = 0
    for j in range(v_index.shape[0]):
        target[j] = math.inf
        s = side[j]
        if s == 0.0:
            continue
        r, vo = depth[j], s * v[v_index[j]]
        a_t = -k * r - b * vo if r > 0.0 else math.inf
        if vo > 0.0:
            allowed = max(-r - dt * vo, 0.0) / dt  # reaches the limit in two steps, whatever the scheme
            if vo > allowed:
                a_t = min(a_t, (allowed - vo) / dt)
        target[j] = a_t
        if a_t < math.inf:
            n += 1
    return n


@kernel
def hold_forces(v_index, side, target, cols, a, lam, force, tau_total):
    """force = the smallest inward limit torques λ_j >= 0 (projected Gauss-Seidel, exact for one joint) that
    keep each bounded coordinate's outward acceleration at most target[j], from the acceleration without them
    a = M⁻¹ (tau_total - h) and the columns cols[j] = M⁻¹ e_j of the bounded coordinates; a += M⁻¹ force (the
    acceleration with them), tau_total += force."""
    nv = a.shape[0]
    for j in range(v_index.shape[0]):
        lam[j] = 0.0
    for _ in range(SWEEPS):
        change = 0.0
        for j in range(v_index.shape[0]):
            if target[j] == math.inf:
                continue
            c, s = v_index[j], side[j]
            new = max(0.0, lam[j] + (s * a[c] - target[j]) / cols[j, c])
            step = new - lam[j]
            if step != 0.0:
                lam[j] = new
                for i in range(nv):
                    a[i] -= s * step * cols[j, i]
                change = max(change, abs(step) * cols[j, c])
        if change <= TOLERANCE:
            break
    for j in range(v_index.shape[0]):
        if lam[j] > 0.0:
            c = v_index[j]
            force[c] = -side[j] * lam[j]
            tau_total[c] += force[c]


@inline_kernel
def limit_torques(m, d, lim, im, cm, e, q, v, a):
    """e.tau_total += the limit torques at (q, v) under e.tau_total and the body wrenches e.fext, in lim.force
    (nv,) (zero where no joint is at or near a limit). The acceleration without them is one ABA, the columns
    M⁻¹ e_j of the joints at a limit one O(n) solve each on its factorization (`aba_solve`). True when `a` is
    then the acceleration stage's own (the plain ABA: im.mode FREE, no contact model that constrains the
    motion), which need not run again; False otherwise (no limit acted, or another stage)."""
    if lim.q_index.shape[0] == 0:
        return False
    if past_limits(lim.q_index, lim.v_index, lim.lower, lim.upper, lim.dt, q, v, lim.side, lim.depth,
                   lim.force) == 0:
        return False
    if limit_targets(lim.v_index, lim.side, lim.depth, lim.stiffness, lim.damping, lim.dt, v, lim.target) == 0:
        return False
    if e.coupling.dof.shape[0] > 0:  # mimic joints: the coupled robot's dense M (`dynlib.sim.mimic`)
        if coupled_free_motion(m, d, lim, e, q, v):
            hold_forces(lim.v_index, lim.side, lim.target, lim.cols, lim.x, lim.lam, lim.force, e.tau_total)
        return False
    aba_kernel(m, d, q, v, e.tau_total, e.fext, m.gravity, d.zeros_v, lim.x)
    for j in range(lim.v_index.shape[0]):
        if lim.target[j] < math.inf:
            lim.unit[lim.v_index[j]] = 1.0
            aba_solve(m.parent, m.idx_v, m.nvj, m.S, d.lR, d.lp, d.U, d.Dinv, d.f, d.u, d.a, lim.unit, lim.cols[j])
            lim.unit[lim.v_index[j]] = 0.0
    hold_forces(lim.v_index, lim.side, lim.target, lim.cols, lim.x, lim.lam, lim.force, e.tau_total)
    if im.mode != FREE or cm.kind == BILATERAL or cm.kind == UNILATERAL or cm.kind == RELAXED:
        return False
    for k in range(a.shape[0]):
        a[k] = lim.x[k]
    return True


@inline_kernel
def coupled_free_motion(m, d, lim, e, q, v):
    """lim.x = the coupled robot's acceleration without the limits, G^T M G a = G^T (tau_total - h) (embedded:
    a follower's entry 0), and lim.cols[j] = (G^T M G)⁻¹ e_j of the bounded coordinates, by CRBA and one LTDL
    (the ABA's factorization is the tree's, not the coupled robot's); False when the LTDL fails (M not
    positive definite: no limit torque)."""
    crba_kernel(m, d, q, d.M)
    couple_matrix(e.coupling, d.M)
    if not ltdl(d.M, m.dof_parent, d.L):
        return False
    rnea_kernel(m, d, q, v, d.zeros_v, e.fext, m.gravity, d.h)
    couple_bias(e.coupling, d.h, e.tau_total)
    for i in range(lim.x.shape[0]):
        lim.x[i] = e.tau_total[i] - d.h[i]
    ltdl_solve(d.L, m.dof_parent, lim.x, lim.x)
    for j in range(lim.v_index.shape[0]):
        if lim.target[j] < math.inf:
            lim.unit[lim.v_index[j]] = 1.0
            ltdl_solve(d.L, m.dof_parent, lim.unit, lim.cols[j])
            lim.unit[lim.v_index[j]] = 0.0
    return True


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
