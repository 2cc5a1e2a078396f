"""``rostopic echo -p /joint_states`` files (ROS 1's "plot" CSV).

rostopic writes a header from the first message, then one line per message:

    %time,field.header.seq,field.header.stamp,field.header.frame_id,field.name0,…,field.nameK,
    field.position0,…,field.velocity0,…,field.effort0,…

``%time`` is in nanoseconds since the epoch (the bag's log time with ``-b``, else the
header stamp), ``field.header.stamp`` too; ``field.nameI`` holds the name of the
joint whose values are in ``field.positionI`` (and ``velocityI``, ``effortI``) on
that line; an empty array has no columns, and the values are Python's ``str`` of
the doubles. A message with a different number of joints makes a line of a
different length (rostopic does not rewrite its header).

Joints are matched by the ``field.nameI`` cells row by row: a driver may publish
its own order (the UR driver: alphabetical), and a message may list them in any
order. A line without one of the robot's joints is an error naming the joint and
the line. A column map (``--columns 'q=field.position{index}'``) that disagrees
with the names on any line is an error, not a silent permutation. Time is
``field.header.stamp`` (``%time`` when every stamp is zero, said so, or with ``--clock log``).
"""
from __future__ import annotations

import csv as _csv
import io
import re

import numpy as np

from ..columns import EFFORT, TIME, coordinate_columns
from ..column_map import mapped, source_columns
from ...errors import InputError, TrajectoryError, closest
from ..trajectory import Trajectory
from ..trajectory.csv import RowLines, quoted_cell
from ..trajectory.in_memory import arrow_input, listing
from . import clock

from .kinds import ROSTOPIC_FIRST as FIRST
STAMP = "field.header.stamp"
_ARRAYS = (("q", "position"), ("qd", "velocity"), (EFFORT, "effort"))
_CELL = re.compile(r"^field\.(position|velocity|effort)(\d+)$")


def read_rostopic(display, buf, path, names, model, columns, notes, clock_name="header"):
    """(trajectory, time column, first, offsets in the file's unit) of a rostopic echo -p file;
    `clock_name` ``log``: time from ``%time`` (the bag's log time with ``-b``).

    The trajectory has ``time`` (to be filled), ``q.<joint>`` and, when the file has
    those arrays, ``qd.<joint>`` and ``effort.<joint>``: the robot's joints by name."""
    joints, n_names, arrays, time_name = _layout(display, names, model, columns)
    if clock_name == "log":
        if TIME in columns:
            raise InputError(f"--clock log and --columns time={columns[TIME]} both choose the time column; "
                             "give one", key="--clock")
        time_name = FIRST
    table, lines = _read_columns(display, buf, path, names, joints, n_names, arrays, time_name)

    def locate(r):
        from ..trajectory.in_memory import locate_row
        return locate_row(lines, r)

    owner = _owners(table, joints, n_names, display, locate)
    _check_column_map(model, columns, owner, table, arrays, display, locate)
    parts, data = _joint_values(table, owner, arrays, len(joints))
    if clock_name == "log":
        notes.append(f"time from {FIRST} (when rostopic received or the bag logged each message; --clock log), "
                     f"not {STAMP}")
    time_name, first, offsets = _clock(table, time_name, columns, notes)
    out_names = [TIME] + [c for p in parts for c in coordinate_columns(p, joints)]
    traj = Trajectory(out_names, data.T, display, lines=lines)
    return traj, time_name, first, offsets


def _layout(display, names, model, columns):
    """(joints, the number of field.nameI columns, {part: its field.<array>I columns}, time column) of
    the header `names`; TrajectoryError when it is not a JointState as rostopic writes it, or does not
    hold what the robot and the column map need."""
    joints = list(model.q_names)
    multi = [j for j in model.joint_names if j not in model.q_names]
    if multi:
        raise TrajectoryError(f"robot '{model.name}' has joints with several coordinates ({', '.join(multi)}): a "
                              "sensor_msgs/JointState carries one position per joint", file=display)
    names = set(names)  # looked up once per column below: a list made the header quadratic (10^5 joints: hours)
    n_names = 0
    while f"field.name{n_names}" in names:
        n_names += 1
    arrays = {}
    for part, field in _ARRAYS:
        cols = [f"field.{field}{i}" for i in range(n_names)]
        if all(c in names for c in cols) and cols:
            arrays[part] = cols
        elif any(f"field.{field}{i}" in names for i in range(max(n_names, 1))) and n_names:
            raise TrajectoryError(f"the header has {n_names} field.nameI columns but not as many field.{field}I: "
                                  "not a sensor_msgs/JointState as rostopic echo -p writes it", file=display, line=1)
    time_name = columns.get(TIME, STAMP if STAMP in names else FIRST)
    if time_name not in names:
        raise TrajectoryError(f"no time column {time_name!r} ({closest(time_name, names)})", file=display)
    if n_names == 0:
        raise TrajectoryError("a rostopic echo -p file without field.nameI columns (written with --nostr?): its "
                              "joints cannot be matched by name; echo the topic without --nostr", file=display)
    if "q" not in arrays:
        raise TrajectoryError("has joint names but no field.positionI columns (the messages' positions are empty)",
                              file=display, line=1)
    for part in ("q", "qd", EFFORT, "qdd"):
        if mapped(columns, part) and part not in arrays:
            src = source_columns(model, part, columns)
            raise TrajectoryError(f"no column {src[0]!r} for the column map's {part}: a rostopic echo -p file has "
                                  f"{', '.join('field.' + f + 'I' for p, f in _ARRAYS if p in arrays)}",
                                  file=display, key="--columns")
    return joints, n_names, arrays, time_name


def _read_columns(display, buf, path, names, joints, n_names, arrays, time_name):
    """(Arrow table, RowLines): the name columns as dictionaries, the clocks as exact decimals, the
    arrays' columns as floats; the first line Arrow refuses, diagnosed (`_diagnose`)."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    stamps = {FIRST, STAMP, time_name}
    types = {n: pa.dictionary(pa.int32(), pa.string()) for n in names if n.startswith("field.name")}
    types.update({n: pa.decimal128(37, 9) for n in stamps if n in names})
    wanted = [n for n in names if n in types] + [c for cols in arrays.values() for c in cols]
    types.update({c: pa.float64() for cols in arrays.values() for c in cols})
    convert = pa_csv.ConvertOptions(column_types=types, include_columns=wanted, strings_can_be_null=False,
                                    quoted_strings_can_be_null=False)
    # a block holds whole lines: the header's (and a line's) length, rostopic's are long with many joints
    header_bytes = sum(len(n.encode()) + 1 for n in names)
    read = pa_csv.ReadOptions(block_size=max(1 << 20, 8 * header_bytes))
    try:
        with (pa.BufferReader(buf) if buf is not None else arrow_input(path)) as source:
            table = pa_csv.read_csv(source, read_options=read, convert_options=convert)
    except pa.ArrowInvalid:
        raise _diagnose(buf, path, display, names, joints, n_names, len(arrays)) from None
    except OSError as exc:
        raise TrajectoryError(f"cannot read: {exc}", file=display) from None
    n = table.num_rows
    if n == 0:
        raise TrajectoryError("no data rows; expected one line per message", file=display)
    return table, RowLines(buf if buf is not None else str(path), n)


def _joint_values(table, owner, arrays, nj):
    """(parts, data (1 + parts·nj, N)): each part's values in the robot's joint order (`owner`: the
    field index of each line's joints), one row per output column after a first row left for time."""
    n = table.num_rows
    parts = [p for p, _ in _ARRAYS if p in arrays]
    data = np.empty((len(parts) * nj + 1, n))  # one row per column: column-major once transposed
    rows = np.arange(n)
    same = bool((owner == owner[0]).all())
    for k, part in enumerate(parts):
        values = np.column_stack([_floats(table.column(c)) for c in arrays[part]])
        block = values[:, owner[0]] if same else values[rows[:, None], owner]
        data[1 + k * nj:1 + (k + 1) * nj] = block.T
        del values, block
    return parts, data


def _clock(table, time_name, columns, notes):
    """(time column, first, offsets): the header stamps, or %time when every stamp is zero (said in `notes`)."""
    first, offsets = _readings(table.column(time_name))
    if time_name == STAMP and TIME not in columns and first == 0 and not offsets.any() and FIRST in table.column_names:
        notes.append(f"every {STAMP} is zero (the driver does not stamp): time from {FIRST} (when rostopic "
                     "received or the bag logged each message)")
        time_name = FIRST
        first, offsets = _readings(table.column(FIRST))
    return time_name, first, offsets


def _floats(column):
    """A float64 Arrow column as numpy (NaN for empty cells)."""
    import pyarrow.compute as pc

    if column.null_count:
        column = pc.fill_null(column, float("nan"))
    return column.to_numpy()


def _readings(col):
    """(first, offsets) of a decimal clock column (exact)."""
    return clock.decimal_offsets(col.combine_chunks() if col.num_chunks != 1 else col.chunk(0))


def _owners(table, joints, n_names, display, locate):
    """(N, nj) int: for each line and robot joint, the I of the field.nameI that names it."""
    n = table.num_rows
    owner = np.full((n, len(joints)), -1, dtype=np.int64)
    index = {j: k for k, j in enumerate(joints)}
    for i in range(n_names):
        col = table.column(f"field.name{i}").combine_chunks()
        lut = np.array([index.get(name, -1) for name in col.dictionary.to_pylist()] + [-1], dtype=np.int64)
        codes = col.indices.to_numpy(zero_copy_only=False)
        who = lut[codes]
        hit = who >= 0
        rows = np.flatnonzero(hit)
        clash = owner[rows, who[rows]] >= 0
        if clash.any():
            r = int(rows[np.flatnonzero(clash)[0]])
            raise TrajectoryError(f"this message names joint {joints[who[r]]!r} twice "
                                  f"(field.name{owner[r, who[r]]} and field.name{i})", file=display, **locate(r))
        owner[rows, who[rows]] = i
    lacking = (owner < 0).any(axis=1)
    if lacking.any():
        r = int(np.flatnonzero(lacking)[0])
        j = joints[int(np.flatnonzero(owner[r] < 0)[0])]
        named = [table.column(f"field.name{i}")[r].as_py() for i in range(n_names)]
        raise TrajectoryError(f"this message names no joint {j!r}; it names {listing(named, 8)}; dyn does not "
                              f"guess a missing joint ({closest(j, named)})", file=display, **locate(r))
    return owner


def _check_column_map(model, columns, owner, table, arrays, display, locate):
    """A column map that gives a joint's value from a column another joint's name heads is an error."""
    joints = list(model.q_names)
    for part, field in _ARRAYS:
        if not mapped(columns, part) or part not in arrays:
            continue
        for k, src in enumerate(source_columns(model, part, columns)):
            m = _CELL.match(src)
            if not m or src not in table.column_names:
                raise TrajectoryError(f"no column {src!r} for {part}.{joints[k]} (a rostopic echo -p file has "
                                      f"field.{field}0 … field.{field}{len(arrays[part]) - 1}); leave --columns out: "
                                      "joints are matched by the field.nameI cells", file=display, key="--columns")
            i = int(m[2])
            wrong = np.flatnonzero(owner[:, k] != i)
            if wrong.size:
                r = int(wrong[0])
                other = table.column(f"field.name{i}")[r].as_py()
                raise InputError(f"{part}.{joints[k]} from {src!r}, but field.name{i} names that "
                                 f"column's joint {other!r} on line {locate(r).get('line', r + 2)} (the file's "
                                 f"joint order is not the robot's); leave --columns out: joints are matched by "
                                 "the field.nameI cells", file=display, key="--columns")


def _diagnose(buf, path, display, names, joints, n_names, n_arrays) -> TrajectoryError:
    """The first line that Arrow refused: another message layout (a different number of joints),
    or a cell that is not a number. The file (or `buf`) is streamed: a bad last line of a large file
    cost 2 to 2.4 times the memory of a good one (the file read whole, decoded, copied into a StringIO)."""
    try:
        raw = io.BytesIO(buf) if buf is not None else open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:
        return TrajectoryError(f"cannot read: {exc.strerror}", file=display)
    with io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="") as text:
        return _first_bad_line(_csv.reader(text), display, names, joints, n_names, n_arrays)


def _first_bad_line(reader, display, names, joints, n_names, n_arrays) -> TrajectoryError:
    header = None
    first = 4 if "field.header.frame_id" in names else 3
    for fields in reader:
        if not fields:
            continue
        if header is None:
            header = fields
            continue
        line = reader.line_num
        if len(fields) != len(header):
            k, rest = divmod(len(fields) - first, 1 + n_arrays)
            if not rest and k >= 0:
                named = fields[first:first + k]
                missing = [j for j in joints if j not in named]
                if missing:
                    return TrajectoryError(f"this message names {k} joints ({listing(named, 8)}), the first one "
                                           f"{n_names}: it has no joint {missing[0]!r}; dyn does not guess a missing "
                                           "joint", file=display, line=line)
            return TrajectoryError(f"{len(fields)} values, but the header has {len(header)} columns (a message "
                                   "with another number of joints: rostopic echo -p keeps the first message's "
                                   "columns)", file=display, line=line)
        for name, value in zip(header, fields):
            if name.startswith("field.name") or name == "field.header.frame_id":
                continue
            if name in (FIRST, STAMP) or _CELL.match(name):
                try:
                    float(value)
                except ValueError:
                    return TrajectoryError(f"{quoted_cell(value)} is not a number", file=display, line=line,
                                           column=name)
    return TrajectoryError("cannot be read as a rostopic echo -p file", file=display)
