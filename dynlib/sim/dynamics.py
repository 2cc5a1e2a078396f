"""Generalized forces and forward dynamics: the kernels of the simulation step that need no contact.

One evaluation of the dynamics at (t, q, v) (`dynlib.simulate`, its stages in
`dynlib.sim.stages`) gathers every generalized force, then turns them into an acceleration:

- ``joint_forces`` (`Forces`): ``tau_total = tau - damping v - friction tanh(v/eps)``,
  the motor torque plus the joint friction (SPEC §2; zero arrays without it);
- `wrench_forces` (the ``body_forces`` stage): ``fext`` (nb, 6), the external wrenches
  active at t as body wrenches (body frame, at the body origin). A wrench
  ``(f, tau)`` is given in world-aligned axes at a frame origin (the dual of the
  ``local_world_aligned`` frame Jacobian: generalized force ``J^T w``), active for
  ``start <= t < stop``. The stage adds the soft contact forces to them
  (`dynlib.sim.contact.soft`);
- the ``acceleration`` stage, without a contact model that constrains the motion,
  by the friction mode (`Implicit`'s ``mode``, data: FREE, IMPLICIT_FRICTION,
  IMPLICIT_GAINS below):

  - FREE: ``a = ABA(q, v, tau_total, fext)``, joint friction explicit;
  - IMPLICIT_FRICTION (`implicit_acceleration`): ``(M + dt B) a = tau_total - h``, with ``h = RNEA(q, v, 0, fext)``
    and ``B = diag(damping + friction/eps (1 - tanh²(v/eps)))`` the friction's
    (negated) velocity Jacobian. Joint damping and the smoothed Coulomb friction
    are stiff for light links (a wrist with 1e-4 kg m² and 0.5 N m s of damping
    has a 0.3 ms time constant; the tanh slope friction/eps is 1000 times
    steeper), and explicit schemes at dt = 1e-3 blow up on them. Taken linearly
    implicit, as MuJoCo does for joint damping, it is backward Euler on the
    friction term inside each substep: stable at any dt, first-order accurate in
    the friction term only; the rigid-body part keeps the scheme's order.
    ``dt B`` is diagonal in joint space, like a rotor's inertia (armature): the
    ABA solves ``(M + diag(dt B)) a = tau_total - h`` with ``D_k = S_k^T IA S_k +
    armature_k + (dt B)_k`` (`dynlib.algorithms.aba`), in O(n) like the explicit
    step, without forming M. A recorded row holds the explicit acceleration
    ``ABA(q, v, tau_total, fext)`` (`explicit_acceleration`), so that inverse
    dynamics on the rows gives back tau. The diagonal enters every pivot D_k and
    so every articulated inertia a body passes to its parent: the implicit pass's
    factorization is of M + diag, not of M, and the explicit acceleration needs
    passes 2 and 3 of its own; pass 1 (joint placements, velocities, c), which
    the diagonal and tau do not enter, it takes from the implicit pass at the same
    state (`aba_at_velocities`). With the PD gains alone implicit (IMPLICIT_GAINS:
    dt B = 0), ``(M + gain_m) a = tau_total - gain_v v - h`` is ``M a + h =
    tau_total - gain_m a - gain_v v``, the torque `applied_torque` records: the
    stage's own acceleration is the explicit one, and the row records it;
  - the contact models that constrain the motion (`dynlib.sim.contact.bilateral`,
    `unilateral`, `relaxed`) take the stage's place when the pipeline has one.

Implicit PD gains (`dynlib.simulate`, semi-implicit and euler): a PD's torque
``kp (q* ⊖ q) - kd v`` taken at the state the step predicts, ``v+ = v + dt a``,
``q+ = q ⊕ dt v+``, is to first order ``tau - (dt kd + dt² kp) a - dt kp v``:
``Implicit.gain_m = dt kd + dt² kp`` joins M's diagonal and ``gain_v v = dt kp v``
the bias (backward Euler in the gains, as MuJoCo's implicit actuator damping),
so stiff gains on light links are stable at any dt. `applied_torque` then
makes the recorded motor torque the one applied, ``M a + h = tau_applied``.

`implicit_diagonal` is the one home of that diagonal, ``dt B + gain_m`` (nv,),
for both paths: the ABA of `implicit_acceleration`, and `mass_and_bias`, the dense
prelude of the contact stages that need M itself (`dynlib.sim.contact.bilateral`,
`unilateral`, `relaxed`): ``M`` by CRBA plus the diagonal, ``h`` by RNEA,
``tau_h = tau_total - h - gain_v v``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._numba.decorators import inline_kernel, kernel
from ..algorithms.aba import aba_at_velocities, aba_kernel
from ..algorithms.crba import crba_kernel
from ..algorithms.linalg import ltdl, ltdl_solve
from ..algorithms.rnea import rnea_kernel
from .mimic import NO_COUPLING, Coupled, couple_matrix, couple_system, couple_vector, expand


class Forces(NamedTuple):
    """The generalized forces besides the controller's and the contacts': joint friction, external wrenches."""

    damping: np.ndarray       # (nv,) viscous joint friction
    friction: np.ndarray      # (nv,) Coulomb joint friction, smoothed by tanh(v/eps)
    eps: float                # Coulomb smoothing velocity
    wrench_body: np.ndarray   # (nw,) int64, body the wrench's frame is on
    wrench_p: np.ndarray      # (nw, 3) the frame's origin in that body's frame
    wrench: np.ndarray        # (nw, 6) (f, tau), world-aligned axes, at the frame origin
    wrench_start: np.ndarray  # (nw,) active from this time ...
    wrench_stop: np.ndarray   # (nw,) ... until this time (excluded)


# the acceleration without constraints (Implicit.mode, by data)
FREE = 0               # the ABA, joint friction explicit
IMPLICIT_FRICTION = 1  # (M + dt B) a = tau_total - h by the ABA, joint friction linearly implicit (dt:
                       # Implicit.friction_dt), and implicit PD gains (Implicit.gain_m, gain_v); the row records the
                       # explicit acceleration
IMPLICIT_GAINS = 2     # the same kernel with the PD gains alone implicit (Implicit.friction_dt = 0): its
                       # acceleration is the model's at the applied torque, so the row records it


class Implicit(NamedTuple):
    """What the acceleration stage takes implicitly (backward Euler inside the stage): the joint friction
    (its velocity Jacobian, `Forces`' damping and friction) and a PD controller's gains."""

    mode: int                # FREE, IMPLICIT_FRICTION or IMPLICIT_GAINS
    friction_dt: np.ndarray  # (nv,) per joint: > 0, its friction linearly implicit with this step; 0: explicit
    gain_m: np.ndarray    # (nv,) dt kd + dt² kp of a PD taken implicitly (added to M's diagonal); 0: explicit
    gain_v: np.ndarray    # (nv,) dt kp: the predicted position's term, -dt kp v (with gain_m: backward Euler)


class ImplicitFrictionNote(UserWarning):
    """rk4 takes the Coulomb friction of some joints by backward Euler (stiff at dt): first order in that term."""


class Evaluation(NamedTuple):
    """The generalized forces of one evaluation of the dynamics, which its stages write in turn."""

    tau: np.ndarray        # (nv,) motor torque (the control stage)
    tau_total: np.ndarray  # (nv,) motor torque + joint friction (joint_forces)
    fext: np.ndarray       # (nb, 6) body wrenches, body frame (body_forces)
    tau_h: np.ndarray      # (nv,) tau_total - h (- gain_v v) (- B memory): the acceleration stages that form M, or
                           # the ABA's
    memory: np.ndarray     # (nv,) dt Σ_j γ_sj k_j, the Rosenbrock-W stage memory of rk4's implicit friction
                           # (`dynlib.sim.integrators.stage_memory`); zero for the one-stage schemes
    coupling: Coupled = NO_COUPLING  # the mimic joints' coupling the forces are projected with
                           # (`dynlib.sim.mimic`; empty arrays without mimic joints)


def evaluation(nv, nb, coupling=None) -> Evaluation:
    """The Evaluation sums of a model (nv, nb), with its mimic `Coupled` record (None: none)."""
    return Evaluation(np.zeros(nv), np.zeros(nv), np.zeros((nb, 6)), np.zeros(nv), np.zeros(nv),
                      NO_COUPLING if coupling is None else coupling)


@kernel
def assign(dst, src):
    """dst = src, two 1-D arrays of the same length (an explicit loop: a slice assignment copies through
    numba's runtime, which these kernels are compiled without)."""
    for k in range(dst.shape[0]):
        dst[k] = src[k]


# ------------------------------------------------------------------ generalized forces

@inline_kernel
def joint_friction(damping, friction, eps, v):
    """damping v + friction tanh(v / eps): the torque the joint friction takes away (SPEC §2), the one home
    of the law. In a kernel per DoF, on numbers (`joint_forces`, the computed-torque controller); in numpy
    code on arrays through ``joint_friction.py_func`` (`dynlib.motion.inverse.joint_friction_torques`,
    identification): the same operations, numpy's tanh on arrays (it may differ from the C library's tanh,
    which the kernels call, in the last bit)."""
    return damping * v + friction * np.tanh(v / eps)


@inline_kernel
def joint_forces(fo, v, tau, tau_total):
    """tau_total = tau - joint_friction(v) (SPEC §2 joint friction)."""
    for k in range(v.shape[0]):
        tau_total[k] = tau[k] - joint_friction(fo.damping[k], fo.friction[k], fo.eps, v[k])


@kernel
def wrench_forces(oR, fo, t, fext):
    """fext = the wrenches active at t as body wrenches (placements done: oR is the body rotations).

    A wrench (f, tau) in world-aligned axes at a frame origin p (in the body frame) is, in
    the body frame at the body origin, f_b = R^T f, n_b = R^T tau + p x f_b.
    """
    fext[:, :] = 0.0
    p = fo.wrench_p
    for w in range(fo.wrench_body.shape[0]):
        if not (fo.wrench_start[w] <= t < fo.wrench_stop[w]):
            continue
        b = fo.wrench_body[w]
        R = oR[b]
        f = fo.wrench[w]
        fb0 = R[0, 0] * f[0] + R[1, 0] * f[1] + R[2, 0] * f[2]
        fb1 = R[0, 1] * f[0] + R[1, 1] * f[1] + R[2, 1] * f[2]
        fb2 = R[0, 2] * f[0] + R[1, 2] * f[1] + R[2, 2] * f[2]
        fext[b, 0] += fb0
        fext[b, 1] += fb1
        fext[b, 2] += fb2
        fext[b, 3] += R[0, 0] * f[3] + R[1, 0] * f[4] + R[2, 0] * f[5] + p[w, 1] * fb2 - p[w, 2] * fb1
        fext[b, 4] += R[0, 1] * f[3] + R[1, 1] * f[4] + R[2, 1] * f[5] + p[w, 2] * fb0 - p[w, 0] * fb2
        fext[b, 5] += R[0, 2] * f[3] + R[1, 2] * f[4] + R[2, 2] * f[5] + p[w, 0] * fb1 - p[w, 1] * fb0


# ------------------------------------------------------------------ forward dynamics

@kernel
def implicit_diagonal(fo, im, v, diag):
    """diag (nv,) = dt B + gain_m, dt = im.friction_dt[k] per joint (0: its friction explicit): the joint-space diagonal
    of the implicit step, B = diag(damping + friction/eps (1 - tanh²(v/eps))) the joint friction's (negated)
    velocity Jacobian (fo: `Forces`), gain_m = dt kd + dt² kp of implicit PD gains."""
    for k in range(v.shape[0]):
        diag[k] = im.gain_m[k]
        if im.friction_dt[k] > 0.0:
            diag[k] += im.friction_dt[k] * friction_slope(fo, k, v[k])


@inline_kernel
def friction_slope(fo, k, vk):
    """B_k = damping_k + friction_k/eps (1 - tanh²(v_k/eps)): the joint friction's (negated) velocity slope."""
    b = fo.damping[k]
    if fo.friction[k] != 0.0:
        b += fo.friction[k] / fo.eps * (1.0 - math.tanh(vk / fo.eps) ** 2)
    return b


@inline_kernel
def stage_term(fo, im, e, k):
    """damping_k memory_k on an implicit joint without Coulomb friction (rk4's Rosenbrock-W stage term,
    `e.memory`: there B = damping, constant), else 0 (a Coulomb joint's implicit term is backward Euler)."""
    if e.memory[k] != 0.0 and im.friction_dt[k] > 0.0 and fo.friction[k] == 0.0:
        return fo.damping[k] * e.memory[k]
    return 0.0


@inline_kernel
def mass_and_bias(m, d, fo, im, e, q, v):
    """d.M = M(q) + diag(dt B + gain_m) (`implicit_diagonal`, in d.diag), d.h = RNEA(q, v, 0, e.fext),
    e.tau_h = e.tau_total - h - gain_v v - B memory (`stage_term`); with mimic joints, d.M and e.tau_h
    of the coupled robot, embedded (`dynlib.sim.mimic.couple_system`)."""
    crba_kernel(m, d, q, d.M)
    implicit_diagonal(fo, im, v, d.diag)
    rnea_kernel(m, d, q, v, d.zeros_v, e.fext, m.gravity, d.h)
    for k in range(v.shape[0]):
        d.M[k, k] += d.diag[k]
        e.tau_h[k] = e.tau_total[k] - d.h[k] - im.gain_v[k] * v[k]
        e.tau_h[k] -= stage_term(fo, im, e, k)
    couple_system(e.coupling, d.M, e.tau_h)


@kernel
def applied_torque(im, v, a, tau, tau_total):
    """tau, tau_total -= gain_m a + gain_v v: the PD torque at the predicted state (q + dt (v + dt a),
    v + dt a), to first order, which the implicit acceleration stage applied (zero gains: unchanged)."""
    for k in range(v.shape[0]):
        c = im.gain_m[k] * a[k] + im.gain_v[k] * v[k]
        tau[k] -= c
        tau_total[k] -= c


@inline_kernel
def implicit_acceleration(m, d, fo, im, e, q, v, a):
    """(M + diag(dt B + gain_m)) a = tau_total - gain_v v - B memory - h by one ABA with that diagonal on D_k,
    O(n) (e.tau_h = tau_total - gain_v v - B memory, `stage_term`); im.mode FREE: the ABA itself (no diagonal, tau_total). One ABA call site
    for both. False if a pivot D_k is not positive (M plus the diagonal not positive definite)."""
    free = im.mode == FREE
    if free:
        tau, diag = e.tau_total, d.zeros_v
    else:
        implicit_diagonal(fo, im, v, d.diag)
        for k in range(v.shape[0]):
            e.tau_h[k] = e.tau_total[k] - im.gain_v[k] * v[k]
            e.tau_h[k] -= stage_term(fo, im, e, k)
        tau, diag = e.tau_h, d.diag
    aba_kernel(m, d, q, v, tau, e.fext, m.gravity, diag, a)
    if free:
        return True
    for i in range(m.parent.shape[0]):
        for j in range(m.nvj[i]):
            if not (0.0 < d.Dinv[i, j, j] < math.inf):
                return False
    return True


@inline_kernel
def explicit_acceleration(m, d, e, out):
    """out = ABA(q, v, e.tau_total, e.fext): the model's acceleration at the state, not the implicit stage's;
    the stage's ABA at (q, v) just before left pass 1 in d (`aba_at_velocities`)."""
    aba_at_velocities(m, d, e.tau_total, e.fext, m.gravity, d.zeros_v, out)


@kernel
def coupled_acceleration(m, d, fo, im, e, q, v, a):
    """The acceleration stage of a robot with mimic joints (`dynlib.sim.mimic`), without constraint contacts:
    ``Gᵀ (M + diag) G a_r = Gᵀ tau_h``, a = G a_r, a dense LᵀDL (m.dof_parent a chain); under
    IMPLICIT_FRICTION also the factor of ``Gᵀ M G`` in e.coupling.L (`coupled_explicit`). False if the coupled
    matrix is not positive definite."""
    mass_and_bias(m, d, fo, im, e, q, v)
    if not ltdl(d.M, m.dof_parent, d.L):
        return False
    ltdl_solve(d.L, m.dof_parent, e.tau_h, a)
    expand(e.coupling, a)
    if im.mode == IMPLICIT_FRICTION:
        crba_kernel(m, d, q, d.M)
        couple_matrix(e.coupling, d.M)
        ltdl(d.M, m.dof_parent, e.coupling.L)
    return True


@kernel
def coupled_explicit(m, d, e, out):
    """out = G (Gᵀ M G)⁻¹ Gᵀ (tau_total − h): the coupled robot's explicit acceleration at the applied torque,
    what a row records under IMPLICIT_FRICTION (M's factor and h = d.h left by `coupled_acceleration`)."""
    for k in range(out.shape[0]):
        out[k] = e.tau_total[k] - d.h[k]
    couple_vector(e.coupling, out)
    ltdl_solve(e.coupling.L, m.dof_parent, out, out)
    expand(e.coupling, out)
