"""Time integration of the forward dynamics: three schemes, on the joint manifolds.

The state is ``(q, v)``; its derivative is ``(v, a)`` with ``a = FD(q, v, tau)``
(ABA). Configurations move on the joint manifolds, ``q ⊕ v dt``
(`dynlib.core.joints.integrate_kernel`: SE(3) for free-flyers, unit quaternions kept
unit, SE(2) for planar joints).

Schemes (one step from t to t + dt, a1 = a(t, q, v) given):

- ``euler`` (explicit Euler, Modern Robotics §8.7): ``q+ = q ⊕ dt v``, ``v+ = v + dt a1``;
- ``semi-implicit`` (symplectic Euler): ``v+ = v + dt a1``, ``q+ = q ⊕ dt v+``;
- ``rk4`` (classical Runge-Kutta, on the manifold in the Munthe-Kaas form):
  substeps (the RK stages; "stage" names the pipeline's, `dynlib.sim.stages`)
  ``q_i = q ⊕ xi_i`` with ``xi_i = c_i dt k_{i-1}``, ``v_i = v + c_i dt a_{i-1}``
  (c = 0, 1/2, 1/2, 1), ``k_i = dexp^-1_{xi_i}(v_i)``, then
  ``q+ = q ⊕ dt/6 (k1 + 2 k2 + 2 k3 + k4)``, ``v+ = v + dt/6 (a1 + 2 a2 + 2 a3 + a4)``.
  For revolute and prismatic joints ``k_i = v_i`` (classical RK4). For free-flyer
  and planar joints the substep velocity ``v_i`` is a body twist at ``q_i``; ``k_i`` is
  the rate of ``xi`` that it implies, ``v + 1/2 [xi, v] + 1/12 [xi, [xi, v]]`` (the
  truncation RKMK needs for order 4). Without this correction (summing the v_i
  as if they were tangent at q) the root pose is only second-order accurate.

Joint friction under rk4 (the choice, and why). URDF damping and the tanh-smoothed
Coulomb friction are stiff on light links (arm6's wrist_3: 0.5 N m s over 1.4e-4 kg m²;
the tanh slope friction/eps is a thousand times steeper), and classical RK4 is unstable
for ``dt λ > 2.785``. Taking the friction linearly implicit inside each substep (backward
Euler in that term) is stable but made rk4 first order on every URDF with damping
(pybullet's kuka, 0.5 N m s: 1.6e-2 rad off at 1 ms); MuJoCo's RK4 has no implicit damping
either. So rk4 decides per joint at the run's start (`dynlib.sim.simulate.friction_steps`),
from ``dt (damping + friction/eps) (M⁻¹)_kk`` (the friction's steepest slope over the joint's
smallest effective inertia, the other joints free) against half that limit:

- not stiff: the friction is explicit, the step is classical RK4, order 4 (the kuka's joints);
- stiff, damping only: a Rosenbrock-W method on RK4's own substeps. Substep s solves
  ``(M + GAMMA dt B) k_s = tau_total(q_s, v_s) - h - B dt Σ_{j<s} GAMMAS[s, j] k_j`` with B =
  the stiff joints' damping (zero on the others): the same O(n) ABA with the diagonal on its
  pivots (`dynlib.sim.dynamics`), plus a diagonal product (`stage_memory`,
  `dynamics.stage_term`), no extra solve; with B = 0 it is classical RK4 exactly. GAMMA = 0.3
  and GAMMAS solve the conditions under which the terms in W = -M⁻¹B vanish up to order 3
  for any W (a W-method: M's change along the step need not be followed): Σ b_i β_i = 0,
  Σ b_i c_i β_i = 0, Σ b_i Σ_j α_ij β_j = 0, Σ b_i Σ_j Γ_ij c_j = 0, Σ b_i Σ_j Γ_ij β_j = 0
  (Γ = GAMMAS + GAMMA I, β_i = Σ_j Γ_ij; α, b, c RK4's tableau), and R(-∞) = 0 for the
  stability function on y' = λy: A- and L-stable (tests/sim/test_integrators.py checks both).
  Order 3 in the stiff terms, 4 in the rest (arm6 without Coulomb friction: 4.8e-7 rad at 1 ms
  against Radau, where explicit rk4 diverges). An IMEX additive RK keeping order 4 would need
  each substep's explicit acceleration too (a second ABA);
- stiff Coulomb friction: backward Euler in that term, as before (first order in it), and the
  run says so once (`dynamics.ImplicitFrictionNote`, ``dyn: note: rk4 with implicit friction on
  …``). The W terms linearize the friction once per substep and rely on that slope holding over
  the step; the tanh slope changes a thousandfold within eps = 1e-3 rad/s, and where joints
  stick (arm6 from a random state, 1 s) the W form ended 5e-2 rad off at 1 ms against 4e-3 with
  backward Euler. A larger friction_smoothing, or a smaller dt, makes such a joint explicit.

semi-implicit and euler keep backward Euler in the friction term on every joint (first order,
like the schemes themselves), bit-identical to before.

Each substep's right-hand side ``a(t, q, v)`` is one evaluation of the pipeline of
`dynlib.simulate` (its stages: controller, generalized forces, acceleration, in
`dynlib.sim.stages`); this module only moves the state: `substep_state` gives the
state a substep is evaluated at, `dexp_inv` its configuration rate, and `advance`
the step. They
take plain arrays, not the model and workspace tuples: a compiled call passes a
tuple's arrays one by one, and the loop calls these up to eight times a step.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._numba.decorators import kernel
from ..core import joints as J

EULER = 0
SEMI_IMPLICIT = 1
RK4 = 2
SCHEMES = {"euler": EULER, "semi-implicit": SEMI_IMPLICIT, "rk4": RK4}


class Work(NamedTuple):
    """Scratch of the scheme's substeps (preallocated; nothing is allocated per step)."""

    qs: np.ndarray   # (nq,) substep configuration
    vs: np.ndarray   # (4, nv) substep velocities v1..v4
    acc: np.ndarray  # (4, nv) substep accelerations a1..a4
    ks: np.ndarray   # (4, nv) substep rates of the configuration k1..k4 (dexp^-1 v_i)
    br: np.ndarray   # (2, nv) the brackets [xi, v], [xi, [xi, v]]
    xi: np.ndarray   # (nv,) configuration increment of a substep or a step
    qn: np.ndarray   # (nq,) next configuration


def make_work(nq, nv) -> Work:
    return Work(np.zeros(nq), np.zeros((4, nv)), np.zeros((4, nv)), np.zeros((4, nv)), np.zeros((2, nv)),
                np.zeros(nv), np.zeros(nq))


# Butcher tableau of the schemes: substep times c_s (RK4's a_{s,s-1} = c_s) and weights b_s
NODES = np.array([0.0, 0.5, 0.5, 1.0])
WEIGHTS = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0


# rk4's Rosenbrock-W terms for the joints whose damping is stiff at dt (`dynlib.sim.simulate.friction_steps`):
# substep s solves (M + GAMMA dt B) k_s = tau_total - h - B dt Σ_{j<s} GAMMAS[s, j] k_j (see the module docstring)
GAMMA = 0.3
GAMMAS = np.array([[0.0, 0.0, 0.0, 0.0],
                   [-0.2897944009471608, 0.0, 0.0, 0.0],
                   [0.2561762542249444, -0.8663818532777835, 0.0, 0.0],
                   [0.06723629344443306, -0.00990347110951567, -0.05733282233491738, 0.0]])


@kernel
def stage_memory(s, dt, acc, out):
    """out (nv,) = dt Σ_{j<s} GAMMAS[s, j] acc[j]: the stage memory of substep s (zero for s = 0)."""
    for k in range(out.shape[0]):
        x = 0.0
        for j in range(s):
            x += GAMMAS[s, j] * acc[j, k]
        out[k] = dt * x


@kernel
def weigh(scheme, s, x, out):
    """out (nv,) = Σ_s b_s x_s over the substeps of a step, x (nv,) substep s's: out = b_0 x at s = 0, += b_s x
    after (rk4's weights; the one-stage schemes: x)."""
    b = WEIGHTS[s] if scheme == RK4 else 1.0
    for k in range(out.shape[0]):
        out[k] = b * x[k] if s == 0 else out[k] + b * x[k]


@kernel
def substeps(scheme):
    """Number of right-hand side evaluations (substeps) per step."""
    return 4 if scheme == RK4 else 1


# ----------------------------------------------------------------- schemes

@kernel
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


@kernel
def _bracket_se2(x, y, j, out):
    """out[j:j+3] = [x, y] for planar twists (vx, vy, w)."""
    out[j] = -x[j + 2] * y[j + 1] + x[j + 1] * y[j + 2]
    out[j + 1] = x[j + 2] * y[j] - x[j] * y[j + 2]
    out[j + 2] = 0.0


@kernel
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


@kernel
def substep_state(jtype, idx_q, idx_v, s, dt, q, v, ks, acc, xi, qs, vs):
    """qs, vs = the state substep s is evaluated at: (q, v) itself for s = 0 (and ks[0] = v), else
    q ⊕ c_s dt k_{s-1}, v + c_s dt a_{s-1} (RK4), with xi = c_s dt k_{s-1}."""
    if s == 0:
        for k in range(v.shape[0]):
            vs[k] = v[k]
            ks[0, k] = v[k]
        for k in range(q.shape[0]):
            qs[k] = q[k]
        return
    h = NODES[s] * dt
    for k in range(v.shape[0]):
        xi[k] = h * ks[s - 1, k]
        vs[k] = v[k] + h * acc[s - 1, k]
    J.integrate_kernel(jtype, idx_q, idx_v, q, xi, qs)


@kernel
def advance(scheme, jtype, idx_q, idx_v, dt, q, v, ks, acc, xi, qn):
    """(q, v) <- the state at t + dt from the substeps' rates ks and accelerations acc, in place."""
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
    for k in range(q.shape[0]):
        q[k] = qn[k]
