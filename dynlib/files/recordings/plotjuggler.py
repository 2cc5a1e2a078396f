"""Recordings exported by PlotJuggler: its CSV of ROS ``sensor_msgs/JointState`` series.

A PlotJuggler export ("Publish > CSV Exporter", or the data-range export) has the
header ``__time,<series>,…`` with the series sorted by name; a ROS
``sensor_msgs/JointState`` topic ``/js`` gives the series ``/js/<joint>/position``,
``/js/<joint>/velocity``, ``/js/<joint>/effort`` (those its messages fill) and
``/js/header/stamp`` (seconds); ``__time`` is written with 6 decimals, the values
with 9, and a cell is empty when its series has no sample at that row's time
(another topic's sample). Joints are found by their names in the series names; the
rows of other topics (every position of the robot's joints empty) are left out, and
a row with some of them empty is a message without that joint: an error. The series
are renamed to dyn's names as dyn's own files' mapped columns are
(`dynlib.files.recordings.dyn_files.canonical`).
"""
from __future__ import annotations

import re

import numpy as np

from ..columns import TIME, coordinate_columns
from ..column_map import mapped, source_columns
from ...errors import InputError, TrajectoryError
from ..trajectory import read_opened, require_columns
from ..trajectory.in_memory import listing
from .dyn_files import canonical, coordinate_names

PLOTJUGGLER_TIME = "__time"
_SERIES = re.compile(r"^(?P<topic>.*)/(?P<joint>[^/]+)/(?P<field>position|velocity|effort)$")
_FIELDS = {"q": "position", "qd": "velocity", "effort": "effort"}


def is_plotjuggler(names) -> bool:
    return bool(names) and names[0] == PLOTJUGGLER_TIME


def plotjuggler_topics(names) -> dict:
    """{topic: {joint names}} of the ``<topic>/<joint>/position|velocity|effort`` series."""
    topics = {}
    for n in names:
        m = _SERIES.match(n)
        if m:
            topics.setdefault(m["topic"], set()).add(m["joint"])
    return topics


def read_plotjuggler(display, buf, path, model, columns, topic, notes):
    """(traj, time column, rows) of a PlotJuggler export: the rows of the JointState topic,
    its series renamed to dyn's names (others left out)."""
    traj = read_opened(display, buf, "csv", path)
    names = list(traj.names) + list(traj.unusable)
    topics = plotjuggler_topics(names)
    robot = set(model.q_names)
    mine = {t: js & robot for t, js in topics.items() if js & robot}
    if topic is not None:
        if topic not in topics:
            found = ", ".join(sorted(topics)) or "none"
            raise TrajectoryError(f"no topic {topic!r} in this PlotJuggler export (series "
                                  f"'{topic}/<joint>/position'); its JointState topics: {found}",
                                  file=display, key="--topic")
        chosen = topic
    elif not mine:
        raise TrajectoryError(
            f"a PlotJuggler export without the joints of robot '{model.name}': no series "
            f"'<topic>/<joint>/position' for {listing(model.q_names, 4)}"
            + (f"; its joint series are on {', '.join(sorted(topics))} for "
               f"{listing(sorted(set().union(*topics.values())), 6)}" if topics else ""), file=display)
    elif len(mine) > 1:
        raise TrajectoryError(f"{len(mine)} JointState topics hold the robot's joints: "
                              f"{', '.join(sorted(mine))}; choose one with --topic", file=display)
    else:
        chosen = next(iter(mine))
    full = dict(columns)
    for part, field in _FIELDS.items():
        if part not in full:
            full[part] = f"{chosen}/{{joint}}/{field}"
    _check_names_agree(model, full, topics.get(chosen, set()), chosen, display)
    qcols = source_columns(model, "q", full)
    _require_present(traj, qcols)
    parts, used = ["q"], list(qcols)
    for part in ("qd", "effort"):
        cols = source_columns(model, part, full)
        if mapped(columns, part):
            _require_present(traj, cols)
            parts.append(part)
            used += cols
        elif all(traj.has(c) for c in cols):
            parts.append(part)
            used += cols
    for part in ("qdd",):
        if mapped(columns, part):
            parts.append(part)
            used += [c for c in source_columns(model, part, full) if traj.has(c)]
    rows = _joint_rows(traj, model, qcols, chosen, display)
    traj = traj.take(rows)  # the robot's rows only: the others' empty cells are no error
    _check_cells(traj, used, display)
    renamed = canonical(traj, model, {k: v for k, v in full.items() if k.partition(".")[0] in parts or k == TIME},
                        parts)
    time_name = _plotjuggler_time(traj, chosen, columns, notes)
    keep = set(coordinate_columns("q", model.q_names)) | {time_name}
    for part in parts[1:]:
        keep |= set(coordinate_columns(part, coordinate_names(model, part)))
    drop = [n for n in list(renamed.names) + list(renamed.unusable) if n not in keep]
    renamed = renamed.renamed({}, drop)
    return renamed, time_name, rows


def _require_present(traj, names):
    """The error of `require_columns` for the `names` missing; their empty cells are not one here: the rows
    of other topics have them (the rows kept are checked, `_check_cells`)."""
    if not all(traj.has(n) for n in names):
        require_columns(traj, names)
    unusable = traj.unusable
    bad = [n for n in names if n in unusable and "empty value" not in unusable[n]]  # a NaN, a word
    if bad:
        traj.check_usable(bad)


def _check_cells(traj, names, display):
    """An empty (or NaN) cell of the columns `names` (in the rows kept): an error at its line."""
    cols = [traj.names.index(n) for n in names if traj.has(n)]
    bad = ~np.isfinite(traj.data[:, cols])
    if bad.any():
        r, c = (int(x[0]) for x in np.nonzero(bad))
        raise TrajectoryError("empty value; expected a number", file=display, column=traj.names[cols[c]],
                              **traj.locate(r))


def _check_names_agree(model, full, joints_in_file, topic, display):
    """A mapped series of another joint of this topic contradicts the names: an error."""
    for part, field in _FIELDS.items():
        for k, (name, col) in enumerate(zip(coordinate_names(model, part), source_columns(model, part, full))):
            m = _SERIES.match(col)
            if m and m["topic"] == topic and m["joint"] != name and m["joint"] in joints_in_file:
                raise InputError(f"column map gives {part}.{name} from {col!r}, the {m['field']} of joint "
                                 f"{m['joint']!r} in this file: joints are matched by the names in the series; "
                                 f"drop that entry of --columns", key="--columns")


def _plotjuggler_time(traj, topic, columns, notes):
    """The time column: --columns time=…; else the header stamps, as ``__time`` when it holds
    them (to its 1 µs: exact decimals), else ``<topic>/header/stamp``; else ``__time``."""
    if TIME in columns:
        return columns[TIME]
    stamp = f"{topic}/header/stamp"
    if not traj.has(stamp):
        notes.append(f"time from {PLOTJUGGLER_TIME} (PlotJuggler's time axis: the receive time, or the header "
                     f"stamps if it was set so): the export has no '{stamp}' series")
        return PLOTJUGGLER_TIME
    axis, stamps = traj.data[:, traj.names.index(PLOTJUGGLER_TIME)], traj.data[:, traj.names.index(stamp)]
    both = np.isfinite(stamps)
    if both.any() and np.abs(axis[both] - stamps[both]).max() <= 1e-6:
        return PLOTJUGGLER_TIME
    notes.append(f"time from the header stamps ('{stamp}'), not from {PLOTJUGGLER_TIME} (PlotJuggler's receive "
                 "time here)")
    return stamp


def _joint_rows(traj, model, qcols, topic, display):
    """The rows with the robot's joint positions: those where none is empty. A row where some
    are empty and others not is a message without those joints: an error at its line."""
    Q = traj.data[:, [traj.names.index(c) for c in qcols]]
    have = np.isfinite(Q)
    some = have.any(axis=1)
    partial = some & ~have.all(axis=1)
    if partial.any():
        r = int(np.flatnonzero(partial)[0])
        missing = [model.q_names[j] for j in np.flatnonzero(~have[r])]
        raise TrajectoryError(f"this sample of {topic} has no position of joint {missing[0]!r}"
                              f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''} (column "
                              f"{qcols[model.q_names.index(missing[0])]!r} is empty) while it has the others: "
                              "a message without that joint; dyn does not guess it",
                              file=display, **traj.locate(r))
    rows = np.flatnonzero(some)
    if rows.size == 0:
        raise TrajectoryError(f"no sample of {topic} has the robot's joint positions", file=display)
    return rows
