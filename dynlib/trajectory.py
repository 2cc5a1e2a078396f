"""Trajectory files: reading, writing and checking (SPEC §5).

The one home of trajectory I/O for every command: `simulate` writes, `inverse`,
`contact-id` and `plot` read. A trajectory is a table with one row per sample
and one float64 column per quantity, in the order ``time``, ``q.<q_name>``,
``qd.<v_name>``, ``qdd.<v_name>``, ``tau.<v_name>``, ``energy.*``,
``contact.<frame>.*`` (see `column_names`).

Formats, chosen by the file extension: ``.csv`` and ``.parquet``; ``-`` is
standard input or output (CSV). Both are read and written with pyarrow's
columnar readers and writers, never row by row. CSV floats are written in the
shortest form that reads back to the same double (``repr``-exact), so a
write/read round trip is the identity.

Outputs are atomic (`atomic_output`): written to a hidden temporary file next
to the target and renamed onto it at the end, so a failing command leaves no
partial file and never clobbers an existing one.

Every problem with a file raises a one-line `TrajectoryError` that names the
file and, for CSV, the line as a user counts them (the header is line 1, the
first data row line 2) and the column; for Parquet, the 1-based data row.
Readers accept the columns in any order and ignore the ones they do not need;
every column must still hold numbers (a text column is reported, not skipped).
"""
from __future__ import annotations

import collections
import contextlib
import csv
import functools
import io
import math
import os
import re
import secrets
import stat
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from dynlib.errors import InputError, TrajectoryError, closest
from dynlib.parallel import threads

__all__ = [
    "Trajectory",
    "atomic_output",
    "check_increasing_time",
    "column_names",
    "read_trajectory",
    "require_columns",
    "write_trajectory",
]

FORMATS = {".csv": "csv", ".parquet": "parquet"}
STDIO = "-"
PARTS = ("q", "qd", "qdd", "tau")
ENERGY_COLUMNS = ("energy.kinetic", "energy.potential", "energy.total")
_STDIN_NAME = "<stdin>"
_PARQUET_MAGIC = b"PAR1"
_PARQUET_MAGIC_SIZE = len(_PARQUET_MAGIC)
_HEAD_BYTES = 1 << 16  # read first for the header; the whole file only when the header is longer
_WRITE_BLOCK_ROWS = 1 << 15  # rows formatted per task when a CSV is written on several cores
_WRITE_THREADS = 4
_SHOW = 8  # names listed in a message before "… (N more)"


# --------------------------------------------------------------------- columns

def column_names(q_names, v_names, parts=("q", "qd", "qdd", "tau"), tau_names=None) -> list[str]:
    """The SPEC §5 column list, in order, for the requested `parts`.

    `parts` is any iterable among ``"q" "qd" "qdd" "tau" "energy"``; the order
    of the result is fixed (``time`` first) whatever the order of `parts`.
    `tau_names` (default: `v_names`) names the torque columns: `model.tau_names`
    gives a free-flyer's ``tau.root.fx … tz``.
    """
    parts = set(parts)
    unknown = parts - set(PARTS) - {"energy"}
    if unknown:
        raise InputError(f"unknown trajectory part(s) {sorted(unknown)}; "
                         f"expected some of {list(PARTS) + ['energy']}")
    names = ["time"]
    if "q" in parts:
        names += [f"q.{n}" for n in q_names]
    for part in ("qd", "qdd"):
        if part in parts:
            names += [f"{part}.{n}" for n in v_names]
    if "tau" in parts:
        names += [f"tau.{n}" for n in (v_names if tau_names is None else tau_names)]
    if "energy" in parts:
        names += list(ENERGY_COLUMNS)
    return names


def _listing(names, show: int = _SHOW) -> str:
    """``'a', 'b', … (N more)``: at most `show` names, then a count."""
    names = list(names)
    if not names:
        return "no columns"
    text = ", ".join(repr(n) for n in names[:show])
    if len(names) > show:
        text += f", … ({len(names) - show} more)"
    return text


# ------------------------------------------------------------------ Trajectory

class Trajectory:
    """A trajectory read from a file: column names and an (N, ncols) float64 array.

    `data` has one row per sample, columns in file order; `names[j]` names
    `data[:, j]`. It is contiguous; read from a file it is column-major (each
    column contiguous, as Arrow reads them: no transpose), so `column` is a
    contiguous view and `columns` copies only the columns asked for. `path` is
    the file it came from (``'<stdin>'`` for standard input).
    """

    __slots__ = ("names", "data", "path", "_index", "_lines", "_unusable")

    def __init__(self, names, data, path=None, *, lines=None, unusable=None):
        self.names = list(names)
        data = np.asarray(data, dtype=np.float64)
        self.data = data if data.flags.c_contiguous or data.flags.f_contiguous else np.asfortranarray(data)
        self.path = None if path is None else str(path)
        if self.data.ndim != 2 or self.data.shape[1] != len(self.names):
            raise InputError(f"trajectory data of shape {self.data.shape} does not match "
                             f"{len(self.names)} column names")
        self._index = {n: j for j, n in enumerate(self.names)}
        # CSV: the line of each row, as an int (row r is on line r + lines) or,
        # when blank lines intervene, an array; Parquet: None (rows, not lines).
        self._lines = lines
        # columns that cannot be used (text; an empty, NaN or infinite cell), by name:
        # a function giving the located TrajectoryError, raised only if the column is used
        self._unusable = dict(unusable or {})

    def __len__(self) -> int:
        return self.data.shape[0]

    def __contains__(self, name) -> bool:
        return name in self._index

    def __repr__(self) -> str:
        return f"Trajectory({self.path!r}, {len(self)} rows, columns {_listing(self.names, 4)})"

    def has(self, name: str) -> bool:
        """Whether the file has a column named `name` (usable or not)."""
        return name in self._index or name in self._unusable

    @property
    def unusable(self) -> dict:
        """{name: why} for the columns that cannot be used: text (they are not in
        `names` and `data`), or numbers with an empty, NaN or infinite cell (NaN in
        `data`). Reading does not fail for them (SPEC §5: readers ignore the
        columns they do not need); using one raises its error."""
        return {name: str(make()) for name, make in self._unusable.items()}

    def check_usable(self, names) -> None:
        """Raise the error of the first bad cell, in row order, among the `names`
        that cannot be used (none: nothing happens)."""
        errors = [self._unusable[n]() for n in dict.fromkeys(names) if n in self._unusable]
        if errors:
            raise min(errors, key=lambda e: e.line or e.row or math.inf)

    def column(self, name: str) -> np.ndarray:
        """The column `name` as a 1-D (N,) array (a view into `data`)."""
        self.check_usable((name,))
        try:
            return self.data[:, self._index[name]]
        except KeyError:
            raise TrajectoryError(f"no column {name!r}; {closest(name, self.names)}",
                                  file=self.path) from None

    def columns(self, names) -> np.ndarray:
        """The columns `names`, in that order, as a C-contiguous (N, k) array."""
        names = list(names)
        require_columns(self, names)
        idx = [self._index[n] for n in names]
        if idx and idx == list(range(idx[0], idx[0] + len(idx))):  # adjacent, as dyn writes them: a slice
            return np.ascontiguousarray(self.data[:, idx[0]:idx[0] + len(idx)])
        return np.ascontiguousarray(self.data[:, idx])

    @property
    def time(self) -> np.ndarray:
        """The ``time`` column, (N,)."""
        return self.column("time")

    def locate(self, row: int) -> dict:
        """Where 0-based `row` is, as `TrajectoryError` keywords: ``{'line': L}``
        for CSV (as a user counts lines), ``{'row': row + 1}`` for Parquet."""
        return _locate(self._lines, row)


def _locate(lines, row: int) -> dict:
    """`TrajectoryError` keywords for 0-based `row`. `lines`: None (Parquet: rows),
    an int (CSV, row r on line r + lines) or an array (CSV, line of each row)."""
    if lines is None:
        return {"row": int(row) + 1}
    if isinstance(lines, _RowLines):
        lines = lines.resolve()
    if isinstance(lines, int):
        return {"line": int(row) + lines}
    return {"line": int(lines[row])}


class _RowLines:
    """The line of each row of a CSV file, worked out when an error first needs
    one: it takes a second pass over the file (counting line breaks, or the csv
    module when blank lines intervene), which a file that reads cleanly never pays."""

    __slots__ = ("_read", "_n_rows", "_value")

    def __init__(self, read, n_rows):
        self._read, self._n_rows, self._value = read, n_rows, None

    def resolve(self):
        """An int (row r is on line r + value) or an array (the line of each row)."""
        if self._value is None:
            buf = self._read()
            self._value = 2 if _rows_are_consecutive_lines(buf, self._n_rows) else _lines_of_rows(buf)
            self._read = None
        return self._value


# --------------------------------------------------------------------- writing

@contextlib.contextmanager
def atomic_output(path):
    """Yield a temporary path next to `path`; on success rename it onto `path`.

    The temporary file is hidden (``.<name>.<random>.tmp<suffix>``, keeping the
    suffix so that writers that infer the format from it still work) and is
    created with the permissions an ordinary ``open(path, 'w')`` would give.
    On any exception it is removed and an existing `path` is left untouched.
    """
    target = Path(path)
    folder = target.parent
    if target.name in ("", ".", "..") or target.is_dir():
        raise InputError(f"{path}: is a folder, expected an output file name")
    if not folder.is_dir():
        raise InputError(f"{path}: folder '{folder}' does not exist")
    while True:
        tmp = folder / f".{target.name}.{secrets.token_hex(4)}.tmp{target.suffix}"
        try:
            # 0o666 through the umask, like open(path, "w"); O_EXCL: never reuse a name.
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(f"{path}: cannot write in '{folder}': {exc.strerror}") from None
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
        raise


def _to_table(names, data, source=None) -> pa.Table:
    names = [str(n) for n in names]
    data = np.asarray(data, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != len(names):
        raise InputError(f"trajectory data of shape {data.shape} does not match "
                         f"{len(names)} column names")
    seen = set()
    dup = [n for n in names if n in seen or seen.add(n)]
    if dup:
        raise InputError(f"duplicate trajectory column names: {_listing(dict.fromkeys(dup))}")
    cols = np.ascontiguousarray(data.T)  # one transpose (none for column-major data), then zero-copy columns
    metadata = None if source is None else {b"dyn.source": str(source).encode()}
    # from_buffers, not pa.array: the latter imports pandas on first use (~0.3 s)
    arrays = [pa.Array.from_buffers(pa.float64(), len(c), [None, pa.py_buffer(c)]) for c in cols]
    return pa.Table.from_arrays(arrays, names=names, metadata=metadata)


def _write_csv(table: pa.Table, sink) -> None:
    # Arrow formats doubles with double-conversion's ToShortest: the shortest
    # decimal string that parses back to the same double (0.30000000000000004,
    # 5e-324, 1.7976931348623157e+308), i.e. repr-exact; test_trajectory checks
    # the round trip. The header is quoted only when a name needs it.
    #
    # Formatting the numbers is most of the cost of writing, and Arrow does it
    # without holding the GIL: a large table is formatted in blocks of rows on
    # every core, and the blocks are written in order (at most two per core
    # are held in memory).
    plain = all(not any(ch in n for ch in ',"\r\n') for n in table.column_names)
    options = pa_csv.WriteOptions(quoting_header="none" if plain else "needed")
    n, workers = table.num_rows, min(threads(), _WRITE_THREADS)
    if workers < 2 or n < 2 * _WRITE_BLOCK_ROWS:
        pa_csv.write_csv(table, sink, options)
        return
    from concurrent.futures import ThreadPoolExecutor

    body = pa_csv.WriteOptions(include_header=False)

    def block(start):
        out = pa.BufferOutputStream()
        pa_csv.write_csv(table.slice(start, _WRITE_BLOCK_ROWS), out, options if start == 0 else body)
        return out.getvalue()

    with contextlib.ExitStack() as stack:
        f = stack.enter_context(open(sink, "wb")) if isinstance(sink, str) else sink
        pool = stack.enter_context(ThreadPoolExecutor(workers))
        pending = collections.deque()
        for start in range(0, n, _WRITE_BLOCK_ROWS):
            pending.append(pool.submit(block, start))
            if len(pending) >= 2 * workers:
                f.write(pending.popleft().result())
        while pending:
            f.write(pending.popleft().result())


def write_trajectory(path, names, data, *, source=None) -> None:
    """Write `data` (N, len(names)) with columns `names` to `path`, atomically.

    `path` ``None`` or ``'-'``: CSV on standard output (bytes, streamed, no
    temporary file). Otherwise the format is the extension's, ``.csv`` or
    ``.parquet``. `source` is optional provenance (e.g. the robot or scenario
    path), kept in the Parquet metadata as ``dyn.source``; CSV has no place for
    it. Raises `InputError` for an unsupported extension or mismatched shapes.
    """
    fmt = "csv" if path is None or str(path) == STDIO else FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        suffix = repr(Path(path).suffix) if Path(path).suffix else "(no extension)"
        raise InputError(f"{path}: unsupported output format {suffix}; "
                         f"use one of {', '.join(FORMATS)} (or '-' for CSV on standard output)")
    table = _to_table(names, data, source)
    if path is None or str(path) == STDIO:
        sys.stdout.flush()  # anything already printed goes first
        _write_csv(table, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    with atomic_output(path) as tmp:
        if fmt == "csv":
            _write_csv(table, str(tmp))
        else:
            import pyarrow.parquet as pq  # here, not at the top: ~30 ms that CSV runs need not pay

            # no dictionary encoding: sampled floats hardly ever repeat, and trying it
            # costs 5x the rest of the write (0.1 s against 0.02 s for 200k x 7) for a larger file
            pq.write_table(table, str(tmp), use_dictionary=False)


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
    display, buf, fmt = _open_source(path)
    if fmt == "parquet":
        traj = _read_parquet(display, buf if buf is not None else str(path))
    else:
        traj = _read_csv(display, buf, path)
    require_columns(traj, ["time"] + [n for n in (required or ()) if n != "time"])
    return traj


def require_columns(traj: Trajectory, names) -> None:
    """Raise `TrajectoryError` naming the `names` missing from `traj`, and what it has,
    or the error of the first of them that cannot be used (`Trajectory.unusable`)."""
    missing = [n for n in dict.fromkeys(names) if not traj.has(n)]
    if not missing:
        traj.check_usable(names)
        return
    what = "column" if len(missing) == 1 else f"{len(missing)} columns"
    hint = ""
    if len(missing) == 1:
        near = closest(missing[0], traj.names)
        hint = f" ({near})" if near.startswith("did you mean") else ""
    raise TrajectoryError(f"missing {what} {_listing(missing)}{hint}; "
                          f"found {len(traj.names)}: {_listing(traj.names)}", file=traj.path)


def check_increasing_time(traj: Trajectory) -> None:
    """Raise `TrajectoryError` at the first row whose time does not increase."""
    t = traj.time
    bad = np.flatnonzero(np.diff(t) <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise TrajectoryError(f"time {float(t[i])!r} does not increase (previous row {float(t[i - 1])!r}); "
                              f"rows must be in increasing time", file=traj.path,
                              column="time", **traj.locate(i))


def _open_source(path):
    """(display name, bytes or None, format). Regular files stay on disk (Arrow
    reads them itself, in parallel, without a copy in Python); pipes and
    standard input are read into memory once (they cannot be reread)."""
    if path is None or str(path) == STDIO:
        stream = sys.stdin
        if stream is None or stream.isatty():
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
    if stat.S_ISREG(mode):
        if fmt == "parquet" and p.stat().st_size == 0:
            raise TrajectoryError("empty file", file=display)
        if fmt is None:  # no extension: sniff
            fmt = "parquet" if _read_file(p, display, _PARQUET_MAGIC_SIZE) == _PARQUET_MAGIC else "csv"
        return display, None, fmt
    buf = _read_file(p, display)
    if fmt is None:  # no extension (e.g. /dev/fd/63 from <(...)): sniff
        fmt = "parquet" if buf.startswith(_PARQUET_MAGIC) else "csv"
    return display, buf, fmt


def _read_file(path, display, size=-1) -> bytes:
    """The first `size` bytes of a file (all of it by default), as a TrajectoryError when unreadable."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as exc:
        raise TrajectoryError(f"cannot read: {exc.strerror}", file=display) from None


def _check_names(names, display, *, line=None) -> None:
    seen = set()
    dup = [n for n in names if n in seen or seen.add(n)]
    if dup:
        raise TrajectoryError(f"duplicate column names {_listing(dict.fromkeys(dup))}",
                              file=display, line=line)
    for j, n in enumerate(names):
        if not n.strip():
            raise TrajectoryError(f"column {j + 1} has no name", file=display, line=line)


def _stack(columns, n: int) -> np.ndarray:
    """Arrow float64 columns without nulls -> column-major (n, k) array.

    Reads the value buffers directly (np.frombuffer): Arrow's to_numpy imports
    pandas on first use, which costs ~0.3 s of start-up.
    """
    cols = np.empty((len(columns), n), dtype=np.float64)
    for j, col in enumerate(columns):
        start = 0
        for chunk in col.chunks:  # no concatenation: copy chunk by chunk
            size = len(chunk)
            cols[j, start:start + size] = np.frombuffer(
                chunk.buffers()[1], dtype=np.float64, count=size, offset=8 * chunk.offset)
            start += size
    return cols.T  # column-major (n, k): no transpose (it cost as much as the parsing)


# CSV ---------------------------------------------------------------------------

def _header(buf: bytes, display, complete=True):
    """(names, line of the header) from the first non-blank line, with the csv module.
    `buf` may be only the start of the file (`complete` False): then None when
    the header does not end inside it."""
    start = 3 if buf.startswith(b"\xef\xbb\xbf") else 0  # UTF-8 byte-order mark
    line = 1
    while True:
        end = buf.find(b"\n", start)
        chunk = buf[start:] if end < 0 else buf[start:end + 1]
        if chunk.strip():
            break
        if end < 0 and not complete:
            return None
        if end < 0:
            raise TrajectoryError("empty file; expected a CSV header line then one row per sample",
                                  file=display)
        start = end + 1
        line += 1
    # a quoted name may span lines: take lines until the quotes balance
    while end >= 0 and buf.count(b'"', start, end + 1) % 2:
        end = buf.find(b"\n", end + 1)
    if end < 0 and not complete:
        return None
    head = buf[start:] if end < 0 else buf[start:end + 1]
    names = next(csv.reader(io.StringIO(head.decode("utf-8", errors="replace"), newline="")))
    return names, line


def _lines_of_rows(buf: bytes):
    """Physical line number of every data row (blank lines skipped), csv-module exact."""
    lines = []
    reader = csv.reader(io.StringIO(buf.decode("utf-8-sig", errors="replace"), newline=""))
    header = True
    for fields in reader:
        if not fields:
            continue
        if header:
            header = False
            continue
        lines.append(reader.line_num)
    return np.asarray(lines, dtype=np.int64)


def _rows_are_consecutive_lines(buf: bytes, n_rows: int) -> bool:
    """Whether the header is line 1 and row r is line r + 2: no blank lines before
    or between rows (trailing ones do not matter), no line breaks inside quotes."""
    end = len(buf)
    while end and buf[end - 1] in b" \t\r\n":
        end -= 1
    return buf.count(b"\n", 0, end) == n_rows  # one line break per data row


def _is_number(text: str) -> bool:
    """What Arrow's CSV float parser accepts (Python's float() also takes '1_0')."""
    if "_" in text:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def _diagnose_csv(buf: bytes, display, arrow_message: str) -> TrajectoryError:
    """The error at the first bad line, found with the csv module. Runs only
    after pyarrow has refused the file, so its cost does not matter."""
    reader = csv.reader(io.StringIO(buf.decode("utf-8-sig", errors="replace"), newline=""))
    header = None
    for fields in reader:
        if not fields:
            continue
        if header is None:
            header = fields
            continue
        line = reader.line_num
        if len(fields) != len(header):
            count = f"{len(fields)} value" + ("" if len(fields) == 1 else "s")
            return TrajectoryError(f"{count}, but the header has {len(header)} columns",
                                   file=display, line=line)
    message = arrow_message.splitlines()[0] if arrow_message else "cannot be read as CSV"
    return TrajectoryError(f"cannot be read as CSV ({message})", file=display)


def _text_error(read, display, name):
    """A function giving the error of text column `name`: its first cell that is not
    a number, found with the csv module (on a second pass, only when asked)."""
    def make():
        reader = csv.reader(io.StringIO(read().decode("utf-8-sig", errors="replace"), newline=""))
        k = None
        for fields in reader:
            if not fields:
                continue
            if k is None:
                k = fields.index(name) if name in fields else -1
                continue
            value = fields[k] if 0 <= k < len(fields) else ""
            if value.strip() and not _is_number(value):
                return TrajectoryError(f"{value!r} is not a number", file=display,
                                       line=reader.line_num, column=name)
        return TrajectoryError("holds text, not numbers", file=display, column=name)
    return make


_ARROW_COLUMN = re.compile(r"In CSV column #(\d+)")


def _read_csv(display, buf, path=None) -> Trajectory:
    """From `buf` (bytes) or, when it is None, the regular file `path`."""
    if buf is None:
        whole = functools.partial(_read_file, path, display)
        head = _read_file(path, display, _HEAD_BYTES)
        found = _header(head, display, complete=len(head) < _HEAD_BYTES)
        if found is None:  # a header longer than _HEAD_BYTES
            buf = whole()
    else:
        whole = lambda: buf  # noqa: E731
    names, header_line = found if buf is None else _header(buf, display)
    _check_names(names, display, line=header_line)
    text = set()  # columns Arrow could not read as numbers: read again as bytes (any encoding), set aside
    while True:
        convert = pa_csv.ConvertOptions(
            column_types={n: pa.binary() if n in text else pa.float64() for n in names},
            null_values=[""], strings_can_be_null=False, quoted_strings_can_be_null=False)
        try:
            with (pa.BufferReader(buf) if buf is not None else pa.OSFile(str(path))) as source:
                table = pa_csv.read_csv(source, convert_options=convert)
            break
        except pa.ArrowInvalid as exc:
            found = _ARROW_COLUMN.search(str(exc))
            k = int(found.group(1)) if found else -1
            if 0 <= k < len(names) and names[k] not in text:
                text.add(names[k])
                continue
            raise _diagnose_csv(whole(), display, str(exc)) from None
        except OSError as exc:  # the file went away or became unreadable since it was opened
            raise TrajectoryError(f"cannot read: {exc.strerror or exc}", file=display) from None
    types = [pa.binary() if n in text else pa.float64() for n in names]
    if table.column_names != names or table.schema.types != types:
        # pyarrow split the header differently from the csv module: let the
        # line-by-line reader find and name the problem.
        raise _diagnose_csv(whole(), display, "unexpected header")
    n = table.num_rows
    if n == 0:
        raise TrajectoryError("header only, no data rows; expected one row per sample",
                              file=display, line=header_line)
    # rows are consecutive lines unless blank lines intervene (then map them exactly);
    # worked out now for bytes in memory, on the first error for a file on disk
    lines = _RowLines(whole, n)
    if buf is not None:
        lines = lines.resolve()
    unusable = {name: _text_error(whole, display, name) for name in names if name in text}
    kept = [(name, col) for name, col in zip(names, table.columns) if name not in text]
    del table
    return _numbers(kept, display, lines, unusable, "empty value; expected a number")


# Parquet -------------------------------------------------------------------------

def _read_parquet(display, source) -> Trajectory:
    import pyarrow.parquet as pq  # here, not at the top: ~30 ms that CSV runs need not pay

    try:
        # ParquetFile.read, not pq.read_table: the latter imports pandas (~0.3 s)
        table = pq.ParquetFile(pa.BufferReader(source) if isinstance(source, bytes)
                               else source).read()
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a damaged file: bad metadata, bad names
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TrajectoryError(f"cannot be read as Parquet ({first})", file=display) from None
    names = table.column_names
    _check_names(names, display)
    if table.num_columns == 0:
        raise TrajectoryError("no columns; expected at least 'time'", file=display)
    if table.num_rows == 0:
        raise TrajectoryError("no data rows; expected one row per sample", file=display)
    kept, unusable = [], {}
    for name, col in zip(names, table.columns):
        t = col.type
        if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_decimal(t)):
            unusable[name] = functools.partial(TrajectoryError, f"holds {t} values; expected numbers",
                                               file=display, column=name)
            continue
        kept.append((name, col if t == pa.float64() else col.cast(pa.float64(), safe=False)))
    return _numbers(kept, display, None, unusable, "missing (null) value; expected a number")


def _numbers(kept, display, lines, unusable, null_message) -> Trajectory:
    """The Trajectory of the number columns `kept` ((name, Arrow column) pairs); a
    column with an empty (null), NaN or infinite cell joins `unusable` with the
    error of its first such cell (an empty cell reads NaN in `data`)."""
    names = [name for name, _ in kept]
    columns = [col for _, col in kept]
    nulls = [j for j, col in enumerate(columns) if col.null_count]
    if nulls:
        import pyarrow.compute as pa_compute  # only when there are some: ~35 ms of import

        for j in nulls:
            columns[j] = pa_compute.fill_null(columns[j], float("nan"))
    n = len(columns[0]) if columns else 0
    data = _stack(columns, n) if columns else np.empty((n, 0))
    ok = np.isfinite(data)
    if not ok.all():
        locate = functools.partial(_locate, lines)
        for j in np.flatnonzero(~ok.all(axis=0)):
            i = int(np.argmin(ok[:, j]))
            empty = j in nulls and not kept[j][1][i].is_valid
            message = null_message if empty else f"value {float(data[i, j])!r} is not finite (NaN or infinite)"
            unusable[names[j]] = functools.partial(_located_error, message, display, names[j], locate, i)
    return Trajectory(names, data, display, lines=lines, unusable=unusable)


def _located_error(message, display, column, locate, row) -> TrajectoryError:
    return TrajectoryError(message, file=display, column=column, **locate(row))

