"""Analytical derivatives of inverse and forward dynamics (Carpentier & Mansard, RSS 2018).

`rnea_derivatives(model, q, v, a, f_ext)` -> ``(dtau_dq, dtau_dv, dtau_da)`` and
`aba_derivatives(model, q, v, tau, f_ext)` -> ``(dqdd_dq, dqdd_dv, dqdd_dtau)``, each
(nv, nv) (or (N, nv, nv)). Derivatives with respect to q are in the tangent space, as
Pinocchio's: column l is d/dε at ε = 0 of ``q ⊕ ε e_l`` (`dynlib.integrate`; a
free-flyer's six columns are its body-frame twist directions).

Derivation (world frame, Pinocchio's ``computeRNEADerivatives``). Every quantity below
is in world coordinates: J_k = oMi.act(S_k) the column of DoF k (i = b(k) its body,
p its parent body), ν_i the body velocity, α_i its acceleration with α_world = (-g, 0),
I_i the body inertia, h_i = I_i ν_i, f_i = I_i α_i + ν_i ×* h_i - oMi.act(f_ext_i),
and F_i = Σ f_m over i's subtree, so that ``tau_k = J_k · F_i + armature_k a_k``.
Since S_k is constant in its body, ``dJ_k/dt = ν_i × J_k`` and
``α_i = α_p + Σ_k (J_k a_k + (ν_i × J_k) v_k)``.

- Moving q_l (body j) by ε turns every world quantity of j's subtree by exp(ε J_l),
  except that ν and α of those bodies lose their parent's part:
  ``dν_m/dq_l = J_l × (ν_m - ν_p)`` and, with the Jacobi identity,
  ``dα_m/dq_l = J_l × (α_m - α_p) - (J_l × ν_p) × (ν_m - ν_p)`` (p = p(j)). A force
  of turned quantities turns (J_l ×* f), so, with ``B_m x = ν_m ×* I_m x - I_m (ν_m × x)
  + x ×* h_m`` (df_m/dν_m; twice the Coriolis matrix's B, `dynlib.algorithms.coriolis`; its first
  two terms are -(A + A^T) with A = I_m (ν_m ×), the last [[0, -[h_lin]×], [-[h_lin]×, -[h_ang]×]]):
  ``df_m/dq_l = J_l ×* f_m + I_m dAdq_l + B_m dVdq_l`` with
  ``dVdq_l = ν_p × J_l`` and ``dAdq_l = α_p × J_l + ν_p × dVdq_l``.
- ``df_m/dv_l = I_m dAdv_l + B_m J_l`` with ``dAdv_l = ν_j × J_l + dVdq_l``, and
  ``df_m/da_l = I_m J_l``, for m in j's subtree.
- Summed over subtrees (IC_i = Σ I_m, BC_i = Σ B_m, F_i), for DoFs k (body i) and l
  (body j) on one path, d the deeper of i and j:
  ``dtau_k/dq_l = J_k · (IC_d dAdq_l + BC_d dVdq_l) [+ J_k · (J_l ×* F_j) when j is
  strictly below i]`` (when j is i or above it, that term cancels with dJ_k/dq_l ·
  F_i = (J_l × J_k) · F_i); ``dtau_k/dv_l = J_k · (IC_d dAdv_l + BC_d J_l)``;
  ``dtau_k/da_l = J_k · IC_d J_l = M[k, l]`` (+ the armature on the diagonal).
  Pairs on different branches are zero.

Two passes, O(n d) (d the tree depth), like CRBA: forward, the world placements,
velocities, accelerations, inertias, B matrices, forces and per DoF J, dAdq, dAdv;
backward, for each DoF k of body i the column k against i and its ancestors
(``J_r · (IC_i X_k)``) and the row k against the ancestors (``(IC_i J_k) · X_l +
(BC_i^T J_k) · Y_l``), then IC, BC, F added to the parent.

Forward dynamics: ``M(q) qdd = tau - b(q, v)`` gives ``M dqdd = -dtau`` at qdd = ABA(q, v,
tau), so ``dqdd/d(q, v) = -M^-1 dtau/d(q, v)`` (the RNEA derivatives at that qdd) and
``dqdd/dtau = M^-1`` (as Pinocchio's ``computeABADerivatives``), M = dtau_da (with the
armature) by the sparse LTDL factorisation (`dynlib.algorithms.linalg.ltdl`), O(n² d).
`aba` applies no joint friction (the simulation does: SPEC §2), so neither does this.

Workspace used (world frame): Data.oR, op, lR, lp (placements), v, a (ν, α), f (F),
IC, BC (composites), Sw (J), U (dAdq), dS (dAdv), and
for `aba_derivatives` also Data.h (qdd) and L (the factor).

Public: `rnea_derivatives`, `aba_derivatives`.
"""
import numpy as np

from .._numba.decorators import kernel
from ..core.spatial import (ZERO6, act_force, act_motion, act_rigid_inertia, add6, cross_force, cross_motion, dot6,
                            inertia_times, inertia_transpose_times, inertia_variation, pose, rigid_inertia_times,
                            scale6, store6, sub6, vec6)
from .._numba import parallel
from . import _args
from .._numba import one as _one
from .._numba.one import one_call
from .aba import _singular, aba_kernel, check_dynamics
from .kinematics import placements
from .linalg import ltdl, ltdl_solve_columns


@kernel
def _parent_motion(d, pa, a_world):
    """(ν_p, α_p) of parent body pa in the world frame, the world's (0, (-g, 0)) for pa < 0."""
    if pa < 0:
        return ZERO6, a_world
    return vec6(d.v, pa), vec6(d.a, pa)


@kernel
def _forward_pass(m, d, q, v, a, fext, gravity):
    """pass 1: forward, world placements, velocities ν (Data.v), accelerations α (Data.a), inertias (IC),
    B matrices (BC), body forces f (Data.f), and per DoF J (Sw), dAdq (U), dAdv (dS)."""
    placements(m, d, q)
    a_world = (-gravity[0], -gravity[1], -gravity[2], 0.0, 0.0, 0.0)
    for i in range(m.parent.shape[0]):
        oMi = pose(d.oR, d.op, i)
        nu_p, al_p = _parent_motion(d, m.parent[i], a_world)
        vJ, aJ = ZERO6, ZERO6
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            J = act_motion(oMi, vec6(m.S, k))
            store6(d.Sw, k, J)
            vJ = add6(vJ, scale6(J, v[k]))
            aJ = add6(aJ, scale6(J, a[k]))
        nu = add6(nu_p, vJ)
        al = add6(add6(al_p, aJ), cross_motion(nu, vJ))  # α_i = α_p + J a + ν_i × J v
        store6(d.v, i, nu)
        store6(d.a, i, al)
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            J = vec6(d.Sw, k)
            dVdq = cross_motion(nu_p, J)
            store6(d.U, k, add6(cross_motion(al_p, J), cross_motion(nu_p, dVdq)))
            store6(d.dS, k, add6(cross_motion(nu, J), dVdq))
        for r in range(6):
            for c in range(6):
                d.IC[i, r, c] = 0.0
        act_rigid_inertia(oMi, m.inertia, i, d.IC, i)
        h = rigid_inertia_times(d.IC, i, nu)
        inertia_variation(d.IC, i, nu, h, d.BC)
        fi = add6(rigid_inertia_times(d.IC, i, al), cross_force(nu, h))
        store6(d.f, i, sub6(fi, act_force(oMi, vec6(fext, i))))


@kernel
def _column(m, d, i, k, dq, dv, da):
    """Column k (a DoF of body i) against the DoFs of i and its ancestors (composites of i's subtree);
    returns IC_i J_k."""
    J, dAdq, dAdv = vec6(d.Sw, k), vec6(d.U, k), vec6(d.dS, k)
    dVdq = ZERO6 if m.parent[i] < 0 else cross_motion(vec6(d.v, m.parent[i]), J)
    Fda = rigid_inertia_times(d.IC, i, J)  # (a sum of rigid-body inertias is one)
    Fdv = add6(rigid_inertia_times(d.IC, i, dAdv), inertia_times(d.BC, i, J))
    Fdq = add6(rigid_inertia_times(d.IC, i, dAdq), inertia_times(d.BC, i, dVdq))
    j = i
    while j >= 0:
        for r in range(m.idx_v[j], m.idx_v[j] + m.nvj[j]):
            Jr = vec6(d.Sw, r)
            da[r, k] = dot6(Jr, Fda)
            dv[r, k] = dot6(Jr, Fdv)
            dq[r, k] = dot6(Jr, Fdq)
        if j == i:  # below the joint's own DoFs, the subtree's force turns with J: J x* F_i
            Fdq = add6(Fdq, cross_force(J, vec6(d.f, i)))
        j = m.parent[j]
    return Fda


@kernel
def _row(m, d, i, k, u1, dq, dv, da):
    """Row k (a DoF of body i) against the DoFs of i's strict ancestors; u1 = IC_i J_k."""
    u2 = inertia_transpose_times(d.BC, i, vec6(d.Sw, k))
    j = m.parent[i]
    while j >= 0:
        pa = m.parent[j]
        for l in range(m.idx_v[j], m.idx_v[j] + m.nvj[j]):
            Jl = vec6(d.Sw, l)
            da[k, l] = dot6(u1, Jl)
            dv[k, l] = dot6(u1, vec6(d.dS, l)) + dot6(u2, Jl)
            dq[k, l] = dot6(u1, vec6(d.U, l)) + (0.0 if pa < 0 else dot6(u2, cross_motion(vec6(d.v, pa), Jl)))
        j = m.parent[j]


@kernel
def rnea_derivatives_kernel(m, d, q, v, a, fext, gravity, dq, dv, da):
    nb, nv = m.parent.shape[0], dq.shape[0]
    _forward_pass(m, d, q, v, a, fext, gravity)
    for r in range(nv):
        for c in range(nv):
            dq[r, c] = 0.0
            dv[r, c] = 0.0
            da[r, c] = 0.0
    # pass 2: backward, the columns and rows of each DoF, then the composites IC, BC, F to the parent
    for i in range(nb - 1, -1, -1):
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            _row(m, d, i, k, _column(m, d, i, k, dq, dv, da), dq, dv, da)
        pa = m.parent[i]
        if pa >= 0:
            for r in range(6):
                for c in range(6):
                    d.IC[pa, r, c] += d.IC[i, r, c]
                    d.BC[pa, r, c] += d.BC[i, r, c]
            store6(d.f, pa, add6(vec6(d.f, pa), vec6(d.f, i)))
    # the rotor inertias: tau += armature a
    for k in range(nv):
        da[k, k] += m.armature[k]


@kernel
def aba_derivatives_kernel(m, d, q, v, tau, fext, gravity, dq, dv, dtau):
    """The derivatives of qdd = ABA(q, v, tau) (left in Data.h); False when M is not positive definite."""
    aba_kernel(m, d, q, v, tau, fext, gravity, d.zeros_v, d.h)
    rnea_derivatives_kernel(m, d, q, v, d.h, fext, gravity, dq, dv, dtau)
    if not ltdl(dtau, m.dof_parent, d.L):
        return False
    nv = dtau.shape[0]
    for r in range(nv):
        for c in range(nv):
            dtau[r, c] = 1.0 if r == c else 0.0
    ltdl_solve_columns(d.L, m.dof_parent, dq, -1.0)
    ltdl_solve_columns(d.L, m.dof_parent, dv, -1.0)
    ltdl_solve_columns(d.L, m.dof_parent, dtau, 1.0)
    return True


@kernel
def _rnea_derivatives_batch(m, d, Q, V, A, F, gravity, DQ, DV, DA):
    for n in range(Q.shape[0]):
        rnea_derivatives_kernel(m, d, Q[n], V[n if V.shape[0] > 1 else 0], A[n if A.shape[0] > 1 else 0],
                                F[n if F.shape[0] > 1 else 0], gravity, DQ[n], DV[n], DA[n])


@kernel
def _aba_derivatives_batch(m, d, Q, V, T, F, gravity, DQ, DV, DT):
    """The rows through aba_derivatives_kernel: -1, or the first row where M is not positive definite."""
    for n in range(Q.shape[0]):
        if not aba_derivatives_kernel(m, d, Q[n], V[n if V.shape[0] > 1 else 0], T[n if T.shape[0] > 1 else 0],
                                      F[n if F.shape[0] > 1 else 0], gravity, DQ[n], DV[n], DT[n]):
            return n
    return -1


_rnea_derivatives_inlined = _one.inlined(rnea_derivatives_kernel)
_aba_derivatives_inlined = _one.inlined(aba_derivatives_kernel)


@kernel
def rnea_derivatives_one(ty, buf, q, v, a, out):
    """One call of rnea_derivatives_kernel without external forces (dynlib._numba.one) into out (3, nv, nv):
    0; 1 when q, v, a are not contiguous vectors of the model's sizes, not finite, or q holds a quaternion
    that cannot be normalised, _one.BUSY when another thread holds buf (then out is not written)."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    nv = m.S.shape[0]
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq) + _one.checked_sum(v, nv) + _one.checked_sum(a, nv)):
        _rnea_derivatives_inlined(m, d, _one.contiguous(q), _one.contiguous(v), _one.contiguous(a), f0, m.gravity,
                                  out[0], out[1], out[2])
        status = 0
    _one.release(buf)
    return status


@kernel
def aba_derivatives_one(ty, buf, q, v, tau, out):
    """One call of aba_derivatives_kernel without external forces into out (3, nv, nv): as
    rnea_derivatives_one, and 2 when M is not positive definite."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    nv = m.S.shape[0]
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq) + _one.checked_sum(v, nv) + _one.checked_sum(tau, nv)):
        ok = _aba_derivatives_inlined(m, d, _one.contiguous(q), _one.contiguous(v), _one.contiguous(tau), f0,
                                      m.gravity, out[0], out[1], out[2])
        status = 0 if ok else 2
    _one.release(buf)
    return status


def _outputs(model, n, batched):
    shape = (n, model.nv, model.nv)
    DQ, DV, DX = np.empty(shape), np.empty(shape), np.empty(shape)
    return (DQ, DV, DX), ((DQ, DV, DX) if batched else (DQ[0], DV[0], DX[0]))


@one_call(rnea_derivatives_one, "q v a", "(3, model.nv, model.nv)", _args.one_value, when="f_ext is None",
          result="(out[0], out[1], out[2])")
def rnea_derivatives(model, q, v, a, f_ext=None):
    """The derivatives of inverse dynamics tau = rnea(q, v, a, f_ext): (dtau_dq, dtau_dv, dtau_da), each
    (nv, nv); dtau_dq in the tangent space of q (`dynlib.integrate`'s directions), dtau_da = M(q) with the
    armature. f_ext (nb, 6): body-frame wrenches on the bodies, as `rnea`'s. Every argument may carry a
    leading batch dimension N (then each result is (N, nv, nv))."""
    (Q, V, A), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv), a=(a, model.nv))
    F = _args.external_forces(model, f_ext, n, batched)
    (DQ, DV, DA), result = _outputs(model, n, batched)
    parallel.run(model, n, _rnea_derivatives_batch, (Q,), (V,), (A,), (F,), model.arrays.gravity,
                 (DQ,), (DV,), (DA,))
    return result


@one_call(aba_derivatives_one, "q v tau", "(3, model.nv, model.nv)", _args.one_value, when="f_ext is None",
          prelude="check_dynamics(model)", result="(out[0], out[1], out[2])")
def aba_derivatives(model, q, v, tau, f_ext=None):
    """The derivatives of forward dynamics qdd = aba(q, v, tau, f_ext): (dqdd_dq, dqdd_dv, dqdd_dtau), each
    (nv, nv); dqdd_dq in the tangent space of q, dqdd_dtau = M(q)^-1 (with the armature). Arguments as
    `aba`'s; every one may carry a leading batch dimension N (then each result is (N, nv, nv))."""
    (Q, V, T), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv), tau=(tau, model.nv))
    F = _args.external_forces(model, f_ext, n, batched)
    (DQ, DV, DT), result = _outputs(model, n, batched)
    blocks = parallel.run(model, n, _aba_derivatives_batch, (Q,), (V,), (T,), (F,), model.arrays.gravity,
                          (DQ,), (DV,), (DT,))
    for start, bad in blocks:
        if bad >= 0:
            raise _singular(model, f"row {start + bad} of " if batched else "")
    if not (_args.all_finite(DQ) and _args.all_finite(DV)):
        raise _singular(model, "a row of " if batched else "")
    return result
