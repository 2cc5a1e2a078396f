"""Tests for dynlib.files.trajectory (table, csv, parquet): exact round trips, atomic writes, one-line errors.

The column names are tested in test_columns.py, the atomic-output helper in test_output.py.
"""
import io
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynlib.files import trajectory as tj
from dynlib.errors import InputError, TrajectoryError
from dynlib.files.trajectory import (
    Trajectory,
    check_increasing_time,
    column_names,
    read_trajectory,
    require_columns,
    write_trajectory,
)


def awkward_floats(n, seed=0):
    """Finite doubles that stress formatting: random bit patterns (tiny, huge,
    subnormal), signed zeros, 0.1 + 0.2, extremes."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**64, size=4 * n, dtype=np.uint64).view(np.float64)
    bits = bits[np.isfinite(bits)][:n]
    special = np.array([0.1 + 0.2, 1 / 3, -0.0, 0.0, 5e-324, 2.2250738585072014e-308,
                        1.7976931348623157e308, -1.7976931348623157e308, 1e-300, 1e300,
                        123456789012345680.0, 1e21, 1e-7, 2.0**53 + 2, np.pi])
    out = np.concatenate([special, bits, rng.standard_normal(n)])
    return out


def table(n_rows=20, n_q=3, seed=0):
    names = column_names([f"j{i}" for i in range(n_q)], [f"j{i}" for i in range(n_q)],
                         ("q", "qd"))
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n_rows, len(names)))
    data[:, 0] = np.arange(n_rows) * 1e-3
    return names, data


def write_text(path, text):
    path.write_bytes(text.encode())
    return path


def error_of(path, **kw):
    with pytest.raises(TrajectoryError) as info:
        read_trajectory(path, **kw)
    message = str(info.value)
    assert "\n" not in message
    return info.value, message


# -------------------------------------------------------------------- round trips

@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_round_trip_is_exact(tmp_path, ext):
    values = awkward_floats(3000)
    n = len(values) // 4
    data = values[: 4 * n].reshape(n, 4)
    data[:, 0] = np.arange(n)
    names = ["time", "q.a", "q.b", "tau.a"]
    path = tmp_path / f"traj{ext}"
    write_trajectory(path, names, data)
    traj = read_trajectory(path)
    assert traj.names == names
    assert traj.data.dtype == np.float64 and traj.data.flags.f_contiguous  # column-major, as read
    # bit-for-bit, signed zeros included
    assert np.array_equal(traj.data.view(np.uint64), data.view(np.uint64))


def test_csv_floats_are_shortest_repr(tmp_path):
    path = tmp_path / "t.csv"
    write_trajectory(path, ["time", "x"], np.array([[0.0, 0.1 + 0.2], [1.0, 0.1]]))
    assert path.read_text() == "time,x\n0,0.30000000000000004\n1,0.1\n"


@pytest.mark.parametrize("seed", range(3))
def test_a_small_csv_written_without_arrow_is_arrows_bytes(seed):
    # dynlib.files.trajectory.csv_text (tables up to TEXT_VALUES numbers: a short run does not import
    # pyarrow) writes what Arrow's writer writes, for doubles of every exponent and both notations
    rng = np.random.default_rng(seed)
    values = np.concatenate([awkward_floats(3000, seed), 10.0 ** np.arange(-330, 309), 2.0 ** np.arange(-1074, 1024),
                             -(10.0 ** np.arange(-12, 12)), np.round(rng.uniform(-1e4, 1e4, 2000), seed + 1),
                             rng.integers(-2**53, 2**53, 1000).astype(float), [1e10 - 1, 1e10 - 0.5, 9.999999e-7]])
    values = rng.permutation(values[np.isfinite(values)])
    data = values[: 5 * (len(values) // 5)].reshape(-1, 5)
    names = ["time", "q.a", "q.b", "qd.a", "tau.é"]
    text, arrow = io.BytesIO(), io.BytesIO()
    tj.csv_text.write(names, data, text)
    tj.csv.write(tj.in_memory.to_arrow(names, data), arrow)
    assert text.getvalue() == arrow.getvalue()


def test_which_tables_are_written_without_arrow(tmp_path, monkeypatch):
    data = np.zeros((2, 3))
    assert tj.csv_text.fits(["time", "q.a", "q.b"], data)
    assert not tj.csv_text.fits(["time", "q.a,b", "q.b"], data)  # a name Arrow quotes
    assert not tj.csv_text.fits(["time", "q.a", "q.b"], np.full((2, 3), np.nan))
    assert not tj.csv_text.fits(["time", "q.a", "q.b"], np.zeros((0, 3)))
    assert not tj.csv_text.fits(["time"], np.zeros((tj.csv_text.TEXT_VALUES + 1, 1)))
    # and write_trajectory takes it for those: the same file either way
    small = np.column_stack([np.arange(50) * 1e-3, np.sin(np.arange(50))])
    write_trajectory(tmp_path / "text.csv", ["time", "q.a"], small)
    monkeypatch.setattr(tj.csv_text, "fits", lambda names, data: False)
    write_trajectory(tmp_path / "arrow.csv", ["time", "q.a"], small)
    assert (tmp_path / "text.csv").read_bytes() == (tmp_path / "arrow.csv").read_bytes()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40))
def test_csv_round_trip_any_finite_float(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("rt") / "t.csv"
    data = np.column_stack([np.arange(len(values), dtype=float), values])
    write_trajectory(path, ["time", "x"], data)
    back = read_trajectory(path).data
    assert np.array_equal(back.view(np.uint64), data.view(np.uint64))


def test_names_needing_quotes_round_trip(tmp_path):
    names = ["time", 'q.a,b', 'q."c"']
    data = np.array([[0.0, 1.0, 2.0]])
    path = tmp_path / "t.csv"
    write_trajectory(path, names, data)
    assert read_trajectory(path).names == names


def test_parquet_keeps_source(tmp_path):
    path = tmp_path / "t.parquet"
    write_trajectory(path, *table(), source="robots/arm6.urdf")
    assert pq.read_schema(path).metadata[b"dyn.source"] == b"robots/arm6.urdf"


def test_parquet_integer_columns_are_read_as_float(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"time": pa.array([0, 1, 2], pa.int64()),
                             "q.a": pa.array([0.5, 1.5, 2.5], pa.float32())}), path)
    traj = read_trajectory(path)
    assert traj.data.dtype == np.float64
    assert traj.time.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_column_order_does_not_matter(tmp_path, ext):
    names, data = table()
    order = np.random.default_rng(1).permutation(len(names))
    path = tmp_path / f"t{ext}"
    write_trajectory(path, [names[j] for j in order], data[:, order])
    traj = read_trajectory(path, required=names)
    assert traj.names == [names[j] for j in order]
    assert np.array_equal(traj.columns(names), data)
    assert traj.columns(names).flags.c_contiguous
    assert np.array_equal(traj.time, data[:, 0])


def test_extra_columns_are_ignored(tmp_path):
    path = write_text(tmp_path / "t.csv", "label,time,q.a\n7,0,1\n8,1,2\n")
    traj = read_trajectory(path, required=["q.a"])
    assert np.array_equal(traj.columns(["time", "q.a"]), [[0, 1], [1, 2]])


def test_trajectory_accessors(tmp_path):
    names, data = table(n_rows=5)
    path = tmp_path / "t.csv"
    write_trajectory(path, names, data)
    traj = read_trajectory(path)
    assert len(traj) == 5
    assert traj.has("q.j1") and not traj.has("q.nope") and "qd.j0" in traj
    assert np.array_equal(traj.column("qd.j2"), data[:, names.index("qd.j2")])
    assert traj.path == str(path)
    with pytest.raises(TrajectoryError, match="did you mean 'q.j1'"):
        traj.column("q.j_1")


def test_crlf_bom_and_spaces_are_read(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"\xef\xbb\xbftime,q.a\r\n0, 1.5\r\n1 ,2.5\r\n")
    traj = read_trajectory(path)
    assert traj.names == ["time", "q.a"]
    assert np.array_equal(traj.data, [[0, 1.5], [1, 2.5]])


# ------------------------------------------------------------------ standard I/O

def test_dash_writes_csv_to_stdout(monkeypatch):
    out = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", out)
    names, data = table(n_rows=3)
    write_trajectory("-", names, data)
    text = out.buffer.getvalue().decode()
    assert text.splitlines()[0] == ",".join(names)
    assert len(text.splitlines()) == 4


def test_none_path_writes_to_stdout_after_printed_text(monkeypatch):
    out = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", out)
    print("# before")
    write_trajectory(None, ["time"], np.zeros((1, 1)))
    assert out.buffer.getvalue() == b"# before\ntime\n0\n"


def test_dash_reads_stdin(monkeypatch):
    names, data = table(n_rows=4)
    buf = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", buf)
    write_trajectory("-", names, data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(buf.buffer.getvalue())))
    traj = read_trajectory("-")
    assert traj.path == "<stdin>"
    assert np.array_equal(traj.data, data)


def test_stdin_errors_name_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"time,q.a\n0,1\n1,x\n")))
    _, message = error_of("-", required=["q.a"])
    assert message.startswith("<stdin>:3: column 'q.a':")


def test_stdin_accepts_parquet(monkeypatch, tmp_path):
    path = tmp_path / "t.parquet"
    names, data = table(n_rows=3)
    write_trajectory(path, names, data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    assert np.array_equal(read_trajectory("-").data, data)


# ----------------------------------------------------------------------- atomic

@pytest.mark.parametrize("writer", ["csv", "csv_text"])  # Arrow's, and the small tables' (the one table() takes)
def test_failing_writer_does_not_clobber(tmp_path, monkeypatch, writer):
    target = tmp_path / "out.csv"
    target.write_text("old contents\n")

    def dies_midway(*args):
        with open(args[-1], "w") as f:
            f.write("time,q.a\n0,")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(getattr(tj, writer), "write", dies_midway)
    if writer == "csv":
        monkeypatch.setattr(tj.csv_text, "fits", lambda names, data: False)
    with pytest.raises(InputError, match="out.csv: cannot write: No space left"):
        write_trajectory(target, *table())
    assert target.read_text() == "old contents\n"
    assert os.listdir(tmp_path) == ["out.csv"]


def test_successful_write_replaces_and_cleans_up(tmp_path):
    target = tmp_path / "out.parquet"
    target.write_text("old")
    names, data = table()
    write_trajectory(target, names, data)
    assert os.listdir(tmp_path) == ["out.parquet"]
    assert np.array_equal(read_trajectory(target).data, data)


def test_output_folder_must_exist(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        write_trajectory(tmp_path / "nope" / "t.csv", *table())


def test_unsupported_output_extension(tmp_path):
    with pytest.raises(InputError) as info:
        write_trajectory(tmp_path / "t.txt", *table())
    assert "t.txt" in str(info.value) and ".csv" in str(info.value) and ".parquet" in str(info.value)
    assert os.listdir(tmp_path) == []


def test_write_checks_shapes_and_names(tmp_path):
    with pytest.raises(InputError, match="shape"):
        write_trajectory(tmp_path / "t.csv", ["time", "q.a"], np.zeros((3, 3)))
    with pytest.raises(InputError, match="duplicate.*'q.a'"):
        write_trajectory(tmp_path / "t.csv", ["time", "q.a", "q.a"], np.zeros((3, 3)))
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------- errors

def test_missing_file(tmp_path):
    _, message = error_of(tmp_path / "nope.csv")
    assert "nope.csv" in message and "no such file" in message


@pytest.mark.parametrize("text", ["", "\n\n", "  \n"])
def test_empty_file(tmp_path, text):
    _, message = error_of(write_text(tmp_path / "t.csv", text))
    assert message.startswith(f"{tmp_path / 't.csv'}: empty file")


def test_empty_parquet_file(tmp_path):
    _, message = error_of(write_text(tmp_path / "t.parquet", ""))
    assert "t.parquet" in message and "empty" in message


def test_damaged_parquet_metadata_is_a_trajectory_error(tmp_path):
    path = tmp_path / "t.parquet"
    tj.write_trajectory(path, ["time", "q.a"], np.zeros((3, 2)))
    path.write_bytes(path.read_bytes().replace(b"q.a", b"\xf1.a"))  # a column name that is not UTF-8
    _, message = error_of(path)
    assert message.startswith(f"{path}: cannot be read as Parquet")


def test_header_only(tmp_path):
    err, message = error_of(write_text(tmp_path / "t.csv", "time,q.a\n"))
    assert err.line == 1
    assert message == f"{tmp_path / 't.csv'}:1: header only, no data rows; expected one row per sample"


@pytest.mark.parametrize("row, line", [("0,1,2", 3), ("0", 3)])
def test_ragged_rows_name_the_line(tmp_path, row, line):
    path = write_text(tmp_path / "t.csv", f"time,q.a\n0,1\n{row}\n2,3\n")
    err, message = error_of(path)
    assert err.line == line
    assert message.startswith(f"{path}:{line}: ")
    assert "header has 2 columns" in message


def test_duplicate_column_names(tmp_path):
    path = write_text(tmp_path / "t.csv", "time,q.a,q.b,q.a\n0,1,2,3\n")
    _, message = error_of(path)
    assert message.startswith(f"{path}:1: ") and "duplicate" in message and "'q.a'" in message


def test_non_numeric_value_names_line_and_column(tmp_path):
    path = write_text(tmp_path / "t.csv", "time,q.a,q.b\n0,1,2\n1,2,3\n2,3,oops\n")
    err, message = error_of(path, required=["q.b"])
    assert (err.line, err.column) == (4, "q.b")
    assert message == f"{path}:4: column 'q.b': 'oops' is not a number"
    # a text column that is not needed does not stop the reading; using it raises the same error
    traj = read_trajectory(path)
    assert traj.names == ["time", "q.a"] and traj.has("q.b") and list(traj.unusable) == ["q.b"]
    assert traj.unusable["q.b"] == message
    with pytest.raises(TrajectoryError, match="'oops' is not a number"):
        traj.columns(["q.a", "q.b"])


def test_empty_value_names_line_and_column(tmp_path):
    path = write_text(tmp_path / "t.csv", "time,q.a,q.b\n0,1,2\n1,,3\n")
    err, message = error_of(path, required=["q.a"])
    assert (err.line, err.column) == (3, "q.a")
    assert "empty value" in message


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-inf", "1e400"])
def test_non_finite_values_name_first_line_and_column(tmp_path, bad):
    # the later column of the earlier row wins over the earlier column of a later row
    path = write_text(tmp_path / "t.csv", f"time,q.a,q.b\n0,1,2\n1,2,{bad}\n2,{bad},3\n")
    err, message = error_of(path, required=["q.a", "q.b"])
    assert (err.line, err.column) == (3, "q.b")
    assert message.startswith(f"{path}:3: column 'q.b': ") and "not finite" in message


def test_line_numbers_count_blank_lines(tmp_path):
    path = write_text(tmp_path / "t.csv", "time,q.a\n0,1\n\n1,2\n\n\n2,nan\n3,4\n")
    err, _ = error_of(path, required=["q.a"])
    assert err.line == 7
    path = write_text(tmp_path / "u.csv", "\ntime,q.a\n0,1\n\n0,2\n")
    traj = read_trajectory(path)
    with pytest.raises(TrajectoryError) as info:
        check_increasing_time(traj)
    assert info.value.line == 5


def test_trailing_blank_lines_are_fine(tmp_path):
    traj = read_trajectory(write_text(tmp_path / "t.csv", "time,q.a\n0,1\n1,2\n\n\n"))
    assert len(traj) == 2 and traj.locate(1) == {"line": 3}


def test_missing_time_column_lists_what_was_found(tmp_path):
    names = [f"q.j{i}" for i in range(12)]
    path = tmp_path / "t.csv"
    write_trajectory(path, names, np.zeros((2, 12)))
    err, message = error_of(path)
    assert "'time'" in message and "found 12" in message
    assert "'q.j7'" in message and "'q.j8'" not in message and "(4 more)" in message
    assert message.startswith(str(path))


def test_required_missing_names_missing_and_found(tmp_path):
    names, data = table(n_q=2)
    path = tmp_path / "t.csv"
    write_trajectory(path, names, data)
    wanted = ["time"] + [f"tau.j{i}" for i in range(10)]
    _, message = error_of(path, required=wanted)
    assert "missing 10 columns" in message
    assert "'tau.j0'" in message and "'tau.j7'" in message and "'tau.j8'" not in message
    assert "(2 more)" in message
    assert "found 5: 'time', 'q.j0', 'q.j1', 'qd.j0', 'qd.j1'" in message


def test_require_columns_after_reading(tmp_path):
    names, data = table(n_q=2)
    path = tmp_path / "t.csv"
    write_trajectory(path, names, data)
    traj = read_trajectory(path)
    require_columns(traj, ["q.j0", "qd.j1"])
    with pytest.raises(TrajectoryError, match=r"missing column 'q\.j2'.*did you mean"):
        require_columns(traj, ["q.j0", "q.j2"])


def test_check_increasing_time(tmp_path):
    path = write_text(tmp_path / "t.csv", "q.a,time\n0,0\n0,0.1\n0,0.2\n0,0.2\n0,0.1\n")
    traj = read_trajectory(path)
    with pytest.raises(TrajectoryError) as info:
        check_increasing_time(traj)
    assert info.value.line == 5 and info.value.column == "time"
    assert str(info.value).startswith(f"{path}:5: column 'time': ")
    check_increasing_time(read_trajectory(write_text(tmp_path / "u.csv", "time\n0\n1\n")))


def test_input_without_extension_is_sniffed(tmp_path):
    # e.g. /dev/fd/63 from the shell's <(zcat traj.csv.gz)
    assert read_trajectory(write_text(tmp_path / "fifo", "time\n0\n")).names == ["time"]
    path = tmp_path / "t.parquet"
    write_trajectory(path, ["time"], np.zeros((1, 1)))
    os.rename(path, tmp_path / "pq")
    assert len(read_trajectory(tmp_path / "pq")) == 1


def test_output_that_is_a_folder(tmp_path):
    (tmp_path / "out.csv").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        write_trajectory(tmp_path / "out.csv", *table())


def test_unsupported_input_extension(tmp_path):
    _, message = error_of(write_text(tmp_path / "t.txt", "time\n0\n"))
    assert "t.txt" in message and ".csv" in message


def test_not_a_parquet_file(tmp_path):
    _, message = error_of(write_text(tmp_path / "t.parquet", "time\n0\n"))
    assert message.startswith(f"{tmp_path / 't.parquet'}: cannot be read as Parquet")


def test_parquet_errors_name_row_and_column(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"time": [0.0, 1.0, 2.0], "q.a": [1.0, None, 3.0]}), path)
    err, message = error_of(path, required=["q.a"])
    assert (err.row, err.column) == (2, "q.a")
    assert message.startswith(f"{path}: row 2, column 'q.a': ")
    pq.write_table(pa.table({"time": [0.0, 1.0, 2.0], "q.a": [1.0, 2.0, np.inf]}), path)
    err, message = error_of(path, required=["q.a"])
    assert (err.row, err.column) == (3, "q.a") and "not finite" in message
    pq.write_table(pa.table({"time": [0.0], "q.a": ["x"]}), path)
    _, message = error_of(path, required=["q.a"])
    assert read_trajectory(path).names == ["time"]  # not needed: set aside
    assert "column 'q.a'" in message and "expected numbers" in message
    pq.write_table(pa.table({"time": pa.array([], pa.float64())}), path)
    _, message = error_of(path)
    assert "no data rows" in message


def test_trajectory_rejects_mismatched_shapes():
    with pytest.raises(InputError):
        Trajectory(["time", "q.a"], np.zeros((3, 3)))


# -- large files: read in place, written on several threads --------------------------------

def test_header_longer_than_the_first_read(tmp_path):
    """The header is looked for in the first 64 KiB; a longer one (thousands of columns) still reads."""
    names = ["time"] + [f"q.joint_with_a_long_name_{k:05d}" for k in range(3000)]
    assert len(",".join(names)) > tj.csv._HEAD_BYTES
    data = np.arange(3 * len(names), dtype=float).reshape(3, -1)
    path = tmp_path / "wide.csv"
    write_trajectory(path, names, data)
    traj = read_trajectory(path)
    assert traj.names == names and np.array_equal(traj.data, data)
    lines = path.read_text().split("\n")
    lines[2] = "x" + lines[2][lines[2].index(","):]  # an error there still names its line
    path.write_text("\n".join(lines))
    err, _ = error_of(path)
    assert err.line == 3


def test_line_of_a_later_error_is_found_from_the_file(tmp_path):
    """A file that reads cleanly gets its row-to-line map only when an error needs it."""
    path = write_text(tmp_path / "t.csv", "\n\ntime,q.a\n0,1\n\n1,2\n1,3\n")
    traj = read_trajectory(path)
    assert isinstance(traj._lines, tj.csv.RowLines) and traj._lines._value is None
    with pytest.raises(TrajectoryError) as info:
        check_increasing_time(traj)
    assert info.value.line == 7


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_large_csv_is_the_same_on_any_number_of_threads(tmp_path, monkeypatch, threads):
    """More rows than one block: formatted in blocks on several threads, written in order."""
    monkeypatch.setenv("DYN_THREADS", threads)
    n = 2 * tj.csv._WRITE_BLOCK_ROWS + 123
    values = awkward_floats(n)
    data = np.column_stack([np.arange(n) * 1e-3, values[:n], -values[:n]])
    names = ["time", "q.a", "q.b c"]  # a name that needs quotes
    write_trajectory(tmp_path / "big.csv", names, data)
    traj = read_trajectory(tmp_path / "big.csv")
    assert traj.names == names and np.array_equal(traj.data, data)
    monkeypatch.setenv("DYN_THREADS", "1")
    write_trajectory(tmp_path / "one.csv", names, data)
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "big.csv").read_bytes()


def test_large_csv_to_stdout_on_several_threads(monkeypatch, capfdbinary, tmp_path):
    monkeypatch.setenv("DYN_THREADS", "2")
    n = 2 * tj.csv._WRITE_BLOCK_ROWS + 1
    data = np.column_stack([np.arange(n) * 1e-3, np.sin(np.arange(n))])
    write_trajectory("-", ["time", "q.a"], data)
    out = capfdbinary.readouterr().out
    write_trajectory(tmp_path / "ref.csv", ["time", "q.a"], data)
    assert out == (tmp_path / "ref.csv").read_bytes()


def test_unneeded_column_with_any_bytes_is_set_aside(tmp_path):
    """Text in any encoding (here invalid UTF-8) in a column nobody needs does not stop the reading."""
    path = tmp_path / "t.csv"
    path.write_bytes(b"time,q.a,label\n0,1,\xff\xfeab\n1,2,ok\n")
    traj = read_trajectory(path)
    assert traj.names == ["time", "q.a"] and np.array_equal(traj.columns(["q.a"]), [[1.0], [2.0]])
    err, message = error_of(path, required=["label"])
    assert (err.line, err.column) == (2, "label") and "is not a number" in message


def test_found_counts_every_column_of_the_file_text_ones_too(tmp_path):
    """A ROS export's text columns (frame_id) are not numbers, but the file has them: "found N"
    counts and names what the file holds, not what could be read as numbers."""
    path = write_text(tmp_path / "t.csv", "time,frame_id,q.a,note\n0,base,1,x\n1,base,2,y\n")
    _, message = error_of(path, required=["time", "q.a", "q.b"])
    assert "found 4: 'time', 'q.a', 'frame_id', 'note'" in message


# ------------------------------------------------------------------ read ahead

def pending(path):
    """Whether a read ahead of `path` waits to be taken."""
    return any(key[2] == str(path) for key in tj._ahead)


def plain_read(path):
    traj = read_trajectory(path)
    return traj.names, np.array(traj.data), traj.path


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_file_read_ahead_is_the_file_read_then_and_is_taken_once(tmp_path, suffix):
    names, data = table(5000)
    path = tmp_path / f"t{suffix}"
    write_trajectory(path, names, data)
    expected = plain_read(path)
    assert tj.read_ahead(path)
    assert pending(path)
    traj = read_trajectory(path)
    assert (traj.names, traj.path) == (expected[0], expected[2])
    assert np.array_equal(traj.data, expected[1])
    assert not pending(path)  # taken: the next read reads the file
    traj.data[:, 1] = 0.0  # the caller owns the table it was given
    assert np.array_equal(read_trajectory(path).data, expected[1])


def test_an_error_found_ahead_is_raised_where_the_file_is_read(tmp_path):
    path = write_text(tmp_path / "t.csv", "time,q.a\n0,1\n0.1,2,3\n")
    _, expected = error_of(path)
    assert tj.read_ahead(path)
    _, message = error_of(path)
    assert message == expected
    assert "t.csv:3: 3 values" in message


def test_a_file_changed_after_it_was_read_ahead_is_read_again(tmp_path):
    names, data = table(50)
    path = tmp_path / "t.csv"
    write_trajectory(path, names, data)
    assert tj.read_ahead(path)
    write_trajectory(path, names, data + 1.0)  # replaced (another inode): the read ahead is stale
    assert np.array_equal(read_trajectory(path).data, data + 1.0)
    assert not pending(path)


@pytest.mark.parametrize("name", ["-", "missing.csv", "folder.csv", "t.bag", "t.txt", "empty.parquet"])
def test_what_is_not_a_regular_trajectory_file_is_not_read_ahead(tmp_path, name):
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "t.bag").write_bytes(b"#ROSBAG V2.0\n")
    (tmp_path / "t.txt").write_text("time\n0\n")
    (tmp_path / "empty.parquet").write_bytes(b"")
    assert tj.read_ahead(name if name == "-" else tmp_path / name) is False
    assert not pending(name if name == "-" else tmp_path / name)


def test_a_new_read_ahead_drops_one_not_taken(tmp_path):
    names, data = table(50)
    for name in ("a.csv", "b.csv"):
        write_trajectory(tmp_path / name, names, data)
    assert tj.read_ahead(tmp_path / "a.csv") and tj.read_ahead(tmp_path / "b.csv")
    assert not pending(tmp_path / "a.csv") and pending(tmp_path / "b.csv")
    assert np.array_equal(read_trajectory(tmp_path / "a.csv").data, data)
    assert pending(tmp_path / "b.csv")
    read_trajectory(tmp_path / "b.csv")
    assert not pending(tmp_path / "b.csv")
