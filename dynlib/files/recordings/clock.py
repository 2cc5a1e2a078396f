"""A recording's time: its unit, and seconds from the first sample.

Robots stamp samples on their own clock: ROS in nanoseconds since the Unix epoch
(``header.stamp``, a bag's log time, ``rostopic echo -p``'s ``%time``), PlotJuggler
in epoch seconds, a CSV log in whatever its writer chose. dyn writes ``time`` in
seconds from the first sample, and keeps the first sample's time on the
recording's clock, exactly (a `decimal.Decimal` of seconds), for the output's
metadata (`dynlib.files.columns.TIME_START_KEY`).

Units: ``s``, ``ms``, ``us``, ``ns`` (`UNITS`). A clock reading beyond `EPOCH_LIMIT`
seconds (1e11 s, the year 5138) is not a time in seconds: epoch milliseconds are
~1.7e12, microseconds ~1.7e15, nanoseconds ~1.7e18, and `infer_unit` tells them
apart by magnitude. So a time column is never read as seconds when it holds epoch
nanoseconds: without a unit given, the inferred one is used (and said); with
``s`` given, it is an error that names the unit it looks like.

Precision: an epoch time in ns (1.7e18) or in s with decimals (1.7e9) does not fit
a double to the nanosecond (ulp 256 ns and 0.24 µs). Readers therefore give the
clock readings as an exact first value (`Decimal`) and float64 offsets from it,
computed from integers or decimal text (`exact_offsets`), so that time steps of
1 ms keep all their digits.
"""
from __future__ import annotations

import datetime
from decimal import Decimal
from typing import NamedTuple

import numpy as np

from ...errors import TrajectoryError

UNITS = {"s": Decimal(1), "ms": Decimal("1e-3"), "us": Decimal("1e-6"), "ns": Decimal("1e-9")}
UNIT_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
EPOCH_LIMIT = 1e11  # seconds: a larger clock reading is in a smaller unit


def infer_unit(magnitude: float) -> str:
    """The unit of a clock reading of size `magnitude` (its largest |value|), by its size:
    below 1e11 seconds; then milliseconds, microseconds, nanoseconds (each x1000)."""
    for unit, limit in (("s", EPOCH_LIMIT), ("ms", EPOCH_LIMIT * 1e3), ("us", EPOCH_LIMIT * 1e6)):
        if magnitude < limit:
            return unit
    return "ns"


def utc(seconds) -> str:
    """'2023-11-14T22:13:20.002Z' for epoch seconds (or '' outside the calendar's range)."""
    try:
        when = datetime.datetime.fromtimestamp(float(seconds), tz=datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return ""
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def to_seconds(start: Decimal, offsets, *, unit=None, default="s", column="time", file=None, notes=None):
    """(t, start_s, unit): `offsets` (N,) float64 from the first reading `start` (both in the
    file's unit) as seconds from the first sample, the first reading in seconds (`Decimal`),
    and the unit used.

    `unit`: the one the user gave (``--time-unit``), or None: then `default` (the
    format's), unless it is ``s`` and the readings are too large for seconds
    (`infer_unit`); that choice is appended to `notes`. Raises `TrajectoryError`
    (naming `file` and `column`) when the readings in the unit given exceed
    `EPOCH_LIMIT` seconds.
    """
    offsets = np.asarray(offsets, dtype=np.float64)
    last = float(start) + (float(offsets[-1]) if offsets.size else 0.0)
    magnitude = max(abs(float(start)), abs(last))
    looks = infer_unit(magnitude)
    if unit is not None:
        if unit not in UNITS:
            raise TrajectoryError(f"unknown time unit {unit!r}; expected one of {', '.join(UNITS)}",
                                  file=file, column=column)
        seconds = magnitude * float(UNITS[unit])
        if seconds >= EPOCH_LIMIT:
            span = abs(last - float(start)) * float(UNITS[unit])
            raise TrajectoryError(
                f"the time column reads {magnitude:.3g} {unit} (spanning {span:.3g} s) with --time-unit {unit}: "
                f"{seconds:.3g} s is more than 3000 years; it looks like epoch {UNIT_NAMES[looks]} "
                f"({utc(magnitude * float(UNITS[looks]))}): did you mean --time-unit {looks}?",
                file=file, column=column)
    elif default == "s" and looks != "s":
        unit = looks
        if notes is not None:
            notes.append(f"time column '{column}' reads {magnitude:.3g}: taken as epoch {UNIT_NAMES[looks]} "
                         f"({utc(magnitude * float(UNITS[looks]))}); --time-unit s|ms|us|ns to choose")
    else:
        unit = default
    factor = UNITS[unit]
    t = offsets * float(factor) if unit != "s" else offsets.copy()
    return t, start * factor, unit


def text(seconds: Decimal) -> str:
    """A clock reading as plain decimal text, without an exponent or trailing zeros:
    '1700000000.002', '0', '12.5' (what the output's metadata keeps)."""
    out = f"{Decimal(seconds):f}"
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return "0" if out in ("-0", "") else out


def exact_offsets(values):
    """(first, offsets) of integer clock readings (int64 array): exact first value, float64 offsets."""
    values = np.asarray(values)
    first = int(values[0])
    return Decimal(first), (values - values[0]).astype(np.float64)


def decimal_offsets(column):
    """(first, offsets) of an Arrow decimal column: the first value exactly, float64 offsets
    from it (exact to the decimal's scale before rounding to a double)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    first = column[0]
    diff = pc.subtract(column, first)
    return first.as_py(), pc.cast(diff, pa.float64()).to_numpy(zero_copy_only=False)


def float_offsets(values):
    """(first, offsets) of float clock readings: the first value as a Decimal (the shortest
    text that reads back to the same double), float64 offsets from it."""
    values = np.asarray(values, dtype=np.float64)
    return Decimal(repr(float(values[0]))), values - values[0]


# ------------------------------------------------------------------ the rhythm of the stamps

class RhythmBreak(NamedTuple):
    """The sample `k` (0-based, in the recording's order) whose time breaks the rhythm: the steps to
    it from the sample before (`before`, None for the first) and from it to the next (`after`, None
    for the last), and the recording's median step, all in seconds."""

    k: int
    before: float | None
    after: float | None
    median: float


CLOSE = 0.5     # a step below half the median step: two samples closer than the rhythm allows
BETWEEN = 0.4   # a sample this far (in median steps) from every tick of the rhythm, on both sides
ON_TICK = 0.2   # a step within this (in median steps) of a whole number of them keeps the rhythm
RHYTHM = 0.9    # the share of steps that keep it for the stamps to have a rhythm at all
JUMP = 1000     # a first or last step over this many median steps, and longer than all the others together,
# is a clock jump (one stamp at 2**31 s read a 0.4 s bag as a 14-year recording), not a pause
LONG_PAUSE = 3600.0  # s: a step in the middle is a clock jump only when longer (and 10 x the rest)


def rhythm_break(t, Q=None) -> RhythmBreak | None:
    """The first sample whose time `t` (seconds, in the recording's order) breaks the rhythm of a
    driver's stamps, or None.

    A driver stamps its samples at a fixed rate, with jitter and now and then a dropped sample: every
    step is near a whole number (at least 1) of the median step m. A sample stamped at the wrong time
    (early, say) is either closer than m/2 to a neighbour (its step to one of them is below m/2, or
    not positive), or sits between two ticks of the rhythm (both its steps 0.4 m or more from a
    whole number of m, their sum within 0.25 m of one). Of two samples too close together, the one
    whose position `Q` (N, n) (when given) lies farther from the straight line through the samples
    on either side of the pair is the stray one (its stamp says another time than its position's);
    without `Q`, the one whose other step is farther from a whole number of m.

    Stamps without a rhythm (fewer than `RHYTHM` of the steps within `ON_TICK` m of a whole number of
    m: a logging PC's stamps, an irregular rate) have none to break: None. Their steps are true
    (`dynlib.motion.derivatives` takes non-uniform steps; identification resamples them). A first or
    last sample whose one step is a clock jump (`_end_jump`) breaks it too."""
    t = np.asarray(t, dtype=np.float64)
    d = np.diff(t)
    if d.size < 3:
        return None
    m = float(np.median(d))
    if not m > 0:
        return None
    r = d / m
    whole = np.maximum(np.rint(r), 1.0)
    if np.mean(np.abs(r - whole) < ON_TICK) < RHYTHM:
        return None
    close = np.flatnonzero(r < CLOSE)
    off = np.abs(r - whole) >= BETWEEN
    pair = r[:-1] + r[1:]
    between = np.flatnonzero(off[:-1] & off[1:] & (np.abs(pair - np.rint(pair)) <= 0.25))
    first_close = int(close[0]) if close.size else d.size
    first_between = int(between[0]) + 1 if between.size else d.size + 1
    jump = _end_jump(d, m)
    if first_close == d.size and first_between == d.size + 1:
        if jump is None:
            return None
        k = jump
    elif first_between <= first_close:
        k = first_between
    else:
        k = _stray_of_pair(t, r, whole, first_close, Q)
    if jump is not None and (jump == 0 or k >= jump - 1):  # not its neighbour, whose other step is fine
        k = jump
    return RhythmBreak(k, float(d[k - 1]) if k > 0 else None, float(d[k]) if k < d.size else None, m)


def _end_jump(d, m):
    """The sample after a clock jump, or None: a first or last step (one sample stamped at another
    time) over `JUMP` median steps `m` and longer than every other step together (0 or d.size), or a
    step in the middle over `JUMP` m, `LONG_PAUSE` and ten times every other step together (the clock
    jumped and stayed: the first sample after it). A sample in the middle stamped at another time
    has two such steps, and the rules of `rhythm_break` find it; a pause of a few times the rest of
    the recording is a gap, not a jump."""
    if d.size < 2:
        return None
    a = np.abs(d)  # forward, or back (the first stamp 14 years late, the last one at 0)
    i = int(np.argmax(a))
    other = float(a.sum() - a[i])
    if not a[i] > JUMP * m:
        return None
    if i == 0 and a[0] > other:
        return 0
    if i == d.size - 1 and a[i] > other:
        return d.size
    return i + 1 if a[i] > 10 * other and a[i] > LONG_PAUSE else None


def _stray_of_pair(t, r, whole, i, Q):
    """Of samples i and i + 1 (too close together), the one whose stamp is wrong."""
    n = t.size
    if Q is not None and i >= 1 and i + 2 < n:
        Q = np.asarray(Q, dtype=np.float64)
        left, right = i - 1, i + 2
        span = t[right] - t[left]
        if span > 0:
            miss = [np.abs(Q[c] - (Q[left] + (Q[right] - Q[left]) * (t[c] - t[left]) / span)).max() for c in (i, i + 1)]
            if np.all(np.isfinite(miss)) and miss[0] != miss[1]:
                return i if miss[0] > miss[1] else i + 1
    dev = np.abs(r - whole)
    before = dev[i - 1] if i >= 1 else -1.0
    after = dev[i + 1] if i + 1 < r.size else -1.0
    return i if before > after else i + 1


def duration(seconds) -> str:
    """'1 ms', '0.3 ms', '20 us', '2.5 s': a step, readable."""
    s = abs(float(seconds))
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if float(f"{s / factor:.3g}") >= 1 or unit == "us":
            return f"{float(seconds) / factor:.3g} {unit}"
