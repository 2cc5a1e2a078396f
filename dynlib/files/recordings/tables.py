"""Recordings that are tables: dyn's own CSV and Parquet files, and PlotJuggler's CSV exports.

dyn's files (SPEC §5) name their columns ``time``, ``q.<name>``, …; a column map
(``--columns``) says where else they are: ``q=pos_{joint}``, ``q.elbow=elbow``,
``effort=tau_meas_{joint}``, ``time=stamp``. The mapped columns are renamed to
dyn's names (`canonical`), so that everything after the reader sees one naming.

A PlotJuggler export ("Publish > CSV Exporter", or the data-range export) has the
header ``__time,<series>,…`` with the series sorted by name; a ROS
``sensor_msgs/JointState`` topic ``/js`` gives the series ``/js/<joint>/position``,
``/js/<joint>/velocity``, ``/js/<joint>/effort`` (those its messages fill) and
``/js/header/stamp`` (seconds); ``__time`` is written with 6 decimals, the values
with 9, and a cell is empty when its series has no sample at that row's time
(another topic's sample). Joints are found by their names in the series names; the
rows of other topics (every position of the robot's joints empty) are left out, and
a row with some of them empty is a message without that joint: an error.
"""
from __future__ import annotations

import re

import numpy as np

from ..columns import TIME, coordinate_columns
from ..column_map import mapped, source_columns
from ...errors import InputError, TrajectoryError, closest
from ..trajectory import read_opened, require_columns
from ..trajectory.table import listing
from . import clock

PLOTJUGGLER_TIME = "__time"
_SERIES = re.compile(r"^(?P<topic>.*)/(?P<joint>[^/]+)/(?P<field>position|velocity|effort)$")
_FIELDS = {"q": "position", "qd": "velocity", "effort": "effort"}
_PRECISE = 1e6  # clock readings below this are exact enough as doubles (ulp 1e-10)


# ------------------------------------------------------------------ time

def csv_decimal_column(display, buf, path, name):
    """The CSV column `name` read as exact decimals (Arrow decimal128 with 9 decimals), or
    None when it does not read so (more decimals, an exponent too large, text, empty cells)."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    opts = pa_csv.ConvertOptions(include_columns=[name], column_types={name: pa.decimal128(37, 9)})
    try:
        with (pa.BufferReader(buf) if buf is not None else pa.OSFile(str(path))) as source:
            table = pa_csv.read_csv(source, convert_options=opts)
    except (pa.ArrowException, OSError):
        return None
    col = table.column(0)
    return None if col.null_count else col


def parquet_integer_column(path, name):
    """The Parquet column `name` as int64 when it holds integers (else None)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        col = pq.ParquetFile(path).read(columns=[name]).column(0)
    except (pa.ArrowException, OSError, KeyError):
        return None
    if not pa.types.is_integer(col.type) or col.null_count:
        return None
    return col.to_numpy().astype(np.int64)


def clock_readings(values, name, source, rows=None):
    """(first, offsets) of the clock readings `values` (float64, the time column `name` of a
    table), exactly when the file allows it: `source` is (display, buf, fmt, path) of the
    file, `rows` the file's rows that `values` come from (None: all of them, in order)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size and np.abs(values).max() >= _PRECISE and source is not None:
        display, buf, fmt, path = source
        exact = None
        if fmt == "csv":
            col = csv_decimal_column(display, buf, path, name)
            if col is not None:
                exact = col if rows is None else col.take(rows)
                if len(exact) == len(values):
                    return clock.decimal_offsets(exact)
        elif buf is None and path is not None:
            ints = parquet_integer_column(path, name)
            if ints is not None:
                exact = ints if rows is None else ints[rows]
                if len(exact) == len(values):
                    return clock.exact_offsets(exact)
    return clock.float_offsets(values)


# ------------------------------------------------------------------ dyn's names

def canonical(traj, model, columns, parts=("q", "qd", "qdd", "effort")):
    """`traj` with the columns that `columns` maps renamed to dyn's (``q.<name>``, …): the
    parts it maps must be all there (TrajectoryError naming the missing ones); a
    column of the file that already has one of those names is replaced."""
    rename, used = {}, {}
    for part in parts:
        if not mapped(columns, part):
            continue
        src = source_columns(model, part, columns)
        require_columns(traj, src)
        for s, c in zip(src, coordinate_columns(part, _names(model, part))):
            if s in used and used[s] != c:
                raise InputError(f"column map: column {s!r} is given for both {used[s]!r} and {c!r}",
                                 key="--columns")
            used[s] = c
            if s != c:
                rename[s] = c
    if not rename:
        return traj
    targets = set(rename.values())
    drop = [n for n in list(traj.names) + list(traj.unusable) if n in targets and n not in rename]
    return traj.renamed(rename, drop)


def _names(model, part):
    return model.q_names if part == "q" else model.v_names


def read_table(display, buf, fmt, path, model, columns):
    """(traj, time column name) of a dyn CSV or Parquet file, its mapped columns renamed."""
    traj = read_opened(display, buf, fmt, path)
    name = columns.get(TIME, TIME)
    if not traj.has(name):
        hint = "" if TIME in columns else "; give it with --columns time=COLUMN"
        near = closest(name, traj.file_names)
        raise TrajectoryError(f"no time column {name!r}{hint} ({near}); found {len(traj.file_names)}: "
                              f"{listing(traj.file_names)}", file=display)
    return canonical(traj, model, columns), name


# ------------------------------------------------------------------ PlotJuggler

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
    require_columns(traj, qcols)
    parts = ["q"]
    for part in ("qd", "effort"):
        cols = source_columns(model, part, full)
        if mapped(columns, part):
            require_columns(traj, cols)
            parts.append(part)
        elif all(traj.has(c) for c in cols):
            parts.append(part)
    for part in ("qdd",):
        if mapped(columns, part):
            parts.append(part)
    renamed = canonical(traj, model, {k: v for k, v in full.items() if k.partition(".")[0] in parts or k == TIME},
                        parts)
    time_name = _plotjuggler_time(traj, chosen, columns, notes)
    keep = set(coordinate_columns("q", model.q_names)) | {time_name}
    for part in parts[1:]:
        keep |= set(coordinate_columns(part, _names(model, part)))
    drop = [n for n in list(renamed.names) + list(renamed.unusable) if n not in keep]
    renamed = renamed.renamed({}, drop)
    rows = _joint_rows(renamed, model, qcols, chosen, display)
    return renamed.take(rows), time_name, rows


def _check_names_agree(model, full, joints_in_file, topic, display):
    """A mapped series of another joint of this topic contradicts the names: an error."""
    for part, field in _FIELDS.items():
        for k, (name, col) in enumerate(zip(_names(model, part), source_columns(model, part, full))):
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
    Q = traj.data[:, [traj.names.index(c) for c in coordinate_columns("q", model.q_names)]]
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
