"""dynlib.algorithms.inertia_box: equivalent inertia boxes and the centre of mass.

A URDF box link gives back its own box (sides, centre, axes) however it is placed; the
principal axes of a rotated box inertia are its rotation's columns; moments that break the
triangle inequality are clamped and flagged; the centre of mass against the potential
energy, U = -M g . com, with gravity along each axis in turn.
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import dynlib
from dynlib.algorithms.inertia_box import (body_inertial, box_dimensions, center_of_mass, inertia_boxes,
                                           principal_axes)
from dynlib.core.spatial import spatial_inertia
from dynlib.errors import InputError
from helpers import assert_close, random_state

BOX_URDF = """<?xml version="1.0"?>
<robot name="boxes">
  <link name="base"/>
  <link name="brick">
    <inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{m}"/>
      <inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="brick"/><axis xyz="0 0 1"/>
    <origin xyz="0 0 0.5"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
"""


def box_link(tmp_path, sides, m, xyz=(0, 0, 0), rpy=(0, 0, 0)):
    x, y, z = sides
    text = BOX_URDF.format(m=m, xyz=" ".join(map(repr, xyz)), rpy=" ".join(map(repr, rpy)),
                           ixx=m / 12 * (y * y + z * z), iyy=m / 12 * (x * x + z * z), izz=m / 12 * (x * x + y * y))
    (tmp_path / "box.urdf").write_text(text)
    return dynlib.load(tmp_path / "box.urdf")


def test_a_box_link_gives_back_its_own_box(tmp_path):
    sides, m = np.array([0.3, 0.2, 0.1]), 2.5
    xyz, rpy = (0.05, -0.02, 0.1), (0.3, -0.7, 1.1)
    boxes = inertia_boxes(box_link(tmp_path, sides, m, xyz, rpy))
    assert boxes.mass.tolist() == [m] and not boxes.clamped[0]
    # principal moments ascend: the longest side goes with the smallest moment
    assert_close(boxes.dims[0], [0.3, 0.2, 0.1], 1e-12, "box sides from the principal moments")
    assert_close(boxes.com[0], xyz, 1e-12, "box centre")
    R0 = Rotation.from_euler("xyz", rpy).as_matrix()  # URDF rpy: fixed-axis x, y, z
    assert np.allclose(np.abs(boxes.R[0].T @ R0), np.eye(3), atol=1e-10)  # each axis a link box edge (± sign)
    assert np.isclose(np.linalg.det(boxes.R[0]), 1.0)


def test_a_cube_and_a_point_mass(tmp_path):
    boxes = inertia_boxes(box_link(tmp_path, (0.2, 0.2, 0.2), 1.0))
    assert_close(boxes.dims[0], [0.2, 0.2, 0.2], 1e-12, "cube sides")
    assert not boxes.clamped[0]
    dims, clamped = box_dimensions(3.0, np.zeros(3))
    assert dims.tolist() == [0, 0, 0] and not clamped
    dims, clamped = box_dimensions(0.0, np.ones(3))
    assert dims.tolist() == [0, 0, 0] and not clamped


def test_principal_axes_of_a_rotated_box_inertia():
    R0 = Rotation.from_euler("zyx", [0.4, -1.2, 2.0]).as_matrix()
    moments = np.array([0.01, 0.025, 0.03])
    I = R0 @ np.diag(moments) @ R0.T
    got, R = principal_axes(I)
    assert_close(got, moments, 1e-12, "principal moments")
    assert np.allclose(np.abs(np.sum(R * R0, axis=0)), 1.0, atol=1e-10)  # columns along R0's (± sign)
    assert np.isclose(np.linalg.det(R), 1.0) and np.allclose(R @ np.diag(got) @ R.T, I, atol=1e-15)
    m, c, I_c = body_inertial(spatial_inertia(2.0, [0.1, 0.2, -0.3], I))
    assert m == 2.0 and np.allclose(c, [0.1, 0.2, -0.3]) and np.allclose(I_c, I, atol=1e-15)


def test_moments_that_break_the_triangle_inequality_are_clamped():
    dims, clamped = box_dimensions(1.0, np.array([0.01, 0.01, 0.03]))  # I3 > I1 + I2
    assert clamped and dims[2] == 0.0 and np.allclose(dims[:2], np.sqrt(6 * np.array([0.03, 0.03])))
    dims, clamped = box_dimensions(1.0, np.array([0.01, 0.01, 0.02]))  # a flat plate: exactly on the edge
    assert not clamped and dims[2] == 0.0


def test_center_of_mass_against_the_potential_energy(model):
    rng = np.random.default_rng(3)
    Q = np.array([random_state(model, rng)[0] for _ in range(4)])
    mass = model.arrays.inertia[:, 0, 0].sum()
    if not mass > 0:
        with pytest.raises(InputError, match="no moving body has mass"):
            center_of_mass(model, Q)
        return
    com = center_of_mass(model, Q)
    assert com.shape == (4, 3) and np.array_equal(center_of_mass(model, Q[1]), com[1])
    for k in range(3):
        g = np.zeros(3)
        g[k] = -9.81
        U = dynlib.potential_energy(model.with_gravity(g), Q)
        assert_close(U / (9.81 * mass), com[:, k], 1e-10, "U = -M g . com")
