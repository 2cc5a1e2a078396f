"""Task-space (operational-space) inertia and bias of a frame.

``Lambda = (J M^-1 J^T)^-1`` and ``mu = Lambda (J M^-1 h - J̇ v)``, with J the
frame's LOCAL_WORLD_ALIGNED Jacobian (Khatib 1987): the frame then obeys
``Lambda xdd + mu = F`` for a wrench F applied at it. When J has fewer than six
independent rows (a robot with fewer than six DoF reaching the frame), the
inverse is the pseudo-inverse: Lambda is the inertia seen along the directions
the robot can move. Uses CRBA, RNEA and the Jacobian kernels; O(n^2 + n d).
"""
import numpy as np

from .._numba.decorators import allocating_kernel
from .._numba import parallel
from . import _args
from .aba import check_dynamics
from .crba import crba_kernel
from .jacobians import LOCAL_WORLD_ALIGNED, jacobian_dot_v_kernel, jacobian_kernel
from .linalg import cholesky, cholesky_solve
from .rnea import rnea_kernel


@allocating_kernel
def task_space_kernel(m, d, q, v, fid, fext0, Lam, mu):
    nv = m.S.shape[0]
    Jf = np.empty((6, nv))
    MinvJT = np.empty((nv, 6))
    jdv = np.empty(6)
    crba_kernel(m, d, q, d.M)
    cholesky(d.M, d.L)
    rnea_kernel(m, d, q, v, d.zeros_v, fext0, m.gravity, d.h)
    jacobian_dot_v_kernel(m, d, q, v, fid, LOCAL_WORLD_ALIGNED, jdv)
    jacobian_kernel(m, d, q, fid, LOCAL_WORLD_ALIGNED, Jf)
    for r in range(6):
        cholesky_solve(d.L, Jf[r], MinvJT[:, r])
    A = Jf @ MinvJT
    Lam[:, :] = np.linalg.pinv(A, rcond=1e-12)
    Minvh = np.empty(nv)
    cholesky_solve(d.L, d.h, Minvh)
    rhs = Jf @ Minvh - jdv
    mu[:] = Lam @ rhs


@allocating_kernel
def _task_space_batch(m, d, Q, V, fid, fext0, L_out, mu_out):
    for n in range(Q.shape[0]):
        task_space_kernel(m, d, Q[n], V[n], fid, fext0, L_out[n], mu_out[n])


def task_space_inertia(model, q, frame, v=None):
    """(Lambda (6, 6), mu (6,)): the frame's task-space inertia and bias force (linear first).

    v defaults to zero (then mu is the gravity part only). Batches give (N, 6, 6), (N, 6).
    """
    check_dynamics(model)
    if v is None:
        v = np.zeros(np.shape(q)[:-1] + (model.nv,))
    (Q, V), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv))
    fid = _args.frame(model, frame)
    L_out, mu_out = np.empty((n, 6, 6)), np.empty((n, 6))
    parallel.run(model, n, _task_space_batch, (Q,), (V,), fid, np.zeros((model.nb, 6)), (L_out,), (mu_out,))
    return (L_out, mu_out) if batched else (L_out[0], mu_out[0])
