"""Oracle layer: dynlib against Pinocchio on example-robot-data robots and random trees.

Every check runs on each robot with a fixed base and with a free-flyer root, at a few
random states: rnea (with and without external wrenches), crba, aba (with and
without), nonlinear effects and gravity torques, kinetic and potential energy, frame
placements and Jacobians in the three references, J̇v against Pinocchio's
``getFrameJacobianTimeVariation(...) @ v`` (all three references, LOCAL_WORLD_ALIGNED
included, mean the same), the Coriolis matrix against ``computeCoriolisMatrix`` (the
same factorisation, so the same matrix entry by entry), and integrate/difference.
Errors are relative to max(1, |Pinocchio|); tolerance 1e-8.

Coordinates are mapped by joint name (`helpers.PinMap`): Pinocchio orders sibling
joints by name and gives a continuous joint (cos, sin). Known dynlib bugs are strict
xfails (see helpers.CORIOLIS_UNWRITTEN and helpers.JDOT_WORLD_ACCELERATION).
"""
import functools

import numpy as np
import pytest

import dynlib
from helpers import (PinMap, assert_close, coriolis_poisoned, erd_path, random_state,
                     random_tree, related_dofs)

pin = pytest.importorskip("pinocchio")
pytestmark = pytest.mark.oracle

TOL = 1e-8
N_STATES = 2
N_FRAMES = 6

ERD = {
    "talos_reduced": "talos_data/robots/talos_reduced.urdf",
    "talos_full_v2": "talos_data/robots/talos_full_v2.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "anymal_b": "anymal_b_simple_description/robots/anymal.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "go1": "go1_description/urdf/go1.urdf",
    "go2": "go2_description/urdf/go2.urdf",
    "a1": "a1_description/urdf/a1.urdf",
    "b1": "b1_description/urdf/b1.urdf",
    "laikago": "laikago_description/urdf/laikago.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
    "bolt": "bolt_description/robots/bolt.urdf",
    "g1_29dof": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "icub_reduced": "icub_description/robots/icub_reduced.urdf",
    "romeo_small": "romeo_description/urdf/romeo_small.urdf",
    "human": "human_description/robots/human.urdf",
    "centauro": "centauro_description/urdf/centauro.urdf",
    "tiago_pro": "tiago_pro_description/robots/tiago_pro.urdf",
    "baxter": "baxter_description/urdf/baxter.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "ur10": "ur_description/urdf/ur10_robot.urdf",
    "kinova": "kinova_description/robots/kinova.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf",
    "z1": "z1_description/urdf/z1.urdf",
    "so100": "so_arm_description/urdf/so100.urdf",
    "allegro_right_hand": "allegro_hand_description/urdf/allegro_right_hand.urdf",
    "finger_edu": "finger_edu_description/robots/finger_edu.urdf",
    "double_pendulum_continuous": "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
}
TREES = {"random_tree9": (9, 2), "random_tree20": (20, 3), "random_tree30": (30, 7)}
CASES = [pytest.param((kind, name, floating), id=f"{name}-{'floating' if floating else 'fixed'}")
         for kind, names in (("erd", ERD), ("tree", TREES)) for name in names for floating in (False, True)]


class Oracle:
    """One robot in both libraries, with a few random states and frames to compare at."""

    def __init__(self, model, path, seed):
        self.m = model
        self.pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if model.floating_base \
            else pin.buildModelFromUrdf(str(path))
        self.pd = self.pm.createData()
        self.P = PinMap(model, self.pm)
        rng = np.random.default_rng(seed)
        self.states = [random_state(model, rng) for _ in range(N_STATES)]
        self.f_ext = [rng.uniform(-5, 5, (model.nb, 6)) for _ in range(N_STATES)]
        # frames spread over the tree, the link at the end of every subtree attached to the
        # world (each leg of a fixed-base quadruped) and one link fixed to the world
        ar = model.arrays
        moving = [f for f in range(model.nframes) if ar.frame_body[f] >= 0]
        pick = np.unique(np.linspace(0, len(moving) - 1, min(N_FRAMES, len(moving))).round().astype(int))
        ends = [model.body_links[ar.subtree_end[b] - 1] for b in range(model.nb) if ar.parent[b] < 0]
        fixed = [model.frame_names[f] for f in range(model.nframes) if ar.frame_body[f] < 0][:1]
        self.frames = list(dict.fromkeys(fixed + [model.frame_names[moving[k]] for k in pick] + ends))

    def pin_states(self):
        for (q, v, a), f in zip(self.states, self.f_ext):
            yield (q, v, a, f), (self.P.q(q), self.P.v(v), self.P.v(a))


@functools.lru_cache(maxsize=None)
def _oracle(kind, name, floating):
    if kind == "erd":
        path = erd_path(ERD[name])
        model = dynlib.load(path, floating_base=floating)
    else:
        model = random_tree(*TREES[name], floating_base=floating)
        path = model.source
    return Oracle(model, path, seed=sum(map(ord, name)))


@pytest.fixture(scope="module", params=CASES)
def robot(request):
    return _oracle(*request.param)


def test_same_dimensions(robot):
    assert (robot.m.nv, robot.m.nb) == (robot.pm.nv, robot.pm.njoints - 1)
    n_continuous = sum(1 for j in robot.pm.joints[1:] if j.nq == 2 and j.nv == 1)
    assert robot.m.nq == robot.pm.nq - n_continuous


def test_rnea(robot):
    P = robot.P
    for (q, v, a, f), (qp, vp, ap) in robot.pin_states():
        assert_close(dynlib.rnea(robot.m, q, v, a), P.v_back(pin.rnea(robot.pm, robot.pd, qp, vp, ap)), TOL, "rnea")
        assert_close(dynlib.rnea(robot.m, q, v, a, f),
                     P.v_back(pin.rnea(robot.pm, robot.pd, qp, vp, ap, P.fext(f))), TOL, "rnea f_ext")


def test_nonlinear_effects_and_gravity_torques(robot):
    P = robot.P
    for (q, v, _, _), (qp, vp, _) in robot.pin_states():
        assert_close(dynlib.nonlinear_effects(robot.m, q, v), P.v_back(pin.nonLinearEffects(robot.pm, robot.pd, qp, vp)),
                     TOL, "nonlinear_effects")
        assert_close(dynlib.gravity_torques(robot.m, q), P.v_back(pin.computeGeneralizedGravity(robot.pm, robot.pd, qp)),
                     TOL, "gravity_torques")


def test_crba(robot):
    for (q, _, _, _), (qp, _, _) in robot.pin_states():
        Mp = pin.crba(robot.pm, robot.pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T   # Pinocchio fills the upper triangle only
        assert_close(dynlib.crba(robot.m, q), robot.P.mat(Mp), TOL, "crba")


def test_aba(robot):
    P = robot.P
    for (q, v, _, f), (qp, vp, _) in robot.pin_states():
        tau = dynlib.rnea(robot.m, q, v, np.zeros(robot.m.nv)) + np.linspace(-3, 3, robot.m.nv)
        taup = P.v(tau)
        assert_close(dynlib.aba(robot.m, q, v, tau), P.v_back(pin.aba(robot.pm, robot.pd, qp, vp, taup)), TOL, "aba")
        assert_close(dynlib.aba(robot.m, q, v, tau, f), P.v_back(pin.aba(robot.pm, robot.pd, qp, vp, taup, P.fext(f))),
                     TOL, "aba f_ext")


def test_energies(robot):
    for (q, v, _, _), (qp, vp, _) in robot.pin_states():
        assert_close(dynlib.kinetic_energy(robot.m, q, v), pin.computeKineticEnergy(robot.pm, robot.pd, qp, vp), TOL,
                     "kinetic_energy")
        assert_close(dynlib.potential_energy(robot.m, q), pin.computePotentialEnergy(robot.pm, robot.pd, qp), TOL,
                     "potential_energy")


def test_armature(robot):
    """Rotor inertias (Pinocchio's model.armature): crba adds them to the diagonal, rnea adds armature a,
    aba inverts it (Pinocchio 3+ conventions, dynlib's too). The kinetic energy is ½ vᵀ M v with Pinocchio's
    M: its own computeKineticEnergy (4.1) adds ½ armature v² for the axis-aligned joints (JointModelRX, ...)
    only, not for JointModelRevoluteUnaligned (anymal_c, random trees), which ½ vᵀ M v does not follow."""
    P = robot.P
    arm = np.linspace(0.01, 0.2, robot.m.nv)
    m = robot.m.with_armature(arm)
    pm = robot.pm.copy()
    pm.armature = P.v(arm)
    pd = pm.createData()
    for (q, v, a, f), (qp, vp, ap) in robot.pin_states():
        Mp = pin.crba(pm, pd, qp)
        assert_close(dynlib.crba(m, q), P.mat(np.triu(Mp) + np.triu(Mp, 1).T), TOL, "crba armature")
        assert_close(dynlib.rnea(m, q, v, a), P.v_back(pin.rnea(pm, pd, qp, vp, ap)), TOL, "rnea armature")
        tau = dynlib.rnea(m, q, v, np.zeros(m.nv)) + np.linspace(-3, 3, m.nv)
        assert_close(dynlib.aba(m, q, v, tau, f), P.v_back(pin.aba(pm, pd, qp, vp, P.v(tau), P.fext(f))), TOL,
                     "aba armature f_ext")
        assert_close(dynlib.kinetic_energy(m, q, v), 0.5 * vp @ (np.triu(Mp) + np.triu(Mp, 1).T) @ vp, TOL,
                     "kinetic armature")


REFS = {"world": pin.WORLD, "local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


def test_frame_placements_and_jacobians(robot):
    pm, pd = robot.pm, robot.pd
    for (q, _, _, _), (qp, _, _) in robot.pin_states():
        pin.computeJointJacobians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        for frame in robot.frames:
            fid = pm.getFrameId(frame, pin.BODY)
            assert_close(dynlib.frame_placement(robot.m, q, frame), pd.oMf[fid].homogeneous, TOL, "frame_placement",
                         frame)
            for ref, pref in REFS.items():
                assert_close(dynlib.frame_jacobian(robot.m, q, frame, ref),
                             robot.P.jac(pin.getFrameJacobian(pm, pd, fid, pref)), TOL, f"frame_jacobian {ref}", frame)


def test_frame_jacobian_dot_times_v(robot):
    pm, pd = robot.pm, robot.pd
    for (q, v, _, _), (qp, vp, _) in robot.pin_states():
        pin.computeJointJacobiansTimeVariation(pm, pd, qp, vp)
        pin.updateFramePlacements(pm, pd)
        for frame in robot.frames:
            fid = pm.getFrameId(frame, pin.BODY)
            for ref, pref in REFS.items():
                assert_close(dynlib.frame_jacobian_dot_times_v(robot.m, q, v, frame, ref),
                             pin.getFrameJacobianTimeVariation(pm, pd, fid, pref) @ vp, TOL, f"Jdot v {ref}", frame)


def test_coriolis_matrix(robot):
    for (q, v, _, _), (qp, vp, _) in robot.pin_states():
        C = coriolis_poisoned(robot.m, q, v)
        assert_close(C, robot.P.mat(pin.computeCoriolisMatrix(robot.pm, robot.pd, qp, vp)), TOL, "coriolis_matrix")


def test_coriolis_matrix_entries_on_one_path(robot):
    """The entries the bug above leaves alone: DoFs on one path to the world."""
    mask = related_dofs(robot.m)
    for (q, v, _, _), (qp, vp, _) in robot.pin_states():
        C = coriolis_poisoned(robot.m, q, v)
        Cp = robot.P.mat(pin.computeCoriolisMatrix(robot.pm, robot.pd, qp, vp))
        assert_close(C[mask], Cp[mask], TOL, "coriolis_matrix (DoFs on one path)")
        assert not np.any(Cp[~mask])


def test_integrate_and_difference(robot):
    """q ⊕ dv and q1 ⊖ q0 for small motions (so that continuous joints, (cos, sin) in
    Pinocchio, do not wrap), and the free-flyer block of q1 ⊖ q0 for any two configurations."""
    m, pm, P = robot.m, robot.pm, robot.P
    rng = np.random.default_rng(0)
    for (q, v, _, _), (qp, vp, _) in robot.pin_states():
        q1 = dynlib.integrate(m, q, v)
        q1p = pin.integrate(pm, qp, vp)
        # the distance between the two results, measured by Pinocchio (blind to a quaternion's sign)
        assert_close(P.v_back(pin.difference(pm, q1p, P.q(q1))), np.zeros(m.nv), TOL, "integrate")
        assert_close(dynlib.difference(m, q, q1), P.v_back(pin.difference(pm, qp, q1p)), TOL, "difference")
        if m.floating_base:
            other = dynlib.random_configuration(m, rng)
            assert_close(dynlib.difference(m, q, other)[:6], P.v_back(pin.difference(pm, qp, P.q(other)))[:6], TOL,
                         "difference free-flyer")
