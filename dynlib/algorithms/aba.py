"""Articulated Body Algorithm: forward dynamics a = M(q)^-1 (tau + J^T f_ext - h(q, v)).

RBDA Table 7.1 (body frame, linear first), three passes, O(n):

1. forward: placements, velocities v_i, velocity-product terms c_i = v_i x (S_i v),
   articulated inertias IA_i = I_i and bias forces pA_i = v_i x* I_i v_i - f_ext_i;
2. backward: U = IA S, D = S^T U, u = tau - S^T pA, then
   Ia = IA - U D^-1 U^T and pa = pA + Ia c + U D^-1 u go to the parent;
3. forward: a'_i = liMi^-1 a_parent + c_i, qdd_i = D^-1 (u - U^T a'_i), a_i = a'_i + S qdd_i.

Gravity enters as the world's acceleration (-g, 0). Inputs q (nq,), v, tau (nv,),
f_ext (nb, 6); output a (nv,).
"""
import numpy as np
from numba import njit

from ..errors import ModelError
from ..spatial import (ZERO6, act_force, act_inertia, act_inv_motion, add6, add_to6, cross_force, cross_motion,
                       dot6, inertia_times, joint_motion, pose, scale6, store6, sub6, vec6)
from . import _args
from .kinematics import placements
from .linalg import spd_invert_block

_jit = njit(cache=True, _nrt=False)  # no reference counting (see dynlib.spatial)


@_jit
def aba_kernel(m, d, q, v, tau, fext, gravity, qdd):
    nb = m.parent.shape[0]
    # pass 1: forward, velocities, bias terms c and pA, articulated inertias IA = I
    placements(m, d, q)
    for i in range(nb):
        vJ = joint_motion(m.S, m.idx_v[i], m.nvj[i], v)
        pa = m.parent[i]
        vi = vJ if pa < 0 else add6(act_inv_motion(pose(d.lR, d.lp, i), vec6(d.v, pa)), vJ)
        store6(d.v, i, vi)
        store6(d.c, i, cross_motion(vi, vJ))
        store6(d.f, i, sub6(cross_force(vi, inertia_times(m.inertia, i, vi)), vec6(fext, i)))
        for r in range(6):
            for c in range(6):
                d.IC[i, r, c] = m.inertia[i, r, c]
    # pass 2: backward, U = IA S, D^-1 = (S^T U)^-1, u = tau - S^T pA; Ia and pa to the parent
    for i in range(nb - 1, -1, -1):
        iv = m.idx_v[i]
        n = m.nvj[i]
        pA = vec6(d.f, i)
        for k in range(iv, iv + n):
            Uk = inertia_times(d.IC, i, vec6(m.S, k))
            store6(d.U, k, Uk)
            d.u[k] = tau[k] - dot6(vec6(m.S, k), pA)
            for l in range(iv, iv + n):
                d.Dinv[i, l - iv, k - iv] = dot6(vec6(m.S, l), Uk)
        spd_invert_block(d.Dinv, i, n)
        pa = m.parent[i]
        if pa < 0:
            continue
        # Ia = IA - (U D^-1) U^T, pa = pA + Ia c + (U D^-1) u
        for k in range(n):
            UDk = ZERO6
            for l in range(n):
                UDk = add6(UDk, scale6(vec6(d.U, iv + l), d.Dinv[i, l, k]))
            Uk = vec6(d.U, iv + k)
            for r in range(6):
                for c in range(6):
                    d.IC[i, r, c] -= UDk[r] * Uk[c]
            pA = add6(pA, scale6(UDk, d.u[iv + k]))
        pA = add6(pA, inertia_times(d.IC, i, vec6(d.c, i)))
        liMi = pose(d.lR, d.lp, i)
        add_to6(d.f, pa, act_force(liMi, pA))
        act_inertia(liMi, d.IC, i, d.IC, pa)
    # pass 3: forward, a'_i = liMi^-1 a_parent + c_i, qdd_i = D^-1 (u - U^T a'_i), a_i = a'_i + S qdd_i
    a_world = (-gravity[0], -gravity[1], -gravity[2], 0.0, 0.0, 0.0)
    t = d.tmp6
    for i in range(nb):
        iv = m.idx_v[i]
        n = m.nvj[i]
        pa = m.parent[i]
        ai = add6(act_inv_motion(pose(d.lR, d.lp, i), a_world if pa < 0 else vec6(d.a, pa)), vec6(d.c, i))
        for k in range(n):
            t[0, k] = d.u[iv + k] - dot6(vec6(d.U, iv + k), ai)
        for k in range(n):
            s = 0.0
            for l in range(n):
                s += d.Dinv[i, k, l] * t[0, l]
            qdd[iv + k] = s
            ai = add6(ai, scale6(vec6(m.S, iv + k), s))
        store6(d.a, i, ai)


@_jit
def aba_batch(m, d, Q, V, TAU, F, gravity, out):
    for n in range(Q.shape[0]):
        aba_kernel(m, d, Q[n], V[n], TAU[n], F[n if F.shape[0] > 1 else 0], gravity, out[n])


def check_dynamics(model):
    """Raise ModelError when forward dynamics is undefined (a massless moving subtree)."""
    if model.massless_joints:
        raise ModelError(f"robot '{model.name}': the moving subtrees of joints {', '.join(model.massless_joints)} "
                         "have no mass or inertia, so the mass matrix is singular; give their links an <inertial>",
                         file=model.source or None)


def aba(model, q, v, tau, f_ext=None):
    """Forward dynamics by the articulated-body algorithm: the accelerations a (nv,)."""
    check_dynamics(model)
    (Q, V, T), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv), tau=(tau, model.nv))
    F = _args.external_forces(model, f_ext, n, batched)
    out = np.empty((n, model.nv))
    aba_batch(model.arrays, model.workspace, Q, V, T, F, model.arrays.gravity, out)
    return out if batched else out[0]
