"""Configuration-space operations: q ⊕ v, q1 ⊖ q0, configurations between samples, random configurations.

The joint-level maps are in `dynlib.core.joints` (SE(3) exponential for the
free-flyer, SE(2) for the planar joint, sums otherwise); these wrappers apply
them to whole configurations, with the optional batch dimension.
"""
import numpy as np

from .._numba.decorators import allocating_kernel
from ..core import joints as J
from . import _args


@allocating_kernel
def _integrate_batch(jtype, idx_q, idx_v, Q, V, out):
    for n in range(Q.shape[0]):
        J.integrate_kernel(jtype, idx_q, idx_v, Q[n], V[n if V.shape[0] > 1 else 0], out[n])


@allocating_kernel
def _difference_batch(jtype, idx_q, idx_v, Q0, Q1, out):
    for n in range(Q0.shape[0]):
        J.difference_kernel(jtype, idx_q, idx_v, Q0[n if Q0.shape[0] > 1 else 0], Q1[n], out[n])


def integrate(model, q, v_dt):
    """q ⊕ v_dt: the configuration reached from q moving with velocity v_dt for unit time."""
    (Q, V), batched, n = _args.vectors(model, q=(q, model.nq), v_dt=(v_dt, model.nv))
    m = model.arrays
    out = np.empty((n, model.nq))
    _integrate_batch(m.jtype, m.idx_q, m.idx_v, Q, V, out)
    return out if batched else out[0]


def difference(model, q0, q1):
    """The v_dt with q0 ⊕ v_dt = q1 (shortest rotation for quaternions)."""
    (Q0, Q1), batched, n = _args.vectors(model, q0=(q0, model.nq), q1=(q1, model.nq))
    m = model.arrays
    out = np.empty((n, model.nv))
    _difference_batch(m.jtype, m.idx_q, m.idx_v, Q0, Q1, out)
    return out if batched else out[0]


def interpolate(model, t, Q, times) -> np.ndarray:
    """The configurations at `times` (within [t[0], t[-1]]) of a motion sampled at `t` (N,)
    as `Q` (N, nq), interpolated on the manifold: ``q_j ⊕ s·(q_{j+1} ⊖ q_j)``, s the fraction
    of the step (``dyn view``'s keyframes, a recording's resampling)."""
    t = np.asarray(t, dtype=float)
    if t.size == 1:
        return np.repeat(np.asarray(Q, float)[:1], len(times), axis=0)
    j = np.clip(np.searchsorted(t, times, side="right") - 1, 0, t.size - 2)
    s = np.clip((times - t[j]) / (t[j + 1] - t[j]), 0.0, 1.0)
    exact = s == 0.0
    out = np.array(Q[j], dtype=float)
    moving = ~exact
    if moving.any():
        step = difference(model, Q[j[moving]], Q[j[moving] + 1])
        out[moving] = integrate(model, Q[j[moving]], step * s[moving, None])
    return out


def random_configuration(model, rng=None, scale=np.pi):
    """A random configuration: joint values uniform within the limits (or ±scale when
    unbounded), free-flyer positions in [-1, 1]^3 with a uniformly random unit quaternion."""
    rng = np.random.default_rng(rng)
    q = np.empty(model.nq)
    lo = np.where(np.isfinite(model.lower), model.lower, -scale)
    hi = np.where(np.isfinite(model.upper), model.upper, scale)
    q[:] = rng.uniform(lo, hi)
    m = model.arrays
    for i in range(model.nb):
        iq = m.idx_q[i]
        if m.jtype[i] == J.FREEFLYER:
            q[iq:iq + 3] = rng.uniform(-1, 1, 3)
            quat = rng.normal(size=4)
            q[iq + 3:iq + 7] = quat / np.linalg.norm(quat)
        elif m.jtype[i] == J.PLANAR:
            q[iq:iq + 2] = rng.uniform(-1, 1, 2)
            q[iq + 2] = rng.uniform(-np.pi, np.pi)
    return q
