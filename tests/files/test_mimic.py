"""Recordings of robots with mimic joints (`dynlib.files.mimic.couple_recording`, through
`read_recording`): the follower read from its leader, whatever the recording holds of it."""
import numpy as np

import dynlib
from dynlib.files.recordings import read_recording
from dynlib.files.trajectory import write_trajectory

BOX = '<inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>'
GRIPPER = f"""<?xml version="1.0"?><robot name="g">
<link name="hand">{BOX}</link><link name="fl">{BOX}</link><link name="fr">{BOX}</link>
<joint name="left" type="prismatic"><parent link="hand"/><child link="fl"/><axis xyz="0 1 0"/>
<limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
<joint name="right" type="prismatic"><parent link="hand"/><child link="fr"/><axis xyz="0 1 0"/>
<limit lower="-0.03" upper="0.01" effort="20" velocity="0.2"/><mimic joint="left" multiplier="-1" offset="0.01"/></joint>
</robot>"""
T = np.arange(6) * 0.01
LEFT = 0.01 + 0.2 * T


def read(tmp_path, names, data):
    (tmp_path / "g.urdf").write_text(GRIPPER)
    model = dynlib.load(tmp_path / "g.urdf")
    write_trajectory(tmp_path / "m.csv", names, np.column_stack(data))
    rec = read_recording(model, tmp_path / "m.csv")
    return rec.trajectory, [n for n in rec.notes if "warning" in n]


def test_a_recording_without_the_follower_gets_it_from_the_leader(tmp_path):
    traj, warned = read(tmp_path, ["time", "q.left", "qd.left"], [T, LEFT, np.full(6, 0.2)])
    np.testing.assert_array_equal(traj.column("q.right"), -LEFT + 0.01)
    np.testing.assert_array_equal(traj.column("qd.right"), np.full(6, -0.2))
    assert not traj.has("qdd.right") and warned == []


def test_a_follower_within_one_percent_of_its_range_is_replaced_silently(tmp_path):
    traj, warned = read(tmp_path, ["time", "q.right", "q.left"], [T, -LEFT + 0.01 + 0.0003, LEFT])
    np.testing.assert_array_equal(traj.column("q.right"), -LEFT + 0.01)
    assert warned == [] and traj.names == ["time", "q.right", "q.left"]


def test_a_follower_off_its_coupling_is_one_warning_and_read_from_the_leader(tmp_path):
    right = -LEFT + 0.01 + np.where(T > 0.025, 0.002, 0.0)
    traj, warned = read(tmp_path, ["time", "q.left", "q.right", "qd.right"], [T, LEFT, right, np.zeros(6)])
    np.testing.assert_array_equal(traj.column("q.right"), -LEFT + 0.01)
    assert len(warned) == 1 and "q.right is off its coupling to left by up to 0.002 (at time 0.03)" in warned[0]
    assert not traj.has("qd.right")  # the leader has no qd: both are derived from q alike
