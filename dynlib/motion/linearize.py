"""Linearization of the dynamics at a point, continuous or of dyn's step map (issue 35's `dyn linearize`).

The state is ``x = (δq, v)`` with ``q = q* ⊕ δq`` (`dynlib.integrate`: δq in the tangent space
at the point q*, nv coordinates) and v the tangent velocity; the input is tau (nv,). The
dynamics, with the URDF joint friction as `dynlib.simulate` applies it (SPEC §2, the FREE stage
of `dynlib.sim.dynamics`: ``tau - damping v - friction tanh(v / eps)``):

- ``δq' = Jr(δq)^-1 v``: for a joint angle or a displacement the identity, for a free-flyer
  (SE(3)) or a planar joint (SE(2)) the inverse right Jacobian of the exponential,
  ``Jr^-1(δ) = 1 + ½ ad_δ + O(δ²)``, so ``d(δq')/dδq = -½ ad_v`` (ad_v w = v × w, the
  motion cross product) and ``d(δq')/dv = 1`` at δq = 0;
- ``v' = ABA(q, v, tau - friction(v))``, whose derivatives are `aba_derivatives`' with
  ``d/dv += dqdd_dtau · (-diag(damping + friction / eps · (1 - tanh²(v / eps))))``: the
  smoothed Coulomb law's slope (friction / eps at v = 0: the law dyn simulates has no kink).

``A = [[d(δq')/dδq, d(δq')/dv], [dqdd_dq, dqdd_dv]]`` (2 nv, 2 nv), ``B = [[0], [dqdd_dtau]]``
(2 nv, nv). Contacts, controllers and the joint limits are not here (the plant under the input
torques; a limit's torque is zero away from the limit, and at it the step is not differentiable).

`linearize` (what `dyn linearize` writes) names the state and the inputs, takes the default point
(tau: the torque that holds the point, ``RNEA(q, v, 0) + friction(v)``, gravity compensation at v = 0,
so that ``A x + B u = 0`` there) and keeps the input columns asked for (default: every coordinate
but a free-flyer's).

The discrete step map (``dt``, `discrete`): ``x⁺ = f(x, τ)``, the step `dynlib.simulate` takes with a
constant torque and no contact, for its ``semi-implicit`` and ``euler`` schemes, with the joint
friction linearly implicit as there (`dynlib.sim.dynamics`, IMPLICIT_FRICTION: ``(M + dt B(v)) a =
τ - friction(v) - h``, B = diag(damping + friction / eps (1 - tanh²(v / eps))); `implicit=False`:
the explicit ABA). With ``τ' = τ - friction(v) - dt B(v) a*`` the step's acceleration is
``a = ABA(q, v, τ')``, so with the derivatives of ABA at (q*, v*, τ'), Minv = dqdd_dtau:

    (1 + Minv dt B) δa = dqdd_dq δq + (dqdd_dv - Minv diag(B + dt B'(v) a*)) δv + Minv δτ,

``v⁺ = v + dt a``, and ``q⁺ = q ⊕ dt w`` (w = v for euler, v⁺ for semi-implicit) in the tangent
coordinates at the nominal next configuration ``q⁺* = q* ⊕ dt w*``: ``δq⁺ = Ad(exp(-dt w*)) δq +
Jr(dt w*) dt δw`` with Ad = exp(-ad), Jr = ∫₀¹ exp(-s ad) ds on a free-flyer's and a planar joint's
block (identities elsewhere). rk4 (`_rk4`): the chain rule through its four RKMK substeps (each substep's
Ad, Jr and the derivatives of ``dexp⁻¹_xi(v) = v + ½ [xi, v] + 1/12 [xi, [xi, v]]`` in xi and v), where
`dynlib.simulate` keeps every joint's friction explicit (classical RK4); the Rosenbrock-W and backward
Euler friction of stiff joints is refused (InputError naming them).

Public: `continuous(model, q, v, tau, eps=1e-3, f_ext=None)` -> (A, B); `discrete(model, q, v, tau, dt,
integrator, eps=1e-3, implicit=True)` -> (A, B); `holding_torque(model, q, v, eps)`;
`input_columns(model, names)`; `linearize(model, q, v, tau=None, inputs=None, eps=1e-3, dt=None,
integrator=None)` -> `Linearization`.
"""
from typing import NamedTuple

import numpy as np

from ..algorithms.aba import aba
from ..algorithms.derivatives import aba_derivatives
from ..algorithms.rnea import rnea
from ..algorithms.configuration import integrate
from ..core.joints import FREEFLYER, PLANAR
from ..errors import InputError
from ..files.gains import state_names


def _ad(xi):
    """The 6x6 matrix of the motion cross product ``xi ×`` (linear first)."""
    v, w = xi[:3], xi[3:]

    def skew(a):
        return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = skew(w)
    out[:3, 3:] = skew(v)
    return out


def configuration_rate_jacobian(model, v):
    """d(δq')/dδq at δq = 0 (nv, nv): -½ ad_v on each free-flyer's and planar joint's block, else zero."""
    out = np.zeros((model.nv, model.nv))
    ar = model.arrays
    for i in range(model.nb):
        iv = int(ar.idx_v[i])
        if ar.jtype[i] == FREEFLYER:
            out[iv:iv + 6, iv:iv + 6] = -0.5 * _ad(v[iv:iv + 6])
        elif ar.jtype[i] == PLANAR:  # (vx, vy, wz): the SE(3) block's rows and columns x, y, wz
            full = -0.5 * _ad(np.array([v[iv], v[iv + 1], 0.0, 0.0, 0.0, v[iv + 2]]))
            out[iv:iv + 3, iv:iv + 3] = full[np.ix_((0, 1, 5), (0, 1, 5))]
    return out


def continuous(model, q, v, tau, eps=1e-3, f_ext=None):
    """(A (2 nv, 2 nv), B (2 nv, nv)) of the continuous dynamics at (q, v, tau), joint friction included
    (`eps`: the Coulomb smoothing velocity, `dynlib.simulate`'s; a model without friction:
    `model.without_joint_friction()`)."""
    v = np.asarray(v, dtype=float)
    tau = np.asarray(tau, dtype=float)
    ar = model.arrays
    slope = ar.damping + ar.friction / eps * (1.0 - np.tanh(v / eps) ** 2)
    tau_total = tau - (ar.damping * v + ar.friction * np.tanh(v / eps))
    dq, dv, dtau = aba_derivatives(model, q, v, tau_total, f_ext)
    nv = model.nv
    A = np.zeros((2 * nv, 2 * nv))
    A[:nv, :nv] = configuration_rate_jacobian(model, v)
    A[:nv, nv:] = np.eye(nv)
    A[nv:, :nv] = dq
    A[nv:, nv:] = dv - dtau * slope
    B = np.zeros((2 * nv, nv))
    B[nv:] = dtau
    return A, B


class Linearization(NamedTuple):
    """What `dyn linearize` writes: x⁺ or x' = A x + B u about `point` (x = (δq, v) - (0, v*), u = τ - τ*)."""

    A: np.ndarray       # (2 nv, 2 nv)
    B: np.ndarray       # (2 nv, len(input))
    state: tuple        # q.<coord> for the tangent coordinates, then qd.<coord>
    input: tuple        # the coordinates whose torque is an input
    point: dict         # {"q": (nq,), "qd": (nv,), "tau": (nv,)}
    dt: float | None    # None: continuous
    integrator: str | None

    def as_dict(self) -> dict:
        """JSON-ready: arrays as nested lists, the point by coordinate name."""
        return {"A": self.A.tolist(), "B": self.B.tolist(), "state": list(self.state), "input": list(self.input),
                "point": {k: [float(x) for x in v] for k, v in self.point.items()}, "dt": self.dt,
                "integrator": self.integrator}


def holding_torque(model, q, v, eps=1e-3):
    """τ (nv,) with zero acceleration at (q, v): ``RNEA(q, v, 0) + damping v + friction tanh(v / eps)``
    (gravity compensation at v = 0)."""
    v = np.asarray(v, dtype=float)
    ar = model.arrays
    return rnea(model, q, v, np.zeros(model.nv)) + ar.damping * v + ar.friction * np.tanh(v / eps)


def input_columns(model, names=None, key="--input"):
    """The v indices of the inputs: `names` (coordinate names, in that order), or every coordinate
    outside a free-flyer's. An unknown or repeated name: InputError naming `key`."""
    if names is None:
        ar = model.arrays
        root = set()
        for i in range(model.nb):
            if ar.jtype[i] == FREEFLYER:
                root.update(range(int(ar.idx_v[i]), int(ar.idx_v[i]) + 6))
        return [k for k in range(model.nv) if k not in root]
    index = {n: k for k, n in enumerate(model.v_names)}
    out = []
    for name in names:
        if name not in index:
            raise InputError(f"unknown coordinate {name!r}; the robot's: {', '.join(model.v_names)}", key=key)
        if index[name] in out:
            raise InputError(f"coordinate {name!r} given twice", key=key)
        out.append(index[name])
    if not out:
        raise InputError("no input coordinate given", key=key)
    return out


def linearize(model, q, v=None, tau=None, inputs=None, eps=1e-3, dt=None, integrator=None, implicit=True):
    """The linearization at (q, v, tau) as a `Linearization` (v default zero, tau default
    `holding_torque`; inputs: coordinate names, default `input_columns`'): continuous without `dt`,
    else of the step map of `integrator` (`discrete`)."""
    q = np.asarray(q, dtype=float)
    v = np.zeros(model.nv) if v is None else np.asarray(v, dtype=float)
    tau = holding_torque(model, q, v, eps) if tau is None else np.asarray(tau, dtype=float)
    for label, x in (("q", q), ("qd", v), ("tau", tau)):
        if not np.all(np.isfinite(x)):
            raise InputError(f"the point's {label} is not finite: {x.tolist()}", key=f"--{label}")
    cols = input_columns(model, inputs)
    if dt is None:
        A, B = continuous(model, q, v, tau, eps)
    else:
        integrator = integrator or "semi-implicit"
        A, B = discrete(model, q, v, tau, dt, integrator, eps, implicit)
    state = state_names(model.v_names)  # the gain file's columns (dynlib.files.gains)
    return Linearization(A, B[:, cols], state, tuple(model.v_names[k] for k in cols),
                         {"q": q, "qd": v, "tau": tau},
                         None if dt is None else float(dt), integrator if dt is not None else None)


def _blocks(model, fn, *vectors, rest=1.0):
    """(nv, nv): fn(twists (6,) ...) (6, 6) on each free-flyer's and planar joint's block of the tangent
    vectors (a planar joint's (vx, vy, wz) as the SE(3) twist's x, y, wz rows and columns), rest * 1 elsewhere."""
    out = rest * np.eye(model.nv)
    ar = model.arrays
    for i in range(model.nb):
        iv = int(ar.idx_v[i])
        if ar.jtype[i] == FREEFLYER:
            keep = np.arange(6)
            twists = [x[iv:iv + 6] for x in vectors]
        elif ar.jtype[i] == PLANAR:
            keep = np.array([0, 1, 5])
            twists = [np.array([x[iv], x[iv + 1], 0.0, 0.0, 0.0, x[iv + 2]]) for x in vectors]
        else:
            continue
        rows = iv + np.arange(len(keep))
        out[np.ix_(rows, rows)] = fn(*twists)[np.ix_(keep, keep)]
    return out


def _exp_blocks(model, xi):
    """(P, R) (nv, nv): Ad(exp(-xi)) = exp(-ad_xi) and Jr(xi) = ∫₀¹ exp(-s ad_xi) ds (`_blocks`)."""
    from scipy.linalg import expm

    def both(x):
        big = np.zeros((12, 12))
        big[:6, :6] = -_ad(x)
        big[:6, 6:] = np.eye(6)
        return expm(big)  # [[exp(-ad), ∫₀¹ exp(-s ad) ds], [0, 1]]
    return _blocks(model, lambda x: both(x)[:6, :6], xi), _blocks(model, lambda x: both(x)[:6, 6:], xi)


SCHEMES = ("semi-implicit", "euler")  # and rk4 (`_rk4`)


def discrete(model, q, v, tau, dt, integrator="semi-implicit", eps=1e-3, implicit=True):
    """(A (2 nv, 2 nv), B (2 nv, nv)) of the step map x⁺ = f(x, τ) of `integrator` (semi-implicit or euler)
    at (q, v, tau), the joint friction linearly implicit (`implicit`, as `dynlib.simulate`'s default) or
    explicit; see the module docstring."""
    if integrator == "rk4":
        return _rk4(model, q, v, tau, dt, eps, implicit)
    if integrator not in SCHEMES:
        raise InputError(f"{integrator!r}: the step map is linearized for {', '.join(SCHEMES)} and rk4",
                         key="--integrator")
    v = np.asarray(v, dtype=float)
    tau = np.asarray(tau, dtype=float)
    ar, nv = model.arrays, model.nv
    th = np.tanh(v / eps)
    slope = ar.damping + ar.friction / eps * (1.0 - th ** 2)
    has_friction = implicit and (np.any(ar.damping != 0) or np.any(ar.friction != 0))
    B_imp = dt * slope if has_friction else np.zeros(nv)
    tau_total = tau - (ar.damping * v + ar.friction * th)
    a = _implicit_acceleration(model, q, v, tau_total, B_imp)
    d_slope = -2.0 * ar.friction / eps ** 2 * th * (1.0 - th ** 2) if has_friction else np.zeros(nv)
    dq, dv, minv = aba_derivatives(model, q, v, tau_total - B_imp * a)
    K = np.linalg.solve(np.eye(nv) + minv * B_imp, np.eye(nv))
    da_q = K @ dq
    da_v = K @ (dv - minv * (slope + dt * d_slope * a))
    da_tau = K @ minv
    w = v + dt * a if integrator == "semi-implicit" else v
    P, R = _exp_blocks(model, dt * w)
    dw = np.zeros((nv, 2 * nv + nv))  # δw in (δq, δv, δτ)
    dw[:, nv:2 * nv] = np.eye(nv)
    if integrator == "semi-implicit":
        dw += dt * np.hstack([da_q, da_v, da_tau])
    A = np.zeros((2 * nv, 2 * nv))
    A[:nv] = dt * R @ dw[:, :2 * nv]
    A[:nv, :nv] += P
    A[nv:, :nv] = dt * da_q
    A[nv:, nv:] = np.eye(nv) + dt * da_v
    B = np.vstack([dt * R @ dw[:, 2 * nv:], dt * da_tau])
    return A, B


def _implicit_acceleration(model, q, v, tau_total, diag):
    """a with (M + diag(diag)) a = tau_total - h(q, v)."""
    from ..algorithms.crba import crba

    h = rnea(model, q, v, np.zeros(model.nv))
    return np.linalg.solve(crba(model, q) + np.diag(diag), tau_total - h)


def _rk4(model, q, v, tau, dt, eps, implicit):
    """(A, B) of rk4's step (`dynlib.sim.integrators`: RKMK substeps q_s = q ⊕ xi_s, k_s = dexp⁻¹_{xi_s}(v_s)),
    the chain rule through its four substeps; only where `dynlib.simulate` keeps every joint's friction
    explicit at dt (`friction_steps`: classical RK4), else an InputError naming the stiff joints."""
    import warnings

    from ..sim.integrators import NODES, WEIGHTS
    from ..sim.simulate import friction_steps

    ar, nv = model.arrays, model.nv
    has = implicit and (np.any(ar.damping != 0) or np.any(ar.friction != 0))
    with warnings.catch_warnings():  # its note on the friction it would take implicitly: refused below instead
        warnings.simplefilter("ignore")
        stiff = friction_steps(model, q, dt, "rk4", ar.damping, ar.friction, eps, has) > 0
    if np.any(stiff):
        raise InputError(f"rk4 at dt = {dt:g} takes the friction of {', '.join(np.array(model.v_names)[stiff])} "
                         "implicitly, which is not linearized yet; use semi-implicit or euler, a smaller --dt, or "
                         "--no-joint-friction", key="--integrator")
    v, tau = np.asarray(v, dtype=float), np.asarray(tau, dtype=float)
    z = np.zeros((nv, 3 * nv))  # derivatives with respect to (δq, δv, δτ)
    Dq0, Dv0, Dtau = z.copy(), z.copy(), z.copy()
    Dq0[:, :nv], Dv0[:, nv:2 * nv], Dtau[:, 2 * nv:] = np.eye(nv), np.eye(nv), np.eye(nv)
    xi, Dxi, k_sum, Dk_sum, Da_sum = np.zeros(nv), z.copy(), np.zeros(nv), z.copy(), z.copy()
    a, Da, k, Dk = None, None, None, None
    for s in range(4):
        if s > 0:  # the substep's state from the previous one's rates
            xi, Dxi = NODES[s] * dt * k, NODES[s] * dt * Dk
            vs, Dvs = v + NODES[s] * dt * a, Dv0 + NODES[s] * dt * Da
        else:
            vs, Dvs = v, Dv0
        P, R = _exp_blocks(model, xi)
        qs, Dqs = integrate(model, q, xi), P @ Dq0 + R @ Dxi
        th = np.tanh(vs / eps)
        slope = ar.damping + ar.friction / eps * (1.0 - th ** 2)
        tau_total = tau - (ar.damping * vs + ar.friction * th)
        a = aba(model, qs, vs, tau_total)
        dq, dv, minv = aba_derivatives(model, qs, vs, tau_total)
        Da = dq @ Dqs + (dv - minv * slope) @ Dvs + minv @ Dtau
        k = dexp_inv(model, xi, vs)
        Dk = (_blocks(model, lambda x: np.eye(6) + 0.5 * _ad(x) + _ad(x) @ _ad(x) / 12.0, xi) @ Dvs
              + _blocks(model, lambda x, w: -0.5 * _ad(w) - (_ad(_ad(x) @ w) + _ad(x) @ _ad(w)) / 12.0,
                        xi, vs, rest=0.0) @ Dxi)
        k_sum, Dk_sum, Da_sum = k_sum + WEIGHTS[s] * k, Dk_sum + WEIGHTS[s] * Dk, Da_sum + WEIGHTS[s] * Da
    P, R = _exp_blocks(model, dt * k_sum)
    Dq_next = P @ Dq0 + R @ (dt * Dk_sum)
    Dv_next = Dv0 + dt * Da_sum
    return np.vstack([Dq_next[:, :2 * nv], Dv_next[:, :2 * nv]]), np.vstack([Dq_next[:, 2 * nv:], Dv_next[:, 2 * nv:]])


def dexp_inv(model, xi, v):
    """v + ½ [xi, v] + 1/12 [xi, [xi, v]] on each free-flyer's and planar joint's block, v elsewhere
    (`dynlib.sim.integrators.dexp_inv`, in numpy)."""
    return _blocks(model, lambda x: np.eye(6) + 0.5 * _ad(x) + _ad(x) @ _ad(x) / 12.0, xi) @ v
