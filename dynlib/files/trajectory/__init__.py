"""Trajectory files: reading, writing and checking (SPEC §5).

The one home of trajectory I/O for every command: `simulate` writes, `inverse`,
`contact-id` and `plot` read. A trajectory is a table with one row per sample
and one float64 column per quantity, in the order ``time``, ``q.<q_name>``,
``qd.<v_name>``, ``qdd.<v_name>``, ``tau.<tau_name>``, ``energy.*``,
``contact.<frame>.*``: the names are made in `dynlib.files.columns`.

Formats, chosen by the file extension: ``.csv`` (`dynlib.files.trajectory.csv`) and
``.parquet`` (`dynlib.files.trajectory.parquet`); ``-`` is standard input or output
(CSV). Both are read and written with pyarrow's columnar readers and writers,
never row by row; a small CSV (`csv_text`: up to 10 000 numbers) is written in Python, the same
bytes, so that a short run does not import pyarrow. CSV floats are written in the shortest form that reads back to
the same double (``repr``-exact), so a write/read round trip is the identity.
The table they read into, `Trajectory`, and the column checks are in
`dynlib.files.trajectory.in_memory`.

Outputs are atomic (`dynlib.files.output.atomic_output`): written to a hidden temporary
file next to the target and renamed onto it at the end, so a failing command
leaves no partial file and never clobbers an existing one.

`read_ahead(path)` starts reading a regular CSV or Parquet file in a background
thread, so that the parsing (Arrow's, without the GIL) overlaps a command's start-up
(numba's import, the kernels' load); the next `read_opened` of that file (unchanged:
same device, inode, size and modification time) takes its table, or its error, as
reading it then would have given.

Every problem with a file raises a one-line `TrajectoryError` that names the
file and, for CSV, the line as a user counts them (the header is line 1, the
first data row line 2) and the column; for Parquet, the 1-based data row.
Readers accept the columns in any order and ignore the ones they do not need;
every column must still hold numbers (a text column is reported, not skipped).
"""
from __future__ import annotations

import contextlib
import functools
import os
import stat
import sys
import threading
from pathlib import Path

from ..columns import TIME, column_names
from ...errors import InputError, TrajectoryError
from ..output import atomic_output, in_place, reason
from . import csv, csv_text, parquet
from .in_memory import (Trajectory, arrow_file, check_increasing_time, checked_table, require_columns,
                        to_arrow)

__all__ = [
    "Trajectory",
    "atomic_output",
    "check_increasing_time",
    "column_names",
    "open_source",
    "read_ahead",
    "read_opened",
    "read_trajectory",
    "require_columns",
    "write_trajectory",
]

FORMATS = {".csv": "csv", ".parquet": "parquet"}
STDIO = "-"
_STDIN_NAME = "<stdin>"
_PARQUET_MAGIC = b"PAR1"
_PARQUET_MAGIC_SIZE = len(_PARQUET_MAGIC)


# --------------------------------------------------------------------- writing

def write_trajectory(path, names, data, *, source=None, metadata=None, durable=False) -> None:
    """Write `data` (N, len(names)) with columns `names` to `path`, atomically.

    `path` ``None`` or ``'-'``: CSV on standard output (bytes, streamed, no
    temporary file). Otherwise the format is the extension's, ``.csv`` or
    ``.parquet``; a character device or FIFO without one of these extensions
    (``/dev/null``, ``/dev/stdout``) gets CSV, written in place
    (`dynlib.files.output.atomic_output`). `source` is optional provenance (e.g. the
    robot or scenario path), kept in the Parquet metadata as ``dyn.source``; CSV
    has no place for it. `metadata` ({key: text}) is kept in the Parquet metadata
    too (e.g. `dynlib.files.columns.TIME_START_KEY`). `durable`: fsync the file and its
    folder (sweeps). Raises `InputError` for an unsupported extension or
    mismatched shapes.
    """
    fmt = output_format(path)
    names, data = checked_table(names, data)
    if fmt == "csv" and csv_text.fits(names, data):  # the same bytes, without importing pyarrow
        table, write_csv = None, functools.partial(csv_text.write, names, data)
    else:
        table = to_arrow(names, data, source, metadata)
        write_csv = functools.partial(csv.write, table)
    if path is None or str(path) == STDIO:
        write_stdout(write_csv)
        return
    with atomic_output(path, durable=durable) as tmp:
        if fmt == "csv":
            with contextlib.ExitStack() as stack:
                sink = arrow_file(tmp, "w")  # a name that is not UTF-8: Python's file
                if not isinstance(sink, str):
                    stack.callback(sink.close)
                write_csv(sink)
        else:
            parquet.write(table, tmp)


def output_format(path) -> str:
    """'csv' or 'parquet', the format `write_trajectory` writes `path` in (InputError for another extension)."""
    if path is None or str(path) == STDIO:
        return "csv"
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None and in_place(path):
        return "csv"  # /dev/null, a FIFO, /dev/stdout: streamed as CSV
    if fmt is None:
        suffix = repr(Path(path).suffix) if Path(path).suffix else "(no extension)"
        raise InputError(f"{path}: unsupported output format {suffix}; "
                         f"use one of {', '.join(FORMATS)} (or '-' for CSV on standard output)")
    return fmt


def write_stdout(write) -> None:
    """Call `write(binary stream)` on standard output: anything printed before goes
    first; a closed or full standard output is an `InputError` (a reader that went
    away, `BrokenPipeError`, goes up as it is)."""
    stream = sys.stdout
    if stream is None or getattr(stream, "buffer", None) is None:
        raise InputError("standard output is closed; give an output file with -o")
    try:
        stream.flush()
        write(stream.buffer)
        stream.buffer.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        text = reason(exc)  # cli.main's standard output already names itself
        raise InputError(text if "standard output" in text else f"cannot write to standard output: {text}") from None


# --------------------------------------------------------------------- reading

def read_trajectory(path, *, required=None) -> Trajectory:
    """Read a trajectory from `path` (``.csv``, ``.parquet``, or ``'-'``: standard input).

    Columns of numbers are read as float64. Raises `TrajectoryError` naming the
    file, the line (CSV) or row (Parquet) and the column for: a missing or
    empty file, a header without rows, ragged rows, duplicate names, and a
    missing or unusable ``time`` column or `required` column.

    A column that holds text, or a number column with an empty, NaN or
    infinite cell, does not stop the reading (SPEC §5: readers ignore the
    columns they do not need, e.g. a ROS export's frame_id): it is listed in
    `Trajectory.unusable`, and using it (`column`, `columns`, `time`,
    `require_columns`) raises its error, at the first bad cell's line.
    """
    display, buf, fmt = open_source(path)
    traj = read_opened(display, buf, fmt, path)
    require_columns(traj, [TIME] + [n for n in (required or ()) if n != TIME])
    return traj


def read_opened(display, buf, fmt, path) -> Trajectory:
    """The table of a source opened by `open_source`, with no column required (a
    recording's reader, `dynlib.files.recordings`, picks its time column itself)."""
    if buf is None:
        ahead = _take_ahead(display, fmt, path)
        table = None if ahead is None else ahead.result()
        if table is not None:
            return table
    return _read(display, buf, fmt, path)


def _read(display, buf, fmt, path) -> Trajectory:
    if fmt == "parquet":
        return parquet.read(display, buf if buf is not None else str(path))
    return csv.read(display, buf, path)


class _Ahead:
    """One file being read by `read_ahead`'s thread: its identity, then its table or error."""

    def __init__(self, display, fmt, path, identity, wanted):
        self.key, self.identity, self.wanted = (display, fmt, str(path)), identity, wanted
        self._table = self._error = None
        self._thread = threading.Thread(target=self._run, name="dyn-read-ahead")

    def _run(self):
        display, fmt, path = self.key
        try:
            if fmt == "csv" and self.wanted is not None:
                try:
                    names = csv.header(display, None, path)
                except TrajectoryError:
                    names = None  # (the reader that reads it later reports it)
                if names is None or not self.wanted(names):
                    return
            self._table = _read(display, None, fmt, path)
        except BaseException as exc:  # noqa: BLE001 -- handed to the thread that takes the table
            self._error = exc

    def result(self):
        """The table, or None when the header was not `wanted` (then nothing was parsed); raises
        the error reading it gave."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._table


_ahead = {}  # (display, format, path) -> the _Ahead not taken yet (at most one)
_ahead_lock = threading.Lock()


def _identity(path):
    """(device, inode, size, modification time) of a regular file, or None."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def read_ahead(path, wanted=None) -> bool:
    """Start reading the trajectory file `path` (a regular file named ``.csv`` or
    ``.parquet``) in a background thread; the next `read_opened` of the same,
    unchanged file takes the table, or raises the error reading it gave, there and
    then (so errors keep their order). Anything else (standard input, a pipe, a bag,
    a missing file) is left to be read when it is asked for. `wanted`: a test of a
    CSV's column names (its header): a file it rejects is not parsed (one that
    another reader reads its own way). Returns whether a read was started. One read
    is kept at a time: a new one drops a table not taken. The thread is not a daemon:
    a run that ends before taking the table (an error in its options or robot,
    Ctrl-C) waits for the read to finish, as Arrow's parsing cannot be stopped midway.
    """
    if path is None or str(path) == STDIO:
        return False
    fmt = FORMATS.get(Path(path).suffix.lower())
    identity = _identity(path)
    if fmt is None or identity is None or (fmt == "parquet" and identity[2] == 0):
        return False
    ahead = _Ahead(str(path), fmt, path, identity, wanted)
    with _ahead_lock:
        _ahead.clear()  # one not taken (a command run in-process that failed before reading) is dropped
        _ahead[ahead.key] = ahead
    ahead._thread.start()
    return True


def _take_ahead(display, fmt, path):
    """The `_Ahead` of this file if one was started and the file is unchanged since, else None."""
    if not _ahead:
        return None
    with _ahead_lock:
        ahead = _ahead.pop((display, fmt, str(path)), None)
    if ahead is None:
        return None
    if _identity(path) != ahead.identity:  # replaced or modified since: read it again
        ahead._thread.join()
        return None
    return ahead


def open_source(path):
    """(display name, bytes or None, format). Regular files stay on disk (Arrow
    reads them itself, in parallel, without a copy in Python); pipes and
    standard input are read into memory once (they cannot be reread)."""
    if path is None or str(path) == STDIO:
        stream = sys.stdin
        if stream is None:  # fd 0 was closed when Python started
            raise TrajectoryError("standard input is closed; pipe a trajectory in or give a file name",
                                  file=_STDIN_NAME)
        if stream.isatty():
            raise TrajectoryError("standard input is a terminal; pipe a trajectory in "
                                  "or give a file name", file=_STDIN_NAME)
        buf = stream.buffer.read()
        return _STDIN_NAME, buf, ("parquet" if buf.startswith(_PARQUET_MAGIC) else "csv")
    display = str(path)
    p = Path(path)
    suffix = p.suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None and suffix:
        raise TrajectoryError(f"unsupported trajectory format {p.suffix!r}; "
                              f"expected one of {', '.join(FORMATS)}", file=display)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise TrajectoryError("no such file", file=display) from None
    except OSError as exc:
        raise TrajectoryError(f"cannot read: {exc.strerror}", file=display) from None
    if stat.S_ISDIR(mode):
        raise TrajectoryError("is a folder, expected a trajectory file", file=display)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero would fill the memory: never read whole
        raise TrajectoryError(f"is a {'character' if stat.S_ISCHR(mode) else 'block'} device, expected a "
                              "trajectory file, a pipe or standard input", file=display)
    if stat.S_ISREG(mode):
        if fmt == "parquet" and p.stat().st_size == 0:
            raise TrajectoryError("empty file", file=display)
        if fmt is None:  # no extension: sniff
            fmt = "parquet" if csv.read_file(p, display, _PARQUET_MAGIC_SIZE) == _PARQUET_MAGIC else "csv"
        return display, None, fmt
    buf = csv.read_file(p, display)
    if fmt is None:  # no extension (e.g. /dev/fd/63 from <(...)): sniff
        fmt = "parquet" if buf.startswith(_PARQUET_MAGIC) else "csv"
    return display, buf, fmt

