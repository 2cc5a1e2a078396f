"""Recordings in dyn's own files: CSV and Parquet tables (SPEC §5), and the exact clock readings of a table.

dyn's files name their columns ``time``, ``q.<name>``, …; a column map
(``--columns``) says where else they are: ``q=pos_{joint}``, ``q.elbow=elbow``,
``effort=tau_meas_{joint}``, ``time=stamp``. The mapped columns are renamed to
dyn's names (`canonical`), so that everything after the reader sees one naming
(PlotJuggler's exports, `dynlib.files.recordings.plotjuggler`, are renamed by it too).
A table's time column is read exactly where the file allows it (`clock_readings`:
decimals of a CSV, integers of a Parquet file).
"""
from __future__ import annotations

import numpy as np

from ..columns import TIME, coordinate_columns
from ..column_map import mapped, source_columns
from ...errors import InputError, TrajectoryError, closest
from ..trajectory import read_opened, require_columns
from ..trajectory.in_memory import arrow_file, arrow_input, listing
from . import clock

_PRECISE = 1e6  # clock readings below this are exact enough as doubles (ulp 1e-10)


# ------------------------------------------------------------------ time

def csv_decimal_column(display, buf, path, name):
    """The CSV column `name` read as exact decimals (Arrow decimal128 with 9 decimals), or
    None when it does not read so (more decimals, an exponent too large, text, empty cells)."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    opts = pa_csv.ConvertOptions(include_columns=[name], column_types={name: pa.decimal128(37, 9)})
    try:
        with (pa.BufferReader(buf) if buf is not None else arrow_input(path)) as source:
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
        col = pq.ParquetFile(arrow_file(path)).read(columns=[name]).column(0)
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


def run_settings_of(display, buf, fmt, path) -> dict:
    """The settings of the run that wrote a Parquet file (`dynlib.files.columns.run_settings`: its
    gravity, floating base, joint friction), {} for a CSV (which has no place for them) or a file
    without them."""
    if fmt != "parquet":
        return {}
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..columns import run_settings

    try:
        meta = pq.read_schema(pa.BufferReader(buf) if buf is not None else arrow_file(path)).metadata
    except (pa.ArrowException, OSError, UnicodeDecodeError):
        return {}  # (the table's reader reports a damaged file)
    return run_settings(meta, display)


def model_of_run(model, settings, *, gravity=None, joint_friction=True, friction_smoothing=None, file=None):
    """(model, friction smoothing, notes): `model` under the settings of the run that wrote a file
    (`settings`, `dynlib.files.columns.run_settings`), for a command that did not choose them: its
    gravity unless `gravity` (the one given) is given, which must then be the same (InputError
    otherwise); its joint damping and friction where they differ from the model's, unless
    `joint_friction` is False (rigid-body torques asked for); its friction smoothing unless
    `friction_smoothing` (given) is. `notes`: what was taken from the file, one line each."""
    import dataclasses

    notes = []
    where = f"{file}'s metadata" if file else "the file's metadata"
    g = settings.get("gravity")
    if g is not None:
        text = ",".join(f"{x:g}" for x in g)
        if gravity is not None:
            if not np.allclose(np.asarray(gravity, dtype=float), g, rtol=1e-12, atol=1e-12):
                raise InputError(f"--gravity {','.join(f'{x:g}' for x in gravity)} contradicts the gravity {text} the "
                                 f"motion was simulated under ({where}, dyn.gravity); leave --gravity out",
                                 key="--gravity")
        elif not np.array_equal(model.gravity, g):
            model = model.with_gravity(g)
            notes.append(f"gravity {text} m/s^2, the run's ({where}); --gravity must agree with it")
    jf = settings.get("joint_friction")
    if jf is not None and joint_friction and all(n in jf["damping"] and n in jf["friction"] for n in model.v_names):
        damping = np.array([jf["damping"][n] for n in model.v_names])
        friction = np.array([jf["friction"][n] for n in model.v_names])
        a = model.arrays
        if not (np.array_equal(damping, a.damping) and np.array_equal(friction, a.friction)):
            model = dataclasses.replace(model, arrays=a._replace(damping=damping, friction=friction))
            notes.append(f"joint friction of the run ({where}): " + (
                "none" if not (damping.any() or friction.any()) else "damping and friction other than the URDF's")
                + "; --no-joint-friction leaves it out")
    smoothing = friction_smoothing
    if smoothing is None:
        smoothing = jf["smoothing"] if jf is not None else 1e-3
    return model, smoothing, notes


# ------------------------------------------------------------------ dyn's names

def canonical(traj, model, columns, parts=("q", "qd", "qdd", "effort"), order=None):
    """`traj` with the columns that `columns` maps renamed to dyn's (``q.<name>``, …): the
    parts it maps must be all there (TrajectoryError naming the missing ones); a
    column of the file that already has one of those names is replaced. `order`: the
    file's joint order, that ``{index}`` counts in (`source_columns`)."""
    rename, used = {}, {}
    for part in parts:
        if not mapped(columns, part):
            continue
        src = source_columns(model, part, columns, order)
        require_columns(traj, src)
        for s, c in zip(src, coordinate_columns(part, coordinate_names(model, part))):
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


def coordinate_names(model, part):
    """The names of `part`'s coordinates: `model.q_names` for q, `model.v_names` for the others."""
    return model.q_names if part == "q" else model.v_names


def read_table(display, buf, fmt, path, model, columns, order=None):
    """(traj, time column name) of a dyn CSV or Parquet file, its mapped columns renamed
    (`order`: the file's joint order, for ``{index}``)."""
    traj = read_opened(display, buf, fmt, path)
    name = columns.get(TIME, TIME)
    if not traj.has(name):
        hint = "" if TIME in columns else "; give it with --columns time=COLUMN"
        near = closest(name, traj.file_names)
        raise TrajectoryError(f"no time column {name!r}{hint} ({near}); found {len(traj.file_names)}: "
                              f"{listing(traj.file_names)}", file=display)
    return canonical(traj, model, columns, order=order), name


def index_order(model, columns, order, notes):
    """The file's joint order for the column map's ``{index}`` (None when it has none): `order`,
    which a map with ``{index}`` needs (a file without joint names does not give its order) and a map
    without it does not take; the mapping it makes goes to `notes`, one line."""
    from ..column_map import joint_order, uses_index

    if not uses_index(columns):
        if order is not None:
            raise InputError("--joint-order is the order that {index} in --columns counts in, and --columns has "
                             "no {index}; leave --joint-order out", key="--joint-order")
        return None
    if order is None:
        templates = ",".join(f"{k}={v}" for k, v in columns.items() if "{index" in str(v))
        raise InputError(f"--columns {templates}: {{index}} counts the joints in the file's order, and a file "
                         "without joint names does not give it: give --joint-order a,b,... (the joints in the "
                         "file's order), or map columns by name ({joint}, q.<name>=COLUMN)", key="--joint-order")
    order = joint_order(order)
    pairs = [f"{c}={s}" for part in ("q", "qd", "qdd", "effort") if part in columns and "{index" in columns[part]
             for s, c in zip(source_columns(model, part, columns, order),
                             coordinate_columns(part, coordinate_names(model, part)))]
    notes.append(f"columns by --joint-order: {', '.join(pairs)}")
    return order
