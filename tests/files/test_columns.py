"""dynlib.files.columns: the names of trajectory columns and of the joints' coordinates.

Checked against SPEC §5 written out here by hand, against the models the URDF reader
builds (every joint type), and against what the commands write: simulate,
inverse and contact-id take their names from the one module (the pipe round trip
itself is in tests/cli/test_inverse.py).
"""
import numpy as np
import pytest

import dynlib
from dynlib.files import columns as C
from dynlib.errors import InputError
from helpers import sample

ALL_TYPES = """<?xml version="1.0"?>
<robot name="all_types">
  <link name="base"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l3"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l4"/>
  <link name="l5"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l6"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="rev" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="cont" type="continuous"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/></joint>
  <joint name="pris" type="prismatic"><parent link="l2"/><child link="l3"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="fix" type="fixed"><parent link="l3"/><child link="l4"/></joint>
  <joint name="plan" type="planar"><parent link="l4"/><child link="l5"/><axis xyz="0 0 1"/></joint>
  <joint name="free" type="floating"><parent link="l5"/><child link="l6"/></joint>
</robot>
"""


@pytest.fixture(scope="module")
def all_types(tmp_path_factory):
    path = tmp_path_factory.mktemp("columns") / "all_types.urdf"
    path.write_text(ALL_TYPES)
    return dynlib.load(path)


def test_coordinate_names_of_every_joint_type(all_types):
    """SPEC §2 and §5, written out: one name per single-DoF joint, suffixes for the others;
    the torque of a free-flyer or planar joint names the wrench, not the twist."""
    m = all_types
    assert m.joint_types == ("revolute", "continuous", "prismatic", "planar", "floating")
    assert m.q_names == ("rev", "cont", "pris", "plan.x", "plan.y", "plan.theta",
                         "free.x", "free.y", "free.z", "free.qx", "free.qy", "free.qz", "free.qw")
    assert m.v_names == ("rev", "cont", "pris", "plan.vx", "plan.vy", "plan.wz",
                         "free.vx", "free.vy", "free.vz", "free.wx", "free.wy", "free.wz")
    assert m.tau_names == ("rev", "cont", "pris", "plan.fx", "plan.fy", "plan.tz",
                           "free.fx", "free.fy", "free.fz", "free.tx", "free.ty", "free.tz")
    assert (m.nq, m.nv) == (len(m.q_names), len(m.v_names)) == (13, 12)


def test_floating_base_root_is_named_like_a_floating_joint():
    m = sample("quadruped", floating_base=True)
    q, v, tau = C.joint_coordinates("root", "floating")
    assert m.q_names[:7] == q == ("root.x", "root.y", "root.z", "root.qx", "root.qy", "root.qz", "root.qw")
    assert m.v_names[:6] == v and m.tau_names[:6] == tau == tuple(f"root.{c}" for c in C.WRENCH)


def test_single_dof_joints_are_named_by_the_joint():
    for kind in ("revolute", "prismatic"):
        assert C.joint_coordinates("elbow", kind) == (("elbow",), ("elbow",), ("elbow",))


def test_column_names_follow_spec_order():
    names = C.column_names(["root.x", "a"], ["root.vx", "a"], ["energy", "tau", "q", "qdd", "qd"])
    assert names == ["time", "q.root.x", "q.a", "qd.root.vx", "qd.a", "qdd.root.vx", "qdd.a",
                     "tau.root.vx", "tau.a",
                     "energy.kinetic", "energy.potential", "energy.total"]
    assert C.column_names(["a"], ["a"], ["q"]) == ["time", "q.a"]


def test_column_names_rejects_unknown_part():
    with pytest.raises(InputError, match="bogus"):
        C.column_names(["a"], ["a"], ["q", "bogus"])


def test_model_columns_name_torques_by_tau_names(all_types):
    names = C.model_columns(all_types, ("q", "qd", "qdd", "tau", "energy"))
    nq, nv = all_types.nq, all_types.nv
    assert names[0] == "time"
    assert names[1:1 + nq] == [f"q.{n}" for n in all_types.q_names]
    assert names[1 + nq + 2 * nv:1 + nq + 3 * nv] == C.tau_columns(all_types)
    assert "tau.plan.fx" in names and "tau.plan.vx" not in names and "tau.free.tz" in names
    assert names[-3:] == ["energy.kinetic", "energy.potential", "energy.total"]


def test_contact_and_contact_id_names():
    assert C.contact_columns(["lf", "rf"]) == [f"contact.{f}.{c}" for f in ("lf", "rf")
                                               for c in ("fx", "fy", "fz", "tx", "ty", "tz")]
    assert C.penetration_columns(["lf"]) == ["penetration.lf"]
    assert (C.RESIDUAL_ROOT, C.FRICTION_FEASIBLE) == ("residual.root", "friction.feasible")
    assert C.active_frames(["time", "active.lf_foot", "q.a", "active.rf.toe", "inactive.x", "active"]) == {
        "lf_foot": "active.lf_foot", "rf.toe": "active.rf.toe"}
    names = ["time", *C.contact_columns(["lf", "rf.toe"]), "contact.x.fy", "q.contact.fx"]
    assert C.contact_names(names) == ["lf", "rf.toe"]  # by their fx column: the group's first


def test_parts_and_spec_order():
    assert (C.part("q.root.x"), C.coordinate("q.root.x")) == ("q", "root.x")
    assert (C.part("time"), C.coordinate("time")) == ("time", "")
    shuffled = ["contact.a.fx", "tau.j", "note", "qdd.j", "energy.total", "q.j", "time", "qd.j"]
    assert sorted(shuffled, key=C.rank) == ["time", "q.j", "qd.j", "qdd.j", "tau.j", "energy.total",
                                            "contact.a.fx", "note"]


def test_simulate_and_inverse_write_the_same_torque_names(all_types):
    """The defect of issue #14: inverse wrote tau.<joint>.vx for a planar joint."""
    from dynlib.motion.inverse import inverse_dynamics_trajectory
    from dynlib.files.trajectory import Trajectory

    m = all_types
    result = dynlib.simulate(m, dt=1e-3, steps=3)
    names, data = result.table(("q", "qd", "qdd", "tau"))
    inv = inverse_dynamics_trajectory(m, Trajectory(names, data))
    assert [n for n in names if C.part(n) == "tau"] == [n for n in inv.names if C.part(n) == "tau"] \
        == C.tau_columns(m)
    assert np.all(np.isfinite(inv.data))


def test_units_of_every_coordinate_pair_into_power(all_types):
    """With the joint types, every coordinate column has a unit, and they agree with each
    other: q's unit per second is qd's, per second² qdd's, and tau·qd is a power (N·m/s or
    N·m·rad/s); the quaternion components have none. Without them only the multi-coordinate
    joints' columns (by their suffix) are known."""
    m = all_types
    types = dict(zip(m.joint_names, m.joint_types))
    power = {("N", "m/s"), ("N·m", "rad/s")}
    for qn, vn in zip(m.q_names, ("rev", "cont", "pris", "plan.vx", "plan.vy", "plan.wz",
                                  "free.vx", "free.vy", "free.vz")):
        assert C.unit(f"q.{qn}", types) + "/s" == C.unit(f"qd.{vn}", types)
    assert [C.unit(f"q.free.{s}", types) for s in ("qx", "qy", "qz", "qw")] == [""] * 4
    for vn, tn in zip(m.v_names, m.tau_names):
        uq = C.unit(f"qd.{vn}", types)
        assert (C.unit(f"tau.{tn}", types), uq) in power, (vn, tn)
        assert C.unit(f"qdd.{vn}", types) == uq.replace("/s", "/s²")
    single = {"rev": "rad", "cont": "rad", "pris": "m"}
    for j, u in single.items():
        assert C.unit(f"q.{j}", types) == u and C.unit(f"q.{j}") is None
    assert C.unit("q.plan.theta") == "rad" and C.unit("q.free.z") == "m" and C.unit("tau.free.tx") == "N·m"
    assert [C.unit(n) for n in ("time", "energy.total", "penetration.foot", "contact.foot.fz",
                                "contact.foot.ty")] == ["s", "J", "m", "N", "N·m"]
