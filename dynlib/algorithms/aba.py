"""Articulated Body Algorithm: forward dynamics a = M(q)^-1 (tau + J^T f_ext - h(q, v)).

RBDA Table 7.1 (body frame, linear first), three passes, O(n):

1. forward: placements, velocities v_i, velocity-product terms c_i = v_i x (S_i v),
   articulated inertias IA_i = I_i and bias forces pA_i = v_i x* I_i v_i - f_ext_i;
2. backward: the DoFs k of joint i, last first, are eliminated one at a time
   (as if the joint were a chain of 1-DoF joints through massless bodies sharing
   body i's frame; for one DoF these are the book's equations):
   U_k = IA S_k, D_k = S_k^T U_k, u_k = tau_k - S_k^T pA, then
   IA -= U_k U_k^T / D_k and pA += U_k u_k / D_k; the result Ia, pa = pA + Ia c go to the parent;
3. forward: a_i = liMi^-1 a_parent + c_i, then for each DoF k in order,
   qdd_k = (u_k - U_k^T a_i) / D_k and a_i += S_k qdd_k.

Eliminating DoF by DoF is block Gaussian elimination of D = S^T IA S, the same
Ia, pa and qdd as with D^-1, without inverting D. Gravity enters as the world's
acceleration (-g, 0). Inputs q (nq,), v, tau (nv,), f_ext (nb, 6); output a (nv,).

A joint-space diagonal enters D_k = S_k^T IA S_k + armature_k + diag_k (the rotor
inertia of a 1-DoF joint, RBDA §9.3; Pinocchio's ``model.armature``): the kernel
solves (M + diag(armature + diag)) a = tau + J^T f_ext - h, still O(n). ``diag``
(nv,) is the kernel's argument for the terms that are no part of the model: the
implicit joint damping and PD gains of a simulation step (`dynlib.sim.dynamics`); the
public `aba` passes zeros.

Afterwards Data.U[k], u[k] hold U_k, u_k and Data.Dinv[i, j, j] holds 1 / D_k
(k the j-th DoF of joint i); Data.lR, lp the joint placements, but not the world
placements Data.oR, op (`kinematics.placements` computes those); Data.v, c the
velocities and velocity-product terms of pass 1, which `aba_at_velocities` (passes
2 and 3 with the bias forces and IA = I) reuses for a second right-hand side or
diagonal at the same (q, v).
"""
import numpy as np

from .._numba.decorators import kernel
from ..errors import ModelError, NumericalError
from ..core.spatial import (act_force, act_inertia, act_inv_motion, add6, add_to6, cross_force, cross_motion, dot6,
                            inertia_times, joint_motion, pose, rigid_inertia_times, scale6, store6, sub6, sub_outer6,
                            vec6)
from .._numba import parallel
from . import _args
from .._numba import one as _one
from .._numba.one import one_call
from .kinematics import joint_placements


@kernel
def aba_kernel(m, d, q, v, tau, fext, gravity, diag, qdd):
    # pass 1: forward, joint placements, velocities v_i, velocity-product terms c_i
    joint_placements(m, d, q)
    for i in range(m.parent.shape[0]):
        vJ = joint_motion(m.S, m.idx_v[i], m.nvj[i], v)
        pa = m.parent[i]
        vi = vJ if pa < 0 else add6(act_inv_motion(pose(d.lR, d.lp, i), vec6(d.v, pa)), vJ)
        store6(d.v, i, vi)
        store6(d.c, i, cross_motion(vi, vJ))
    aba_at_velocities(m, d, tau, fext, gravity, diag, qdd)


@kernel
def aba_at_velocities(m, d, tau, fext, gravity, diag, qdd):
    """The ABA after pass 1: on the joint placements, velocities and c of (q, v) in Data.lR, lp, v, c
    (left there by `aba_kernel`, which passes 2 and 3 do not overwrite), so that another tau, fext or
    diagonal at the same state costs no pass 1 again."""
    nb = m.parent.shape[0]
    # pass 1 (end): bias forces pA = v x* I v - f_ext, articulated inertias IA = I
    for i in range(nb):
        vi = vec6(d.v, i)
        store6(d.f, i, sub6(cross_force(vi, rigid_inertia_times(m.inertia, i, vi)), vec6(fext, i)))
        for r in range(6):
            for c in range(6):
                d.IC[i, r, c] = m.inertia[i, r, c]
    # pass 2: backward, each DoF eliminated from (IA, pA), D_k with the diagonal; Ia, pa = pA + Ia c to the parent
    for i in range(nb - 1, -1, -1):
        iv = m.idx_v[i]
        pA = vec6(d.f, i)
        for k in range(iv + m.nvj[i] - 1, iv - 1, -1):
            Sk = vec6(m.S, k)
            Uk = inertia_times(d.IC, i, Sk)
            Dinv = 1.0 / (dot6(Sk, Uk) + m.armature[k] + diag[k])
            uk = tau[k] - dot6(Sk, pA)
            store6(d.U, k, Uk)
            d.u[k] = uk
            d.Dinv[i, k - iv, k - iv] = Dinv
            sub_outer6(d.IC, i, scale6(Uk, Dinv), Uk)
            pA = add6(pA, scale6(Uk, uk * Dinv))
        pa = m.parent[i]
        if pa >= 0:
            liMi = pose(d.lR, d.lp, i)
            add_to6(d.f, pa, act_force(liMi, add6(pA, inertia_times(d.IC, i, vec6(d.c, i)))))
            act_inertia(liMi, d.IC, i, d.IC, pa)
    # pass 3: forward, a_i = liMi^-1 a_parent + c_i, qdd_k = (u_k - U_k^T a_i) / D_k, a_i += S_k qdd_k
    a_world = (-gravity[0], -gravity[1], -gravity[2], 0.0, 0.0, 0.0)
    for i in range(nb):
        iv = m.idx_v[i]
        pa = m.parent[i]
        ai = add6(act_inv_motion(pose(d.lR, d.lp, i), a_world if pa < 0 else vec6(d.a, pa)), vec6(d.c, i))
        for k in range(iv, iv + m.nvj[i]):
            qdd[k] = (d.u[k] - dot6(vec6(d.U, k), ai)) * d.Dinv[i, k - iv, k - iv]
            ai = add6(ai, scale6(vec6(m.S, k), qdd[k]))
        store6(d.a, i, ai)


@kernel
def aba_solve(parent, idx_v, nvj, S, lR, lp, U, Dinv, f, u, acc, tau, qdd):
    """qdd = (M + diag(armature + diag))⁻¹ tau on the factorization that the last `aba_kernel` call left in
    Data (its joint placements lR, lp; U_k, 1/D_k in U, Dinv): passes 2 and 3 without velocities, gravity or
    external wrenches, O(n) with no inertia update (another right-hand side at the same q, e.g. a unit torque:
    a column of M⁻¹). Model arrays parent, idx_v, nvj, S; Data arrays, whose f, u, acc (Data.f, u, a: the
    pass-2 forces, u_k, the body accelerations) it overwrites. Plain arrays, not the Model and Data tuples: a
    simulation step calls it once per joint at a limit (`dynlib.sim.joint_limits`), and a compiled call
    passes a tuple's arrays one by one."""
    nb = parent.shape[0]
    for i in range(nb):
        store6(f, i, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    # pass 2: backward, u_k = tau_k - S_k^T pA, pA += U_k u_k / D_k, pA to the parent
    for i in range(nb - 1, -1, -1):
        iv = idx_v[i]
        pA = vec6(f, i)
        for k in range(iv + nvj[i] - 1, iv - 1, -1):
            uk = tau[k] - dot6(vec6(S, k), pA)
            u[k] = uk
            pA = add6(pA, scale6(vec6(U, k), uk * Dinv[i, k - iv, k - iv]))
        pa = parent[i]
        if pa >= 0:
            add_to6(f, pa, act_force(pose(lR, lp, i), pA))
    # pass 3: forward, a_i = liMi^-1 a_parent (the root's: zero), qdd_k = (u_k - U_k^T a_i) / D_k
    for i in range(nb):
        iv = idx_v[i]
        pa = parent[i]
        ai = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0) if pa < 0 else act_inv_motion(pose(lR, lp, i), vec6(acc, pa))
        for k in range(iv, iv + nvj[i]):
            qdd[k] = (u[k] - dot6(vec6(U, k), ai)) * Dinv[i, k - iv, k - iv]
            ai = add6(ai, scale6(vec6(S, k), qdd[k]))
        store6(acc, i, ai)


@kernel
def aba_batch(m, d, Q, V, TAU, F, gravity, out):
    for n in range(Q.shape[0]):
        aba_kernel(m, d, Q[n], V[n], TAU[n], F[n if F.shape[0] > 1 else 0], gravity, d.zeros_v, out[n])


_aba_kernel_inlined = _one.inlined(aba_kernel)


@kernel
def aba_one(ty, buf, q, v, tau, qdd):
    """One call of aba_kernel without external forces (dynlib._numba.one): 0; 1 when q, v,
    tau are not contiguous vectors of the model's sizes, not finite, or q holds a quaternion that
    cannot be normalised, _one.BUSY when another thread holds buf (qdd not written); 2 when qdd
    is not finite."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    nv = m.S.shape[0]
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq) + _one.checked_sum(v, nv) + _one.checked_sum(tau, nv)):
        qc, vc, tauc = _one.contiguous(q), _one.contiguous(v), _one.contiguous(tau)
        _aba_kernel_inlined(m, d, qc, vc, tauc, f0, m.gravity, d.zeros_v, qdd)
        status = 0 if np.isfinite(_one.checked_sum(qdd, nv)) else 2
    _one.release(buf)
    return status


def check_dynamics(model):
    """Raise ModelError when forward dynamics is undefined (a massless moving subtree)."""
    if model.massless_joints:
        raise ModelError(f"robot '{model.name}': the moving subtrees of joints {', '.join(model.massless_joints)} "
                         "have no mass or inertia, so the mass matrix is singular; give their links an <inertial>",
                         file=model.source or None)


@one_call(aba_one, "q v tau", "(model.nv,)", _args.one_value, when="f_ext is None",
          prelude="check_dynamics(model)")
def aba(model, q, v, tau, f_ext=None):
    """Forward dynamics by the articulated-body algorithm: the accelerations a (nv,)."""
    # (check_dynamics ran, and plain vectors without f_ext took the one-call path, dynlib._numba.one; here:
    # batches, f_ext, other inputs, and every error named, a singular M too)
    (Q, V, T), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv), tau=(tau, model.nv))
    F = _args.external_forces(model, f_ext, n, batched)
    out = np.empty((n, model.nv))
    parallel.run(model, n, aba_batch, (Q,), (V,), (T,), (F,), model.arrays.gravity, (out,))
    if not _args.all_finite(out):
        row = int(np.argwhere(~np.isfinite(out))[0, 0])
        raise _singular(model, f"row {row} of " if batched else "")
    return out if batched else out[0]


def _singular(model, where):
    return NumericalError(f"robot '{model.name}': the mass matrix is singular at {where}q (the accelerations are "
                          "not finite); a body with no inertia about a joint's axis, or two joints moving the same way?",
                          file=model.source or None)
