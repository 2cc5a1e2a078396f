"""The stages of one evaluation of the dynamics, each picked at compile time by the type of its parameters.

A simulation step evaluates the dynamics at one to four states (`dynlib.simulate`);
each evaluation runs the same stages in order:

=========================== ============================================= ==================================
stage                        parameter types (the kernel each one picks)   module
=========================== ============================================= ==================================
``control``                  `ZeroParams`, `ConstantParams`, `TableParams`, `dynlib.controllers`
                             `PDParams`, `GravityParams`,
                             `ComputedTorqueParams`
``joint_forces`` (fixed)     `Forces`: joint friction                      `dynlib.dynamics`
``body_forces``              `ExternalWrenches`; `SoftParams` (wrenches    `dynlib.dynamics`,
                             and soft contact forces)                      `dynlib.contact.soft`
``acceleration``             `Free` (ABA), `ImplicitFriction`,             `dynlib.dynamics`,
                             `ImplicitGains` (ABA with a joint-space
                             diagonal),
                             `BilateralParams`, `UnilateralParams`,        `dynlib.contact.*`
                             `RelaxedParams`
=========================== ============================================= ==================================

plus two helpers dispatched the same way: ``target`` (the computed-torque
controller's reference: `TableTarget`, `SineTarget`) and ``recorded_acceleration``
(what a recorded row holds as its acceleration: the explicit model acceleration
under `ImplicitFriction`, the stage's own acceleration otherwise).

A kernel joins a stage with ``@stage(name, ParamsClass, ...)`` in the module
that defines it, which also compiles it; each stage below is a Python function
that only compiled code calls, and an ``overload`` that, while numba types the
caller, looks up the kernel registered for the class of the parameters it is
given (typed and inlined only: `dynlib.compiled.typed_only`). So there is no mode flag at run time: the simulation loop is one generic
function, and numba compiles (and caches) one specialization of it per
combination of parameter types that is actually run, with only the kernels that
combination uses. ``@stage(name)`` without classes records a kernel that serves
every type (``joint_forces``; the default ``recorded_acceleration``), so that
`kernels` lists every stage kernel.

Every stage kernel takes its arguments in MuJoCo's order: model arrays
(``m``, ``d``: `dynlib.model`), the stage's parameters, inputs, workspace, outputs.
Stage kernels are short (at most 40 lines) and compiled `inline_kernel`: numba
inlines them into the loop (numba IR), because a compiled call passes the arrays
of the model, Data, parameter and workspace tuples one by one (several hundred
values), which would cost as much as the ABA per evaluation. What they call
(the algorithm kernels, the contact solvers) is compiled and cached once.
"""
from numba.extending import overload

from .compiled import jit, typed_only

inline_kernel = jit(nrt=False, error_model="numpy", nogil=True, inline="always")
"""A kernel without reference counting (`dynlib.spatial.kernel`) that numba inlines into its callers."""

_KERNELS = {}  # (stage name, params class or None) -> kernel


def stage(name, *classes):
    """Decorator: compile a function (`inline_kernel`) as stage `name`'s kernel for these params classes."""
    def register(fn):
        kernel = inline_kernel(fn)
        for cls in classes or (None,):
            _KERNELS[(name, cls)] = kernel
        return kernel

    return register


def kernels() -> dict:
    """{(stage name, params class or None): kernel} of every registered stage kernel."""
    return dict(_KERNELS)


def handles(name, cls) -> bool:
    """Whether stage `name` has a kernel for the params class `cls`."""
    return (name, cls) in _KERNELS


def kernel_for(name, params_type, default=None):
    """The kernel of stage `name` for numba type `params_type` (a NamedTuple type), or `default`."""
    cls = getattr(params_type, "instance_class", None)
    kernel = _KERNELS.get((name, cls), default)
    if kernel is None:
        raise TypeError(f"no '{name}' stage kernel for {cls.__name__ if cls else params_type}")
    return kernel


def _compiled_only(*args):
    raise NotImplementedError("a pipeline stage is called from compiled code only (dynlib.simulate)")


def control(m, d, p, w, t, q, v, tau):
    """tau (nv,) = the motor torque of the controller with parameters p (workspace w) at (t, q, v)."""
    _compiled_only()


def target(p, t, q_d, v_d, a_d):
    """q_d (nq,), v_d, a_d (nv,) = the reference with parameters p at time t."""
    _compiled_only()


def body_forces(m, d, p, pts, fo, t, q, v, w, fext):
    """fext (nb, 6) = the body wrenches at (t, q, v): external wrenches, and contact forces for soft contact."""
    _compiled_only()


def acceleration(m, d, p, pts, fo, dt, q, v, tau_total, fext, w, tau_h, a):
    """a (nv,) = the acceleration at (q, v) under tau_total and fext; False if a matrix is not positive definite."""
    _compiled_only()


def recorded_acceleration(m, d, p, q, v, tau_total, fext, a, out):
    """out (nv,) = the acceleration a row records for the state (q, v) whose stage acceleration is a, called
    right after that acceleration stage at (q, v), whose work in d it may reuse."""
    _compiled_only()


# the overloads: numba calls these while typing a caller, with the arguments' numba types

@overload(control, inline="always")
def _control(m, d, p, w, t, q, v, tau):
    kernel = kernel_for("control", p)
    return typed_only(lambda m, d, p, w, t, q, v, tau: kernel(m, d, p, w, t, q, v, tau))


@overload(target, inline="always")
def _target(p, t, q_d, v_d, a_d):
    kernel = kernel_for("target", p)
    return typed_only(lambda p, t, q_d, v_d, a_d: kernel(p, t, q_d, v_d, a_d))


@overload(body_forces, inline="always")
def _body_forces(m, d, p, pts, fo, t, q, v, w, fext):
    kernel = kernel_for("body_forces", p)
    return typed_only(lambda m, d, p, pts, fo, t, q, v, w, fext: kernel(m, d, p, pts, fo, t, q, v, w, fext))


@overload(acceleration, inline="always")
def _acceleration(m, d, p, pts, fo, dt, q, v, tau_total, fext, w, tau_h, a):
    kernel = kernel_for("acceleration", p)
    return typed_only(lambda m, d, p, pts, fo, dt, q, v, tau_total, fext, w, tau_h, a: kernel(
        m, d, p, pts, fo, dt, q, v, tau_total, fext, w, tau_h, a))


@overload(recorded_acceleration, inline="always")
def _recorded_acceleration(m, d, p, q, v, tau_total, fext, a, out):
    kernel = kernel_for("recorded_acceleration", p, default=_KERNELS[("recorded_acceleration", None)])
    return typed_only(lambda m, d, p, q, v, tau_total, fext, a, out: kernel(m, d, p, q, v, tau_total, fext, a, out))
