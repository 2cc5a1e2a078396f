"""Errors raised by dynlib.

Every error a user can cause is a `DynError`. It carries where the problem is
(file, line, key path, row, column) so that the command line can print one line:
``FILE:LINE: what is wrong; what was expected``. This module imports nothing
outside the standard library (no click).
"""
from __future__ import annotations

import difflib


class DynError(Exception):
    """Base of every error dynlib raises on purpose.

    `exit_code` is what the command line exits with: 2 for bad input (the
    default), 1 for a failed check or a diverged simulation.
    """

    exit_code = 2

    def __init__(self, message: str, *, file=None, line=None, key=None, row=None, column=None):
        super().__init__(message)
        self.message = message
        self.file = None if file is None else str(file)
        self.line = line
        self.key = key
        self.row = row
        self.column = column

    @property
    def location(self) -> str:
        """``file:line: key: row R, column 'c'`` (the parts that are known), or ''."""
        parts = []
        if self.file:
            parts.append(self.file if self.line is None else f"{self.file}:{self.line}")
        elif self.line is not None:
            parts.append(f"line {self.line}")
        if self.key:
            parts.append(str(self.key))
        cell = []
        if self.row is not None:
            cell.append(f"row {self.row}")
        if self.column is not None:
            cell.append(f"column '{self.column}'")
        if cell:
            parts.append(", ".join(cell))
        return ": ".join(parts)

    def __str__(self) -> str:
        loc = self.location
        return shown(f"{loc}: {self.message}" if loc else self.message)


def shown(text: str) -> str:
    """`text` printable as UTF-8: a file name that is not UTF-8 (Linux allows any bytes; Python keeps
    them as lone surrogates, which no UTF-8 stream, page or font takes) with those bytes as ``\\xNN``."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


class URDFError(DynError):
    """A URDF or xacro file that cannot be read as a robot."""


class ScenarioError(DynError):
    """A scenario YAML file that does not validate."""


class TrajectoryError(DynError):
    """A trajectory file (CSV/Parquet) that cannot be used."""


class ModelError(DynError):
    """A model that cannot do what was asked (e.g. a massless movable subtree)."""


class InputError(DynError):
    """A bad argument: wrong shape, non-finite value, unknown name.

    `argument`: the argument of the call that the bad value came from, when the function knows
    it and its message alone does not say (`dynlib.sim.simulate.simulate` sets ``"contacts"``,
    ``"controller"`` or ``"external_wrenches"``; `dynlib.runs.scenario.run` reports the error at the
    scenario key behind that argument). None otherwise.
    """

    argument = None


class NumericalError(DynError):
    """A computation that diverged (NaN/Inf or beyond bounds). Exit code 1."""

    exit_code = 1

    def __init__(self, message: str, *, step=None, time=None, **kw):
        super().__init__(message, **kw)
        self.step = step
        self.time = time


class CheckFailed(DynError):
    """A model check that ran and failed (energy-check). Exit code 1."""

    exit_code = 1


class SweepFailed(DynError):
    """Some variants of a sweep diverged or failed (they are in summary.csv). Exit code 1."""

    exit_code = 1


def closest(name: str, valid, n: int = 3) -> str:
    """A hint naming the valid names closest to `name` ('' when none is close)."""
    valid = list(valid)
    near = difflib.get_close_matches(str(name), valid, n=n, cutoff=0.5)
    if near:
        return "did you mean " + " or ".join(repr(v) for v in near) + "?"
    if len(valid) <= 8:
        return "valid names: " + ", ".join(repr(v) for v in valid)
    return f"({len(valid)} valid names, e.g. " + ", ".join(repr(v) for v in valid[:5]) + ")"
