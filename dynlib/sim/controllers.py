"""Controllers for `dynlib.simulate`: the motor torque tau(t, q, v), inside the compiled loop.

A controller is a small Python object that `dynlib.simulate` turns, once, into
its law's parameter tuple (`Controller.params`) and then into the one `Control`
record of the compiled loop (`control_record`: the law's code ``kind`` and every
law's parameters, those of the other laws zero-size) with the one workspace
`ControlWork` (`control_work`). Every controller is thus a value of the same
numba type: the loop's ``control`` stage (`control_torque`, `dynlib.sim.stages`)
branches on ``kind`` at every evaluation of the dynamics (four times per RK4
step), and a new controller compiles no new loop:

==================== ======================= ============================================================
controller            parameters (kind)       tau (nv,)
==================== ======================= ============================================================
`Zero`                none (ZERO_TORQUE)      0
`Constant`            `ConstantParams`        tau_c
                      (CONSTANT_TORQUE)
`TorqueTable`         `TableParams`           tau(t) linearly interpolated in a table (held at its ends)
                      (TABLE_TORQUE)
`PD`                  `PDParams`              kp (q* ⊖ q) - kd v  [+ g(q) with ``gravity_compensation``]
                      (PD_TORQUE)             (`pd_torque`)
`GravityCompensation` `GravityParams`         g(q) = RNEA(q, 0, 0)
                      (GRAVITY_TORQUE)
`ComputedTorque`      `ComputedTorqueParams`  M(q) (a_d + kd (v_d - v) + kp (q_d - q)) + h(q, v) + friction(v),
                      (COMPUTED_TORQUE)       one RNEA call with the commanded acceleration
                                              (`commanded_acceleration`, `tracking_torque`);
                                              the target (q_d, v_d, a_d)(t) is a table (`TableTarget`) or
                                              sinusoids (`SineTarget`), chosen by data too (``target``:
                                              TABLE_TARGET or SINE_TARGET, the other one zero-size)
`StateFeedback`       `FeedbackParams`        tau0 - K [q ⊖ q*; v - v*] on the gain's input coordinates
                      (STATE_FEEDBACK)        (`feedback_torque`; K from a gain file, `dynlib.files.gains`,
                                              e.g. an LQR gain of `dyn linearize`'s A, B)
==================== ======================= ============================================================

Joints that are not actuated get zero torque from the feedback controllers (PD,
gravity compensation, computed torque): the free-flyer root (a floating base is
not pushed by motors); state feedback drives its gain's input coordinates only (an
underactuated robot's motors: a cart-pole's cart). `Constant` and `TorqueTable` apply what they are given,
root entries included (a root "torque" is a wrench on the root body, body frame).

Gains and targets are given per coordinate name (``{"elbow": 50}``), as one number
for every actuated joint, or as a full vector. A PD joint without a target holds
its initial value; a PD joint without a gain (a dict that does not name it) has
zero gain. The computed-torque controller uses the plant's own model, joint
friction included (`simulate` hands it the friction it simulates), so that it
cancels the dynamics exactly.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import NamedTuple

import numpy as np

from .._numba.decorators import inline_kernel, kernel
from ..core import joints as J
from ..algorithms.rnea import rnea_kernel
from .dynamics import assign, joint_friction
from ..errors import InputError, closest

# ---------------------------------------------------------------- parameters, the control record, its workspace

# the control law of a Control record (its `kind`), and the computed-torque target's (ComputedTorqueParams.target)
ZERO_TORQUE, CONSTANT_TORQUE, TABLE_TORQUE, PD_TORQUE, GRAVITY_TORQUE, COMPUTED_TORQUE, STATE_FEEDBACK = range(7)
SINE_TARGET, TABLE_TARGET = 0, 1


class ControlWork(NamedTuple):
    """Workspace of the control stage, one for every controller (PD and gravity compensation use err, fext0)."""

    q_d: np.ndarray    # (nq,) computed torque: target positions at t
    v_d: np.ndarray    # (nv,) target velocities at t
    a_d: np.ndarray    # (nv,) target accelerations at t, then the commanded acceleration
    err: np.ndarray    # (nv,) position error (q* or q_d) ⊖ q (state feedback: q ⊖ q*)
    fext0: np.ndarray  # (nb, 6) zeros, never written: the external wrenches of the RNEA calls


class ConstantParams(NamedTuple):
    tau: np.ndarray  # (nv,)


class TableParams(NamedTuple):
    times: np.ndarray   # (n,) increasing sample times
    values: np.ndarray  # (n, nv) torques


class PDParams(NamedTuple):
    kp: np.ndarray        # (nv,) position gains
    kd: np.ndarray        # (nv,) velocity gains
    q_ref: np.ndarray     # (nq,) set-point
    actuated: np.ndarray  # (nv,) 1.0 where the controller acts, 0.0 on free-flyer roots
    gravity_compensation: bool


class GravityParams(NamedTuple):
    actuated: np.ndarray  # (nv,)


class TableTarget(NamedTuple):
    """A computed-torque target sampled in time (linear interpolation, held beyond the ends)."""

    times: np.ndarray  # (n,) increasing
    q: np.ndarray      # (n, nq)
    v: np.ndarray      # (n, nv)
    a: np.ndarray      # (n, nv)


class SineTarget(NamedTuple):
    """q_d = offset + amplitude sin(omega t + phase) per coordinate (Euclidean joints: nq == nv)."""

    amplitude: np.ndarray  # (nv,)
    omega: np.ndarray      # (nv,) angular frequency, rad/s
    phase: np.ndarray      # (nv,)
    offset: np.ndarray     # (nv,)


class ComputedTorqueParams(NamedTuple):
    kp: np.ndarray        # (nv,)
    kd: np.ndarray        # (nv,)
    actuated: np.ndarray  # (nv,)
    damping: np.ndarray   # (nv,) the plant's joint friction, cancelled: viscous ...
    friction: np.ndarray  # (nv,) ... and Coulomb,
    eps: float            # smoothed by tanh(v / eps)
    target: int           # SINE_TARGET or TABLE_TARGET: which of the two below is the target
    table: TableTarget    # (zero-size arrays when the target is sinusoids)
    sine: SineTarget      # (zero-size arrays when the target is a table)


class FeedbackParams(NamedTuple):
    K: np.ndarray         # (nv, 2 nv) gains on [q ⊖ q*; v - v*], zero rows where no input
    q_ref: np.ndarray     # (nq,) q*
    v_ref: np.ndarray     # (nv,) v*
    tau0: np.ndarray      # (nv,) feed-forward
    actuated: np.ndarray  # (nv,) 1.0 on the gain's input coordinates, else 0.0


def _empty(*ndims):
    return tuple(np.zeros((0,) * n) for n in ndims)


_NO_TABLE = TableTarget(*_empty(1, 2, 2, 2))
_NO_SINE = SineTarget(*_empty(1, 1, 1, 1))
_NONE = {ConstantParams: ConstantParams(*_empty(1)), TableParams: TableParams(*_empty(1, 2)),
         PDParams: PDParams(*_empty(1, 1, 1, 1), False), GravityParams: GravityParams(*_empty(1)),
         ComputedTorqueParams: ComputedTorqueParams(*_empty(1, 1, 1, 1, 1), 1.0, SINE_TARGET, _NO_TABLE, _NO_SINE),
         FeedbackParams: FeedbackParams(*_empty(2, 1, 1, 1, 1))}
_KINDS = {type(None): ZERO_TORQUE, ConstantParams: CONSTANT_TORQUE, TableParams: TABLE_TORQUE, PDParams: PD_TORQUE,
          GravityParams: GRAVITY_TORQUE, ComputedTorqueParams: COMPUTED_TORQUE,
          FeedbackParams: STATE_FEEDBACK}


class Control(NamedTuple):
    """The control stage's record: the law (`kind`) and every law's parameters, those of the other laws
    zero-size, so that every controller has the one numba type the simulation loop is compiled for."""

    kind: int                       # ZERO_TORQUE, CONSTANT_TORQUE, ...
    constant: ConstantParams
    table: TableParams
    pd: PDParams
    gravity: GravityParams
    computed: ComputedTorqueParams
    feedback: FeedbackParams


def control_record(params) -> Control:
    """The Control record of a controller's parameters (`Controller.params`; None: zero torque)."""
    slots = {cls: params if isinstance(params, cls) else empty for cls, empty in _NONE.items()}
    return Control(_KINDS[type(params)], slots[ConstantParams], slots[TableParams], slots[PDParams],
                   slots[GravityParams], slots[ComputedTorqueParams], slots[FeedbackParams])


def control_work(model) -> ControlWork:
    nq, nv = model.nq, model.nv
    return ControlWork(np.zeros(nq), np.zeros(nv), np.zeros(nv), np.zeros(nv), np.zeros((model.nb, 6)))


# ---------------------------------------------------------------- compiled part: the control stage

@kernel
def interpolate_rows(times, values, t, out):
    """out = the row of `values` at time t, linear between samples, held beyond the ends."""
    # i = the number of samples at or before t (np.searchsorted(times, t, "right"), written
    # out: numpy's version drags numba.np.arraymath, and scipy.linalg, into every start-up)
    n = times.shape[0]
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    i = lo
    if i == 0 or i == n:
        for k in range(out.shape[0]):
            out[k] = values[0 if i == 0 else n - 1, k]
    else:
        s = (t - times[i - 1]) / (times[i] - times[i - 1])
        for k in range(out.shape[0]):
            out[k] = (1.0 - s) * values[i - 1, k] + s * values[i, k]


@kernel
def position_error(jtype, idx_q, idx_v, q_ref, q, err):
    """err = q_ref ⊖ q per joint (v-sized, `J.difference_kernel`); zero on free-flyer joints (unactuated).
    (The model's three arrays, not the model tuple: a compiled call passes a tuple's arrays one by one.)"""
    J.difference_kernel(jtype, idx_q, idx_v, q, q_ref, err)
    for i in range(jtype.shape[0]):
        if jtype[i] == J.FREEFLYER:
            for k in range(6):
                err[idx_v[i] + k] = 0.0


@inline_kernel
def control_torque(m, d, c, w, t, q, v, tau):
    """tau (nv,) = the motor torque at (t, q, v) of the law c.kind of the Control record c (workspace w).
    The laws that need inverse dynamics share one RNEA call (one call site in the loop's code)."""
    k = c.kind
    if k == TABLE_TORQUE:
        interpolate_rows(c.table.times, c.table.values, t, tau)
    elif k == CONSTANT_TORQUE:
        assign(tau, c.constant.tau)
    elif k == STATE_FEEDBACK:
        feedback_torque(m, c.feedback, w, q, v, tau)
    elif k == COMPUTED_TORQUE:
        commanded_acceleration(m, c.computed, w, t, q, v)
        rnea_kernel(m, d, q, v, w.a_d, w.fext0, m.gravity, tau)
        tracking_torque(c.computed, v, tau)
    elif k == GRAVITY_TORQUE or (k == PD_TORQUE and c.pd.gravity_compensation):
        rnea_kernel(m, d, q, d.zeros_v, d.zeros_v, w.fext0, m.gravity, tau)
    else:
        tau[:] = 0.0
    if k == PD_TORQUE:
        pd_torque(m, c.pd, w, q, v, tau)
    elif k == GRAVITY_TORQUE:
        for i in range(tau.shape[0]):
            tau[i] *= c.gravity.actuated[i]


@inline_kernel
def pd_torque(m, p, w, q, v, tau):
    """tau = (kp (q* ⊖ q) - kd v + tau) on the actuated DoFs, tau the gravity torque g(q) or zero on entry."""
    position_error(m.jtype, m.idx_q, m.idx_v, p.q_ref, q, w.err)
    for k in range(v.shape[0]):
        tau[k] = (tau[k] + (p.kp[k] * w.err[k] - p.kd[k] * v[k])) * p.actuated[k]


@inline_kernel
def feedback_torque(m, p, w, q, v, tau):
    """tau = (tau0 - K [q ⊖ q*; v - v*]) on the gain's input coordinates (w.err = q ⊖ q*, `J.difference_kernel`,
    linearize's tangent coordinates)."""
    J.difference_kernel(m.jtype, m.idx_q, m.idx_v, p.q_ref, q, w.err)
    nv = v.shape[0]
    for i in range(nv):
        s = p.tau0[i]
        for j in range(nv):
            s -= p.K[i, j] * w.err[j] + p.K[i, nv + j] * (v[j] - p.v_ref[j])
        tau[i] = s * p.actuated[i]


@inline_kernel
def commanded_acceleration(m, p, w, t, q, v):
    """w.a_d = the computed-torque controller's commanded acceleration a_d + kd (v_d - v) + kp (q_d ⊖ q)."""
    if p.target == TABLE_TARGET:
        table_target(p.table, t, w.q_d, w.v_d, w.a_d)
    else:
        sine_target(p.sine, t, w.q_d, w.v_d, w.a_d)
    position_error(m.jtype, m.idx_q, m.idx_v, w.q_d, q, w.err)
    for k in range(v.shape[0]):
        w.a_d[k] += p.kd[k] * (w.v_d[k] - v[k]) + p.kp[k] * w.err[k]


@inline_kernel
def tracking_torque(p, v, tau):
    """tau = (RNEA(q, v, a_cmd) + joint friction(v)) on the actuated DoFs, tau the RNEA torque on entry."""
    for k in range(v.shape[0]):
        tau[k] = (tau[k] + joint_friction(p.damping[k], p.friction[k], p.eps, v[k])) * p.actuated[k]


@inline_kernel
def table_target(p, t, q_d, v_d, a_d):
    interpolate_rows(p.times, p.q, t, q_d)
    interpolate_rows(p.times, p.v, t, v_d)
    interpolate_rows(p.times, p.a, t, a_d)


@inline_kernel
def sine_target(p, t, q_d, v_d, a_d):
    for k in range(q_d.shape[0]):
        amp, w, ph = p.amplitude[k], p.omega[k], p.phase[k]
        s = math.sin(w * t + ph)
        q_d[k] = p.offset[k] + amp * s
        v_d[k] = amp * w * math.cos(w * t + ph)
        a_d[k] = -amp * w * w * s


# ---------------------------------------------------------------- Python side

def actuated_mask(model) -> np.ndarray:
    """(nv,) 1.0 for DoFs that motors drive, 0.0 for free-flyer DoFs."""
    mask = np.ones(model.nv)
    a = model.arrays
    for i in range(model.nb):
        if a.jtype[i] == J.FREEFLYER:
            mask[a.idx_v[i]:a.idx_v[i] + 6] = 0.0
    return mask


def per_dof(model, value, what, *, default=0.0, names=None, actuated_only=False) -> np.ndarray:
    """A (n,) vector from a number, a sequence, or a {coordinate name: number} dict.

    `names` are the coordinate names (default: model.v_names). A number applies to
    every coordinate (every actuated one with `actuated_only`); names missing from
    a dict get `default`.
    """
    names = tuple(model.v_names if names is None else names)
    n = len(names)
    if value is None:
        return np.full(n, float(default))
    if isinstance(value, dict):
        out = np.full(n, float(default))
        for name, x in value.items():
            if name not in names:
                raise InputError(f"{what}: robot '{model.name}' has no coordinate '{name}'; {closest(name, names)}")
            out[names.index(name)] = _number(x, f"{what}.{name}")
        return out
    if np.isscalar(value):
        x = _number(value, what)
        out = np.full(n, x)
        if actuated_only:
            out *= actuated_mask(model)
        return out
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.shape != (n,):
        raise InputError(f"{what}: expected {n} numbers ({', '.join(names)}), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what}: every value must be finite")
    return arr


def _number(x, what) -> float:
    try:
        f = float(x)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected a number, got {x!r}") from None
    if not math.isfinite(f):
        raise InputError(f"{what}: expected a finite number, got {x!r}")
    return f


def _increasing_times(times, what):
    t = np.ascontiguousarray(times, dtype=float).reshape(-1)
    if t.size == 0:
        raise InputError(f"{what}: the table has no rows")
    if not np.all(np.isfinite(t)):
        raise InputError(f"{what}: times must be finite")
    bad = np.flatnonzero(np.diff(t) <= 0)
    if bad.size:
        raise InputError(f"{what}: times must increase (row {bad[0] + 1} at t = {t[bad[0]]!r} "
                         f"is followed by t = {t[bad[0] + 1]!r})")
    return t


def _euclidean(model, what):
    bad = [n for n, t in zip(model.joint_names, model.arrays.jtype) if t in (J.FREEFLYER, J.PLANAR)]
    if bad:
        raise InputError(f"{what} needs a fixed-base robot with revolute and prismatic joints only; "
                         f"robot '{model.name}' has the joint(s) {', '.join(bad)}")


class Controller:
    """Base class: `params(model, q0, friction)` gives the law's parameter tuple (None for a law without
    parameters), which `control_record` makes the ``control`` stage's record.

    q0: the initial configuration; friction: the plant's joint friction (damping (nv,),
    friction (nv,), eps), which the computed-torque controller cancels."""

    name = "controller"

    def params(self, model, q0, friction) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Zero(Controller):
    """No motor torque."""

    name = "zero"

    def params(self, model, q0, friction):
        return None


@dataclasses.dataclass(frozen=True)
class Constant(Controller):
    """A constant torque: a vector (nv,) or {name: torque} by `model.tau_names` (the rest zero;
    a free-flyer's root.fx … root.tz is a wrench on the root body, in its frame)."""

    tau: object = None
    name = "constant"

    def params(self, model, q0, friction):
        return ConstantParams(per_dof(model, self.tau, "tau", names=model.tau_names))


@dataclasses.dataclass(frozen=True)
class TorqueTable(Controller):
    """Torques over time: `time` (n,) increasing, `tau` (n, nv); linear interpolation, held at the ends."""

    time: object
    tau: object
    name = "csv"

    def params(self, model, q0, friction):
        t = _increasing_times(self.time, "torque table")
        tau = np.ascontiguousarray(self.tau, dtype=float)
        if tau.shape != (t.size, model.nv):
            raise InputError(f"torque table: expected shape ({t.size}, {model.nv}), got {tau.shape}")
        if not np.all(np.isfinite(tau)):
            raise InputError("torque table: every torque must be finite")
        return TableParams(t, tau)


@dataclasses.dataclass(frozen=True)
class PD(Controller):
    """Set-point PD: tau = kp (q* ⊖ q) - kd v on the actuated joints, optionally + g(q).

    `target`: (nq,) or {coordinate name: value}; coordinates not named hold their
    initial value. `kp`, `kd`: a number, (nv,), or {name: gain} (unnamed: 0).
    """

    kp: object = 0.0
    kd: object = 0.0
    target: object = None
    gravity_compensation: bool = False
    name = "pd"

    def params(self, model, q0, friction):
        q_ref = np.array(q0, dtype=float)
        if isinstance(self.target, dict):
            for name, x in self.target.items():
                if name not in model.q_names:
                    raise InputError(f"target: robot '{model.name}' has no coordinate '{name}'; "
                                     f"{closest(name, model.q_names)}")
                q_ref[model.q_names.index(name)] = _number(x, f"target.{name}")
        elif self.target is not None:
            q_ref = per_dof(model, self.target, "target", names=model.q_names)
        kp = per_dof(model, self.kp, "kp", actuated_only=True)
        kd = per_dof(model, self.kd, "kd", actuated_only=True)
        return PDParams(kp, kd, q_ref, actuated_mask(model), bool(self.gravity_compensation))


@dataclasses.dataclass(frozen=True)
class GravityCompensation(Controller):
    """tau = g(q): holds the robot still against gravity (actuated joints only)."""

    name = "gravity-compensation"

    def params(self, model, q0, friction):
        return GravityParams(actuated_mask(model))


@dataclasses.dataclass(frozen=True)
class Sinusoids:
    """q_d(t) = offset + amplitude sin(2 pi frequency t + phase), per coordinate.

    Each argument is a number, (nq,), or {name: value}; a coordinate without an
    `offset` keeps its initial value; amplitude defaults to 0 (hold).
    """

    amplitude: object = None
    frequency: object = None
    phase: object = None
    offset: object = None


@dataclasses.dataclass(frozen=True)
class TargetTable:
    """A target trajectory: `time` (n,), `q` (n, nq), optional `v`, `a` (n, nv).

    Missing velocities and accelerations are the time derivatives of the linear
    interpolation's samples (numpy.gradient, second order inside).
    """

    time: object
    q: object
    v: object = None
    a: object = None


@dataclasses.dataclass(frozen=True)
class ComputedTorque(Controller):
    """Computed torque (inverse-dynamics control) tracking `target` (Sinusoids or TargetTable).

    tau = M(q) (a_d + kd (v_d - v) + kp (q_d - q)) + h(q, v) + joint friction(v),
    one RNEA call with the commanded acceleration. Fixed-base robots with
    revolute/prismatic joints only.
    """

    kp: object = 0.0
    kd: object = 0.0
    target: object = None
    name = "computed-torque"

    def params(self, model, q0, friction):
        _euclidean(model, "the computed-torque controller")
        kp = per_dof(model, self.kp, "kp", actuated_only=True)
        kd = per_dof(model, self.kd, "kd", actuated_only=True)
        damping, fric, eps = friction
        tgt = _target(model, self.target if self.target is not None else Sinusoids(), q0)
        table = isinstance(tgt, TableTarget)
        return ComputedTorqueParams(kp, kd, actuated_mask(model), _floats(damping), _floats(fric), float(eps),
                                    TABLE_TARGET if table else SINE_TARGET, tgt if table else _NO_TABLE,
                                    _NO_SINE if table else tgt)


@dataclasses.dataclass(frozen=True)
class StateFeedback(Controller):
    """Linear state feedback about an operating point: tau = tau0 - K [q ⊖ q*; v - v*] on the input
    coordinates, nothing on the others (e.g. an LQR gain from `dyn linearize`'s discrete A, B).

    `gain`: a gain file (`dynlib.files.gains`: header ``input,q.<coord>…,qd.<coord>…``, one row per input),
    or K (len(inputs), 2 nv) with `inputs` naming its rows (default: every coordinate but a free-flyer's).
    `target`: {"q": {name: value} or (nq,), "qd": {name: value} or (nv,)} (default: q = 0, the root at the
    identity, and qd = 0). `tau`: the feed-forward, (nv,) or {name: value} by `model.tau_names`, input
    coordinates only (default: the torque holding the target, gravity compensation at qd* = 0, with the
    plant's joint friction at qd*, as `dyn linearize`'s point).
    """

    gain: object
    inputs: object = None
    target: object = None
    tau: object = None
    name = "state-feedback"

    def params(self, model, q0, friction):
        inputs, K = self._gain(model)
        idx = [model.v_names.index(n) for n in inputs]
        nv = model.nv
        K_full, actuated = np.zeros((nv, 2 * nv)), np.zeros(nv)
        K_full[idx], actuated[idx] = K, 1.0
        q_ref, v_ref = _operating_point(model, self.target)
        if self.tau is None:
            tau0 = _holding_torque(model, q_ref, v_ref, friction)
        else:
            tau0 = per_dof(model, self.tau, "tau", names=model.tau_names)
            passive = [n for k, n in enumerate(model.tau_names) if tau0[k] != 0 and not actuated[k]]
            if passive:
                raise InputError(f"tau: {', '.join(passive)} not an input of the gain ({', '.join(inputs)}): "
                                 "state feedback drives only its inputs")
        return FeedbackParams(K_full, q_ref, v_ref, _floats(tau0 * actuated), actuated)

    def _gain(self, model):
        """(inputs, K (len(inputs), 2 nv)) from the gain file or the array."""
        if isinstance(self.gain, (str, bytes)) or hasattr(self.gain, "__fspath__"):
            from ..files.gains import read_gain

            if self.inputs is not None:
                raise InputError("inputs: a gain file names its inputs (its 'input' column); give one or the other")
            return read_gain(self.gain, model)
        if self.inputs is None:
            inputs = tuple(n for n, a in zip(model.v_names, actuated_mask(model)) if a)
        else:
            inputs = (self.inputs,) if isinstance(self.inputs, str) else tuple(self.inputs)
        for name in inputs:
            if name not in model.v_names:
                raise InputError(f"inputs: robot '{model.name}' has no coordinate '{name}'; "
                                 f"{closest(name, model.v_names)}")
        if len(set(inputs)) != len(inputs):
            raise InputError(f"inputs: a coordinate is named twice: {', '.join(inputs)}")
        K = np.asarray(self.gain, dtype=float)
        K = K.reshape(1, -1) if K.ndim == 1 and len(inputs) == 1 else K
        if K.shape != (len(inputs), 2 * model.nv):
            raise InputError(f"gain: expected shape ({len(inputs)}, {2 * model.nv}) (inputs {', '.join(inputs)} "
                             f"x the state q.*, qd.*), got {K.shape}")
        if not np.all(np.isfinite(K)):
            raise InputError("gain: every entry must be finite")
        return inputs, K


def _operating_point(model, target):
    """(q* (nq,), v* (nv,)) of a state-feedback target {"q": …, "qd": …}: unnamed coordinates at zero
    (the root at the identity; a quaternion given is normalised)."""
    target = {} if target is None else target
    if not isinstance(target, dict) or not set(target) <= {"q", "qd"}:
        raise InputError(f"target: expected {{'q': …, 'qd': …}}, got {target!r}")
    q = model.q_neutral.copy()
    if target.get("q") is not None:
        given = per_dof(model, target["q"], "target.q", default=np.nan, names=model.q_names)
        q = np.where(np.isnan(given), q, given)
    for joint, iq in model.quaternions:
        n = float(np.linalg.norm(q[iq:iq + 4]))
        if not n > 0:
            raise InputError(f"target.q: the quaternion of joint '{joint}' is zero")
        q[iq:iq + 4] /= n
    v = per_dof(model, target.get("qd"), "target.qd")
    return _floats(q), _floats(v)


def _holding_torque(model, q, v, friction):
    """RNEA(q, v, 0) + damping v + friction tanh(v / eps): the torque that holds (q, v) (gravity compensation
    at v = 0), with the plant's joint friction (as `dynlib.motion.linearize.holding_torque`)."""
    from .contact.points import at_configuration  # (the set-up kernel every run compiles)

    damping, fric, eps = friction
    return at_configuration(model, q, v).tau + damping * v + fric * np.tanh(v / eps)


def _target(model, tgt, q0):
    """The TableTarget or SineTarget of a computed-torque target."""
    if isinstance(tgt, TargetTable):
        t = _increasing_times(tgt.time, "target")
        Q = _table(tgt.q, (t.size, model.nq), "target q")
        V = np.gradient(Q, t, axis=0) if tgt.v is None else _table(tgt.v, (t.size, model.nv), "target v")
        A = np.gradient(V, t, axis=0) if tgt.a is None else _table(tgt.a, (t.size, model.nv), "target a")
        if t.size == 1:
            V, A = np.zeros_like(Q), np.zeros_like(Q)
        return TableTarget(t, Q, _floats(V), _floats(A))
    if not isinstance(tgt, Sinusoids):
        raise InputError(f"computed-torque target must be Sinusoids or TargetTable, got {type(tgt).__name__}")
    offset = np.array(q0, dtype=float)
    if tgt.offset is not None:
        given = per_dof(model, tgt.offset, "offset", default=np.nan)
        offset = np.where(np.isnan(given), offset, given)
    return SineTarget(per_dof(model, tgt.amplitude, "amplitude"),
                      2.0 * np.pi * per_dof(model, tgt.frequency, "frequency"),
                      per_dof(model, tgt.phase, "phase"), _floats(offset))


def _floats(x):
    return np.ascontiguousarray(x, dtype=np.float64)


def _table(x, shape, what):
    arr = np.ascontiguousarray(x, dtype=float)
    if arr.shape != shape:
        raise InputError(f"{what}: expected shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what}: every value must be finite")
    return arr


class StiffGainsWarning(UserWarning):
    """A controller's gains exceed the stability limit of an explicit scheme at the time step."""


RK4_REAL_LIMIT = 2.785293563405282  # the real-axis stability limit of classical RK4: |R(-x)| <= 1 for x <= this


def implicit_gains(params, nv, dt, integrator, mode="implicit") -> tuple:
    """(gain_m, gain_v), (nv,) each: dt kd + dt² kp and dt kp of a PD controller taken implicitly
    (`dynlib.sim.dynamics`: semi-implicit and euler, `mode` "implicit"); zeros otherwise (explicit)."""
    if not isinstance(params, PDParams) or integrator not in ("semi-implicit", "euler") or mode != "implicit":
        return np.zeros(nv), np.zeros(nv)
    return dt * params.kd + dt * dt * params.kp, dt * params.kp


def _rk4_stable(kp, kd, mii, dt) -> bool:
    """Whether classical RK4 is stable at dt on mii x'' = -kp x - kd x' (both eigenvalues of the
    linear system inside |1 + z + z²/2 + z³/6 + z⁴/24| <= 1)."""
    z = np.roots([1.0, kd / mii, kp / mii]).astype(complex) * dt
    return bool(np.all(np.abs(1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24) <= 1.0 + 1e-12))


def warn_stiff_gains(model, params, M, dt) -> list:
    """Warn (`StiffGainsWarning`) for every joint whose PD gains make classical RK4 unstable at dt, with
    M_ii the joint's diagonal entry of M = M(q0), the mass matrix at the start (its inertia with the rest of
    the robot held). Returns the messages. Only PD controllers are checked."""
    if not isinstance(params, PDParams) or not (np.any(params.kd > 0) or np.any(params.kp > 0)):
        return []
    diag = np.diag(M)
    messages = []
    for k, name in enumerate(model.v_names):
        kp, kd, mii = float(params.kp[k]), float(params.kd[k]), float(diag[k])
        if mii <= 0 or (kp <= 0 and kd <= 0) or _rk4_stable(kp, kd, mii, dt):
            continue
        lo, hi = 0.0, dt  # the largest stable step, by bisection
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if _rk4_stable(kp, kd, mii, mid) else (lo, mid)
        messages.append(f"rk4 at dt = {dt:g} s is unstable for the PD gains of joint '{name}' (kp = {kp:g}, "
                        f"kd = {kd:g}, M_ii = {mii:.3g} at q0): kd·dt/M_ii = {kd * dt / mii:.3g}, RK4's "
                        f"stability limit is {RK4_REAL_LIMIT:.3f} (kp·dt²/M_ii = {kp * dt * dt / mii:.3g}); "
                        f"it is stable for dt <= {lo:.3g} s; semi-implicit and euler take the gains implicitly")
    for message in messages:
        warnings.warn(message, StiffGainsWarning, stacklevel=4)
    return messages


def as_controller(controller) -> Controller:
    """None -> Zero(); a Controller passes through."""
    if controller is None:
        return Zero()
    if isinstance(controller, Controller):
        return controller
    raise InputError(f"controller must be a dynlib.sim.controllers.Controller (Zero, Constant, TorqueTable, PD, "
                     f"GravityCompensation, ComputedTorque, StateFeedback), got {type(controller).__name__}")


# ------------------------------------------------------------------ mimic joints (`dynlib.sim.mimic`)

def check_controller(model, controller, params):
    """params for the coupled robot. InputError when `controller` names a follower (a PD's or computed
    torque's kp, kd, target; a constant torque): it has no motor. A gain given as one number: zero on a
    follower for a PD; for computed torque, the follower's gains and target are its leader's through the
    coupling (its commanded acceleration ``multiplier * a_leader``), so the torque is Gᵀ RNEA(q, v, G a_r).
    A constant or table torque on a follower is an error too."""
    from .mimic import coupled_record

    followers = {f: leader for f, leader, *_ in model.mimic}
    for key in ("kp", "kd", "target", "tau"):
        named = getattr(controller, key, None)
        for name in (named if isinstance(named, dict) else ()):
            if name in followers:
                raise InputError(f"{key}.{name}: joint '{name}' mimics '{followers[name]}' and has no motor of its "
                                 f"own: drive '{followers[name]}' (the coupling moves '{name}')")
    c = coupled_record(model)
    for field in ("tau", "values"):
        x = getattr(params, field, None)
        if isinstance(x, np.ndarray) and x.shape[-1] == model.nv and x.size and np.any(x[..., c.dof] != 0):
            name = next(f for f, k in zip(followers, c.dof) if np.any(x[..., k] != 0))
            raise InputError(f"tau.{name}: joint '{name}' mimics '{followers[name]}' and has no motor of its own: "
                             f"give its torque to '{followers[name]}' (it acts through the multiplier)")
    if isinstance(params, ComputedTorqueParams):
        return _coupled_target(c, params)
    for field in ("kp", "kd"):
        x = getattr(params, field, None)
        if isinstance(x, np.ndarray) and x.shape == (model.nv,):
            x[c.dof] = 0.0
    return params


def _coupled_target(c, p):
    """Computed torque's params with each follower's gains its leader's and its target the leader's coupled."""
    kp, kd = p.kp.copy(), p.kd.copy()
    kp[c.dof], kd[c.dof] = kp[c.leader], kd[c.leader]
    s = p.sine
    if s.amplitude.size:  # Euclidean joints: q and v indices agree
        amp, om, ph, off = (x.copy() for x in s)
        amp[c.dof], om[c.dof], ph[c.dof] = c.mult * amp[c.leader], om[c.leader], ph[c.leader]
        off[c.dof] = c.mult * off[c.leader] + c.offset
        s = type(s)(amp, om, ph, off)
    t = p.table
    if t.times.size:
        Q, V, A = t.q.copy(), t.v.copy(), t.a.copy()
        Q[:, c.dof] = c.mult * Q[:, c.leader] + c.offset
        V[:, c.dof], A[:, c.dof] = c.mult * V[:, c.leader], c.mult * A[:, c.leader]
        t = type(t)(t.times, Q, V, A)
    return p._replace(kp=kp, kd=kd, sine=s, table=t)
