"""Column maps: which column of a recorded file holds which coordinate (``--columns``).

A file names its columns in dyn's names (``q.<name>``, ``qd.<name>``, ``qdd.<name>``,
``effort.<name>``, ``time``; `dynlib.files.columns`), or a column map says where else
they are: a template per part (``q=pos_{joint}``, ``qd=vel{index}``), one column per
coordinate (``q.elbow=elbow_angle``), the time column (``time=stamp``).

Public: `parse_column_map` (the option's text -> dict), `source_columns` (the file
columns of one part, in model order), `mapped` (whether a map names a part), and the
checks of a table's coordinate columns against the robot, `check_known_coordinates`
and `check_quaternions`. Used by the recording readers (`dynlib.files.recordings`), the
motion of a trajectory (`dynlib.motion.derivatives.motion_from_trajectory`) and
``dyn view``.
"""
from __future__ import annotations

import string

import numpy as np

from .columns import COORDINATES, TIME, column, coordinate, part as part_of
from ..errors import InputError, TrajectoryError, closest

MOTION_PARTS = ("q", "qd", "qdd")  # the parts of a motion read from a file
_COORDS = {p: COORDINATES[p] for p in MOTION_PARTS}  # ... and their model names
_MAPPED = dict(_COORDS, effort="v_names")  # the parts a column map may name (effort: measured torques)
_FIELDS = {"joint", "index"}
_KEYS = "q, qd, qdd or effort, one coordinate as q.<name>, qd.<name>, qdd.<name>, effort.<name>, or time"


def parse_column_map(text):
    """'q=pos_{joint},qd=vel_{joint},q.elbow=elbow_angle,time=stamp' -> dict (InputError on bad syntax).

    Keys: ``q``, ``qd``, ``qdd``, ``effort`` (a template, see `source_columns`), one
    coordinate as ``<part>.<name>``, or ``time`` (the column that holds the time)."""
    out = {}
    for item in filter(None, (s.strip() for s in str(text).split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise InputError(f"column map entry {item!r} is not KEY=COLUMN; expected e.g. "
                             "'q=pos_{joint},qd=vel_{joint}', 'q.elbow=elbow_angle' or 'time=stamp'")
        key = key.strip()
        if key != TIME and part_of(key) not in _MAPPED:
            raise InputError(f"column map key {key!r}: expected {_KEYS}")
        out[key] = value.strip()
    return out


def source_columns(model, part, columns=None, order=None):
    """The file columns that hold `part` ('q', 'qd', 'qdd' or 'effort') of every coordinate, in model order.

    `columns` maps a part to a template with ``{joint}`` (the coordinate's name, as in
    `model.q_names` / `model.v_names`) and ``{index}`` (its 0-based position in `order`,
    the file's joint order as a sequence of coordinate names; without `order`, its
    position in the model), and ``part.<name>`` to one column; what is not mapped keeps
    its SPEC name ``part.<name>``. A ``time`` key is left alone. Raises InputError for an
    unknown key, field or coordinate name, or a coordinate that `order` does not name.
    """
    names = getattr(model, _MAPPED[part])
    columns = dict(columns or {})
    for key in columns:
        if key == TIME:
            continue
        head, dot, name = key.partition(".")
        if head not in _MAPPED:
            raise InputError(f"column map key {key!r}: expected {_KEYS}")
        coords = getattr(model, _MAPPED[head])
        if dot and name not in coords:
            raise InputError(f"column map key {key!r}: robot '{model.name}' has no coordinate {name!r} "
                             f"in {'q' if head == 'q' else 'v'}; {closest(name, coords)}")
    template = columns.get(part, column(part, "{joint}"))
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    if fields - _FIELDS or not fields:
        raise InputError(f"column template {part}={template!r}: use {{joint}} (the coordinate name) "
                         f"and/or {{index}} (its position); {'found ' + ', '.join(sorted(fields - _FIELDS)) if fields - _FIELDS else 'found neither'}")
    where = None if order is None or "index" not in fields else {n: k for k, n in enumerate(order)}
    out = []
    for k, n in enumerate(names):
        if column(part, n) in columns:
            out.append(columns[column(part, n)])
            continue
        if where is not None:
            if n not in where:
                raise InputError(f"--joint-order names no {n!r}: {{index}} in {part}={template} needs the position of "
                                 f"every coordinate in the file ({closest(n, list(order))})", key="--joint-order")
            k = where[n]
        out.append(template.format(joint=n, index=k))
    return out


def uses_index(columns) -> bool:
    """Whether a column map has a template with ``{index}`` (a position in the file's joint order)."""
    return any("index" in {f for _, f, _, _ in string.Formatter().parse(str(v)) if f is not None}
               for key, v in (columns or {}).items() if key in _MAPPED)


def joint_order(order):
    """The file's joint order (``--joint-order a,b,c`` or a sequence of names) as a tuple of names;
    InputError when it is empty or names a joint twice."""
    names = [n.strip() for n in order.split(",")] if isinstance(order, str) else [str(n) for n in order]
    if not names or not all(names):
        raise InputError(f"--joint-order {order!r}: expected the joints' names in the file's order, a,b,c",
                         key="--joint-order")
    twice = next((n for k, n in enumerate(names) if n in names[:k]), None)
    if twice is not None:
        raise InputError(f"--joint-order names {twice!r} twice", key="--joint-order")
    return tuple(names)


def mapped(columns, part) -> bool:
    """Whether the column map `columns` names where `part` comes from (a template or one coordinate)."""
    return any(key == part or key.startswith(part + ".") for key in (columns or {}))


def check_known_coordinates(model, traj, parts):
    """A column named like a SPEC coordinate column that the robot lacks is an unknown joint."""
    for part in parts:
        valid = set(getattr(model, _COORDS[part]))
        for name in traj.names:
            coord = coordinate(name)
            if part_of(name) == part and coord not in valid:
                hint = (" (a floating-base trajectory: add --floating-base)" if coord.startswith("root.")
                        and not model.has_floating_base else f"; {closest(coord, sorted(valid))}")
                raise TrajectoryError(f"robot '{model.name}' has no coordinate {coord!r}{hint}",
                                      file=traj.path, column=name)


def check_quaternions(model, traj, qcols, Q):
    """Every quaternion of Q (the rows of `traj`'s columns `qcols`) of unit norm (within 1e-3), else a
    TrajectoryError naming its columns and row."""
    for _, c in model.quaternions:
        norm = np.linalg.norm(Q[:, c:c + 4], axis=1)
        bad = np.flatnonzero(np.abs(norm - 1.0) > 1e-3)
        if bad.size:
            k = int(bad[0])
            raise TrajectoryError(f"quaternion ({', '.join(qcols[c:c + 4])}) has norm {norm[k]:.6g}; "
                                  "expected a unit quaternion (x, y, z, w)", file=traj.path,
                                  column=qcols[c], **traj.locate(k))
