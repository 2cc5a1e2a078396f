"""Locked joints: a joint held at a value is read as a fixed joint there (Pinocchio's buildReducedModel).

``dynlib.load(path, lock={joint: value})`` (``--lock JOINT=VALUE``, a scenario's ``lock:``) builds the
robot without the locked joints. The URDF reader (`dynlib.files.urdf`) treats each as a fixed joint
whose origin is its own composed with the joint's transform at the value, so its child link is merged
into the parent body as a fixed joint's is: inertia lumped, every link kept as a frame (at the same
place as in the full model at that value), the order of the other joints unchanged. That is
Pinocchio's ``buildReducedModel(model, joints, q_ref)``, body for body (tests/files/test_locks.py
compares rnea, crba and aba on example-robot-data robots).

A value is in the joint's own coordinates, as its ``q.<joint>`` column: one number (rad or m) for a
revolute, continuous or prismatic joint, within the URDF limits of a revolute or prismatic one;
``x, y, theta`` for a planar joint; ``x, y, z, qx, qy, qz, qw`` for a floating one (normalised). The
free-flyer that ``floating_base`` adds is not a URDF joint and is not locked (leave floating_base out).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InputError, closest


class LockError(InputError):
    """A lock that cannot be made; `joint` is the joint it names (a scenario reports it at lock.<joint>)."""

    def __init__(self, joint, message):
        super().__init__(message)
        self.joint = joint


_SIZES = {"revolute": 1, "continuous": 1, "prismatic": 1, "planar": 3, "floating": 7}


def lock_transforms(rd, robot_name, joints, lock, floating_base, plane_basis) -> dict:
    """{joint name: (R, p)}: each locked joint's child link frame in its joint frame at the value, every
    lock checked (LockError naming the joint). `joints`: the URDF's `_Joint` records; `plane_basis`: the
    reader's turn of a planar joint's axis onto z."""
    by_name = {jt.name: jt for jt in joints}
    out = {}
    for name, value in dict(lock or {}).items():
        jt = by_name.get(name)
        if jt is None:
            if name == "root" and floating_base:
                raise LockError(name, "cannot lock joint 'root': it is the free-flyer that floating_base "
                                      "(--floating-base) adds; for a fixed base leave floating_base out")
            raise LockError(name, f"cannot lock joint '{name}': robot '{robot_name}' has no joint '{name}'; "
                                  f"{closest(name, [j.name for j in joints if j.type != 'fixed'])}")
        if jt.type == "fixed":
            raise LockError(name, f"cannot lock joint '{name}': it is fixed already")
        x = _values(name, value, _SIZES[jt.type])
        if jt.type in ("revolute", "prismatic") and not jt.lower <= x[0] <= jt.upper:
            raise LockError(name, f"cannot lock joint '{name}' at {x[0]:g}: outside its limits "
                                  f"[{jt.lower:g}, {jt.upper:g}] ({rd.file}:{jt.line})")
        out[name] = (_transform(jt.type, jt.axis, x, plane_basis), tuple(float(v) for v in x))
    return out


def _values(name, value, n) -> np.ndarray:
    """The lock value as n finite numbers (LockError otherwise)."""
    try:
        x = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        x = None
    shown = f"{x[0]:g}" if x is not None and x.size == 1 else repr(value)
    if x is None or x.size != n or not np.all(np.isfinite(x)):
        what = "a finite number" if n == 1 else f"{n} finite numbers"
        raise LockError(name, f"cannot lock joint '{name}' at {shown}: expected {what}")
    if n == 7 and not np.any(x[3:]):
        raise LockError(name, f"cannot lock joint '{name}' at {shown}: the quaternion qx qy qz qw is zero")
    return x


def _transform(kind, axis, x, plane_basis):
    """(R, p): the child link frame in the joint frame of a `kind` joint (unit `axis`) at the value x."""
    if kind in ("revolute", "continuous"):
        return _rotation(axis, x[0]), np.zeros(3)
    if kind == "prismatic":
        return np.eye(3), axis * x[0]
    if kind == "floating":
        qx, qy, qz, qw = x[3:] / np.linalg.norm(x[3:])
        R = np.array([[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
                      [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
                      [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]])
        return R, x[:3].copy()
    B = plane_basis(axis)  # planar: x, y, theta in the plane whose normal is the axis
    return B @ _rotation(np.array([0.0, 0.0, 1.0]), x[2]) @ B.T, B @ np.array([x[0], x[1], 0.0])


def _rotation(axis, theta):
    """exp(theta [axis]x) (Rodrigues) for a unit axis."""
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(theta) * K + (1.0 - math.cos(theta)) * K @ K
