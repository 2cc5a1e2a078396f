"""Composite Rigid Body Algorithm: the joint-space inertia matrix M(q).

RBDA Table 6.2 (linear first) with Pinocchio's world-frame columns: composite
inertias ``IC_parent += liMi.act(IC_i)`` backward in body frames, and for each
DoF k of body i the force ``F = oMi.act(IC_i S_k)`` in the world frame gives the
row/column entries ``M[k, l] = M[l, k] = oS_l . F`` for the DoFs l of i and its
ancestors, with ``oS_l = oMj.act(S_l)`` (Data.Sw). In the world frame F needs
no carrying up the chain. The model's armature (rotor inertia) is added to the
diagonal, as in Pinocchio. Input q (nq,); output M (nv, nv), symmetric.
O(n d) with d the tree depth.
"""
import numpy as np

from .._numba.decorators import kernel
from ..core.spatial import act_force, act_motion, act_rigid_inertia, dot6, pose, rigid_inertia_times, store6, vec6
from .._numba import parallel
from . import _args
from .._numba import one as _one
from .._numba.one import one_call
from .kinematics import placements


@kernel
def crba_kernel(m, d, q, M):
    nb = m.parent.shape[0]
    nv = M.shape[0]
    # pass 1: forward, placements and world motion subspaces oS; IC = I, M = 0
    placements(m, d, q)
    for i in range(nb):
        oMi = pose(d.oR, d.op, i)
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            store6(d.Sw, k, act_motion(oMi, vec6(m.S, k)))
        for r in range(6):
            for c in range(6):
                d.IC[i, r, c] = m.inertia[i, r, c]
    for k in range(nv):
        for l in range(nv):
            M[k, l] = 0.0
    # pass 2: backward, composite inertias and the rows of M
    for i in range(nb - 1, -1, -1):
        oMi = pose(d.oR, d.op, i)
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            F = act_force(oMi, rigid_inertia_times(d.IC, i, vec6(m.S, k)))
            j = i
            while j >= 0:
                for l in range(m.idx_v[j], m.idx_v[j] + m.nvj[j]):
                    M[k, l] = dot6(vec6(d.Sw, l), F)
                    M[l, k] = M[k, l]
                j = m.parent[j]
        pa = m.parent[i]
        if pa >= 0:
            act_rigid_inertia(pose(d.lR, d.lp, i), d.IC, i, d.IC, pa)
    # the rotor inertias on the diagonal
    for k in range(nv):
        M[k, k] += m.armature[k]


@kernel
def crba_batch(m, d, Q, out):
    for n in range(Q.shape[0]):
        crba_kernel(m, d, Q[n], out[n])


_crba_kernel_inlined = _one.inlined(crba_kernel)


@kernel
def crba_one(ty, buf, q, M):
    """One call of crba_kernel (dynlib._numba.one): 0; 1 when q is not a contiguous vector
    of size nq, not finite or holds a quaternion that cannot be normalised, _one.BUSY when
    another thread holds buf (then M is not written)."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq)):
        _crba_kernel_inlined(m, d, _one.contiguous(q), M)
        status = 0
    _one.release(buf)
    return status


@one_call(crba_one, "q", "(model.nv, model.nv)", _args.one_value)
def crba(model, q):
    """The joint-space inertia matrix M(q), (nv, nv) symmetric; (N, nv, nv) for a batch."""
    (Q,), batched, n = _args.vectors(model, q=(q, model.nq))
    out = np.empty((n, model.nv, model.nv))
    parallel.run(model, n, crba_batch, (Q,), (out,))
    return out if batched else out[0]
