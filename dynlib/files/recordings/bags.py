"""ROS bags: ROS 1 ``.bag``, ROS 2 bags (a folder with ``metadata.yaml``, or one ``.db3``
(sqlite3) or ``.mcap`` file), read with `rosbags` (pure Python: no ROS needed).

The ``sensor_msgs/JointState`` messages of one topic are read one by one, in log
order, into arrays allocated once from the bag's message count (grown by doubling
when a bag's index undercounts): a one-hour 1 kHz recording does not need the
file in memory, only the output's (N, 1 + 3·n) float64 table and two int64 stamps
per message.

Decoding: a JointState's layout is fixed (ROS 1: little-endian, packed; ROS 2:
CDR, each field aligned to its size from the start of the payload), and a driver
sends the same names in the same order in every message. So the first message of
each layout (where the names start, the names' bytes, the array lengths) is
decoded field by field (`_Layout.parse`), which maps the robot's joints to the
message's entries by name; every further message with the same names' bytes is
decoded with one precompiled `struct` call and one tuple permutation. A message
that lists the joints in another order, or other joints, gets a layout of its
own; one that lacks a joint of the robot is an error naming the joint and the
message (dyn does not guess). Extra joints (a gripper) are ignored.

Time: ``header.stamp``; when every stamp is zero (a driver that does not stamp),
the log time (the bag's receive time), and the reader says so; ``--clock log`` (`clock_name`)
chooses the log time. The rows are in the bag's log order: in a bag whose log time is the
header stamp (re-recorded, or recorded on sim time) a sample stamped early is logged, and
read, where its stamp puts it (`dynlib.files.recordings.clock.rhythm_break` finds it).
"""
from __future__ import annotations

import contextlib
import operator
import struct
from pathlib import Path

import numpy as np

from ..columns import EFFORT, TIME, coordinate_columns
from ...errors import DynError, InputError, TrajectoryError, closest
from ..trajectory import Trajectory
from ..trajectory.in_memory import listing
from . import clock

JOINT_STATE = "sensor_msgs/msg/JointState"
SUFFIXES = {".bag": "ROS 1 bag", ".db3": "ROS 2 bag (sqlite3)", ".mcap": "ROS 2 bag (MCAP)"}
_MAGIC = {b"#ROSBAG V2.0": ".bag", b"\x89MCAP": ".mcap", b"SQLite format 3\x00": ".db3"}
_PARTS = ("q", "qd", EFFORT)  # position, velocity, effort


def bag_kind(path) -> str | None:
    """The suffix a bag at `path` has by its content ('.bag', '.db3', '.mcap'; a ROS 2
    folder: '.db3'/'.mcap' of its files, or 'folder'), or None when it is not a bag."""
    p = Path(path)
    try:
        if p.is_dir():
            return "folder" if (p / "metadata.yaml").is_file() else None
        if not p.is_file():  # a pipe (<(cat …), a FIFO) is read once, by the caller: not opened here
            return None
        with open(p, "rb") as f:
            head = f.read(16)
    except OSError:
        return p.suffix.lower() if p.suffix.lower() in SUFFIXES else None
    for magic, suffix in _MAGIC.items():
        if head.startswith(magic):
            return suffix
    return p.suffix.lower() if p.suffix.lower() in SUFFIXES and not head else None


def is_bag_magic(head: bytes) -> bool:
    return any(head.startswith(m) for m in _MAGIC)


# ------------------------------------------------------------------ decoding

class _Layout:
    """Where a JointState's fields are, for the messages whose names' bytes are `blob` at
    `start`: the `tail` struct reads the three arrays (with their counts) from `stop`,
    and `put` lists (output columns slice, getter of the tuple's entries) for the parts
    present; `counts` are the arrays' lengths (at tuple positions `at`)."""

    __slots__ = ("start", "stop", "blob", "end", "tail", "counts", "at", "put", "names")

    @classmethod
    def parse(cls, data, start, cdr, endian, joints, where):
        """The layout of message `data`, its names starting at `start`. `joints`: the robot's
        joint names in output order; `where`: how to name this message in an error."""
        base = 4 if cdr else 0  # CDR aligns from the start of the payload, after its 4-byte header
        unpack_u32 = struct.Struct(endian + "I").unpack_from

        def align(pos, n):
            return pos if not cdr else base + ((pos - base + n - 1) & -n)

        pos = start
        try:
            (count,) = unpack_u32(data, pos)
            pos += 4
            names = []
            for _ in range(count):
                pos = align(pos, 4)
                (size,) = unpack_u32(data, pos)
                raw = bytes(data[pos + 4:pos + 4 + size])
                names.append((raw[:-1] if cdr and raw.endswith(b"\0") else raw).decode("utf-8", "replace"))
                pos += 4 + size
            stop = pos
            fmt, counts, at, index = [endian], [], [], 0
            for _ in _PARTS:
                p = align(pos, 4)
                fmt.append(f"{p - pos}x" if p > pos else "")
                (n,) = unpack_u32(data, p)
                pos = p + 4
                fmt.append("I")
                at.append(index)
                index += 1
                if n:
                    q = align(pos, 8)
                    fmt.append(f"{q - pos}x" if q > pos else "")
                    fmt.append(f"{n}d")
                    pos = q + 8 * n
                counts.append((n, index))
                index += n
            if pos != len(data):
                raise struct.error(f"{len(data) - pos} bytes after the effort array")
            tail = struct.Struct("".join(fmt))
        except (struct.error, UnicodeError) as exc:
            raise TrajectoryError(f"{where}: not a sensor_msgs/JointState as ROS writes it ({exc})") from None
        found = {n: i for i, n in enumerate(names)}
        missing = [j for j in joints if j not in found]
        if missing:
            raise TrajectoryError(f"{where} names no joint {missing[0]!r}"
                                  f"{f' (nor {len(missing) - 1} more)' if len(missing) > 1 else ''}; "
                                  f"it names {listing(names, 8)}; dyn does not guess a missing joint"
                                  f"{' (' + closest(missing[0], names) + ')' if names else ''}")
        if len(found) != len(names):
            dup = next(n for i, n in enumerate(names) if names.index(n) != i)
            raise TrajectoryError(f"{where} names joint {dup!r} twice")
        put = []
        nj = len(joints)
        for k, (part, (n, first)) in enumerate(zip(_PARTS, counts)):
            if n == 0:
                if part == "q":
                    raise TrajectoryError(f"{where} has names but no positions (its position array is empty)")
                continue
            if n != len(names):
                raise TrajectoryError(f"{where} has {len(names)} names but {n} {('positions', 'velocities', 'efforts')[k]}")
            idx = [first + found[j] for j in joints]
            get = operator.itemgetter(*idx) if nj > 1 else (lambda v, i=idx[0]: (v[i],))
            put.append((slice(1 + k * nj, 1 + (k + 1) * nj), get))
        self = cls()
        self.start, self.stop, self.blob, self.end = start, stop, bytes(data[start:stop]), len(data)
        self.tail, self.counts, self.at, self.put = tail, tuple(n for n, _ in counts), tuple(at), put
        self.names = names
        if len(put) == 3 and all(s.start == 1 + k * nj for k, (s, _) in enumerate(put)):
            both = [first + found[j] for (n, first) in counts for j in joints]
            self.put = [(slice(1, 1 + 3 * nj), operator.itemgetter(*both))]
        return self


class _Decoder:
    """Decodes the JointStates of one bag (ROS 1 or CDR) into rows of an output table."""

    _HEAD1 = struct.Struct("<3I")  # ROS 1: seq, stamp secs, nsecs; then frame_id's length
    _HEADCDR = {"<": struct.Struct("<iII"), ">": struct.Struct(">iII")}  # sec, nanosec, len(frame_id)

    def __init__(self, ros2, joints, describe):
        self.ros2, self.joints, self.describe = ros2, list(joints), describe
        self.layouts, self.last = {}, None

    def header(self, data, k):
        """(stamp in ns, where the names start, endian)."""
        if not self.ros2:
            if len(data) < 16:
                raise TrajectoryError(f"{self.describe(k, None)}: {len(data)} bytes, too short for a JointState")
            _, sec, nsec, flen = struct.unpack_from("<4I", data, 0)
            return sec * 1_000_000_000 + nsec, 16 + flen, "<"
        if len(data) < 16:
            raise TrajectoryError(f"{self.describe(k, None)}: {len(data)} bytes, too short for a JointState")
        kind = data[1]
        if data[0] != 0 or kind not in (0, 1):
            raise TrajectoryError(f"{self.describe(k, None)}: CDR representation 0x{data[0]:02x}{kind:02x} "
                                  "(dyn reads plain CDR, 0x0000 and 0x0001)")
        endian = "<" if kind == 1 else ">"
        sec, nsec, flen = self._HEADCDR[endian].unpack_from(data, 4)
        return sec * 1_000_000_000 + nsec, 4 + ((12 + flen + 3) & -4), endian

    def layout(self, data, start, endian, k, stamp):
        key = (start, bytes(data[start:start + 4]), len(data))
        lay = None
        for cand in self.layouts.get(key, ()):
            if data[start:cand.stop] == cand.blob:
                lay = cand
                break
        if lay is None:
            lay = _Layout.parse(data, start, self.ros2, endian, self.joints, self.describe(k, stamp))
            self.layouts.setdefault(key, []).append(lay)
        self.last = lay
        return lay


def read_bag(path, model, *, topic=None, columns=None, notes=None, clock_name="header"):
    """(trajectory, first stamp, offsets in ns, topic, stamped) of the JointState topic of the bag at `path`.

    The trajectory has ``time`` (to be filled by the caller), ``q.<joint>`` and, when the
    messages carry them, ``qd.<joint>`` and ``effort.<joint>``, one row per message, in the
    bag's log order. `clock_name`: ``header`` (``header.stamp``; the log time when every
    stamp is zero) or ``log`` (the bag's log time, when each message was recorded).
    `stamped`: whether the time is the header stamps: 'header', 'header=log' when the bag's log
    time is the header stamp of every message (a re-recorded or sim-time bag), or '' (the log time).
    """
    from rosbags.highlevel import AnyReader

    display = str(path)
    if columns:
        raise InputError(f"--columns {','.join(columns)}: a bag names its joints and stamps its messages, so "
                         "joints are matched by the names in each JointState and time is header.stamp; "
                         "leave --columns out", key="--columns")
    joints = _joints(model, display)
    p = Path(path)
    kind = bag_kind(p)
    if kind in SUFFIXES and p.suffix.lower() != kind:
        raise TrajectoryError(f"is a {SUFFIXES[kind]} named {p.suffix or 'without a suffix'}: rosbags needs the "
                              f"suffix {kind} (rename it, e.g. {p.with_suffix(kind).name})", file=display)
    errors = _rosbags_errors()
    try:
        reader = AnyReader([p], default_typestore=_typestore())
        reader.open()
    except errors as exc:
        raise TrajectoryError(f"cannot be read as a ROS bag ({_first_line(exc)})", file=display) from None
    except Exception as exc:  # noqa: BLE001 - whatever a damaged file makes rosbags (or bz2, lz4, sqlite3) raise
        raise TrajectoryError(f"cannot be read as a ROS bag: {_damaged(exc, kind)}", file=display) from None
    try:
        return _read(reader, display, model, joints, topic, notes, clock_name, _size(p), kind)
    except errors as exc:
        raise TrajectoryError(f"cannot be read as a ROS bag ({_first_line(exc)})", file=display) from None
    finally:
        with contextlib.suppress(Exception):  # a damaged bag may fail to close too
            reader.close()


def _damaged(exc, kind_of_bag, where="") -> str:
    """What to say of an exception that rosbags or a decompressor raised reading a damaged file."""
    kind = type(exc).__name__ if type(exc).__name__ != "error" else f"{type(exc).__module__}.error"  # struct.error
    return (f"the file is damaged{where} ({kind}"
            f"{': ' + _first_line(exc) if str(exc).strip() else ''}); copy it again from the robot, or "
            f"repair it ({_REPAIR.get(kind_of_bag, _REPAIR['folder'])})")


_REPAIR = {".bag": "`rosbag reindex`", ".mcap": "`mcap recover`", ".db3": "`sqlite3 FILE .recover`",
           "folder": "`ros2 bag reindex`, `mcap recover`"}


def _messages(reader, conns, describe):
    """(log time, raw bytes) of the messages of `conns`, in log order; a damaged chunk, index or record
    (a bad bz2 or lz4 stream, an index pointing past a record, flipped bytes) is a TrajectoryError
    naming the message that could not be read, not whatever the library raised."""
    errors = _rosbags_errors()
    it = reader.messages(connections=conns)
    k = 0
    while True:
        try:
            _, logtime, data = next(it)
        except StopIteration:
            return
        except DynError:
            raise
        except Exception as exc:  # noqa: BLE001 - see the docstring
            where = describe(k, None).split(": ", 1)[1]
            if isinstance(exc, errors):
                raise TrajectoryError(f"cannot be read as a ROS bag at {where} ({_first_line(exc)})",
                                      file=describe.display) from None
            raise TrajectoryError(f"cannot be read as a ROS bag: {_damaged(exc, describe.kind, ' at ' + where)}",
                                  file=describe.display) from None
        yield logtime, data
        k += 1


def _size(path) -> int:
    """The bytes of the bag's files (a ROS 2 folder: every file in it)."""
    try:
        if path.is_dir():
            return sum(f.stat().st_size for f in path.iterdir() if f.is_file())
        return path.stat().st_size
    except OSError:
        return 0


def _first_rows(count, size, joints) -> int:
    """Rows to allocate first: the index's message count (a damaged or hostile ``metadata.yaml`` may say
    20 million, or 2**60, for a bag of 2000 messages), at most the messages the bag's bytes can hold
    uncompressed (a JointState of these joints is at least its header, names and positions); a
    compressed bag that holds more grows the table by doubling."""
    smallest = 16 + 4 + sum(4 + len(j.encode()) for j in joints) + 12 + 8 * len(joints)
    return max(min(count, size // smallest + 1), 1024)


def _read(reader, display, model, joints, topic, notes, clock_name, size, kind):
    conns = [c for c in reader.connections if c.msgtype == JOINT_STATE]
    topics = sorted({c.topic for c in conns})
    if topic is not None:
        if topic not in topics:
            others = sorted({f"{c.topic} ({c.msgtype})" for c in reader.connections if c.topic == topic})
            raise TrajectoryError(f"no JointState topic {topic!r}"
                                  f"{' (it is ' + others[0].split(' ', 1)[1] + ')' if others else ''}; "
                                  f"its JointState topics: {', '.join(topics) or 'none'}", file=display, key="--topic")
        chosen = topic
    elif not topics:
        found = sorted({f"{c.topic} ({c.msgtype})" for c in reader.connections})
        raise TrajectoryError(f"no sensor_msgs/JointState topic in this bag; it has {listing(found, 6)}", file=display)
    elif len(topics) > 1:
        raise TrajectoryError(f"{len(topics)} sensor_msgs/JointState topics: {', '.join(topics)}; choose one with "
                              "--topic", file=display)
    else:
        chosen = topics[0]
    conns = [c for c in conns if c.topic == chosen]
    count = sum(int(c.msgcount or 0) for c in conns)
    nj = len(joints)
    width = 1 + 3 * nj
    cap = _first_rows(count, size, joints)
    out = np.full((cap, width), np.nan)
    stamps = np.empty(cap, dtype=np.int64)
    logged = np.empty(cap, dtype=np.int64)

    def describe(k, stamp):
        when = "" if stamp is None else f", stamp {stamp // 1_000_000_000}.{stamp % 1_000_000_000:09d} s"
        return f"{display}: message {k + 1} of {chosen}{when}"
    describe.display, describe.kind = display, kind

    dec = _Decoder(reader.is2, joints, describe)
    k = 0
    last = None
    layouts = []  # (the message where a layout starts, the layout), in message order
    head1 = struct.Struct("<4I").unpack_from
    for logtime, data in _messages(reader, conns, describe):
        if k == cap:
            cap *= 2
            out = _grow(out, cap, np.nan)
            stamps, logged = _grow(stamps, cap), _grow(logged, cap)
        if not dec.ros2 and len(data) >= 16:  # the common case inline: ROS 1
            _, sec, nsec, flen = head1(data, 0)
            stamp, start, endian = sec * 1_000_000_000 + nsec, 16 + flen, "<"
        else:
            stamp, start, endian = dec.header(data, k)
        if (last is None or start != last.start or len(data) != last.end
                or data[start:last.stop] != last.blob):
            last = dec.layout(data, start, endian, k, stamp)
            layouts.append((k, last))
        vals = last.tail.unpack_from(data, last.stop)
        row = out[k]
        for sl, get in last.put:
            row[sl] = get(vals)
        stamps[k] = stamp
        logged[k] = logtime
        k += 1
    if k == 0:
        raise TrajectoryError(f"no message on {chosen}", file=display)
    out, stamps, logged = out[:k], stamps[:k], logged[:k]
    stamps, stamped = _clock(stamps, logged, clock_name, chosen, notes)
    _check_parts_everywhere(layouts, describe)
    names = [TIME] + coordinate_columns("q", joints)
    keep = list(range(1 + nj))
    for k_part, part in enumerate(_PARTS[1:], start=1):
        cols = range(1 + k_part * nj, 1 + (k_part + 1) * nj)
        block = out[:, cols.start:cols.stop]
        if np.isnan(block).all():
            continue
        names += coordinate_columns(part, joints)
        keep += list(cols)
    data = out if len(keep) == width else out[:, keep]
    first, offsets = clock.exact_offsets(stamps)
    return Trajectory(names, data, display), first, offsets, chosen, stamped


def _clock(stamps, logged, clock_name, topic, notes):
    """(the time of each message, which: 'header', 'header=log' or ''): the header stamps, or the
    log time for --clock log or when every stamp is zero (said in `notes`)."""
    stamped = clock_name == "header" and bool(stamps.any())
    if clock_name == "log":
        notes.append(f"{topic}: time from the bag's log time (when each message was recorded; --clock log), "
                     "not header.stamp")
    elif not stamped:
        notes.append(f"{topic}: every header.stamp is zero (the driver does not stamp): time from the bag's "
                     "log time (when each message was recorded)")
    if not stamped:
        return logged, ""
    return stamps, "header=log" if np.array_equal(stamps, logged) else "header"


def _check_parts_everywhere(layouts, describe):
    """TrajectoryError when some messages carry velocities (or efforts) and others carry none: the
    rows without them would be NaN cells in the columns of the rows with them (written out, or an
    error about a NaN the bag does not hold). A velocity or effort array is every message's or none's."""
    for k_part, what in ((1, "velocities"), (2, "efforts")):
        has = [(k, lay.counts[k_part] > 0) for k, lay in layouts]
        if any(h for _, h in has) and not all(h for _, h in has):
            without = next(k for k, h in has if not h)
            with_ = next(k for k, h in has if h)
            raise TrajectoryError(f"{describe(without, None)} has no {what} where message {with_ + 1} has them: "
                                  f"the topic mixes messages with and without {what} (two publishers?); "
                                  "dyn does not fill the gaps (record one publisher, or filter the bag)")


def _grow(arr, cap, fill=None):
    new = np.empty((cap,) + arr.shape[1:], dtype=arr.dtype)
    if fill is not None:
        new[arr.shape[0]:] = fill
    new[:arr.shape[0]] = arr
    return new


def _joints(model, display):
    """The robot's coordinates as JointState names them: its one-coordinate joints, by name."""
    multi = [j for j in model.joint_names if j not in model.q_names]
    if multi:
        raise TrajectoryError(f"robot '{model.name}' has joints with several coordinates ({', '.join(multi)}): a "
                              "sensor_msgs/JointState carries one position per joint, not a floating base's pose",
                              file=display)
    return list(model.q_names)


def _typestore():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE)  # only for bags without embedded message definitions


def _rosbags_errors():
    from rosbags.highlevel import AnyReaderError
    from rosbags.rosbag1 import ReaderError as Reader1Error
    from rosbags.rosbag2 import ReaderError as Reader2Error

    return (AnyReaderError, Reader1Error, Reader2Error, FileNotFoundError, KeyError, ValueError, EOFError)


def _first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
