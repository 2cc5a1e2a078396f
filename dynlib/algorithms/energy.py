"""Kinetic and potential energy.

``T = 1/2 sum_i v_i^T I_i v_i + 1/2 sum_k armature_k v_k^2`` (body frame, plus the
rotors' share, so that ``T = 1/2 v^T M v`` with M from `crba`, as in Pinocchio) and
``U = -sum_i m_i g^T c_i`` with c_i the body's centre of mass in the world (zero at the world origin, as in
Pinocchio; links fixed to the world do not count). O(n).
"""
import numpy as np

from .._numba.decorators import kernel
from ..core.spatial import dot6, rigid_inertia_times, vec6
from .._numba import parallel
from . import _args
from .._numba import one as _one
from .._numba.one import one_call
from .kinematics import placements, motion


@kernel
def kinetic_kernel(m, d, q, v):
    placements(m, d, q)
    a_world = d.tmp6[2]
    for r in range(6):
        a_world[r] = 0.0
    motion(m, d, v, d.zeros_v, a_world)
    T = 0.0
    for i in range(m.parent.shape[0]):
        vi = vec6(d.v, i)
        T += 0.5 * dot6(vi, rigid_inertia_times(m.inertia, i, vi))
    for k in range(v.shape[0]):
        T += 0.5 * m.armature[k] * v[k] * v[k]
    return T


@kernel
def potential_after_placements(m, d, gravity):
    U = 0.0
    I = m.inertia
    for i in range(m.parent.shape[0]):
        mass = I[i, 0, 0]
        # m c, read off the spatial inertia's [m c]x block
        mc0, mc1, mc2 = I[i, 5, 1], I[i, 3, 2], I[i, 4, 0]
        for r in range(3):
            wc = d.oR[i, r, 0] * mc0 + d.oR[i, r, 1] * mc1 + d.oR[i, r, 2] * mc2 + mass * d.op[i, r]
            U -= gravity[r] * wc
    return U


@kernel
def potential_kernel(m, d, q, gravity):
    placements(m, d, q)
    return potential_after_placements(m, d, gravity)


@kernel
def _kinetic_batch(m, d, Q, V, out):
    for n in range(Q.shape[0]):
        out[n] = kinetic_kernel(m, d, Q[n], V[n])


@kernel
def _potential_batch(m, d, Q, gravity, out):
    for n in range(Q.shape[0]):
        out[n] = potential_kernel(m, d, Q[n], gravity)


_kinetic_kernel_inlined = _one.inlined(kinetic_kernel)
_potential_kernel_inlined = _one.inlined(potential_kernel)


@kernel
def kinetic_one(ty, buf, q, v):
    """One call of kinetic_kernel (dynlib._numba.one, a scalar): T; NaN when q, v are not contiguous vectors
    of the model's sizes, not finite, or q holds a quaternion that cannot be normalised, _one.SCALAR_BUSY when
    another thread holds buf."""
    if not _one.acquire(buf):
        return _one.SCALAR_BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    T = np.nan
    if np.isfinite(_args.checked_q(m, q, nq) + _one.checked_sum(v, m.S.shape[0])):
        T = _kinetic_kernel_inlined(m, d, _one.contiguous(q), _one.contiguous(v))
    _one.release(buf)
    return T


@kernel
def potential_one(ty, buf, q):
    """One call of potential_kernel (dynlib._numba.one, a scalar): U; NaN when q is not a contiguous vector
    of size nq, not finite or holds a quaternion that cannot be normalised, _one.SCALAR_BUSY when another
    thread holds buf."""
    if not _one.acquire(buf):
        return _one.SCALAR_BUSY
    m, d, nq, f0 = _one.load(buf, ty)
    U = np.nan
    if np.isfinite(_args.checked_q(m, q, nq)):
        U = _potential_kernel_inlined(m, d, _one.contiguous(q), m.gravity)
    _one.release(buf)
    return U


@one_call(kinetic_one, "q v", None, _args.one_value)
def kinetic_energy(model, q, v):
    """T(q, v) = 1/2 v^T M(q) v, in joules; (N,) for a batch."""
    (Q, V), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv))
    out = np.empty(n)
    parallel.run(model, n, _kinetic_batch, (Q,), (V,), (out,))
    return out if batched else float(out[0])


@one_call(potential_one, "q", None, _args.one_value)
def potential_energy(model, q):
    """U(q) = -sum m_i g^T c_i, in joules; (N,) for a batch."""
    (Q,), batched, n = _args.vectors(model, q=(q, model.nq))
    out = np.empty(n)
    parallel.run(model, n, _potential_batch, (Q,), model.arrays.gravity, (out,))
    return out if batched else float(out[0])
