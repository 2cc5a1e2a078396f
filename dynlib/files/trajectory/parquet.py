"""Parquet trajectory files: reading and writing, with pyarrow.parquet.

pyarrow and pyarrow.parquet are imported on first use, not with this module: the ~30 ms are
not paid by runs that only touch CSV. Number columns of any width (integers and
decimals too) are read as float64; other columns are set aside with their error
(used only if the column is needed). Errors name the 1-based data row.
"""
from __future__ import annotations

import functools

from ...errors import TrajectoryError
from .in_memory import Trajectory, arrow_file, check_names, from_arrow


def read(display, source) -> Trajectory:
    """From `source`: bytes, or the path of a regular file."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # here, not at the top: ~30 ms that CSV runs need not pay

    try:
        # ParquetFile.read, not pq.read_table: the latter imports pandas (~0.3 s)
        table = pq.ParquetFile(pa.BufferReader(source) if isinstance(source, bytes)
                               else arrow_file(source)).read()
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a damaged file: bad metadata, bad names
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TrajectoryError(f"cannot be read as Parquet ({first})", file=display) from None
    names = table.column_names
    check_names(names, display)
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
    return from_arrow(kept, display, None, unusable, "missing (null) value; expected a number")


def write(table: pa.Table, path) -> None:
    """Write an Arrow table to the file `path` as Parquet."""
    import pyarrow.parquet as pq  # here, not at the top: ~30 ms that CSV runs need not pay

    # no dictionary encoding: sampled floats hardly ever repeat, and trying it
    # costs 5x the rest of the write (0.1 s against 0.02 s for 200k x 7) for a larger file
    sink = arrow_file(path, "w")
    try:
        pq.write_table(table, sink, use_dictionary=False)
    finally:
        if not isinstance(sink, str):
            sink.close()
