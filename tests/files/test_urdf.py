"""The URDF reader: tree building, fixed-joint merging, frames, and every validation error."""
import re

import numpy as np
import pytest

import dynlib
from dynlib.errors import URDFError
from helpers import ROBOTS_DIR

INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'


def write(tmp_path, body, name="r.urdf"):
    p = tmp_path / name
    p.write_text(f'<?xml version="1.0"?>\n<robot name="t">\n{body}\n</robot>\n')
    return p


def link(name, inertial=INERTIAL):
    return f'<link name="{name}">{inertial}</link>'


def joint(name, parent, child, jtype="revolute", extra='<axis xyz="0 0 1"/>'):
    return f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>{extra}</joint>'


def chain(*extra_lines):
    return "\n".join([link("base"), link("a"), link("b"), joint("j1", "base", "a"), joint("j2", "a", "b"), *extra_lines])


def error_of(tmp_path, body):
    with pytest.raises(URDFError) as exc:
        dynlib.load(write(tmp_path, body))
    return str(exc.value)


# ---- structure -----------------------------------------------------------------

def test_depth_first_order_children_in_document_order(tmp_path):
    body = "\n".join([link("base")] + [link(n) for n in "abcde"] + [
        joint("ja", "base", "a"), joint("jb", "a", "b"), joint("jc", "base", "c"), joint("jd", "a", "d"), joint("je", "c", "e")])
    m = dynlib.load(write(tmp_path, body))
    assert m.joint_names == ("ja", "jb", "jd", "jc", "je")
    assert list(m.arrays.parent) == [-1, 0, 0, -1, 3]
    assert all(m.arrays.parent[i] < i for i in range(m.nb))
    assert list(m.arrays.subtree_end) == [3, 2, 3, 5, 5]
    assert m.frame_names == ("base", "a", "b", "d", "c", "e")


def test_fixed_joints_are_merged_and_links_stay_frames(tmp_path):
    body = chain(link("tool", INERTIAL),
                 joint("fix", "b", "tool", "fixed", '<origin xyz="0 0 0.5" rpy="0 1.5707963267948966 0"/>'))
    m = dynlib.load(write(tmp_path, body))
    assert m.nb == 2 and "tool" in m.frame_names
    assert m.arrays.inertia[1, 0, 0] == pytest.approx(2.0)  # b + tool lumped
    T = dynlib.frame_placement(m, np.zeros(2), "tool")
    assert T[:3, 3] == pytest.approx([0, 0, 0.5])
    assert T[:3, 2] == pytest.approx([1, 0, 0], abs=1e-12)  # pitch +90 deg turns the tool z axis onto +x


def test_floating_base_adds_root_free_flyer(tmp_path):
    m = dynlib.load(write(tmp_path, chain()), floating_base=True)
    assert m.joint_names[0] == "root" and m.nq == 9 and m.nv == 8
    assert m.q_names[:7] == ("root.x", "root.y", "root.z", "root.qx", "root.qy", "root.qz", "root.qw")
    assert m.v_names[:6] == ("root.vx", "root.vy", "root.vz", "root.wx", "root.wy", "root.wz")
    assert m.q_neutral[6] == 1.0


@pytest.mark.parametrize("name, floating, clash", [
    ("root", True, "joint 'root'"),            # the free-flyer --floating-base adds is 'root'
    ("root.x", True, "coordinate 'root.x'"),   # the free-flyer's first coordinate
    ("slide.x", False, "coordinate 'slide.x'"),  # a URDF planar joint 'slide' has slide.x
])
def test_a_joint_whose_name_clashes_with_another_joints_coordinates_is_one_line(tmp_path, name, floating, clash):
    """A URDF joint named 'root' under --floating-base made two joints 'root': the armature of 'root'
    went to the free-flyer's six coordinates, not to the URDF's joint; a joint 'root.x' made two
    columns 'q.root.x' (an error only when the output was written, with no file or line)."""
    planar = "" if floating else "\n".join([link("p"), joint("slide", "b", "p", "planar", '<axis xyz="0 0 1"/>')])
    body = chain(planar).replace('name="j2"', f'name="{name}"')
    path = write(tmp_path, body)
    with pytest.raises(URDFError) as exc:
        dynlib.load(path, floating_base=floating)
    msg = str(exc.value)
    assert msg.startswith(f"{path}:") and msg.split(":")[1].isdigit() and clash in msg and "\n" not in msg, msg


def test_urdf_floating_and_planar_joints(tmp_path):
    body = "\n".join([link("world", ""), link("base"), link("arm"),
                      joint("float", "world", "base", "floating", ""),
                      joint("slide", "base", "arm", "planar", '<axis xyz="0 1 0"/>')])
    m = dynlib.load(write(tmp_path, body))
    assert m.nq == 10 and m.nv == 9
    assert m.q_names[7:] == ("slide.x", "slide.y", "slide.theta")
    # a planar joint moves in the plane normal to its axis: the arm never leaves y = 0
    q = m.q_neutral.copy()
    q[7:] = [0.3, -0.2, 0.7]
    assert dynlib.frame_placement(m, q, "arm")[1, 3] == pytest.approx(0.0, abs=1e-12)
    assert np.linalg.norm(dynlib.frame_placement(m, q, "arm")[:3, 3]) == pytest.approx(np.hypot(0.3, 0.2))


def test_a_planar_joint_about_z_moves_along_its_frames_x_and_y_as_in_pinocchio(tmp_path):
    """With <axis xyz="0 0 1"> (the usual one), x and y are the joint frame's x and y, as in
    Pinocchio's JointModelPlanar: the plane basis was (-y, x), so q.slide.x moved the link along -y
    and every planar torque and velocity came out in axes turned by 90 degrees."""
    body = "\n".join([link("base"), link("cart"), joint("slide", "base", "cart", "planar",
                                                         '<origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>')])
    path = write(tmp_path, body)
    m = dynlib.load(path)
    for q, where in (([1, 0, 0], [1.3, 0, 0]), ([0, 1, 0], [0.3, 1, 0]), ([0, 0, 0.5], [0.3, 0, 0])):
        T = dynlib.frame_placement(m, np.array(q, float), "cart")
        np.testing.assert_allclose(T[:3, 3], where, atol=1e-15)
    np.testing.assert_allclose(dynlib.frame_placement(m, np.array([0, 0, 0.5]), "cart")[:2, 0],
                               [np.cos(0.5), np.sin(0.5)], atol=1e-15)
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, a = rng.uniform(-1, 1, (3, 3))
        qp = np.r_[q[:2], np.cos(q[2]), np.sin(q[2])]
        np.testing.assert_allclose(dynlib.rnea(m, q, v, a), pin.rnea(pm, pd, qp, v, a), atol=1e-12)


def test_continuous_joint_has_one_coordinate_and_no_limits(tmp_path):
    body = "\n".join([link("base"), link("a"), joint("spin", "base", "a", "continuous")])
    m = dynlib.load(write(tmp_path, body))
    assert m.nq == 1 and m.joint_types == ("continuous",)
    assert np.isinf(m.lower[0]) and np.isinf(m.upper[0])


def test_dynamics_tag_gives_damping_and_friction(tmp_path):
    body = "\n".join([link("base"), link("a"),
                      joint("j", "base", "a", "revolute", '<axis xyz="0 0 1"/><dynamics damping="0.7" friction="0.2"/>'
                            '<limit lower="-1" upper="2" effort="10" velocity="3"/>')])
    m = dynlib.load(write(tmp_path, body))
    assert m.arrays.damping[0] == 0.7 and m.arrays.friction[0] == 0.2
    assert (m.lower[0], m.upper[0], m.effort[0], m.velocity_limit[0]) == (-1, 2, 10, 3)


def mimic_chain(*mimics):
    """Three revolute joints j1 j2 j3 in a chain, with <mimic> elements {joint: (leader, multiplier, offset)}."""
    body = "\n".join([link("base"), link("a"), link("b"), link("c"), joint("j1", "base", "a"), joint("j2", "a", "b"),
                       joint("j3", "b", "c")])
    for name, (leader, mult, offset) in dict(mimics).items():
        body = body.replace(f'name="{name}" type="revolute">',
                            f'name="{name}" type="revolute"><mimic joint="{leader}" multiplier="{mult}" offset="{offset}"/>')
    return body


def test_mimic_joint_is_coupled_to_its_leader_without_a_warning(tmp_path):
    # issue 28 item 8: the warning "treated as independent joints" is gone (this test replaces
    # test_mimic_joints_are_independent_with_a_warning, which expected it)
    m = dynlib.load(write(tmp_path, mimic_chain(("j2", ("j1", 2, 0.5)))))
    assert m.nv == 3 and m.mimic == (("j2", "j1", 2.0, 0.5),)
    assert not any("mimic" in w for w in m.warnings)
    c = m.coupling
    assert c.q_names == ("j1", "j3") and c.v_names == ("j1", "j3") and c.describe() == ["j2 = 2 * j1 + 0.5"]
    np.testing.assert_array_equal(c.expand_q([0.1, 0.3]), [0.1, 2 * 0.1 + 0.5, 0.3])
    np.testing.assert_array_equal(c.G, [[1, 0], [2, 0], [0, 1]])


def test_a_chain_of_mimics_resolves_to_its_root(tmp_path):
    m = dynlib.load(write(tmp_path, mimic_chain(("j3", ("j2", 3, 1)), ("j2", ("j1", 2, 0.5)))))
    # j3 = 3 j2 + 1 = 3 (2 j1 + 0.5) + 1
    assert dict((f, (l, k, o)) for f, l, k, o in m.mimic) == {"j2": ("j1", 2.0, 0.5), "j3": ("j1", 6.0, 2.5)}
    assert m.coupling.v_names == ("j1",)


def test_a_fixed_leader_locks_its_follower_and_a_fixed_follower_is_dropped(tmp_path):
    body = mimic_chain(("j2", ("j1", 2, 0.25))).replace('name="j1" type="revolute"', 'name="j1" type="fixed"')
    m = dynlib.load(write(tmp_path, body))
    assert m.mimic == () and m.joint_names == ("j3",) and m.locked == (("j2", 0.25),)
    m = dynlib.load(write(tmp_path, mimic_chain(("j3", ("j1", 1, 0)))), lock={"j3": 0.0})
    assert m.mimic == () and m.joint_names == ("j1", "j2")
    m = dynlib.load(write(tmp_path, mimic_chain(("j3", ("j1", -1, 0)))), lock={"j1": 0.5})
    assert m.mimic == () and dict(m.locked) == {"j1": 0.5, "j3": -0.5}


def test_mimic_of_an_unknown_joint_or_a_cycle_is_an_error_at_its_line(tmp_path):
    msg = error_of(tmp_path, mimic_chain(("j2", ("j7", 1, 0))))
    assert "r.urdf:" in msg and "'j2' mimics joint 'j7', which is not defined" in msg and "j1" in msg
    msg = error_of(tmp_path, mimic_chain(("j1", ("j3", 1, 0)), ("j2", ("j1", 1, 0)), ("j3", ("j2", 1, 0))))
    assert "cycle" in msg and re.search(r"r\.urdf:\d+", msg)
    assert "mimics itself" in error_of(tmp_path, mimic_chain(("j2", ("j2", 1, 0))))


def test_triangle_inequality_violation_is_a_warning(tmp_path):
    bad = '<inertial><mass value="1"/><inertia ixx="1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'
    m = dynlib.load(write(tmp_path, "\n".join([link("base"), link("a", bad), joint("j", "base", "a")])))
    assert any("triangle inequality" in w for w in m.warnings)


def test_massless_subtree_is_an_error_for_forward_dynamics_only(tmp_path):
    m = dynlib.load(write(tmp_path, "\n".join([link("base"), link("a", ""), joint("j", "base", "a")])))
    assert m.massless_joints == ("j",)
    assert dynlib.rnea(m, [0.1], [0.0], [0.0]).shape == (1,)
    with pytest.raises(dynlib.errors.ModelError, match="'j'|j"):
        dynlib.aba(m, [0.1], [0.0], [0.0])


def test_awkward_but_valid_files_load(tmp_path):
    body = """<!-- a comment --> <material name="blue"><color rgba="0 0 1 1"/></material>
      <link name="basé"><visual><geometry><mesh filename="package://nowhere/base.dae"/></geometry>
        <material name="blue"/></visual></link>
      <link name="a">""" + INERTIAL + """<collision><geometry><sphere radius="0.05"/></geometry></collision></link>
      <link name="leaf"/>
      <joint name="j" type="revolute"><parent link="basé"/><child link="a"/><axis xyz="0 0 2"/></joint>
      <joint name="k" type="fixed"><parent link="a"/><child link="leaf"/></joint>
      <gazebo reference="a"><mu1>0.5</mu1></gazebo>
      <transmission name="t"><type>x</type></transmission>"""
    m = dynlib.load(write(tmp_path, body))
    assert m.frame_names == ("basé", "a", "leaf")
    assert m.arrays.jaxis[0] == pytest.approx([0, 0, 1])  # normalised
    assert m.collisions[0][:3] == ("a", "sphere", (0.05,))


def test_xacro_file_expands(tmp_path):
    m = dynlib.load(ROBOTS_DIR / "arm6.urdf.xacro")
    ref = dynlib.load(ROBOTS_DIR / "arm6.urdf")
    q = np.linspace(-1, 1, ref.nq)
    assert m.nq == ref.nq
    np.testing.assert_allclose(dynlib.rnea(m, q, q, q), dynlib.rnea(ref, q, q, q), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["pendulum", "double_pendulum", "planar3", "arm6", "arm7", "quadruped", "biped"])
def test_sample_robots_load_with_inertial_on_every_moving_body(name):
    m = dynlib.load(ROBOTS_DIR / f"{name}.urdf")
    assert m.nv > 0 and not m.massless_joints
    assert all(m.arrays.inertia[i, 0, 0] > 0 for i in range(m.nb))


# ---- errors: one line, file:line, what was expected ------------------------------

BAD = {
    "malformed-xml": ("<link name='a'>", "malformed XML"),
    "unknown-parent": (chain(joint("j3", "nowhere", "b")), "parent link 'nowhere' is not defined"),
    "unknown-child": (chain(joint("j3", "b", "nobody")), "child link 'nobody' is not defined"),
    "duplicate-link": (chain(link("a")), "link 'a' is defined twice"),
    "duplicate-joint": (chain(link("c"), joint("j1", "b", "c")), "joint 'j1' is defined twice"),
    "several-roots": (chain(link("island")), "several root links"),
    "two-parents": (chain(joint("j3", "base", "b")), "child of two joints"),
    "cycle": ("\n".join([link("a"), link("b"), link("c"), joint("j1", "a", "b"), joint("j2", "b", "c"), joint("j3", "c", "b")]),
              "child of two joints"),
    "pure-cycle": ("\n".join([link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a")]), "cycle"),
    "bad-number": (chain().replace('<axis xyz="0 0 1"/>', '<origin xyz="0 0 -1.57."/><axis xyz="0 0 1"/>', 1), "not a number"),
    "nan": (chain().replace('<axis xyz="0 0 1"/>', '<origin xyz="0 nan 0"/><axis xyz="0 0 1"/>', 1), "finite"),
    "inf": (chain().replace('<axis xyz="0 0 1"/>', '<origin rpy="0 inf 0"/><axis xyz="0 0 1"/>', 1), "finite"),
    "short-vector": (chain().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 1"/>', 1), "expected 3 numbers"),
    "zero-axis": (chain().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>', 1), "not a direction"),
    "negative-mass": (chain(link("c", '<inertial><mass value="-1"/><inertia ixx="1" iyy="1" izz="1"/></inertial>'),
                            joint("j3", "b", "c")), "negative"),
    "not-psd": (chain(link("c", '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="-1"/></inertial>'),
                      joint("j3", "b", "c")), "not positive semi-definite"),
    "unsupported-type": (chain(link("c"), joint("j3", "b", "c", "spherical")), "unsupported type 'spherical'"),
    "no-type": (chain(link("c"), '<joint name="j3"><parent link="b"/><child link="c"/></joint>'), "has no type"),
    "no-parent": (chain(link("c"), '<joint name="j3" type="fixed"><child link="c"/></joint>'), "needs a <parent"),
    "self-joint": (chain(joint("j3", "b", "b")), "to itself"),
    "no-links": ("", "no <link>"),
    "mass-missing": (chain(link("c", '<inertial><inertia ixx="1" iyy="1" izz="1"/></inertial>'), joint("j3", "b", "c")), "<mass"),
    "bad-limits": (chain(link("c"), joint("j3", "b", "c", "revolute", '<axis xyz="1 0 0"/><limit lower="1" upper="-1" effort="1" velocity="1"/>')),
                   "lower limit"),
    "negative-damping": (chain(link("c"), joint("j3", "b", "c", "revolute", '<axis xyz="1 0 0"/><dynamics damping="-1"/>')), "damping"),
    # beyond MAX_MAGNITUDE (1e9 in SI units): the dynamics would overflow (a mass of 1e308 diverged at step 0)
    "huge-mass": (chain(link("c", '<inertial><mass value="1e308"/><inertia ixx="1" iyy="1" izz="1"/></inertial>'),
                        joint("j3", "b", "c")), "link 'c': <mass value=\"1e308\">: 1e+308 is beyond 1e+09"),
    "huge-inertia": (chain(link("c", '<inertial><mass value="1"/><inertia ixx="2e9" iyy="2e9" izz="2e9"/></inertial>'),
                           joint("j3", "b", "c")), "link 'c': <inertia ixx=\"2e9\">: 2e+09 is beyond 1e+09"),
    "huge-origin": (chain(link("c"), joint("j3", "b", "c", "revolute", '<origin xyz="0 -1e10 0"/><axis xyz="1 0 0"/>')),
                    "joint 'j3': <origin xyz=\"0 -1e10 0\">: 1e+10 is beyond 1e+09"),
    "huge-com": (chain(link("c", '<inertial><origin xyz="1e300 0 0"/><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/>'
                                 '</inertial>'), joint("j3", "b", "c")), "<origin xyz=\"1e300 0 0\">: 1e+300 is beyond"),
    "huge-radius": (chain(link("c", INERTIAL + '<collision><geometry><sphere radius="1e300"/></geometry></collision>'),
                          joint("j3", "b", "c")), "link 'c': <sphere radius=\"1e300\">: 1e+300 is beyond 1e+09"),
    "negative-radius": (chain(link("c", INERTIAL + '<collision><geometry><sphere radius="-0.02"/></geometry></collision>'),
                              joint("j3", "b", "c")), "link 'c': <sphere radius=\"-0.02\">: a size must be >= 0"),
    "negative-box": (chain(link("c", INERTIAL + '<collision><geometry><box size="0.1 -0.1 0.1"/></geometry></collision>'),
                           joint("j3", "b", "c")), "link 'c': <box size=\"0.1 -0.1 0.1\">: a size must be >= 0"),
    "huge-damping": (chain(link("c"), joint("j3", "b", "c", "revolute", '<axis xyz="1 0 0"/><dynamics damping="1e200"/>')),
                     "joint 'j3': <dynamics damping=\"1e200\">: 1e+200 is beyond"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_urdf_gives_one_line_with_file_and_line(tmp_path, case):
    body, expected = BAD[case]
    msg = error_of(tmp_path, body)
    assert expected in msg
    assert "\n" not in msg
    assert msg.startswith(str(tmp_path / "r.urdf") + ":")
    if case != "no-links":
        assert msg.split(":")[1].isdigit(), msg  # the line number


@pytest.mark.filterwarnings("error")  # no numpy overflow warning
def test_an_axis_with_huge_components_is_its_direction(tmp_path):
    """<axis xyz="0 1e308 1e308">: its norm overflows (numpy warned "overflow encountered" and the
    simulation diverged at step 0); scaled by its largest component first, it is the direction 0 1 1.
    Joint limits of 1e16 ("no limit", example-robot-data's iris.urdf) are not bounded."""
    limit = '<limit lower="-1e16" upper="1e16" effort="1e30" velocity="1e30"/>'
    huge = dynlib.load(write(tmp_path, chain().replace('<axis xyz="0 0 1"/>', f'<axis xyz="0 1e308 1e308"/>{limit}', 1)))
    unit = dynlib.load(write(tmp_path, chain().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 1 1"/>', 1), "u.urdf"))
    np.testing.assert_allclose(huge.arrays.jaxis[0], [0, 0.5 ** 0.5, 0.5 ** 0.5], rtol=1e-15)
    assert np.array_equal(huge.arrays.S, unit.arrays.S)
    assert huge.upper[0] == 1e16
    q = np.full(huge.nq, 0.3)
    np.testing.assert_allclose(dynlib.rnea(huge, q, q, q), dynlib.rnea(unit, q, q, q), rtol=1e-14)


@pytest.mark.parametrize("content,expected", [
    (b"", "empty"), (b"\x00\x01\x02binary", "binary"), (b"<sdf version='1.6'></sdf>", "expected <robot>"),
])
def test_not_a_urdf(tmp_path, content, expected):
    p = tmp_path / "x.urdf"
    p.write_bytes(content)
    with pytest.raises(URDFError, match=expected):
        dynlib.load(p)


def test_missing_file():
    with pytest.raises(URDFError, match="no such file"):
        dynlib.load("no/such/robot.urdf")


@pytest.mark.parametrize("declaration", ['<?xml version="0.0" ?>', "<?xml version='0.0'?>", '\ufeff<?xml version="2.0"?>'])
def test_an_xml_declaration_with_another_version_is_read_as_1_0(tmp_path, declaration):
    """pybullet_data's minitaur (and some twenty more) say version="0.0"; urdfdom and PyBullet
    load them. The same model as with 1.0, and errors keep their line numbers."""
    body = (ROBOTS_DIR / "double_pendulum.urdf").read_text().split("\n", 1)[1]
    path = tmp_path / "r.urdf"
    path.write_text(declaration + "\n" + body, encoding="utf-8")
    m, ref = dynlib.load(path), dynlib.load(ROBOTS_DIR / "double_pendulum.urdf")
    q = np.array([0.3, -0.7])
    assert m.q_names == ref.q_names and np.array_equal(dynlib.crba(m, q), dynlib.crba(ref, q))
    path.write_text(declaration + "\n<robot name='x'>\n  <link name='a'>\n</robot>\n", encoding="utf-8")
    with pytest.raises(URDFError, match=r"r.urdf:4: malformed XML"):
        dynlib.load(path)


def _with_armature(tmp_path, value, declare=True):
    body = chain().replace('<axis xyz="0 0 1"/></joint>', f'<axis xyz="0 0 1"/><dynamics damping="0.1" '
                                                           f'dyn:armature="{value}"/></joint>', 1)
    p = write(tmp_path, body)
    if declare:
        p.write_text(p.read_text().replace('<robot name="t">', '<robot name="t" xmlns:dyn="urn:dyn:urdf">'))
    return p


def test_dyn_armature_is_read_from_the_dynamics_element(tmp_path):
    """dyn's own attribute <dynamics dyn:armature> (namespace urn:dyn:urdf, which other readers ignore):
    the joint's rotor inertia, on M's diagonal; --armature and a scenario override it per joint."""
    m = dynlib.load(_with_armature(tmp_path, "0.25"))
    assert m.arrays.armature.tolist() == [0.25, 0.0] and m.arrays.damping.tolist() == [0.1, 0.0]
    assert m.with_armature({"j2": 0.5}, keep=True).arrays.armature.tolist() == [0.25, 0.5]
    assert m.with_armature({"j2": 0.5}).arrays.armature.tolist() == [0.0, 0.5]  # the library's default: the others 0
    q = np.array([0.3, -0.2])
    bare = dynlib.load(write(tmp_path, chain(), name="bare.urdf")).with_armature([0.25, 0.0])
    np.testing.assert_array_equal(dynlib.crba(m, q), dynlib.crba(bare, q))


@pytest.mark.parametrize("value", ["-0.1", "abc", "nan", "2e9"])
def test_a_bad_dyn_armature_is_one_error_at_its_line(tmp_path, value):
    p = _with_armature(tmp_path, value)
    with pytest.raises(URDFError, match=rf"r.urdf:6: joint 'j1': <dynamics dyn:armature=\"{value}\">: expected a "
                                        r"rotor inertia >= 0"):
        dynlib.load(p)


def test_an_undeclared_dyn_prefix_is_malformed_xml(tmp_path):
    with pytest.raises(URDFError, match="malformed XML.*dyn"):
        dynlib.load(_with_armature(tmp_path, "0.25", declare=False))


def test_a_locked_leader_whose_follower_would_leave_its_limits_is_an_error(tmp_path):
    from dynlib.files.locks import LockError

    body = mimic_chain(("j2", ("j1", 2, 0))).replace(
        'name="j2" type="revolute">', 'name="j2" type="revolute"><limit lower="-0.5" upper="0.5"/>')
    assert dict(dynlib.load(write(tmp_path, body), lock={"j1": 0.2}).locked) == {"j1": 0.2, "j2": 0.4}
    with pytest.raises(LockError, match=r"cannot hold joint 'j1' at 0.3: its mimic joint 'j2' would be at 0.6, "
                                        r"outside its limits \[-0.5, 0.5\] \(.*r\.urdf:\d+\)") as e:
        dynlib.load(write(tmp_path, body), lock={"j1": 0.3})
    assert e.value.joint == "j1"
