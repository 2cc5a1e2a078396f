"""What identification measures in a recording: the motion and the generalized forces that produced it.

`read_measurements` turns a recording into what identification needs. The file is read
by `dynlib.files.recordings.read_recording`, as ``dyn inverse`` reads it (dyn's CSV and
Parquet, ROS 1/2 bags, ``rostopic echo -p`` and PlotJuggler CSVs; a column map,
a topic, a time unit, resampling); it returns `Measurements`,

- ``time`` (N,), ``q`` (N, nq), ``v``, ``a`` (N, nv): from ``q.*`` and, by `plan_derivatives`,
  the file's ``qd.*``/``qdd.*``; its measured velocities ``qd.*`` (a bag's
  ``JointState.velocity``) with ``a`` their Savitzky–Golay derivative; estimated from q
  (`dynlib.motion.derivatives`); or zero (still poses). A Savitzky–Golay route on
  non-uniform stamps resamples the recording at its mean rate first, and a window
  chosen for 'auto' spans at least 2·polyorder + 3 samples; ``notes`` says which;
- ``tau`` (N, nv): the measured generalized force, what ``M(q) a + h(q, v)`` plus
  the joint friction must equal: the motor torques of ``tau.<joint>`` (or
  ``effort.<joint>``, a ROS ``JointState`` name) for every actuated DoF; for a
  free-flyer's six root rows ``tau.root.fx … tz`` when the file has them, else
  zero (no wrench on the root: the robot flies, or its contacts are given as
  below); plus ``J_cᵀ w_c`` for every contact wrench column group
  ``contact.<frame>.fx … tz`` (a wrench at the frame origin, world-aligned axes:
  what `dyn contact-id` writes and what force plates give, Jᵀ of the frame's
  local-world-aligned Jacobian);
- ``path`` and ``derivatives`` (how v and a were obtained).

- ``tau`` optionally filtered, zero-phase (`filter_torque`: the derivatives' Savitzky–Golay
  window, or a Butterworth low-pass run forwards and backwards).

With estimated derivatives the first and last half window (savgol) or sample
(central) are dropped, and as many as a torque filter needs: the fit is one-sided there.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..derivatives import UNIFORM_TOLERANCE, motion_from_trajectory, savgol_length, savgol_weights
from ...errors import InputError, TrajectoryError
from ...files.columns import EFFORT, column, contact_columns, contact_names
from ...core.joints import FREEFLYER



class Measurements(NamedTuple):
    """The rows identification fits: time (N,), q (N, nq), v, a, tau (N, nv); see the module docstring."""

    time: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    tau: np.ndarray
    path: str
    derivatives: str
    contacts: tuple  # frames whose contact wrenches were added to tau
    notes: tuple = ()  # what the reader decided (a time unit recognised, a topic chosen, ...)


def _root_dofs(model):
    a = model.arrays
    out = []
    for i in np.flatnonzero(a.jtype == FREEFLYER):
        out += list(range(a.idx_v[i], a.idx_v[i] + 6))
    return out


def torque_columns(model, traj):
    """{DoF: column} of the measured torques of `traj` (tau.<name>, else effort.<name>)."""
    root = set(_root_dofs(model))
    found, missing = {}, []
    for k, (vname, tname) in enumerate(zip(model.v_names, model.tau_names)):
        cands = [column("tau", tname), column(EFFORT, vname)]
        col = next((c for c in cands if traj.has(c)), None)
        if col is not None:
            found[k] = col
        elif k not in root:
            missing.append(cands[0])
    if not any(k not in root for k in found) and missing:
        raise TrajectoryError("has no measured torques: identification needs a tau.<joint> (or effort.<joint>) "
                              f"column for every actuated joint, e.g. {missing[0]!r}", file=traj.path)
    if missing:
        raise TrajectoryError(f"no measured torque for {len(missing)} joint{'s' if len(missing) > 1 else ''}: missing "
                              + ", ".join(repr(c) for c in missing[:4]) + (" …" if len(missing) > 4 else "")
                              + " (or effort.<joint>)", file=traj.path)
    return found


def contact_frames(model, traj):
    """Frames with a full contact.<frame>.fx … tz column group in `traj`."""
    frames = []
    for frame in contact_names(traj.names):
        cols = contact_columns([frame])
        if not all(traj.has(c) for c in cols):
            raise TrajectoryError(f"contact wrench of '{frame}' is incomplete: expected the columns "
                                  + ", ".join(cols), file=traj.path)
        if frame not in model.frame_names:
            from ...errors import closest

            raise TrajectoryError(f"contact wrench column group 'contact.{frame}.*': robot '{model.name}' has no "
                                  f"frame '{frame}'; {closest(frame, model.frame_names)}", file=traj.path)
        frames.append(frame)
    return frames


DERIVATIVES = ("auto", "given", "central", "savgol", "zero")
MIN_WINDOW_EXTRA = 2  # a chosen Savitzky–Golay window spans at least 2·polyorder + 3 samples: some smoothing


def read_measurements(model, source, *, derivatives="auto", window=0.1, polyorder=4, torque_filter=None,
                      **reading) -> Measurements:
    """The `Measurements` of `source` (a path, '-', or a `dynlib.files.trajectory.Trajectory`) for `model`;
    reading: the keywords of `dynlib.files.recordings.read_recording` (columns, topic, time_unit, resample,
    joint_order, clock).

    derivatives (see `plan_derivatives`): 'given' (the file's qd.*, and its qdd.* or q̈ by one
    Savitzky–Golay differentiation of qd), 'central', 'savgol' (from q), 'zero' (still poses:
    q̇ = q̈ = 0), or 'auto'. A Savitzky–Golay route or a torque filter on non-uniform stamps
    resamples the recording first at its mean rate (said in `notes`). torque_filter: None,
    ('savgol',) (the derivatives' window and order) or ('lowpass', HZ) (a 4th-order Butterworth),
    both zero-phase.
    """
    from ...algorithms.jacobians import frame_jacobian
    from ...files.recordings import read_recording, resample as resample_to

    if derivatives not in DERIVATIVES:
        raise InputError(f"derivatives must be one of {', '.join(DERIVATIVES)}, got {derivatives!r}")
    read = read_recording(model, source, **reading)
    traj = read.trajectory  # the columns by dyn's names (the map applied), time in s from the first sample
    how = plan_derivatives(model, traj, derivatives)
    if (how in ("savgol", "velocities") or torque_filter) and len(traj) > 2 and not _uniform(traj.time):
        t = traj.time
        read = resample_to(model, read, _round_rate((t[-1] - t[0]) / (len(t) - 1)))
        traj = read.trajectory
    tcols = torque_columns(model, traj)
    frames = contact_frames(model, traj)
    motion, edge, note = _motion(model, traj, how, window, polyorder, explicit=derivatives == how)
    tau = np.zeros((len(traj), model.nv))
    tau[:, list(tcols)] = traj.finite_columns(list(tcols.values()))
    for frame in frames:
        w = traj.finite_columns(contact_columns([frame]))
        Jc = frame_jacobian(model, motion.q, frame, "local_world_aligned")
        tau += np.einsum("nrk,nr->nk", Jc, w)
    notes = list(read.notes) + [note]
    if torque_filter:
        tau, fedge, fnote = filter_torque(tau, motion.time, torque_filter, window, polyorder)
        edge = max(edge, fedge)
        notes.append(fnote)
    keep = slice(edge, len(traj) - edge)
    return Measurements(motion.time[keep], motion.q[keep], motion.v[keep], motion.a[keep], tau[keep],
                        str(traj.path), motion.derivatives, tuple(frames), tuple(notes))


def plan_derivatives(model, traj, derivatives):
    """How v and a are obtained: 'given' (qd.* and qdd.*), 'velocities' (qd.* measured, a by
    differentiating them), 'savgol', 'central' or 'zero'. 'auto' picks what the recording
    supports: every qd.* and qdd.* -> given; every qd.* -> velocities; else savgol of q.
    'given' needs every qd.* (and takes every qdd.* when they are all there)."""
    qd = [column("qd", n) for n in model.v_names]
    qdd = [column("qdd", n) for n in model.v_names]
    has_qd, has_qdd = all(traj.has(c) for c in qd), all(traj.has(c) for c in qdd)
    if derivatives in ("central", "savgol", "zero"):
        return derivatives
    if has_qd:
        return "given" if has_qdd else "velocities"
    if derivatives == "given":
        there = [c for c in qd + qdd if traj.has(c)]
        raise TrajectoryError(f"--derivatives given needs a qd.* column (measured velocity) for every coordinate; "
                              f"missing {', '.join(repr(c) for c in qd if not traj.has(c))[:200]}"
                              f"{'; it has ' + ', '.join(there[:4]) if there else ''}", file=traj.path)
    return "savgol"


def _uniform(t):
    dt = (t[-1] - t[0]) / (len(t) - 1)
    return float(np.abs(np.diff(t) - dt).max()) <= UNIFORM_TOLERANCE * dt


def _round_rate(dt):
    """A round sampling rate (Hz, three significant digits) near 1/dt."""
    hz = 1.0 / dt
    return float(f"{hz:.3g}")


def _window_samples(window, dt, polyorder, explicit):
    """(L, window): the Savitzky–Golay window in samples and seconds; unless `explicit`, at least
    2·polyorder + 3 samples (a window that smooths, whatever the sampling rate)."""
    L = savgol_length(window, dt)
    if not explicit:
        L = max(L, 2 * (polyorder + MIN_WINDOW_EXTRA) - 1)
    return L, (L - 1) * dt


def _motion(model, traj, how, window, polyorder, explicit):
    """(Motion, samples to drop at each end, a note saying how v and a were obtained)."""
    t = traj.time
    dt = (t[-1] - t[0]) / max(len(t) - 1, 1)
    rate = f"{1 / dt:.4g} Hz" if len(t) > 1 else "one sample"
    if how == "given":
        return motion_from_trajectory(model, traj, derivatives="given"), 0, "derivatives: qd.* and qdd.* as recorded"
    if how == "central":
        m = motion_from_trajectory(model, traj, derivatives="central")
        return m, 1, "derivatives: velocities and accelerations by central differences of q"
    if how == "zero":
        m = motion_from_trajectory(model, traj, derivatives="central")
        z = np.zeros_like(m.v)
        return m._replace(v=z, a=z.copy(), derivatives="zero"), 0, \
            "derivatives: zero (still poses): the torques are gravity's, q̇ = q̈ = 0"
    L, w = _window_samples(window, dt, polyorder, explicit)
    said = f"order {polyorder}, window {w:.4g} s = {L} samples at {rate}"
    if how == "savgol":
        m = motion_from_trajectory(model, traj, derivatives="savgol", window=w, polyorder=polyorder)
        have = sum(traj.has(column("qd", n)) for n in model.v_names)
        head = ("derivatives" if explicit else "derivatives: no qd.* columns" if not have else
                f"derivatives: qd.* for only {have} of the {model.nv} coordinates")
        return m, L // 2, f"{head}: velocities and accelerations by Savitzky–Golay of q ({said})"
    m = motion_from_trajectory(model, traj, derivatives="central")  # q, checked; v from the file
    v = traj.finite_columns([column("qd", n) for n in model.v_names])
    if L > len(t):
        raise TrajectoryError(f"Savitzky–Golay window {w:g} s spans {L} samples, but the recording has "
                              f"{len(t)}", file=traj.path)
    a = savgol_apply(v, savgol_weights(L, polyorder, dt)[0])
    note = (f"derivatives: measured velocities (qd.*), accelerations by Savitzky–Golay differentiation of "
            f"them ({said})")
    return m._replace(v=v, a=a, derivatives="given velocities, savgol accelerations"), L // 2, note


def savgol_apply(x, W):
    """(N, m): the rows W (L, L) of a Savitzky–Golay filter applied to x (N, m), N >= L: the centre
    row inside, the first and last window's own rows at the ends (scipy's mode 'interp')."""
    from numpy.lib.stride_tricks import sliding_window_view

    n, L = len(x), W.shape[0]
    h = L // 2
    out = np.empty_like(x, dtype=float)
    out[h:n - h] = sliding_window_view(x, L, axis=0) @ W[h]
    out[:h] = W[:h] @ x[:L]
    out[n - h:] = W[L - h:] @ x[n - L:]
    return out


def smoothing_weights(L, polyorder):
    """W0 (L, L): row p holds the weights that give the value at sample p of the least-squares
    polynomial of order `polyorder` through L samples (offsets scaled to [-1, 1], as
    `dynlib.motion.derivatives.savgol_weights`)."""
    scale = max(L // 2, 1)
    offsets = np.arange(L, dtype=np.float64)
    W0 = np.empty((L, L))
    for p in range(L):
        Qv, R = np.linalg.qr(np.vander((offsets - p) / scale, polyorder + 1, increasing=True))
        W0[p] = np.linalg.solve(R, Qv.T)[0]
    return W0


def filter_torque(tau, t, torque_filter, window, polyorder):
    """(filtered tau, samples to drop at each end, a note): ('savgol',) or ('lowpass', HZ), zero-phase,
    on uniform samples t."""
    dt = (t[-1] - t[0]) / max(len(t) - 1, 1)
    kind = torque_filter[0]
    if kind == "savgol":
        L, w = _window_samples(window, dt, polyorder, False)
        if L > len(t):
            raise InputError(f"--torque-filter savgol: the window of {L} samples is longer than the recording")
        return savgol_apply(tau, smoothing_weights(L, polyorder)), L // 2, \
            f"torque: Savitzky–Golay smoothing, zero-phase (order {polyorder}, window {w:.4g} s = {L} samples)"
    from scipy.signal import butter, sosfiltfilt

    hz = float(torque_filter[1])
    nyquist = 0.5 / dt
    if not (np.isfinite(hz) and 0 < hz < nyquist):
        raise InputError(f"--torque-filter lowpass: the cut-off must be between 0 and the Nyquist frequency "
                         f"{nyquist:.4g} Hz of the recording, got {hz:g}")
    edge = min(int(round(1.0 / (hz * dt))), max((len(t) - 1) // 4, 0))
    out = sosfiltfilt(butter(4, hz, fs=1.0 / dt, output="sos"), tau, axis=0)
    return out, edge, f"torque: low-pass at {hz:g} Hz, zero-phase (4th-order Butterworth forward and backward)"
