"""Forward-dynamics simulation: one compiled loop from an initial state, its step a fixed pipeline of stages.

`simulate(model, q0, v0, dt=..., steps=...)` integrates the rigid-body dynamics
(`dynlib.sim.integrators`: euler, semi-implicit, rk4) under a controller
(`dynlib.sim.controllers`), joint friction (SPEC §2), external wrenches and contacts
(`dynlib.sim.contact`), and returns a `SimulationResult`: rows at t = 0, K dt, 2 K dt, …
(``every = K``; ``steps // K + 1`` rows) of

- ``q`` (nq), ``v`` (nv): the state at that time;
- ``a`` (nv): the acceleration at that state, ``FD(q, v, tau + friction, f_ext)``
  (explicit, whatever the friction integration), so that inverse dynamics on the
  rows gives back ``tau`` (with contacts, plus the contact forces' ``Jᵀ f``);
- ``tau`` (nv): the controller's motor torque at that time, saturated at the URDF's effort limits (joint
  friction not included);
- ``limit`` (nv): the torque of the position limits held (`dynlib.sim.joint_limits`; the ``limit.*``
  columns), so that inverse dynamics on the rows gives back ``tau + limit``;
- ``limit_step`` (nv): their torque over the step from the row, the scheme's weighted sum of its
  evaluations' (rk4: Σ_s b_s λ_s; the last row: its first evaluation's), whose work `dyn energy-check`
  balances (`dynlib.runs.checks.limit_work_series`);
- ``energy`` (3): kinetic, potential, total (when asked);
- with ``contacts``: ``contact_force`` (nc, 3), the world force on each contact
  point (the ``contact.<name>.fx fy fz tx ty tz`` columns, torques zero: point
  contacts), and ``penetration`` (nc), the depth below the ground (> 0 inside).

One step, from state k to k + 1 (`_run`, compiled):

1. the scheme's substeps (one, or four for rk4: the RK stages): `integrators.substep_state`
   gives the substep's state (t_s, q_s, v_s), the state k itself first;
2. `evaluate` runs the pipeline at that state, stage by stage (`dynlib.sim.stages`), each
   stage summing every source present, switched by data (MuJoCo's forward pipeline), into
   the `dynamics.Evaluation` sums (tau, tau_total, f_ext):

   a. ``control``: the controller's motor torque tau (`controllers.control_torque`: the law
      of ``Control.kind``, e.g. PD -> `controllers.pd_torque`);
   then ``saturate``: tau clipped at the URDF's ±effort (`joint_limits.saturate`; a PD's implicit gains
      dropped on a saturated joint, and the evaluation run once more if an implicit torque ended past its
      bound: `joint_limits.over_effort`);
   b. ``joint_forces``: tau_total = tau + joint friction (`dynamics.joint_forces`);
   c. ``body_forces``: the body wrenches f_ext: external wrenches (`dynamics.wrench_forces`),
      plus the contact forces of soft contact (`contact.soft.soft_forces`); then ``limit_torques``:
      tau_total += the position limits' torque (`joint_limits.limit_torques`: zero away from the limits);
   d. ``acceleration``: a from (q_s, v_s, tau_total, f_ext): the KKT system of bilateral contact
      (`contact.bilateral`), or one time step with contact impulses (`contact.unilateral`,
      `contact.relaxed`; semi-implicit Euler only, whose acceleration is then ``(v+ − v)/dt``);
      without those, the ABA (`dynamics.Implicit` mode FREE), or ``(M + dt B) a = tau_total - h``
      under implicit joint friction and PD gains, one ABA with the diagonal dt B on each pivot
      D_k, O(n) (IMPLICIT_FRICTION; IMPLICIT_GAINS with only the PD gains implicit:
      `dynamics.implicit_acceleration`);

   later substeps also get their configuration rate (`integrators.dexp_inv`);
3. after the first substep, the state k is checked and, every K steps, recorded
   (`record`: q, v, the acceleration, tau, contact forces, energy);
4. `integrators.advance` moves to the state k + 1, which is checked for divergence.

Mimic joints (`dynlib.sim.mimic`): the loop integrates the coupled robot on the tree's full state; the
control stage's torque on a follower is folded onto its leader, the stages that form M solve the coupled
system ``Gᵀ M G`` (contact rows ``J G``; the tree's ABA is not used), and after each step every follower is
set from its leader (`mimic.hold_state`). Without mimic joints those kernels loop over nothing.

The parameters and workspaces of every stage travel in one `Pipeline` tuple that
`simulate` builds (`_pipeline`), of one numba type for every scenario: the
controller's `controllers.Control` record (the law's code and every law's
parameters, the unused ones zero-size), its `controllers.ControlWork`, the
`dynamics.Forces` (joint friction and external wrenches; zeros and empty arrays
when absent), the `dynamics.Implicit` record (the friction mode's code, and what
the acceleration stage takes implicitly: joint friction, a PD's gains), the
`contact.ContactModel` record (the model's code, NO_CONTACT without contacts, the
points, and every model's parameters and workspace, the unused ones zero-size)
and the `dynamics.Evaluation` sums. The energy of the recorded rows is data as
well: ``Rows.energy`` has no rows when it is not asked.
So numba compiles `_run` once (per layout of the model arrays, which is the same
for every robot, fixed or floating base) and caches it: a scenario of another
controller, contact model or integrator compiles no new loop (`loop_is_cached`).
The price: the first run compiles every stage's kernels, the contact solvers and
the energy's included. Long runs are cut into
chunks of about 1 % of the steps so that a progress callback can report between
them (nothing in Python per step); `result.contact_solver` reports the steps
where the impulse solver (PGS) stopped on its iteration limit.

Divergence: a non-finite acceleration or state, or a coordinate or velocity
beyond `max_state` in absolute value, stops the run; the rows up to the last
finite state are kept and `result.diverged` says at which step and time.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import NamedTuple

import numpy as np
from .._numba import cache
from .._numba.decorators import compiled_entry, inline_kernel, kernel
from . import controllers as C
from . import integrators as I
from ..algorithms.aba import check_dynamics
from ..core.model import check_forward_dynamics
from ..algorithms.energy import kinetic_kernel, potential_after_placements
from .contact import RELAXED, UNILATERAL, ContactModel, build as build_contact, contact_record
from .contact.points import at_configuration
from .controllers import Control, ControlWork, check_controller, control_record, control_work
from .dynamics import (FREE, IMPLICIT_FRICTION, IMPLICIT_GAINS, Evaluation, Forces, Implicit, ImplicitFrictionNote,
                       applied_torque, assign, evaluation)
from ..errors import InputError, NumericalError
from .joint_limits import Limits, limits_record, limit_torques, over_effort, saturate, unpin
from .mimic import chain, couple_vector, coupled_limits, coupled_record, hold_state, initial_state
from .stages import acceleration, body_forces, control_torque, joint_forces, recorded_acceleration

# divergence reasons
NONFINITE_ACCELERATION = 1
NONFINITE_STATE = 2
BEYOND_MAX_STATE = 3
SINGULAR = 4
REASONS = {
    NONFINITE_ACCELERATION: "the acceleration is not finite (NaN or Inf)",
    NONFINITE_STATE: "the state is not finite (NaN or Inf)",
    BEYOND_MAX_STATE: "a coordinate or velocity exceeds max_state",
    SINGULAR: "the mass matrix plus the implicit friction term (or the contact Delassus matrix) is not "
              "positive definite",
}

MAX_COUNT = 2 ** 53  # steps and every: 64-bit integers in the kernels, and a float time counts them exactly
CHUNKED_ABOVE = 20_000  # steps: below this, one compiled call (Ctrl-C waits for it)


class Pipeline(NamedTuple):
    """The parameters and workspaces of every stage of one evaluation, as `_run` takes them (see the module
    docstring): one numba type for every scenario."""

    control: Control          # the controller's law (kind) and parameters
    control_work: ControlWork
    forces: Forces            # joint friction and external wrenches (none: zeros, empty arrays)
    implicit: Implicit        # what the acceleration stage takes implicitly: the mode, joint friction, PD gains
    contact: ContactModel     # the contact model (kind, NO_CONTACT without contacts), points, parameters, workspaces
    sums: Evaluation          # the generalized forces of the evaluation: tau, tau_total, fext, tau_h
    limits: Limits            # the position limits held and the effort limits (none: empty arrays)


class Rows(NamedTuple):
    """The recorded rows, preallocated (N = steps // every + 1)."""

    t: np.ndarray       # (N,)
    q: np.ndarray       # (N, nq)
    v: np.ndarray       # (N, nv)
    a: np.ndarray       # (N, nv)
    tau: np.ndarray     # (N, nv)
    energy: np.ndarray  # (N, 3) kinetic, potential, total; (0, 3) when not asked
    force: np.ndarray   # (N, nc, 3)
    pen: np.ndarray     # (N, nc)
    limit: np.ndarray   # (N, nv) the position limits' torque; (0, nv) without position limits
    limit_step: np.ndarray  # (N, nv) Σ_s b_s λ_s: the limits' torque over the step from the row (the scheme's weights)


@kernel
def _bad_state(q, v, max_state):
    """0 if (q, v) is finite and within max_state, else the reason code."""
    for x in q:
        if not math.isfinite(x):
            return NONFINITE_STATE
        if abs(x) > max_state:
            return BEYOND_MAX_STATE
    for x in v:
        if not math.isfinite(x):
            return NONFINITE_STATE
        if abs(x) > max_state:
            return BEYOND_MAX_STATE
    return 0


@kernel
def _finite(x):
    for y in x:
        if not math.isfinite(y):
            return False
    return True


@inline_kernel  # like the stage kernels (dynlib.sim.stages): no passing of the tuples' arrays
def evaluate(m, d, p, dt, t, q, v, a):
    """a = the acceleration at (t, q, v): the pipeline's stages in order, which leave this evaluation's
    tau, tau_total and fext in p.sums. False if the acceleration stage's matrix is not positive definite."""
    e, lim, im = p.sums, p.limits, p.implicit
    ok = True
    for _ in range(2):  # again only when an implicit PD torque ended past its effort limit (`joint_limits`)
        control_torque(m, d, p.control, p.control_work, t, q, v, e.tau)
        couple_vector(e.coupling, e.tau)  # mimic joints: a follower's motor torque acts on its leader
        saturate(lim.effort, lim.pinned, lim.gain_m, lim.gain_v, im.gain_m, im.gain_v, e.tau)
        joint_forces(p.forces, v, e.tau, e.tau_total)
        body_forces(m, d, p.forces, p.contact, t, q, v, e.fext)
        held = limit_torques(m, d, lim, im, p.contact, e, q, v, a)  # True: it gave the stage's acceleration too
        ok = held or acceleration(m, d, p.forces, im, p.contact, e, dt, q, v, a)
        applied_torque(im, v, a, e.tau, e.tau_total)  # implicit PD gains: the torque applied
        if not over_effort(lim.effort, lim.gain_m, lim.pinned, e.tau):
            break
    unpin(lim.pinned)
    return ok


@inline_kernel
def record(m, d, p, t, q, v, a, rows, row):
    """Row `row` of the state (q, v) at t, evaluated just before (acceleration stage's a): its acceleration,
    motor torque, contact forces and energy. False if the recorded acceleration is not finite."""
    recorded_acceleration(m, d, p.implicit, p.contact, p.sums, a, rows.a[row])
    if not _finite(rows.a[row]):
        return False
    rows.t[row] = t
    assign(rows.q[row], q)
    assign(rows.v[row], v)
    assign(rows.tau[row], p.sums.tau)
    assign(rows.pen[row], p.contact.state.pen)
    if rows.limit.shape[0] > 0:
        assign(rows.limit[row], p.limits.force)
    for c in range(rows.force.shape[1]):
        assign(rows.force[row, c], p.contact.state.force[c])
    if rows.energy.shape[0] > 0:  # asked for
        T = kinetic_kernel(m, d, q, v)
        U = potential_after_placements(m, d, m.gravity)  # placements done by kinetic_kernel
        rows.energy[row, 0] = T
        rows.energy[row, 1] = U
        rows.energy[row, 2] = T + U
    return True


@kernel
def _run(m, d, p, w, scheme, dt, k0, k1, steps, every, max_state, q, v, rows, row):
    """Steps k0 <= k < k1 (state k in q, v on entry; state k1 on exit), recording rows from `row` on.

    At each k: the scheme's substeps (substep 0 is the state k itself: checked, and recorded when
    k % every == 0), then the step to k + 1 unless k == steps. Returns (rows written, step of
    divergence or -1, reason).
    """
    jtype, idx_q, idx_v, nvj = m.jtype, m.idx_q, m.idx_v, m.nvj
    for k in range(k0, k1):
        t = k * dt
        for s in range(I.substeps(scheme)):
            I.substep_state(jtype, idx_q, idx_v, s, dt, q, v, w.ks, w.acc, w.xi, w.qs, w.vs[s])
            if scheme == I.RK4 and p.implicit.mode == IMPLICIT_FRICTION:  # rk4's stiff damping: Rosenbrock-W
                I.stage_memory(s, dt, w.acc, p.sums.memory)
            if not evaluate(m, d, p, dt, t + I.NODES[s] * dt, w.qs, w.vs[s], w.acc[s]):
                return row, (k if s == 0 else k + 1), SINGULAR
            if rows.limit_step.shape[0] > 0 and k % every == 0:  # the step's limit torque, for its work
                I.weigh(scheme, s, p.limits.force, rows.limit_step[row if s == 0 else row - 1])
            if s > 0:
                I.dexp_inv(jtype, idx_v, nvj, w.xi, w.vs[s], w.br[0], w.br[1], w.ks[s])
                continue
            if not _finite(w.acc[0]):
                return row, k, NONFINITE_ACCELERATION
            if k % every == 0:
                if not record(m, d, p, t, q, v, w.acc[0], rows, row):
                    return row, k, NONFINITE_ACCELERATION
                row += 1
            if k == steps:
                return row, -1, 0
        I.advance(scheme, jtype, idx_q, idx_v, dt, q, v, w.ks, w.acc, w.xi, w.qn)
        hold_state(p.sums.coupling, q, v)  # mimic joints: each follower from its leader, to the last bit
        bad = _bad_state(q, v, max_state)
        if bad:
            return row, k + 1, bad
    return row, -1, 0


# ------------------------------------------------------------------ Python side

@dataclasses.dataclass(frozen=True)
class ExternalWrench:
    """A wrench (fx, fy, fz, tx, ty, tz) on `frame`, world-aligned axes, at the frame's origin,
    applied for start <= t < stop."""

    frame: str
    wrench: tuple
    start: float = 0.0
    stop: float = math.inf


@dataclasses.dataclass(frozen=True)
class Divergence:
    """Where a simulation stopped: the first bad step, its time, and why."""

    step: int
    time: float
    reason: str

    @property
    def message(self) -> str:
        return (f"the simulation diverged at step {self.step} (t = {self.time:.6g} s): {self.reason}; "
                "the trajectory up to the last finite state was kept (a smaller dt, smaller gains, "
                "or another integrator may help)")


@dataclasses.dataclass
class SimulationResult:
    """Rows of a simulation (see the module docstring); `diverged` is None when it ran to the end."""

    model: object
    time: np.ndarray       # (N,)
    q: np.ndarray          # (N, nq)
    v: np.ndarray          # (N, nv)
    a: np.ndarray          # (N, nv)
    tau: np.ndarray        # (N, nv)
    energy: np.ndarray | None  # (N, 3) kinetic, potential, total; None when not computed
    diverged: Divergence | None
    q_final: np.ndarray    # (nq,) the final state (diverged: the state of the last row)
    v_final: np.ndarray    # (nv,)
    dt: float
    steps: int
    every: int
    integrator: str
    contact_names: tuple = ()            # (nc,) contact point names
    contact_force: np.ndarray | None = None  # (N, nc, 3) world force on each point (the wrench's torque is 0)
    penetration: np.ndarray | None = None    # (N, nc) depth below the ground (> 0 inside; < 0: the gap)
    contact_solver: dict | None = None      # unilateral/relaxed: PGS report (steps stopped on the limit, ...)
    limit: np.ndarray | None = None          # (N, nv) the position limits' torque; None when none was held
    limit_step: np.ndarray | None = None     # (N, nv) the limits' torque over the step from each row, Σ_s b_s λ_s
                                             # (the scheme's weights; the last row: its first evaluation's)
    limits: dict | None = None               # {"position": bool, "effort": bool}: the limits the run held

    def __len__(self) -> int:
        return self.time.shape[0]

    def columns(self, parts=("q", "qd", "qdd", "tau")) -> list:
        """The SPEC §5 column names of `parts` (any of q, qd, qdd, tau, energy, contact), time first.

        ``contact``: ``contact.<name>.fx fy fz tx ty tz`` (world-aligned, at the point) per
        contact point, then ``penetration.<name>`` per point."""
        from ..files.columns import contact_columns, limit_columns, model_columns, penetration_columns

        parts = tuple(parts)
        if "energy" in parts and self.energy is None:
            raise InputError("energy columns were asked for, but the simulation ran with energy=False")
        if "contact" in parts and self.contact_force is None:
            raise InputError("contact columns were asked for, but the simulation ran without contacts")
        if "limits" in parts and self.limit is None:
            raise InputError("limits columns were asked for, but the simulation held no position limit (the robot "
                             "has none, or the limits were switched off)")
        names = model_columns(self.model, [p for p in parts if p not in ("contact", "limits")])
        if "contact" in parts:
            names += contact_columns(self.contact_names) + penetration_columns(self.contact_names)
        if "limits" in parts:
            names += limit_columns([self.model.v_names[k] for k in self.limited])
        return names

    @property
    def limited(self) -> list:
        """The v indices of the coordinates whose position limits the run held (the ``limit.*`` columns)."""
        from .joint_limits import held_coordinates

        return held_coordinates(self.model) if self.limit is not None else []

    def table(self, parts=("q", "qd", "qdd", "tau")) -> tuple:
        """(column names, (N, ncols) array) for `parts`, in the SPEC §5 order."""
        names = self.columns(parts)
        blocks = [self.time[:, None]]
        wanted = set(parts)
        for part, arr in (("q", self.q), ("qd", self.v), ("qdd", self.a), ("tau", self.tau), ("energy", self.energy)):
            if part in wanted:
                blocks.append(arr)
        if "contact" in wanted:
            n, nc = self.contact_force.shape[:2]
            blocks.append(np.concatenate([self.contact_force, np.zeros((n, nc, 3))], axis=2).reshape(n, 6 * nc))
            blocks.append(self.penetration)
        if "limits" in wanted:
            blocks.append(self.limit[:, self.limited])
        return names, _column_major(blocks)

    def to_dataframe(self, parts=("q", "qd", "qdd", "tau", "energy")):
        import pandas as pd

        if self.energy is None:
            parts = tuple(p for p in parts if p != "energy")
        names, data = self.table(parts)
        return pd.DataFrame(data, columns=names)

    def write(self, path, parts=("q", "qd", "qdd", "tau"), *, source=None, metadata=None) -> None:
        """Write the rows to `path` (.csv, .parquet; None or '-': CSV on standard output), atomically;
        `metadata` ({key: text}, e.g. `dynlib.files.columns.run_metadata`) goes to a Parquet file's."""
        from ..files.trajectory import write_trajectory

        names, data = self.table(parts)
        write_trajectory(path, names, data, source=source, metadata=metadata)

    def error(self) -> NumericalError | None:
        """The NumericalError to raise for a diverged run (None otherwise)."""
        if self.diverged is None:
            return None
        return NumericalError(self.diverged.message, step=self.diverged.step, time=self.diverged.time)


def _column_major(blocks) -> np.ndarray:
    """np.hstack(blocks), column-major: the writer wants columns (`dynlib.files.trajectory.to_arrow` then
    transposes nothing; 100k rows of arm6's 25 columns: one copy of 20 MB instead of two, the second a
    transpose)."""
    data = np.empty((blocks[0].shape[0], sum(b.shape[1] for b in blocks)), order="F")
    j = 0
    for b in blocks:
        data[:, j:j + b.shape[1]] = b
        j += b.shape[1]
    return data


def _state(model, x, n, what, default):
    if x is None:
        return np.array(default, dtype=float)
    arr = np.asarray(x, dtype=float).reshape(-1) if not np.isscalar(x) else None
    if arr is None or arr.shape != (n,):
        raise InputError(f"{what} must have {n} entries for robot '{model.name}', got {np.shape(x)}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what} has a non-finite value at index {int(np.flatnonzero(~np.isfinite(arr))[0])}")
    return arr.copy()


def _wrench_arrays(model, wrenches):
    n = len(wrenches)
    body = np.zeros(n, dtype=np.int64)
    p = np.zeros((n, 3))
    W = np.zeros((n, 6))
    start = np.zeros(n)
    stop = np.zeros(n)
    for k, ew in enumerate(wrenches):
        if isinstance(ew, dict):
            ew = ExternalWrench(**ew)
        if not isinstance(ew, ExternalWrench):
            raise InputError(f"external_wrenches[{k}] must be an ExternalWrench or a dict, got {type(ew).__name__}")
        fid = model.frame_id(ew.frame)
        b = int(model.arrays.frame_body[fid])
        if b < 0:
            raise InputError(f"external_wrenches[{k}]: frame '{ew.frame}' is fixed to the world; "
                             "a wrench on it moves nothing (choose a link of a moving body)")
        w = np.asarray(ew.wrench, dtype=float).reshape(-1)
        if w.shape != (6,) or not np.all(np.isfinite(w)):
            raise InputError(f"external_wrenches[{k}]: wrench must be six finite numbers (fx fy fz tx ty tz), "
                             f"got {ew.wrench!r}")
        if not (float(ew.stop) > float(ew.start)) or math.isnan(float(ew.start)):
            raise InputError(f"external_wrenches[{k}]: stop ({ew.stop}) must be after start ({ew.start})")
        body[k] = b
        p[k] = model.arrays.frame_p[fid]
        W[k] = w
        start[k] = float(ew.start)
        stop[k] = float(ew.stop)
    return body, p, W, start, stop


def _normalized(x):
    """x with every array C-contiguous, aligned and writeable (copied only if not): the array types the
    compiled loop is specialized for, so that an odd array compiles no further specialization."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_normalized(y) for y in x))
    if isinstance(x, np.ndarray):
        return np.require(x, requirements=("C", "A", "W"))
    return x


@contextlib.contextmanager
def _from_argument(name):
    """An InputError raised inside carries the argument `name` it came from (`InputError.argument`)."""
    try:
        yield
    except InputError as exc:
        if exc.argument is None:
            exc.argument = name
        raise


@dataclasses.dataclass(frozen=True)
class Options:
    """The options of `simulate` besides the model, the initial state, dt and steps: each is a keyword of
    `simulate`, with the same default (see `simulate`)."""

    integrator: str = "rk4"
    controller: object = None
    external_wrenches: tuple = ()
    joint_friction: bool = True
    friction_smoothing: float = 1e-3
    friction_integration: str = "implicit"
    every: int = 1
    max_state: float = 1e6
    energy: bool = True
    contacts: object = None
    progress: object = None
    gain_integration: str = "implicit"
    limits: object = True


def _count(name, n) -> int:
    """n (steps, every) as an int, counted by the kernels in 64-bit integers: InputError unless 1 <= n <= 2**53."""
    try:
        whole = not isinstance(n, bool) and int(n) == n
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or not 1 <= n <= MAX_COUNT:
        raise InputError(f"{name} must be a positive integer up to 2**53, got {n!r}")
    return int(n)


def _checked(model, dt, steps, o) -> tuple:
    """(dt, steps, options) with every scalar input checked and converted (InputError naming the one that is
    not right)."""
    check_dynamics(model)
    check_forward_dynamics(model)
    if model.nv == 0:
        raise InputError(f"robot '{model.name}' has no moving joint: there is nothing to simulate")
    if o.integrator not in I.SCHEMES:
        raise InputError(f"integrator must be one of {', '.join(I.SCHEMES)}, got {o.integrator!r}")
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0.0):
        raise InputError(f"dt must be a positive number of seconds, got {dt!r}")
    steps, every = _count("steps", steps), _count("every", o.every)
    max_state = float(o.max_state)
    if not max_state > 0:
        raise InputError(f"max_state must be positive, got {max_state!r}")
    for name in ("gain_integration", "friction_integration"):
        if getattr(o, name) not in ("implicit", "explicit"):
            raise InputError(f"{name} must be 'implicit' or 'explicit', got {getattr(o, name)!r}")
    eps = float(o.friction_smoothing)
    if not (math.isfinite(eps) and eps > 0.0):
        raise InputError(f"friction_smoothing must be a positive velocity, got {o.friction_smoothing!r}")
    return dt, steps, dataclasses.replace(o, every=every, max_state=max_state, friction_smoothing=eps,
                                          limits=limit_switches(o.limits))


def limit_switches(limits) -> dict:
    """{"position": bool, "effort": bool} of simulate's `limits` option: a bool for both, or a dict of either."""
    if isinstance(limits, (bool, np.bool_)):
        return {"position": bool(limits), "effort": bool(limits)}
    if isinstance(limits, dict) and set(limits) <= {"position", "effort"} and all(
            isinstance(x, (bool, np.bool_)) for x in limits.values()):
        return {"position": bool(limits.get("position", True)), "effort": bool(limits.get("effort", True))}
    raise InputError(f"limits must be True, False or a dict {{'position': bool, 'effort': bool}}, got {limits!r}")


def _pipeline(model, q, dt, o):
    """(Pipeline, Contact or None) of a run whose options o (`Options`) are checked: every stage's parameters."""
    m = model.arrays
    if o.joint_friction:
        damping, friction = np.ascontiguousarray(m.damping, float), np.ascontiguousarray(m.friction, float)
    else:
        damping, friction = np.zeros(model.nv), np.zeros(model.nv)
    with _from_argument("controller"):
        controller = C.as_controller(o.controller)
        ctrl = controller.params(model, q, (damping, friction, o.friction_smoothing))
        if model.mimic:  # a follower has no motor (`dynlib.sim.mimic`)
            ctrl = check_controller(model, controller, ctrl)
    # a PD's gains: implicit with semi-implicit and euler (dynlib.sim.dynamics), a warning with rk4 when too stiff
    # computed torque cancels the joint friction at every evaluation: nothing stiff is left to treat implicitly
    implicit = (o.friction_integration == "implicit" and (np.any(damping != 0) or np.any(friction != 0))
                and not isinstance(controller, C.ComputedTorque))
    # M(q0), by the one set-up kernel that every run calls (so that the first run compiles it: `at_configuration`)
    M0 = at_configuration(model, q).M
    friction_dt = friction_steps(model, q, dt, o.integrator, damping, friction, o.friction_smoothing, implicit, M0)
    stiff = bool(np.any(friction_dt > 0))
    with _from_argument("external_wrenches"):
        wrenches = _wrench_arrays(model, tuple(o.external_wrenches))
    gain_m, gain_v = C.implicit_gains(ctrl, model.nv, dt, o.integrator, o.gain_integration)
    implicit_gains = bool(np.any(gain_m != 0) or np.any(gain_v != 0))
    if o.integrator == "rk4":
        C.warn_stiff_gains(model, ctrl, M0, dt)
    with _from_argument("contacts"):
        contact = None if o.contacts is None else build_contact(model, o.contacts, q)
        needs = getattr(contact.params, "integrator", None) if contact is not None else None
        if needs is not None and o.integrator != needs:
            raise InputError(f"the {contact.model} contact model steps velocities with impulses "
                             f"(semi-implicit Euler): set integrator to '{needs}' (got {o.integrator!r})")
    mode = IMPLICIT_FRICTION if stiff else IMPLICIT_GAINS if implicit_gains else FREE
    limits = limits_record(model, dt, o.limits["position"], o.limits["effort"], gain_m, gain_v)
    if model.mimic and o.limits["position"]:  # a follower's limits held on its leader
        limits = coupled_limits(model, limits)
    return _normalized(Pipeline(control_record(ctrl), control_work(model),
                                Forces(damping, friction, o.friction_smoothing, *wrenches),
                                Implicit(mode, friction_dt, gain_m, gain_v), contact_record(contact, model.nv),
                                evaluation(model.nv, model.nb, coupled_record(model) if model.mimic else None),
                                limits)), contact


STIFF_FRICTION = 0.5 * C.RK4_REAL_LIMIT  # rk4: a joint's friction is implicit when dt λ_k is above this


def friction_steps(model, q, dt, integrator, damping, friction, eps, implicit, M=None) -> np.ndarray:
    """(nv,) the step each joint's friction is taken implicitly with (`dynamics.Implicit.friction_dt`; 0:
    explicit). Not `implicit`: zeros. semi-implicit, euler: dt on every joint (backward Euler in that term,
    first order like the schemes). rk4 (`dynlib.sim.integrators`, the choice and why): 0 where the friction is
    not stiff at dt, ``dt λ_k <= STIFF_FRICTION`` with ``λ_k = (damping_k + friction_k/eps) (M⁻¹)_kk`` at q (the
    friction's steepest velocity slope over the joint's smallest effective inertia, the other joints free):
    explicit, order 4; GAMMA dt on a stiff joint with damping only (the Rosenbrock-W terms, order 3); dt on a
    stiff joint with Coulomb friction (backward Euler, first order in that term), which
    `dynamics.ImplicitFrictionNote` names once. M: M(q) when the caller has it."""
    nv = model.nv
    if not implicit:
        return np.zeros(nv)
    if integrator != "rk4":
        return np.full(nv, dt)
    if M is None:
        M = at_configuration(model, q).M
    try:
        lam = (damping + friction / eps) * np.diag(np.linalg.inv(M))
    except np.linalg.LinAlgError:  # M singular at q: no estimate, every joint with friction stays implicit
        lam = np.full(nv, np.inf)
    stiff = ~(dt * lam <= STIFF_FRICTION) & ((damping != 0) | (friction != 0))
    coulomb = stiff & (friction != 0)
    if np.any(coulomb):
        import warnings

        names = ", ".join(n for n, c in zip(model.v_names, coulomb) if c)
        warnings.warn(f"rk4 with implicit friction on {names}: first order in that term (its Coulomb friction is "
                      f"stiff at dt = {dt:g} s; a larger friction_smoothing or a smaller dt makes it explicit, "
                      "order 4)", ImplicitFrictionNote, stacklevel=4)
    return np.where(coulomb, dt, np.where(stiff, I.GAMMA * dt, 0.0))


def _rows(model, nrows, nc, energy, limit) -> Rows:
    return Rows(np.zeros(nrows), np.zeros((nrows, model.nq)), np.zeros((nrows, model.nv)),
                np.zeros((nrows, model.nv)), np.zeros((nrows, model.nv)), np.zeros((nrows if energy else 0, 3)),
                np.zeros((nrows, nc, 3)), np.zeros((nrows, nc)), np.zeros((nrows if limit else 0, model.nv)),
                np.zeros((nrows if limit else 0, model.nv)))


def simulate(model, q0=None, v0=None, *, dt, steps, **options) -> SimulationResult:
    """Integrate the forward dynamics of `model` for `steps` steps of `dt` from (q0, v0).

    q0 (nq,) defaults to the neutral configuration, v0 (nv,) to zero. The options (keywords, the fields of
    `Options`, with its defaults):
    integrator: "rk4" | "semi-implicit" | "euler". controller: a
    `dynlib.sim.controllers.Controller` (default: zero torque). external_wrenches:
    `ExternalWrench` objects (or dicts with their fields). joint_friction: apply
    the model's damping/friction (SPEC §2) with tanh smoothing `friction_smoothing`;
    friction_integration: "implicit" (stable at any dt, the default) or "explicit"
    (textbook schemes; see `dynlib.sim.dynamics`). every: keep one row in `every`.
    max_state: the largest coordinate or velocity before the run counts as diverged.
    energy: compute the energy columns. contacts: a dict (``model``, ``points``,
    ``ground: {height, normal}`` and the model's parameters by their scenario names;
    those not given take the model's defaults) or a `dynlib.sim.contact.points.ContactSpec`,
    see `dynlib.sim.contact`.
    progress: a callable progress(done, total) called between chunks of a long run.
    limits: True (default): hold the URDF's position limits and saturate the motor torques at its effort
    limits (`dynlib.sim.joint_limits`); False: neither (the unconstrained motion); or a dict
    ``{"position": bool, "effort": bool}`` (a key left out: True).
    gain_integration: "implicit" (default): with semi-implicit and euler, a PD controller's gains
    are taken implicitly (`dynlib.sim.dynamics`: stable for stiff gains on light links; the recorded
    tau is the torque applied); "explicit": the textbook form. rk4 keeps the explicit form and
    warns (`controllers.StiffGainsWarning`) when the gains exceed its stability limit at dt.
    """
    unknown = sorted(set(options) - {f.name for f in dataclasses.fields(Options)})
    if unknown:
        raise TypeError(f"simulate() got an unexpected keyword argument {unknown[0]!r}")
    dt, steps, o = _checked(model, dt, steps, Options(**options))
    q = _state(model, q0, model.nq, "q0", model.q_neutral)
    v = _state(model, v0, model.nv, "v0", np.zeros(model.nv))
    if model.mimic:  # each follower from its leader (`dynlib.sim.mimic.initial_state`)
        q, v = initial_state(model, q, v, q0 is not None, v0 is not None)
    if np.any(np.abs(q) > o.max_state) or np.any(np.abs(v) > o.max_state):
        raise InputError(f"the initial state exceeds max_state = {o.max_state:g}")
    p, contact = _pipeline(model, q, dt, o)
    names = () if contact is None else contact.names
    held = p.limits.q_index.shape[0] > 0
    rows = _rows(model, steps // o.every + 1, len(names), o.energy, held)
    row, bad_step, reason, q_last, v_last = _chunks(model, p, dt, steps, o, q, v, rows)
    diverged = None
    if bad_step >= 0:
        diverged = Divergence(int(bad_step), bad_step * dt, REASONS.get(int(reason), "unknown"))
        if row:  # the last finite state that was recorded
            q_last, v_last = rows.q[row - 1].copy(), rows.v[row - 1].copy()
    return SimulationResult(
        model=model, time=rows.t[:row], q=rows.q[:row], v=rows.v[:row], a=rows.a[:row], tau=rows.tau[:row],
        energy=rows.energy[:row] if o.energy else None, diverged=diverged, q_final=q_last, v_final=v_last,
        dt=dt, steps=steps, every=o.every, integrator=o.integrator, contact_names=names,
        contact_force=rows.force[:row] if contact is not None else None,
        penetration=rows.pen[:row] if contact is not None else None,
        contact_solver=_solver_report(contact, p.contact), limit=rows.limit[:row] if held else None,
        limit_step=rows.limit_step[:row] if held else None, limits=o.limits,
    )


def _chunks(model, p, dt, steps, o, q, v, rows) -> tuple:
    """Run the loop over the states 0..steps in chunks (one call below CHUNKED_ABOVE without progress), calling
    o.progress between them: (rows written, step of divergence or -1, reason, q and v of the last chunk's end
    before a divergence)."""
    m, d, w = model.arrays, model.create_data(), I.make_work(model.nq, model.nv)
    if model.mimic:  # the coupled matrix is dense across branches: its LᵀDL on a chain (`dynlib.sim.mimic`)
        m = m._replace(dof_parent=chain(model.nv))
    scheme = I.SCHEMES[o.integrator]
    total = steps + 1  # states 0..steps
    chunk = total if (o.progress is None and total <= CHUNKED_ABOVE) else max(1, total // 100)
    row, k0, bad_step, reason, reported = 0, 0, -1, 0, 0
    q_last, v_last = q.copy(), v.copy()
    run = _run
    while k0 < total:
        k1 = min(total, k0 + chunk)
        args = (m, d, p, w, scheme, dt, k0, k1, steps, o.every, o.max_state, q, v, rows, row)
        if k0 == chunk:  # the second chunk on: the loop compiled for these types, called without the dispatcher
            run = compiled_entry(_run, args)
        row, bad_step, reason = run(*args)
        if bad_step >= 0:
            break
        q_last[:], v_last[:] = q, v
        k0 = k1
        if o.progress is not None and min(k0, steps) > reported:
            reported = min(k0, steps)
            o.progress(reported, steps)
    return row, bad_step, reason, q_last, v_last


def _solver_report(contact, cm):
    """The PGS report of the impulse models (unilateral, relaxed); None for the others."""
    if cm.kind not in (UNILATERAL, RELAXED):
        return None
    stats = (cm.unilateral if cm.kind == UNILATERAL else cm.relaxed).work.stats
    return {"steps_not_converged": int(stats[0]), "max_sweeps": int(stats[1]),
            "worst_change": float(stats[2]), "tolerance": float(contact.params.tolerance),
            "max_iterations": int(contact.params.max_iterations)}


def loop_is_cached() -> bool:
    """Whether dyn's kernel cache (`dynlib._numba.cache.is_cached`) holds the compiled loop (`_run`), so that a
    run starts at once. There is one loop for every scenario (controller, contact model, friction mode and
    energy are data: `dynlib.sim.stages`)."""
    return cache.is_cached("simulate._run", _run)
