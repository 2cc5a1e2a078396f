"""dynlib.files.locks: locked joints (``dynlib.load(path, lock={joint: value})``, ``--lock``, ``lock:``).

A locked joint is read as a fixed joint at its value: the model without it, as Pinocchio's
``buildReducedModel``. Checked against Pinocchio's reduced model on example-robot-data's panda, ur5 and
talos (fixed and floating) to 1e-10 in rnea, crba and aba, with Pinocchio's order of the reduced model;
against the unlocked model (frame placements, and rnea at zero velocity and acceleration of the locked
joints); and bad locks are one-line errors naming the joint.
"""
import numpy as np
import pytest

import dynlib
from dynlib.errors import InputError
from helpers import ROBOTS_DIR, assert_close, erd_path, random_state

TOL = 1e-10
ROBOTS = {"panda": ("panda_description/urdf/panda.urdf", {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}),
          "ur5": ("ur_description/urdf/ur5_robot.urdf", {"elbow_joint": 0.7, "wrist_2_joint": -1.1}),
          "talos": ("talos_data/robots/talos_reduced.urdf",
                    {"arm_left_2_joint": 0.3, "torso_1_joint": -0.2, "leg_right_4_joint": 0.9, "head_2_joint": 0.1})}


@pytest.mark.oracle
@pytest.mark.parametrize("name, floating", [(n, f) for n in ROBOTS for f in (False, True)])
def test_a_locked_model_is_pinocchios_reduced_model(name, floating):
    pin = pytest.importorskip("pinocchio")
    rel, lock = ROBOTS[name]
    path = str(erd_path(rel))
    full = dynlib.load(path, floating_base=floating)
    model = dynlib.load(path, floating_base=floating, lock=lock)
    assert model.nb == full.nb - len(lock) and not set(lock) & set(model.joint_names)
    assert dict(model.locked) == lock
    if name == "panda":  # its mimic joint, panda_finger_joint2, is locked: no mimic warning is left
        assert model.mimic == () and not any("mimic" in w for w in model.warnings)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    q_ref = full.to_pinocchio_q(np.array([lock.get(n, 0.0) for n in full.q_names])
                                + (full.q_neutral if floating else 0))
    reduced = pin.buildReducedModel(pm, [pm.getJointId(j) for j in lock], q_ref)
    assert list(model.pinocchio_order().joints) == ["root" if n == "root_joint" else n for n in reduced.names[1:]]
    pd = reduced.createData()
    rng = np.random.default_rng(2)
    iv = model.pinocchio_order().v_index
    for _ in range(3):
        q, v, a = random_state(model, rng)
        qp, vp, ap = model.to_pinocchio_q(q), model.to_pinocchio_v(v), model.to_pinocchio_v(a)
        tau = dynlib.rnea(model, q, v, a)
        assert_close(model.to_pinocchio_v(tau), pin.rnea(reduced, pd, qp, vp, ap), TOL, "rnea")
        M = pin.crba(reduced, pd, qp)
        assert_close(dynlib.crba(model, q)[np.ix_(iv, iv)], np.triu(M) + np.triu(M, 1).T, TOL, "crba")
        assert_close(model.to_pinocchio_v(dynlib.aba(model, q, v, tau)),
                     pin.aba(reduced, pd, qp, vp, model.to_pinocchio_v(tau)), TOL, "aba")


def _full_q(full, model, q, lock):
    """The unlocked model's q: the locked model's q by name, the locked joints at their values."""
    return np.array([lock[n] if n in lock else q[model.q_names.index(n)] for n in full.q_names])


@pytest.mark.parametrize("floating", [False, True])
def test_the_locked_model_moves_as_the_full_one_holding_the_joints(floating):
    lock = {"shoulder_lift": 0.4, "wrist_2": -0.8}
    full = dynlib.load(ROBOTS_DIR / "arm6.urdf")
    model = dynlib.load(ROBOTS_DIR / "arm6.urdf", lock=lock)
    assert model.frame_names == full.frame_names and model.q_names == ("shoulder_pan", "elbow", "wrist_1", "wrist_3")
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        qf = _full_q(full, model, q, lock)
        vf, af = (np.array([x[model.v_names.index(n)] if n in model.v_names else 0.0 for n in full.v_names])
                  for x in (v, a))
        for frame in full.frame_names:
            assert_close(dynlib.frame_placement(model, q, frame), dynlib.frame_placement(full, qf, frame), TOL, frame)
        kept = [full.v_names.index(n) for n in model.v_names]
        assert_close(dynlib.rnea(model, q, v, a), dynlib.rnea(full, qf, vf, af)[kept], TOL, "rnea")
        assert_close(dynlib.crba(model, q), dynlib.crba(full, qf)[np.ix_(kept, kept)], TOL, "crba")
    assert model.total_mass == full.total_mass


def test_locking_the_joint_under_a_massless_floating_root_merges_it(tmp_path):
    path = tmp_path / "dummy.urdf"
    path.write_text("""<robot name="dummy_root"><link name="world"/>
      <link name="body"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="hinge" type="revolute"><parent link="world"/><child link="body"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="10" velocity="1"/></joint></robot>""")
    assert dynlib.load(path, floating_base=True).massless_free_flyers == (("world", "hinge"),)
    model = dynlib.load(path, floating_base=True, lock={"hinge": 0.0})
    assert model.massless_free_flyers == () and model.nv == 6


@pytest.mark.parametrize("lock, message", [
    ({"elbw": 0.1}, "cannot lock joint 'elbw': robot 'arm6' has no joint 'elbw'; did you mean 'elbow'?"),
    ({"elbow": 3.5}, "cannot lock joint 'elbow' at 3.5: outside its limits [-3.14159, 3.14159] (" + str(ROBOTS_DIR / "arm6.urdf") + ":89)"),
    ({"elbow": float("nan")}, "cannot lock joint 'elbow' at nan: expected a finite number"),
    ({"elbow": "x"}, "cannot lock joint 'elbow' at 'x': expected a finite number"),
    ({"tool0_joint": 0.0}, "cannot lock joint 'tool0_joint': it is fixed already"),
])
def test_a_bad_lock_is_one_error_naming_the_joint(lock, message):
    with pytest.raises(InputError) as info:
        dynlib.load(ROBOTS_DIR / "arm6.urdf", lock=lock)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_free_flyer_root_cannot_be_locked():
    with pytest.raises(InputError, match="cannot lock joint 'root': it is the free-flyer that floating_base"):
        dynlib.load(ROBOTS_DIR / "arm6.urdf", floating_base=True, lock={"root": 0.0})
