"""Controllers for `dynlib.simulate`: the motor torque tau(t, q, v), inside the compiled loop.

A controller is a small Python object that `dynlib.simulate` turns, once, into
`ControllerArrays` (a type code and parameter arrays); the compiled loop then
evaluates it at every evaluation of the dynamics (four times per RK4 step):
`open_loop` for the open-loop ones; for the feedback ones, `reference` (which RNEA
term they need), the RNEA call, then `feedback` (their own terms).

==================== ============================================================
controller            tau (nv,)
==================== ============================================================
`Zero`                0
`Constant`            tau_c
`TorqueTable`         tau(t) linearly interpolated in a table (held at its ends)
`PD`                  kp (q* ⊖ q) - kd v  [+ g(q) with ``gravity_compensation``]
`GravityCompensation` g(q) = RNEA(q, 0, 0)
`ComputedTorque`      M(q) (a_d + kd (v_d - v) + kp (q_d - q)) + h(q, v) + friction(v),
                      one RNEA call with the commanded acceleration; the target
                      (q_d, v_d, a_d)(t) is a table or sinusoids
==================== ============================================================

Joints that are not actuated get zero torque from the feedback controllers (PD,
gravity compensation, computed torque): the free-flyer root (a floating base is
not pushed by motors). `Constant` and `TorqueTable` apply what they are given,
root entries included (a root "torque" is a wrench on the root body, body frame).

Gains and targets are given per coordinate name (``{"elbow": 50}``), as one number
for every actuated joint, or as a full vector. A PD joint without a target holds
its initial value; a PD joint without a gain (a dict that does not name it) has
zero gain. The computed-torque controller uses the plant's own model, joint
friction included, so that it cancels the dynamics exactly.
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from .compiled import jit
from . import joints as J
from .errors import InputError, closest

ZERO = 0
CONSTANT = 1
TABLE = 2
PD_CODE = 3
GRAVITY = 4
COMPUTED = 5
FEEDBACK = PD_CODE  # codes from here on read the state (q, v) and call RNEA

_jit = jit()


class ControllerArrays(NamedTuple):
    """A controller as the compiled loop takes it. Unused arrays have length 0."""

    code: int             # ZERO, CONSTANT, TABLE, PD_CODE, GRAVITY or COMPUTED
    actuated: np.ndarray  # (nv,) 1.0 where feedback controllers act, 0.0 on free-flyer roots
    tau: np.ndarray       # (nv,) constant torques (CONSTANT)
    kp: np.ndarray        # (nv,) position gains (PD, COMPUTED)
    kd: np.ndarray        # (nv,) velocity gains (PD, COMPUTED)
    q_ref: np.ndarray     # (nq,) PD set-point
    gravity_comp: int     # PD: 1 adds g(q)
    times: np.ndarray     # (n,) increasing sample times of `values` or of the target table
    values: np.ndarray    # (n, nv) torque table (TABLE)
    ref_q: np.ndarray     # (n, nq) target positions (COMPUTED from a table)
    ref_v: np.ndarray     # (n, nv) target velocities
    ref_a: np.ndarray     # (n, nv) target accelerations
    sine: np.ndarray      # (4, nv) amplitude, angular frequency (rad/s), phase, offset (COMPUTED, no table)
    wq: np.ndarray        # (nq,) scratch, target positions
    wv: np.ndarray        # (3, nv) scratch: position error, target velocity, target / commanded acceleration
    fext0: np.ndarray     # (nb, 6) zeros, never written


# ---------------------------------------------------------------- compiled part

@_jit
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


@_jit
def position_error(jtype, idx_q, idx_v, q_ref, q, err):
    """err = q_ref ⊖ q per joint (v-sized, `J.difference_kernel`); zero on free-flyer joints (unactuated)."""
    J.difference_kernel(jtype, idx_q, idx_v, q, q_ref, err)
    for i in range(jtype.shape[0]):
        if jtype[i] == J.FREEFLYER:
            for k in range(6):
                err[idx_v[i] + k] = 0.0


@_jit
def _target(c, t):
    """c.wq, c.wv[1], c.wv[2] = the target q_d, v_d, a_d at time t (computed torque)."""
    if c.times.shape[0] > 0:
        interpolate_rows(c.times, c.ref_q, t, c.wq)
        interpolate_rows(c.times, c.ref_v, t, c.wv[1])
        interpolate_rows(c.times, c.ref_a, t, c.wv[2])
        return
    for k in range(c.wq.shape[0]):  # sinusoids: only Euclidean joints, nq == nv
        amp, w, ph = c.sine[0, k], c.sine[1, k], c.sine[2, k]
        s = math.sin(w * t + ph)
        c.wq[k] = c.sine[3, k] + amp * s
        c.wv[1, k] = amp * w * math.cos(w * t + ph)
        c.wv[2, k] = -amp * w * w * s


@_jit
def open_loop(code, tau_c, times, values, t, tau):
    """tau = the torque of an open-loop controller (ZERO, CONSTANT, TABLE) at time t."""
    if code == CONSTANT:
        tau[:] = tau_c
    elif code == TABLE:
        interpolate_rows(times, values, t, tau)
    else:
        tau[:] = 0.0


# A feedback controller's torque is tau = RNEA(q, v_r, a_r) + its own terms. `reference`
# says which RNEA it needs (and leaves a_r in c.wv[2]); the simulation loop calls RNEA
# itself (it holds the model and workspace); `feedback` adds the controller's terms.
RNEA_NONE = 0     # plain PD: no model term
RNEA_STATIC = 1   # g(q) = RNEA(q, 0, 0): gravity compensation, PD + g
RNEA_MOTION = 2   # RNEA(q, v, a_cmd): computed torque


@_jit
def reference(c, jtype, idx_q, idx_v, t, q, v):
    """The RNEA term a feedback controller needs at (t, q, v); a_cmd -> c.wv[2] for RNEA_MOTION."""
    if c.code == GRAVITY or (c.code == PD_CODE and c.gravity_comp):
        return RNEA_STATIC
    if c.code == PD_CODE:
        return RNEA_NONE
    _target(c, t)  # computed torque: a_cmd = a_d + kd (v_d - v) + kp (q_d ⊖ q)
    err = c.wv[0]
    position_error(jtype, idx_q, idx_v, c.wq, q, err)
    for k in range(v.shape[0]):
        c.wv[2, k] += c.kd[k] * (c.wv[1, k] - v[k]) + c.kp[k] * err[k]
    return RNEA_MOTION


@_jit
def feedback(c, damping, friction, eps, jtype, idx_q, idx_v, q, v, tau):
    """tau (holding the RNEA term) += the controller's own terms; zero on unactuated DoFs.

    PD: kp (q* ⊖ q) - kd v. Computed torque: + damping v + friction tanh(v/eps), the
    plant's joint friction (damping, friction, eps), so that it cancels.
    """
    nv = v.shape[0]
    if c.code == PD_CODE:
        err = c.wv[0]
        position_error(jtype, idx_q, idx_v, c.q_ref, q, err)
        for k in range(nv):
            tau[k] += c.kp[k] * err[k] - c.kd[k] * v[k]
    elif c.code == COMPUTED:
        for k in range(nv):
            tau[k] += damping[k] * v[k] + friction[k] * math.tanh(v[k] / eps)
    for k in range(nv):
        tau[k] *= c.actuated[k]


# ---------------------------------------------------------------- Python side

def _empty_arrays(model, code, **fields):
    nq, nv, nb = model.nq, model.nv, model.nb
    base = dict(
        code=int(code), actuated=actuated_mask(model), tau=np.zeros(nv), kp=np.zeros(nv), kd=np.zeros(nv),
        q_ref=np.zeros(nq), gravity_comp=0, times=np.zeros(0), values=np.zeros((0, nv)),
        ref_q=np.zeros((0, nq)), ref_v=np.zeros((0, nv)), ref_a=np.zeros((0, nv)), sine=np.zeros((4, nv)),
        wq=np.zeros(nq), wv=np.zeros((3, nv)), fext0=np.zeros((nb, 6)),
    )
    base.update(fields)
    for k, val in base.items():
        if isinstance(val, np.ndarray):
            base[k] = np.ascontiguousarray(val, dtype=np.float64)
    return ControllerArrays(**base)


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
    """Base class: `arrays(model, q0)` gives the compiled form."""

    name = "controller"

    def arrays(self, model, q0) -> ControllerArrays:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Zero(Controller):
    """No motor torque."""

    name = "zero"

    def arrays(self, model, q0):
        return _empty_arrays(model, ZERO)


@dataclasses.dataclass(frozen=True)
class Constant(Controller):
    """A constant torque: a vector (nv,) or {name: torque} by `model.tau_names` (the rest zero;
    a free-flyer's root.fx … root.tz is a wrench on the root body, in its frame)."""

    tau: object = None
    name = "constant"

    def arrays(self, model, q0):
        return _empty_arrays(model, CONSTANT, tau=per_dof(model, self.tau, "tau", names=model.tau_names))


@dataclasses.dataclass(frozen=True)
class TorqueTable(Controller):
    """Torques over time: `time` (n,) increasing, `tau` (n, nv); linear interpolation, held at the ends."""

    time: object
    tau: object
    name = "csv"

    def arrays(self, model, q0):
        t = _increasing_times(self.time, "torque table")
        tau = np.ascontiguousarray(self.tau, dtype=float)
        if tau.shape != (t.size, model.nv):
            raise InputError(f"torque table: expected shape ({t.size}, {model.nv}), got {tau.shape}")
        if not np.all(np.isfinite(tau)):
            raise InputError("torque table: every torque must be finite")
        return _empty_arrays(model, TABLE, times=t, values=tau)


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

    def arrays(self, model, q0):
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
        return _empty_arrays(model, PD_CODE, kp=kp, kd=kd, q_ref=q_ref, gravity_comp=int(bool(self.gravity_compensation)))


@dataclasses.dataclass(frozen=True)
class GravityCompensation(Controller):
    """tau = g(q): holds the robot still against gravity (actuated joints only)."""

    name = "gravity-compensation"

    def arrays(self, model, q0):
        return _empty_arrays(model, GRAVITY)


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

    def arrays(self, model, q0):
        _euclidean(model, "the computed-torque controller")
        kp = per_dof(model, self.kp, "kp", actuated_only=True)
        kd = per_dof(model, self.kd, "kd", actuated_only=True)
        tgt = self.target if self.target is not None else Sinusoids()
        if isinstance(tgt, TargetTable):
            t = _increasing_times(tgt.time, "target")
            Q = _table(tgt.q, (t.size, model.nq), "target q")
            V = np.gradient(Q, t, axis=0) if tgt.v is None else _table(tgt.v, (t.size, model.nv), "target v")
            A = np.gradient(V, t, axis=0) if tgt.a is None else _table(tgt.a, (t.size, model.nv), "target a")
            if t.size == 1:
                V, A = np.zeros_like(Q), np.zeros_like(Q)
            return _empty_arrays(model, COMPUTED, kp=kp, kd=kd, times=t, ref_q=Q, ref_v=V, ref_a=A)
        if not isinstance(tgt, Sinusoids):
            raise InputError(f"computed-torque target must be Sinusoids or TargetTable, got {type(tgt).__name__}")
        sine = np.zeros((4, model.nv))
        sine[0] = per_dof(model, tgt.amplitude, "amplitude")
        sine[1] = 2.0 * np.pi * per_dof(model, tgt.frequency, "frequency")
        sine[2] = per_dof(model, tgt.phase, "phase")
        offset = np.array(q0, dtype=float)
        if tgt.offset is not None:
            given = per_dof(model, tgt.offset, "offset", default=np.nan)
            offset = np.where(np.isnan(given), offset, given)
        sine[3] = offset
        return _empty_arrays(model, COMPUTED, kp=kp, kd=kd, sine=sine)


def _table(x, shape, what):
    arr = np.ascontiguousarray(x, dtype=float)
    if arr.shape != shape:
        raise InputError(f"{what}: expected shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what}: every value must be finite")
    return arr


def as_controller(controller) -> Controller:
    """None -> Zero(); a Controller passes through."""
    if controller is None:
        return Zero()
    if isinstance(controller, Controller):
        return controller
    raise InputError(f"controller must be a dynlib.controllers.Controller (Zero, Constant, TorqueTable, PD, "
                     f"GravityCompensation, ComputedTorque), got {type(controller).__name__}")
