"""The fixed stages of one evaluation of the dynamics, each summing every source present, switched by data.

A simulation step evaluates the dynamics at one to four states (`dynlib.simulate`);
each evaluation runs the same stages in order, as MuJoCo's forward pipeline does
(passive forces, actuation, applied forces, then constraints):

=========================== ================================================ ===============================
stage                        sources (the code in the `Pipeline` that picks)   kernels in
=========================== ================================================ ===============================
``control``                  the controller's law (`Control.kind`: zero,       `dynlib.sim.controllers`
                             constant, table, PD, gravity compensation,
                             computed torque with its target by data too)
``saturate``                 the motor torque clipped at ±effort (`Limits`:    `dynlib.sim.joint_limits`
                             an empty effort array, none)
``joint_forces``             joint friction (`Forces`: zero gains, none)       `dynlib.sim.dynamics`
``body_forces``              the external wrenches active at t (none: an       `dynlib.sim.dynamics`,
                             empty array), plus the soft contact forces        `dynlib.sim.contact.soft`
                             (`ContactModel.kind` SOFT)
``limit_torques``            the position limits' torque (`Limits`: no         `dynlib.sim.joint_limits`
                             limited coordinate, none; zero away from them)
``acceleration``             the constraints of the contact model              `dynlib.sim.contact.bilateral`,
                             (`ContactModel.kind` BILATERAL, UNILATERAL,       `unilateral`, `relaxed`
                             RELAXED), else the ABA with the joint friction    `dynlib.sim.dynamics`
                             and PD gains explicit or implicit
                             (`Implicit.mode`: FREE, IMPLICIT_FRICTION,
                             IMPLICIT_GAINS)
``recorded_acceleration``    what a row records: the explicit model            `dynlib.sim.dynamics`
                             acceleration under IMPLICIT_FRICTION without
                             constraints, the stage's own otherwise
=========================== ================================================ ===============================

Every controller, contact model, friction mode and energy choice is a value of
the same types (`controllers.Control`, `contact.ContactModel`, `dynamics.Implicit`,
integer codes, arrays that are empty when a source is absent), so the simulation loop has one
numba type for every scenario and is compiled once (and cached); a scenario of
another controller or contact model compiles nothing. A branch on a code costs
a compare per evaluation; an absent source costs nothing more (an empty loop).

Every stage kernel takes its arguments in MuJoCo's order: model arrays
(``m``, ``d``: `dynlib.core.model`), the records of the parameters it uses (not
the whole `Pipeline`), inputs (the evaluation's sums, `dynamics.Evaluation`, and
the state), workspace, outputs.
Stage kernels are short (at most 40 lines) and compiled `inline_kernel`: LLVM
inlines them into the loop (numba compiles each once), because a compiled call passes the arrays
of the model, Data, parameter and workspace tuples one by one (several hundred
values), which would cost as much as the ABA per evaluation. What they call
(the algorithm kernels, the contact solvers) is compiled and cached once.

The loop's own code is every stage's, cold branches included, and each call of a
kernel in it spells out the arrays of its tuples (a few hundred instructions per
call site): with every model's kernels called from it, the loop body was five
times the machine code of one combination's loop before, and the steps without
contacts 5–10 % slower (`benchmarks/bench_stages.py`). So the call sites are
few: bilateral contact is two kernels (`contact.bilateral.bilateral_rows`, then
the solve), unilateral and relaxed contact share one impulse step
(`impulse_acceleration`: the free step, their own rows, PGS), the acceleration
without constraints is one ABA call whatever the friction mode
(`dynamics.implicit_acceleration`), and the control laws that need inverse
dynamics share one RNEA call (`controllers.control_torque`). (The three
constraint models behind one compiled call, not inlined, made their steps 12–28 %
slower: that call passes every array of the contact record, the model, Data.)
"""
from .._numba.decorators import inline_kernel
from ..algorithms.kinematics import placements
from .contact import BILATERAL, RELAXED, SOFT, UNILATERAL
from .contact.bilateral import bilateral_acceleration
from .contact.relaxed import relaxed_rows
from .contact.soft import soft_forces
from .contact.unilateral import apply_impulses, free_step, unilateral_rows
from .controllers import control_torque
from .dynamics import (IMPLICIT_FRICTION, assign, coupled_acceleration, coupled_explicit, explicit_acceleration,
                       implicit_acceleration, joint_forces, wrench_forces)
from .mimic import expand

__all__ = ["control_torque", "joint_forces", "body_forces", "acceleration", "recorded_acceleration"]


@inline_kernel
def body_forces(m, d, fo, cm, t, q, v, fext):
    """fext (nb, 6) = the body wrenches at (t, q, v): the external wrenches active at t (fo: `Forces`), plus the
    soft contact forces (cm: `ContactModel`; cm.state of every point); untouched, zero, when there are neither."""
    soft = cm.kind == SOFT
    if soft or fo.wrench_body.shape[0] > 0:
        placements(m, d, q)
        wrench_forces(d.oR, fo, t, fext)
    if soft:
        soft_forces(m, d, cm.soft, cm.points, cm.state, v, fext)


@inline_kernel
def acceleration(m, d, fo, im, cm, e, dt, q, v, a):
    """a (nv,) = the acceleration at (q, v) under e.tau_total and e.fext (e: `Evaluation`), with the
    constraints of the contact model cm, else with the implicit terms im; False if a matrix is not positive
    definite."""
    kind = cm.kind
    if kind == BILATERAL:
        return bilateral_acceleration(m, d, cm, fo, im, e, q, v, a)
    if kind == UNILATERAL or kind == RELAXED:
        return impulse_acceleration(m, d, cm, fo, im, e, dt, q, v, a)
    if e.coupling.dof.shape[0] > 0:  # mimic joints: the coupled robot's (dense) solve
        return coupled_acceleration(m, d, fo, im, e, q, v, a)
    return implicit_acceleration(m, d, fo, im, e, q, v, a)


@inline_kernel
def impulse_acceleration(m, d, cm, fo, im, e, dt, q, v, a):
    """a = (v+ − v)/dt of one time step with contact impulses, the rows of the model cm.kind (UNILATERAL or
    RELAXED: `contact.unilateral`, `contact.relaxed`), in that model's workspace; cm.state.force = λ/dt per
    point (world). False if M (+ dt B) is not positive definite."""
    pts, st = cm.points, cm.state
    w = cm.unilateral.work if cm.kind == UNILATERAL else cm.relaxed.work
    if not free_step(m, d, pts, st, w, fo, im, e, dt, q, v, a):
        return False
    if cm.kind == UNILATERAL:
        pu = cm.unilateral.params
        unilateral_rows(pu, st, w, dt)
        mu, tol, max_iter = pu.friction, pu.tolerance, pu.max_iterations
    else:
        pr = cm.relaxed.params
        relaxed_rows(pr, st, w, dt)
        mu, tol, max_iter = pr.friction, pr.tolerance, pr.max_iterations
    apply_impulses(mu, tol, max_iter, pts, st, w, dt, a)
    expand(e.coupling, a)  # mimic joints: the followers' from their leaders (`dynlib.sim.mimic`)
    return True


@inline_kernel
def recorded_acceleration(m, d, im, cm, e, a, out):
    """out (nv,) = the acceleration a row records for the state whose stage acceleration is a, called right
    after that acceleration stage, whose work in d it may reuse."""
    kind = cm.kind
    if im.mode == IMPLICIT_FRICTION and kind != BILATERAL and kind != UNILATERAL and kind != RELAXED:
        if e.coupling.dof.shape[0] > 0:  # the coupled robot's (`dynamics.coupled_explicit`)
            coupled_explicit(m, d, e, out)
        else:
            explicit_acceleration(m, d, e, out)
    else:
        assign(out, a)
