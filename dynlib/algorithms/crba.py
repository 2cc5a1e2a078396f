"""Composite Rigid Body Algorithm: the joint-space inertia matrix M(q).

RBDA Table 6.2 (body frame, linear first): composite inertias
``IC_parent += liMi.act(IC_i)`` backward, and for each DoF k of body i the force
``F = IC_i S_k`` carried up the chain gives the row/column entries
``M[k, l] = M[l, k] = S_l . F`` for the DoFs l of i and its ancestors.
Input q (nq,); output M (nv, nv), symmetric. O(n d) with d the tree depth.
"""
import numpy as np
from numba import njit

from ..spatial import act_force, act_inertia
from . import _args
from .kinematics import placements

_jit = njit(cache=True)


@_jit
def crba_kernel(m, d, q, M):
    F = d.tmp6[0]
    G = d.tmp6[1]
    # pass 1: forward, joint placements
    placements(m, d, q)
    d.IC[:, :, :] = m.inertia
    M[:, :] = 0.0
    # pass 2: backward, composite inertias and the columns of M
    for i in range(m.parent.shape[0] - 1, -1, -1):
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += d.IC[i, r, c] * m.S[k, c]
                F[r] = s
            j = i
            while True:
                for l in range(m.idx_v[j], m.idx_v[j] + m.nvj[j]):
                    s = 0.0
                    for r in range(6):
                        s += m.S[l, r] * F[r]
                    M[k, l] = s
                    M[l, k] = s
                if m.parent[j] < 0:
                    break
                act_force(d.lR[j], d.lp[j], F, G)
                F[:] = G
                j = m.parent[j]
        pa = m.parent[i]
        if pa >= 0:
            act_inertia(d.lR[i], d.lp[i], d.IC[i], d.X6[0], d.X6[1], d.IC[pa])


@_jit
def crba_batch(m, d, Q, out):
    for n in range(Q.shape[0]):
        crba_kernel(m, d, Q[n], out[n])


def crba(model, q):
    """The joint-space inertia matrix M(q), (nv, nv) symmetric; (N, nv, nv) for a batch."""
    (Q,), batched, n = _args.vectors(model, q=(q, model.nq))
    out = np.empty((n, model.nv, model.nv))
    crba_batch(model.arrays, model.workspace, Q, out)
    return out if batched else out[0]
