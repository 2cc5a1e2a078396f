"""Integrators (dynlib.sim.integrators) against an independent RK4 on Pinocchio, conservation laws,
convergence orders, and the implicit treatment of stiff joint friction."""

import warnings

import numpy as np
import pytest

import dynlib
from dynlib.sim.controllers import Constant
from dynlib.sim.dynamics import ImplicitFrictionNote
from dynlib.sim.simulate import ExternalWrench, simulate
from helpers import PinMap, sample

pin = pytest.importorskip("pinocchio")


# ------------------------------------------------------------------ the oracle

def pinocchio_rk4(pm, q, v, dt, steps, eps):
    """Classical RK4 with pin.aba and pin.integrate, URDF damping and tanh Coulomb friction
    read by Pinocchio (pm.damping, pm.friction): the scheme of SPEC §7, written independently."""
    data = pm.createData()
    D, F = np.asarray(pm.damping), np.asarray(pm.friction)

    def f(q, v):
        return pin.aba(pm, data, q, v, -D * v - F * np.tanh(v / eps))

    out = [q.copy()]
    for _ in range(steps):
        a1 = f(q, v)
        q2, v2 = pin.integrate(pm, q, 0.5 * dt * v), v + 0.5 * dt * a1
        a2 = f(q2, v2)
        q3, v3 = pin.integrate(pm, q, 0.5 * dt * v2), v + 0.5 * dt * a2
        a3 = f(q3, v3)
        q4, v4 = pin.integrate(pm, q, dt * v3), v + dt * a3
        a4 = f(q4, v4)
        q = pin.integrate(pm, q, dt / 6 * (v + 2 * v2 + 2 * v3 + v4))
        v = v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
        out.append(q.copy())
    return out, v


@pytest.mark.slow
@pytest.mark.oracle
@pytest.mark.parametrize("robot", ["arm6", "arm7"])
def test_rk4_matches_pinocchio_rk4_with_urdf_damping_and_friction(robot):
    model = sample(robot)
    pm = pin.buildModelFromUrdf(str(model.source))
    pmap = PinMap(model, pm)
    rng = np.random.default_rng(3)
    q0 = rng.uniform(-1.5, 1.5, model.nq)
    v0 = rng.uniform(-1.0, 1.0, model.nv)
    # dt below the damping's RK4 stability limit (wrist: damping/inertia ~ 3600 1/s); a smoothing
    # velocity that keeps the tanh friction non-stiff at this dt, so both runs are smooth
    dt, steps, eps = 2e-4, 2000, 0.5
    res = simulate(model, q0, v0, dt=dt, steps=steps, integrator="rk4", friction_smoothing=eps,
                   friction_integration="explicit", energy=False)
    assert res.diverged is None and len(res) == steps + 1
    qs_pin, v_pin = pinocchio_rk4(pm, pmap.q(q0), pmap.v(v0), dt, steps, eps)
    ref = np.array([pmap.q_back(q) for q in qs_pin])
    err = np.angle(np.exp(1j * (res.q - ref)))  # continuous joints come back from Pinocchio wrapped
    assert np.abs(err).max() < 1e-8
    assert np.abs(res.v[-1] - pmap.v_back(v_pin)).max() < 1e-7
    assert np.abs(res.q[-1] - q0).max() > 0.1  # it moved


# ------------------------------------------------------------------ conservation

def momentum_world(model, q, v):
    """Linear momentum and angular momentum about the world origin, world axes, of a
    free-floating robot: the root rows of M v are the spatial momentum in the root frame."""
    h = dynlib.crba(model, q)[:6] @ v
    x, y, z, w = q[3:7]
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    p = R @ h[:3]
    return p, R @ h[3:] + np.cross(q[:3], p)


@pytest.fixture(scope="module")
def floating_run():
    model = sample("quadruped", True).with_gravity([0, 0, 0])
    rng = np.random.default_rng(7)
    q0 = dynlib.random_configuration(model, rng)
    v0 = rng.uniform(-2, 2, model.nv)
    res = simulate(model, q0, v0, dt=1e-3, steps=2000, integrator="rk4", joint_friction=False,
                   limits=False)  # free motion: a held joint limit takes energy
    return model, res


def test_free_floating_robot_conserves_energy_in_zero_gravity(floating_run):
    model, res = floating_run
    E = res.energy[:, 2]
    assert res.diverged is None
    assert np.abs(E - E[0]).max() / E[0] < 1e-8
    assert np.all(res.energy[:, 1] == 0.0)  # no gravity, no potential


def test_free_floating_robot_conserves_momentum(floating_run):
    model, res = floating_run
    p0, L0 = momentum_world(model, res.q[0], res.v[0])
    scale = max(np.linalg.norm(p0), np.linalg.norm(L0))
    for k in range(0, len(res), 250):
        p, L = momentum_world(model, res.q[k], res.v[k])
        assert np.linalg.norm(p - p0) / scale < 1e-10  # RK4's truncation error, O(dt^4)
        assert np.linalg.norm(L - L0) / scale < 1e-10
    assert np.linalg.norm(res.q[-1, :3] - res.q[0, :3]) > 0.01  # the root moved


def test_free_flyer_quaternion_stays_unit(floating_run):
    _, res = floating_run
    norms = np.linalg.norm(res.q[:, 3:7], axis=1)
    assert np.abs(norms - 1).max() < 1e-12
    assert np.abs(res.q[-1, 3:7] - res.q[0, 3:7]).max() > 0.01  # it turned


def test_external_force_gives_its_impulse_to_a_floating_robot():
    # a force on the trunk origin for 0.1 s changes the linear momentum by f * 0.1; a pure couple
    # changes the angular momentum by tau * 0.1 (RK4 substeps at the window's edges weigh in exactly)
    model = sample("quadruped", True).with_gravity([0, 0, 0])
    f = np.array([3.0, -2.0, 5.0, 0.4, -0.3, 0.2])
    res = simulate(model, dt=1e-3, steps=300, joint_friction=False,
                   external_wrenches=[ExternalWrench("trunk", tuple(f), 0.1, 0.2)])
    p, L = momentum_world(model, res.q[-1], res.v[-1])
    assert np.allclose(p, 0.1 * f[:3], rtol=0, atol=1e-9)
    # angular momentum about the world origin gains the moment of the force about it as well
    assert np.linalg.norm(L) > 0
    couple = simulate(model, dt=1e-3, steps=300, joint_friction=False,
                      external_wrenches=[ExternalWrench("lf_foot", (0, 0, 0, *f[3:]), 0.1, 0.2)])
    p, L = momentum_world(model, couple.q[-1], couple.v[-1])
    assert np.allclose(p, 0, atol=1e-9) and np.allclose(L, 0.1 * f[3:], rtol=0, atol=1e-9)


# ------------------------------------------------------------------ orders

def energy_drift(model, integrator, q0, steps=4000, dt=1e-3):
    res = simulate(model, q0, dt=dt, steps=steps, integrator=integrator, joint_friction=False,
                   limits=False)  # the schemes' own drift: no limit taking energy
    E = res.energy[:, 2]
    return np.abs(E - E[0]).max()


@pytest.mark.parametrize("robot", ["double_pendulum", "arm6"])
def test_energy_drift_orders_rk4_semi_implicit_euler(robot):
    model = sample(robot)
    q0 = np.full(model.nq, 0.4)
    drift = {name: energy_drift(model, name, q0) for name in ("rk4", "semi-implicit", "euler")}
    assert drift["rk4"] < drift["semi-implicit"] < drift["euler"], drift
    assert drift["rk4"] < 1e-3 * drift["semi-implicit"]


def test_semi_implicit_euler_energy_error_stays_bounded_while_euler_grows():
    model = sample("pendulum")
    res = {name: simulate(model, [1.0], dt=1e-2, steps=3000, integrator=name, joint_friction=False)
           for name in ("semi-implicit", "euler")}
    err = {name: np.abs(r.energy[:, 2] - r.energy[0, 2]) for name, r in res.items()}
    early, late = slice(0, 1000), slice(2000, 3001)
    assert err["semi-implicit"][late].max() < 1.5 * err["semi-implicit"][early].max()  # symplectic: bounded
    assert err["euler"][late].max() > 2 * err["euler"][early].max()  # explicit Euler: pumps energy in


@pytest.mark.parametrize("integrator, order", [("euler", 1), ("semi-implicit", 1), ("rk4", 4)])
def test_convergence_order(integrator, order):
    model = sample("double_pendulum")
    q0, T = np.array([1.0, -0.5]), 0.5
    ref = simulate(model, q0, dt=T / 4096, steps=4096, integrator="rk4", joint_friction=False, energy=False)
    errs = []
    for n in (64, 128, 256):
        r = simulate(model, q0, dt=T / n, steps=n, integrator=integrator, joint_friction=False, energy=False)
        errs.append(np.abs(r.q[-1] - ref.q[-1]).max())
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(np.abs(rates - order) < 0.3), (errs, rates)


def test_rk4_is_fourth_order_on_the_free_flyer_pose():
    # the Munthe-Kaas correction of the substep velocities: without it the root pose is second order
    model = sample("quadruped", True).with_gravity([0, 0, 0])
    rng = np.random.default_rng(5)
    q0 = dynlib.random_configuration(model, rng)
    v0 = rng.uniform(-2, 2, model.nv)
    T = 0.5
    ref = simulate(model, q0, v0, dt=T / 2048, steps=2048, joint_friction=False, energy=False, limits=False)
    errs = []
    for n in (32, 64, 128):  # smooth free motion (the limit events are not)
        r = simulate(model, q0, v0, dt=T / n, steps=n, joint_friction=False, energy=False, limits=False)
        errs.append(np.linalg.norm(dynlib.difference(model, ref.q[-1], r.q[-1])[:6]))
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(rates > 3.6), (errs, rates)


def test_rk4_is_fourth_order_with_planar_joints(random_tree):
    model = random_tree(6, 6, joint_types=("planar", "revolute", "planar")).with_gravity([0, 0, 0])
    assert any(t == "planar" for t in model.joint_types)
    rng = np.random.default_rng(2)
    q0 = dynlib.random_configuration(model, rng)
    v0 = rng.uniform(-2, 2, model.nv)
    T = 0.5
    ref = simulate(model, q0, v0, dt=T / 2048, steps=2048, joint_friction=False, energy=False, limits=False)
    errs = []
    for n in (32, 64, 128):  # smooth free motion (the limit events are not)
        r = simulate(model, q0, v0, dt=T / n, steps=n, joint_friction=False, energy=False, limits=False)
        errs.append(np.abs(dynlib.difference(model, ref.q[-1], r.q[-1])).max())
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(rates > 3.6), (errs, rates)


# ------------------------------------------------------------------ one step by hand

def ad(xi):
    """The 6x6 matrix of [xi, .] on twists (linear first)."""
    def skew(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = skew(xi[3:])
    out[:3, 3:] = skew(xi[:3])
    return out


def test_one_step_of_each_scheme_on_se3_matches_its_formula():
    model = sample("quadruped", True)
    rng = np.random.default_rng(11)
    q = dynlib.random_configuration(model, rng)
    v = rng.uniform(-1, 1, model.nv)
    tau = rng.uniform(-1, 1, model.nv)
    dt = 1e-2

    def a(q, v):
        return dynlib.aba(model, q, v, tau)

    def dexp_inv(xi, v):  # the root is the only non-abelian joint
        k = v.copy()
        A = ad(xi[:6])
        k[:6] = v[:6] + A @ v[:6] / 2 + A @ A @ v[:6] / 12
        return k

    a1 = a(q, v)
    expected = {
        "euler": (dynlib.integrate(model, q, dt * v), v + dt * a1),
        "semi-implicit": (dynlib.integrate(model, q, dt * (v + dt * a1)), v + dt * a1),
    }
    xi2, v2 = dt / 2 * v, v + dt / 2 * a1
    a2 = a(dynlib.integrate(model, q, xi2), v2)
    k2 = dexp_inv(xi2, v2)
    xi3, v3 = dt / 2 * k2, v + dt / 2 * a2
    a3 = a(dynlib.integrate(model, q, xi3), v3)
    k3 = dexp_inv(xi3, v3)
    xi4, v4 = dt * k3, v + dt * a3
    a4 = a(dynlib.integrate(model, q, xi4), v4)
    k4 = dexp_inv(xi4, v4)
    expected["rk4"] = (dynlib.integrate(model, q, dt / 6 * (v + 2 * k2 + 2 * k3 + k4)),
                       v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4))
    for name, (qe, ve) in expected.items():
        r = simulate(model, q, v, dt=dt, steps=1, integrator=name, controller=Constant(tau), joint_friction=False)
        assert np.allclose(r.q[1], qe, rtol=0, atol=1e-13), name
        assert np.allclose(r.v[1], ve, rtol=0, atol=1e-12), name


# ------------------------------------------------------------------ stiff joint friction

def test_implicit_joint_friction_is_stable_where_explicit_blows_up():
    # arm6's wrist: 0.5 N m s damping on 1.4e-4 kg m² (a 0.3 ms time constant) and a tanh
    # Coulomb slope of friction/1e-3: explicit schemes at dt = 1e-3 diverge
    model = sample("arm6")
    q0 = np.array([0.3, -0.8, 0.9, -0.5, 0.4, 0.2])
    # the friction alone: without the joint limits, which would hold the explicit run's wrist at one
    explicit = simulate(model, q0, dt=1e-3, steps=500, friction_integration="explicit", limits=False)
    assert explicit.diverged is not None and explicit.diverged.step < 100
    implicit = simulate(model, q0, dt=1e-3, steps=2000, friction_integration="implicit", limits=False)
    assert implicit.diverged is None
    E = implicit.energy[:, 2]
    assert E[-1] < E[0] - 1.0  # friction dissipates
    assert np.all(np.diff(E) < 1e-6)  # and never adds energy (up to the rigid-body integration error)


@pytest.mark.parametrize("integrator, eps, counts, ratios", [
    ("euler", 0.5, (1000, 2000, 4000), (1.6, 2.5)),  # backward Euler in the friction term: first order
    # rk4 at dt = 1, 0.5 ms: wrist_2's and wrist_3's Coulomb friction is stiff at both (the others are explicit;
    # at 0.25 ms wrist_2 is not): backward Euler in it, first order
    ("rk4", 0.05, (200, 400), (1.6, 2.5)),
])
def test_implicit_friction_converges_to_explicit_as_dt_shrinks(integrator, eps, counts, ratios):
    model = sample("arm6")
    q0 = np.array([0.3, -0.8, 0.9, -0.5, 0.4, 0.2])
    T = 0.2  # non-stiff smoothing: the explicit run is a valid reference at small dt
    ref = simulate(model, q0, dt=T / 8000, steps=8000, integrator="rk4", friction_smoothing=eps,
                   friction_integration="explicit", energy=False)
    errs = []
    for n in counts:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ImplicitFrictionNote)
            r = simulate(model, q0, dt=T / n, steps=n, integrator=integrator, friction_smoothing=eps,
                         friction_integration="implicit", energy=False)
        errs.append(np.abs(r.q[-1] - ref.q[-1]).max())
    rates = np.array(errs[:-1]) / np.array(errs[1:])
    assert np.all(ratios[0] <= rates) and np.all(rates < ratios[1]), errs


# ------------------------------------------------------------------ rk4's order with joint friction (issue 29)

def _order_table():
    """benchmarks/order_table.py: the converged reference (scipy on Pinocchio's aba) and the kuka's path."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "order_table.py"
    spec = importlib.util.spec_from_file_location("order_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rosenbrock_w_terms_meet_their_order_conditions_and_are_l_stable():
    from dynlib.sim import integrators as I

    b, c = I.WEIGHTS, I.NODES
    alpha = np.diag(c[1:], -1)
    G = I.GAMMAS + I.GAMMA * np.eye(4)
    beta = G.sum(axis=1)
    conditions = [b @ beta, b @ (c * beta), b @ (alpha @ beta), b @ (G @ c), b @ (G @ beta)]
    assert np.max(np.abs(conditions)) < 1e-14, conditions

    def R(z):  # the stability function on y' = λy with W = λ
        return 1 + z * b @ np.linalg.solve(np.eye(4) - z * (alpha + G), np.ones(4))

    assert abs(R(-1e12)) < 1e-9  # L-stable: a joint held by stiff friction stays held
    assert max(abs(R(z)) for z in -np.logspace(-3, 9, 400)) <= 1.0
    assert max(abs(R(1j * y)) for y in np.logspace(-3, 9, 400)) <= 1.0 + 1e-12  # A-stable


def test_rk4_on_a_damped_kuka_converges_at_order_3_or_more():
    # pybullet's kuka_iiwa: damping 0.5 on every joint, none stiff at 1 ms: rk4 integrates it explicitly
    pytest.importorskip("pybullet_data")
    T = _order_table()
    path = T.kuka_path()
    model = dynlib.load(path)
    ref = T.reference_final_state(model, path, 1.0)
    errs = [T.error(model, path, T.dyn_final_state(model, "rk4", dt, 1.0), ref) for dt in (1e-3, 5e-4)]
    assert errs[0] / errs[1] >= 8, errs


def test_rk4_keeps_order_2_or_more_where_the_damping_is_stiff():
    # arm6 without Coulomb friction: wrist_3's damping is stiff at 1 ms (explicit rk4 diverges), so rk4 takes it
    # by its Rosenbrock-W terms; the reference is scipy's Radau on Pinocchio's aba
    T = _order_table()
    path = T.ROOT / "robots" / "arm6.urdf"
    model = dynlib.load(path)
    model.arrays.friction[:] = 0.0
    ref = T.reference_final_state(model, path, 1.0, stiff=True)
    assert T.dyn_final_state(model, "rk4", 1e-3, 1.0, friction_integration="explicit") is None  # diverged
    errs = [T.error(model, path, T.dyn_final_state(model, "rk4", dt, 1.0), ref) for dt in (2e-3, 1e-3, 5e-4)]
    assert errs[0] / errs[1] >= 4 and errs[1] / errs[2] >= 4, errs
    assert errs[1] < 1e-6, errs
