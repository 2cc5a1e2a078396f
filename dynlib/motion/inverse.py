"""Inverse dynamics over a recorded trajectory: the motor torques behind every row.

For each row, ``tau = M(q) a + h(q, v) + damping·v + friction·tanh(v / ε)`` (SPEC §2:
the URDF joint friction added back, ε = `friction_smoothing`), with v and a from the
file or estimated from q (`dynlib.motion.derivatives`). All rows go through the compiled
batched RNEA in one call. For a floating base the root's entries are the wrench
``(f, τ)`` that the root would need (in the root body frame, Pinocchio's
convention): the "imaginary crane" of contact-free inverse dynamics, which
`contact-id` replaces by contact wrenches.

Measured torques: a recording's ``effort.<name>`` columns (ROS ``JointState.effort``,
`dynlib.files.recordings`) are carried to the output next to the computed torques, with
``residual.<name>`` = effort − tau: what the model does not explain (friction it
does not have, wrong inertias, a payload, sensor offsets), the first thing to look at.

Public: `inverse_dynamics_trajectory(model, traj, ...)` -> `InverseDynamics`
(column names, data, how the derivatives were obtained);
`joint_friction_torques(model, v, smoothing)`; `model_torques(model, q, v, a)`;
`measured_efforts(model, traj, tau)`; `effort_excess(model, time, tau)`: the joints whose torques exceed
their URDF ``<limit effort>`` (a motion the robot's motors cannot make), which `dyn inverse` and
`dyn contact-id` warn of; `over_limit_flags(model, tau)`: the ``over_limit.<name>`` columns that mark
those rows (``--with limits``).
The output's torque columns are ``tau.<tau_name>`` (`dynlib.files.columns`), the names
`simulate` writes, so that ``dyn simulate | dyn inverse`` gives back the columns it
was given.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..files.columns import (TIME, coordinate_columns, effort_columns, over_limit_columns, rank, residual_columns,
                             tau_columns)
from ..algorithms.rnea import rnea
from .derivatives import motion_from_trajectory
from ..errors import InputError
from ..sim.dynamics import joint_friction


class InverseDynamics(NamedTuple):
    """The output table: column `names`, `data` (N, len(names)), `derivatives`,
    how v and a were obtained ('given', 'central' or 'savgol')."""

    names: list
    data: np.ndarray
    derivatives: str

    def over_limit(self, model) -> list:
        """The joints whose torque exceeds their effort limit (`effort_excess`)."""
        where = {n: j for j, n in enumerate(self.names)}
        return effort_excess(model, self.data[:, where[TIME]], self.data[:, [where[c] for c in tau_columns(model)]])

    def with_over_limit(self, model) -> "InverseDynamics":
        """The table with the ``over_limit.<name>`` columns after the others (`over_limit_flags`)."""
        where = {n: j for j, n in enumerate(self.names)}
        names, flags = over_limit_flags(model, self.data[:, [where[c] for c in tau_columns(model)]])
        return InverseDynamics(self.names + names, np.hstack([self.data, flags]), self.derivatives)


def joint_friction_torques(model, v, smoothing=1e-3):
    """damping·v + friction·tanh(v / smoothing): the torque the URDF joint friction
    takes away, (N, nv) for v (N, nv) (SPEC §2; the law: `dynlib.sim.dynamics.joint_friction`)."""
    a = model.arrays
    return joint_friction.py_func(a.damping, a.friction, smoothing, v)


def model_torques(model, q, v, a, joint_friction=True, friction_smoothing=1e-3):
    """The motor torques (N, nv) of `model` for rows q, v, a: ``rnea`` plus the URDF joint friction
    (`joint_friction_torques`): what ``dyn inverse`` writes, and what ``dyn identify`` measures the
    URDF it writes with."""
    tau = rnea(model, q, v, a)
    if joint_friction:
        tau += joint_friction_torques(model, v, friction_smoothing)
    return tau


def measured_efforts(model, traj, tau):
    """(names, data): ``effort.<name>`` and ``residual.<name>`` = effort − tau, (N, 2k), for
    the k coordinates (`model.v_names`, in order) whose ``effort.<name>`` column `traj` has;
    ([], (N, 0)) when it has none. tau: (N, nv), the computed torques. An effort a
    message did not carry is NaN, and so is its residual."""
    have = [k for k, name in enumerate(model.v_names) if effort_columns([name])[0] in traj]
    if not have:
        return [], np.empty((len(traj), 0))
    names = [model.v_names[k] for k in have]
    effort = traj.data[:, [traj.names.index(c) for c in effort_columns(names)]]
    return effort_columns(names) + residual_columns(names), np.hstack([effort, effort - tau[:, have]])


class OverLimit(NamedTuple):
    """A joint whose computed torque exceeds its URDF effort limit: at `rows` rows, first at `first`
    (seconds), by at most `ratio` times the limit."""

    joint: str
    limit: float
    rows: int
    first: float
    ratio: float

    def message(self) -> str:
        unit = "N" if self.joint.endswith((".fx", ".fy", ".fz")) else "N·m"
        return (f"{self.joint} needs more than its effort limit {self.limit:g} {unit} at {self.rows} row(s) "
                f"(first at t = {self.first:g} s, up to {self.ratio:.3g}× the limit): the robot's motors "
                "cannot make this motion")


def effort_excess(model, time, tau) -> list:
    """An `OverLimit` for each coordinate (`model.v_names`, in order) whose |tau| exceeds its effort limit
    (`model.effort`, inf where the URDF gives none) at some row; tau (N, nv), time (N,). NaN rows are
    not counted."""
    from ..sim.limits import beyond

    limit = np.asarray(model.effort, dtype=np.float64)
    found = beyond(np.asarray(time, dtype=np.float64), tau, -limit, limit)
    return [OverLimit(model.v_names[k], float(limit[k]), rows, first, abs(x) / limit[k] if limit[k] > 0 else np.inf)
            for k, rows, first, x in found]


def effort_limited(model) -> list:
    """The v indices of the coordinates with an effort limit (`model.effort` finite), in order; InputError when
    there is none (nothing to mark)."""
    have = [int(k) for k in np.flatnonzero(np.isfinite(np.asarray(model.effort, dtype=np.float64)))]
    if not have:
        raise InputError(f"over-limit columns were asked for, but no joint of {model.name} has an effort limit "
                         "(<limit effort=...> in the URDF)")
    return have


def over_limit_flags(model, tau) -> tuple:
    """(names, flags): ``over_limit.<v_name>`` for each coordinate with an effort limit (`effort_limited`) and
    flags (N, k), 1.0 on the rows where |tau| exceeds that limit, else 0.0 (a NaN torque: 0), the rows
    `effort_excess` counts; tau (N, nv). InputError when no coordinate has an effort limit."""
    have = effort_limited(model)
    limit = np.asarray(model.effort, dtype=np.float64)[have]
    x = np.asarray(tau, dtype=np.float64)[:, have]
    flags = ((x < -limit) | (x > limit)).astype(np.float64)
    return over_limit_columns([model.v_names[k] for k in have]), flags


def inverse_dynamics_trajectory(model, traj, *, derivatives="auto", window=0.1, polyorder=4,
                                joint_friction=True, friction_smoothing=1e-3, columns=None,
                                keep_columns=False) -> InverseDynamics:
    """The motor torques of every row of `traj` (a `dynlib.files.trajectory.Trajectory`).

    derivatives, window, polyorder, columns: how q, v, a are read or estimated
    (`dynlib.motion.derivatives.motion_from_trajectory`). joint_friction: add the URDF
    damping and Coulomb friction back (False: rigid-body torques only).
    keep_columns: also keep the input's columns (their tau.* columns are replaced) and write the
    qd.* and qdd.* used (given or estimated), in SPEC §5 order. Returns the columns ``time``, [kept columns], ``tau.*`` and, where
    `traj` has measured torques, ``effort.*`` and ``residual.*`` (`measured_efforts`).
    """
    if not (np.isfinite(friction_smoothing) and friction_smoothing > 0):
        raise InputError(f"friction smoothing must be a positive number, got {friction_smoothing!r}")
    motion = motion_from_trajectory(model, traj, derivatives=derivatives, window=window,
                                    polyorder=polyorder, columns=columns)
    tau = model_torques(model, motion.q, motion.v, motion.a, joint_friction, friction_smoothing)
    out_names = tau_columns(model)
    measured, extra = measured_efforts(model, traj, tau)
    # the output is column-major: the writer wants columns (no transpose then)
    if not keep_columns:
        data = np.empty((len(traj), 1 + model.nv + extra.shape[1]), order="F")
        data[:, 0] = motion.time
        data[:, 1:1 + model.nv] = tau
        data[:, 1 + model.nv:] = extra
        return InverseDynamics([TIME] + out_names + measured, data, motion.derivatives)
    computed = {n: tau[:, j] for j, n in enumerate(out_names)}
    for part_, values in (("qd", motion.v), ("qdd", motion.a)):  # the velocities and accelerations used
        computed.update({n: values[:, j] for j, n in enumerate(coordinate_columns(part_, model.v_names))})
    computed.update({n: extra[:, j] for j, n in enumerate(measured)})
    kept = [n for n in traj.names if n not in computed and n != TIME]
    order = sorted(kept + list(computed), key=rank)  # SPEC §5 order
    where = {n: j for j, n in enumerate(traj.names)}
    data = np.empty((len(traj), 1 + len(order)), order="F")
    data[:, 0] = motion.time
    for j, n in enumerate(order, start=1):
        data[:, j] = computed[n] if n in computed else traj.data[:, where[n]]
    return InverseDynamics([TIME] + order, data, motion.derivatives)
