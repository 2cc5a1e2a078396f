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
from ..spatial import act_force, act_inertia, act_inv_motion, cross_force, cross_motion, matvec6
from . import _args
from .kinematics import placements
from .linalg import spd_inverse

_jit = njit(cache=True)


@_jit
def aba_kernel(m, d, q, v, tau, fext, gravity, qdd):
    t = d.tmp6
    nb = m.parent.shape[0]
    # pass 1: forward, velocities, bias terms, articulated inertias
    placements(m, d, q)
    for i in range(nb):
        vJ = t[0]
        vJ[:] = 0.0
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            for r in range(6):
                vJ[r] += m.S[k, r] * v[k]
        pa = m.parent[i]
        if pa < 0:
            d.v[i, :] = vJ
        else:
            act_inv_motion(d.lR[i], d.lp[i], d.v[pa], d.v[i])
            for r in range(6):
                d.v[i, r] += vJ[r]
        cross_motion(d.v[i], vJ, d.c[i])
        d.IC[i, :, :] = m.inertia[i]
        matvec6(m.inertia[i], d.v[i], t[1])
        cross_force(d.v[i], t[1], d.f[i])
        for r in range(6):
            d.f[i, r] -= fext[i, r]
    # pass 2: backward, articulated inertias and bias forces
    for i in range(nb - 1, -1, -1):
        iv = m.idx_v[i]
        n = m.nvj[i]
        IA = d.IC[i]
        D = d.X6[0]
        for k in range(n):
            matvec6(IA, m.S[iv + k], d.U[iv + k])
            s = tau[iv + k]
            for r in range(6):
                s -= m.S[iv + k, r] * d.f[i, r]
            d.u[iv + k] = s
            for l in range(n):
                s = 0.0
                for r in range(6):
                    s += m.S[iv + l, r] * d.U[iv + k, r]
                D[l, k] = s
        spd_inverse(D, n, d.X6[1], d.Dinv[i])
        pa = m.parent[i]
        if pa < 0:
            continue
        # UD = U Dinv (kept in X6[0] rows 0..n-1), then Ia = IA - UD U^T, pa = pA + Ia c + UD u
        UD = d.X6[0]
        for k in range(n):
            for r in range(6):
                s = 0.0
                for l in range(n):
                    s += d.U[iv + l, r] * d.Dinv[i, l, k]
                UD[k, r] = s
        for r in range(6):
            for c in range(6):
                s = 0.0
                for k in range(n):
                    s += UD[k, r] * d.U[iv + k, c]
                IA[r, c] -= s
        matvec6(IA, d.c[i], t[1])
        for r in range(6):
            s = d.f[i, r] + t[1, r]
            for k in range(n):
                s += UD[k, r] * d.u[iv + k]
            t[2, r] = s
        act_force(d.lR[i], d.lp[i], t[2], t[3])
        for r in range(6):
            d.f[pa, r] += t[3, r]
        act_inertia(d.lR[i], d.lp[i], IA, d.X6[0], d.X6[1], d.IC[pa])
    # pass 3: forward, accelerations
    for r in range(3):
        t[3, r] = -gravity[r]
        t[3, r + 3] = 0.0
    for i in range(nb):
        iv = m.idx_v[i]
        n = m.nvj[i]
        pa = m.parent[i]
        act_inv_motion(d.lR[i], d.lp[i], t[3] if pa < 0 else d.a[pa], d.a[i])
        for r in range(6):
            d.a[i, r] += d.c[i, r]
        for k in range(n):
            s = d.u[iv + k]
            for r in range(6):
                s -= d.U[iv + k, r] * d.a[i, r]
            t[0, k] = s
        for k in range(n):
            s = 0.0
            for l in range(n):
                s += d.Dinv[i, k, l] * t[0, l]
            qdd[iv + k] = s
            for r in range(6):
                d.a[i, r] += m.S[iv + k, r] * s


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
