"""dynlib.algorithms.aba: forward dynamics by the articulated-body algorithm.

aba∘rnea = identity (with and without external wrenches), aba = M^-1 (tau - h),
the pendulum closed form, massless subtrees, the batch dimension and argument checks.
"""
import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.errors import DynError, InputError, ModelError
from helpers import assert_close, few, random_state, sample, seeds, with_armature

TOL = 1e-10


@few()
@given(seed=seeds())
def test_aba_inverts_rnea(model, seed):
    q, v, a = random_state(model, np.random.default_rng(seed))
    tau = dynlib.rnea(model, q, v, a)
    assert_close(dynlib.aba(model, q, v, tau), a, TOL, "aba(rnea(a)) = a")


@few()
@given(seed=seeds())
def test_aba_inverts_rnea_with_external_wrenches(model, seed):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    f_ext = rng.uniform(-5, 5, (model.nb, 6))
    tau = dynlib.rnea(model, q, v, a, f_ext)
    assert_close(dynlib.aba(model, q, v, tau, f_ext), a, TOL, "aba(rnea(a, f), f) = a")


@few()
@given(seed=seeds())
def test_aba_solves_the_mass_matrix_equation(model, seed):
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    tau = rng.uniform(-5, 5, model.nv)
    expected = np.linalg.solve(dynlib.crba(model, q), tau - dynlib.nonlinear_effects(model, q, v))
    assert_close(dynlib.aba(model, q, v, tau), expected, 1e-9, "aba = M^-1 (tau - h)")


@pytest.mark.parametrize("q, v, tau", [(0.0, 0.0, 1.0), (0.4, -2.0, 0.0), (-2.5, 1.0, 3.0)])
def test_pendulum_closed_form(q, v, tau):
    """qdd = (tau - 9.81 sin q) / 1.001, whatever the velocity."""
    a = dynlib.aba(sample("pendulum"), [q], [v], [tau])
    assert_close(a, [(tau - 9.81 * np.sin(q)) / 1.001], TOL, "pendulum aba")


def test_free_floating_robot_at_rest_falls_with_gravity():
    for name in ("quadruped", "biped"):
        model = sample(name, floating_base=True)
        q = dynlib.random_configuration(model, np.random.default_rng(2), scale=1.0)
        R = dynlib.frame_placement(model, q, model.body_links[0])[:3, :3]
        expected = np.zeros(model.nv)
        expected[:3] = R.T @ model.gravity
        zero = np.zeros(model.nv)
        assert_close(dynlib.aba(model, q, zero, zero), expected, TOL, "free fall")


MASSLESS = """<?xml version="1.0"?>
<robot name="massless">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
  <link name="finger"/>
  <link name="fingertip"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="finger_joint" type="prismatic">
    <parent link="arm"/><child link="finger"/><origin xyz="0.3 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="tip_joint" type="fixed"><parent link="finger"/><child link="fingertip"/></joint>
</robot>
"""


def test_massless_moving_subtree_is_a_model_error(tmp_path):
    path = tmp_path / "massless.urdf"
    path.write_text(MASSLESS)
    model = dynlib.load(path)
    assert model.massless_joints == ("finger_joint",)
    zero = np.zeros(model.nv)
    with pytest.raises(ModelError, match="finger_joint") as info:
        dynlib.aba(model, zero, zero, zero)
    assert "shoulder" not in str(info.value)
    assert info.value.file == str(path)
    # inverse dynamics stays defined
    assert np.all(np.isfinite(dynlib.rnea(model, zero, zero, zero)))


def test_singular_mass_matrix_is_a_dyn_error():
    # a free-flying pendulum: massless root, the hinge through it
    model = sample("pendulum", floating_base=True)
    zero = np.zeros(model.nv)
    with pytest.raises(DynError):
        dynlib.aba(model, model.q_neutral, zero, zero)


def test_batched_calls_equal_row_calls(model):
    rng = np.random.default_rng(13)
    states = [random_state(model, rng) for _ in range(4)]
    Q, V, T = (np.array(x) for x in zip(*states))
    F = rng.uniform(-3, 3, (4, model.nb, 6))
    out = dynlib.aba(model, Q, V, T, F)
    assert out.shape == (4, model.nv)
    for n in range(4):
        np.testing.assert_array_equal(out[n], dynlib.aba(model, Q[n], V[n], T[n], F[n]))
    one_f = dynlib.aba(model, Q, V, T, F[1])
    for n in range(4):
        np.testing.assert_array_equal(one_f[n], dynlib.aba(model, Q[n], V[n], T[n], F[1]))


def test_bad_arguments_name_the_argument():
    model = sample("quadruped", floating_base=True)
    q, v = model.q_neutral, np.zeros(18)
    with pytest.raises(InputError, match=r"^q must have 19 entries"):
        dynlib.aba(model, np.zeros(18), v, v)
    with pytest.raises(InputError, match=r"^tau must have 18 entries"):
        dynlib.aba(model, q, v, np.zeros(19))
    with pytest.raises(InputError, match=r"^v has a non-finite value at index 4"):
        dynlib.aba(model, q, np.where(np.arange(18) == 4, np.nan, 0.0), v)
    with pytest.raises(InputError, match=r"^tau has shape \(3, 18\), which does not match"):
        dynlib.aba(model, np.tile(q, (2, 1)), np.zeros((2, 18)), np.zeros((3, 18)))
    with pytest.raises(InputError, match=r"^f_ext must have shape \(13, 6\)"):
        dynlib.aba(model, q, v, v, np.zeros((13, 3)))


@few()
@given(seed=seeds())
def test_aba_inverts_rnea_with_armature(model, seed):
    """Rotor inertias on D_k (ABA) and armature a in RNEA: still each other's inverse, and aba = M^-1 (tau - h)
    with M from CRBA (armature on its diagonal)."""
    rng = np.random.default_rng(seed)
    model = with_armature(model, rng)
    q, v, a = random_state(model, rng)
    f_ext = rng.uniform(-5, 5, (model.nb, 6))
    assert_close(dynlib.aba(model, q, v, dynlib.rnea(model, q, v, a, f_ext), f_ext), a, TOL, "aba(rnea(a)) = a, armature")
    tau = rng.uniform(-5, 5, model.nv)
    expected = np.linalg.solve(dynlib.crba(model, q), tau - dynlib.nonlinear_effects(model, q, v))
    assert_close(dynlib.aba(model, q, v, tau), expected, 1e-9, "aba = M^-1 (tau - h), armature")


@few()
@given(seed=seeds())
def test_aba_solve_gives_the_columns_of_the_inverse_mass_matrix(model, seed):
    """aba_solve on the factorization an aba_kernel call left: (M + armature)⁻¹ tau for another tau at the same q
    (the position limits' columns M⁻¹ e_j, dynlib.sim.joint_limits), whatever that call's v, tau and wrenches."""
    from dynlib.algorithms.aba import aba_kernel, aba_solve

    rng = np.random.default_rng(seed)
    model = model.with_armature(rng.uniform(0, 0.05, model.nv))
    m, d = model.arrays, model.create_data()
    q, v, _ = random_state(model, rng)
    aba_kernel(m, d, q, v, rng.uniform(-5, 5, model.nv), rng.uniform(-5, 5, (model.nb, 6)), m.gravity,
               np.zeros(model.nv), np.zeros(model.nv))
    M = dynlib.crba(model, q)
    for tau in (np.eye(model.nv)[rng.integers(model.nv)], rng.uniform(-5, 5, model.nv)):
        out = np.zeros(model.nv)
        aba_solve(m.parent, m.idx_v, m.nvj, m.S, d.lR, d.lp, d.U, d.Dinv, d.f, d.u, d.a, tau, out)
        assert_close(out, np.linalg.solve(M, tau), 1e-9, "aba_solve = M^-1 tau")
