"""Contact inverse dynamics: joint torques and contact wrenches behind a floating-base motion.

The equations of motion of a robot whose free-flyer root is unactuated (SPEC §7):

    M(q) a + h(q, v) = tau + Σ_c J_c(q)ᵀ w_c,        tau[:6] = 0,

with J_c the ``local_world_aligned`` Jacobian of contact frame c (6, nv) and
w_c = (f, τ) the wrench the environment applies at the frame's origin, in
world-aligned axes (its dual). The six root rows do not involve tau:

    A w = b_root,   A = [J_1[:, :6]ᵀ … J_k[:, :6]ᵀ] (6, 6k),   b = rnea(q, v, a),

so the contact wrenches come first and the joint torques follow,
``tau = b − Σ_c J_cᵀ w_c`` (root entries then zeroed; their norm before zeroing is
the reported root residual). Each J_c[:, :6] is invertible, so one full contact
determines its wrench exactly; several contacts leave 6(k − 1) directions free,
chosen by least squares:

- per frame: ``min Σ_c (w_c − g_c)ᵀ W (w_c − g_c)  s.t.  A w = b``, with
  W = diag(0.01, 0.01, 0.01, 1, 1, 1) and g = 0 without guesses, W = I with guesses
  (contacts without a guess are guessed zero). When A w = b cannot hold (no
  contact: flight; or point contacts that cannot make a moment) the root
  equations are met in the least-squares sense first, then the weighted norm is
  minimised (w = g + W^-½ (A W^-½)⁺ (b − A g)).
- over time (`over_time=True`): all frames in one sparse equality-constrained
  least-squares problem, ``min μ Σ_t (w_t − g)ᵀ W (w_t − g) + s Σ_t ‖w_t − w_{t−1}‖²``
  (μ = `min_torque`, s = `smoothing`; an inactive contact's wrench counts as zero,
  so loads shift smoothly onto a foot that lands and off one that lifts), root
  equations at every frame; its KKT matrix is block tri-diagonal in time and is
  solved by block elimination, forward then back over the frames (linear time,
  memory a few times the output). s = 0 gives the per-frame solution. Both
  solvers are in `dynlib.motion.wrench_distribution`.
- friction (`friction=MU`): per frame, the same objective with the normal force
  nᵀf ≥ 0 and the Coulomb cone ‖f − (nᵀf) n‖ ≤ MU nᵀf (a second-order cone) on
  every active contact, n the ground normal (world z). Frames whose per-frame
  solution already lies in the cones keep it (it is then optimal); the others go
  to Clarabel. When the cones and the root equations cannot hold together the
  frame is *infeasible*: it gets the wrenches in the cones that minimise
  ρ‖A w − b‖² + (w − g)ᵀW(w − g) (ρ = 1e6, the root residual first), its
  root residual is not zero, and `feasible` is False there
  (`dynlib.motion.friction_cones`).

Contacts may come and go: time windows per contact (`ContactFrame.windows`, closed
intervals in seconds; ``dyn contact-id`` reads them from ``FRAME@START:STOP``)
and/or ``active.<frame>`` columns of the input (non-zero = in contact); both
must allow a contact for it to be active. Inactive contacts get zero wrenches.
A *point* contact transmits a force only (its moments are zero, e.g. a
quadruped's foot).

Inputs: q (N, nq), v, a (N, nv) of a model with a free-flyer root. The rows go
through the compiled batched RNEA and Jacobian kernels in chunks of CHUNK rows; the
per-frame solves are batched numpy (an SVD per frame). O(N k²).

This module sets the problem up; the solvers are in `dynlib.motion.wrench_distribution`
and `dynlib.motion.friction_cones`. Public: `contact_inverse_dynamics` (the entry point of
``dyn contact-id``; its keywords as one record: `ContactIDOptions`), `ContactID` (its result),
`ContactFrame`, `merge_contacts`, `active_mask`, and `root_problem` (the rows' A and b).
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from ..files.columns import FRICTION_FEASIBLE, RESIDUAL_ROOT, TIME, active_frames, contact_columns, tau_columns
from ..errors import InputError
from .friction_cones import solve_friction
from .wrench_distribution import solve_frames, solve_over_time

WEIGHT = np.array([0.01, 0.01, 0.01, 1.0, 1.0, 1.0])  # per contact, without guesses
GUESS_WEIGHT = np.ones(6)                              # per contact, with guesses


# --------------------------------------------------------------------- contacts

@dataclasses.dataclass(frozen=True)
class ContactFrame:
    """A contact frame: `windows` ((start, stop), …) closed time intervals in seconds,
    () for always (either bound may be infinite); `point`: forces only (moments zero)."""

    frame: str
    windows: tuple = ()
    point: bool = False


def merge_contacts(contacts, point=False) -> list:
    """Frame names or `ContactFrame`s -> one `ContactFrame` per frame, in order of first mention.

    Windows of the same frame are merged; a mention without a window makes the
    contact always allowed. `point`: True (every contact), or a set of frames that
    transmit forces only. Raises InputError for a window that is not a pair of
    numbers (start, stop) with start <= stop.
    """
    merged = {}
    for c in contacts:
        c = c if isinstance(c, ContactFrame) else ContactFrame(str(c))
        _check_windows(c)
        is_point = c.point or point is True or (not isinstance(point, bool) and c.frame in point)
        if c.frame in merged:
            old = merged[c.frame]
            windows = () if not old.windows or not c.windows else old.windows + c.windows
            merged[c.frame] = ContactFrame(c.frame, windows, old.point or is_point)
        else:
            merged[c.frame] = ContactFrame(c.frame, tuple(c.windows), is_point)
    return list(merged.values())


def _check_windows(contact):
    for window in contact.windows:
        try:
            lo, hi = (float(x) for x in window)
        except (TypeError, ValueError):
            lo = hi = math.nan
        if math.isnan(lo) or math.isnan(hi) or lo > hi:
            raise InputError(f"contact '{contact.frame}': time window {window!r} is not (start, stop) with "
                             "start <= stop (seconds; -inf and inf for no bound)")


def active_mask(contacts, time=None, columns=None) -> np.ndarray:
    """(N, k) bool: contact c allowed at row n by its windows and by `columns[frame]`
    ((N,) numbers, non-zero = in contact) when given."""
    columns = columns or {}
    n = None if time is None else len(time)
    for col in columns.values():
        n = len(col) if n is None else n
    if n is None:
        raise InputError("active_mask needs the time column or active columns to know the number of rows")
    mask = np.ones((n, len(contacts)), dtype=bool)
    for c, contact in enumerate(contacts):
        if contact.windows:
            if time is None:
                raise InputError(f"contact '{contact.frame}' has time windows but the motion has no time")
            t = np.asarray(time)
            # closed intervals, with a little slack for times written in decimal
            slack = 1e-9 * max(1.0, float(np.max(np.abs(t))))
            mask[:, c] = np.any([(t >= lo - slack) & (t <= hi + slack) for lo, hi in contact.windows], axis=0)
        if contact.frame in columns:
            mask[:, c] &= np.asarray(columns[contact.frame]) != 0
    return mask


# --------------------------------------------------------------------- the problem

class RootProblem(NamedTuple):
    """b (N, nv) = M a + h (rnea); J (N, k, 6, nv) the contacts' local_world_aligned
    Jacobians; A (N, 6, 6k) the root block of [J_1ᵀ … J_kᵀ]."""

    b: np.ndarray
    J: np.ndarray
    A: np.ndarray


def root_problem(model, q, v, a, frames) -> RootProblem:
    """The rows' inverse dynamics and contact Jacobians, each in one batched kernel call."""
    from ..algorithms.jacobians import frame_jacobian
    from ..algorithms.rnea import rnea

    q, v, a = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (q, v, a))
    n = q.shape[0]
    b = rnea(model, q, v, a)
    J = np.empty((n, len(frames), 6, model.nv))
    for c, frame in enumerate(frames):
        J[:, c] = frame_jacobian(model, q, frame, "local_world_aligned")
    A = np.ascontiguousarray(J[:, :, :, :6].transpose(0, 3, 1, 2).reshape(n, 6, 6 * len(frames)))
    return RootProblem(b, J, A)


CHUNK = 256    # rows per batched kernel call: the Jacobians are (rows, k, 6, nv), too big to keep


def _root_rows(model, q, v, a, frames):
    """b (N, nv) and A (N, 6, 6k) of `root_problem`, by chunks of rows (their Jacobians dropped)."""
    v, a = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (v, a))
    n = q.shape[0]
    b, A = np.empty((n, model.nv)), np.empty((n, 6, 6 * len(frames)))
    for t0 in range(0, n, CHUNK):
        rows = slice(t0, t0 + CHUNK)
        prob = root_problem(model, q[rows], v[rows], a[rows], frames)
        b[rows], A[rows] = prob.b, prob.A
    return b, A


def _joint_torques(model, q, b, frames, wrenches):
    """tau (N, nv) = b − Σ_c J_cᵀ w_c, the Jacobians computed again by chunks of rows."""
    from ..algorithms.jacobians import frame_jacobian

    tau = b.copy()
    for t0 in range(0, q.shape[0], CHUNK):
        rows = slice(t0, t0 + CHUNK)
        for c, frame in enumerate(frames):
            tau[rows] -= np.einsum("nrv,nr->nv", frame_jacobian(model, q[rows], frame, "local_world_aligned"),
                                   wrenches[rows, c])
    return tau


# --------------------------------------------------------------------- the entry point

class ContactID(NamedTuple):
    """The result of `contact_inverse_dynamics`.

    time (N,); tau (N, nv) motor torques, root entries zero; wrenches (N, k, 6) per
    contact (f, τ) at the frame origin, world-aligned axes; residual (N,) the norm of
    the root rows of M a + h − Σ Jᵀw before zeroing; active (N, k) bool; feasible
    (N,) bool (all True without friction); frames (k,); derivatives: 'given',
    'central' or 'savgol'; friction: whether the cones were imposed; measured: the
    recording's measured torques (names ``effort.*``, ``residual.*`` and their (N, 2k)
    values, `dynlib.motion.inverse.measured_efforts`), empty when it had none.
    """

    time: np.ndarray
    tau: np.ndarray
    wrenches: np.ndarray
    residual: np.ndarray
    active: np.ndarray
    feasible: np.ndarray
    frames: tuple
    derivatives: str
    friction: bool
    measured: tuple = ((), None)

    def over_limit(self, model) -> list:
        """The joints whose torque exceeds their effort limit (`dynlib.motion.inverse.effort_excess`)."""
        from .inverse import effort_excess

        return effort_excess(model, self.time, self.tau)

    def table(self, model, over_limit=False):
        """(names, data): ``time``, ``tau.*``, [``effort.*``, ``residual.<joint>``],
        ``contact.<frame>.fx … tz``, ``residual.root``, with friction ``friction.feasible`` (1 or 0) and,
        with over_limit, ``over_limit.<joint>`` (`dynlib.motion.inverse.over_limit_flags`)."""
        names = [TIME] + tau_columns(model) + list(self.measured[0]) + contact_columns(self.frames) + [RESIDUAL_ROOT]
        parts = [self.time[:, None], self.tau] + ([self.measured[1]] if self.measured[0] else []) + [
            self.wrenches.reshape(len(self.time), -1), self.residual[:, None]]
        if self.friction:
            names.append(FRICTION_FEASIBLE)
            parts.append(self.feasible[:, None].astype(np.float64))
        if over_limit:
            from .inverse import over_limit_flags

            flagged, flags = over_limit_flags(model, self.tau)
            names += flagged
            parts.append(flags)
        return names, np.hstack(parts)


def _motion(model, motion, derivatives, window, polyorder, columns):
    """(time or None, q, v, a, derivatives, active columns {frame: (N,)}, traj or None)."""
    from .derivatives import Motion, motion_from_trajectory
    from ..files.trajectory import Trajectory

    if isinstance(motion, Trajectory):
        m = motion_from_trajectory(model, motion, derivatives=derivatives, window=window,
                                   polyorder=polyorder, columns=columns)
        active = {frame: motion.column(name) for frame, name in active_frames(motion.names).items()}
        return m.time, m.q, m.v, m.a, m.derivatives, active, motion
    if isinstance(motion, Motion):
        return motion.time, motion.q, motion.v, motion.a, motion.derivatives, {}, None
    try:
        time, q, v, a = motion
    except (TypeError, ValueError):
        raise InputError("motion must be a Trajectory, a dynlib.motion.derivatives.Motion or a tuple "
                         "(time, q, v, a) (time may be None)") from None
    return time, q, v, a, "given", {}, None


def _check_number(name, value, low, strict):
    ok = value is not None and np.isfinite(value) and (value > low if strict else value >= low)
    if not ok:
        raise InputError(f"{name} must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}")


@dataclasses.dataclass(frozen=True)
class ContactIDOptions:
    """The keywords of `contact_inverse_dynamics` (see there), as one record.

    How the motion is read: derivatives, window, polyorder, columns; which contacts act
    when: point, active, guesses; how the wrenches are chosen: weight, over_time,
    smoothing, min_torque, friction, normal, progress; what the torques include:
    joint_friction, friction_smoothing."""

    guesses: dict | None = None
    over_time: bool = False
    smoothing: float = 1.0
    min_torque: float = 1.0
    friction: float | None = None
    normal: tuple = (0.0, 0.0, 1.0)
    weight: object = None
    point: object = False
    active: dict | None = None
    derivatives: str = "auto"
    window: float = 0.1
    polyorder: int = 4
    columns: dict | None = None
    joint_friction: bool = True
    friction_smoothing: float = 1e-3
    progress: object = None


_OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ContactIDOptions))


def contact_inverse_dynamics(model, motion, contacts, *, options: ContactIDOptions | None = None,
                             **keywords) -> ContactID:
    """Joint torques and contact wrenches of a floating-base motion (``dyn contact-id``).

    model: a Model with a free-flyer root (``dynlib.load(..., floating_base=True)``).
    motion: a `dynlib.files.trajectory.Trajectory` (q from ``q.*``, v and a given or
    estimated by `derivatives` 'auto' | 'given' | 'central' | 'savgol' with `window`,
    `polyorder`, `columns` as in `dynlib.motion.derivatives.motion_from_trajectory`; its
    ``active.<frame>`` columns switch contacts), a `dynlib.motion.derivatives.Motion`, or a
    tuple (time, q (N, nq), v (N, nv), a (N, nv)), time may be None.
    contacts: frame names or `ContactFrame`s (a frame with time windows, or forces only);
    a frame named twice has the union of its windows (`merge_contacts`).

    Keywords (the fields of `ContactIDOptions`; `options` gives them as one record, the
    keywords then override its fields):
    guesses: {frame: (6,) or (N, 6)} wrench guesses (f, τ); the wrenches nearest to
    them (W = I, unguessed contacts guessed zero) that meet the root equations.
    weight: (6,) per-contact weight overriding W.
    over_time, smoothing (s >= 0), min_torque (μ > 0): one sparse problem over all rows.
    friction: Coulomb coefficient MU >= 0 (per row; not with over_time); normal: the
    ground normal in the world. point: True (every contact) or a set of frames that
    transmit forces only. active: {frame: (N,)} extra contact switches (non-zero: on).
    joint_friction: add the URDF damping and Coulomb friction to the joint torques.
    progress: called as progress(done, total) during the per-row friction solves.
    """
    from .inverse import joint_friction_torques, measured_efforts

    o = _options(options, keywords)
    if not model.has_floating_base:
        raise InputError(f"robot '{model.name}' has no free-flyer root: contact inverse dynamics needs one "
                         "(load it with floating_base=True)")
    time, q, v, a, how, switch, traj = _motion(model, motion, o.derivatives, o.window, o.polyorder, o.columns)
    switch.update(o.active or {})
    contacts, frames = _contact_frames(model, contacts, switch, o.point)
    nrm = _check_solver_options(o)

    q = np.atleast_2d(np.asarray(q, dtype=np.float64))
    n, k = q.shape[0], len(frames)
    on = _allowed(contacts, frames, time, switch, n)
    g = _guess_wrenches(o.guesses, frames, n)
    weight = _weight(o.weight, o.guesses)
    mask = _wrench_mask(on, contacts)
    W = np.tile(weight, k)
    g = g.reshape(n, 6 * k)

    b, A = _root_rows(model, q, v, a, frames)
    w, feasible = _root_wrenches(A, b[:, :6], W, g, mask, o, nrm)
    wr = w.reshape(n, k, 6)
    tau = _joint_torques(model, q, b, frames, wr)
    residual = np.linalg.norm(tau[:, :6], axis=1)
    if o.joint_friction:
        tau += joint_friction_torques(model, np.atleast_2d(np.asarray(v, dtype=np.float64)), o.friction_smoothing)
    tau[:, :6] = 0.0
    t = np.arange(n, dtype=np.float64) if time is None else np.asarray(time, dtype=np.float64)
    measured = measured_efforts(model, traj, tau) if traj is not None else ([], None)
    return ContactID(t, tau, wr, residual, on, feasible, frames, how, o.friction is not None,
                     (tuple(measured[0]), measured[1]))


def _options(options, keywords) -> ContactIDOptions:
    """`options` (None: the defaults) with the fields named in `keywords` replaced."""
    for name in keywords:
        if name not in _OPTION_NAMES:
            raise TypeError(f"contact_inverse_dynamics() got an unexpected keyword argument {name!r}")
    return dataclasses.replace(options or ContactIDOptions(), **keywords)


def _contact_frames(model, contacts, switch, point):
    """(contacts, frames): one `ContactFrame` per frame (the frames with active switches when
    none is named) and their names, each a frame of the robot moving with it."""
    if contacts is None or (not isinstance(contacts, (str, ContactFrame)) and len(contacts) == 0):
        contacts = list(switch)  # no contacts named: the frames with active.<frame> columns
    contacts = merge_contacts([contacts] if isinstance(contacts, (str, ContactFrame)) else contacts, point)
    if not contacts:
        raise InputError("no contact frames: name at least one (--contact FRAME), or give active.<frame> "
                         "columns in the input")
    frames = tuple(c.frame for c in contacts)
    for f in frames:
        model.frame_id(f)
        if model.arrays.frame_body[model.frame_id(f)] < 0:
            raise InputError(f"contact frame '{f}' is fixed to the world, not to the robot")
    return contacts, frames


def _check_solver_options(o) -> np.ndarray:
    """The checks of smoothing, min_torque, friction and normal; returns the normal as an array."""
    if o.over_time:
        _check_number("smoothing", o.smoothing, 0.0, False)
        _check_number("min_torque", o.min_torque, 0.0, True)
    if o.friction is not None:
        _check_number("friction coefficient", o.friction, 0.0, False)
        if o.over_time:
            raise InputError("friction cones are solved frame by frame: --friction cannot be combined "
                             "with --over-time")
    nrm = np.asarray(o.normal, dtype=np.float64)
    if nrm.shape != (3,) or not np.all(np.isfinite(nrm)) or np.linalg.norm(nrm) == 0:
        raise InputError(f"normal must be three finite numbers, not all zero, got {o.normal!r}")
    return nrm


def _allowed(contacts, frames, time, switch, n) -> np.ndarray:
    """(N, k) bool: each contact allowed at each row by its windows and its active switch."""
    for f, col in switch.items():
        if np.shape(col) != (n,):
            raise InputError(f"active switch of '{f}' must have shape ({n},), got {np.shape(col)}")
    if any(c.windows for c in contacts) or switch:
        return active_mask(contacts, time, {f: c for f, c in switch.items() if f in frames})
    return np.ones((n, len(frames)), dtype=bool)


def _guess_wrenches(guesses, frames, n) -> np.ndarray:
    """(N, k, 6) the wrench guesses, zero for the contacts without one."""
    guesses = dict(guesses or {})
    for f in guesses:
        if f not in frames:
            raise InputError(f"guess for '{f}', which is not a contact; contacts: {', '.join(frames)}")
    g = np.zeros((n, len(frames), 6))
    for c, f in enumerate(frames):
        if f in guesses:
            gc = np.asarray(guesses[f], dtype=np.float64)
            if gc.shape not in ((6,), (n, 6)) or not np.all(np.isfinite(gc)):
                raise InputError(f"guess for '{f}' must be 6 finite numbers (or ({n}, 6)), got shape {gc.shape}")
            g[:, c] = gc
    return g


def _weight(weight, guesses) -> np.ndarray:
    """(6,) the per-contact weight W: given, else `GUESS_WEIGHT` with guesses and `WEIGHT` without."""
    if weight is None:
        weight = GUESS_WEIGHT if guesses else WEIGHT
    weight = np.asarray(weight, dtype=np.float64)
    if weight.shape != (6,) or not np.all(np.isfinite(weight)) or np.any(weight <= 0):
        raise InputError(f"weight must be 6 positive numbers, got {weight!r}")
    return weight


def _wrench_mask(on, contacts) -> np.ndarray:
    """(N, 6k) bool: the wrench entries free at each row (an allowed contact's; a point's forces only)."""
    n, k = on.shape
    mask = np.repeat(on[:, :, None], 6, axis=2)
    for c, contact in enumerate(contacts):
        if contact.point:
            mask[:, c, 3:] = False
    return mask.reshape(n, 6 * k)


def _root_wrenches(A, broot, W, g, mask, o, nrm):
    """(w (N, 6k), feasible (N,)): the wrenches that meet the root rows, by the solver the options choose."""
    feasible = np.ones(A.shape[0], dtype=bool)
    if o.over_time:
        return solve_over_time(A, broot, W, g, mask, float(o.smoothing), float(o.min_torque)), feasible
    w = solve_frames(A, broot, W, g, mask)
    if o.friction is not None:
        w, feasible, _ = solve_friction(A, broot, W, g, mask, float(o.friction), nrm, w0=w, progress=o.progress)
    return w, feasible
