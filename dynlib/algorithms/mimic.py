"""Dynamics of a robot with mimic joints, in its coupled coordinates (one coordinate per leader and followers).

With the coupling of `dynlib.core.mimic` (``q = expand_q(q_r)``, ``v = G v_r``, ``a = G a_r``), each
algorithm runs on the model's tree at the expanded state and is projected::

    coupled_rnea  tau_r = G^T rnea(q, G v_r, G a_r, f_ext)          O(n)
    coupled_crba  M_r   = G^T crba(q) G                            O(n d) + O(nv nv_r)
    coupled_aba   a_r   = M_r^-1 (tau_r - G^T rnea(q, G v_r, 0, f_ext))   Cholesky, O(n d + nv_r^3)

Forward dynamics is the solve of the reduced system, not a recursion: the ABA eliminates the DoFs of
one body at a time and hands its parent an articulated inertia, but a coupled DoF moves bodies on
several branches (a gripper's two fingers), so no body's inertia can be eliminated alone; a recursion
would carry the coupled DoF's column up to the branches' common ancestor, a second algorithm in every
kernel (Pinocchio's aba refuses mimic joints for the same reason; it offers crba and a solve). Grippers
are a few DoFs of a robot, and the solve is what Pinocchio users do.

Inputs are the coupled robot's: q_r (nq_r,), v_r, a_r, tau_r (nv_r,) in the order of
``model.coupling.q_names`` / ``v_names`` (the model's without the followers), f_ext (nb, 6) on the
tree's bodies; each takes a leading batch dimension. A model without mimic joints gives the plain
algorithms' results.
"""
import numpy as np

from ..core.model import massless_free_flyer_message
from ..errors import InputError, ModelError, NumericalError
from .aba import check_dynamics
from .crba import crba
from .rnea import rnea


def _coupling(model):
    c = model.coupling
    if c is None:
        raise InputError(f"robot '{model.name}' has no mimic joints: use rnea, crba, aba")
    return c


def _vector(x, n, what):
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be numbers, got {x!r}") from None
    if x.ndim not in (1, 2) or x.shape[-1] != n or not np.all(np.isfinite(x)):
        raise InputError(f"{what} must be finite, of shape ({n},) or (N, {n}), got shape {x.shape}")
    return x


def coupled_rnea(model, q, v, a, f_ext=None):
    """Inverse dynamics of the coupled robot: tau_r = G^T tau (nv_r,) at (q_r, v_r, a_r)."""
    c = _coupling(model)
    q, v, a = (_vector(x, n, w) for x, n, w in ((q, c.nq, "q"), (v, c.nv, "v"), (a, c.nv, "a")))
    return c.project(rnea(model, c.expand_q(q), c.expand_v(v), c.expand_v(a), f_ext))


def coupled_crba(model, q):
    """The coupled robot's joint-space inertia M_r = G^T M G (nv_r, nv_r), symmetric."""
    c = _coupling(model)
    return c.project_inertia(crba(model, c.expand_q(_vector(q, c.nq, "q"))))


def coupled_aba(model, q, v, tau, f_ext=None):
    """Forward dynamics of the coupled robot: a_r (nv_r,) with M_r a_r = tau_r - G^T h + G^T J^T f_ext."""
    c = _coupling(model)
    check_dynamics(model)
    for link, joint in model.massless_free_flyers:  # M singular (dynlib.core.model.check_forward_dynamics)
        raise ModelError(massless_free_flyer_message(model, link, joint), file=model.source or None)
    q, v, tau = (_vector(x, n, w) for x, n, w in ((q, c.nq, "q"), (v, c.nv, "v"), (tau, c.nv, "tau")))
    qf = c.expand_q(q)
    h = c.project(rnea(model, qf, c.expand_v(v), np.zeros(qf.shape[:-1] + (model.nv,)), f_ext))
    M = c.project_inertia(crba(model, qf))
    rhs = tau - h
    try:
        L = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise NumericalError(f"robot '{model.name}': the coupled mass matrix G^T M G is not positive definite "
                             "at q", file=model.source or None) from None
    y = np.linalg.solve(L, rhs[..., None])
    return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]
