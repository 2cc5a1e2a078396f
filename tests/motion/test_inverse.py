"""dynlib.motion.inverse: inverse dynamics over a trajectory's rows.

Pinocchio's RNEA (plus the URDF joint friction Pinocchio parsed) on example-robot-data
robots, fixed and floating base; the round trip through dynlib.aba and a small
integrator; torques from positions alone (central, and savgol on noisy positions);
column names, --keep-columns, column templates; one-line errors with row and column.
"""
import numpy as np
import pytest

import dynlib
from dynlib.errors import InputError, TrajectoryError
from dynlib.files.columns import tau_columns
from dynlib.motion.inverse import effort_excess, inverse_dynamics_trajectory, joint_friction_torques
from dynlib.files.trajectory import Trajectory, column_names
from helpers import ROBOTS_DIR, PinMap, pinocchio_model, assert_close, sample
from tests.motion.test_derivatives import smooth_motion

EPS_FRICTION = 1e-3
ARM = sample("arm6")
QUAD = sample("quadruped", True)


def trajectory(model, t, Q, V=None, A=None, extra=()):
    """An in-memory Trajectory with SPEC columns (q only when V, A are None)."""
    parts = ("q",) if V is None else ("q", "qd", "qdd")
    blocks = [t[:, None], Q] + ([] if V is None else [V, A])
    names = column_names(model.q_names, model.v_names, parts)
    for name, col in extra:
        names.append(name)
        blocks.append(col[:, None])
    return Trajectory(names, np.hstack(blocks), "traj.csv", lines=2)


def torques(result):
    names, data, _ = result
    return data[:, [j for j, n in enumerate(names) if n.startswith("tau.")]]


# -- Pinocchio ---------------------------------------------------------------------------

ERD = [
    ("ur5", "ur_description/urdf/ur5_robot.urdf", False),
    ("panda", "panda_description/urdf/panda.urdf", False),              # prismatic fingers, damping
    ("kinova", "kinova_description/robots/kinova.urdf", False),         # continuous joints
    ("solo12", "solo_description/robots/solo12.urdf", True),
    ("talos_reduced", "talos_data/robots/talos_reduced.urdf", True),    # damping and friction
]


@pytest.mark.oracle
@pytest.mark.parametrize("label, relpath, floating", ERD, ids=[e[0] for e in ERD])
def test_torques_match_pinocchio_rnea_plus_joint_friction(label, relpath, floating, erd_path):
    pin = pytest.importorskip("pinocchio")
    path = erd_path(relpath)
    model = dynlib.load(path, floating_base=floating)
    pm = pinocchio_model(path, floating)
    pd = pm.createData()
    mp = PinMap(model, pm)
    t = np.arange(300) * 1e-3
    Q, V, A = smooth_motion(model, t, seed=5)
    tau = torques(inverse_dynamics_trajectory(model, trajectory(model, t, Q, V, A)))
    assert tau.shape == (len(t), model.nv)
    for k in range(0, len(t), 7):
        vp = mp.v(V[k])
        ref = pin.rnea(pm, pd, mp.q(Q[k]), vp, mp.v(A[k])) + pm.damping * vp + pm.friction * np.tanh(vp / EPS_FRICTION)
        assert_close(tau[k], mp.v_back(ref), 1e-8, "inverse vs Pinocchio rnea + friction", f"{label} row {k}")


# -- round trip through forward dynamics -------------------------------------------------

def forward_run(model, tau_of_t, q0, steps=1500, dt=1e-3, eps=EPS_FRICTION):
    """Semi-implicit Euler with dynlib.aba and the URDF friction (smoothing eps) as a passive
    torque; rows (t, q, v, a, tau) where a = aba(q, v, tau - friction(v)) at that row's state."""
    t = np.arange(steps) * dt
    Q, V, A, T = (np.zeros((steps, n)) for n in (model.nq, model.nv, model.nv, model.nv))
    q, v = q0.copy(), np.zeros(model.nv)
    for k in range(steps):
        tau = tau_of_t(t[k])
        a = dynlib.aba(model, q, v, tau - joint_friction_torques(model, v[None], eps)[0])
        Q[k], V[k], A[k], T[k] = q, v, a, tau
        v = v + dt * a
        q = dynlib.integrate(model, q, dt * v)
    return t, Q, V, A, T


def test_round_trip_through_aba_gives_back_the_applied_torques():
    """arm6 with damping and Coulomb friction: what the motor applied comes back exactly.
    The last link is light (I = 1.4e-4 kg m²): its damping (0.5) and friction slope (0.1/ε)
    need dt = 0.1 ms and ε = 0.1 to keep explicit Euler stable."""
    amp = np.array([20.0, 60.0, 25.0, 3.0, 2.0, 1.0])
    t, Q, V, A, T = forward_run(ARM, lambda s: amp * np.sin(30 * s + np.arange(6)), np.full(6, 0.2),
                                steps=3000, dt=1e-4, eps=0.1)
    assert np.abs(V).max() > 1.0 and np.all(np.isfinite(V))  # it moved, through zero velocities
    tau = torques(inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q, V, A), friction_smoothing=0.1))
    assert_close(tau, T, 1e-9, "aba -> inverse round trip, arm6")


def test_round_trip_floating_base_leaves_no_root_wrench():
    """A quadruped tumbling freely with joint torques: the root needs no wrench ('crane')."""
    def tau_of_t(s):
        tau = np.zeros(QUAD.nv)
        tau[6:] = 2.0 * np.sin(5 * s + np.arange(12))
        return tau

    q0 = QUAD.q_neutral.copy()
    q0[2] = 1.0
    t, Q, V, A, T = forward_run(QUAD, tau_of_t, q0, steps=800)
    tau = torques(inverse_dynamics_trajectory(QUAD, trajectory(QUAD, t, Q, V, A)))
    assert_close(tau, T, 1e-9, "aba -> inverse round trip, quadruped floating")


def test_root_wrench_holds_a_floating_robot_still():
    """At rest the root needs the weight, upward, and nothing else (level root)."""
    t = np.arange(5) * 1e-3
    Q = np.tile(QUAD.q_neutral, (5, 1))
    Z = np.zeros((5, QUAD.nv))
    names, data, _ = inverse_dynamics_trajectory(QUAD, trajectory(QUAD, t, Q, Z, Z))
    root = data[:, 1:7]
    assert names[1:7] == ["tau.root.fx", "tau.root.fy", "tau.root.fz", "tau.root.tx", "tau.root.ty", "tau.root.tz"]
    assert_close(root[:, 2], np.full(5, 9.81 * QUAD.total_mass), 1e-12, "root holds the weight")
    assert_close(root[:, :2], np.zeros((5, 2)), 1e-12, "no horizontal force at rest")


# -- derivatives from positions ----------------------------------------------------------

@pytest.mark.parametrize("model", [ARM, QUAD], ids=["arm6", "quadruped-floating"])
def test_central_from_positions_within_1e3_of_exact_torques(model):
    t = np.arange(2001) * 1e-3
    Q, V, A = smooth_motion(model, t, seed=6)
    exact = torques(inverse_dynamics_trajectory(model, trajectory(model, t, Q, V, A)))
    result = inverse_dynamics_trajectory(model, trajectory(model, t, Q))
    assert result.derivatives == "central"
    assert_close(torques(result)[5:-5], exact[5:-5], 1e-3, "central torques", model.name)


def rms_rel(x, ref):
    return float(np.sqrt(np.mean((x - ref) ** 2)) / np.sqrt(np.mean(ref ** 2)))


@pytest.mark.parametrize("model", [ARM, QUAD], ids=["arm6", "quadruped-floating"])
def test_savgol_on_noisy_positions_is_ten_times_better_than_central(model):
    t = np.arange(3001) * 1e-3
    Q, V, A = smooth_motion(model, t, seed=7)
    exact = torques(inverse_dynamics_trajectory(model, trajectory(model, t, Q, V, A)))
    noisy = Q + np.random.default_rng(8).normal(scale=1e-4, size=Q.shape)  # 0.1 mrad, 0.1 mm
    if model.has_floating_base:
        noisy[:, 3:7] /= np.linalg.norm(noisy[:, 3:7], axis=1, keepdims=True)
    inner = slice(100, -100)
    err = {m: rms_rel(torques(inverse_dynamics_trajectory(model, trajectory(model, t, noisy), derivatives=m))[inner],
                      exact[inner]) for m in ("central", "savgol")}
    assert err["savgol"] * 10 < err["central"], err
    assert err["savgol"] < 0.05, err


# -- columns -----------------------------------------------------------------------------

def test_torque_columns_follow_the_spec():
    t = np.arange(5) * 1e-3
    for model in (ARM, QUAD):
        Q = np.tile(model.q_neutral, (5, 1))
        names = inverse_dynamics_trajectory(model, trajectory(model, t, Q, np.zeros((5, model.nv)),
                                                              np.zeros((5, model.nv)))).names
        assert names == ["time"] + tau_columns(model)
    assert names[1:8] == ["tau.root.fx", "tau.root.fy", "tau.root.fz",
                          "tau.root.tx", "tau.root.ty", "tau.root.tz", "tau.lf_haa"]
    assert tau_columns(ARM) == [f"tau.{n}" for n in ARM.v_names]


def test_joint_friction_is_added_back_as_the_urdf_states():
    t = np.arange(50) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    traj = trajectory(ARM, t, Q, V, A)
    with_f = torques(inverse_dynamics_trajectory(ARM, traj))
    without = torques(inverse_dynamics_trajectory(ARM, traj, joint_friction=False))
    damping = np.array([2, 2, 1.5, 0.8, 0.8, 0.5])    # robots/arm6.urdf <dynamics>
    friction = np.array([1, 1, 0.8, 0.3, 0.3, 0.1])
    assert_close(with_f - without, damping * V + friction * np.tanh(V / 1e-3), 1e-12, "friction added back")
    wider = torques(inverse_dynamics_trajectory(ARM, traj, friction_smoothing=0.1))
    assert_close(wider - without, damping * V + friction * np.tanh(V / 0.1), 1e-12, "friction smoothing")


def test_keep_columns_keeps_the_input_in_spec_order_and_replaces_its_torques():
    t = np.arange(20) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    stale = [(f"tau.{n}", np.full(20, 99.0)) for n in ARM.v_names]
    traj = trajectory(ARM, t, Q, V, A, extra=[("energy.total", np.ones(20)), ("note", np.arange(20.0))] + stale)
    names, data, _ = inverse_dynamics_trajectory(ARM, traj, keep_columns=True)
    expected = column_names(ARM.q_names, ARM.v_names) + ["energy.total", "note"]
    assert names == expected
    assert_close(data[:, 1:1 + ARM.nq], Q, 0, "kept q")
    assert_close(data[:, -1], np.arange(20.0), 0, "kept other column")
    tau = data[:, [names.index(n) for n in tau_columns(ARM)]]
    assert_close(tau, torques(inverse_dynamics_trajectory(ARM, traj)), 0, "tau replaced")
    assert np.all(tau != 99.0)


def test_column_templates_read_the_same_motion():
    t = np.arange(100) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    ref = torques(inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q, V, A)))
    names = ["time"] + [f"pos_{n}" for n in ARM.q_names] + [f"v{k}" for k in range(6)] + \
        [f"acc_{n}" for n in ARM.v_names[:-1]] + ["wrist3_acc"]
    traj = Trajectory(names, np.hstack([t[:, None], Q, V, A]), "rec.csv", lines=2)
    columns = {"q": "pos_{joint}", "qd": "v{index}", "qdd": "acc_{joint}", "qdd.wrist_3": "wrist3_acc"}
    assert_close(torques(inverse_dynamics_trajectory(ARM, traj, columns=columns)), ref, 0, "column map")


def test_auto_uses_given_derivatives_when_present():
    t = np.arange(100) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    assert inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q, V, A)).derivatives == "given"
    r = inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q, V, A), derivatives="savgol", window=0.02)
    assert r.derivatives == "savgol"


# -- errors ------------------------------------------------------------------------------

def test_missing_columns_are_named_with_what_was_found():
    t = np.arange(5) * 1e-3
    traj = Trajectory(["time", "q.shoulder_pan", "q.elbow"], np.zeros((5, 3)), "traj.csv", lines=2)
    with pytest.raises(TrajectoryError) as exc:
        inverse_dynamics_trajectory(ARM, traj)
    msg = str(exc.value)
    assert msg.startswith("traj.csv: missing 4 columns 'q.shoulder_lift', 'q.wrist_1'")
    assert "found 3: 'time', 'q.shoulder_pan', 'q.elbow'" in msg
    with pytest.raises(TrajectoryError, match="missing 6 columns 'pos_shoulder_pan'"):
        inverse_dynamics_trajectory(ARM, trajectory(ARM, t, np.zeros((5, 6))), columns={"q": "pos_{joint}"})


def test_non_finite_values_are_reported_with_row_and_column():
    t = np.arange(10) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    A[6, 2] = np.nan
    with pytest.raises(TrajectoryError, match=r"traj.csv:8: column 'qdd.elbow': value nan is not finite"):
        inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q, V, A))


def test_non_increasing_time_is_an_error_when_estimating():
    t = np.arange(10) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    t[4] = t[3]
    with pytest.raises(TrajectoryError, match=r"traj.csv:6: column 'time': time .*0\.003.* does not increase"):
        inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q))
    inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q, V, A))  # given derivatives do not use time


def test_non_uniform_sampling_with_savgol_names_the_line():
    t = np.arange(300) * 1e-3
    Q, _, _ = smooth_motion(ARM, t)
    t[200:] += 2e-4
    with pytest.raises(TrajectoryError, match=r"traj.csv:202: column 'time': Savitzky–Golay needs uniform sampling"):
        inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q), derivatives="savgol")


def test_unknown_joints_are_errors():
    t = np.arange(10) * 1e-3
    Q, _, _ = smooth_motion(ARM, t)
    traj = trajectory(ARM, t, Q, extra=[("q.elbw", np.zeros(10))])
    with pytest.raises(TrajectoryError, match=r"column 'q.elbw': robot 'arm6' has no coordinate 'elbw'; did you mean 'elbow'"):
        inverse_dynamics_trajectory(ARM, traj)
    Qf, _, _ = smooth_motion(QUAD, t)
    with pytest.raises(TrajectoryError, match=r"has no coordinate 'root.x' \(a floating-base trajectory: add --floating-base\)"):
        inverse_dynamics_trajectory(sample("quadruped"), trajectory(QUAD, t, Qf))
    with pytest.raises(InputError, match="has no coordinate 'elbw'"):
        inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q), columns={"q.elbw": "x"})


def test_partial_derivative_columns_are_an_error_in_auto_mode():
    t = np.arange(10) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    some_qdd = [(f"qdd.{n}", A[:, k]) for k, n in enumerate(ARM.v_names[:3])]
    traj = trajectory(ARM, t, Q, extra=[(f"qd.{n}", V[:, k]) for k, n in enumerate(ARM.v_names)] + some_qdd)
    with pytest.raises(TrajectoryError, match=r"has 9 of the 12 velocity and acceleration columns; missing 'qdd.wrist_1'"):
        inverse_dynamics_trajectory(ARM, traj)
    assert inverse_dynamics_trajectory(ARM, traj, derivatives="central").derivatives == "central"


def test_measured_velocities_alone_are_differentiated_from_q():
    """A recording's qd.* without qdd.* (a JointState's velocities): a needs differences, so auto
    estimates both from q, as without the qd.* columns."""
    t = np.arange(10) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    with_qd = trajectory(ARM, t, Q, extra=[(f"qd.{n}", V[:, k] + 1.0) for k, n in enumerate(ARM.v_names)])
    out = inverse_dynamics_trajectory(ARM, with_qd)
    assert out.derivatives == "central"
    assert np.array_equal(out.data, inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q)).data)


def test_quaternions_must_be_unit():
    t = np.arange(10) * 1e-3
    Q, V, A = smooth_motion(QUAD, t)
    Q[3, 3:7] *= 1.5
    with pytest.raises(TrajectoryError, match=r"traj.csv:5: column 'q.root.qx': quaternion \(q.root.qx, q.root.qy, q.root.qz, q.root.qw\) has norm 1.5"):
        inverse_dynamics_trajectory(QUAD, trajectory(QUAD, t, Q, V, A))


def test_bad_options():
    t = np.arange(10) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    traj = trajectory(ARM, t, Q, V, A)
    with pytest.raises(InputError, match="derivatives must be one of"):
        inverse_dynamics_trajectory(ARM, traj, derivatives="spline")
    with pytest.raises(InputError, match="friction smoothing must be a positive number"):
        inverse_dynamics_trajectory(ARM, traj, friction_smoothing=0.0)


def test_round_trip_with_armature_gives_back_the_applied_torques():
    """Rotor inertias: inverse dynamics (rnea's armature a) is the exact inverse of the forward run (aba's D_k)."""
    model = ARM.with_armature([0.05, 0.05, 0.02, 0.01, 0.01, 0.005])
    amp = np.array([20.0, 60.0, 25.0, 3.0, 2.0, 1.0])
    t, Q, V, A, T = forward_run(model, lambda s: amp * np.sin(30 * s + np.arange(6)), np.full(6, 0.2),
                                steps=1000, dt=1e-4, eps=0.1)
    assert np.abs(V).max() > 0.5
    tau = torques(inverse_dynamics_trajectory(model, trajectory(model, t, Q, V, A), friction_smoothing=0.1))
    assert_close(tau, T, 1e-9, "aba -> inverse round trip, arm6 with armature")
    without = torques(inverse_dynamics_trajectory(ARM, trajectory(ARM, t, Q, V, A), friction_smoothing=0.1))
    assert_close(tau - without, model.arrays.armature * A, 1e-9, "the rotors' armature a")


def test_effort_excess_counts_the_rows_over_each_joints_limit():
    """arm6's limits are 150 N·m (three shoulder/elbow joints) and 28 N·m (the wrist): a torque table built
    around them, each count and ratio known by construction; NaN rows and joints without a limit count none."""
    model = sample("arm6")
    assert list(model.effort) == [150.0, 150.0, 150.0, 28.0, 28.0, 28.0]
    t = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    tau = np.zeros((5, 6))
    tau[:, 0] = [0, 151, -300, 150, np.nan]  # two rows over (150 is at the limit, not over), up to 2x
    tau[3, 4] = -28.5  # one row, 1.0179x
    over = effort_excess(model, t, tau)
    assert [(o.joint, o.limit, o.rows, o.first) for o in over] == [
        (model.v_names[0], 150.0, 2, 0.1), (model.v_names[4], 28.0, 1, 0.3)]
    assert over[0].ratio == 2.0 and abs(over[1].ratio - 28.5 / 28) < 1e-15
    assert "effort limit 150 N·m at 2 row(s)" in over[0].message()
    assert effort_excess(model, t, np.zeros((5, 6))) == []
    legged = dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True)  # no limit on the root's six rows
    over = effort_excess(legged, t[:1], np.full((1, legged.nv), 1e3))
    assert [o.joint for o in over] == list(legged.v_names[6:])


def test_keep_columns_writes_the_estimated_velocities_and_accelerations():
    """Issue 30 item 4: from q alone, --keep-columns also writes the qd.* and qdd.* it used (so a
    friction law dyn does not have can be fitted on the same values), in SPEC order."""
    t = np.arange(40) * 1e-3
    Q, V, A = smooth_motion(ARM, t)
    names = ["time"] + [f"q.{n}" for n in ARM.q_names] + ["note"]
    traj = Trajectory(names, np.column_stack([t, Q, np.arange(40.0)]))
    out_names, data, how = inverse_dynamics_trajectory(ARM, traj, keep_columns=True, derivatives="central")
    assert how == "central"
    assert out_names == column_names(ARM.q_names, ARM.v_names) + ["note"]
    from dynlib.motion.derivatives import central

    v, a = central(ARM, t, Q)
    assert_close(data[:, [out_names.index(f"qd.{n}") for n in ARM.v_names]], v, 0, "qd used")
    assert_close(data[:, [out_names.index(f"qdd.{n}") for n in ARM.v_names]], a, 0, "qdd used")
