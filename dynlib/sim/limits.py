"""What a simulated motion did at or beyond the URDF's joint limits: one record per joint and kind.

A URDF's ``<limit lower upper velocity effort>`` describe the real robot: its joints stop at their
position limits, and its motors give at most ``effort``. dyn's simulation holds both by default
(`dynlib.sim.joint_limits`: a one-sided limit torque, motor torque saturation); with ``limits`` off
(``--no-limits``) a motion that goes past them is not the robot's. Velocity limits are not enforced
(as in MuJoCo), only reported. `excursions` finds, from the recorded rows, every coordinate that went
past one of its limits (a held position limit: by more than `HELD_SLACK`, what its compliance allows),
and every motor torque that saturated, with the first time and the extreme value, so that the run
can say so (`dyn simulate` prints one warning line per record) instead of writing such a motion in
silence.

Limits that the URDF does not give are infinite (`dynlib.core.model.Model`: ``lower``/``upper`` per
q, ``velocity_limit``/``effort`` per v; a continuous joint and a free-flyer have none).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

POSITION, VELOCITY, EFFORT, SATURATED = "position", "velocity", "effort", "saturated"
HELD_SLACK = {0: 0.02, 1: 0.002}  # rad (revolute), m (prismatic): how far past a held position limit is not reported


class Excursion(NamedTuple):
    """Coordinate `name` went past its `kind` limit (`limit`: (lower, upper) for a position, the bound of
    |value| otherwise) at `rows` recorded rows, first at time `first` (s), reaching `extreme`."""

    kind: str
    name: str
    limit: tuple | float
    rows: int
    first: float
    extreme: float
    held: bool = False  # the run held this limit (position) or saturated at it (effort)

    def message(self) -> str:
        at = f"at t = {self.first:g} s ({self.rows} row(s), reaching {self.extreme:.4g})"
        if self.kind == POSITION:
            lo, hi = self.limit
            if self.held:
                return (f"{self.name} went past its URDF position limits [{lo:g}, {hi:g}] by more than the limit's "
                        f"compliance {at}: a smaller dt holds it closer")
            return (f"{self.name} left its URDF position limits [{lo:g}, {hi:g}] {at}: the limits were switched off "
                    "(--no-limits), so the motion past them is not the robot's")
        if self.kind == SATURATED:
            return f"{self.name}'s motor torque saturated at its URDF effort limit ±{self.limit:g} {at}"
        if self.kind == EFFORT:
            return (f"{self.name}'s motor torque exceeds its URDF effort limit {self.limit:g} {at}: the limits were "
                    "switched off (--no-limits), so the motion is driven harder than the robot's motors can")
        return f"{self.name} exceeds its URDF velocity limit {self.limit:g} {at} (velocity limits are not enforced)"


def beyond(time, values, lower, upper) -> list:
    """(k, rows, first time, extreme value) for each column k of `values` (N, n) outside [lower[k], upper[k]]
    at some row (NaN rows are not counted), in column order: the one test of a recorded motion against
    limits (`excursions`; `dynlib.motion.inverse.effort_excess` for the torques a recording needs)."""
    values = np.asarray(values, dtype=np.float64)
    out = []
    for k in np.flatnonzero(np.isfinite(lower) | np.isfinite(upper)):
        x = values[:, k]
        bad = (x < lower[k]) | (x > upper[k])
        if bad.any():
            worst = x[bad][np.argmax(np.maximum(lower[k] - x[bad], x[bad] - upper[k]))]
            out.append((int(k), int(bad.sum()), float(time[np.argmax(bad)]), float(worst)))
    return out


def _over(kind, names, time, values, lower, upper, limits=None, held=False) -> list:
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    limits = (lower, upper) if limits is None else limits
    return [Excursion(kind, names[k], (float(limits[0][k]), float(limits[1][k])) if kind == POSITION
                      else float(limits[1][k]), rows, first, extreme, held)
            for k, rows, first, extreme in beyond(time, values, lower, upper)]


def _slack(model) -> np.ndarray:
    """(nq,) how far past each held position limit goes unreported (`HELD_SLACK` by joint type)."""
    a, out = model.arrays, np.zeros(model.nq)
    for i in range(model.nb):
        if int(a.jtype[i]) in HELD_SLACK:  # revolute, prismatic: one coordinate
            out[a.idx_q[i]] = HELD_SLACK[int(a.jtype[i])]
    return out


def excursions(model, time, q, v, tau, held=None) -> list:
    """The `Excursion`s of a recorded motion: rows time (N,), q (N, nq), v (N, nv), tau (N, nv) (the motor
    torques applied), against `model`'s position limits (revolute and prismatic coordinates), velocity
    limits and effort limits; positions first, then efforts, then velocities, each in coordinate order.
    held: {"position": bool, "effort": bool}, the limits the run held (`SimulationResult.limits`; None:
    neither): a held position limit is reported past `HELD_SLACK` only, a held effort limit where the
    torque saturated (|tau| at the bound: kind SATURATED)."""
    held = held or {}
    time = np.asarray(time, dtype=np.float64)
    vmax = np.asarray(model.velocity_limit, dtype=np.float64)
    emax = np.asarray(model.effort, dtype=np.float64)
    lo, hi = np.asarray(model.lower, dtype=np.float64), np.asarray(model.upper, dtype=np.float64)
    slack = _slack(model) if held.get("position") else 0.0
    position = _over(POSITION, model.q_names, time, np.asarray(q), lo - slack, hi + slack, (lo, hi),
                     bool(held.get("position")))
    if held.get("effort"):
        tau = np.asarray(tau, dtype=np.float64)
        effort = _over(SATURATED, model.v_names, time, np.abs(tau), np.full(emax.shape, -np.inf), emax * (1 - 1e-12),
                       (-emax, emax), True)
    else:
        effort = _over(EFFORT, model.v_names, time, np.asarray(tau), -emax, emax)
    return position + effort + _over(VELOCITY, model.v_names, time, np.asarray(v), -vmax, vmax)
