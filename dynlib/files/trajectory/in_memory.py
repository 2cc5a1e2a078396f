"""The trajectory in memory: the `Trajectory` a reader returns (the table of a CSV or Parquet file), its column
checks, and the conversions between Arrow columns and the table that both file formats share.

A `Trajectory` holds the column names and one (N, ncols) float64 array, column-major
as Arrow reads it. Columns that cannot be used (text; an empty, NaN or infinite
cell) do not stop the reading: they are set aside with the located error that using
them raises (SPEC §5: readers ignore the columns they do not need).
`require_columns` and `check_increasing_time` are the checks the commands make on a
table; `to_arrow` and `from_arrow` are the only places a table meets Arrow (imported there, on
first use: a small CSV is written without it, `dynlib.files.trajectory.csv_text`).
"""
from __future__ import annotations

import functools
import math
import os

import numpy as np

from ..columns import TIME
from ...errors import InputError, TrajectoryError, closest

_SHOW = 8  # names listed in a message before "… (N more)"


def arrow_file(path, mode="r"):
    """What pyarrow opens `path` through: the path itself (a str), or, for a name that is not UTF-8
    (Linux allows any bytes, and Arrow takes UTF-8 paths only: a UnicodeEncodeError, an internal
    error), Python's file of it wrapped for Arrow. For reading (``r``: a file Arrow reads, closed
    with it) or for Parquet's writer (``w``)."""
    name = os.fspath(path)
    try:
        name.encode()
    except UnicodeEncodeError:
        import pyarrow as pa

        return pa.PythonFile(open(name, "rb" if mode == "r" else "wb"), mode=mode)
    return name


def arrow_input(path):
    """An Arrow input stream of the file at `path` (any name, see `arrow_file`)."""
    import pyarrow as pa

    file = arrow_file(path)
    return pa.OSFile(file) if isinstance(file, str) else file


def listing(names, show: int = _SHOW) -> str:
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
        # when blank lines intervene, an array, or an object that works either out
        # when first asked (`resolve()`); Parquet: None (rows, not lines).
        self._lines = lines
        # columns that cannot be used (text; an empty, NaN or infinite cell), by name:
        # a function giving the located TrajectoryError, raised only if the column is used
        self._unusable = dict(unusable or {})

    def __len__(self) -> int:
        return self.data.shape[0]

    def __contains__(self, name) -> bool:
        return name in self._index

    def __repr__(self) -> str:
        return f"Trajectory({self.path!r}, {len(self)} rows, columns {listing(self.names, 4)})"

    def has(self, name: str) -> bool:
        """Whether the file has a column named `name` (usable or not)."""
        return name in self._index or name in self._unusable

    @property
    def file_names(self) -> list:
        """Every column the file has: `names`, then the text columns that are not in it."""
        return list(self.names) + [n for n in self._unusable if n not in self._index]

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

    def finite_columns(self, names) -> np.ndarray:
        """`columns(names)`, or a TrajectoryError at the first NaN or infinite value (row order),
        naming its column and line (a table a recording reader built holds them as numbers)."""
        names = list(names)
        X = self.columns(names)
        if not np.isfinite(X).all():
            k, j = np.argwhere(~np.isfinite(X))[0]
            raise TrajectoryError(f"value {float(X[k, j])!r} is not finite (NaN or infinite)",
                                  file=self.path, column=names[j], **self.locate(int(k)))
        return X

    def with_unusable(self, name, make) -> "Trajectory":
        """The same table (data shared) whose column `name` raises `make()` when it is used."""
        return Trajectory(self.names, self.data, self.path, lines=self._lines,
                          unusable={**self._unusable, name: make})

    @property
    def time(self) -> np.ndarray:
        """The ``time`` column, (N,)."""
        return self.column(TIME)

    def renamed(self, mapping, drop=()) -> "Trajectory":
        """The same table with columns renamed by `mapping` ({old: new}) and the columns
        in `drop` left out: the data is shared unless some are dropped. The rows keep
        their lines, and unusable columns their errors (under their new names)."""
        drop = set(drop)
        keep = [j for j, n in enumerate(self.names) if n not in drop]
        data = self.data if len(keep) == len(self.names) else self.data[:, keep]
        names = [mapping.get(self.names[j], self.names[j]) for j in keep]
        unusable = {mapping.get(n, n): make for n, make in self._unusable.items() if n not in drop}
        return Trajectory(names, data, self.path, lines=self._lines, unusable=unusable)

    def take(self, rows) -> "Trajectory":
        """The rows `rows` (0-based integer indices, increasing) as a new table, each
        keeping its line (CSV) or its row (Parquet) in the file for errors."""
        rows = np.asarray(rows, dtype=np.int64)
        lines = self._lines.resolve() if hasattr(self._lines, "resolve") else self._lines
        if lines is None:
            lines = _ParquetRows(rows)
        elif isinstance(lines, int):
            lines = rows + lines
        else:
            lines = np.asarray(lines)[rows]
        unusable = {n: make for n, make in self._unusable.items() if n not in self._index}
        return Trajectory(self.names, self.data[rows], self.path, lines=lines, unusable=unusable)

    def locate(self, row: int) -> dict:
        """Where 0-based `row` is, as `TrajectoryError` keywords: ``{'line': L}``
        for CSV (as a user counts lines), ``{'row': row + 1}`` for Parquet."""
        return locate_row(self._lines, row)


class _ParquetRows:
    """The rows of a file (0-based) that the rows of a `Trajectory.take` came from."""

    __slots__ = ("rows",)

    def __init__(self, rows):
        self.rows = rows


def locate_row(lines, row: int) -> dict:
    """`TrajectoryError` keywords for 0-based `row`. `lines`: None (Parquet: rows),
    an int (CSV, row r on line r + lines), an array (CSV, line of each row) or an
    object whose `resolve()` gives one of those two (`dynlib.files.trajectory.csv.RowLines`)."""
    if lines is None:
        return {"row": int(row) + 1}
    if isinstance(lines, _ParquetRows):
        return {"row": int(lines.rows[row]) + 1}
    if hasattr(lines, "resolve"):
        lines = lines.resolve()
    if isinstance(lines, int):
        return {"line": int(row) + lines}
    return {"line": int(lines[row])}


# -------------------------------------------------------------------- checks

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
    raise TrajectoryError(f"missing {what} {listing(missing)}{hint}; "
                          f"found {len(traj.file_names)}: {listing(traj.file_names)}", file=traj.path)


def check_increasing_time(traj: Trajectory) -> None:
    """Raise `TrajectoryError` at the first row whose time does not increase."""
    t = traj.time
    bad = np.flatnonzero(np.diff(t) <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise TrajectoryError(f"time {float(t[i])!r} does not increase (previous row {float(t[i - 1])!r}); "
                              f"rows must be in increasing time", file=traj.path,
                              column=TIME, **traj.locate(i))


def check_names(names, display, *, line=None) -> None:
    seen = set()
    dup = [n for n in names if n in seen or seen.add(n)]
    if dup:
        raise TrajectoryError(f"duplicate column names {listing(dict.fromkeys(dup))}",
                              file=display, line=line)
    for j, n in enumerate(names):
        if not n.strip():
            raise TrajectoryError(f"column {j + 1} has no name", file=display, line=line)


# --------------------------------------------------------------------- Arrow

def checked_table(names, data) -> tuple:
    """(names as str, data as float64): InputError for mismatched shapes or duplicate names."""
    names = [str(n) for n in names]
    data = np.asarray(data, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != len(names):
        raise InputError(f"trajectory data of shape {data.shape} does not match "
                         f"{len(names)} column names")
    seen = set()
    dup = [n for n in names if n in seen or seen.add(n)]
    if dup:
        raise InputError(f"duplicate trajectory column names: {listing(dict.fromkeys(dup))}")
    return names, data


def to_arrow(names, data, source=None, metadata=None) -> pa.Table:
    """The Arrow table of `data` (N, len(names)) with columns `names`; `source` is kept
    in its metadata as ``dyn.source``, and `metadata` ({key: text}) as given. Raises
    `InputError` for mismatched shapes or duplicate names."""
    import pyarrow as pa

    names, data = checked_table(names, data)
    cols = np.ascontiguousarray(data.T)  # one transpose (none for column-major data), then zero-copy columns
    meta = {str(k).encode(): str(v).encode() for k, v in (metadata or {}).items()}
    if source is not None:
        meta[b"dyn.source"] = str(source).encode("utf-8", "backslashreplace")  # a name that is not UTF-8
    # from_buffers, not pa.array: the latter imports pandas on first use (~0.3 s)
    arrays = [pa.Array.from_buffers(pa.float64(), len(c), [None, pa.py_buffer(c)]) for c in cols]
    return pa.Table.from_arrays(arrays, names=names, metadata=meta or None)


def from_arrow(kept, display, lines, unusable, null_message) -> Trajectory:
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
        locate = functools.partial(locate_row, lines)
        for j in np.flatnonzero(~ok.all(axis=0)):
            i = int(np.argmin(ok[:, j]))
            empty = j in nulls and not kept[j][1][i].is_valid
            message = null_message if empty else f"value {float(data[i, j])!r} is not finite (NaN or infinite)"
            unusable[names[j]] = functools.partial(_located_error, message, display, names[j], locate, i)
    return Trajectory(names, data, display, lines=lines, unusable=unusable)


def _located_error(message, display, column, locate, row) -> TrajectoryError:
    return TrajectoryError(message, file=display, column=column, **locate(row))


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

