"""dynlib.core.model: Model (names, layout, derived models, pickling, per-thread workspace) and Data.

The layout is checked against what it must mean, on every identity-test model (the
`model` fixture: sample robots and random trees, fixed and floating): each joint's
coordinates are a contiguous block of its type's size, named by `dynlib.files.columns`;
the bodies are in topological order and each subtree is a contiguous range; each
DoF's motion subspace column belongs to its body. Derived models change only what
they say; a pickled model computes the same numbers; each thread has its own
workspace.
"""
import dataclasses
import pickle
import re
import threading

import numpy as np
import pytest

import dynlib
from dynlib.core import joints as J
from dynlib.files.columns import joint_coordinates
from dynlib.errors import InputError
from dynlib.core.model import Data
from helpers import ancestors, random_state, sample


def test_coordinates_are_contiguous_blocks_named_by_joint(model):
    a = model.arrays
    iq = iv = 0
    for i, name in enumerate(model.joint_names):
        t = a.jtype[i]
        assert (a.idx_q[i], a.idx_v[i], a.nvj[i]) == (iq, iv, J.NV[t])
        q_names, v_names, tau_names = joint_coordinates(name, J.NAMES[t])
        assert model.q_names[iq:iq + J.NQ[t]] == q_names
        assert model.v_names[iv:iv + J.NV[t]] == v_names
        assert model.tau_names[iv:iv + J.NV[t]] == tau_names
        assert np.all(a.dof_body[iv:iv + J.NV[t]] == i)
        iq, iv = iq + J.NQ[t], iv + J.NV[t]
    assert (iq, iv) == (model.nq, model.nv) == (len(model.q_names), len(model.tau_names))
    assert len(set(model.q_names)) == model.nq and len(set(model.v_names)) == model.nv
    assert model.q_neutral.shape == model.lower.shape == model.upper.shape == (model.nq,)
    assert model.effort.shape == model.velocity_limit.shape == a.damping.shape == a.friction.shape == (model.nv,)


def test_bodies_are_topologically_ordered_and_subtrees_contiguous(model):
    a = model.arrays
    assert np.all(a.parent < np.arange(model.nb))
    for i in range(model.nb):
        inside = [j for j in range(model.nb) if i in ancestors(model, j)]
        assert inside == list(range(i, a.subtree_end[i]))


def planar_axes(model):
    """{joint: unit <axis>} of the planar joints, read from the URDF text here."""
    import re

    text = open(model.source).read()
    out = {}
    for name in re.findall(r'<joint name="([^"]+)" type="planar">', text):
        block = text[text.index(f'<joint name="{name}"'):]
        axis = np.array([float(x) for x in re.search(r'<axis xyz="([^"]+)"', block).group(1).split()])
        out[name] = axis / np.linalg.norm(axis)
    return out


def test_arrays_have_their_stated_shapes_and_meaning(model):
    a = model.arrays
    nb, nv, nf = model.nb, model.nv, model.nframes
    assert a.Xtree_R.shape == (nb, 3, 3) and a.Xtree_p.shape == (nb, 3) and a.inertia.shape == (nb, 6, 6)
    assert np.allclose(a.Xtree_R @ a.Xtree_R.transpose(0, 2, 1), np.eye(3), atol=1e-12)
    assert np.allclose(a.inertia, a.inertia.transpose(0, 2, 1), atol=1e-12)
    assert np.all(np.linalg.eigvalsh(a.inertia) > -1e-12)  # positive semi-definite (massless bodies allowed)
    assert a.S.shape == (nv, 6) and a.frame_body.shape == (nf,) and a.frame_R.shape == (nf, 3, 3)
    assert np.all((a.frame_body >= -1) & (a.frame_body < nb))
    # a revolute (prismatic) DoF's subspace is its unit axis in the angular (linear) rows
    for i in range(nb):
        k = a.idx_v[i]
        if a.jtype[i] == J.REVOLUTE:
            assert np.array_equal(a.S[k], np.r_[np.zeros(3), a.jaxis[i]])
        elif a.jtype[i] == J.PRISMATIC:
            assert np.array_equal(a.S[k], np.r_[a.jaxis[i], np.zeros(3)])
    # every link is a frame; each body's own link sits at the body origin, in its axes except
    # behind a planar joint (whose joint frame is turned to put the URDF <axis> on z)
    for i, link in enumerate(model.body_links):
        f = model.frame_id(link)
        assert a.frame_body[f] == i and np.allclose(a.frame_p[f], 0)
        R = a.frame_R[f]
        assert np.allclose(R @ R.T, np.eye(3), atol=1e-12) and np.linalg.det(R) == pytest.approx(1.0)
        if a.jtype[i] != J.PLANAR:
            assert np.allclose(R, np.eye(3))
        else:  # the link's <axis> (its unit normal of the plane, in link axes) is the body's z axis
            assert np.allclose(R.T @ [0.0, 0.0, 1.0], planar_axes(model)[model.joint_names[i]], atol=1e-12)


def test_names_are_looked_up_with_suggestions():
    m = sample("arm6")
    assert m.frame_names[m.frame_id("tool0")] == "tool0"
    assert m.joint_names[m.joint_id("elbow")] == "elbow"
    with pytest.raises(InputError, match="no frame \\(link\\) 'tool1'; did you mean 'tool0'"):
        m.frame_id("tool1")
    with pytest.raises(InputError, match="no moving joint 'elbo'; did you mean 'elbow'"):
        m.joint_id("elbo")


def test_sizes_and_masses():
    quad = sample("quadruped", True)
    assert quad.has_floating_base and not sample("quadruped").has_floating_base
    assert (quad.nq, quad.nv) == (sample("quadruped").nq + 7, sample("quadruped").nv + 6)
    assert quad.total_mass == pytest.approx(sum(m for _, m in quad.link_masses)) == pytest.approx(12.0)
    arm = sample("arm6")
    moving = float(arm.arrays.inertia[:, 0, 0].sum())
    assert arm.total_mass == pytest.approx(moving + arm.fixed_mass)
    assert arm.summary()["moving_mass"] == pytest.approx(moving)


def test_model_is_frozen():
    m = sample("arm6")
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.name = "other"


# -- derived models --------------------------------------------------------------------------

def test_with_gravity_changes_the_gravity_only():
    m = sample("arm6")
    q, _, _ = random_state(m, np.random.default_rng(0))
    g0 = m.gravity
    double = m.with_gravity(2 * g0)
    assert np.array_equal(m.gravity, g0), "the original is unchanged"
    assert np.array_equal(double.gravity, 2 * g0) and double.q_names == m.q_names
    assert double.arrays.inertia is m.arrays.inertia  # the rest is shared, not copied
    # gravity torques are linear in g; without gravity they vanish
    assert np.allclose(dynlib.gravity_torques(double, q), 2 * dynlib.gravity_torques(m, q), rtol=1e-12, atol=1e-12)
    assert np.allclose(dynlib.gravity_torques(m.with_gravity([0, 0, 0]), q), 0, atol=1e-14)
    for bad in ([0, 0], [0, 0, np.nan], [0, 0, np.inf, 1], "down", [0, 0, "x"], None):
        with pytest.raises(InputError, match="gravity must be three finite numbers"):
            m.with_gravity(bad)


def test_without_joint_friction_zeroes_damping_and_friction_only():
    m = sample("arm6")
    assert m.arrays.damping.any() and m.arrays.friction.any()
    free = m.without_joint_friction()
    assert not free.arrays.damping.any() and not free.arrays.friction.any()
    assert m.arrays.damping.any() and m.arrays.friction.any(), "the original is unchanged"
    q, v, a = random_state(m, np.random.default_rng(1))
    assert np.array_equal(dynlib.rnea(free, q, v, a), dynlib.rnea(m, q, v, a))  # rigid-body dynamics as before


# -- pickling and workspaces ---------------------------------------------------------------------

def same(x, y) -> bool:
    """Equal values, arrays compared entry by entry (also inside tuples and NamedTuples)."""
    if isinstance(x, np.ndarray):
        return isinstance(y, np.ndarray) and x.dtype == y.dtype and np.array_equal(x, y)
    if isinstance(x, tuple):
        return type(x) is type(y) and len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    return x == y


def test_a_pickled_model_computes_the_same_numbers(model):
    copy = pickle.loads(pickle.dumps(model))
    assert copy is not model
    for field in dataclasses.fields(model):
        assert same(getattr(model, field.name), getattr(copy, field.name)), field.name
    q, v, a = random_state(model, np.random.default_rng(2))
    assert np.array_equal(dynlib.rnea(copy, q, v, a), dynlib.rnea(model, q, v, a))


def test_pickling_leaves_the_workspaces_behind():
    m = sample("arm7")
    m.workspace  # noqa: B018 - created in this thread
    assert "_local" not in m.__getstate__()
    copy = pickle.loads(pickle.dumps(m))
    assert copy.workspace is not m.workspace and copy.workspace.M.shape == (m.nv, m.nv)


def test_one_workspace_per_model_and_thread():
    m, other_model = sample("arm6"), sample("arm7")
    here = m.workspace
    assert m.workspace is here and other_model.workspace is not here
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(m.workspace)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(w) for w in seen + [here]}) == 3


def test_create_data_has_every_buffer_at_its_stated_shape():
    m = sample("quadruped", True)
    nb, nv = m.nb, m.nv
    shapes = {"oR": (nb, 3, 3), "op": (nb, 3), "lR": (nb, 3, 3), "lp": (nb, 3), "v": (nb, 6), "a": (nb, 6),
              "f": (nb, 6), "c": (nb, 6), "IC": (nb, 6, 6), "U": (nv, 6), "Dinv": (nb, 6, 6), "u": (nv,),
              "tmp6": (4, 6), "zeros_v": (nv,), "M": (nv, nv),
              "h": (nv,), "diag": (nv,), "L": (nv, nv), "BC": (nb, 6, 6), "Sw": (nv, 6), "dS": (nv, 6)}
    d = m.create_data()
    assert set(Data._fields) == set(shapes)
    for name, shape in shapes.items():
        buf = getattr(d, name)
        assert buf.shape == shape and buf.dtype == np.float64 and buf.flags.c_contiguous, name
    e = m.create_data()
    assert all(not np.shares_memory(getattr(d, k), getattr(e, k)) for k in shapes)


def test_summary_lists_each_joint_with_its_coordinates():
    m = sample("quadruped", True)
    s = m.summary()
    assert (s["nq"], s["nv"], s["bodies"], s["floating_base"]) == (m.nq, m.nv, m.nb, True)
    assert [j["name"] for j in s["joints"]] == list(m.joint_names)
    assert sum((j["q"] for j in s["joints"]), []) == list(m.q_names)
    assert sum((j["v"] for j in s["joints"]), []) == list(m.v_names)
    assert s["joints"][0]["parent"] == "world" and s["joints"][0]["type"] == m.joint_types[0]
    assert {f["name"] for f in s["frames"]} == set(m.frame_names)


def test_with_armature_sets_the_rotor_inertias_only():
    m = sample("arm6")
    assert np.all(m.arrays.armature == 0) and m.arrays.armature.shape == (m.nv,)
    by_joint = m.with_armature({"elbow": 0.2, "wrist_3": 0.01})
    assert np.array_equal(by_joint.arrays.armature, [0, 0, 0.2, 0, 0, 0.01])
    assert np.array_equal(m.with_armature(0.5).arrays.armature, np.full(6, 0.5))
    assert np.array_equal(m.with_armature(np.arange(6.0)).arrays.armature, np.arange(6.0))
    assert np.all(m.arrays.armature == 0)  # the original is unchanged
    assert by_joint.arrays.damping is m.arrays.damping and by_joint.joint_names == m.joint_names
    quad = sample("quadruped", True).with_armature({"root": 1.0})
    assert np.array_equal(quad.arrays.armature[:6], np.ones(6)) and np.all(quad.arrays.armature[6:] == 0)
    assert by_joint.summary()["joints"][2]["armature"] == [0.2]


@pytest.mark.parametrize("armature, message", [
    ({"elbw": 1.0}, "no moving joint 'elbw'"),
    ({"elbow": -1.0}, "armature of joint 'elbow' must be a finite number >= 0"),
    ([1.0, 2.0], "armature must be one number, 6 numbers or {joint: value}"),
    (np.full(6, np.inf), "armature of 'shoulder_pan' must be a finite number >= 0"),
    ("heavy", "armature must be one number"),
])
def test_bad_armature_is_an_input_error(armature, message):
    with pytest.raises(InputError, match=re.escape(message)):
        sample("arm6").with_armature(armature)


# a dummy root link (no <inertial>) jointed to the real body, as many URDFs have it
DUMMY_ROOT = """<robot name="dummy_root">
  <link name="{root}"/>
  <link name="body"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="{joint}" type="{kind}"><parent link="{root}"/><child link="body"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>"""


@pytest.mark.parametrize("root, joint, kind, floating, flagged", [
    ("world", "hinge", "revolute", True, (("world", "hinge"),)),    # --floating-base on world --revolute--> body
    ("dummy", "slide", "prismatic", True, (("dummy", "slide"),)),
    ("base_link", "base_fixed", "fixed", True, ()),                 # merged: the root body has the mass
    ("world", "hinge", "revolute", False, ()),                      # a fixed base: the dummy is the world
    ("world", "free", "floating", False, ()),                       # the URDF's own free-flyer carries the body
])
def test_a_massless_free_flyer_carrying_one_joint_is_found(tmp_path, root, joint, kind, floating, flagged):
    path = tmp_path / "dummy.urdf"
    path.write_text(DUMMY_ROOT.format(root=root, joint=joint, kind=kind))
    model = dynlib.load(path, floating_base=floating)
    assert model.massless_free_flyers == flagged
    assert any(f"link '{root}'" in w and "no mass or inertia" in w for w in model.warnings) == bool(flagged)


def test_a_massless_trunk_with_several_legs_is_not_flagged(tmp_path):
    """Two joints under a massless free-flyer with different axes: M stays positive definite."""
    path = tmp_path / "legs.urdf"
    inertial = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'
    path.write_text(f"""<robot name="legs"><link name="trunk"/>
      <link name="a">{inertial}</link><link name="b">{inertial}</link>
      <joint name="ja" type="continuous"><parent link="trunk"/><child link="a"/><axis xyz="1 0 0"/></joint>
      <joint name="jb" type="continuous"><parent link="trunk"/><child link="b"/><axis xyz="0 1 0"/></joint>
    </robot>""")
    model = dynlib.load(path, floating_base=True)
    assert model.massless_free_flyers == ()
    M = dynlib.crba(model, model.q_neutral)
    assert np.linalg.eigvalsh(M)[0] > 1e-6
