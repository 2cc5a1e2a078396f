"""What identification measures in a recording: the motion and the generalized forces that produced it.

`read_measurements` turns a recording into what identification needs. The file is read
by `dynlib.files.recordings.read_recording`, as ``dyn inverse`` reads it (dyn's CSV and
Parquet, ROS 1/2 bags, ``rostopic echo -p`` and PlotJuggler CSVs; a column map,
a topic, a time unit, resampling); it returns `Measurements`,

- ``time`` (N,), ``q`` (N, nq), ``v``, ``a`` (N, nv): from ``q.*`` and either the
  file's ``qd.*``/``qdd.*`` or estimated from q (`dynlib.motion.derivatives`);
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

With estimated derivatives the first and last half window (savgol) or sample
(central) are dropped: the fit is one-sided there.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..derivatives import motion_from_trajectory, savgol_length
from ...errors import TrajectoryError
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


def read_measurements(model, source, *, derivatives="auto", window=0.1, polyorder=4, columns=None, topic=None,
                      time_unit=None, resample=None, joint_order=None) -> Measurements:
    """The `Measurements` of `source` (a path, '-', or a `dynlib.files.trajectory.Trajectory`) for `model`;
    columns, topic, time_unit, resample and joint_order as `dynlib.files.recordings.read_recording` takes them."""
    from ...algorithms.jacobians import frame_jacobian
    from ...files.recordings import read_recording

    read = read_recording(model, source, topic=topic, columns=columns, time_unit=time_unit, resample=resample,
                          joint_order=joint_order)
    traj = read.trajectory  # the columns by dyn's names (the map applied), time in s from the first sample
    tcols = torque_columns(model, traj)
    frames = contact_frames(model, traj)
    motion = motion_from_trajectory(model, traj, derivatives=derivatives, window=window, polyorder=polyorder)
    names = list(tcols.values())
    values = traj.finite_columns(names)
    tau = np.zeros((len(traj), model.nv))
    tau[:, list(tcols)] = values
    for frame in frames:
        w = traj.finite_columns(contact_columns([frame]))
        Jc = frame_jacobian(model, motion.q, frame, "local_world_aligned")
        tau += np.einsum("nrk,nr->nk", Jc, w)
    keep = slice(None)
    if motion.derivatives == "savgol":
        dt = (motion.time[-1] - motion.time[0]) / max(len(motion.time) - 1, 1)
        half = savgol_length(window, dt) // 2
        keep = slice(half, len(traj) - half)
    elif motion.derivatives == "central":
        keep = slice(1, len(traj) - 1)
    return Measurements(motion.time[keep], motion.q[keep], motion.v[keep], motion.a[keep], tau[keep],
                     str(traj.path), motion.derivatives, tuple(frames), tuple(read.notes))
