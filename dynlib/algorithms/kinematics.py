"""Forward kinematics: body placements, velocities, accelerations; frame placements.

RBDA §4.4 / Pinocchio ``forwardKinematics``. For each body i (in order):
``liMi = Xtree_i * XJ_i(q)``, ``oMi = oM_parent * liMi``,
``v_i = liMi^-1 v_parent + S_i v``, ``a_i = liMi^-1 a_parent + S_i a + v_i x (S_i v)``
(body frame, linear first; ``cJ = 0`` for every joint of dynlib.joints).
Outputs go to ``Data.lR, lp, oR, op, v, a``. O(n).

Public: `frame_placement(model, q, frame)` -> (4, 4) homogeneous transform in the world.
"""
import numpy as np
from numba import njit

from .. import joints as J
from ..spatial import act_inv_motion, compose, cross_motion
from . import _args

_jit = njit(cache=True)


@_jit
def placements(m, d, q):
    """Pass: joint placements liMi and world placements oMi of every body."""
    for i in range(m.parent.shape[0]):
        J.jcalc(m.jtype[i], m.jaxis[i], q, m.idx_q[i], d.R3, d.p3)
        compose(m.Xtree_R[i], m.Xtree_p[i], d.R3, d.p3, d.lR[i], d.lp[i])
        pa = m.parent[i]
        if pa < 0:
            for r in range(3):
                for c in range(3):
                    d.oR[i, r, c] = d.lR[i, r, c]
                d.op[i, r] = d.lp[i, r]
        else:
            compose(d.oR[pa], d.op[pa], d.lR[i], d.lp[i], d.oR[i], d.op[i])


@_jit
def motion(m, d, v, a, a_world):
    """Pass: body velocities d.v and accelerations d.a (placements done), body frame.

    `a_world` is the world's spatial acceleration ((-g, 0) to include gravity).
    """
    vJ = d.tmp6[0]
    aJ = d.tmp6[1]
    t = d.tmp6[2]
    for i in range(m.parent.shape[0]):
        vJ[:] = 0.0
        aJ[:] = 0.0
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            for r in range(6):
                vJ[r] += m.S[k, r] * v[k]
                aJ[r] += m.S[k, r] * a[k]
        pa = m.parent[i]
        if pa < 0:
            d.v[i, :] = vJ
            act_inv_motion(d.lR[i], d.lp[i], a_world, d.a[i])
        else:
            act_inv_motion(d.lR[i], d.lp[i], d.v[pa], d.v[i])
            for r in range(6):
                d.v[i, r] += vJ[r]
            act_inv_motion(d.lR[i], d.lp[i], d.a[pa], d.a[i])
        cross_motion(d.v[i], vJ, t)
        for r in range(6):
            d.a[i, r] += aJ[r] + t[r]


@_jit
def frame_pose(m, d, fid, R, p):
    """(R, p) = oMf, the placement of frame fid in the world (placements done)."""
    b = m.frame_body[fid]
    if b < 0:
        R[:, :] = m.frame_R[fid]
        p[:] = m.frame_p[fid]
    else:
        compose(d.oR[b], d.op[b], m.frame_R[fid], m.frame_p[fid], R, p)


@_jit
def _frame_placement_batch(m, d, Q, fid, out):
    R = np.empty((3, 3))
    p = np.empty(3)
    for n in range(Q.shape[0]):
        placements(m, d, Q[n])
        frame_pose(m, d, fid, R, p)
        out[n, :3, :3] = R
        out[n, :3, 3] = p
        out[n, 3, :3] = 0.0
        out[n, 3, 3] = 1.0


def frame_placement(model, q, frame):
    """The 4x4 homogeneous transform of a frame (link) in the world; (N, 4, 4) for a batch."""
    (Q,), batched, n = _args.vectors(model, q=(q, model.nq))
    fid = _args.frame(model, frame)
    out = np.empty((n, 4, 4))
    _frame_placement_batch(model.arrays, model.workspace, Q, fid, out)
    return out if batched else out[0]
