"""dynlib.algorithms.regressor: tau = Y(q, v, a) pi, and the friction columns.

Identities on the sample robots and random trees (fixed and floating base): Y pi of
the model is RNEA; Y is linear in pi (a model with other inertias gives Y pi'); the
batch is the rows; the friction columns give dyn's joint friction. The oracle:
Pinocchio's ``computeJointTorqueRegressor`` and ``Inertia.toDynamicParameters`` on the
example-robot-data robots and random trees, fixed and floating, to 1e-12.
"""
import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.algorithms.regressor import (body_parameters, friction_dofs, friction_regressor, inertial_parameters,
                                         regressor)
from dynlib.errors import InputError
from dynlib.motion.inverse import joint_friction_torques
from helpers import PinMap, pinocchio_model, assert_close, erd_path, few, random_state, random_tree, sample, seeds

TOL = 1e-12


@few()
@given(seed=seeds())
def test_regressor_times_parameters_is_rnea(model, seed):
    q, v, a = random_state(model, np.random.default_rng(seed))
    Y = regressor(model, q, v, a)
    assert Y.shape == (model.nv, 10 * model.nb)
    assert_close(Y @ inertial_parameters(model), dynlib.rnea(model, q, v, a), TOL, "Y pi = rnea")


def test_the_armature_is_not_a_column_of_the_regressor():
    """rnea of a model with rotor inertia = Y pi + armature * a, Y the same as without it."""
    model = sample("arm7")
    rotors = model.with_armature(np.linspace(0.05, 0.4, model.nv))
    q, v, a = random_state(model, np.random.default_rng(8))
    Y = regressor(rotors, q, v, a)
    assert np.array_equal(Y, regressor(model, q, v, a))
    assert_close(Y @ inertial_parameters(rotors) + rotors.arrays.armature * a, dynlib.rnea(rotors, q, v, a), TOL,
                 "Y pi + armature a = rnea")


def _with_random_inertias(model, rng):
    """The same tree with other (physical) body inertias: a rotated solid box per body, offset."""
    from dynlib.core.spatial import spatial_inertia

    inertia = np.empty_like(model.arrays.inertia)
    for i in range(model.nb):
        m = rng.uniform(0.5, 3.0)
        a, b, c = rng.uniform(0.05, 0.5, 3)
        I = m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        inertia[i] = spatial_inertia(m, rng.uniform(-0.3, 0.3, 3), R @ I @ R.T)
    return dataclasses.replace(model, arrays=model.arrays._replace(inertia=inertia))


@few(4)
@given(seed=seeds())
def test_regressor_does_not_depend_on_the_inertias(model, seed):
    """Y is a function of the motion only: the same Y with any parameters gives that model's RNEA."""
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    other = _with_random_inertias(model, rng)
    Y = regressor(model, q, v, a)
    assert np.array_equal(Y, regressor(other, q, v, a))
    assert_close(Y @ inertial_parameters(other), dynlib.rnea(other, q, v, a), TOL, "Y pi' = rnea'")


def test_columns_of_bodies_outside_a_dofs_subtree_are_zero():
    """tau_k depends only on the bodies that DoF k carries (quadruped: one leg's DoFs, other legs' bodies)."""
    model = sample("quadruped", True)
    q, v, a = random_state(model, np.random.default_rng(3))
    Y = regressor(model, q, v, a)
    ar = model.arrays
    for k in range(model.nv):
        i = ar.dof_body[k]
        carried = np.zeros(model.nb, dtype=bool)
        carried[i:ar.subtree_end[i]] = True
        block = Y[k].reshape(model.nb, 10)
        assert not np.any(block[~carried])
        assert np.all(np.any(block[carried] != 0, axis=1))


def test_batch_is_the_rows():
    model = sample("arm7")
    rng = np.random.default_rng(1)
    states = [random_state(model, rng) for _ in range(5)]
    Q, V, A = (np.array(x) for x in zip(*states))
    Y = regressor(model, Q, V, A)
    assert Y.shape == (5, model.nv, 10 * model.nb)
    for n in range(5):
        assert np.array_equal(Y[n], regressor(model, Q[n], V[n], A[n]))


def test_large_batch_on_threads_is_bit_identical(monkeypatch):
    model = sample("arm6")
    rng = np.random.default_rng(2)
    n = 5000
    Q = rng.uniform(-2, 2, (n, model.nq))
    V, A = rng.uniform(-1, 1, (2, n, model.nv))
    monkeypatch.setenv("DYN_THREADS", "1")
    one = regressor(model, Q, V, A)
    monkeypatch.setenv("DYN_THREADS", "2")
    assert np.array_equal(regressor(model, Q, V, A), one)


def test_gravity_enters_the_regressor():
    """Static: Y(q, 0, 0) pi is the gravity torque; without gravity it is zero."""
    model = sample("arm6")
    q = random_state(model, np.random.default_rng(4))[0]
    z = np.zeros(model.nv)
    assert_close(regressor(model, q, z, z) @ inertial_parameters(model), dynlib.gravity_torques(model, q), TOL,
                 "Y(q, 0, 0) pi = g")
    assert not np.any(regressor(model.with_gravity([0, 0, 0]), q, z, z))


def test_friction_columns_give_dyns_joint_friction():
    model = sample("arm7")
    v = np.random.default_rng(5).uniform(-0.01, 0.01, (50, model.nv))
    dofs = friction_dofs(model)
    assert np.array_equal(dofs, np.arange(model.nv))
    F = friction_regressor(model, v, ("viscous", "coulomb", "offset"), smoothing=1e-3)
    assert F.shape == (50, model.nv, 3 * model.nv)
    phi = np.concatenate([model.arrays.damping, model.arrays.friction, np.zeros(model.nv)])
    assert_close(F @ phi, joint_friction_torques(model, v, 1e-3), TOL, "F phi = joint friction")
    assert np.array_equal(F[:, np.arange(7), 14 + np.arange(7)], np.ones((50, 7)))


def test_friction_columns_skip_the_free_flyer():
    model = sample("quadruped", True)
    dofs = friction_dofs(model)
    assert np.array_equal(dofs, np.arange(6, model.nv))
    F = friction_regressor(model, np.ones(model.nv), ("viscous",))
    assert F.shape == (model.nv, model.nv - 6)
    assert not np.any(F[:6])


@pytest.mark.parametrize("call, message", [
    (lambda m: regressor(m, np.zeros(m.nq + 1), np.zeros(m.nv), np.zeros(m.nv)), "q must have"),
    (lambda m: regressor(m, np.zeros(m.nq), np.full(m.nv, np.nan), np.zeros(m.nv)), "v has a non-finite"),
    (lambda m: friction_regressor(m, np.zeros(m.nv), ("stiction",)), "friction terms"),
    (lambda m: friction_regressor(m, np.zeros(m.nv), smoothing=0.0), "smoothing"),
])
def test_bad_arguments(call, message):
    with pytest.raises(InputError, match=message):
        call(sample("arm6"))


def test_public_api():
    assert dynlib.regressor is regressor


# -- Pinocchio -------------------------------------------------------------------------------

pin_cases = ["ur5_robot", "panda", "solo12", "talos_reduced", "kinova", "allegro_right_hand", "tree20", "tree9"]
ERD = {"ur5_robot": "ur_description/urdf/ur5_robot.urdf", "panda": "panda_description/urdf/panda.urdf",
       "solo12": "solo_description/robots/solo12.urdf", "talos_reduced": "talos_data/robots/talos_reduced.urdf",
       "kinova": "kinova_description/robots/kinova.urdf",
       "allegro_right_hand": "allegro_hand_description/urdf/allegro_right_hand.urdf"}


@functools.lru_cache(maxsize=None)
def _pair(name, floating):
    pin = pytest.importorskip("pinocchio")
    if name.startswith("tree"):
        model = random_tree(int(name[4:]), 11, floating_base=floating)
        path = model.source
    else:
        path = erd_path(ERD[name])
        model = dynlib.load(path, floating_base=floating)
    pm = pinocchio_model(path, floating)
    return model, pm, PinMap(model, pm)


@pytest.mark.oracle
@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("name", pin_cases)
def test_regressor_is_pinocchios(name, floating):
    import pinocchio as pin

    model, pm, P = _pair(name, floating)
    pd = pm.createData()
    cols = np.concatenate([10 * (j - 1) + np.arange(10) for j in P.jid])
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        Yp = np.asarray(pin.computeJointTorqueRegressor(pm, pd, P.q(q), P.v(v), P.v(a)))
        assert_close(regressor(model, q, v, a), Yp[P.perm][:, cols], TOL, "regressor vs Pinocchio", name)


@pytest.mark.oracle
@pytest.mark.parametrize("name", pin_cases)
def test_parameters_are_pinocchios(name):
    model, pm, P = _pair(name, False)
    for k, jid in enumerate(P.jid):
        assert_close(body_parameters(model.arrays.inertia[k]), pm.inertias[jid].toDynamicParameters(), TOL,
                     "dynamic parameters vs Pinocchio", model.joint_names[k])
