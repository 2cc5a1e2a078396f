"""The Coriolis matrix C(q, v), with C v = h - g and dM/dt - 2C skew-symmetric.

With world-frame body inertias I_i, body Jacobians J_i and spatial velocities
v_i, ``C = sum_i J_i^T (I_i dJ_i + B_i J_i)`` where
``B(I, v) = 1/2 [(v x*) I + (I v) xbar - I (v x)]`` and ``f xbar m = m x* f``
(Echeandia & Wensing 2021, the factorisation Pinocchio's ``computeCoriolisMatrix``
uses; 2 B is `dynlib.core.spatial.inertia_variation`, the B of the RNEA derivatives). The columns of J_i are the world motion subspaces ``S_k`` of the DoFs on
i's path and their derivatives ``dS_k = v_j x S_k`` (j the body of DoF k), so with
composite sums over subtrees, ``IC_d`` and ``BC_d``,
``C[k, l] = S_k^T (IC_d dS_l + BC_d S_l)``, d the deeper body of k and l.
O(n d) with d the tree depth.
"""
import numpy as np

from .._numba.decorators import kernel
from ..core.spatial import (act_inertia, act_motion, add6, cross_motion, dot6, inertia_times, inertia_variation, pose,
                            store6, vec6)
from .._numba import parallel
from . import _args
from .._numba import one as _one
from .._numba.one import one_call
from .kinematics import motion, placements


@kernel
def coriolis_kernel(m, d, q, v, C):
    nb = m.parent.shape[0]
    # pass 1: forward, placements, velocities, world inertias, B matrices, S and dS
    placements(m, d, q)
    a_world = d.tmp6[2]
    for r in range(6):
        a_world[r] = 0.0
    motion(m, d, v, d.zeros_v, a_world)
    for i in range(nb):
        oMi = pose(d.oR, d.op, i)
        for r in range(6):
            for c in range(6):
                d.IC[i, r, c] = 0.0
        act_inertia(oMi, m.inertia, i, d.IC, i)
        vw = act_motion(oMi, vec6(d.v, i))
        inertia_variation(d.IC, i, vw, inertia_times(d.IC, i, vw), d.BC)  # 2 B, halved:
        for r in range(6):
            for c in range(6):
                d.BC[i, r, c] *= 0.5
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            Sk = act_motion(oMi, vec6(m.S, k))
            store6(d.Sw, k, Sk)
            store6(d.dS, k, cross_motion(vw, Sk))
    # pass 2: backward, composite sums over subtrees
    for i in range(nb - 1, 0, -1):
        pa = m.parent[i]
        if pa >= 0:
            for r in range(6):
                for c in range(6):
                    d.IC[pa, r, c] += d.IC[i, r, c]
                    d.BC[pa, r, c] += d.BC[i, r, c]
    # pass 3: entries, each pair (k, l) with l on the path from k's body i to the root (0 for other pairs)
    for k in range(C.shape[0]):
        for l in range(C.shape[1]):
            C[k, l] = 0.0
    for i in range(nb):
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            Sk = vec6(d.Sw, k)
            Fk = add6(inertia_times(d.IC, i, vec6(d.dS, k)), inertia_times(d.BC, i, Sk))
            j = i
            while j >= 0:
                for l in range(m.idx_v[j], m.idx_v[j] + m.nvj[j]):
                    Sl = vec6(d.Sw, l)
                    C[k, l] = dot6(Sk, add6(inertia_times(d.IC, i, vec6(d.dS, l)), inertia_times(d.BC, i, Sl)))
                    C[l, k] = dot6(Sl, Fk)
                j = m.parent[j]


@kernel
def _coriolis_batch(m, d, Q, V, out):
    for n in range(Q.shape[0]):
        coriolis_kernel(m, d, Q[n], V[n], out[n])


_coriolis_kernel_inlined = _one.inlined(coriolis_kernel)


@kernel
def coriolis_one(ty, buf, q, v, C):
    """One call of coriolis_kernel (dynlib._numba.one): 0; 1 when q, v are not contiguous
    vectors of the model's sizes, not finite, or q holds a quaternion that cannot be normalised,
    _one.BUSY when another thread holds buf (then C is not written)."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq) + _one.checked_sum(v, m.S.shape[0])):
        _coriolis_kernel_inlined(m, d, _one.contiguous(q), _one.contiguous(v), C)
        status = 0
    _one.release(buf)
    return status


@one_call(coriolis_one, "q v", "(model.nv, model.nv)", _args.one_value)
def coriolis_matrix(model, q, v):
    """C(q, v) (nv, nv): C v = h - g and dM/dt - 2 C is skew-symmetric."""
    (Q, V), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv))
    out = np.empty((n, model.nv, model.nv))
    parallel.run(model, n, _coriolis_batch, (Q,), (V,), (out,))
    return out if batched else out[0]
