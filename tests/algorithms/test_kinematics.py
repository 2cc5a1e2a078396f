"""dynlib.algorithms.kinematics against Pinocchio's forward kinematics, pass by pass.

On example-robot-data robots (fixed and floating base, continuous joints included)
and a random tree, at random states:

- `joint_placements` and `placements`: every body's liMi and oMi against Pinocchio's
  ``data.liMi`` and ``data.oMi`` after ``forwardKinematics``;
- `motion`: body velocities and spatial accelerations (body frame) against
  ``data.v`` and ``data.a``; a uniform world acceleration a0 (gravity) adds
  oMiᵀ·a0 to every body's acceleration;
- `frame_transform` / `frame_pose` / `frame_placement`: every URDF link as a frame,
  against ``framesForwardKinematics``'s ``data.oMf`` (the links fixed to the world
  and the ones merged behind fixed joints included), batched and per row.

Errors relative to max(1, |Pinocchio|); tolerance 1e-11.
"""
import numpy as np
import pytest

import dynlib
from dynlib.algorithms import kinematics as K
from helpers import PinMap, pinocchio_model, assert_close, random_state

pin = pytest.importorskip("pinocchio")
pytestmark = pytest.mark.oracle

TOL = 1e-11
N_STATES = 3

ROBOTS = {
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "double_pendulum_continuous": "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "talos_reduced": "talos_data/robots/talos_reduced.urdf",
}
CASES = [pytest.param(("erd", name, floating), id=f"{name}-{'floating' if floating else 'fixed'}")
         for name in ROBOTS for floating in (False, True)]
CASES += [pytest.param(("tree", "tree12", floating), id=f"tree12-{'floating' if floating else 'fixed'}")
          for floating in (False, True)]


@pytest.fixture(scope="module", params=CASES)
def robot(request, erd_path, random_tree):
    kind, name, floating = request.param
    if kind == "erd":
        path = erd_path(ROBOTS[name])
        model = dynlib.load(path, floating_base=floating)
    else:
        model = random_tree(12, 5, floating_base=floating)
        path = model.source
    pm = pinocchio_model(path, floating)
    return model, pm, PinMap(model, pm)


def states(model, seed=0):
    rng = np.random.default_rng(seed)
    return [random_state(model, rng) for _ in range(N_STATES)]


def test_placements_against_pinocchio(robot):
    model, pm, P = robot
    pd = pm.createData()
    d = model.create_data()
    for q, _, _ in states(model):
        pin.forwardKinematics(pm, pd, P.q(q))
        K.joint_placements(model.arrays, d, q)
        for i, jid in enumerate(P.jid):
            assert_close(d.lR[i], pd.liMi[jid].rotation, TOL, "liMi rotation", model.joint_names[i])
            assert_close(d.lp[i], pd.liMi[jid].translation, TOL, "liMi translation", model.joint_names[i])
        d.oR[:] = np.nan  # placements must write every body
        K.placements(model.arrays, d, q)
        for i, jid in enumerate(P.jid):
            assert_close(d.oR[i], pd.oMi[jid].rotation, TOL, "oMi rotation", model.joint_names[i])
            assert_close(d.op[i], pd.oMi[jid].translation, TOL, "oMi translation", model.joint_names[i])


def test_velocities_and_accelerations_against_pinocchio(robot):
    model, pm, P = robot
    pd = pm.createData()
    d = model.create_data()
    for q, v, a in states(model, 1):
        pin.forwardKinematics(pm, pd, P.q(q), P.v(v), P.v(a))
        K.placements(model.arrays, d, q)
        K.motion(model.arrays, d, v, a, np.zeros(6))
        for i, jid in enumerate(P.jid):
            assert_close(d.v[i], pd.v[jid].vector, TOL, "body velocity", model.joint_names[i])
            assert_close(d.a[i], pd.a[jid].vector, TOL, "body acceleration", model.joint_names[i])
        # the world accelerating uniformly (as gravity is applied): each body's acceleration gains
        # a0 seen in its frame, oMi^-1 a0 (a pure linear acceleration has no moment arm)
        a0 = np.array([0.3, -1.0, 9.81, 0.0, 0.0, 0.0])
        without = d.a.copy()
        K.motion(model.arrays, d, v, a, a0)
        for i in range(model.nb):
            assert_close(d.a[i] - without[i], np.r_[d.oR[i].T @ a0[:3], np.zeros(3)], TOL,
                         "uniform world acceleration", model.joint_names[i])


def test_every_frame_against_frames_forward_kinematics(robot):
    model, pm, P = robot
    pd = pm.createData()
    d = model.create_data()
    R, p = np.empty((3, 3)), np.empty(3)
    Q = []
    for q, _, _ in states(model, 2):
        Q.append(q)
        pin.framesForwardKinematics(pm, pd, P.q(q))
        K.placements(model.arrays, d, q)
        for fid, name in enumerate(model.frame_names):
            ref = pd.oMf[pm.getFrameId(name, pin.BODY)]
            Rt, pt = K.frame_transform(model.arrays, d, fid)
            assert_close(np.reshape(Rt, (3, 3)), ref.rotation, TOL, "frame rotation", name)
            assert_close(pt, ref.translation, TOL, "frame translation", name)
            K.frame_pose(model.arrays, d, fid, R, p)
            assert np.array_equal(R, np.reshape(Rt, (3, 3))) and np.array_equal(p, pt)
    # the public wrapper, batched and per row, for the last state's frames
    for fid, name in enumerate(model.frame_names):
        ref = pd.oMf[pm.getFrameId(name, pin.BODY)].homogeneous
        assert_close(dynlib.frame_placement(model, Q[-1], name), ref, TOL, "frame_placement", name)
        batch = dynlib.frame_placement(model, np.array(Q), fid)
        assert batch.shape == (len(Q), 4, 4)
        assert np.array_equal(batch[-1], dynlib.frame_placement(model, Q[-1], fid))


def test_frames_fixed_to_the_world_do_not_move():
    """A link fixed to the world (frame_body -1) has the same placement at every q."""
    from helpers import sample

    model = sample("arm6")
    world = [f for k, f in enumerate(model.frame_names) if model.arrays.frame_body[k] < 0]
    assert world, "arm6 has its base link fixed to the world"
    rng = np.random.default_rng(3)
    Q = np.array([dynlib.random_configuration(model, rng) for _ in range(4)])
    for name in world:
        T = dynlib.frame_placement(model, Q, name)
        assert np.all(T == T[0])
