"""The Coriolis matrix C(q, v), with C v = h - g and dM/dt - 2C skew-symmetric.

With world-frame body inertias I_i, body Jacobians J_i and spatial velocities
v_i, ``C = sum_i J_i^T (I_i dJ_i + B_i J_i)`` where
``B(I, v) = 1/2 [(v x*) I + (I v) xbar - I (v x)]`` and ``f xbar m = m x* f``
(Echeandia & Wensing 2021, the factorisation Pinocchio's ``computeCoriolisMatrix``
uses). The columns of J_i are the world motion subspaces ``S_k`` of the DoFs on
i's path and their derivatives ``dS_k = v_j x S_k`` (j the body of DoF k), so with
composite sums over subtrees, ``IC_d`` and ``BC_d``,
``C[k, l] = S_k^T (IC_d dS_l + BC_d S_l)``, d the deeper body of k and l.
O(n d) with d the tree depth.
"""
import numpy as np
from numba import njit

from ..spatial import act_inertia, act_motion, cross_motion, matvec6
from . import _args
from .kinematics import motion, placements

_jit = njit(cache=True)


@_jit
def _b_matrix(Iw, vw, Vf, Vm, B):
    """B = 1/2 [(v x*) I + (I v) xbar - I (v x)] (world frame)."""
    Vf[:, :] = 0.0
    Vm[:, :] = 0.0
    for blk in range(2):
        o = 3 * blk
        # [w]x on the diagonal blocks
        Vf[o + 0, o + 1] = -vw[5]; Vf[o + 0, o + 2] = vw[4]
        Vf[o + 1, o + 0] = vw[5]; Vf[o + 1, o + 2] = -vw[3]
        Vf[o + 2, o + 0] = -vw[4]; Vf[o + 2, o + 1] = vw[3]
    Vm[:, :] = Vf
    # [v]x: force cross product lower-left, motion cross product upper-right
    Vf[3, 1] = -vw[2]; Vf[3, 2] = vw[1]; Vf[4, 0] = vw[2]; Vf[4, 2] = -vw[0]; Vf[5, 0] = -vw[1]; Vf[5, 1] = vw[0]
    Vm[0, 4] = -vw[2]; Vm[0, 5] = vw[1]; Vm[1, 3] = vw[2]; Vm[1, 5] = -vw[0]; Vm[2, 3] = -vw[1]; Vm[2, 4] = vw[0]
    # (I v) xbar = [[0, -[f]x], [-[f]x, -[n]x]]
    f0 = 0.0; f1 = 0.0; f2 = 0.0; n0 = 0.0; n1 = 0.0; n2 = 0.0
    for c in range(6):
        f0 += Iw[0, c] * vw[c]; f1 += Iw[1, c] * vw[c]; f2 += Iw[2, c] * vw[c]
        n0 += Iw[3, c] * vw[c]; n1 += Iw[4, c] * vw[c]; n2 += Iw[5, c] * vw[c]
    B[:, :] = 0.0
    for o_r, o_c in ((0, 3), (3, 0)):
        B[o_r + 0, o_c + 1] = f2; B[o_r + 0, o_c + 2] = -f1
        B[o_r + 1, o_c + 0] = -f2; B[o_r + 1, o_c + 2] = f0
        B[o_r + 2, o_c + 0] = f1; B[o_r + 2, o_c + 1] = -f0
    B[3, 4] += n2; B[3, 5] -= n1; B[4, 3] -= n2; B[4, 5] += n0; B[5, 3] += n1; B[5, 4] -= n0
    for r in range(6):
        for c in range(6):
            s = B[r, c]
            for k in range(6):
                s += Vf[r, k] * Iw[k, c] - Iw[r, k] * Vm[k, c]
            B[r, c] = 0.5 * s


@_jit
def coriolis_kernel(m, d, q, v, C):
    vw = d.tmp6[1]
    nb = m.parent.shape[0]
    # pass 1: forward, placements, velocities, world inertias, B matrices, S and dS
    placements(m, d, q)
    d.tmp6[2, :] = 0.0
    motion(m, d, v, d.zeros_v, d.tmp6[2])
    for i in range(nb):
        d.IC[i, :, :] = 0.0
        act_inertia(d.oR[i], d.op[i], m.inertia[i], d.X6[0], d.X6[1], d.IC[i])
        act_motion(d.oR[i], d.op[i], d.v[i], vw)
        _b_matrix(d.IC[i], vw, d.X6[0], d.X6[1], d.BC[i])
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            act_motion(d.oR[i], d.op[i], m.S[k], d.Sw[k])
            cross_motion(vw, d.Sw[k], d.dS[k])
    # pass 2: backward, composite sums over subtrees
    for i in range(nb - 1, 0, -1):
        pa = m.parent[i]
        if pa >= 0:
            for r in range(6):
                for c in range(6):
                    d.IC[pa, r, c] += d.IC[i, r, c]
                    d.BC[pa, r, c] += d.BC[i, r, c]
    # pass 3: entries, each pair (k, l) with l on the path from k's body to the root
    F = d.tmp6[2]
    G = d.tmp6[3]
    for i in range(nb):
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            j = i
            while j >= 0:
                for l in range(m.idx_v[j], m.idx_v[j] + m.nvj[j]):
                    matvec6(d.IC[i], d.dS[l], F)
                    matvec6(d.BC[i], d.Sw[l], G)
                    s = 0.0
                    for r in range(6):
                        s += d.Sw[k, r] * (F[r] + G[r])
                    C[k, l] = s
                    matvec6(d.IC[i], d.dS[k], F)
                    matvec6(d.BC[i], d.Sw[k], G)
                    s = 0.0
                    for r in range(6):
                        s += d.Sw[l, r] * (F[r] + G[r])
                    C[l, k] = s
                j = m.parent[j]


@_jit
def _coriolis_batch(m, d, Q, V, out):
    for n in range(Q.shape[0]):
        coriolis_kernel(m, d, Q[n], V[n], out[n])


def coriolis_matrix(model, q, v):
    """C(q, v) (nv, nv): C v = h - g and dM/dt - 2 C is skew-symmetric."""
    (Q, V), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv))
    out = np.empty((n, model.nv, model.nv))
    _coriolis_batch(model.arrays, model.workspace, Q, V, out)
    return out if batched else out[0]
