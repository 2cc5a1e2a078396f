"""Recursive Newton-Euler Algorithm: inverse dynamics tau = M(q) a + h(q, v) - J^T f_ext.

RBDA Table 5.1 (body frame, linear first). Gravity enters as the world's
spatial acceleration ``(-g, 0)``. Inputs q (nq,), v, a (nv,), f_ext (nb, 6)
wrenches on each body in its frame; output tau (nv,), with the rotor inertias'
``armature a`` (Pinocchio's convention: the exact inverse of `aba`, and
``rnea(q, v, 0) = h`` unchanged). O(n). Leaves the joint
placements, body velocities, accelerations and forces in Data.lR, lp, v, a, f
(not the world placements Data.oR, op: `kinematics.placements` computes those).

Public: `rnea`, `nonlinear_effects` (h = C v + g), `gravity_torques` (g).
"""
import numpy as np

from .._numba.decorators import kernel
from ..core.spatial import act_force, add6, add_to6, cross_force, dot6, pose, rigid_inertia_times, store6, sub6, vec6
from .._numba import parallel
from . import _args
from .._numba import one as _one
from .._numba.one import one_call
from .kinematics import joint_placements, motion


@kernel
def rnea_kernel(m, d, q, v, a, fext, gravity, tau):
    nb = m.parent.shape[0]
    # pass 1: forward, joint placements, velocities and accelerations (the world's is (-g, 0))
    joint_placements(m, d, q)
    a_world = d.tmp6[3]
    for r in range(3):
        a_world[r] = -gravity[r]
        a_world[r + 3] = 0.0
    motion(m, d, v, a, a_world)
    # body forces f = I a + v x* I v - f_ext
    for i in range(nb):
        vi = vec6(d.v, i)
        Ia = rigid_inertia_times(m.inertia, i, vec6(d.a, i))
        Iv = rigid_inertia_times(m.inertia, i, vi)
        store6(d.f, i, sub6(add6(Ia, cross_force(vi, Iv)), vec6(fext, i)))
    # pass 2: backward, joint torques (with the rotor's armature a) and force propagation
    for i in range(nb - 1, -1, -1):
        fi = vec6(d.f, i)
        for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
            tau[k] = dot6(vec6(m.S, k), fi) + m.armature[k] * a[k]
        pa = m.parent[i]
        if pa >= 0:
            add_to6(d.f, pa, act_force(pose(d.lR, d.lp, i), fi))


@kernel
def rnea_batch(m, d, Q, V, A, F, gravity, out):
    """Rows of Q, V, A (and F when it has more than one row) through rnea_kernel."""
    for n in range(Q.shape[0]):
        rnea_kernel(m, d, Q[n], V[n if V.shape[0] > 1 else 0], A[n if A.shape[0] > 1 else 0],
                    F[n if F.shape[0] > 1 else 0], gravity, out[n])


_rnea_kernel_inlined = _one.inlined(rnea_kernel)


@kernel
def rnea_one(ty, buf, q, v, a, tau):
    """One call of rnea_kernel without external forces (dynlib._numba.one): 0; 1 when
    q, v, a are not contiguous vectors of the model's sizes, not finite, or q holds a quaternion
    that cannot be normalised, _one.BUSY when another thread holds buf (then tau is not written)."""
    if not _one.acquire(buf):
        return _one.BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    nv = m.S.shape[0]
    status = 1
    if np.isfinite(_args.checked_q(m, q, nq) + _one.checked_sum(v, nv) + _one.checked_sum(a, nv)):
        _rnea_kernel_inlined(m, d, _one.contiguous(q), _one.contiguous(v), _one.contiguous(a), f0, m.gravity, tau)
        status = 0
    _one.release(buf)
    return status


def _run(model, Q, V, A, f_ext, batched, n):
    F = _args.external_forces(model, f_ext, n, batched)
    out = np.empty((n, model.nv))
    parallel.run(model, n, rnea_batch, (Q,), (V,), (A,), (F,), model.arrays.gravity, (out,))
    return out if batched else out[0]


@one_call(rnea_one, "q v a", "(model.nv,)", _args.one_value, when="f_ext is None")
def rnea(model, q, v, a, f_ext=None):
    """Inverse dynamics: the joint torques tau (nv,) that produce acceleration a.

    f_ext (nb, 6): external wrenches on the bodies, body frame, linear first.
    Every argument may carry a leading batch dimension N.
    """
    # (plain vectors without f_ext took the one-call path, dynlib._numba.one; here: batches, f_ext, other
    # inputs, and every error named)
    (Q, V, A), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv), a=(a, model.nv))
    return _run(model, Q, V, A, f_ext, batched, n)


@one_call(rnea_one, "q v", "(model.nv,)", _args.one_value, args="q, v, _one.zeros(model.nv)")
def nonlinear_effects(model, q, v):
    """h(q, v) = C(q, v) v + g(q), the torques at zero acceleration."""
    (Q, V), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv))
    return _run(model, Q, V, np.zeros((1, model.nv)), None, batched, n)


@one_call(rnea_one, "q", "(model.nv,)", _args.one_value, args="q, z, z", prelude="z = _one.zeros(model.nv)")
def gravity_torques(model, q):
    """g(q), the torques that hold the robot still against gravity."""
    (Q,), batched, n = _args.vectors(model, q=(q, model.nq))
    z = np.zeros((1, model.nv))
    return _run(model, Q, z, z, None, batched, n)
