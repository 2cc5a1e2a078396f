"""What a simulated motion did beyond the URDF's joint limits: one record per joint and kind.

A URDF's ``<limit lower upper velocity effort>`` describe the real robot: its joints stop at their
position limits, and its motors give at most ``effort``. dyn's simulation does not yet hold the
position limits as constraints nor saturate the motor torques, so a motion that goes past them is not
the robot's; velocity limits are not enforced either (as in MuJoCo), only reported. `excursions`
finds, from the recorded rows, every coordinate that went past one of its limits, with the first
time and the extreme value, so that the run can say so (`dyn simulate` prints one warning line per
record) instead of writing such a motion in silence.

Limits that the URDF does not give are infinite (`dynlib.core.model.Model`: ``lower``/``upper`` per
q, ``velocity_limit``/``effort`` per v; a continuous joint and a free-flyer have none).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

POSITION, VELOCITY, EFFORT = "position", "velocity", "effort"


class Excursion(NamedTuple):
    """Coordinate `name` went past its `kind` limit (`limit`: (lower, upper) for a position, the bound of
    |value| otherwise) at `rows` recorded rows, first at time `first` (s), reaching `extreme`."""

    kind: str
    name: str
    limit: tuple | float
    rows: int
    first: float
    extreme: float

    def message(self) -> str:
        at = f"at t = {self.first:g} s ({self.rows} row(s), reaching {self.extreme:.4g})"
        if self.kind == POSITION:
            lo, hi = self.limit
            return (f"{self.name} left its URDF position limits [{lo:g}, {hi:g}] {at}: dyn does not hold position "
                    "limits yet, so the motion past them is not the robot's")
        if self.kind == EFFORT:
            return (f"{self.name}'s motor torque exceeds its URDF effort limit {self.limit:g} {at}: dyn does not "
                    "saturate motor torques yet, so the motion is driven harder than the robot's motors can")
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


def _over(kind, names, time, values, lower, upper) -> list:
    return [Excursion(kind, names[k], (float(lower[k]), float(upper[k])) if kind == POSITION else float(upper[k]),
                      rows, first, extreme) for k, rows, first, extreme in beyond(time, values, lower, upper)]


def excursions(model, time, q, v, tau) -> list:
    """The `Excursion`s of a recorded motion: rows time (N,), q (N, nq), v (N, nv), tau (N, nv) (the motor
    torques applied), against `model`'s position limits (revolute and prismatic coordinates), velocity
    limits and effort limits; positions first, then efforts, then velocities, each in coordinate order."""
    time = np.asarray(time, dtype=np.float64)
    vmax = np.asarray(model.velocity_limit, dtype=np.float64)
    emax = np.asarray(model.effort, dtype=np.float64)
    return (_over(POSITION, model.q_names, time, np.asarray(q), np.asarray(model.lower), np.asarray(model.upper))
            + _over(EFFORT, model.v_names, time, np.asarray(tau), -emax, emax)
            + _over(VELOCITY, model.v_names, time, np.asarray(v), -vmax, vmax))
