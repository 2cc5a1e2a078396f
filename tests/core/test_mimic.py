"""Mimic joints coupled (issue 28 item 8): the coupled robot's rnea, crba and aba (`dynlib.algorithms.mimic`,
`dynlib.core.mimic`) against Pinocchio's mimic joints (``buildModelFromUrdf(..., mimic=True)``, which has
rnea and crba but no aba) on example-robot-data's grippers, fixed and floating base; where Pinocchio
refuses the file (TALOS's and Romeo's hands: "the parent joint of the mimic joint is not in the
kinematic tree") and on pybullet_data's grippers, against the explicit projection G^T M G checked
independently: G by finite differences of the coupled configuration, M_r by the kinetic energy.
Relative tolerance 1e-10."""
import math

import numpy as np
import pytest

import dynlib
from helpers import erd_path

TOL = 1e-10
PIN = {"panda": "panda_description/urdf/panda.urdf", "baxter": "baxter_description/urdf/baxter.urdf",
       "pr2": "pr2_description/urdf/pr2.urdf", "tiago_pro": "tiago_pro_description/robots/tiago_pro.urdf"}
PROJECTION = {"talos_full_v2": "talos_data/robots/talos_full_v2.urdf", "romeo": "romeo_description/urdf/romeo.urdf"}
PYBULLET = ("franka_panda/panda.urdf", "xarm/xarm6_with_gripper.urdf")


def rel(x, ref):
    return float(np.max(np.abs(np.asarray(x) - ref)) / max(1.0, float(np.max(np.abs(ref)))))


def coupled_state(model, seed):
    rng = np.random.default_rng(seed)
    c = model.coupling
    return (c.reduce_q(dynlib.random_configuration(model, rng)), rng.uniform(-1, 1, c.nv), rng.uniform(-1, 1, c.nv))


def pinocchio_maps(model, pm):
    """(q_r -> Pinocchio's q, P with v_pin = v_r @ P): Pinocchio's mimic model orders joints by name."""
    c, ar = model.coupling, model.arrays
    followers = {f for f, *_ in model.mimic}
    qmap, P = [], np.zeros((c.nv, pm.nv))
    for k, name in enumerate(model.joint_names):
        if name in followers:
            continue
        j = pm.joints[1 if (name == "root" and model.floating_base) else pm.getJointId(name)]
        iq, iv = list(c.q_index).index(ar.idx_q[k]), list(c.v_index).index(ar.idx_v[k])
        qmap.append((iq, j.idx_q, j.nq, j.nq == 2 and j.nv == 1))
        P[iv:iv + ar.nvj[k], j.idx_v:j.idx_v + ar.nvj[k]] = np.eye(ar.nvj[k])

    def q_pin(q_r):
        import pinocchio as pin
        out = pin.neutral(pm)
        for iq, pq, n, continuous in qmap:
            if continuous:
                out[pq], out[pq + 1] = math.cos(q_r[iq]), math.sin(q_r[iq])
            else:
                out[pq:pq + n] = q_r[iq:iq + n]
        return out
    return q_pin, P


@pytest.mark.oracle
@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("name", sorted(PIN))
def test_coupled_dynamics_equal_pinocchios_mimic_joints(name, floating):
    pin = pytest.importorskip("pinocchio")
    path = erd_path(PIN[name])
    model = dynlib.load(path, floating_base=floating)
    pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer(), mimic=True) if floating
          else pin.buildModelFromUrdf(str(path), mimic=True))
    pd = pm.createData()
    assert model.mimic and model.coupling.nv == pm.nv < model.nv
    q_pin, P = pinocchio_maps(model, pm)
    for seed in range(2):
        q, v, a = coupled_state(model, seed)
        tau = dynlib.coupled_rnea(model, q, v, a)
        assert rel(tau @ P, pin.rnea(pm, pd, q_pin(q), v @ P, a @ P)) < TOL
        Mp = pin.crba(pm, pd, q_pin(q))
        assert rel(P.T @ dynlib.coupled_crba(model, q) @ P, np.triu(Mp) + np.triu(Mp, 1).T) < TOL
        assert rel(dynlib.coupled_aba(model, q, v, tau), a) < TOL  # Pinocchio's aba refuses mimic joints


def check_projection(model):
    c = model.coupling
    q, v, a = coupled_state(model, 3)
    # G: the derivative of the coupled configuration (followers multiplier * leader + offset), by differences
    eps = 1e-6
    for j in range(c.nv):
        dq = np.zeros(c.nv)
        dq[j] = eps
        col = (dynlib.difference(model, c.expand_q(q), c.expand_q(_plus(model, q, dq)))
               - dynlib.difference(model, c.expand_q(q), c.expand_q(_plus(model, q, -dq)))) / (2 * eps)
        assert np.max(np.abs(col - c.G[:, j])) < 1e-6
    M = dynlib.coupled_crba(model, q)
    ke = dynlib.kinetic_energy(model, c.expand_q(q), c.expand_v(v))
    assert abs(0.5 * v @ M @ v - ke) < TOL * max(1.0, ke)
    np.testing.assert_allclose(M, c.G.T @ dynlib.crba(model, c.expand_q(q)) @ c.G, rtol=0, atol=TOL)
    tau = dynlib.coupled_rnea(model, q, v, a)
    assert rel(tau, M @ a + dynlib.coupled_rnea(model, q, v, np.zeros(c.nv))) < TOL
    if not model.massless_joints:  # Romeo's hands have no inertia: forward dynamics is undefined
        assert rel(dynlib.coupled_aba(model, q, v, tau), a) < TOL


def _plus(model, q_r, dq_r):
    """q_r moved by dq_r (the coupled robot's tangent step) on the tree's configuration space."""
    c = model.coupling
    return c.reduce_q(dynlib.integrate(model, c.expand_q(q_r), c.expand_v(dq_r)))


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("name", sorted(PROJECTION))
def test_coupled_dynamics_are_the_projection_where_pinocchio_refuses_the_file(name, floating):
    model = dynlib.load(erd_path(PROJECTION[name]), floating_base=floating)
    assert model.mimic
    check_projection(model)


@pytest.mark.parametrize("relpath", PYBULLET)
def test_coupled_dynamics_are_the_projection_on_pybullet_grippers(relpath):
    pybullet_data = pytest.importorskip("pybullet_data")
    import os
    model = dynlib.load(os.path.join(pybullet_data.getDataPath(), relpath), floating_base=True)
    assert model.mimic
    check_projection(model)


def test_every_example_robot_data_robot_with_mimic_loads_coupled():
    """example-robot-data's URDFs with <mimic>: each loads with its followers coupled, except
    alex_psyonic_hands, whose followers mimic joints that are not defined (index_q1 for Left_index_q1):
    an error at the line, as Pinocchio's mimic=True refuses it."""
    found = {}
    root = erd_path(PIN["panda"]).parents[2]
    for path in sorted(root.rglob("*.urdf")):
        if "<mimic" not in path.read_text(errors="replace"):
            continue
        rel_path = path.relative_to(root).as_posix()
        if rel_path.startswith("alex_description/"):
            with pytest.raises(dynlib.errors.URDFError, match=r"alex_psyonic_hands\.urdf:\d+: joint .* not defined"):
                dynlib.load(path)
            continue
        model = dynlib.load(path)
        found[rel_path] = len(model.mimic)
        assert not any("independent" in w for w in model.warnings)
    assert found["panda_description/urdf/panda.urdf"] == 1 and found["pr2_description/urdf/pr2.urdf"] == 10
    assert found["talos_data/robots/talos_full_v2.urdf"] == 12 and found["romeo_description/urdf/romeo.urdf"] == 22


GRIPPER = """<?xml version="1.0"?><robot name="gripper"><link name="base"/>
<link name="hand"><inertial><mass value="0.6"/><inertia ixx="1e-3" iyy="2e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="l"><inertial><origin xyz="0 0.01 0.03"/><mass value="0.05"/><inertia ixx="1e-5" iyy="1e-5" izz="2e-6" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="r"><inertial><origin xyz="0 -0.01 0.03"/><mass value="0.05"/><inertia ixx="1e-5" iyy="1e-5" izz="2e-6" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="wrist" type="revolute"><parent link="base"/><child link="hand"/><axis xyz="1 0 0"/></joint>
<joint name="fl" type="revolute"><parent link="hand"/><child link="l"/><origin xyz="0 0.02 0.05"/><axis xyz="1 0 0"/></joint>
<joint name="fr" type="revolute"><parent link="hand"/><child link="r"/><origin xyz="0 -0.02 0.05"/><axis xyz="1 0 0"/>
<mimic joint="fl" multiplier="-1.5" offset="0.2"/></joint></robot>"""


def test_coupled_algorithms_take_batches_and_external_wrenches(tmp_path):
    (tmp_path / "g.urdf").write_text(GRIPPER)
    model = dynlib.load(tmp_path / "g.urdf")
    c = model.coupling
    rng = np.random.default_rng(2)
    Q, V, A = rng.uniform(-1, 1, (3, 4, c.nv))
    F = rng.uniform(-1, 1, (model.nb, 6))
    T = dynlib.coupled_rnea(model, Q, V, A, F)
    assert T.shape == (4, 2) and rel(dynlib.coupled_aba(model, Q, V, T, F), A) < TOL
    for k in range(4):
        assert rel(T[k], dynlib.coupled_rnea(model, Q[k], V[k], A[k], F)) < TOL
        assert rel(T[k], c.G.T @ dynlib.rnea(model, c.expand_q(Q[k]), c.G @ V[k], c.G @ A[k], F)) < TOL
    # the follower's inertia reaches the leader's diagonal through multiplier^2: M_r[fl, fl] = M_fl + 2.25 M_fr
    M = dynlib.crba(model, c.expand_q(Q[0]))
    assert abs(dynlib.coupled_crba(model, Q[0])[1, 1] - (M[1, 1] + 2.25 * M[2, 2])) < TOL


def test_coupled_algorithms_refuse_bad_input(tmp_path):
    (tmp_path / "g.urdf").write_text(GRIPPER)
    with pytest.raises(dynlib.errors.InputError, match="has no mimic joints"):
        dynlib.coupled_crba(dynlib.load(tmp_path / "g.urdf", lock={"fl": 0.1}), np.zeros(1))
    model = dynlib.load(tmp_path / "g.urdf")
    with pytest.raises(dynlib.errors.InputError, match=r"q must be finite, of shape \(2,\)"):
        dynlib.coupled_rnea(model, np.zeros(3), np.zeros(2), np.zeros(2))
    floating = dynlib.load(tmp_path / "g.urdf", floating_base=True)  # a massless base carrying one joint
    with pytest.raises(dynlib.errors.ModelError, match="floating link 'base' has no mass"):
        dynlib.coupled_aba(floating, floating.coupling.reduce_q(floating.q_neutral), np.zeros(8), np.zeros(8))
