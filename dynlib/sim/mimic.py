"""Mimic joints in the simulation: the loop integrates the coupled robot, one coordinate per leader and followers.

The design, and why. A URDF ``<mimic>`` makes a follower's position ``multiplier * q_leader + offset``
(`dynlib.core.mimic`: ``v = G v_r``). The simulation runs the coupled robot's exact dynamics in reduced
coordinates, as Pinocchio >= 3.4's mimic models do::

    a_r = (Gᵀ M̃ G)⁻¹ Gᵀ (tau_total − h),     a = G a_r

with M̃ the matrix the acceleration stage forms (M, plus the implicit joint friction and PD gains'
diagonal), and every contact Jacobian ``J G``. It is done inside the one compiled loop, on the tree's
full state, by a few kernels at the places where the stages meet M (`dynlib.sim.stages`): the state stays
the tree's (q, v of every joint, what the trajectory files hold), the integrators are unchanged (rk4,
semi-implicit, euler: each step is a linear combination of states and accelerations of the form G x, so
the coupling is kept to round-off, and `hold_state` sets each follower from its leader after every step),
and the stages that form M (`dynamics.mass_and_bias`: every contact model's prelude, and the coupled
acceleration without contacts) project it:

- `couple_system`: ``M̃ ← Gᵀ M̃ G`` and ``tau_h ← Gᵀ tau_h`` in *embedded* form: the (nv, nv) matrix keeps
  the tree's indices, the leader's row and column gather its followers' (through the multiplier), a
  follower's row and column become the identity's and its right-hand side zero. A factor of that matrix
  solves the coupled system and leaves a follower's entry zero (`expand` then sets it to
  ``multiplier * a_leader``). The coupled matrix is dense across branches (a gripper's fingers), so a
  mimic model's simulation factors it with a chain ``dof_parent`` (``k - 1``: `chain`), a dense LᵀDL,
  O(nv³) for the few DoFs of a robot with a gripper; a model without mimic joints keeps its tree.
- `couple_rows`: ``J ← J G`` for the contact rows (bilateral, unilateral, relaxed): their Delassus matrix
  ``J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ`` and impulses are then the coupled robot's;
- the position limits (`dynlib.sim.joint_limits`) use the same projection (`couple_bias`), on the
  leader's coordinate: a follower's limit is a limit of its leader through the multiplier
  (`limit_bounds`: ``(lower - offset) / multiplier`` .. ``(upper - offset) / multiplier``, ordered, met
  with the leader's own), held by the one limit torque on the leader.

Torques. A follower has no motor of its own: the motor torque of the control stage is folded onto its
leader (`couple_vector`: ``tau_leader += multiplier * tau_follower``, ``tau_follower = 0``), so gravity
compensation is the coupled robot's ``Gᵀ g``, and the recorded ``tau.<follower>`` is 0. A controller that
drives a follower by name (a PD's or computed torque's kp, kd or target, a constant or table torque) is an
error naming the key (`dynlib.sim.controllers.check_controller`); a PD gain given as one number acts on the leaders only; computed
torque gives each follower its leader's gains and target through the coupling, so its torque is
``Gᵀ RNEA(q, v, G a_cmd)``. The joint friction of a follower acts on it and reaches the leader through the
multiplier (``Gᵀ tau_total``); the energy is the tree's (every body moves), and the coupling does no work
(d'Alembert: its force is orthogonal to G). A row records the coupled acceleration (under implicit
friction the explicit one, `dynamics.coupled_explicit`), so inverse dynamics of the rows projected,
``Gᵀ RNEA(q, v, a)`` (`dynlib.coupled_rnea`), gives back ``Gᵀ (tau + limit − friction)``: the leaders'
recorded torques, the followers' being zero.

The initial state: each follower's position and velocity are its leader's through the coupling; a given
q0 or v0 whose follower disagrees (by more than 1e-9) gets one `dynlib.core.model.MimicStateWarning` naming
it, and starts from the leader (`initial_state`).

A model without mimic joints has an empty `Coupled` record: every kernel here loops over nothing, and the
simulation is bit for bit what it was.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._numba.decorators import kernel


class Coupled(NamedTuple):
    """The mimic coupling as the simulation loop takes it (every array empty without mimic joints)."""

    dof: np.ndarray       # (nf,) int64 each follower's DoF
    leader: np.ndarray    # (nf,) int64 its leader's DoF
    mult: np.ndarray      # (nf,) the multiplier
    q: np.ndarray         # (nf,) int64 the follower's coordinate
    q_leader: np.ndarray  # (nf,) int64 the leader's coordinate
    offset: np.ndarray    # (nf,)
    L: np.ndarray         # (nv, nv) the LᵀDL factor of the coupled Gᵀ M G without the implicit diagonal, for
                          # the explicit acceleration a row records under implicit friction; (0, 0) without


NO_COUPLING = Coupled(*(np.zeros(0, dtype=np.int64 if k in (0, 1, 3, 4) else float) for k in range(6)),
                      np.zeros((0, 0)))  # none


def coupled_record(model) -> Coupled:
    """The Coupled record of `model` (empty arrays without mimic joints)."""
    a, rows = model.arrays, []
    for name, leader, mult, offset in model.mimic:
        f, lo = model.joint_id(name), model.joint_id(leader)
        rows.append((a.idx_v[f], a.idx_v[lo], mult, a.idx_q[f], a.idx_q[lo], offset))
    ints = [np.array([r[k] for r in rows], dtype=np.int64) for k in (0, 1, 3, 4)]
    floats = [np.array([r[k] for r in rows], dtype=float) for k in (2, 5)]
    n = model.nv if rows else 0
    return Coupled(ints[0], ints[1], floats[0], ints[2], ints[3], floats[1], np.zeros((n, n)))


def chain(nv) -> np.ndarray:
    """(nv,) int64 dof_parent of a dense LᵀDL: DoF k's parent is k - 1 (see the module docstring)."""
    return np.arange(-1, nv - 1, dtype=np.int64)


@kernel
def couple_system(c, M, rhs):
    """M ← Gᵀ M G, rhs ← Gᵀ rhs, embedded (the module docstring)."""
    couple_matrix(c, M)
    couple_vector(c, rhs)


@kernel
def couple_matrix(c, M):
    """M ← Gᵀ M G, embedded: a follower's row and column the identity's. Leaders mimic none, so no row or
    column is gathered twice."""
    nv = M.shape[0]
    for k in range(c.dof.shape[0]):
        f, lo, s = c.dof[k], c.leader[k], c.mult[k]
        for j in range(nv):
            M[lo, j] += s * M[f, j]
    for k in range(c.dof.shape[0]):
        f, lo, s = c.dof[k], c.leader[k], c.mult[k]
        for i in range(nv):
            M[i, lo] += s * M[i, f]
    for k in range(c.dof.shape[0]):
        f = c.dof[k]
        for j in range(nv):
            M[f, j] = 0.0
            M[j, f] = 0.0
        M[f, f] = 1.0


@kernel
def couple_vector(c, x):
    """x ← Gᵀ x, embedded: a follower's entry gathered into its leader's through the multiplier, then 0."""
    for k in range(c.dof.shape[0]):
        x[c.leader[k]] += c.mult[k] * x[c.dof[k]]
        x[c.dof[k]] = 0.0


@kernel
def couple_rows(c, J):
    """J (r, nv) ← J G, embedded: a follower's column gathered into its leader's, then zero."""
    for k in range(c.dof.shape[0]):
        f, lo, s = c.dof[k], c.leader[k], c.mult[k]
        for r in range(J.shape[0]):
            J[r, lo] += s * J[r, f]
            J[r, f] = 0.0


@kernel
def couple_bias(c, h, tau_total):
    """h ← such that tau_total − h = Gᵀ (tau_total − h), embedded: the limit stage's right-hand side of the
    coupled robot (its matrix by `couple_matrix`)."""
    if c.dof.shape[0] == 0:
        return
    for i in range(h.shape[0]):
        h[i] = tau_total[i] - h[i]
    couple_vector(c, h)
    for i in range(h.shape[0]):
        h[i] = tau_total[i] - h[i]


@kernel
def expand(c, a):
    """a ← G a_r: each follower's entry from its leader's (an embedded solve left it 0)."""
    for k in range(c.dof.shape[0]):
        a[c.dof[k]] = c.mult[k] * a[c.leader[k]]


@kernel
def hold_state(c, q, v):
    """q, v of each follower from its leader: q_f = multiplier q_l + offset, v_f = multiplier v_l."""
    for k in range(c.dof.shape[0]):
        q[c.q[k]] = c.mult[k] * q[c.q_leader[k]] + c.offset[k]
        v[c.dof[k]] = c.mult[k] * v[c.leader[k]]


# ------------------------------------------------------------------ Python side

def initial_state(model, q, v, q_given, v_given):
    """(q, v) with each follower set from its leader; a given follower value (q_given, v_given: whether q0,
    v0 were given) that disagrees by more than 1e-9 gets one MimicStateWarning naming it."""
    import warnings

    from ..core.model import MimicStateWarning

    c = coupled_record(model)
    q0, v0 = q.copy(), v.copy()
    hold_state(c, q, v)
    for (name, leader, mult, offset), iq, iv in zip(model.mimic, c.q, c.dof):
        for what, given, old, new in (("q0", q_given, q0[iq], q[iq]), ("v0", v_given, v0[iv], v[iv])):
            if given and abs(old - new) > 1e-9 * max(1.0, abs(new)):
                rhs = f"{mult:g} * {leader}" + (f" {'+' if offset >= 0 else '-'} {abs(offset):g}" if offset else "")
                warnings.warn(f"{what}: joint '{name}' mimics '{leader}' ({name} = {rhs}): it starts at {new:.6g} "
                              f"from its leader, not at the given {old:.6g}", MimicStateWarning, stacklevel=3)
    return q, v


def limit_bounds(model, lower, upper):
    """(lower, upper) (nq,) with each follower's range moved onto its leader (met with the leader's own) and
    the follower's own made infinite: the limits the coupled robot holds, on its leaders."""
    a = model.arrays
    lower, upper = np.array(lower, float), np.array(upper, float)
    for name, leader, mult, offset in model.mimic:
        f, lo = a.idx_q[model.joint_id(name)], a.idx_q[model.joint_id(leader)]
        if mult != 0.0:
            with np.errstate(invalid="ignore"):
                ends = ((lower[f] - offset) / mult, (upper[f] - offset) / mult)
            lower[lo], upper[lo] = max(lower[lo], min(ends)), min(upper[lo], max(ends))
        lower[f], upper[f] = -np.inf, np.inf
    return lower, upper


def coupled_limits(model, lim):
    """The `joint_limits.Limits` record `lim` (position limits held) of the coupled robot: no follower's
    coordinate, each leader's range met with its followers' (`limit_bounds`)."""
    from ..core import joints as J

    a = model.arrays
    lower, upper = limit_bounds(model, model.lower, model.upper)
    vi = np.array([int(a.idx_v[i]) for i in range(model.nb) if a.jtype[i] in (J.REVOLUTE, J.PRISMATIC)
                   and (np.isfinite(lower[a.idx_q[i]]) or np.isfinite(upper[a.idx_q[i]]))], dtype=np.int64)
    qi = np.array([int(a.idx_q[a.dof_body[k]]) for k in vi], dtype=np.int64)
    n = qi.size
    return lim._replace(q_index=qi, v_index=vi, lower=lower[qi], upper=upper[qi], side=np.zeros(n), depth=np.zeros(n),
                        target=np.zeros(n), lam=np.zeros(n), cols=np.zeros((n, model.nv)))
