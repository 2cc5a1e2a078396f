"""Gain files: the one home of the state-feedback gain CSV (issue 35), read and written.

A gain file holds K of the law ``tau = tau0 - K [q ⊖ q*; qd - qd*]`` (the `state-feedback`
controller, `dynlib.sim.controllers.StateFeedback`), in the names `dyn linearize` writes:

    input,q.cart,q.pole,qd.cart,qd.pole
    cart,-1.0,-30.2,-2.1,-7.9

The header is ``input`` then the state names (`state_names`: ``q.<coord>`` for the tangent
coordinates, then ``qd.<coord>``, the v coordinates of the robot, each once, in any order); each row
is one actuated coordinate (the ``input`` column names it) and its gains. `write_gain` writes the
file from K (len(inputs), 2 nv) and the names of a linearization; `read_gain` reads it for a
robot, the columns in the robot's order. Every problem is an `InputError` naming the file (and its
line and column): a missing file, a header that does not name the robot's state, an unknown or
repeated input, a value that is not a finite number.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from ..errors import InputError, closest
from .columns import column

INPUT = "input"


def state_names(v_names) -> tuple:
    """The state's names: ``q.<coord>`` for the tangent coordinates, then ``qd.<coord>``
    (`dyn linearize`'s ``state``; the gain file's columns)."""
    return tuple(column("q", n) for n in v_names) + tuple(column("qd", n) for n in v_names)


def write_gain(path, K, inputs, state) -> None:
    """Write K (len(inputs), len(state)) as a gain file: header ``input,<state>``, one row per input
    (its coordinate name, then its gains, at full precision); atomically."""
    from .output import atomic_output

    K = np.asarray(K, dtype=float)
    inputs, state = [str(n) for n in inputs], [str(n) for n in state]
    if K.ndim == 1 and len(inputs) == 1:
        K = K[None, :]
    if K.shape != (len(inputs), len(state)):
        raise InputError(f"gain: expected shape ({len(inputs)}, {len(state)}) (inputs x state), got {K.shape}")
    if not np.all(np.isfinite(K)):
        raise InputError("gain: every entry must be finite")
    lines = [",".join([INPUT, *state])]
    lines += [",".join([name, *(repr(float(x)) for x in row)]) for name, row in zip(inputs, K)]
    with atomic_output(str(path)) as p:
        Path(p).write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_gain(path, model) -> tuple:
    """(inputs, K): the input coordinates (tuple of `model.v_names`, in the file's row order) and
    K (len(inputs), 2 nv), its columns in `state_names(model.v_names)`'s order."""
    rows = _rows(path)
    if not rows or not rows[0]:
        raise InputError("the gain file is empty; expected a header 'input,<state names>' and one row per input",
                         file=path)
    header = [c.strip() for c in rows[0]]
    state = state_names(model.v_names)
    order = _columns(path, header, state, model.name)
    inputs, K = [], []
    for line, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(f"{len(row)} values, the header has {len(header)}", file=path, line=line)
        name = row[0].strip()
        if name not in model.v_names:
            raise InputError(f"input '{name}': robot '{model.name}' has no coordinate '{name}'; "
                             f"{closest(name, model.v_names)}", file=path, line=line, column=INPUT)
        if name in inputs:
            raise InputError(f"input '{name}' has a second row", file=path, line=line, column=INPUT)
        inputs.append(name)
        K.append([_entry(path, line, header[k], row[k]) for k in order])
    if not inputs:
        raise InputError("the gain file has no rows; expected one row per actuated coordinate", file=path)
    return tuple(inputs), np.array(K, dtype=float).reshape(len(inputs), len(state))


def _rows(path) -> list:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.reader(f))
    except FileNotFoundError:
        raise InputError("no such gain file", file=path) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a gain file (CSV)", file=path) from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read the gain file: {exc}", file=path) from None


def _columns(path, header, state, robot) -> list:
    """The header's index of each state name (in `state`'s order); an InputError for a header that
    is not ``input`` then the robot's state names, each once."""
    if header[0] != INPUT:
        raise InputError(f"the first column is '{header[0]}', expected '{INPUT}' (the header is "
                         f"'input,<state names>' as dyn linearize writes them)", file=path, line=1)
    seen = {}
    for k, name in enumerate(header[1:], start=1):
        if name not in state:
            raise InputError(f"column '{name}' is not a state of robot '{robot}'; {closest(name, state)}",
                             file=path, line=1)
        if name in seen:
            raise InputError(f"column '{name}' appears twice", file=path, line=1)
        seen[name] = k
    missing = [n for n in state if n not in seen]
    if missing:
        raise InputError(f"no column for the state {', '.join(missing)} of robot '{robot}' (a gain "
                         f"file has one column per state name: {', '.join(state)})", file=path, line=1)
    return [seen[n] for n in state]


def _entry(path, line, name, text) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"{text.strip()!r} is not a number", file=path, line=line, column=name) from None
    if not math.isfinite(x):
        raise InputError(f"{text.strip()!r} is not a finite number", file=path, line=line, column=name)
    return x
