"""Contact points (dynlib.sim.contact.points): where they are and how they move.

Positions against the frame placements (`dynlib.frame_placement`), from-collision
spheres (lowest point along the ground normal, whatever the ball's orientation) and
box corners against the box's placement and size; the point Jacobian against
central differences of the point position along q ⊕ ε e_k and against Pinocchio's
`getFrameJacobian` (LOCAL_WORLD_ALIGNED, linear rows) of a frame added at the point.
"""
import itertools

import numpy as np
import pytest

import dynlib
from dynlib.algorithms.kinematics import placements
from dynlib.sim.contact import build
from dynlib.sim.contact.points import at_configuration, contact_points, ground_points, point_jacobian, point_position
from dynlib.errors import InputError
from helpers import ROBOTS_DIR, SQRT_EPS, sample

FEET = ("lf_foot", "lh_foot", "rf_foot", "rh_foot")
OFFSET = np.array([0.01, -0.02, -0.02])
Z = np.array([0.0, 0.0, 1.0])


def floating(name):
    return dynlib.load(ROBOTS_DIR / f"{name}.urdf", floating_base=True)


def random_q(model, seed):
    return dynlib.random_configuration(model, np.random.default_rng(seed), scale=1.0)


def positions(model, pts, q, normal=Z):
    """(nc, 3) world positions of the points at q."""
    d = model.create_data()
    placements(model.arrays, d, q)
    x = np.zeros((len(pts.names), 3))
    for c in range(x.shape[0]):
        point_position(d.oR, d.op, pts.body[c], pts.p[c], pts.radius[c], normal, x[c])
    return x


def jacobian(model, pts, c, q, normal=Z):
    """(3, nv) Jacobian of point c at q."""
    d = model.create_data()
    placements(model.arrays, d, q)
    m = model.arrays
    x, Jp = np.zeros(3), np.zeros((3, model.nv))
    point_position(d.oR, d.op, pts.body[c], pts.p[c], pts.radius[c], normal, x)
    point_jacobian(d.oR, d.op, m.S, m.parent, m.idx_v, m.nvj, pts.body[c], x, Jp)
    return Jp


@pytest.mark.parametrize("name, floating_base, points", [
    ("arm6", False, [{"frame": "tool0", "offset": (0.01, 0.02, -0.03)}, {"frame": "wrist_1_link"}]),
    ("quadruped", True, "from-collision"), ("double_pendulum", False, None)])
def test_the_set_up_kernel_gives_each_kernel_s_own_result_to_the_bit(name, floating_base, points):
    """`at_configuration` (the one set-up kernel of a run) against the public CRBA (one call and batch), RNEA,
    gravity torques, placements and point positions: the same kernels, the same numbers, bit for bit."""
    model = sample(name, floating_base).with_armature(np.linspace(0.01, 0.02, sample(name, floating_base).nv))
    rng = np.random.default_rng(7)
    q, v = random_q(model, 7), rng.normal(size=model.nv)
    pts = cp = None
    if points is not None:
        cp = contact_points(model, points, q)
        pts = ground_points(cp, (0.1, -0.2, 1.0), 0.0, np.zeros((len(cp.names), 3)))
    got = at_configuration(model, q, v, pts)
    assert np.array_equal(got.M, dynlib.crba(model, q)) and np.array_equal(got.M, dynlib.crba(model, q[None])[0])
    assert np.array_equal(got.tau, dynlib.rnea(model, q, v, np.zeros(model.nv)))
    assert np.array_equal(at_configuration(model, q).tau, dynlib.gravity_torques(model, q))
    d = model.create_data()
    placements(model.arrays, d, q)
    assert np.array_equal(got.oR, d.oR) and np.array_equal(got.op, d.op)
    if pts is None:
        assert got.x.shape == (0, 3)
    else:
        assert len(pts.body) > 1 and np.array_equal(got.x, positions(model, cp, q, pts.normal))
    with pytest.raises(InputError, match="q"):
        at_configuration(model, np.full(model.nq, np.nan))


@pytest.mark.parametrize("seed", range(3))
def test_point_positions_are_the_frames_origins_plus_their_offsets(seed):
    model = floating("quadruped")
    pts = contact_points(model, [{"frame": f, "offset": tuple(OFFSET)} for f in FEET])
    q = random_q(model, seed)
    for c, f in enumerate(FEET):
        T = dynlib.frame_placement(model, q, f)
        assert np.allclose(positions(model, pts, q)[c], T[:3, 3] + T[:3, :3] @ OFFSET, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_a_sphere_touches_at_its_lowest_point_along_the_normal_whatever_its_orientation(seed):
    model = floating("ball")
    pts = contact_points(model, "from-collision")
    q = random_q(model, seed)
    centre = dynlib.frame_placement(model, q, "ball")[:3, 3]
    n = np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0])
    assert np.allclose(positions(model, pts, q, n)[0], centre - 0.1 * n, rtol=0, atol=1e-12)


def test_box_points_are_its_eight_corners():
    model = floating("box")
    pts = contact_points(model, "from-collision")
    q = random_q(model, 4)
    T = dynlib.frame_placement(model, q, "box")
    corners = [T[:3, 3] + T[:3, :3] @ (np.array(s) * [0.1, 0.05, 0.025])
               for s in itertools.product((-1, 1), repeat=3)]
    assert np.allclose(positions(model, pts, q), corners, rtol=0, atol=1e-12)
    assert pts.names == tuple(f"box_corner{k}" for k in range(8))


def test_from_collision_skips_what_is_not_a_sphere_or_a_box_and_keeps_unique_names():
    model = floating("quadruped")
    pts = contact_points(model, "from-collision")
    # the trunk's box (8 corners) and the four foot spheres; the legs' cylinders are skipped
    assert len(pts.names) == 12 and set(FEET) <= set(pts.names)
    assert np.count_nonzero(pts.radius) == 4
    named = contact_points(model, [{"frame": "lf_foot"}, {"frame": "lf_foot"}, {"frame": "rf_foot", "name": "x"}])
    assert named.names == ("lf_foot", "lf_foot_1", "x")


def test_a_point_on_a_link_fixed_to_the_world_is_an_error():
    model = sample("arm6")
    with pytest.raises(InputError, match="fixed to the world"):
        contact_points(model, [{"frame": model.frame_names[0]}])


def material_point(model, pts, c, q, q2):
    """Where the body's material point that is at point c at q is at q2 (a sphere's lowest point is not
    material: it moves over the surface; the Jacobian is the material point's)."""
    link = model.body_links[pts.body[c]]
    T, T2 = dynlib.frame_placement(model, q, link), dynlib.frame_placement(model, q2, link)
    x = positions(model, pts, q)[c]
    return T2[:3, 3] + T2[:3, :3] @ (T[:3, :3].T @ (x - T[:3, 3]))


@pytest.mark.parametrize("name,seed", [("quadruped", 0), ("quadruped", 1), ("ball", 2), ("box", 3)])
def test_point_jacobian_matches_central_differences_of_the_material_point(name, seed):
    model = floating(name)
    pts = contact_points(model, "from-collision")
    q = random_q(model, seed)
    eps = SQRT_EPS
    for c in range(len(pts.names)):
        J = jacobian(model, pts, c, q)
        fd = np.zeros_like(J)
        for k in range(model.nv):
            e = np.zeros(model.nv)
            e[k] = eps
            fd[:, k] = (material_point(model, pts, c, q, dynlib.integrate(model, q, e))
                        - material_point(model, pts, c, q, dynlib.integrate(model, q, -e))) / (2 * eps)
        assert np.allclose(J, fd, rtol=0, atol=1e-6), pts.names[c]


@pytest.mark.parametrize("seed", range(3))
def test_point_jacobian_is_pinocchios_local_world_aligned_linear_rows(seed):
    pin = pytest.importorskip("pinocchio")
    from helpers import PinMap

    model = floating("quadruped")
    pts = contact_points(model, [{"frame": f, "offset": tuple(OFFSET)} for f in FEET])
    pm = pin.buildModelFromUrdf(str(ROBOTS_DIR / "quadruped.urdf"), pin.JointModelFreeFlyer())
    ids = []
    for f in FEET:
        parent = pm.frames[pm.getFrameId(f)]
        placement = parent.placement * pin.SE3(np.eye(3), OFFSET)
        ids.append(pm.addFrame(pin.Frame(f"{f}_point", parent.parentJoint, pm.getFrameId(f), placement,
                                         pin.FrameType.OP_FRAME)))
    pd = pm.createData()
    pmap = PinMap(model, pm)
    q = random_q(model, seed)
    pin.computeJointJacobians(pm, pd, pmap.q(q))
    pin.updateFramePlacements(pm, pd)
    for c, fid in enumerate(ids):
        J_pin = pin.getFrameJacobian(pm, pd, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3]
        assert np.allclose(jacobian(model, pts, c, q), pmap.jac(J_pin), rtol=0, atol=1e-12)
        assert np.allclose(positions(model, pts, q)[c], pd.oMf[fid].translation, rtol=0, atol=1e-12)


def test_bilateral_targets_are_the_points_at_q0_unless_given():
    model = floating("quadruped")
    q0 = random_q(model, 5)
    spec = {"model": "bilateral", "points": [{"frame": "lf_foot"}, {"frame": "rf_foot", "target": (1, 2, 3)}]}
    c = build(model, spec, q0)
    assert np.allclose(c.points.target[0], dynlib.frame_placement(model, q0, "lf_foot")[:3, 3], rtol=0, atol=1e-12)
    assert np.allclose(c.points.target[1], [1, 2, 3])


# -- offset_world and from-collision on chosen links (#15 item 7) --------------------------

ROTATED_TOE = """<robot name="leg"><link name="hip"/>
  <link name="shin"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="toe"/>
  <joint name="knee" type="revolute"><parent link="hip"/><child link="shin"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="5"/></joint>
  <joint name="toe_fixed" type="fixed"><parent link="shin"/><child link="toe"/>
    <origin xyz="0 0 -0.3" rpy="0.3 -0.5 0.2"/></joint></robot>"""


def test_offset_world_is_measured_in_the_world_at_q0_and_offset_in_the_frame(tmp_path):
    """A toe frame tilted by its URDF origin: offset (0, 0, -r) goes along the frame's own z, off
    the vertical; offset_world (0, 0, -r) is straight down at q0, and equals the frame-axes
    offset R_frameᵀ (0, 0, -r) that one would have to work out by hand."""
    import dynlib
    from dynlib.algorithms.kinematics import placements
    from dynlib.sim.contact.points import contact_points, point_position

    path = tmp_path / "leg.urdf"
    path.write_text(ROTATED_TOE)
    model = dynlib.load(path)
    q0 = np.array([0.4])
    down = np.array([0.0, 0.0, -0.02])
    T = dynlib.frame_placement(model, q0, "toe")
    d = model.create_data()
    placements(model.arrays, d, q0)

    def world(points, q=q0):
        pts = contact_points(model, points, q)
        x = np.zeros(3)
        point_position(d.oR, d.op, pts.body[0], pts.p[0], pts.radius[0], np.array([0.0, 0.0, 1.0]), x)
        return x

    assert np.allclose(world([{"frame": "toe", "offset_world": down}]), T[:3, 3] + down, atol=1e-15)
    by_hand = T[:3, :3].T @ down
    assert np.allclose(world([{"frame": "toe", "offset": by_hand}]), T[:3, 3] + down, atol=1e-15)
    tilted = world([{"frame": "toe", "offset": down}])
    assert np.linalg.norm(tilted - (T[:3, 3] + down)) > 5e-3  # the frame's z is not the world's
    with pytest.raises(InputError, match="offset_world needs the initial configuration"):
        contact_points(model, [{"frame": "toe", "offset_world": down}])
    with pytest.raises(InputError, match="not both"):
        contact_points(model, [{"frame": "toe", "offset": by_hand, "offset_world": down}], q0)


def test_from_collision_on_chosen_links_takes_only_theirs():
    import dynlib
    from dynlib.sim.contact.points import contact_points

    model = dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True)
    every = contact_points(model, "from-collision")
    feet = contact_points(model, {"from-collision": ["lf_foot", "rh_foot"]})
    assert feet.names == ("lf_foot", "rh_foot") and len(every.names) == 4 + 8  # four feet and the trunk's corners
    for name, b, p in zip(feet.names, feet.body, feet.p):
        k = every.names.index(name)
        assert b == every.body[k] and np.array_equal(p, every.p[k])
    with pytest.raises(InputError, match="no link 'lf_fot'; did you mean 'lf_foot'"):
        contact_points(model, {"from-collision": ["lf_fot"]})
    with pytest.raises(InputError, match="link 'lf_shank' has no <collision>"):
        contact_points(model, {"from-collision": ["lf_shank"]})
