"""Forward kinematics: body placements, velocities, accelerations; frame placements.

RBDA §4.4 / Pinocchio ``forwardKinematics``. For each body i (in order):
``liMi = Xtree_i * XJ_i(q)``, ``oMi = oM_parent * liMi``,
``v_i = liMi^-1 v_parent + S_i v``, ``a_i = liMi^-1 a_parent + S_i a + v_i x (S_i v)``
(body frame, linear first; ``cJ = 0`` for every joint of dynlib.core.joints).
Outputs go to ``Data.lR, lp`` (`joint_placements`), ``Data.oR, op`` (`placements`
does both; `path_placements` only for one body and its ancestors) and ``Data.v, a``
(`motion`). O(n).

Public: `frame_placement(model, q, frame)` -> (4, 4) homogeneous transform in the world.
"""
import numpy as np

from .._numba.decorators import kernel
from ..core import joints as J
from ..core.spatial import (act_inv_motion, add6, compose, cross_motion, joint_motion, pose, store6, store_pose, tuple6,
                            vec6)
from .._numba import parallel
from . import _args
from .._numba import one as _one
from .._numba.one import one_call


@kernel
def joint_placements(m, d, q):
    """Pass: the joint placements liMi = Xtree_i * XJ_i(q) of every body (all that RNEA and ABA need)."""
    for i in range(m.parent.shape[0]):
        XJ = J.jcalc(m.jtype[i], m.jaxis, i, q, m.idx_q[i])
        store_pose(d.lR, d.lp, i, compose(pose(m.Xtree_R, m.Xtree_p, i), XJ))


@kernel
def placements(m, d, q):
    """Pass: joint placements liMi and world placements oMi = oM_parent * liMi of every body."""
    joint_placements(m, d, q)
    for i in range(m.parent.shape[0]):
        liMi = pose(d.lR, d.lp, i)
        pa = m.parent[i]
        store_pose(d.oR, d.op, i, liMi if pa < 0 else compose(pose(d.oR, d.op, pa), liMi))


@kernel
def path_placements(m, d, q, b):
    """Pass: liMi and oMi of body b and its ancestors only (the path from the root to b).

    Body i is on that path when b is in i's subtree, ``i <= b < subtree_end[i]``;
    the other bodies' placements in Data are left as they were. O(b).
    """
    for i in range(b + 1):
        if b < m.subtree_end[i]:
            XJ = J.jcalc(m.jtype[i], m.jaxis, i, q, m.idx_q[i])
            liMi = compose(pose(m.Xtree_R, m.Xtree_p, i), XJ)
            store_pose(d.lR, d.lp, i, liMi)
            pa = m.parent[i]
            store_pose(d.oR, d.op, i, liMi if pa < 0 else compose(pose(d.oR, d.op, pa), liMi))


@kernel
def motion(m, d, v, a, a_world):
    """Pass: body velocities d.v and accelerations d.a (placements done), body frame.

    `a_world` is the world's spatial acceleration ((-g, 0) to include gravity).
    """
    a0 = tuple6(a_world)
    for i in range(m.parent.shape[0]):
        liMi = pose(d.lR, d.lp, i)
        vJ = joint_motion(m.S, m.idx_v[i], m.nvj[i], v)
        aJ = joint_motion(m.S, m.idx_v[i], m.nvj[i], a)
        pa = m.parent[i]
        if pa < 0:
            vi = vJ
            ai = act_inv_motion(liMi, a0)
        else:
            vi = add6(act_inv_motion(liMi, vec6(d.v, pa)), vJ)
            ai = act_inv_motion(liMi, vec6(d.a, pa))
        store6(d.v, i, vi)
        store6(d.a, i, add6(ai, add6(aJ, cross_motion(vi, vJ))))


@kernel
def frame_transform(m, d, fid):
    """oMf = (R, p) as tuples, the placement of frame fid in the world (placements done)."""
    b = m.frame_body[fid]
    bMf = pose(m.frame_R, m.frame_p, fid)
    return bMf if b < 0 else compose(pose(d.oR, d.op, b), bMf)


@kernel
def frame_pose(m, d, fid, R, p):
    """(R, p) = oMf, the placement of frame fid in the world (placements done), into arrays."""
    Rf, pf = frame_transform(m, d, fid)
    for r in range(3):
        for c in range(3):
            R[r, c] = Rf[3 * r + c]
        p[r] = pf[r]


@kernel
def frame_placement_kernel(m, d, q, fid, T):
    """T (4, 4) = oMf, the homogeneous transform of frame fid in the world."""
    placements(m, d, q)
    R, p = frame_transform(m, d, fid)
    for r in range(3):
        for c in range(3):
            T[r, c] = R[3 * r + c]
        T[r, 3] = p[r]
        T[3, r] = 0.0
    T[3, 3] = 1.0


@kernel
def _frame_placement_batch(m, d, Q, fid, out):
    for n in range(Q.shape[0]):
        frame_placement_kernel(m, d, Q[n], fid, out[n])


_frame_placement_kernel_inlined = _one.inlined(frame_placement_kernel)


@kernel
def frame_placement_one(ty, buf, q, fid, T):
    """One call of frame_placement_kernel (dynlib._numba.one): 0; 1 when q is not a
    contiguous vector of size nq, not finite or holds a quaternion that cannot be normalised,
    _one.BUSY when another thread holds buf (then T is not written)."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq)):
        _frame_placement_kernel_inlined(m, d, _one.contiguous(q), fid, T)
        status = 0
    _one.release(buf)
    return status


@one_call(frame_placement_one, "q", "(4, 4)", _args.one_value, ints="fid",
          prelude="fid = _args.frame_or_none(model, frame)", when="fid is not None")
def frame_placement(model, q, frame):
    """The 4x4 homogeneous transform of a frame (link) in the world; (N, 4, 4) for a batch."""
    (Q,), batched, n = _args.vectors(model, q=(q, model.nq))
    fid = _args.frame(model, frame)
    out = np.empty((n, 4, 4))
    parallel.run(model, n, _frame_placement_batch, (Q,), fid, (out,))
    return out if batched else out[0]
