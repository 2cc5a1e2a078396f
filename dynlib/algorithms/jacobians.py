"""Frame Jacobians J(q) (6, nv) and the drift term J̇(q, v) v, in three references.

For each DoF k on the path from the frame's body to the root, the column is the
world-axes spatial velocity at the world origin ``oMj.act(S_k)`` (Pinocchio's
WORLD reference); the frame's origin velocity in world axes gives
LOCAL_WORLD_ALIGNED ``(v_O + w x p_f, w)`` and rotating that into the frame gives
LOCAL (Pinocchio's meanings; linear rows first). O(depth).

``J̇v`` is ``d/dt(J(q)) v``, the acceleration of the frame at zero joint
acceleration and without gravity: the spatial acceleration (LOCAL), its world
expression (WORLD), or the classical acceleration of the frame origin in world
axes (LOCAL_WORLD_ALIGNED).
"""
import numpy as np
from numba import njit

from ..spatial import act_inv_motion, act_motion
from . import _args
from .kinematics import frame_pose, motion, placements

_jit = njit(cache=True)
WORLD, LOCAL, LOCAL_WORLD_ALIGNED = 0, 1, 2


@_jit
def jacobian_kernel(m, d, q, fid, ref, Jout):
    R = d.R3
    p = d.p3
    col = d.tmp6[0]
    placements(m, d, q)
    frame_pose(m, d, fid, R, p)
    Jout[:, :] = 0.0
    j = m.frame_body[fid]
    while j >= 0:
        for k in range(m.idx_v[j], m.idx_v[j] + m.nvj[j]):
            act_motion(d.oR[j], d.op[j], m.S[k], col)
            if ref != WORLD:
                # velocity of the frame origin: v_O + w x p
                col[0] += col[4] * p[2] - col[5] * p[1]
                col[1] += col[5] * p[0] - col[3] * p[2]
                col[2] += col[3] * p[1] - col[4] * p[0]
            if ref == LOCAL:
                for r in range(3):
                    Jout[r, k] = R[0, r] * col[0] + R[1, r] * col[1] + R[2, r] * col[2]
                    Jout[r + 3, k] = R[0, r] * col[3] + R[1, r] * col[4] + R[2, r] * col[5]
            else:
                for r in range(6):
                    Jout[r, k] = col[r]
        j = m.parent[j]


@_jit
def jacobian_dot_v_kernel(m, d, q, v, fid, ref, out):
    R = d.R3
    p = d.p3
    vf = d.tmp6[0]
    af = d.tmp6[1]
    placements(m, d, q)
    d.tmp6[2, :] = 0.0
    motion(m, d, v, d.zeros_v, d.tmp6[2])
    b = m.frame_body[fid]
    if b < 0:
        out[:] = 0.0
        return
    # the frame's own velocity and acceleration, frame axes
    act_inv_motion(m.frame_R[fid], m.frame_p[fid], d.v[b], vf)
    act_inv_motion(m.frame_R[fid], m.frame_p[fid], d.a[b], af)
    frame_pose(m, d, fid, R, p)
    if ref == LOCAL:
        out[:] = af
    elif ref == WORLD:
        act_motion(R, p, af, out)
    else:
        # classical acceleration of the origin: a + w x v, rotated to world axes
        c0 = af[0] + vf[4] * vf[2] - vf[5] * vf[1]
        c1 = af[1] + vf[5] * vf[0] - vf[3] * vf[2]
        c2 = af[2] + vf[3] * vf[1] - vf[4] * vf[0]
        for r in range(3):
            out[r] = R[r, 0] * c0 + R[r, 1] * c1 + R[r, 2] * c2
            out[r + 3] = R[r, 0] * af[3] + R[r, 1] * af[4] + R[r, 2] * af[5]


@_jit
def _jacobian_batch(m, d, Q, fid, ref, out):
    for n in range(Q.shape[0]):
        jacobian_kernel(m, d, Q[n], fid, ref, out[n])


@_jit
def _jacobian_dot_v_batch(m, d, Q, V, fid, ref, out):
    for n in range(Q.shape[0]):
        jacobian_dot_v_kernel(m, d, Q[n], V[n], fid, ref, out[n])


def frame_jacobian(model, q, frame, reference="local_world_aligned"):
    """The (6, nv) Jacobian of a frame, linear rows first; (N, 6, nv) for a batch."""
    (Q,), batched, n = _args.vectors(model, q=(q, model.nq))
    fid, ref = _args.frame(model, frame), _args.reference(reference)
    out = np.empty((n, 6, model.nv))
    _jacobian_batch(model.arrays, model.workspace, Q, fid, ref, out)
    return out if batched else out[0]


def frame_jacobian_dot_times_v(model, q, v, frame, reference="local_world_aligned"):
    """d/dt(J(q)) v for a frame (6,): its acceleration at zero joint acceleration, no gravity."""
    (Q, V), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv))
    fid, ref = _args.frame(model, frame), _args.reference(reference)
    out = np.empty((n, 6))
    _jacobian_dot_v_batch(model.arrays, model.workspace, Q, V, fid, ref, out)
    return out if batched else out[0]
