"""Mimic joints in the simulation loop (issue 28 item 8, `dynlib.sim.mimic`): example-robot-data's Panda, whose
panda_finger_joint2 mimics panda_finger_joint1, and a small gripper (`tests.cli.test_info.GRIPPER`: right =
-1 * left + 0.01) simulated as the coupled robot. The follower equals multiplier * leader + offset at every row;
the accelerations are (Gᵀ M G)⁻¹ Gᵀ (τ − h) of Pinocchio's unreduced model; rk4 keeps order 4 against scipy's
DOP853 on the coupled ODE; the energy is conserved; inverse dynamics gives back the torques; a follower has no
motor; a follower's limit is held on its leader; every contact model keeps the coupling."""
import numpy as np
import pytest

import dynlib
from dynlib.errors import InputError
from helpers import PinMap, assert_close, erd_path, pinocchio_model, rel_err

INTEGRATORS = ("rk4", "semi-implicit", "euler")


def panda():
    return dynlib.load(erd_path("panda_description/urdf/panda.urdf"))


def gripper(tmp_path, text=None):
    from tests.cli.test_info import GRIPPER

    path = tmp_path / "g.urdf"
    path.write_text(text or GRIPPER)
    return dynlib.load(path)


def moving_start(model, seed=0, finger=0.02):
    """A coupled (q0, v0) of the Panda: a random arm configuration, the fingers at `finger`, random velocities."""
    c, rng = model.coupling, np.random.default_rng(seed)
    q_r = c.reduce_q(dynlib.random_configuration(model, rng))
    q_r[-1] = finger
    v_r = rng.uniform(-1, 1, c.nv)
    v_r[-1] = 0.05
    return c.expand_q(q_r), c.expand_v(v_r)


def coupled_pinocchio(model, q, v, tau):
    """a (nv,) = G (Gᵀ M G)⁻¹ Gᵀ (τ − h) with Pinocchio's M and h of the unreduced tree (no mimic in it)."""
    import pinocchio as pin

    pm = pinocchio_model(model.source)
    pmap, c = PinMap(model, pm), model.coupling
    data = pm.createData()
    qp, vp = pmap.q(q), pmap.v(v)
    M = pmap.mat(pin.crba(pm, data, qp))
    M = np.triu(M) + np.triu(M, 1).T
    h = pmap.v_back(pin.rnea(pm, data, qp, vp, np.zeros(pm.nv)))
    return c.expand_v(np.linalg.solve(c.G.T @ M @ c.G, c.G.T @ (tau - h)))


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_the_follower_is_its_leader_at_every_row(integrator):
    model = panda()
    c = model.coupling
    q0, v0 = moving_start(model)
    r = dynlib.simulate(model, q0, v0, dt=1e-3, steps=300, integrator=integrator)
    assert r.diverged is None
    assert np.max(np.abs(c.mismatch(r.q))) <= 1e-12
    for x in (r.v, r.a):
        assert np.max(np.abs(x - c.expand_v(c.reduce_v(x)))) <= 1e-12 * max(1.0, np.max(np.abs(x)))
    f = model.v_names.index("panda_finger_joint2")
    assert np.all(r.tau[:, f] == 0.0)  # a follower has no motor


@pytest.mark.oracle
def test_the_accelerations_are_the_coupled_robots_of_pinocchios_tree():
    model = panda()
    q0, v0 = moving_start(model, seed=3)
    tau = {n: x for n, x in zip(model.coupling.v_names, np.linspace(-5, 5, model.coupling.nv))}
    r = dynlib.simulate(model, q0, v0, dt=1e-3, steps=200, joint_friction=False, limits=False,
                        controller=dynlib.sim.controllers.Constant(tau=tau))
    for k in (0, 57, 200):
        ref = coupled_pinocchio(model, r.q[k], r.v[k], r.tau[k])
        assert rel_err(r.a[k], ref) < 1e-10, (k, r.a[k], ref)
    # and dynlib's own coupled aba (the same projection, dynlib's kernels)
    a_r = dynlib.coupled_aba(model, model.coupling.reduce_q(r.q), model.coupling.reduce_v(r.v),
                             model.coupling.project(r.tau))
    assert_close(model.coupling.reduce_v(r.a), a_r, 1e-10, "a_r")


@pytest.mark.parametrize("integrator, friction", [("rk4", False), ("semi-implicit", True), ("euler", True)])
def test_inverse_dynamics_of_the_rows_gives_back_the_torques(integrator, friction):
    """Gᵀ RNEA(q, v, a) of every row (what `dyn inverse` prints, projected) is the leaders' recorded torque plus
    the limits' minus the joint friction (the Panda's is viscous; implicit with semi-implicit and euler, whose
    rows record the coupled explicit acceleration); the follower's torque is zero."""
    model = panda()
    c = model.coupling
    q0, v0 = moving_start(model, seed=4)
    ctrl = dynlib.sim.controllers.PD(kp=50.0, kd=5.0, gravity_compensation=True)
    r = dynlib.simulate(model, q0, v0, dt=1e-3, steps=200, controller=ctrl, joint_friction=friction,
                        integrator=integrator)
    tau = r.tau + (r.limit if r.limit is not None else 0.0) - (model.arrays.damping * r.v if friction else 0.0)
    back = dynlib.coupled_rnea(model, c.reduce_q(r.q), c.reduce_v(r.v), c.reduce_v(r.a))
    assert_close(back, c.project(tau), 1e-9, "coupled tau")
    assert_close(c.project(dynlib.rnea(model, r.q, r.v, r.a)), c.project(tau), 1e-9, "projected tree tau")
    assert np.all(r.tau[:, model.v_names.index("panda_finger_joint2")] == 0.0)


def test_computed_torque_tracks_the_coupled_target():
    """Computed torque on the coupled robot: the follower's target and gains are its leader's through the
    coupling, so Gᵀ RNEA(q, v, G a_cmd) tracks a sinusoid of the fingers and an arm joint exactly."""
    model = panda()
    c = model.coupling
    q0, _ = moving_start(model, seed=8, finger=0.02)
    target = dynlib.sim.controllers.Sinusoids(amplitude={"panda_finger_joint1": 0.01, "panda_joint2": 0.2},
                                              frequency={"panda_finger_joint1": 1.0, "panda_joint2": 0.5})
    ctrl = dynlib.sim.controllers.ComputedTorque(kp=400.0, kd=40.0, target=target)
    r = dynlib.simulate(model, q0, dt=1e-3, steps=1000, controller=ctrl, limits=False, integrator="rk4")
    t = r.time
    err = np.abs(r.q[:, model.q_names.index("panda_finger_joint1")] - (0.02 + 0.01 * np.sin(2 * np.pi * t)))
    late = np.max(err[t > 0.7])  # the start's error (v0 = 0, the target moving) dies out
    assert late < 1e-7 and err[-1] < 1e-9 and late < 1e-3 * np.max(err)
    assert np.max(np.abs(c.mismatch(r.q))) <= 1e-12
    assert np.all(r.tau[:, model.v_names.index("panda_finger_joint2")] == 0.0)


def test_energy_is_conserved_with_rk4_and_zero_torque():
    model = panda()
    q0, v0 = moving_start(model, seed=1)
    r = dynlib.simulate(model, q0, v0, dt=1e-3, steps=1000, joint_friction=False, limits=False)
    E = r.energy[:, 2]
    assert np.max(np.abs(E - E[0])) < 1e-8 * max(1.0, abs(E[0])), np.max(np.abs(E - E[0]))


def test_rk4_is_fourth_order_against_dop853_on_the_coupled_ode():
    from scipy.integrate import solve_ivp

    model = panda()
    c = model.coupling
    q0, v0 = moving_start(model, seed=2)
    T, n_r = 0.25, c.nv

    def f(t, y):
        return np.concatenate([y[n_r:], dynlib.coupled_aba(model, y[:n_r], y[n_r:], np.zeros(n_r))])

    ref = solve_ivp(f, (0, T), np.concatenate([c.reduce_q(q0), c.reduce_v(v0)]), method="DOP853",
                    rtol=1e-13, atol=1e-13).y[:n_r, -1]
    errs = []
    for n in (16, 32, 64):
        r = dynlib.simulate(model, q0, v0, dt=T / n, steps=n, joint_friction=False, limits=False, energy=False)
        errs.append(np.max(np.abs(c.reduce_q(r.q[-1]) - ref)))
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(rates > 3.6), (errs, rates)


def test_gravity_compensation_holds_the_coupled_robot_still(tmp_path):
    """The follower's gravity torque acts on its leader (Gᵀ g): the Panda (whose symmetric fingers' gravity
    torques cancel on the leader) and a gripper whose follower moves at half its leader's rate, gravity along
    the fingers, stay put; the leader's torque is the coupled robot's gravity torque, the follower's 0."""
    from tests.cli.test_info import GRIPPER

    half = gripper(tmp_path, GRIPPER.replace('multiplier="-1"', 'multiplier="0.5"')).with_gravity([0, -9.81, -9.81])
    for model in (panda(), half):
        c = model.coupling
        q0 = c.expand_q(c.reduce_q(dynlib.random_configuration(model, np.random.default_rng(6))))
        r = dynlib.simulate(model, q0, dt=1e-3, steps=300, controller=dynlib.sim.controllers.GravityCompensation(),
                            joint_friction=False, limits=False)
        assert np.max(np.abs(r.v)) < 1e-9, np.max(np.abs(r.v))
        g_r = dynlib.coupled_rnea(model, c.reduce_q(r.q), np.zeros((len(r), c.nv)), np.zeros((len(r), c.nv)))
        assert_close(c.reduce_v(r.tau), g_r, 1e-10, "coupled gravity torque")
        assert np.all(r.tau[:, c.coupled.nonzero()[0]] == 0.0) if model.nq == model.nv else True
    assert abs(r.tau[0, 1]) > 0.1  # the half gripper's leader carries both fingers' weight: m g (1 + 0.5 ...)


def test_a_follower_driven_by_name_is_an_error_and_a_gain_for_all_skips_it(tmp_path):
    model = gripper(tmp_path)
    PD, Constant = dynlib.sim.controllers.PD, dynlib.sim.controllers.Constant
    for ctrl, key in ((PD(kp={"right": 10.0}), "kp.right"), (PD(kp=1.0, target={"right": 0.0}), "target.right"),
                      (Constant(tau={"right": 1.0}), "tau.right")):
        with pytest.raises(InputError, match=f"^{key}: joint 'right' mimics 'left' and has no motor"):
            dynlib.simulate(model, dt=1e-3, steps=2, controller=ctrl)
    r = dynlib.simulate(model, dt=1e-3, steps=20, controller=PD(kp=10.0, kd=1.0, target={"left": 0.03}))
    assert np.all(r.tau[:, 2] == 0.0) and np.all(r.tau[:, 1] > 0.0)


def test_the_followers_initial_state_comes_from_its_leader_with_a_warning_when_given_otherwise(tmp_path):
    model = gripper(tmp_path)
    with pytest.warns(dynlib.core.model.MimicStateWarning, match="q0: joint 'right' mimics 'left'"):
        r = dynlib.simulate(model, [0.0, 0.02, 0.0], dt=1e-3, steps=2)
    assert r.q[0, 2] == pytest.approx(-0.01, abs=1e-15)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = dynlib.simulate(model, dt=1e-3, steps=2)  # the neutral start: the follower at its offset, no warning
        assert r.q[0, 2] == 0.01


def test_a_followers_limit_is_held_on_its_leader(tmp_path):
    """right in [-0.02, 0.01] with right = 0.01 - left: left <= 0.03, tighter than its own 0.04."""
    from tests.cli.test_info import GRIPPER

    model = gripper(tmp_path, GRIPPER.replace('lower="-0.03" upper="0.01"', 'lower="-0.02" upper="0.01"'))
    push = dynlib.sim.controllers.Constant(tau={"left": 5.0})
    for integrator in INTEGRATORS:
        r = dynlib.simulate(model, [0.0, 0.02, -0.01], dt=1e-3, steps=500, controller=push, integrator=integrator)
        assert np.max(r.q[:, 1]) < 0.03 + 0.002 and r.q[-1, 1] > 0.028, (integrator, np.max(r.q[:, 1]))
        assert np.max(np.abs(model.coupling.mismatch(r.q))) <= 1e-12
        assert r.limit is not None and np.all(r.limit[:, 2] == 0.0) and np.min(r.limit[:, 1]) < 0.0


@pytest.mark.parametrize("kind", ["soft", "bilateral", "unilateral", "relaxed"])
def test_every_contact_model_keeps_the_coupling(kind):
    """A Panda whose finger tips touch the ground (bilateral: held there): the coupling holds, and inverse
    dynamics with the contact forces gives back the torques (Gᵀ (RNEA − Jᵀ f) = Gᵀ tau)."""
    model = panda()
    c = model.coupling
    q0, _ = moving_start(model, seed=7)
    tips = ["panda_leftfinger", "panda_rightfinger"]
    low = min(dynlib.frame_placement(model, q0, t)[2, 3] for t in tips)
    contacts = {"model": kind, "points": [{"frame": t} for t in tips], "ground": {"height": float(low) + 0.001}}
    integrator = "semi-implicit" if kind in ("unilateral", "relaxed") else "rk4"
    r = dynlib.simulate(model, q0, dt=1e-3, steps=100, contacts=contacts, integrator=integrator,
                        joint_friction=False, limits=False)
    assert r.diverged is None
    assert np.max(np.abs(c.mismatch(r.q))) <= 1e-12
    assert np.max(np.abs(r.a - c.expand_v(c.reduce_v(r.a)))) <= 1e-9 * max(1.0, np.max(np.abs(r.a)))


def test_bilateral_contact_is_the_coupled_kkt_system():
    """At rest with the points at their targets, bilateral contact solves [Gᵀ M G, (J G)ᵀ; J G, 0] of the
    coupled robot: its acceleration and forces against numpy's solve of that system (Pinocchio-free, dynlib's
    crba, rnea and frame Jacobians of the tree)."""
    model = panda()
    c = model.coupling
    q0, _ = moving_start(model, seed=9)
    tips = ["panda_leftfinger", "panda_rightfinger"]
    points = [{"frame": t} for t in tips]
    r = dynlib.simulate(model, q0, dt=1e-3, steps=1, contacts={"model": "bilateral", "points": points},
                        joint_friction=False, limits=False)
    G = c.G
    M, h = dynlib.crba(model, q0), dynlib.nonlinear_effects(model, q0, np.zeros(model.nv))
    J = np.vstack([dynlib.frame_jacobian(model, q0, t, "local_world_aligned")[:3] for t in tips]) @ G
    K = np.block([[G.T @ M @ G, J.T], [J, np.zeros((6, 6))]])
    sol = np.linalg.solve(K, np.concatenate([-G.T @ h, np.zeros(6)]))
    assert rel_err(c.reduce_v(r.a[0]), sol[:c.nv]) < 1e-7  # the Delassus matrix's 1e-12 regularization
    assert rel_err(r.contact_force[0].ravel(), -sol[c.nv:]) < 1e-6


@pytest.mark.parametrize("relpath", ["xarm/xarm6_with_gripper.urdf"])
def test_a_gripper_whose_followers_carry_links_keeps_the_coupling(relpath):
    """pybullet_data's xArm gripper: six followers of one leader, with multipliers of both signs and links
    below them (the coupled matrix is dense across its branches). rk4, no friction: the coupling holds to the
    last bits, the accelerations are the coupled aba's, the energy is conserved."""
    import os

    pybullet_data = pytest.importorskip("pybullet_data")
    model = dynlib.load(os.path.join(pybullet_data.getDataPath(), relpath))
    c = model.coupling
    assert len(model.mimic) >= 2
    rng = np.random.default_rng(10)
    q0 = c.expand_q(c.reduce_q(dynlib.random_configuration(model, rng)))
    v0 = c.expand_v(rng.uniform(-0.5, 0.5, c.nv))
    r = dynlib.simulate(model, q0, v0, dt=1e-3, steps=300, joint_friction=False, limits=False)
    assert r.diverged is None
    assert np.max(np.abs(c.mismatch(r.q))) <= 1e-12
    a_r = dynlib.coupled_aba(model, c.reduce_q(r.q), c.reduce_v(r.v), np.zeros((len(r), c.nv)))
    assert rel_err(c.reduce_v(r.a), a_r) < 1e-10
    E = r.energy[:, 2]
    assert np.max(np.abs(E - E[0])) < 1e-7 * max(1.0, np.max(np.abs(r.energy[:, 0])))
