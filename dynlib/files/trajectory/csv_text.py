"""A small table's CSV without Arrow: the bytes Arrow's writer gives (`csv.write`), made in Python.

pyarrow's import costs about as much as a short `dyn simulate` run's own work, so a table
of at most `TEXT_VALUES` finite numbers with plain column names (none needs quoting) is
written here, and every other table by Arrow (`csv.write`).

The same bytes: Arrow formats a double with double-conversion's ToShortest (Arrow's
``FloatToStringFormatter``: the shortest decimal digits that read back to the same double,
exponent sign always written, fixed notation for decimal exponents -6 <= e < 10). Those are
the digits of Python's ``repr`` (the shortest that round-trip, the closest of them), placed
by the same rule: ``0.00001``, ``1e-7``, ``1234567890``, ``1.2345678901e+10``, ``1``
(no ``.0``), ``-0``. tests/files/test_trajectory.py compares the two writers byte for byte
on random doubles of every exponent.
"""
from __future__ import annotations

import numpy as np

TEXT_VALUES = 10_000
"""The most numbers written here (about 1 us each: at most 10 ms, less than pyarrow's import)."""


def fits(names, data) -> bool:
    """Whether the table (`names`, `data` (N, len(names)) float64) is written here: small, finite, N >= 1,
    and names that Arrow writes unquoted."""
    if not (0 < data.size <= TEXT_VALUES and data.shape[0] > 0 and bool(np.isfinite(data).all())):
        return False
    try:
        ",".join(names).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(ch in n for n in names for ch in ',"\r\n')


def number(x: float) -> str:
    """`x` (finite) as Arrow writes it (see the module docstring)."""
    r = repr(x)
    if "e" not in r and r.index(".") <= 10 + (r[0] == "-"):  # fixed in both, under 1e10: repr's text, less '.0'
        return r[:-2] if r.endswith(".0") else r
    sign = ""
    if r[0] == "-":
        sign, r = "-", r[1:]
    mantissa, _, exponent = r.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)  # x = 0.<digits> * 10**point
    significant = digits.lstrip("0")
    point -= len(digits) - len(significant)
    digits = significant.rstrip("0")
    if not digits:
        return sign + "0"
    e = point - 1
    if -6 <= e < 10:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return sign + digits + "0" * (point - len(digits))
        return f"{sign}{digits[:point]}.{digits[point:]}"
    rest = "." + digits[1:] if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{rest}e{'+' if e >= 0 else '-'}{abs(e)}"


def write(names, data, sink) -> None:
    """Write the table (`fits`) to `sink`: a path, or a binary stream."""
    lines = [",".join(names)]
    lines += [",".join(map(number, row)) for row in data.tolist()]
    text = ("\n".join(lines) + "\n").encode("utf-8")
    if isinstance(sink, str):
        with open(sink, "wb") as f:
            f.write(text)
    else:
        sink.write(text)
