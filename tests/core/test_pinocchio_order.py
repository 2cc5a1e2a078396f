"""dynlib.core.pinocchio_order: Pinocchio's joint order and the maps of q and v to and from it.

dyn numbers coordinates in the URDF document's order (as MuJoCo does); Pinocchio's URDF parser visits a
link's child joints sorted by name. On talos, anymal and hyq (example-robot-data), fixed and floating
(`pin.JointModelFreeFlyer()`), and on trees with continuous and planar joints, the order is Pinocchio's
``model.names`` and rnea, crba and aba agree with Pinocchio's once mapped, to 1e-10. The maps are also
checked against the test suite's own by-name map (`helpers.PinMap`), and round trips are exact.
"""
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import dynlib
from helpers import PinMap, assert_close, erd_path, random_state, random_tree

pin = pytest.importorskip("pinocchio")
pytestmark = pytest.mark.oracle

TOL = 1e-10
ROBOTS = {"talos": "talos_data/robots/talos_reduced.urdf", "anymal": "anymal_b_simple_description/robots/anymal.urdf",
          "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
          "continuous": "double_pendulum_description/urdf/double_pendulum_continuous.urdf"}
CASES = [(name, floating) for name in (*ROBOTS, "planar-tree") for floating in (False, True)]


def both(name, floating):
    if name == "planar-tree":
        # Pinocchio's URDF parser ignores a planar joint's <axis> (always the x-y plane): here it is z
        text = Path(random_tree(8, 6, joint_types=("revolute", "planar", "continuous", "fixed")).source).read_text()
        path = Path(tempfile.mkdtemp()) / "planar_tree.urdf"
        path.write_text(re.sub(r'(type="planar">(?:(?!</joint>).)*?<axis xyz=")[^"]*', r"\g<1>0 0 1", text, flags=re.S))
        model = dynlib.load(path, floating_base=floating)
    else:
        path = erd_path(ROBOTS[name])
        model = dynlib.load(path, floating_base=floating)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
    return model, pm


@pytest.mark.parametrize("name, floating", CASES)
def test_the_order_is_pinocchios_and_the_dynamics_agree_once_mapped(name, floating):
    model, pm = both(name, floating)
    order = model.pinocchio_order()
    assert list(order.joints) == ["root" if n == "root_joint" else n for n in pm.names[1:]]
    assert (order.nq, order.nv) == (pm.nq, pm.nv)
    pd = pm.createData()
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        qp, vp, ap = model.to_pinocchio_q(q), model.to_pinocchio_v(v), model.to_pinocchio_v(a)
        tau = dynlib.rnea(model, q, v, a)
        f = rng.uniform(-5, 5, (model.nb, 6))
        fp = [pin.Force.Zero()] + [pin.Force(f[b]) for b in order.body_index]
        assert_close(model.from_pinocchio_v(pin.rnea(pm, pd, qp, vp, ap, fp)), dynlib.rnea(model, q, v, a, f), TOL,
                     "rnea with f_ext")
        assert_close(model.from_pinocchio_v(pin.rnea(pm, pd, qp, vp, ap)), tau, TOL, "rnea")
        assert_close(model.to_pinocchio_v(tau), pin.rnea(pm, pd, qp, vp, ap), TOL, "rnea, Pinocchio's order")
        M = pin.crba(pm, pd, qp)
        M = np.triu(M) + np.triu(M, 1).T
        iv = order.v_index
        assert_close(dynlib.crba(model, q)[np.ix_(iv, iv)], M, TOL, "crba")
        assert_close(model.from_pinocchio_v(pin.aba(pm, pd, qp, vp, model.to_pinocchio_v(tau))), a, TOL, "aba")
        # the suite's own map, by joint name, says the same
        P = PinMap(model, pm)
        np.testing.assert_array_equal(P.v(v), model.to_pinocchio_v(v))
        assert_close(P.q(q), qp, 1e-15, "q")


@pytest.mark.parametrize("name, floating", CASES)
def test_round_trips_are_exact_and_batches_map_row_by_row(name, floating):
    model, pm = both(name, floating)
    rng = np.random.default_rng(4)
    Q = np.array([random_state(model, rng)[0] for _ in range(4)])
    V = rng.uniform(-1, 1, (4, model.nv))
    np.testing.assert_array_equal(model.from_pinocchio_v(model.to_pinocchio_v(V)), V)
    QP = model.to_pinocchio_q(Q)
    assert QP.shape == (4, pm.nq)
    for k in range(4):
        np.testing.assert_array_equal(QP[k], model.to_pinocchio_q(Q[k]))
        assert_close(pin.normalize(pm, QP[k]), QP[k], 1e-12, "a valid Pinocchio configuration")
    back = model.from_pinocchio_q(QP)
    # angles come back through atan2: equal up to 2 pi and round-off
    assert_close(np.angle(np.exp(1j * (back - Q))), np.zeros_like(Q), 1e-14, "q round trip")
    np.testing.assert_array_equal(model.to_pinocchio_q(model.q_neutral), pin.neutral(pm))


def test_sizes_are_checked_and_named():
    model = dynlib.load(erd_path(ROBOTS["hyq"]))
    with pytest.raises(dynlib.errors.InputError, match="q must have 12 entries"):
        model.to_pinocchio_q(np.zeros(11))
    with pytest.raises(dynlib.errors.InputError, match="v_pin must have 12 entries"):
        model.from_pinocchio_v(np.zeros(13))
