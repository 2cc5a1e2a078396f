"""Controllers (dynlib.sim.controllers) inside the simulation loop: what torque each one applies,
and the closed-loop behaviour it must produce."""
import numpy as np
import pytest

import dynlib
from dynlib.sim.controllers import (PD, ComputedTorque, Constant, GravityCompensation, Sinusoids, StateFeedback,
                                TargetTable, TorqueTable, Zero)
from dynlib.errors import InputError
from dynlib.sim.simulate import simulate
from helpers import ROBOTS_DIR, sample

# gains in proportion to arm6's joint inertias (kd ~ 2 sqrt(kp M_ii)): shoulder 3 kg m², wrist 1e-4
KP = {"shoulder_pan": 400, "shoulder_lift": 600, "elbow": 300, "wrist_1": 30, "wrist_2": 20, "wrist_3": 10}
KD = {"shoulder_pan": 72, "shoulder_lift": 86, "elbow": 25, "wrist_1": 1.0, "wrist_2": 0.4, "wrist_3": 0.08}
Q0 = np.array([0.2, -0.6, 0.8, -0.4, 0.3, 0.1])


def test_pd_converges_to_its_set_point_with_gravity_compensation():
    model = sample("arm6")
    target = {"shoulder_pan": 0.5, "shoulder_lift": -1.0, "elbow": 1.2, "wrist_1": -0.3}
    r = simulate(model, Q0, dt=1e-3, steps=4000, joint_friction=False,
                 controller=PD(KP, KD, target, gravity_compensation=True))
    q_star = Q0.copy()
    q_star[:4] = [0.5, -1.0, 1.2, -0.3]  # wrist_2, wrist_3 hold their initial value
    assert np.abs(r.q[-1] - q_star).max() < 1e-6
    assert np.abs(r.v[-1]).max() < 1e-5
    err = np.abs(r.q - q_star).max(axis=1)
    assert err[-1] < 1e-4 * err[0]


def test_pd_without_gravity_compensation_settles_where_the_spring_holds_gravity():
    # steady state: kp (q* - q) = g(q), the textbook offset of PD under gravity
    model = sample("arm6")
    kp = np.array([400, 600, 300, 30, 20, 10.0])
    r = simulate(model, Q0, dt=1e-3, steps=6000, joint_friction=False, controller=PD(kp, KD))
    q = r.q[-1]
    assert np.abs(r.v[-1]).max() < 1e-6
    assert np.allclose(kp * (Q0 - q), dynlib.gravity_torques(model, q), rtol=1e-6, atol=1e-8)
    assert np.abs(q - Q0).max() > 1e-3  # there is an offset


def test_pd_in_zero_gravity_converges_and_records_its_torque():
    model = sample("arm6").with_gravity([0, 0, 0])
    r = simulate(model, Q0, dt=1e-3, steps=3000, joint_friction=False, controller=PD(KP, KD, np.zeros(6)),
                 limits=False)  # the PD law itself, unsaturated
    assert np.abs(r.q[-1]).max() < 1e-6
    kp, kd = np.array(list(KP.values())), np.array(list(KD.values()))
    assert np.allclose(r.tau, kp * (0 - r.q) - kd * r.v, rtol=1e-12, atol=1e-12)


def test_pd_with_coulomb_friction_stops_inside_the_dead_band():
    # static friction holds the joint wherever |kp e| < friction: PD alone cannot close that gap
    model = sample("arm6")
    r = simulate(model, Q0, dt=1e-3, steps=4000, controller=PD(KP, KD, Q0 + 0.05, gravity_compensation=True))
    kp = np.array(list(KP.values()))
    e = np.abs(Q0 + 0.05 - r.q[-1])
    assert np.all(e <= model.arrays.friction / kp + 1e-3)


def test_gravity_compensation_holds_the_arm_still():
    model = sample("arm6")
    r = simulate(model, Q0, dt=1e-3, steps=1000, controller=GravityCompensation())
    assert np.abs(r.q - Q0).max() < 1e-12
    assert np.allclose(r.tau, dynlib.gravity_torques(model, r.q), rtol=1e-12, atol=1e-12)
    assert np.abs(r.a).max() < 1e-9


def test_gravity_compensation_leaves_the_free_flyer_root_unactuated():
    model = sample("quadruped", True)
    q = model.q_neutral.copy()
    q[2] = 0.5
    r = simulate(model, q, dt=1e-3, steps=100, controller=GravityCompensation())
    assert np.all(r.tau[:, :6] == 0.0)
    assert np.allclose(r.tau[:, 6:], dynlib.gravity_torques(model, r.q)[:, 6:], rtol=1e-12, atol=1e-12)
    assert np.abs(r.tau[:, 6:]).max() > 0.1
    assert r.q[-1, 2] < 0.5 - 0.04  # the trunk is not held: the robot falls


def test_computed_torque_tracks_sinusoids_exactly_once_the_error_has_died():
    model = sample("arm6")
    amp = {"shoulder_pan": 0.5, "shoulder_lift": 0.3, "elbow": 0.4, "wrist_1": 0.5, "wrist_3": 0.2}
    freq = {"shoulder_pan": 0.25, "shoulder_lift": 0.5, "elbow": 0.5, "wrist_1": 1.0, "wrist_3": 2.0}
    offset = {"shoulder_lift": -0.8, "elbow": 1.2}
    ctrl = ComputedTorque(kp=100, kd=20, target=Sinusoids(amplitude=amp, frequency=freq, offset=offset))
    q0 = np.zeros(6)  # off the target: shoulder_lift at 0 instead of -0.8, elbow at 0 instead of 1.2
    r = simulate(model, q0, dt=1e-3, steps=4000, controller=ctrl)
    A, W = np.zeros(6), np.zeros(6)
    for k, name in enumerate(model.v_names):
        A[k], W[k] = amp.get(name, 0.0), 2 * np.pi * freq.get(name, 0.0)
    off = np.array([0, -0.8, 1.2, 0, 0, 0])
    qd = off + A * np.sin(np.outer(r.time, W))
    err = np.abs(r.q - qd).max(axis=1)
    assert err[0] > 1.0
    assert err[-1] < 1e-9  # e'' + 20 e' + 100 e = 0 for 4 s: e ~ 1.2 * 4 t e^-10t, then round-off
    # the recorded torque is the inverse dynamics of the recorded motion, friction included
    D, F = model.arrays.damping, model.arrays.friction
    tau_id = dynlib.rnea(model, r.q, r.v, r.a) + D * r.v + F * np.tanh(r.v / 1e-3)
    assert np.allclose(r.tau, tau_id, rtol=1e-9, atol=1e-9)


def test_computed_torque_tracks_a_target_table():
    model = sample("arm6")
    t = np.linspace(0, 2, 201)
    Q = np.zeros((t.size, 6))
    Q[:, 1] = -0.5 * np.sin(np.pi * t)
    Q[:, 2] = 0.7 * (1 - np.cos(np.pi * t))
    ctrl = ComputedTorque(kp=400, kd=40, target=TargetTable(t, Q))  # velocities differentiated from q
    v0 = np.array([0, -0.5 * np.pi, 0, 0, 0, 0])  # on the target: no transient
    r = simulate(model, np.zeros(6), v0, dt=1e-3, steps=2000, controller=ctrl)
    exact = np.zeros((r.time.size, 6))
    exact[:, 1] = -0.5 * np.sin(np.pi * r.time)
    exact[:, 2] = 0.7 * (1 - np.cos(np.pi * r.time))
    err_fd = np.abs(r.q - exact).max()
    assert err_fd < 1e-3  # the table's interpolation and finite differences set the floor
    # with the table's own derivatives, only the interpolation error is left
    V, A = np.zeros_like(Q), np.zeros_like(Q)
    V[:, 1], A[:, 1] = -0.5 * np.pi * np.cos(np.pi * t), 0.5 * np.pi ** 2 * np.sin(np.pi * t)
    V[:, 2], A[:, 2] = 0.7 * np.pi * np.sin(np.pi * t), 0.7 * np.pi ** 2 * np.cos(np.pi * t)
    ctrl = ComputedTorque(kp=400, kd=40, target=TargetTable(t, Q, V, A))
    r = simulate(model, np.zeros(6), v0, dt=1e-3, steps=2000, controller=ctrl)
    assert np.abs(r.q - exact).max() < err_fd / 2


def momentum(model, q, v):
    """World-frame linear momentum of a free-floating robot (the root rows of M v, rotated), and R."""
    x, y, z, w = q[3:7]
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return R @ (dynlib.crba(model, q)[:3] @ v), R


def test_constant_torque_is_applied_as_given_root_included():
    # a root "torque" is a wrench on the root body, in its frame: the robot's momentum grows by
    # the integral of that force turned into world axes
    model = sample("quadruped", True).with_gravity([0, 0, 0])
    tau = np.zeros(model.nv)
    tau[:3] = [2.0, -1.0, 12.0]
    r = simulate(model, dt=1e-3, steps=200, controller=Constant(tau))
    assert np.all(r.tau == tau)
    by_name = simulate(model, dt=1e-3, steps=200, controller=Constant({"root.fx": 2.0, "root.fy": -1.0, "root.fz": 12.0}))
    assert np.array_equal(by_name.q, r.q)
    force = np.array([momentum(model, q, v)[1] @ tau[:3] for q, v in zip(r.q, r.v)])
    impulse = np.trapezoid(force, r.time, axis=0)
    p, _ = momentum(model, r.q[-1], r.v[-1])
    assert np.allclose(p, impulse, rtol=1e-5)
    assert np.linalg.norm(p) > 2.0


def test_torque_table_is_interpolated_between_samples():
    model = sample("pendulum")
    table_t = np.array([0.0, 0.1, 0.25])
    table_tau = np.array([[0.0], [2.0], [-1.0]])
    r = simulate(model, dt=0.01, steps=40, controller=TorqueTable(table_t, table_tau))
    assert np.allclose(r.tau[:, 0], np.interp(r.time, table_t, table_tau[:, 0]), rtol=0, atol=1e-12)
    assert r.tau[-1, 0] == -1.0  # held after the last sample
    # held before the first sample too; many samples, some exactly on steps (the binary search)
    table_t = np.r_[0.05, np.sort(np.random.default_rng(0).uniform(0.05, 0.3, 200)), 0.3]
    table_tau = np.sin(40 * table_t)[:, None]
    r = simulate(model, dt=0.01, steps=40, controller=TorqueTable(table_t, table_tau))
    assert np.allclose(r.tau[:, 0], np.interp(r.time, table_t, table_tau[:, 0]), rtol=0, atol=1e-12)
    assert r.tau[0, 0] == table_tau[0, 0]


def test_zero_controller_records_zero_torque_while_friction_acts():
    model = sample("arm6")
    r = simulate(model, Q0, np.ones(6), dt=1e-3, steps=10, controller=Zero())
    assert np.all(r.tau == 0.0)
    D, F = model.arrays.damping, model.arrays.friction
    friction = -D * r.v - F * np.tanh(r.v / 1e-3)
    assert np.allclose(r.a, dynlib.aba(model, r.q, r.v, friction), rtol=1e-12, atol=1e-10)


def test_controller_inputs_are_checked_with_names():
    model = sample("arm6")
    with pytest.raises(InputError, match="did you mean 'elbow'"):
        simulate(model, dt=1e-3, steps=1, controller=PD(kp={"elbw": 1.0}))
    with pytest.raises(InputError, match="expected 6 numbers"):
        simulate(model, dt=1e-3, steps=1, controller=Constant([1.0, 2.0]))
    with pytest.raises(InputError, match="times must increase"):
        simulate(model, dt=1e-3, steps=1, controller=TorqueTable([0, 0.2, 0.1], np.zeros((3, 6))))
    with pytest.raises(InputError, match="fixed-base"):
        simulate(sample("quadruped", True), dt=1e-3, steps=1, controller=ComputedTorque(1, 1))


def test_the_control_law_is_chosen_by_data_in_one_compiled_loop():
    # PD and computed torque run through the same loop: the Control record has one numba type for every
    # controller, its kind picks the law (dynlib.sim.stages), and each applies its own law
    from numba import typeof

    from dynlib.sim.controllers import COMPUTED_TORQUE, PD_TORQUE, STATE_FEEDBACK, control_record
    from dynlib.sim.simulate import _run

    model = sample("arm6")
    kp, kd = np.array(list(KP.values())), np.array(list(KD.values()))
    pd = simulate(model, Q0, dt=1e-3, steps=300, controller=PD(kp, kd, np.zeros(6)), limits=False)  # unsaturated
    ctrl = ComputedTorque(kp=100, kd=20, target=Sinusoids(amplitude=0.3, frequency=0.5))
    ct = simulate(model, Q0, dt=1e-3, steps=300, controller=ctrl)
    K = np.random.default_rng(1).normal(size=(6, 12))
    fb = simulate(model, Q0, dt=1e-3, steps=3, controller=StateFeedback(K), limits=False)
    records = [control_record(c.params(model, Q0, (model.arrays.damping, model.arrays.friction, 1e-3)))
               for c in (PD(kp, kd, np.zeros(6)), ctrl, StateFeedback(K))]
    assert [r.kind for r in records] == [PD_TORQUE, COMPUTED_TORQUE, STATE_FEEDBACK]
    assert len({typeof(r) for r in records}) == 1 and len(_run.signatures) == 1
    # state feedback: g(0) - K [q ⊖ 0; v] (its default target q = 0 and feed-forward, gravity compensation there)
    g0 = dynlib.gravity_torques(model, np.zeros(6))
    assert np.allclose(fb.tau, g0 - np.hstack([fb.q, fb.v]) @ K.T, rtol=1e-12, atol=1e-10)
    # PD: kp (q* - q) - kd v at the recorded states
    assert np.allclose(pd.tau, kp * (0 - pd.q) - kd * pd.v, rtol=1e-12, atol=1e-12)
    # computed torque: RNEA(q, v, a_d + kd (v_d - v) + kp (q_d - q)) + the plant's joint friction
    w = 2 * np.pi * 0.5
    q_d = Q0 + 0.3 * np.sin(w * ct.time)[:, None]
    v_d = 0.3 * w * np.cos(w * ct.time)[:, None] * np.ones(6)
    a_d = -0.3 * w * w * np.sin(w * ct.time)[:, None] * np.ones(6)
    a_cmd = a_d + 20 * (v_d - ct.v) + 100 * (q_d - ct.q)
    D, F = model.arrays.damping, model.arrays.friction
    tau = dynlib.rnea(model, ct.q, ct.v, a_cmd) + D * ct.v + F * np.tanh(ct.v / 1e-3)
    assert np.allclose(ct.tau, tau, rtol=1e-10, atol=1e-10)


def test_state_feedback_is_tau0_minus_k_dx_on_its_inputs_the_manifold_difference_included():
    # the quadruped on a free-flyer: q ⊖ q* in the tangent coordinates (the root's 6, as dyn linearize's
    # state), a gain on four leg joints only, a target with a turned, raised root and a velocity
    model = sample("quadruped", True)
    rng = np.random.default_rng(3)
    inputs = ["lf_hfe", "lf_kfe", "rh_haa", "rh_kfe"]
    K = rng.normal(size=(4, 2 * model.nv))
    q_star = {"root.z": 0.4, "root.qx": 0.1, "root.qw": 1.0, "lf_hfe": 0.8, "lf_kfe": -1.6}
    qd_star = {"root.vx": 0.3, "lf_kfe": -0.2}
    tau0 = {"lf_hfe": 1.5, "rh_kfe": -2.0}
    q0 = model.q_neutral.copy()
    q0[:7] = [0.1, -0.2, 0.5, 0.2, -0.1, 0.3, 0.9]
    q0[3:7] /= np.linalg.norm(q0[3:7])
    q0[7:] = rng.uniform(-0.5, 0.5, model.nq - 7)
    v0 = rng.normal(size=model.nv)
    ctrl = StateFeedback(K, inputs, target={"q": q_star, "qd": qd_star}, tau=tau0)
    r = simulate(model, q0, v0, dt=1e-3, steps=1, controller=ctrl, limits=False, integrator="semi-implicit")
    p = ctrl.params(model, q0, (model.arrays.damping, model.arrays.friction, 1e-3))
    qs = p.q_ref
    assert np.isclose(np.linalg.norm(qs[3:7]), 1.0) and qs[2] == 0.4  # the quaternion given in part, normalised
    v_star = np.zeros(model.nv)
    v_star[[model.v_names.index(n) for n in qd_star]] = list(qd_star.values())
    dx = np.concatenate([dynlib.difference(model, qs, q0), v0 - v_star])
    expected = np.zeros(model.nv)
    for k, name in enumerate(inputs):
        i = model.v_names.index(name)
        expected[i] = tau0.get(name, 0.0) - K[k] @ dx
    assert np.allclose(r.tau[0], expected, rtol=1e-12, atol=1e-12)
    assert np.count_nonzero(r.tau[0]) == 4


def test_state_feedback_saturates_at_the_effort_limit_and_drives_only_the_cart():
    model = dynlib.load(ROBOTS_DIR / "cartpole.urdf")  # effort 20 N on the cart, no motor on the pole
    K = np.array([[-1.0, -33.0, -2.3, -8.1]])
    ctrl = StateFeedback(K, ["cart"])
    q0 = np.array([0.0, 0.8])  # -K dx = 26.4 N > 20 N
    free = simulate(model, q0, dt=0.01, steps=1, controller=ctrl, limits={"effort": False})
    held = simulate(model, q0, dt=0.01, steps=1, controller=ctrl)
    assert free.tau[0, 0] == pytest.approx(33.0 * 0.8, rel=1e-12) and free.tau[0, 1] == 0.0
    assert held.tau[0, 0] == 20.0 and held.tau[0, 1] == 0.0
    # the default feed-forward is gravity compensation at the target, on the inputs only: zero upright,
    # and at a tilted target the pole's gravity torque (not an input) is not applied
    tilted = StateFeedback(K, ["cart"], target={"q": {"pole": 0.3}}).params(model, q0, (np.zeros(2), np.zeros(2), 1e-3))
    assert np.allclose(tilted.tau0, 0.0, atol=1e-12) and np.array_equal(tilted.actuated, [1.0, 0.0])


def test_state_feedback_inputs_are_checked():
    model = dynlib.load(ROBOTS_DIR / "cartpole.urdf")
    with pytest.raises(InputError, match=r"gain: expected shape \(1, 4\)"):
        simulate(model, dt=0.01, steps=1, controller=StateFeedback(np.zeros((1, 3)), ["cart"]))
    with pytest.raises(InputError, match="no coordinate 'crt'; did you mean 'cart'"):
        simulate(model, dt=0.01, steps=1, controller=StateFeedback(np.zeros((1, 4)), ["crt"]))
    with pytest.raises(InputError, match="finite"):
        simulate(model, dt=0.01, steps=1, controller=StateFeedback([[0, np.nan, 0, 0]], ["cart"]))
    with pytest.raises(InputError, match="pole not an input of the gain"):
        simulate(model, dt=0.01, steps=1, controller=StateFeedback(np.zeros((1, 4)), ["cart"], tau={"pole": 1.0}))
    with pytest.raises(InputError, match="target.q: robot 'cartpole' has no coordinate 'pol'"):
        simulate(model, dt=0.01, steps=1, controller=StateFeedback(np.zeros((1, 4)), ["cart"], target={"q": {"pol": 1}}))
