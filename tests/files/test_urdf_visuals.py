"""URDF <visual> and <collision> geometry and materials read into model.visuals and
model.collision_shapes (what `dyn view` draws)."""
import numpy as np
import pytest

import dynlib
from dynlib.files.urdf import rpy_to_rot

URDF = """<?xml version="1.0"?>
<robot name="shapes">
  <material name="red"><color rgba="1 0 0 1"/></material>
  <material name="textured"><texture filename="wood.png"/></material>
  <link name="base">
    <visual>
      <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.1"/>
      <geometry><box size="0.4 0.5 0.6"/></geometry>
      <material name="red"/>
    </visual>
    <visual>
      <geometry><mesh filename="package://pkg/meshes/base.stl" scale="0.001 0.001 -0.001"/></geometry>
      <material name="blue"><color rgba="0 0 1 0.5"/></material>
    </visual>
    <collision><geometry><cylinder radius="0.1" length="0.3"/></geometry></collision>
    <collision><geometry><mesh filename="meshes/base_collision.obj"/></geometry></collision>
  </link>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><cylinder radius="0.05" length="0.5"/></geometry><material name="blue"/></visual>
    <visual><geometry><sphere radius="0.07"/></geometry><material name="textured"/></visual>
    <visual><geometry><capsule radius="0.02" length="0.1"/></geometry><material name="undefined"/></visual>
    <visual><geometry><box size="1 2"/></geometry></visual>
    <visual><origin xyz="1 2 3"/></visual>
  </link>
  <link name="tool">
    <visual><geometry><mesh filename="tool.dae"/></geometry></visual>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/>
  </joint>
  <joint name="flange" type="fixed"><parent link="arm"/><child link="tool"/><origin xyz="0 0 0.5"/></joint>
</robot>
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("shapes") / "shapes.urdf"
    path.write_text(URDF)
    return dynlib.load(path)


def test_visuals_in_frame_order_with_their_links(model):
    assert [(v.link, v.kind) for v in model.visuals] == [
        ("base", "box"), ("base", "mesh"), ("arm", "cylinder"), ("arm", "sphere"), ("arm", "capsule"), ("tool", "mesh")]


def test_origin_size_and_mesh_scale(model):
    box, mesh = model.visuals[:2]
    assert box.size == (0.4, 0.5, 0.6)
    assert np.allclose(box.p, [0.1, 0.2, 0.3]) and np.allclose(box.R, rpy_to_rot(0.3, -0.2, 0.1))
    assert mesh.filename == "package://pkg/meshes/base.stl" and mesh.size == (0.001, 0.001, -0.001)
    assert np.allclose(mesh.R, np.eye(3)) and np.allclose(mesh.p, 0)
    assert model.visuals[2].size == (0.05, 0.5) and model.visuals[3].size == (0.07,)
    assert model.visuals[5].size == (1.0, 1.0, 1.0)  # a mesh without scale


def test_material_colours_robot_level_inline_and_by_name(model):
    rgba = [v.rgba for v in model.visuals]
    assert rgba[0] == (1.0, 0.0, 0.0, 1.0)            # robot-level, by name
    assert rgba[1] == (0.0, 0.0, 1.0, 0.5)            # inline, named 'blue'
    assert rgba[2] == (0.0, 0.0, 1.0, 0.5)            # 'blue' again, by name only, in a later link
    assert rgba[3] is None and rgba[4] is None and rgba[5] is None  # a texture, an undefined name, none


def test_malformed_geometry_is_skipped_with_a_warning(model):
    warned = [w for w in model.warnings if "not drawn" in w]
    assert len(warned) == 1 and "box size" in warned[0] and "'arm'" in warned[0]
    line = next(k for k, text in enumerate(URDF.splitlines(), 1) if 'size="1 2"' in text)
    assert f":{line}:" in warned[0]


def test_collision_shapes_of_every_kind(model):
    assert [(c.link, c.kind, c.size) for c in model.collision_shapes] == [
        ("base", "cylinder", (0.1, 0.3)), ("base", "mesh", (1.0, 1.0, 1.0))]
    assert model.collision_shapes[1].filename == "meshes/base_collision.obj"
    assert all(c.rgba is None for c in model.collision_shapes)


def test_fixed_links_keep_their_visuals_under_their_own_name(model):
    """'tool' is merged into the arm's body; its visual stays attached to frame 'tool'."""
    tool = [v for v in model.visuals if v.link == "tool"]
    assert len(tool) == 1 and tool[0].filename == "tool.dae"
    assert model.frame_id("tool") >= 0


def test_sample_robots_have_visuals(robots_dir):
    quad = dynlib.load(robots_dir / "quadruped.urdf")
    assert quad.visuals and {v.link for v in quad.visuals} >= {"trunk"}
