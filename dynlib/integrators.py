"""Time integration of the forward dynamics: three schemes and the pieces of the right-hand side.

The state is ``(q, v)``; its derivative is ``(v, a)`` with ``a = FD(q, v, tau)``
(ABA). Configurations move on the joint manifolds, ``q ⊕ v dt``
(`dynlib.joints.integrate_kernel`: SE(3) for free-flyers, unit quaternions kept
unit, SE(2) for planar joints).

Schemes (one step from t to t + dt, a1 = a(t, q, v) given):

- ``euler`` (explicit Euler, Modern Robotics §8.7): ``q+ = q ⊕ dt v``, ``v+ = v + dt a1``;
- ``semi-implicit`` (symplectic Euler): ``v+ = v + dt a1``, ``q+ = q ⊕ dt v+``;
- ``rk4`` (classical Runge-Kutta, on the manifold in the Munthe-Kaas form): stages
  ``q_i = q ⊕ xi_i`` with ``xi_i = c_i dt k_{i-1}``, ``v_i = v + c_i dt a_{i-1}``
  (c = 0, 1/2, 1/2, 1), ``k_i = dexp^-1_{xi_i}(v_i)``, then
  ``q+ = q ⊕ dt/6 (k1 + 2 k2 + 2 k3 + k4)``, ``v+ = v + dt/6 (a1 + 2 a2 + 2 a3 + a4)``.
  For revolute and prismatic joints ``k_i = v_i`` (classical RK4). For free-flyer
  and planar joints the stage velocity ``v_i`` is a body twist at ``q_i``; ``k_i`` is
  the rate of ``xi`` that it implies, ``v + 1/2 [xi, v] + 1/12 [xi, [xi, v]]`` (the
  truncation RKMK needs for order 4). Without this correction (summing the v_i
  as if they were tangent at q) the root pose is only second-order accurate.

The right-hand side, evaluated once per stage by `dynlib.simulate._run` with the
helpers below, gathers every generalized force in one place: the controller's
motor torque, joint friction ``-damping v - friction tanh(v/eps)`` (SPEC §2,
`passive_forces`), and external wrenches turned into body wrenches ``f_ext``
(`wrench_forces`); soft contact forces (`dynlib.contact.soft`) join ``f_ext``
there. Then forward dynamics:

- explicit joint friction (``Forces.implicit_dt == 0``): ``a = ABA(q, v, tau, f_ext)``;
- implicit joint friction (``implicit_dt = dt > 0``): joint damping and the
  smoothed Coulomb friction are stiff for light links (a wrist with 1e-4 kg m²
  and 0.5 N m s of damping has a 0.3 ms time constant; the tanh slope
  friction/eps is 1000 times steeper), and explicit schemes at dt = 1e-3 blow
  up on them. The friction is then taken linearly implicit, as MuJoCo does for
  joint damping: ``(M + dt B) a = tau + friction(v) + J^T f_ext - h`` with
  ``B = diag(damping + friction/eps (1 - tanh²(v/eps)))`` the friction's
  (negated) velocity Jacobian (M by CRBA, h by RNEA, `add_friction_jacobian`,
  `solve_spd`). This is
  backward Euler on the friction term inside each stage: stable at any dt,
  first-order accurate in the friction term only; the rigid-body part keeps the
  scheme's order. (`dynlib.simulate` keeps the friction explicit under the
  computed-torque controller, which cancels it stage by stage.)

External wrenches: ``(f, tau)`` in world-aligned axes, applied at the frame's
origin (the dual of the ``local_world_aligned`` frame Jacobian: generalized
force ``J^T w``), active for ``start <= t < stop``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .compiled import jit
from . import joints as J
from .algorithms.linalg import cholesky, cholesky_solve

EULER = 0
SEMI_IMPLICIT = 1
RK4 = 2
SCHEMES = {"euler": EULER, "semi-implicit": SEMI_IMPLICIT, "rk4": RK4}

_jit = jit()


class Forces(NamedTuple):
    """Every generalized force besides the controller's, as the compiled loop takes them."""

    damping: np.ndarray       # (nv,) viscous joint friction
    friction: np.ndarray      # (nv,) Coulomb joint friction, smoothed by tanh(v/eps)
    eps: float                # Coulomb smoothing velocity
    implicit_dt: float        # > 0: joint friction linearly implicit with this step; 0: explicit
    wrench_body: np.ndarray   # (nw,) int64, body the wrench's frame is on
    wrench_p: np.ndarray      # (nw, 3) the frame's origin in that body's frame
    wrench: np.ndarray        # (nw, 6) (f, tau), world-aligned axes, at the frame origin
    wrench_start: np.ndarray  # (nw,) active from this time ...
    wrench_stop: np.ndarray   # (nw,) ... until this time (excluded)


class Work(NamedTuple):
    """Scratch of one simulation (preallocated; nothing is allocated per step)."""

    tau: np.ndarray        # (nv,) motor torque of the last right-hand side evaluation
    tau_total: np.ndarray  # (nv,) motor torque + joint friction of that evaluation
    fext: np.ndarray       # (nb, 6) body wrenches of that evaluation, body frame
    qs: np.ndarray         # (nq,) stage configuration
    vs: np.ndarray         # (4, nv) stage velocities v1..v4
    acc: np.ndarray        # (4, nv) stage accelerations a1..a4
    ks: np.ndarray         # (4, nv) stage rates of the configuration k1..k4 (dexp^-1 v_i)
    br: np.ndarray         # (2, nv) the brackets [xi, v], [xi, [xi, v]]
    xi: np.ndarray         # (nv,) configuration increment of a stage or a step
    qn: np.ndarray         # (nq,) next configuration


def make_work(nq, nv, nb) -> Work:
    return Work(np.zeros(nv), np.zeros(nv), np.zeros((nb, 6)), np.zeros(nq), np.zeros((4, nv)),
                np.zeros((4, nv)), np.zeros((4, nv)), np.zeros((2, nv)), np.zeros(nv), np.zeros(nq))


# Butcher tableau of the schemes: stage times c_s (RK4's a_{s,s-1} = c_s) and weights b_s
NODES = np.array([0.0, 0.5, 0.5, 1.0])
WEIGHTS = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0


@_jit
def stages(scheme):
    """Number of right-hand side evaluations per step."""
    return 4 if scheme == RK4 else 1


# ---------------------------------------------------------- right-hand side
# The pieces that `dynlib.simulate._run` puts together once per stage. They take
# plain arrays, not the (model, Data) tuples: a numba function that takes those
# re-binds their ~40 arrays (reference counts), about 1 µs a call, as much as a
# 6-DoF ABA; so the loop calls the kernels itself and these helpers around them.

@_jit
def passive_forces(damping, friction, eps, v, tau, tau_total):
    """tau_total = tau - damping v - friction tanh(v / eps) (SPEC §2 joint friction)."""
    for k in range(v.shape[0]):
        tau_total[k] = tau[k] - damping[k] * v[k] - friction[k] * math.tanh(v[k] / eps)


@_jit
def wrench_forces(oR, body, p, wrench, start, stop, t, fext):
    """fext = the wrenches active at t as body wrenches (placements done: oR is the body rotations).

    A wrench (f, tau) in world-aligned axes at a frame origin p (in the body frame) is, in
    the body frame at the body origin, f_b = R^T f, n_b = R^T tau + p x f_b.
    """
    fext[:, :] = 0.0
    for w in range(body.shape[0]):
        if not (start[w] <= t < stop[w]):
            continue
        b = body[w]
        R = oR[b]
        f = wrench[w]
        fb0 = R[0, 0] * f[0] + R[1, 0] * f[1] + R[2, 0] * f[2]
        fb1 = R[0, 1] * f[0] + R[1, 1] * f[1] + R[2, 1] * f[2]
        fb2 = R[0, 2] * f[0] + R[1, 2] * f[1] + R[2, 2] * f[2]
        fext[b, 0] += fb0
        fext[b, 1] += fb1
        fext[b, 2] += fb2
        fext[b, 3] += R[0, 0] * f[3] + R[1, 0] * f[4] + R[2, 0] * f[5] + p[w, 1] * fb2 - p[w, 2] * fb1
        fext[b, 4] += R[0, 1] * f[3] + R[1, 1] * f[4] + R[2, 1] * f[5] + p[w, 2] * fb0 - p[w, 0] * fb2
        fext[b, 5] += R[0, 2] * f[3] + R[1, 2] * f[4] + R[2, 2] * f[5] + p[w, 0] * fb1 - p[w, 1] * fb0


@_jit
def add_friction_jacobian(M, damping, friction, eps, h, v):
    """M += h B, B = diag(damping + friction/eps (1 - tanh²(v/eps))), the joint friction's
    (negated) velocity Jacobian: (M + h B) a = ... is friction taken linearly implicit."""
    for k in range(v.shape[0]):
        sech2 = 1.0 - math.tanh(v[k] / eps) ** 2
        M[k, k] += h * (damping[k] + friction[k] / eps * sech2)


@_jit
def solve_spd(M, L, tau_total, h, a):
    """a = M^-1 (tau_total - h) by Cholesky (L: scratch). False if M is not positive definite."""
    if not cholesky(M, L):
        return False
    for k in range(a.shape[0]):
        a[k] = tau_total[k] - h[k]
    cholesky_solve(L, a, a)
    return True


# ----------------------------------------------------------------- schemes

@_jit
def _bracket_se3(x, y, j, out):
    """out[j:j+6] = [x, y] = x cross y (motion cross product, linear first) of the twists at x[j], y[j]."""
    vx0, vx1, vx2, wx0, wx1, wx2 = x[j], x[j + 1], x[j + 2], x[j + 3], x[j + 4], x[j + 5]
    vy0, vy1, vy2, wy0, wy1, wy2 = y[j], y[j + 1], y[j + 2], y[j + 3], y[j + 4], y[j + 5]
    out[j] = wx1 * vy2 - wx2 * vy1 + vx1 * wy2 - vx2 * wy1
    out[j + 1] = wx2 * vy0 - wx0 * vy2 + vx2 * wy0 - vx0 * wy2
    out[j + 2] = wx0 * vy1 - wx1 * vy0 + vx0 * wy1 - vx1 * wy0
    out[j + 3] = wx1 * wy2 - wx2 * wy1
    out[j + 4] = wx2 * wy0 - wx0 * wy2
    out[j + 5] = wx0 * wy1 - wx1 * wy0


@_jit
def _bracket_se2(x, y, j, out):
    """out[j:j+3] = [x, y] for planar twists (vx, vy, w)."""
    out[j] = -x[j + 2] * y[j + 1] + x[j + 1] * y[j + 2]
    out[j + 1] = x[j + 2] * y[j] - x[j] * y[j + 2]
    out[j + 2] = 0.0


@_jit
def dexp_inv(jtype, idx_v, nvj, xi, v, t1, t2, out):
    """out = v + 1/2 [xi, v] + 1/12 [xi, [xi, v]] per non-abelian joint (free-flyer, planar); v elsewhere.

    t1, t2: (nv,) scratch. The rate of xi when q = q0 ⊕ xi moves with body twist v.
    """
    for i in range(jtype.shape[0]):
        iv = idx_v[i]
        t = jtype[i]
        if t == J.FREEFLYER:
            _bracket_se3(xi, v, iv, t1)
            _bracket_se3(xi, t1, iv, t2)
        elif t == J.PLANAR:
            _bracket_se2(xi, v, iv, t1)
            _bracket_se2(xi, t1, iv, t2)
        else:
            for k in range(iv, iv + nvj[i]):
                out[k] = v[k]
            continue
        for k in range(iv, iv + nvj[i]):
            out[k] = v[k] + 0.5 * t1[k] + t2[k] / 12.0


@_jit
def stage_state(jtype, idx_q, idx_v, nvj, h, q, v, k_prev, a_prev, xi, qs, vs):
    """RK4 stage: xi = h k_prev, qs = q ⊕ xi, vs = v + h a_prev."""
    for k in range(v.shape[0]):
        xi[k] = h * k_prev[k]
        vs[k] = v[k] + h * a_prev[k]
    J.integrate_kernel(jtype, idx_q, idx_v, q, xi, qs)


@_jit
def advance(scheme, jtype, idx_q, idx_v, dt, q, v, ks, acc, xi, qn):
    """(q, v) <- the state at t + dt from the stages' rates ks and accelerations acc, in place."""
    nv = v.shape[0]
    if scheme == RK4:
        for k in range(nv):
            xi[k] = dt * (WEIGHTS[0] * ks[0, k] + WEIGHTS[1] * ks[1, k] + WEIGHTS[2] * ks[2, k] + WEIGHTS[3] * ks[3, k])
            v[k] += dt * (WEIGHTS[0] * acc[0, k] + WEIGHTS[1] * acc[1, k] + WEIGHTS[2] * acc[2, k]
                          + WEIGHTS[3] * acc[3, k])
    elif scheme == EULER:  # position with the old velocity
        for k in range(nv):
            xi[k] = dt * v[k]
            v[k] += dt * acc[0, k]
    else:  # semi-implicit: position with the new velocity
        for k in range(nv):
            v[k] += dt * acc[0, k]
            xi[k] = dt * v[k]
    J.integrate_kernel(jtype, idx_q, idx_v, q, xi, qn)
    q[:] = qn
