"""The one reader of recorded motions: what `dyn inverse`, `dyn contact-id`, `dyn view` (and
identification) read.

    rec = dynlib.files.recordings.read_recording(model, "run.bag")              # or .mcap, .db3, a ROS 2 folder,
    tau = dynlib.inverse_dynamics_trajectory(model, rec.trajectory)       # rostopic/PlotJuggler CSV, dyn's files

Formats, recognised by content (and extension):

=================== ==================================================== =========================
format              recognised by                                        module
=================== ==================================================== =========================
ROS 1 bag           ``#ROSBAG V2.0`` (``.bag``)                          `dynlib.files.recordings.bags`
ROS 2 bag           a folder with ``metadata.yaml``, a ``.db3`` (SQLite)  `dynlib.files.recordings.bags`
                    or ``.mcap`` file
rostopic echo -p    a CSV whose header starts ``%time``                  `dynlib.files.recordings.rostopic`
PlotJuggler export  a CSV whose header starts ``__time``                 `dynlib.files.recordings.plotjuggler`
dyn CSV / Parquet   anything else (``.csv``, ``.parquet``, ``-``)         `dynlib.files.recordings.dyn_files`
=================== ==================================================== =========================

What comes back (`Recording`) is a `dynlib.files.trajectory.Trajectory` in dyn's names:
``time`` in seconds from the first sample, ``q.<name>``, and where the recording has
them ``qd.<name>`` (measured velocities), ``qdd.<name>`` and ``effort.<name>``
(measured joint torques: ROS ``JointState.effort``), plus, for dyn's own files, the
other columns as they are. The first sample's time on the recording's clock (epoch
seconds for ROS) is `Recording.start`, exactly; `Recording.notes` are the choices
the reader made that a user should hear of (which time, which unit).

Joints: a recording that names its joints (bags, rostopic, PlotJuggler) is read by
those names, in whatever order each message lists them; a message without one of
the robot's joints is an error naming the joint and the message (or line). dyn's
files name their columns, or a column map (``--columns``) says which column is
which: ``q=pos_{joint}``, ``q=position{index}`` (the joint's position in the file's
joint order, ``joint_order``, which a file without names must be given: the mapping
made is said in the notes), ``q.elbow=elbow``, ``effort=…``, ``time=stamp``. On a file
that names its joints, a column map that contradicts the names is an error.

Time: `dynlib.files.recordings.clock`: the unit from the format (ns for ROS), from
``time_unit``, or for a plain time column from its magnitude (epoch ns, µs, ms are
never read as seconds); `resample` (Hz) interpolates the motion onto a uniform grid
(on the configuration manifold), which Savitzky–Golay needs and a recording's
jittery stamps do not give.
"""
from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

import numpy as np

from ..columns import TIME, coordinate_columns
from ...errors import InputError, TrajectoryError
from ..output import memory_shortfall
from .kinds import is_rostopic

__all__ = ["FORMATS", "Recording", "read_ahead", "read_recording", "resample", "run_settings"]

SLOWEST_STEP = 0.5  # s: a time column other than dyn's `time` (seconds by definition) with a larger median
# step between samples is in another unit (ms counted from zero, say), or --time-unit s says it is not
CLOCKS = ("header", "log")  # a ROS recording's time: its header stamps, or when each message was logged
FORMATS = ("ros1-bag", "ros2-bag", "rostopic-csv", "plotjuggler-csv", "csv", "parquet")


def read_ahead(source) -> bool:
    """Start parsing the recording `source` in a background thread when `read_recording`
    would read it as a table (dyn's CSV or Parquet, a PlotJuggler CSV; see
    `dynlib.files.trajectory.read_ahead`), so that the parsing overlaps a command's start-up.
    A rostopic CSV is not: its reader parses it with its own column types. Returns
    whether a read was started."""
    from ..trajectory import read_ahead as start

    return start(source, wanted=lambda names: not is_rostopic(names))


class Recording(NamedTuple):
    """A recorded motion: `trajectory` (``time`` in s from the first sample, dyn's column
    names), `start` (the first sample's time on the recording's clock, seconds, exact;
    None when the source had no clock, e.g. a Trajectory given as is), `format` (one of
    `FORMATS`), `topic` (the JointState topic read, or None), `notes` (what a user should
    be told: one line each), `unit` (the unit the time column was read in), `settings` (the
    settings of the dyn run that wrote the file, `dynlib.files.columns.run_settings`; {} when
    the file has none)."""

    trajectory: object
    start: Decimal | None
    format: str
    topic: str | None
    notes: tuple
    unit: str
    settings: dict = {}


def read_recording(model, source, *, topic=None, columns=None, time_unit=None, resample=None,
                   clock=None, joint_order=None) -> Recording:
    """The recorded motion in `source` (a path, ``'-'`` for standard input, or a
    `dynlib.files.trajectory.Trajectory`) for robot `model`.

    topic: the ``sensor_msgs/JointState`` topic of a bag or PlotJuggler export (needed
    only when there are several). columns: a column map ({'q': 'pos_{joint}', 'time':
    'stamp', …}, see `dynlib.files.column_map.parse_column_map`). time_unit: 's', 'ms',
    'us' or 'ns' for the time column (default: the format's; a plain column's is
    recognised from its magnitude). resample: a rate in Hz to interpolate onto. clock:
    ``header`` (the default: ``header.stamp``) or ``log`` (the bag's log time; rostopic's
    ``%time``), for the recordings that have both. joint_order: the joints of a file without
    joint names in the file's order (names, or 'a,b,c'), which ``{index}`` in `columns` counts
    in: needed by ``{index}`` there (the mapping made is said in the notes), refused by a
    recording that names its joints.

    A ROS recording's stamps must keep the driver's rhythm (`clock.rhythm_break`): a sample
    stamped at another time than its neighbours allow is a TrajectoryError naming it, unless
    `resample` is given (the stamps are then taken as they are) or the time is the log time.
    A robot's mimic joints (`dynlib.files.mimic.couple_recording`) are read from their leaders' columns:
    a follower's column is added when missing, replaced when present (one warning in the notes when it
    disagrees with the coupling by more than 1 % of its range).
    Raises `TrajectoryError` (file, line or message, column) or `InputError`.
    """
    rec = _read_recording(model, source, topic, columns, time_unit, resample, clock, joint_order)
    if not model.mimic:
        return rec
    from ..mimic import couple_recording

    traj, notes = couple_recording(model, rec.trajectory)
    return rec._replace(trajectory=traj, notes=rec.notes + notes)


def _read_recording(model, source, topic, columns, time_unit, resample, clock, joint_order) -> Recording:
    from ..trajectory import Trajectory, open_source

    columns = dict(columns or {})
    notes = []
    clock_name = "header" if clock is None else clock
    if clock_name not in CLOCKS:
        raise InputError(f"unknown clock {clock!r}; expected one of {', '.join(CLOCKS)}", key="--clock")
    if isinstance(source, Trajectory):
        return _read_given(model, source, columns, time_unit, resample, clock, joint_order, notes)
    from . import bags

    path = None if source is None else str(source)
    if path is not None and path != "-" and bags.bag_kind(path) is not None:
        _named_joints(joint_order, "a bag")
        return _read_bag(model, path, topic, columns, time_unit, resample, clock_name, notes)
    display, buf, fmt = open_source(path)
    if buf is not None and bags.is_bag_magic(buf[:16]):
        raise TrajectoryError("a ROS bag cannot be read from standard input or a pipe; give its path", file=display)
    source_info = (display, buf, fmt, path)
    if fmt == "csv":
        from ..trajectory.csv import header
        from . import dyn_files, plotjuggler, rostopic

        names = header(display, buf, path)
        if is_rostopic(names):
            _named_joints(joint_order, "a rostopic echo -p file")
            _no_topic(topic, notes, "a rostopic echo -p file holds one topic")
            traj, name, first, offsets = rostopic.read_rostopic(display, buf, path, names, model, columns, notes,
                                                                clock_name)
            rec = _finish(traj, first, offsets, "ns", time_unit, notes, "rostopic-csv", None, display, column=name)
            if name == rostopic.STAMP and resample is None:
                _check_rhythm(rec, model, first, offsets, lambda k: "this message", traj.locate)
            return _resampled(rec, model, resample)
        if plotjuggler.is_plotjuggler(names):
            _one_clock(clock, "a PlotJuggler export")
            _named_joints(joint_order, "a PlotJuggler export")
            traj, name, rows = plotjuggler.read_plotjuggler(display, buf, path, model, columns, topic, notes)
            first, offsets = dyn_files.clock_readings(traj.column(name), name, source_info, rows)
            rec = _finish(traj, first, offsets, "s", time_unit, notes, "plotjuggler-csv",
                          _pj_topic(names, model, topic), display, column=name, source_name=name)
            if TIME not in columns and resample is None:
                _check_rhythm(rec, model, first, offsets, lambda k: "this sample", traj.locate)
            return _resampled(rec, model, resample)
    from . import dyn_files

    _one_clock(clock, "a CSV or Parquet file of dyn's")
    _no_topic(topic, notes, "a CSV or Parquet file of dyn's holds one motion")
    order = dyn_files.index_order(model, columns, joint_order, notes)
    traj, name = dyn_files.read_table(display, buf, fmt, path, model, columns, order)
    backwards = _not_increasing(traj, name, display)
    first, offsets = dyn_files.clock_readings(traj.column(name), name, source_info)
    rec = _finish(traj, first, offsets, "s", time_unit, notes, fmt, None, display, column=name, source_name=name)
    if backwards is not None:  # raised where the time is used, after the command's own checks of the columns
        rec = rec._replace(trajectory=rec.trajectory.with_unusable(TIME, backwards))
    return _resampled(rec._replace(settings=dyn_files.run_settings_of(*source_info)), model, resample)


def _not_increasing(traj, name, display):
    """None, or the error (a callable making it) of the first row whose time does not increase, quoting
    the times as the file has them (once made relative to the first sample, 999.999 after 1000.0 was
    quoted as 9.999000000000024 after 10.0: not in the file)."""
    values = traj.column(name)
    bad = np.flatnonzero(np.diff(values) <= 0)
    if not bad.size:
        return None
    i = int(bad[0]) + 1
    error = TrajectoryError(f"time {float(values[i])!r} does not increase (previous row {float(values[i - 1])!r}); "
                            "rows must be in increasing time", file=display, column=name, **traj.locate(i))
    return lambda: error


def _read_given(model, source, columns, time_unit, resample, clock, joint_order, notes):
    """The Recording of a Trajectory given as it is (time in seconds)."""
    _one_clock(clock, "a Trajectory")
    traj = _own(source)
    name = columns.get(TIME, TIME)
    from .dyn_files import canonical, clock_readings, index_order

    if not traj.has(name):
        raise TrajectoryError(f"no time column {name!r}", file=traj.path)
    traj = canonical(traj, model, columns, order=index_order(model, columns, joint_order, notes))
    first, offsets = clock_readings(traj.column(name), name, None)
    rec = _finish(traj, first, offsets, "s", time_unit, notes, "csv", None, traj.path, column=name,
                  source_name=name)
    return _resampled(rec, model, resample)


def _read_bag(model, path, topic, columns, time_unit, resample, clock_name, notes):
    from . import bags

    kind = bags.bag_kind(path)
    if topic is not None and not isinstance(topic, str):
        raise InputError(f"topic must be a string, got {topic!r}")
    traj, first, offsets, chosen, stamped = bags.read_bag(path, model, topic=topic, columns=columns,
                                                          notes=notes, clock_name=clock_name)
    rec = _finish(traj, first, offsets, "ns", time_unit, notes, "ros1-bag" if kind == ".bag" else "ros2-bag",
                  chosen, path, column="header.stamp" if stamped else "log time")
    if stamped and resample is None:
        _check_rhythm(rec, model, first, offsets, lambda k: f"message {k + 1} of {chosen}", None,
                      logged_at_stamps=stamped == "header=log")
    return _resampled(rec, model, resample)


def _pj_topic(names, model, topic):
    from .plotjuggler import plotjuggler_topics

    if topic is not None:
        return topic
    mine = [t for t, js in plotjuggler_topics(names).items() if js & set(model.q_names)]
    return mine[0] if len(mine) == 1 else None


def run_settings(source) -> dict:
    """The settings of the dyn run that wrote the Parquet file `source` (a path; {} for anything
    else: a CSV, a bag, standard input, a FIFO or process substitution, which can be read only once),
    read from its footer alone: what a command needs before it loads the robot
    (`dynlib.files.columns.run_settings`)."""
    import os

    from ..trajectory import FORMATS, open_source
    from .dyn_files import run_settings_of

    if source is None or str(source) == "-" or not isinstance(source, (str, bytes)) and not hasattr(source, "__fspath__"):
        return {}
    path = str(source)
    from . import bags

    if not os.path.isfile(path) or bags.bag_kind(path) is not None or \
            FORMATS.get(path.lower()[path.rfind("."):]) == "csv":
        return {}
    try:
        display, buf, fmt = open_source(path)
    except TrajectoryError:
        return {}  # (reported when the file is read)
    return run_settings_of(display, buf, fmt, path) if buf is None else {}


def _named_joints(joint_order, what):
    if joint_order is not None:
        raise InputError(f"--joint-order: {what} names its joints (in every message) and is read by those names; "
                         "leave --joint-order out", key="--joint-order")


def _one_clock(clock, what):
    if clock not in (None, "header"):
        raise InputError(f"--clock {clock}: {what} has one time column (a bag has its header stamps and its log "
                         "time, a rostopic echo -p file its field.header.stamp and %time); leave --clock out",
                         key="--clock")


def _check_rhythm(rec, model, first, offsets, where, locate, logged_at_stamps=False):
    """TrajectoryError at the first sample whose stamp breaks the rhythm of the others
    (`clock.rhythm_break`): `where(k)` names sample k (a bag's message), `locate(k)` its line;
    `logged_at_stamps`: a bag whose log time is its header stamps (--clock log cannot help)."""
    from . import clock

    traj = rec.trajectory
    brk = clock.rhythm_break(traj.time, traj.columns(coordinate_columns("q", model.q_names)))
    if brk is None:
        return
    k = brk.k
    stamp = ((first + Decimal(float(offsets[k]))) * clock.UNITS[rec.unit]).quantize(Decimal("1e-9"))
    steps = []
    if brk.before is not None:
        b = brk.before
        steps.append(f"{clock.duration(b)} after the previous sample" if b > 0 else
                     f"{'at the same time as' if b == 0 else clock.duration(-b) + ' before'} the previous sample "
                     "(time does not increase)")
    if brk.after is not None:
        a = brk.after
        steps.append(f"{clock.duration(a)} before the next" if a > 0 else
                     f"{'at the same time as' if a == 0 else clock.duration(-a) + ' after'} the next "
                     "(time does not increase)")
    fixes = ("if the stamps are true (an irregular rate), --resample HZ reads them as they are"
             if rec.format == "plotjuggler-csv" else
             "this bag's log time is its header stamps (re-recorded, or recorded on sim time), so --clock log "
             "reads the same: drop or re-stamp that message; if the stamps are true (an irregular rate), "
             "--resample HZ reads them as they are" if logged_at_stamps else
             "if the bag logged its messages in order, --clock log takes its log time instead; if the stamps "
             "are true (an irregular rate), --resample HZ reads them as they are")
    raise TrajectoryError(f"{where(k)}, stamp {stamp:f} s, breaks the rhythm of the stamps: {' and '.join(steps)} "
                          f"(median step {clock.duration(brk.median)}); a sample read at a time that is not "
                          f"its own makes the torques spike: {fixes}", file=traj.path,
                          **(locate(k) if locate else {}))


def _no_topic(topic, notes, why):
    if topic is not None:
        notes.append(f"--topic {topic} is not used: {why}")


def _own(traj):
    """A copy of a caller's Trajectory whose time column this reader may overwrite."""
    from ..trajectory import Trajectory

    return Trajectory(traj.names, np.array(traj.data, order="F"), traj.path,
                      lines=traj._lines, unusable=traj._unusable)


def _finish(traj, first, offsets, default_unit, time_unit, notes, fmt, topic, display, *, column, source_name=None):
    """The Recording: the clock readings (`first`, `offsets`, of the column named `column` in
    messages) become ``time`` in seconds from the first sample; `source_name`: the table's
    column that held them, renamed ``time`` (None: `traj` has its ``time`` column already)."""
    from . import clock

    if len(traj) == 0:
        raise TrajectoryError("no samples", file=display)
    t, start, unit = clock.to_seconds(first, offsets, unit=time_unit, default=default_unit,
                                      column=column, file=display, notes=notes)
    if time_unit is None and unit == "s" and len(t) > 1 and source_name not in (None, TIME):
        step = float(np.median(np.diff(t)))
        if step > SLOWEST_STEP:
            raise TrajectoryError(
                f"the median step of the time column is {step:.6g}: read as seconds, this joint recording is "
                f"{len(t)} samples over {t[-1] - t[0]:.6g} s; say its unit with --time-unit (ms, us or ns when it "
                f"counts from zero in those; s when it is seconds)", file=display, column=column, key="--time-unit")
    if source_name is not None and source_name != TIME:
        drop = [TIME] if traj.has(TIME) else []
        traj = traj.renamed({source_name: TIME}, drop)
    if not traj.data.flags.writeable:
        traj = _own(traj)
    traj.data[:, traj.names.index(TIME)] = t
    return Recording(traj, start, fmt, topic, tuple(notes), unit)


def _resampled(rec, model, hz):
    return rec if hz is None else resample(model, rec, hz)


def resample(model, rec: Recording, hz) -> Recording:
    """`rec` at a uniform rate `hz` from its first sample up to its last: configurations
    interpolated on the manifold (``q_j ⊕ s·(q_{j+1} ⊖ q_j)``), every other column
    linearly. For a recording with jittery stamps, before Savitzky–Golay."""
    from ..trajectory import Trajectory
    from ...algorithms.configuration import interpolate

    if not (isinstance(hz, (int, float)) and np.isfinite(hz) and hz > 0):
        raise InputError(f"resampling rate must be a positive number of Hz, got {hz!r}", key="--resample")
    traj = rec.trajectory
    t = traj.time
    step = np.diff(t)
    if np.any(step <= 0):
        k = int(np.flatnonzero(step <= 0)[0]) + 1
        raise TrajectoryError(f"time {t[k]!r} does not increase (previous sample {t[k - 1]!r}): cannot resample",
                              file=traj.path, column=TIME, **traj.locate(k))
    count = np.floor((t[-1] - t[0]) * hz + 1e-9) + 1
    need = count * len(traj.names) * 8 * 2  # the resampled table, and as much again made from it
    over = memory_shortfall(need) or (None if count <= 2 ** 53 else f"{need / 1e9:.3g} GB")
    if over:
        raise InputError(f"{hz:g} Hz over {t[-1] - t[0]:.6g} s makes {count:.3g} samples, which need "
                         f"{over}; choose a lower rate", key="--resample")
    n = int(count)
    times = t[0] + np.arange(n) / hz
    qcols = coordinate_columns("q", model.q_names)
    from ..trajectory import require_columns

    require_columns(traj, qcols)
    Q = traj.finite_columns(qcols)
    names = [n_ for n_ in traj.names]
    data = np.empty((n, len(names)), order="F")
    where = {c: i for i, c in enumerate(names)}
    data[:, where[TIME]] = times
    data[:, [where[c] for c in qcols]] = interpolate(model, t, Q, times)
    for c in names:
        if c != TIME and c not in qcols:
            data[:, where[c]] = np.interp(times, t, traj.data[:, where[c]])
    steps = f"{step.min():.4g} to {step.max():.4g} s"
    notes = rec.notes + (f"resampled at {hz:g} Hz: {n} samples from {len(t)} (steps {steps}), configurations "
                         "interpolated on the manifold",)
    return rec._replace(trajectory=Trajectory(names, data, traj.path), notes=notes)
