"""Forward dynamics by three methods, for teaching and cross-validation.

- ``"aba"``: the articulated-body algorithm, O(n) (`dynlib.algorithms.aba`);
- ``"crba"``: M(q) by CRBA, h by RNEA, then ``M a = tau - h`` by Cholesky, O(n^3);
- ``"rnea"``: the method of Modern Robotics §8.5: h = ID(q, v, 0) with gravity,
  the columns of M as ID(q, 0, e_j) without gravity — n + 1 inverse-dynamics
  calls — then the Cholesky solve.
All three give the same a (nv,) up to round-off.
"""
import numpy as np

from .._numba.decorators import allocating_kernel
from ..errors import InputError, NumericalError
from .._numba import parallel
from . import _args
from .aba import aba, check_dynamics
from .crba import crba_kernel
from .linalg import cholesky, cholesky_solve
from .rnea import rnea_kernel


@allocating_kernel
def crba_forward_kernel(m, d, q, v, tau, fext, gravity, qdd):
    """a = M^-1 (tau - h), M by CRBA and h by RNEA. Returns False if M is not PD."""
    crba_kernel(m, d, q, d.M)
    rnea_kernel(m, d, q, v, d.zeros_v, fext, gravity, d.h)
    if not cholesky(d.M, d.L):
        return False
    for k in range(qdd.shape[0]):
        qdd[k] = tau[k] - d.h[k]
    cholesky_solve(d.L, qdd, qdd)
    return True


@allocating_kernel
def rnea_forward_kernel(m, d, q, v, tau, fext, gravity, qdd):
    """The n + 1 RNEA calls method. Returns False if M is not PD."""
    nv = qdd.shape[0]
    rnea_kernel(m, d, q, v, d.zeros_v, fext, gravity, d.h)
    e = np.zeros(nv)
    col = np.empty(nv)
    g0 = np.zeros(3)
    nofext = np.zeros_like(fext)
    for j in range(nv):
        e[j] = 1.0
        rnea_kernel(m, d, q, d.zeros_v, e, nofext, g0, col)
        d.M[:, j] = col
        e[j] = 0.0
    if not cholesky(d.M, d.L):
        return False
    for k in range(nv):
        qdd[k] = tau[k] - d.h[k]
    cholesky_solve(d.L, qdd, qdd)
    return True


@allocating_kernel
def _batch(method, m, d, Q, V, T, F, gravity, out):
    for n in range(Q.shape[0]):
        f = F[n if F.shape[0] > 1 else 0]
        if method == 1:
            ok = crba_forward_kernel(m, d, Q[n], V[n], T[n], f, gravity, out[n])
        else:
            ok = rnea_forward_kernel(m, d, Q[n], V[n], T[n], f, gravity, out[n])
        if not ok:
            return n
    return -1


def forward_dynamics(model, q, v, tau, method="aba", f_ext=None):
    """The joint accelerations a (nv,) under torques tau, by `method` (aba | crba | rnea)."""
    if method == "aba":
        return aba(model, q, v, tau, f_ext)
    if method not in ("crba", "rnea"):
        raise InputError(f"method must be one of aba, crba, rnea, got {method!r}")
    check_dynamics(model)
    (Q, V, T), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv), tau=(tau, model.nv))
    F = _args.external_forces(model, f_ext, n, batched)
    out = np.empty((n, model.nv))
    blocks = parallel.run(model, n, _batch, (Q,), (V,), (T,), (F,), model.arrays.gravity, (out,),
                       lead=(1 if method == "crba" else 2,))
    bad = next((start + b for start, b in blocks if b >= 0), -1)
    if bad >= 0:
        raise NumericalError(f"the mass matrix is not positive definite at configuration {'row ' + str(bad) if batched else 'q'}")
    return out if batched else out[0]
