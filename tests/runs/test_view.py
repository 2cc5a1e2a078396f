"""dyn view's page, read back without a browser: the commands in the page (decoded with
u-msgpack, an implementation independent of the page's packer), keyframes at the display
rate, body placements against forward kinematics, the fallbacks when meshes are missing,
contact arrows and the page size (tests/runs/test_view_browser.py opens pages in Chromium)."""
import base64
import gzip
import re
import struct

import numpy as np
import pytest

import dynlib
from dynlib.files.trajectory import Trajectory, column_names, write_trajectory
from dynlib.runs.view import build_view, read_playback, write_view
from dynlib.algorithms.configuration import interpolate
from dynlib.runs.view.motion import keyframe_times, quaternions, rotation_to
from dynlib.runs.view.page import Blob, float32, packb, stream
from helpers import ROBOTS_DIR, assert_close, sample

umsgpack = pytest.importorskip("umsgpack", reason="u-msgpack-python comes with meshcat (dyn's dependency)")


# ------------------------------------------------------------------- reading pages back

def payload_of(html: bytes) -> bytes:
    """The page's record stream (base64, then gzip, undone)."""
    payload = re.search(rb'<script id="dyn-scene" type="application/octet-stream">\s*([A-Za-z0-9+/=]+)\s*</script>',
                        html).group(1)
    return gzip.decompress(base64.b64decode(payload))


def commands_of(html: bytes) -> list:
    """The meshcat commands inside a page, decoded (typed arrays as numpy arrays)."""
    data = payload_of(html)
    blobs, commands, k = [], [], 0
    while k < len(data):
        tag, n = data[k:k + 1], struct.unpack_from("<I", data, k + 1)[0]
        k += 5
        if tag == b"B":
            blobs.append(data[k:k + n])
            k += n
            continue
        assert tag == b"C"
        parts = []
        for _ in range(n):
            kind, m = data[k], struct.unpack_from("<I", data, k + 1)[0]
            k += 5
            if kind == 0:
                parts.append(data[k:k + m])
                k += m
            else:
                parts.append(blobs[m])
        commands.append(umsgpack.unpackb(b"".join(parts), ext_handlers={
            0x17: lambda e: np.frombuffer(e.data, "<f4"), 0x16: lambda e: np.frombuffer(e.data, "<u4"),
            0x14: lambda e: np.frombuffer(e.data, "<u2"), 0x11: lambda e: np.frombuffer(e.data, np.int8),
            0x12: lambda e: bytes(e.data)}))
    return commands


def animation_of(commands) -> dict:
    """{path: {track name: (times, values)}} of the page's set_animation."""
    anim = [c for c in commands if c["type"] == "set_animation"]
    assert len(anim) == 1
    out = {}
    for a in anim[0]["animations"]:
        assert a["clip"]["fps"] == 1  # times in seconds
        out[a["path"]] = {t["name"]: (np.asarray(t["times"]), t["values"]) for t in a["clip"]["tracks"]}
    return out


def objects_of(commands) -> dict:
    return {c["path"]: c["object"] for c in commands if c["type"] == "set_object"}


def motion_file(path, model, t, Q, extra=None):
    names = column_names(model.q_names, model.v_names, ("q",))
    data = np.column_stack([t, Q])
    if extra:
        names += list(extra)
        data = np.column_stack([data] + [np.asarray(v, float) for v in extra.values()])
    write_trajectory(path, names, data)
    return path


def swing(model, t, amplitude=0.8, seed=0):
    """A smooth motion: each coordinate a sinusoid (a free-flyer root turning about z and moving)."""
    rng = np.random.default_rng(seed)
    Q = np.tile(model.q_neutral, (len(t), 1))
    w = rng.uniform(0.5, 2.0, model.nq)
    Q += amplitude * np.sin(np.outer(t, w))
    if model.has_floating_base:
        Q[:, 0:3] = np.column_stack([0.2 * t, 0 * t, 0.4 + 0 * t])
        yaw = 0.9 * t
        Q[:, 3:7] = np.column_stack([0 * t, 0 * t, np.sin(yaw / 2), np.cos(yaw / 2)])
    return Q


# ------------------------------------------------------------------- packing

def test_messagepack_round_trip_through_an_independent_decoder():
    value = {"a": [None, True, False, 0, 127, 128, -1, -32, -33, 2 ** 40, -2 ** 40, 1.5, -0.0, "é" * 40],
             "nested": {"s": "x" * 300, "long": list(range(20)), "map": {str(i): i for i in range(20)}},
             "f32": float32(np.arange(6.0)), "big": "y" * 70000}
    segments = packb(value)
    assert len(segments) == 1
    out = umsgpack.unpackb(segments[0], ext_handlers={0x17: lambda e: np.frombuffer(e.data, "<f4")})
    f32 = out.pop("f32")
    assert np.array_equal(f32, np.arange(6.0, dtype=np.float32))
    expected = dict(value)
    expected.pop("f32")
    assert out == expected


def test_a_blob_is_stored_once_however_often_it_is_used():
    mesh = Blob(bytes(range(256)) * 400, key="mesh.stl")
    text = Blob("v 0 0 0\n" * 1000, key="mesh.obj")
    commands = [{"data": mesh, "n": 1}, {"data": mesh, "obj": text}, {"data": text}]
    data = stream(commands)
    assert data.count(mesh.data) == 1 and data.count(text.data) == 1
    html_commands = commands_of(
        b'<script id="dyn-scene" type="application/octet-stream">' + base64.b64encode(gzip.compress(data))
        + b"</script>")
    assert html_commands[0] == {"data": mesh.data, "n": 1}
    assert html_commands[1] == {"data": mesh.data, "obj": text.data.decode()}
    assert html_commands[2] == {"data": text.data.decode()}


# ------------------------------------------------------------------- motion

def test_keyframes_at_the_display_rate_and_sparse_samples_kept():
    t = np.arange(2001) * 1e-3
    k = keyframe_times(t, 30)
    assert len(k) == 61 and np.allclose(np.diff(k), 1 / 30) and k[0] == 0 and np.isclose(k[-1], 2.0)
    t = np.arange(1001) * 1e-3 * 1.0005  # ends between two display instants: the last sample is kept
    k = keyframe_times(t, 30)
    assert k[-1] == t[-1] and np.all(np.diff(k) > 0)
    sparse = np.array([0.0, 0.5, 0.7, 2.0])
    assert np.array_equal(keyframe_times(sparse, 30), sparse)
    assert np.array_equal(keyframe_times(np.array([3.0]), 30), [3.0])


def test_interpolation_follows_the_shortest_rotation_of_a_free_flyer():
    quad = sample("quadruped", True)
    q0, q1 = quad.q_neutral.copy(), quad.q_neutral.copy()
    a, b = 0.3, 2.9  # yaw angles: the mid-point is yaw 1.6, by the shorter way
    q0[3:7] = [0, 0, np.sin(a / 2), np.cos(a / 2)]
    q1[3:7] = [0, 0, np.sin(b / 2), np.cos(b / 2)]
    q1[0] = 1.0
    q1[7] = 0.4
    mid = interpolate(quad, np.array([0.0, 1.0]), np.array([q0, q1]), np.array([0.0, 0.5, 1.0]))
    assert np.allclose(mid[0], q0) and np.allclose(mid[2], q1)
    yaw = 2 * np.arctan2(mid[1, 5], mid[1, 6])
    assert np.isclose(yaw, (a + b) / 2) and np.isclose(mid[1, 7], 0.2)


def test_quaternions_against_scipy_and_sign_continuous():
    from scipy.spatial.transform import Rotation

    R = Rotation.random(200, random_state=3)
    q = quaternions(R.as_matrix())
    assert np.allclose(np.abs(np.sum(q * R.as_quat(), axis=1)), 1.0, atol=1e-12)
    yaw = np.linspace(0, 4 * np.pi, 100)  # a quaternion path through its sign change stays continuous
    q = quaternions(Rotation.from_euler("z", yaw[:, None]).as_matrix())
    assert np.all(np.sum(q[1:] * q[:-1], axis=1) > 0.99)


def test_rotation_to_takes_y_onto_the_direction():
    d = np.random.default_rng(1).normal(size=(50, 3))
    d[:3] = [[0, -2, 0], [0, 3, 0], [1e-3, -5, 0]]
    R = rotation_to(d)
    assert np.allclose(R @ np.array([0, 1.0, 0]), d / np.linalg.norm(d, axis=1)[:, None])
    assert np.allclose(R @ R.transpose(0, 2, 1), np.eye(3)) and np.allclose(np.linalg.det(R), 1)
    assert np.allclose(rotation_to(np.zeros((1, 3)))[0], np.eye(3))


# ------------------------------------------------------------------- pages

def test_body_tracks_are_the_forward_kinematics_at_the_keyframes(tmp_path):
    quad = sample("quadruped", True)
    t = np.arange(0, 2.0 + 1e-9, 0.01)  # 100 Hz shown at 20 fps: every 5th sample is a keyframe
    Q = swing(quad, t)
    page = build_view(quad, read_playback(quad, motion_file(tmp_path / "m.csv", quad, t, Q)), fps=20)
    anim = animation_of(commands_of(page.html))
    assert page.frames == 41
    for body, link in enumerate(quad.body_links):
        times, pos = anim[f"/dyn/robot/{link}"][".position"]
        _, quat = anim[f"/dyn/robot/{link}"][".quaternion"]
        assert np.allclose(times, np.arange(41) / 20, atol=1e-6)
        T = dynlib.frame_placement(quad, Q[::5], link)
        assert_close(pos.reshape(-1, 3), T[:, :3, 3], 1e-6, "view body position (float32)")
        ref = quaternions(T[:, :3, :3])
        assert np.allclose(np.abs(np.sum(quat.reshape(-1, 4) * ref, axis=1)), 1, atol=1e-6)


def test_page_size_grows_with_duration_not_samples(tmp_path):
    arm = sample("arm6")
    sizes = {}
    for rate in (100, 2000):
        t = np.arange(0, 4.0 + 1e-9, 1 / rate)
        page = build_view(arm, read_playback(arm, motion_file(tmp_path / f"{rate}.csv", arm, t, swing(arm, t))))
        sizes[rate] = len(page.html)
        assert page.frames == 121
    assert abs(sizes[2000] - sizes[100]) < 0.02 * sizes[100]
    t = np.arange(0, 40.0 + 1e-9, 1 / 100)  # ten times longer: about ten times more motion
    long = build_view(arm, read_playback(arm, motion_file(tmp_path / "long.csv", arm, t, swing(arm, t))))
    short = build_view(arm, read_playback(arm, motion_file(tmp_path / "short.csv", arm, t[:401], swing(arm, t[:401]))))
    empty = build_view(arm, read_playback(arm, motion_file(tmp_path / "one.csv", arm, t[:1], swing(arm, t[:1]))))
    def motion_bytes(page):
        anim = animation_of(commands_of(page.html))
        return sum(np.asarray(v).nbytes for tracks in anim.values() for t, v in tracks.values())

    assert np.isclose(motion_bytes(long) / motion_bytes(short), 1201 / 121, rtol=1e-3)
    assert not [c for c in commands_of(empty.html) if c["type"] == "set_animation"]
    assert len(long.html) > len(short.html) > len(empty.html)


def test_a_single_sample_is_a_still_page(tmp_path):
    arm = sample("arm6")
    page = build_view(arm, read_playback(arm, motion_file(tmp_path / "one.csv", arm, [0.0], swing(arm, [0.0]))))
    cmds = commands_of(page.html)
    assert page.frames == 1 and not [c for c in cmds if c["type"] == "set_animation"]
    assert "/dyn/robot/base" in objects_of(cmds) or len(objects_of(cmds)) > 1


ARM_URDF = """<?xml version="1.0"?>
<robot name="meshy">
  <material name="steel"><color rgba="0.5 0.5 0.55 1"/></material>
  <link name="base">
    <visual><geometry><mesh filename="{base}"/></geometry><material name="steel"/></visual>
    <collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision>
  </link>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 0.25"/><geometry><mesh filename="{arm}" scale="0.5 0.5 2"/></geometry></visual>
    <collision><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.05" length="0.5"/></geometry></collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <origin xyz="0 0 0.1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
"""

TRIANGLE_OBJ = "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nf 1 2 3\n"
DAE_MM = """<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="millimeter" meter="0.001"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries><geometry id="g"><mesh>
    <source id="p"><float_array id="pa" count="9">0 0 0 100 0 0 0 100 0</float_array>
      <technique_common><accessor source="#pa" count="3" stride="3">
        <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
      </accessor></technique_common></source>
    <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
    <triangles count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 2</p></triangles>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="s"><node id="n"><instance_geometry url="#g"/></node></visual_scene>
  </library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


def meshy(tmp_path, base, arm):
    path = tmp_path / "meshy.urdf"
    path.write_text(ARM_URDF.format(base=base, arm=arm))
    return dynlib.load(path)


def test_meshes_are_embedded_with_scale_colour_and_dae_units(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "base.obj").write_text(TRIANGLE_OBJ)
    (tmp_path / "meshes" / "arm.dae").write_text(DAE_MM)
    model = meshy(tmp_path, "meshes/base.obj", "file://" + str(tmp_path / "meshes" / "arm.dae"))
    t = np.linspace(0, 1, 11)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t))))
    assert page.warnings == [] and page.meshes == 2
    objs = objects_of(commands_of(page.html))
    base = objs["/dyn/robot/world"]
    geom = {g["uuid"]: g for g in base["geometries"]}
    (mesh,) = base["object"]["children"]
    g = geom[mesh["geometry"]]  # the OBJ as a BufferGeometry (issue 34): its triangle, indexed, with normals
    assert g["type"] == "BufferGeometry"
    attrs = g["data"]["attributes"]
    pos = np.asarray(attrs["position"]["array"]).reshape(-1, 3)
    index = g["data"]["index"]["array"]
    assert np.allclose(pos[index], [[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]], atol=1e-7)
    assert attrs["normal"]["normalized"] and np.array_equal(attrs["normal"]["array"].reshape(-1, 3), [[0, 0, 127]] * 3)
    assert "color" not in attrs  # no colour of its own: the URDF's
    (mat,) = base["materials"]
    assert mat["color"] == (128 << 16) | (128 << 8) | 140  # 'steel', by name
    arm = objs["/dyn/robot/arm"]
    (child,) = arm["object"]["children"]
    M = np.array(child["matrix"]).reshape(4, 4).T  # three.js stores column-major
    assert np.allclose(M, np.diag([0.5e-3, 0.5e-3, 2e-3, 1]) + np.outer([0, 0, 0.25, 0], [0, 0, 0, 1]))


def test_missing_meshes_are_warnings_and_collisions_stand_in(tmp_path):
    model = meshy(tmp_path, "package://nowhere_description/meshes/base.stl", "meshes/missing.dae")
    t = np.linspace(0, 1, 11)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t))))
    text = "\n".join(page.warnings)
    assert "'nowhere_description'" in text and "1 mesh not drawn (package://nowhere_description/meshes/base.stl)" in text
    assert "meshes/missing.dae" in text and "no such file" in text
    assert "<collision> geometry" in text
    objs = objects_of(commands_of(page.html))
    kinds = {g["type"] for o in objs.values() for g in o["geometries"]}
    assert {"BoxGeometry", "CylinderGeometry"} <= kinds


def test_a_robot_without_shapes_is_drawn_as_its_frames(tmp_path):
    import dataclasses

    bare = dataclasses.replace(sample("arm6"), visuals=(), collision_shapes=())
    t = np.linspace(0, 1, 11)
    page = build_view(bare, read_playback(bare, motion_file(tmp_path / "m.csv", bare, t, swing(bare, t))))
    assert any("link frames" in w for w in page.warnings)
    objs = objects_of(commands_of(page.html))
    assert len([p for p in objs if p.startswith("/dyn/robot/")]) >= bare.nb


def test_contact_forces_become_arrows_at_the_scenario_points(tmp_path):
    sc = dynlib.load_scenario(ROBOTS_DIR.parent / "scenarios" / "contact_unilateral_quadruped.yaml",
                              {"duration": 0.3, "output.columns": ["q", "qd", "contact"]})
    traj = Trajectory(*dynlib.run_scenario(sc).table(("q", "contact")))
    c = sc.contacts
    page = build_view(sc.model, read_playback(sc.model, traj), contacts={
        "points": c.points, "height": c.ground.height, "normal": c.ground.normal})
    cmds = commands_of(page.html)
    anim = animation_of(cmds)
    feet = ["lf_foot", "lh_foot", "rf_foot", "rh_foot"]
    t = traj.time
    for foot in feet:
        times, pos = anim[f"/dyn/contacts/{foot}"][".position"]
        # the arrow stands at the contact point: the foot frame's origin plus the offset (0, 0, -0.02) in its axes
        Q = interpolate(sc.model, t, traj.columns([f"q.{n}" for n in sc.model.q_names]), times)
        T = dynlib.frame_placement(sc.model, Q, foot)
        ref = T[:, :3, 3] + T[:, :3, :3] @ np.array([0, 0, -0.02])
        assert_close(pos.reshape(-1, 3), ref, 1e-6, "view contact point")
        _, scale = anim[f"/dyn/contacts/{foot}/shaft"][".scale"]
        F = np.array([np.interp(times, t, traj.column(f"contact.{foot}.f{a}")) for a in "xyz"]).T
        lengths = scale.reshape(-1, 3)[:, 1]
        loaded = np.linalg.norm(F, axis=1) > 1.0
        ratio = lengths[loaded] / np.linalg.norm(F[loaded], axis=1)
        assert loaded.any() and np.allclose(ratio, ratio[0], rtol=1e-5)
    assert "/dyn/ground" in objects_of(cmds)


def test_contact_forces_without_a_scenario_are_drawn_at_frames_or_named(tmp_path):
    quad = sample("quadruped", True)
    t = np.linspace(0, 1, 21)
    Q = swing(quad, t)
    extra = {f"contact.lf_foot.f{a}": np.full(len(t), 10.0 if a == "z" else 0.0) for a in "xyz"}
    extra.update({f"contact.nowhere.f{a}": np.ones(len(t)) for a in "xyz"})
    page = build_view(quad, read_playback(quad, motion_file(tmp_path / "m.csv", quad, t, Q, extra)))
    anim = animation_of(commands_of(page.html))
    times, pos = anim["/dyn/contacts/lf_foot"][".position"]
    assert_close(pos.reshape(-1, 3), dynlib.frame_placement(quad, Q, "lf_foot")[:, :3, 3], 1e-6, "view frame point")
    assert "/dyn/contacts/nowhere" not in anim
    assert any("contact.nowhere" in w and "not drawn" in w for w in page.warnings)


def test_traces_follow_their_frame(tmp_path):
    arm = sample("arm6")
    t = np.linspace(0, 2, 401)
    Q = swing(arm, t)
    page = build_view(arm, read_playback(arm, motion_file(tmp_path / "m.csv", arm, t, Q)), traces=["tool0"])
    line = objects_of(commands_of(page.html))["/dyn/traces/tool0"]
    pts = np.asarray(line["geometries"][0]["data"]["attributes"]["position"]["array"]).reshape(-1, 3)
    assert_close(pts, dynlib.frame_placement(arm, Q, "tool0")[:, :3, 3], 1e-6, "view trace")
    with pytest.raises(dynlib.errors.InputError, match="no frame"):
        build_view(arm, read_playback(arm, tmp_path / "m.csv"), traces=["tool9"])


def test_recordings_with_other_column_names(tmp_path):
    arm = sample("arm6")
    t = np.linspace(0, 1, 11)
    Q = swing(arm, t)
    names = ["time"] + [f"pos_{n}" for n in arm.q_names]
    write_trajectory(tmp_path / "r.csv", names, np.column_stack([t, Q]))
    rec = read_playback(arm, tmp_path / "r.csv", columns={"q": "pos_{joint}"})
    assert np.array_equal(rec.q, Q)
    with pytest.raises(dynlib.errors.TrajectoryError, match="missing"):
        read_playback(arm, tmp_path / "r.csv")


def test_write_view_is_atomic_and_leaves_nothing_on_error(tmp_path):
    arm = sample("arm6")
    t = np.linspace(0, 1, 11)
    motion_file(tmp_path / "m.csv", arm, t, swing(arm, t))
    page = write_view(tmp_path / "p.html", arm, tmp_path / "m.csv")
    assert (tmp_path / "p.html").read_bytes() == page.html
    with pytest.raises(dynlib.errors.InputError):
        write_view(tmp_path / "q.html", arm, tmp_path / "m.csv", fps=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv", "p.html"]


def test_a_mimic_follower_is_drawn_at_its_coupled_position(tmp_path):
    """Issue 28 item 8: a recording of the leader alone plays the follower at multiplier * leader + offset."""
    box = '<inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>'
    (tmp_path / "g.urdf").write_text(f"""<?xml version="1.0"?><robot name="g">
<link name="hand">{box}</link><link name="fl">{box}</link><link name="fr">{box}</link>
<joint name="left" type="prismatic"><parent link="hand"/><child link="fl"/><axis xyz="0 1 0"/>
<limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
<joint name="right" type="prismatic"><parent link="hand"/><child link="fr"/><axis xyz="0 1 0"/>
<limit lower="-0.04" upper="0" effort="20" velocity="0.2"/><mimic joint="left" multiplier="-1" offset="0"/></joint>
</robot>""")
    model = dynlib.load(tmp_path / "g.urdf")
    t = np.arange(0, 0.5, 0.05)
    write_trajectory(tmp_path / "m.csv", ["time", "q.left"], np.column_stack([t, 0.04 * t]))
    playback = read_playback(model, tmp_path / "m.csv")
    np.testing.assert_array_equal(playback.q, np.column_stack([0.04 * t, -0.04 * t]))
    page = build_view(model, playback, fps=20)
    _, pos = animation_of(commands_of(page.html))["/dyn/robot/fr"][".position"]
    assert_close(pos.reshape(-1, 3)[:, 1], -0.04 * np.arange(10) / 20, 1e-6, "follower position (float32)")


# ------------------------------------------------------------------- what the numbers mean (issue 34)

BRICK_URDF = """<?xml version="1.0"?>
<robot name="brick">
  <link name="base"><visual><geometry><box size="0.4 0.2 0.1"/></geometry></visual></link>
  <link name="brick">
    <inertial><origin xyz="0.05 0 0.2" rpy="0.3 -0.2 0.9"/><mass value="{m}"/>
      <inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 0.2"/><geometry><box size="0.1 0.1 0.5"/></geometry></visual>
    <collision><origin xyz="0 0 0.2"/><geometry><cylinder radius="0.06" length="0.5"/></geometry></collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="brick"/><axis xyz="0 1 0"/>
    <origin xyz="0 0 0.3"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
"""


def brick(tmp_path, sides=(0.3, 0.2, 0.1), m=2.0, name="brick.urdf"):
    x, y, z = sides
    (tmp_path / name).write_text(BRICK_URDF.format(m=m, ixx=m / 12 * (y * y + z * z), iyy=m / 12 * (x * x + z * z),
                                                   izz=m / 12 * (x * x + y * y)))
    return dynlib.load(tmp_path / name)


def box_of(obj) -> tuple:
    """(sides (3,), 4x4 placement in the body) of an inertia-box object's face mesh."""
    geom = {g["uuid"]: g for g in obj["geometries"]}
    (mesh,) = [c for c in obj["object"]["children"] if c["type"] == "Mesh"]
    g = geom[mesh["geometry"]]
    return np.array([g["width"], g["height"], g["depth"]]), np.array(mesh["matrix"]).reshape(4, 4).T


def test_inertia_box_of_a_box_link_is_the_box(tmp_path):
    model = brick(tmp_path)
    t = np.linspace(0, 1, 11)
    Q = swing(model, t)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, Q)), show=["inertia"])
    cmds = commands_of(page.html)
    objs = objects_of(cmds)
    assert [p for p in objs if p.startswith("/dyn/inertia/")] == ["/dyn/inertia/brick"]  # the base has no mass
    sides, T = box_of(objs["/dyn/inertia/brick"])
    assert_close(sides, [0.3, 0.2, 0.1], 1e-12, "page's inertia box sides")
    assert_close(T[:3, 3], [0.05, 0, 0.2], 1e-12, "page's inertia box centre")
    from scipy.spatial.transform import Rotation

    R0 = Rotation.from_euler("xyz", [0.3, -0.2, 0.9]).as_matrix()
    assert np.allclose(np.abs(T[:3, :3].T @ R0), np.eye(3), atol=1e-10)  # edges along the link's box
    _, pos = animation_of(cmds)["/dyn/inertia/brick"][".position"]  # it moves with its body
    assert_close(pos.reshape(-1, 3), dynlib.frame_placement(model, Q, "brick")[:, :3, 3], 1e-6, "box motion")
    assert page.warnings == [] and not [p for p in objs if p.startswith(("/dyn/com", "/dyn/collision"))]


def test_show_com_marks_each_body_and_the_robot(tmp_path):
    quad = sample("quadruped", True)
    t = np.linspace(0, 1, 21)
    Q = swing(quad, t)
    page = build_view(quad, read_playback(quad, motion_file(tmp_path / "m.csv", quad, t, Q)), show=("com",), fps=20)
    cmds = commands_of(page.html)
    massive = [link for b, link in enumerate(quad.body_links) if quad.arrays.inertia[b, 0, 0] > 0]
    assert sorted(p for p in objects_of(cmds) if p.startswith("/dyn/com/links/")) == sorted(
        f"/dyn/com/links/{link}" for link in massive)
    times, pos = animation_of(cmds)["/dyn/com/robot"][".position"]
    assert_close(pos.reshape(-1, 3), dynlib.center_of_mass(quad, Q), 1e-6, "robot com track (float32)")


def test_show_collision_and_a_comma_list(tmp_path):
    model = brick(tmp_path)
    t = np.linspace(0, 1, 11)
    playback = read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t)))
    objs = objects_of(commands_of(build_view(model, playback, show=["collision,inertia"]).html))
    assert "/dyn/collision/brick" in objs and "/dyn/inertia/brick" in objs
    assert {g["type"] for g in objs["/dyn/collision/brick"]["geometries"]} == {"CylinderGeometry"}
    with pytest.raises(dynlib.errors.InputError, match="unknown overlay 'mass'"):
        build_view(model, playback, show=["inertia,mass"])
    meshy(tmp_path, "meshes/base.obj", "meshes/arm.obj")  # drawn, but its collision mesh is missing
    (tmp_path / "meshes").mkdir()
    for name in ("base.obj", "arm.obj"):
        (tmp_path / "meshes" / name).write_text(TRIANGLE_OBJ)
    (tmp_path / "lost.urdf").write_text((tmp_path / "meshy.urdf").read_text().replace(
        '<cylinder radius="0.05" length="0.5"/>', '<mesh filename="meshes/gone.stl"/>'))
    lost = dynlib.load(tmp_path / "lost.urdf")
    page = build_view(lost, read_playback(lost, motion_file(tmp_path / "l.csv", lost, t, swing(lost, t))),
                      show=["collision"])
    (said,) = [w for w in page.warnings if w.startswith("--show collision: ")]
    assert said.startswith("--show collision: link 'arm': meshes/gone.stl") and "no such file" in said, said


def test_compare_draws_the_other_model_s_boxes(tmp_path):
    model = brick(tmp_path)
    other = brick(tmp_path, sides=(0.4, 0.3, 0.2), m=3.0, name="identified.urdf")
    t = np.linspace(0, 1, 11)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t))),
                      show=["inertia"], compare=other)
    objs = objects_of(commands_of(page.html))
    assert_close(box_of(objs["/dyn/inertia/brick"])[0], [0.3, 0.2, 0.1], 1e-12, "own box")
    assert_close(box_of(objs["/dyn/compare/brick"])[0], [0.4, 0.3, 0.2], 1e-12, "compared box")
    colours = {p: {m["color"] for m in objs[p]["materials"]} for p in ("/dyn/inertia/brick", "/dyn/compare/brick")}
    assert colours["/dyn/inertia/brick"].isdisjoint(colours["/dyn/compare/brick"])
    with pytest.raises(dynlib.errors.ModelError, match="not the same robot as 'brick'"):
        build_view(model, read_playback(model, tmp_path / "m.csv"), compare=sample("arm6"))


def test_camera_frames_the_first_frame_and_the_ground_is_under_it(tmp_path):
    model = brick(tmp_path)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "one.csv", model, [0.0],
                                                              np.zeros((1, 1)))))
    # the shapes at q = 0: the base box (0.4, 0.2, 0.1) about the origin, the brick's box (0.1, 0.1, 0.5) centred at z 0.5
    lo, hi = np.array([-0.2, -0.1, -0.05]), np.array([0.2, 0.1, 0.75])
    target = re.search(rb'<script id="dyn-camera-target" type="application/json">([^<]*)</script>', page.html).group(1)
    assert_close(np.array(eval(target)), (lo + hi) / 2, 1e-12, "camera target")
    cmds = commands_of(page.html)
    (cam,) = [c for c in cmds if c["type"] == "set_property" and c["path"] == "/Cameras/default/rotated/<object>"]
    x, y, z = cam["value"]
    position = np.array([x, -z, y])  # meshcat's camera node is y-up
    radius = np.linalg.norm(hi - lo) / 2
    assert np.isclose(np.linalg.norm(position - (lo + hi) / 2) * np.sin(np.radians(75 / 2)), 1.25 * radius)
    assert position[2] > hi[2]  # from above
    (ground,) = [c for c in cmds if c["type"] == "set_transform" and c["path"] == "/dyn/ground"]
    assert np.isclose(np.asarray(ground["matrix"]).reshape(4, 4).T[2, 3], lo[2])  # the grid at the lowest point


def test_moments_that_break_the_triangle_inequality_are_a_warning(tmp_path):
    (tmp_path / "odd.urdf").write_text(BRICK_URDF.format(m=1.0, ixx=0.01, iyy=0.01, izz=0.03))
    model = dynlib.load(tmp_path / "odd.urdf")
    t = np.linspace(0, 1, 11)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t))),
                      compare=model)  # --compare alone draws the robot's own boxes too
    assert [w for w in page.warnings if "triangle inequality" in w] == [
        "link 'brick': principal moments 0.01, 0.01, 0.03 kg m^2 break the triangle inequality (no body has them): "
        "its inertia box is drawn with a side 0",
        f"--compare {tmp_path / 'odd.urdf'}: link 'brick': principal moments 0.01, 0.01, 0.03 kg m^2 break the "
        "triangle inequality (no body has them): its inertia box is drawn with a side 0"]
    objs = objects_of(commands_of(page.html))
    assert "/dyn/inertia/brick" in objs and "/dyn/compare/brick" in objs
    assert_close(box_of(objs["/dyn/inertia/brick"])[0], [np.sqrt(0.18), np.sqrt(0.18), 1e-5], 1e-12, "clamped box")


# ------------------------------------------------------------------- meshes that cannot be drawn (issue 34)

def _placeholders(html, path):
    """(dimensions, matrix) of each placeholder box of the object at `path`."""
    obj = objects_of(commands_of(html))[path]
    geom = {g["uuid"]: g for g in obj["geometries"]}
    mats = {m["uuid"]: m for m in obj["materials"]}
    out = []
    for child in obj["object"]["children"]:
        g, m = geom[child["geometry"]], mats[child["material"]]
        if g["type"] == "BoxGeometry" and m["transparent"]:
            out.append((np.array([g["width"], g["height"], g["depth"]]), np.array(child["matrix"]).reshape(4, 4).T))
    return out


@pytest.mark.parametrize("case", ["missing", "corrupt", "nan"])
def test_a_mesh_that_cannot_be_drawn_is_one_warning_and_a_placeholder_box(tmp_path, case):
    """A missing file, a damaged STL, an STL of NaN vertices: exit 0, one `dyn: warning:` line naming the
    link and the file and saying a placeholder stands in, and the page has a box of the link's
    <collision> size (the cylinder: 0.1 x 0.1 x 0.5 at z = 0.25) where the mesh would be."""
    from helpers import invoke

    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "base.obj").write_text(TRIANGLE_OBJ)
    if case == "corrupt":
        (tmp_path / "meshes" / "arm.stl").write_bytes(b"\0" * 80 + struct.pack("<I", 1000) + b"\1" * 500)
    elif case == "nan":
        (tmp_path / "meshes" / "arm.stl").write_bytes(b"\0" * 80 + struct.pack("<I", 1)
                                                      + struct.pack("<12fH", *[float("nan")] * 12, 0))
    model = meshy(tmp_path, "meshes/base.obj", "meshes/arm.stl")
    t = np.linspace(0, 1, 11)
    motion_file(tmp_path / "m.csv", model, t, swing(model, t))
    r = invoke("view", tmp_path / "meshy.urdf", tmp_path / "m.csv", "-o", tmp_path / "p.html")
    assert r.returncode == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and warnings[0].startswith("dyn: warning: link 'arm': meshes/arm.stl: "), r.stderr
    assert str(tmp_path / "meshes" / "arm.stl") in warnings[0] and "placeholder box" in warnings[0]
    assert ("no such file" if case == "missing" else "no triangle could be read") in warnings[0]
    html = (tmp_path / "p.html").read_bytes()
    ((dims, M),) = _placeholders(html, "/dyn/robot/arm")
    assert np.allclose(dims, [0.1, 0.1, 0.5]) and np.allclose(M[:3, 3], [0, 0, 0.25])
    assert _placeholders(html, "/dyn/robot/world") == []  # the base's mesh is drawn


def test_a_placeholder_without_collision_geometry_is_the_inertia_box(tmp_path):
    """No <collision> on the link: the uniform box of its mass and principal moments (a cube of side
    sqrt(6 (Iyy + Izz - Ixx) / m) for the arm's 1 kg and 0.01 kg m^2), at its centre of mass."""
    text = ARM_URDF.format(base="meshes/base.obj", arm="meshes/none.stl")
    text = text.replace('<collision><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.05" length="0.5"/>'
                        '</geometry></collision>', "")
    text = text.replace('<inertial><mass value="1"/>', '<inertial><origin xyz="0 0 0.2"/><mass value="1"/>')
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "base.obj").write_text(TRIANGLE_OBJ)
    (tmp_path / "r.urdf").write_text(text)
    model = dynlib.load(tmp_path / "r.urdf")
    t = np.linspace(0, 1, 11)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t))))
    assert len(page.warnings) == 1 and "placeholder box" in page.warnings[0]
    ((dims, M),) = _placeholders(page.html, "/dyn/robot/arm")
    assert np.allclose(dims, np.sqrt(6 * 0.01)) and np.allclose(M[:3, 3], [0, 0, 0.2])


def test_max_triangles_decimates_large_meshes_and_keeps_their_shape(tmp_path):
    """--max-triangles 300: a 5120-triangle sphere arrives with about 300 triangles, its bounding box
    within 2 % of the sphere's; the 1-triangle base is untouched; the page is smaller."""
    import trimesh

    from helpers import invoke

    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "base.obj").write_text(TRIANGLE_OBJ)
    trimesh.creation.icosphere(subdivisions=4, radius=0.1).export(tmp_path / "meshes" / "ball.stl")
    model = meshy(tmp_path, "meshes/base.obj", "meshes/ball.stl")
    t = np.linspace(0, 1, 11)
    motion_file(tmp_path / "m.csv", model, t, swing(model, t))
    sizes, triangles = {}, {}
    for option in ([], ["--max-triangles", "300"]):
        page = tmp_path / f"p{len(option)}.html"
        r = invoke("view", tmp_path / "meshy.urdf", tmp_path / "m.csv", "-o", page, *option)
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
        sizes[len(option)] = page.stat().st_size
        objs = objects_of(commands_of(page.read_bytes()))
        for path in ("/dyn/robot/world", "/dyn/robot/arm"):
            (g,) = [g for g in objs[path]["geometries"] if g["type"] == "BufferGeometry"]
            triangles[len(option), path] = len(g["data"]["index"]["array"]) // 3
            pos = np.asarray(g["data"]["attributes"]["position"]["array"]).reshape(-1, 3)
            if path == "/dyn/robot/arm":
                assert np.allclose(np.ptp(pos, axis=0), 0.2, rtol=0.02)
    assert triangles[0, "/dyn/robot/arm"] == 5120 and 250 <= triangles[2, "/dyn/robot/arm"] <= 330
    assert triangles[0, "/dyn/robot/world"] == triangles[2, "/dyn/robot/world"] == 1
    assert sizes[2] < sizes[0]


def test_a_robot_without_meshes_is_drawn_without_importing_the_mesh_readers(tmp_path):
    """trimesh, pycollada and fast-simplification are imported only to read a mesh file (dyn view of a
    robot of boxes and cylinders starts as lean as before; a fresh interpreter tells)."""
    import subprocess
    import sys

    arm = sample("arm6")
    t = np.linspace(0, 1, 11)
    motion_file(tmp_path / "m.csv", arm, t, swing(arm, t))
    code = ("import sys\nfrom cli.main import dyn\ntry:\n    dyn(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code\nprint(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('trimesh', 'collada', 'fast_simplification')))\n")
    r = subprocess.run([sys.executable, "-c", code, "view", str(ROBOTS_DIR / "arm6.urdf"), str(tmp_path / "m.csv"),
                        "-o", str(tmp_path / "p.html")], capture_output=True, text=True, timeout=600,
                       cwd=str(ROBOTS_DIR.parent))
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def _buffer_geometry(html, path):
    obj = objects_of(commands_of(html))[path]
    (g,) = [g for g in obj["geometries"] if g["type"] == "BufferGeometry"]
    (child,) = [c for c in obj["object"]["children"] if c["geometry"] == g["uuid"]]
    (mat,) = [m for m in obj["materials"] if m["uuid"] == child["material"]]
    return g["data"], mat


def test_gltf_glb_and_an_obj_mixing_faces_with_and_without_texture_coordinates(tmp_path):
    """A .glb with its own colours (kept: the URDF gives none), a .gltf whose buffer is a .bin beside it,
    and an OBJ whose faces are with and without texture coordinates (pybullet's Panda link5-7, which the
    viewer's loader could not merge): every triangle arrives, no warning."""
    import trimesh

    (tmp_path / "meshes").mkdir()
    box = trimesh.creation.box((0.1, 0.2, 0.3))
    box.visual.vertex_colors = np.tile([200, 30, 40, 255], (len(box.vertices), 1))
    box.export(tmp_path / "meshes" / "red.glb")
    scene = trimesh.Scene(trimesh.creation.box((0.1, 0.1, 0.1)))
    files = trimesh.exchange.gltf.export_gltf(scene)
    for name, data in files.items():
        (tmp_path / "meshes" / name).write_bytes(data)
    assert any(name.endswith(".bin") for name in files)
    (tmp_path / "meshes" / "mixed.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 0 1\n"
                                                   "f 1/1 2/2 3/3\nf 2 4 3\n")
    text = ARM_URDF.format(base="meshes/red.glb", arm="meshes/model.gltf").replace(
        '<material name="steel"/>', "")
    text = text.replace("</robot>", '<link name="extra"><visual><geometry><mesh filename="meshes/mixed.obj"/>'
                                    '</geometry></visual></link><joint name="e" type="fixed"><parent link="arm"/>'
                                    '<child link="extra"/></joint></robot>')
    (tmp_path / "r.urdf").write_text(text)
    model = dynlib.load(tmp_path / "r.urdf")
    t = np.linspace(0, 1, 11)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t))))
    assert page.warnings == [] and page.meshes == 3
    data, mat = _buffer_geometry(page.html, "/dyn/robot/world")
    assert mat.get("vertexColors") is True and len(data["index"]["array"]) == 3 * 12
    assert set(map(tuple, np.frombuffer(data["attributes"]["color"]["array"], np.uint8).reshape(-1, 3))) == {
        (200, 30, 40)}
    pos = np.asarray(data["attributes"]["position"]["array"]).reshape(-1, 3)
    assert np.allclose(np.ptp(pos, axis=0), [0.1, 0.2, 0.3])
    arm = objects_of(commands_of(page.html))["/dyn/robot/arm"]
    counts = sorted(len(g["data"]["index"]["array"]) // 3 for g in arm["geometries"] if g["type"] == "BufferGeometry")
    assert counts == [2, 12]  # the OBJ's two faces, the glTF box's twelve


def test_a_gltf_buffer_outside_the_package_is_one_warning_and_left_out(tmp_path):
    """A .gltf naming its buffers outside its folder (no package.xml): they are not read (a warning
    each), a placeholder box where the mesh would be."""
    import json

    import trimesh

    (tmp_path / "secret").mkdir()
    (tmp_path / "robot" / "meshes").mkdir(parents=True)
    files = trimesh.exchange.gltf.export_gltf(trimesh.Scene(trimesh.creation.box((0.1, 0.1, 0.1))))
    gltf = json.loads(files["model.gltf"])
    for buffer in gltf["buffers"]:
        (tmp_path / "secret" / buffer["uri"]).write_bytes(files[buffer["uri"]])
        buffer["uri"] = "../../secret/" + buffer["uri"]
    (tmp_path / "robot" / "meshes" / "model.gltf").write_text(json.dumps(gltf))
    (tmp_path / "robot" / "meshes" / "base.obj").write_text(TRIANGLE_OBJ)
    (tmp_path / "robot" / "r.urdf").write_text(ARM_URDF.format(base="meshes/base.obj", arm="meshes/model.gltf"))
    model = dynlib.load(tmp_path / "robot" / "r.urdf")
    t = np.linspace(0, 1, 11)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t))))
    refused = [w for w in page.warnings if "buffer '../../secret/" in w]
    assert refused and all("inside the robot's package" in w and "left out" in w for w in refused), page.warnings
    assert len(_placeholders(page.html, "/dyn/robot/arm")) == 1


def test_a_dae_declaring_xml_entities_is_left_out(tmp_path):
    """A .dae with <!ENTITY (a way to pull another file into the XML, or to expand without end, now that
    Python reads the Collada file): one warning, not read, a placeholder box."""
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "base.obj").write_text(TRIANGLE_OBJ)
    (tmp_path / "secret.txt").write_text("0 0 0 1 0 0 0 1 0")
    (tmp_path / "meshes" / "arm.dae").write_text(DAE_MM.replace(
        '<?xml version="1.0" encoding="utf-8"?>',
        f'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE c [<!ENTITY s SYSTEM "file://{tmp_path}/secret.txt">]>')
        .replace("0 0 0 100 0 0 0 100 0", "&s;"))
    model = meshy(tmp_path, "meshes/base.obj", "meshes/arm.dae")
    t = np.linspace(0, 1, 11)
    page = build_view(model, read_playback(model, motion_file(tmp_path / "m.csv", model, t, swing(model, t))))
    (warning,) = page.warnings
    assert "link 'arm'" in warning and "declares XML entities" in warning and "placeholder box" in warning
    assert len(_placeholders(page.html, "/dyn/robot/arm")) == 1
