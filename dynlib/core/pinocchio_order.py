"""Pinocchio's joint order, and q and v (a, tau) mapped to and from it.

dyn numbers bodies and coordinates in the URDF document's order: depth first from the root link, a
link's child joints in the order the file writes them (MuJoCo's rule for its MJCF). Pinocchio's URDF
parser (through urdfdom) visits a link's child joints sorted by joint name, so on a robot whose sibling
joints are not written in alphabetical order (talos, anymal, hyq) the same q array means other joints.
`PinocchioOrder` holds Pinocchio's order of the moving joints (``model.names[1:]`` of
``pin.buildModelFromUrdf(path)``, with ``pin.JointModelFreeFlyer()`` for ``floating_base=True``,
whose joint 'root_joint' is dyn's 'root'; locked joints leave the order as ``pin.buildReducedModel``
does) and maps coordinates between the two:

- v, a, tau and any per-DoF vector: a permutation, ``v_pin = v[..., v_index]``; a matrix over the
  DoFs (M, a Jacobian's columns) takes the same index; per-body rows (``f_ext``, one body-frame wrench
  per body, as Pinocchio's per-joint local forces) take ``body_index``;
- q: the same permutation of joints, and Pinocchio's storage of two joint types: a continuous joint
  is ``(cos, sin)`` there (one angle here) and a planar joint ``(x, y, cos, sin)`` (``x y theta`` here).
  Back from Pinocchio, the angle is ``atan2(sin, cos)``.

Everything else is already Pinocchio's: a free-flyer's q is ``x y z qx qy qz qw`` (quaternion x, y,
z, w) and its v the body-frame linear then angular velocity; a planar joint's v is body-frame
``vx vy wz``; spatial vectors are linear first. The maps are those of the model's tree, every joint
with its coordinate (Pinocchio's default, ``mimic=False``); the coupled robot's coordinates, those of
Pinocchio's ``mimic=True`` model, are the tree's without the followers (`dynlib.core.mimic`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import InputError
from . import joints as J

COPY, ANGLE, PLANAR = 0, 1, 2  # how a joint's q is stored in Pinocchio: as here, (cos, sin), (x, y, cos, sin)


class PinocchioOrder(NamedTuple):
    """Pinocchio's order of a model's joints and where each coordinate goes (`dynlib.Model.pinocchio_order`)."""

    joints: tuple          # dyn's moving joints in Pinocchio's order (its model.names[1:]; 'root' is 'root_joint')
    nq: int                # Pinocchio's nq (a continuous joint 2, a planar joint 4)
    nv: int                # = model.nv
    v_index: np.ndarray    # (nv,) int: Pinocchio's DoF k is dyn's DoF v_index[k], v_pin = v[..., v_index]
    v_inverse: np.ndarray  # (nv,) int: the inverse permutation, v = v_pin[..., v_inverse]
    body_index: np.ndarray  # (nb,) int: Pinocchio's joint k + 1 moves dyn's body body_index[k] (f_ext rows, frames)
    q_blocks: tuple        # ((dyn idx_q, Pinocchio idx_q, dyn nq, COPY | ANGLE | PLANAR), ...) per joint


def build(model) -> PinocchioOrder:
    """The `PinocchioOrder` of `model` (its ``pinocchio_joints``, set by the URDF reader)."""
    a = model.arrays
    names = model.pinocchio_joints
    v_index, blocks, bodies, pq = [], [], [], 0
    for name in names:
        i = model.joint_names.index(name)
        bodies.append(i)
        iq, iv, nvi, t = int(a.idx_q[i]), int(a.idx_v[i]), int(a.nvj[i]), int(a.jtype[i])
        v_index += range(iv, iv + nvi)
        kind = PLANAR if t == J.PLANAR else ANGLE if model.joint_types[i] == "continuous" else COPY
        blocks.append((iq, pq, J.NQ[t], kind))
        pq += J.NQ[t] + (1 if kind != COPY else 0)
    v_index = np.array(v_index, dtype=np.int64)
    v_inverse = np.empty_like(v_index)
    v_inverse[v_index] = np.arange(len(v_index))
    return PinocchioOrder(tuple(names), pq, model.nv, v_index, v_inverse, np.array(bodies, dtype=np.int64), tuple(blocks))


def _array(x, n, name) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim not in (1, 2) or x.shape[-1] != n:
        raise InputError(f"{name} must have {n} entries (or be rows of {n}), got shape {x.shape}")
    return x


def q_to_pinocchio(order: PinocchioOrder, nq: int, q) -> np.ndarray:
    """q (nq,) or (N, nq) in dyn's order -> Pinocchio's q (order.nq,) or (N, order.nq)."""
    q = _array(q, nq, "q")
    out = np.empty(q.shape[:-1] + (order.nq,))
    for iq, pq, n, kind in order.q_blocks:
        if kind == COPY:
            out[..., pq:pq + n] = q[..., iq:iq + n]
            continue
        if kind == PLANAR:
            out[..., pq:pq + 2] = q[..., iq:iq + 2]
            iq, pq = iq + 2, pq + 2
        out[..., pq], out[..., pq + 1] = np.cos(q[..., iq]), np.sin(q[..., iq])
    return out


def q_from_pinocchio(order: PinocchioOrder, nq: int, q_pin) -> np.ndarray:
    """Pinocchio's q (order.nq,) or (N, order.nq) -> q in dyn's order (nq,) or (N, nq)."""
    qp = _array(q_pin, order.nq, "q_pin")
    out = np.empty(qp.shape[:-1] + (nq,))
    for iq, pq, n, kind in order.q_blocks:
        if kind == COPY:
            out[..., iq:iq + n] = qp[..., pq:pq + n]
            continue
        if kind == PLANAR:
            out[..., iq:iq + 2] = qp[..., pq:pq + 2]
            iq, pq = iq + 2, pq + 2
        out[..., iq] = np.arctan2(qp[..., pq + 1], qp[..., pq])
    return out


def v_to_pinocchio(order: PinocchioOrder, v) -> np.ndarray:
    """A per-DoF vector (v, a, tau) (nv,) or (N, nv) in dyn's order -> Pinocchio's order."""
    return _array(v, order.nv, "v")[..., order.v_index]


def v_from_pinocchio(order: PinocchioOrder, v_pin) -> np.ndarray:
    """A per-DoF vector in Pinocchio's order (nv,) or (N, nv) -> dyn's order."""
    return _array(v_pin, order.nv, "v_pin")[..., order.v_inverse]
