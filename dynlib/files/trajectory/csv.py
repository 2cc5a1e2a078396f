"""CSV trajectory files: reading and writing, with pyarrow's columnar CSV reader and writer.

Reading: the header is read first with the csv module (it may be quoted, span lines,
or start with a byte-order mark); then Arrow parses every column as float64 in
parallel. A column Arrow cannot parse as numbers is read again as bytes and set
aside (any encoding, invalid UTF-8 included), its error found with the csv module
only when the column is used. Errors name the line as a user counts them (the
header is line 1, the first data row line 2): a file that reads cleanly never pays
for the line count, which a second pass works out when an error needs it
(`RowLines`). A file Arrow refuses is diagnosed line by line (`_diagnose_csv`).

Writing: Arrow formats doubles in the shortest form that reads back to the same
double (``repr``-exact); a large table is formatted in blocks of rows on several
cores and the blocks written in order.
"""
from __future__ import annotations

import collections
import contextlib
import csv
import io
import re

import numpy as np

from ...errors import TrajectoryError
from ..._numba.parallel import threads
from .in_memory import Trajectory, arrow_input, check_names, from_arrow

_HEAD_BYTES = 1 << 16  # read first for the header; the whole file only when the header is longer
_WRITE_BLOCK_ROWS = 1 << 15  # rows formatted per task when a CSV is written on several cores
_WRITE_THREADS = 4
# the csv module refuses a field over 128 kB (`csv.field_size_limit`, a limit of the process): a long
# note, a log line or a frame id in a column dyn does not need was an internal error. dyn holds the
# file's bytes already, so a long cell costs nothing more: the limit is raised once, for every reader
if csv.field_size_limit() < 2**31 - 1:
    csv.field_size_limit(2**31 - 1)


def read_file(path, display, size=-1) -> bytes:
    """The first `size` bytes of a file (all of it by default), as a TrajectoryError when unreadable."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as exc:
        raise TrajectoryError(f"cannot read: {exc.strerror}", file=display) from None



class RowLines:
    """The line of each row of a CSV file, worked out when an error first needs
    one: it takes a second pass over the file (counting line breaks, or the csv
    module when blank lines intervene), which a file that reads cleanly never pays.
    The pass streams: a file on disk is never held in memory whole."""

    __slots__ = ("_source", "_n_rows", "_value")

    def __init__(self, source, n_rows):
        self._source, self._n_rows, self._value = source, n_rows, None

    def resolve(self):
        """An int (row r is on line r + value) or an array (the line of each row)."""
        if self._value is None:
            consecutive = _rows_are_consecutive_lines(self._source, self._n_rows)
            self._value = 2 if consecutive else _lines_of_rows(self._source)
            self._source = None
        return self._value


@contextlib.contextmanager
def _text(source):
    """`source` (bytes, or the path of a file) as a text stream for the csv module: decoded
    as UTF-8 (a byte-order mark dropped, bad bytes replaced) as it is read, never whole."""
    raw = io.BytesIO(source) if isinstance(source, (bytes, bytearray, memoryview)) else open(source, "rb")
    with raw, io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="") as text:
        yield text


def _records(source):
    """(line, fields) of each non-blank record of the CSV `source`, streamed; `line` is the
    line the record ends on, as a user counts them."""
    with _text(source) as text:
        reader = csv.reader(text)
        for fields in reader:
            if fields:
                yield reader.line_num, fields


# ------------------------------------------------------------------- reading

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


def header(display, buf, path=None) -> list:
    """The column names of a CSV source: `buf` (bytes), or the file `path` when it is None."""
    if buf is None:
        head = read_file(path, display, _HEAD_BYTES)
        found = _header(head, display, complete=len(head) < _HEAD_BYTES)
        if found is not None:
            return found[0]
        buf = read_file(path, display)
    return _header(buf, display)[0]


def _lines_of_rows(source):
    """Physical line number of every data row (blank lines skipped), csv-module exact."""
    lines = np.fromiter((line for line, _ in _records(source)), dtype=np.int64)
    return lines[1:]  # the header's line first


def _rows_are_consecutive_lines(source, n_rows: int) -> bool:
    """Whether the header is line 1 and row r is line r + 2: no blank lines before
    or between rows (trailing ones do not matter), no line breaks inside quotes.
    Counts the line breaks in blocks (a file on disk is never read whole)."""
    breaks, pending = 0, 0  # line breaks so far, and those after the last non-blank byte
    with (io.BytesIO(source) if isinstance(source, (bytes, bytearray, memoryview)) else open(source, "rb")) as f:
        while True:
            block = f.read(1 << 22)
            if not block:
                break
            body = block.rstrip(b" \t\r\n")
            if body:
                breaks += pending + block.count(b"\n", 0, len(body))
                pending = block.count(b"\n", len(body))
            else:
                pending += block.count(b"\n")
    return breaks == n_rows  # one line break per data row


def _is_number(text: str) -> bool:
    """What Arrow's CSV float parser accepts (Python's float() also takes '1_0')."""
    if "_" in text:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def _diagnose_csv(source, display, arrow_message: str) -> TrajectoryError:
    """The error at the first bad line, found with the csv module. Runs only
    after pyarrow has refused the file; it streams the file and stops at the
    first bad row (bounded memory, whatever the file's size)."""
    header = None
    for line, fields in _records(source):
        if header is None:
            header = fields
            continue
        if len(fields) != len(header):
            count = f"{len(fields)} value" + ("" if len(fields) == 1 else "s")
            return TrajectoryError(f"{count}, but the header has {len(header)} columns",
                                   file=display, line=line)
    if header is not None and "Empty CSV" in arrow_message:
        return TrajectoryError("header only, no data rows; expected one row per sample", file=display, line=1)
    message = arrow_message.splitlines()[0] if arrow_message else "cannot be read as CSV"
    return TrajectoryError(f"cannot be read as CSV ({message})", file=display)


def quoted_cell(value: str, show: int = 60) -> str:
    """A cell quoted for a message: its first `show` characters and its length when it is longer
    (a 200 kB cell is not a 200 kB error line)."""
    return repr(value) if len(value) <= show else f"{value[:show]!r}… ({len(value)} characters)"


def _text_error(source, display, name):
    """A function giving the error of text column `name`: its first cell that is not
    a number, found with the csv module (on a second, streamed pass, only when asked)."""
    def make():
        k = None
        for line, fields in _records(source):
            if k is None:
                k = fields.index(name) if name in fields else -1
                continue
            value = fields[k] if 0 <= k < len(fields) else ""
            if value.strip() and not _is_number(value):
                return TrajectoryError(f"{quoted_cell(value)} is not a number", file=display, line=line, column=name)
        return TrajectoryError("holds text, not numbers", file=display, column=name)
    return make


def _check_encoding(head: bytes, display):
    """A UTF-16 or UTF-32 file, or a binary one, named as such (Arrow reads UTF-8 only and
    would report a bad line far into the file)."""
    name = None
    for bom, enc in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                     (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if head.startswith(bom):
            name = enc
            break
    sample = head[:4096]
    if name is None and b"\x00" in sample:
        half = len(sample) // 2
        # ASCII text in UTF-16 without a byte-order mark: every other byte is zero
        if half and max(sample[0::2].count(0), sample[1::2].count(0)) >= 0.9 * half:
            name = "UTF-16"
        else:
            raise TrajectoryError("the file is binary, expected CSV text", file=display)
    if name:
        raise TrajectoryError(f"the file is {name} text; dyn reads CSV in UTF-8 (or ASCII): convert it, "
                              f"e.g. iconv -f {name} -t UTF-8 IN.csv > OUT.csv", file=display)


_ARROW_COLUMN = re.compile(r"In CSV column #(\d+)")


_SEPARATORS = {";": ("semicolons", "';'"), "\t": ("tabs", "'\\t'"), "|": ("vertical bars", "'|'")}


def _check_separator(names, display, line):
    """A header that is one name holding ';', tabs or '|': a file with another separator."""
    if len(names) != 1:
        return
    for sep, (word, quoted) in _SEPARATORS.items():
        if sep in names[0]:
            raise TrajectoryError(f"the header's names are separated by {word}, not commas; dyn reads "
                                  f"comma-separated CSV: convert it, e.g. tr {quoted} ',' < IN.csv > OUT.csv",
                                  file=display, line=line)


def read(display, buf, path=None) -> Trajectory:
    """From `buf` (bytes) or, when it is None, the regular file `path`."""
    import pyarrow as pa  # here, not at the top: a small CSV is written without Arrow (csv_text)
    import pyarrow.csv as pa_csv

    if buf is None:
        source = str(path)
        head = read_file(path, display, _HEAD_BYTES)
        _check_encoding(head, display)
        found = _header(head, display, complete=len(head) < _HEAD_BYTES)
        if found is None:  # a header longer than _HEAD_BYTES
            buf = read_file(path, display)
            source = buf
    else:
        source = buf
        _check_encoding(buf[:_HEAD_BYTES], display)
    names, header_line = found if buf is None else _header(buf, display)
    check_names(names, display, line=header_line)
    _check_separator(names, display, header_line)
    text = set()  # columns Arrow could not read as numbers: read again as bytes (any encoding), set aside
    while True:
        convert = pa_csv.ConvertOptions(
            column_types={n: pa.binary() if n in text else pa.float64() for n in names},
            null_values=[""], strings_can_be_null=False, quoted_strings_can_be_null=False)
        try:
            with (pa.BufferReader(buf) if buf is not None else arrow_input(path)) as stream:
                table = pa_csv.read_csv(stream, convert_options=convert)
            break
        except pa.ArrowInvalid as exc:
            found = _ARROW_COLUMN.search(str(exc))
            k = int(found.group(1)) if found else -1
            if 0 <= k < len(names) and names[k] not in text:
                text.add(names[k])
                continue
            raise _diagnose_csv(source, display, str(exc)) from None
        except OSError as exc:  # the file went away or became unreadable since it was opened
            raise TrajectoryError(f"cannot read: {exc.strerror or exc}", file=display) from None
    types = [pa.binary() if n in text else pa.float64() for n in names]
    if table.column_names != names or table.schema.types != types:
        # pyarrow split the header differently from the csv module: let the
        # line-by-line reader find and name the problem.
        raise _diagnose_csv(source, display, "unexpected header")
    n = table.num_rows
    if n == 0:
        raise TrajectoryError("header only, no data rows; expected one row per sample",
                              file=display, line=header_line)
    # rows are consecutive lines unless blank lines intervene (then map them exactly);
    # worked out now for bytes in memory, on the first error for a file on disk
    lines = RowLines(source, n)
    if buf is not None:
        lines = lines.resolve()
    unusable = {name: _text_error(source, display, name) for name in names if name in text}
    kept = [(name, col) for name, col in zip(names, table.columns) if name not in text]
    del table
    return from_arrow(kept, display, lines, unusable, "empty value; expected a number")



# ------------------------------------------------------------------- writing

def write(table: pa.Table, sink) -> None:
    """Write an Arrow table of float64 columns to `sink` (a path or a binary stream) as CSV."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

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

