"""dynlib.motion.linearize: the continuous linearization against central differences of the flow
in the tangent coordinates (δq, v), q = q* ⊕ δq: δq' by a central difference in time of
difference(q*, q ⊕ t v), v' by aba with the joint friction; fixed and floating bases, joint
friction on its tanh slope."""
import numpy as np
import pytest

import dynlib
from dynlib.motion.linearize import continuous, discrete
from helpers import assert_close, random_state, random_tree, sample

FD_TOL = 1e-5  # nested central differences: the rate's (step 1e-6) inside the state's (step 1e-4)


def _flow(model, q0, tau, eps, x):
    """(δq', v') at the state x = (δq, v)."""
    nv = model.nv
    q = dynlib.integrate(model, q0, x[:nv])
    v = x[nv:]
    ar = model.arrays
    h = 1e-6
    rate = (dynlib.difference(model, q0, dynlib.integrate(model, q, h * v))
            - dynlib.difference(model, q0, dynlib.integrate(model, q, -h * v))) / (2 * h)
    tau_total = tau - (ar.damping * v + ar.friction * np.tanh(v / eps))
    return np.concatenate([rate, dynlib.aba(model, q, v, tau_total)])


def _central(model, q0, v0, tau, eps, s=1e-4):
    nv = model.nv
    x0 = np.concatenate([np.zeros(nv), v0])
    cols = []
    for k in range(2 * nv):
        e = np.zeros(2 * nv)
        e[k] = s
        cols.append((_flow(model, q0, tau, eps, x0 + e) - _flow(model, q0, tau, eps, x0 - e)) / (2 * s))
    return np.array(cols).T


@pytest.mark.parametrize("name, floating, scale", [("arm6", False, 0.05), ("quadruped", True, 0.05), ("biped", True, 1.0),
                                                   ("planar-tree8", False, 1.0)])
def test_continuous_linearization_equals_central_differences(name, floating, scale):
    """scale 0.05: velocities within a few eps of zero, where the friction's tanh slope matters; 1: where
    the free-flyer's and planar joints' -½ ad_v is large."""
    if name == "planar-tree8":
        model = random_tree(8, 6, floating_base=floating, joint_types=("revolute", "planar", "prismatic", "fixed"))
    else:
        model = sample(name, floating)
    rng = np.random.default_rng(2)
    q, v, _ = random_state(model, rng)
    v = scale * v
    tau = dynlib.gravity_torques(model, q) + rng.uniform(-1, 1, model.nv)
    eps = 0.1
    A, B = continuous(model, q, v, tau, eps=eps)
    assert_close(A, _central(model, q, v, tau, eps), FD_TOL, "A (FD)")
    x = np.concatenate([np.zeros(model.nv), v])
    dB = np.array([(_flow(model, q, tau + 1e-4 * e, eps, x) - _flow(model, q, tau - 1e-4 * e, eps, x)) / 2e-4
                   for e in np.eye(model.nv)]).T
    assert_close(B, dB, FD_TOL, "B (FD)")


def test_joint_friction_slope_enters_the_velocity_block():
    model = sample("arm6")
    assert model.arrays.friction.any() or model.arrays.damping.any()
    q, v, _ = random_state(model, np.random.default_rng(1))
    v = 0.01 * v
    tau = dynlib.gravity_torques(model, q)
    with_friction, _ = continuous(model, q, v, tau)
    without, _ = continuous(model.without_joint_friction(), q, v, tau)
    assert np.abs(with_friction[model.nv:, model.nv:] - without[model.nv:, model.nv:]).max() > 1.0


def _step(model, q, v, tau, dt, integrator, eps, implicit=True):
    """dynlib.simulate's own step: one step of `integrator` under a constant torque, joint limits off (the
    step near a limit is not the smooth map linearized: the quadruped's random states reach theirs)."""
    from dynlib.sim.controllers import Constant

    r = dynlib.simulate(model, q, v, dt=dt, steps=1, integrator=integrator, controller=Constant(tau=tau),
                        friction_smoothing=eps, friction_integration="implicit" if implicit else "explicit",
                        limits=False)  # the plant without its joint limits, as linearized
    return r.q[-1], r.v[-1]


def _step_differences(model, q0, v0, tau, dt, integrator, eps, implicit, s=1e-6):
    """(A, B) by central differences of `_step` in the tangent coordinates, the next state's at q⁺*."""
    nv = model.nv
    qn, vn = _step(model, q0, v0, tau, dt, integrator, eps, implicit)

    def f(x, u):
        q, v = _step(model, dynlib.integrate(model, q0, x[:nv]), v0 + x[nv:], tau + u, dt, integrator, eps, implicit)
        return np.concatenate([dynlib.difference(model, qn, q), v - vn])
    I2, I1 = s * np.eye(2 * nv), s * np.eye(nv)
    A = np.array([(f(e, 0.0) - f(-e, 0.0)) / (2 * s) for e in I2]).T
    B = np.array([(f(np.zeros(2 * nv), e) - f(np.zeros(2 * nv), -e)) / (2 * s) for e in I1]).T
    return A, B


@pytest.mark.parametrize("integrator", ["semi-implicit", "euler"])
@pytest.mark.parametrize("name, floating, implicit", [("arm6", False, True), ("arm6", False, False),
                                                       ("quadruped", True, True), ("planar-tree8", False, True)])
def test_discrete_step_map_equals_differences_of_the_simulated_step(name, floating, implicit, integrator):
    """The step map of dyn simulate (implicit joint friction by default, the free-flyer's and planar joints'
    Ad and Jr at a moving state) against central differences of dynlib.simulate with steps=1, to 1e-6."""
    if name == "planar-tree8":
        model = random_tree(8, 6, floating_base=floating, joint_types=("revolute", "planar", "prismatic", "fixed"))
    else:
        model = sample(name, floating)
    rng = np.random.default_rng(3)
    q, v, _ = random_state(model, rng)
    v = 0.5 * v
    eps, dt = 0.05, 2e-3
    tau = dynlib.gravity_torques(model, q) + rng.uniform(-1, 1, model.nv)
    A, B = discrete(model, q, v, tau, dt, integrator, eps, implicit)
    dA, dB = _step_differences(model, q, v, tau, dt, integrator, eps, implicit)
    assert np.abs(A - dA).max() < 1e-6 and np.abs(B - dB).max() < 1e-6, (np.abs(A - dA).max(), np.abs(B - dB).max())
    assert np.abs(A[:model.nv, :model.nv] - np.eye(model.nv)).max() > 1e-6 or name == "arm6"  # Ad at work


@pytest.mark.parametrize("name, floating", [("arm6", False), ("quadruped", True), ("planar-tree8", False)])
def test_rk4_step_map_equals_differences_of_the_simulated_step(name, floating):
    """rk4 (classical, every joint's friction explicit at dt): the chain rule through the four RKMK substeps
    against central differences of dynlib.simulate with steps=1, to 1e-6."""
    if name == "planar-tree8":
        model = random_tree(8, 6, floating_base=floating, joint_types=("revolute", "planar", "prismatic", "fixed"))
    else:
        model = sample(name, floating)
    model = model.without_joint_friction() if name != "arm6" else model
    rng = np.random.default_rng(4)
    q, v, _ = random_state(model, rng)
    v = 2.0 * v  # large twists, large steps: the dexp⁻¹ terms of the substeps matter beyond the tolerance
    eps, dt = 5.0, 2e-2 if name != "arm6" else 1e-4
    tau = dynlib.gravity_torques(model, q) + rng.uniform(-1, 1, model.nv)
    A, B = discrete(model, q, v, tau, dt, "rk4", eps)
    dA, dB = _step_differences(model, q, v, tau, dt, "rk4", eps, True)
    assert np.abs(A - dA).max() < 1e-6 and np.abs(B - dB).max() < 1e-6, (np.abs(A - dA).max(), np.abs(B - dB).max())


def test_rk4_with_implicit_friction_is_refused():
    from dynlib.errors import DynError

    model = sample("arm6")
    with pytest.raises(DynError, match="rk4 at dt = 0.01 takes the friction of .*wrist_3"):
        discrete(model, model.q_neutral, np.zeros(model.nv), np.zeros(model.nv), 1e-2, "rk4")
