"""Frame Jacobians J(q) (6, nv) and the drift term J̇(q, v) v, in three references.

For each DoF k on the path from the frame's body to the root, the column is the
world-axes spatial velocity at the world origin ``oMj.act(S_k)`` (Pinocchio's
WORLD reference); the frame's origin velocity in world axes gives
LOCAL_WORLD_ALIGNED ``(v_O + w x p_f, w)`` and rotating that into the frame gives
LOCAL (Pinocchio's meanings; linear rows first). Only the placements of the
bodies on that path are computed (`path_placements`, Pinocchio's support of the
joint), so the Jacobian costs O(depth), not O(n).

``J̇v`` is ``d/dt(J(q)) v``, the acceleration of the frame at zero joint
acceleration and without gravity: the spatial acceleration (LOCAL), its world
expression (WORLD), or the classical acceleration of the frame origin in world
axes (LOCAL_WORLD_ALIGNED).
"""
import numpy as np

from .._numba.decorators import kernel
from ..errors import InputError  # noqa: F401 (the one-call prelude, _FRAME_AND_REFERENCE, runs in this module)
from ..core.spatial import act_inv_motion, act_motion, matvec3, matvec3_t, pose, vec6
from .._numba import parallel
from . import _args
from .._numba import one as _one
from ._args import REFERENCES  # noqa: F401 (as above)
from .._numba.one import one_call
from .kinematics import frame_transform, motion, path_placements, placements

WORLD, LOCAL, LOCAL_WORLD_ALIGNED = 0, 1, 2


@kernel
def jacobian_kernel(m, d, q, fid, ref, Jout):
    path_placements(m, d, q, m.frame_body[fid])
    R, p = frame_transform(m, d, fid)
    for r in range(6):
        for k in range(Jout.shape[1]):
            Jout[r, k] = 0.0
    j = m.frame_body[fid]
    while j >= 0:
        oMj = pose(d.oR, d.op, j)
        for k in range(m.idx_v[j], m.idx_v[j] + m.nvj[j]):
            c0, c1, c2, c3, c4, c5 = act_motion(oMj, vec6(m.S, k))
            if ref != WORLD:
                # velocity of the frame origin: v_O + w x p
                c0 += c4 * p[2] - c5 * p[1]
                c1 += c5 * p[0] - c3 * p[2]
                c2 += c3 * p[1] - c4 * p[0]
            if ref == LOCAL:
                c0, c1, c2 = matvec3_t(R, c0, c1, c2)
                c3, c4, c5 = matvec3_t(R, c3, c4, c5)
            Jout[0, k] = c0
            Jout[1, k] = c1
            Jout[2, k] = c2
            Jout[3, k] = c3
            Jout[4, k] = c4
            Jout[5, k] = c5
        j = m.parent[j]


@kernel
def jacobian_dot_v_kernel(m, d, q, v, fid, ref, out):
    placements(m, d, q)
    a_world = d.tmp6[2]
    for r in range(6):
        a_world[r] = 0.0
    motion(m, d, v, d.zeros_v, a_world)
    b = m.frame_body[fid]
    if b < 0:
        for r in range(6):
            out[r] = 0.0
        return
    # the frame's own velocity and acceleration, frame axes
    bMf = pose(m.frame_R, m.frame_p, fid)
    vf = act_inv_motion(bMf, vec6(d.v, b))
    af = act_inv_motion(bMf, vec6(d.a, b))
    oMf = frame_transform(m, d, fid)
    if ref == LOCAL:
        res = af
    elif ref == WORLD:
        res = act_motion(oMf, af)
    else:
        # classical acceleration of the origin: a + w x v, rotated to world axes
        c0 = af[0] + vf[4] * vf[2] - vf[5] * vf[1]
        c1 = af[1] + vf[5] * vf[0] - vf[3] * vf[2]
        c2 = af[2] + vf[3] * vf[1] - vf[4] * vf[0]
        x0, x1, x2 = matvec3(oMf[0], c0, c1, c2)
        w0, w1, w2 = matvec3(oMf[0], af[3], af[4], af[5])
        res = (x0, x1, x2, w0, w1, w2)
    for r in range(6):
        out[r] = res[r]


_jacobian_kernel_inlined = _one.inlined(jacobian_kernel)


@kernel
def jacobian_one(ty, buf, q, fid, ref, J):
    """One call of jacobian_kernel (dynlib._numba.one): 0; 1 when q is not a contiguous
    vector of size nq, not finite or holds a quaternion that cannot be normalised, _one.BUSY
    when another thread holds buf (then J is not written)."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq)):
        _jacobian_kernel_inlined(m, d, _one.contiguous(q), fid, ref, J)
        status = 0
    _one.release(buf)
    return status


_jacobian_dot_v_kernel_inlined = _one.inlined(jacobian_dot_v_kernel)


@kernel
def jacobian_dot_v_one(ty, buf, q, v, fid, ref, out):
    """One call of jacobian_dot_v_kernel (dynlib._numba.one): 0; 1 when q, v are not contiguous vectors of
    the model's sizes, not finite or q holds a quaternion that cannot be normalised, _one.BUSY when
    another thread holds buf (then out is not written)."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq) + _one.checked_sum(v, m.S.shape[0])):
        _jacobian_dot_v_kernel_inlined(m, d, _one.contiguous(q), _one.contiguous(v), fid, ref, out)
        status = 0
    _one.release(buf)
    return status


@kernel
def _jacobian_batch(m, d, Q, fid, ref, out):
    for n in range(Q.shape[0]):
        jacobian_kernel(m, d, Q[n], fid, ref, out[n])


@kernel
def _jacobian_dot_v_batch(m, d, Q, V, fid, ref, out):
    for n in range(Q.shape[0]):
        jacobian_dot_v_kernel(m, d, Q[n], V[n], fid, ref, out[n])


_FRAME_AND_REFERENCE = """
    try:  # (a frame name, the usual: one dict look-up)
        fid, ref = model._frame_index[frame], REFERENCES[reference]
    except (KeyError, TypeError):
        try:
            fid, ref = _args.frame(model, frame), _args.reference(reference)
        except InputError:
            fid = None  # (q is checked first: its error is the one raised when both are wrong)
"""  # the one-call path's first statements in frame_jacobian


@one_call(jacobian_one, "q", "(6, model.nv)", _args.one_value, ints="fid, ref", prelude=_FRAME_AND_REFERENCE,
          when="fid is not None")
def frame_jacobian(model, q, frame, reference="local_world_aligned"):
    """The (6, nv) Jacobian of a frame, linear rows first; (N, 6, nv) for a batch."""
    (Q,), batched, n = _args.vectors(model, q=(q, model.nq))
    fid, ref = _args.frame(model, frame), _args.reference(reference)
    out = np.empty((n, 6, model.nv))
    parallel.run(model, n, _jacobian_batch, (Q,), fid, ref, (out,))
    return out if batched else out[0]


@one_call(jacobian_dot_v_one, "q v", "(6,)", _args.one_value, ints="fid, ref", prelude=_FRAME_AND_REFERENCE,
          when="fid is not None")
def frame_jacobian_dot_times_v(model, q, v, frame, reference="local_world_aligned"):
    """d/dt(J(q)) v for a frame (6,): its acceleration at zero joint acceleration, no gravity."""
    (Q, V), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv))
    fid, ref = _args.frame(model, frame), _args.reference(reference)
    out = np.empty((n, 6))
    parallel.run(model, n, _jacobian_dot_v_batch, (Q,), (V,), fid, ref, (out,))
    return out if batched else out[0]
