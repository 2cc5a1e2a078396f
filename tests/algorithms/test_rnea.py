"""dynlib.algorithms.rnea: inverse dynamics, nonlinear effects, gravity torques.

Identities on the sample robots and random trees (fixed and floating base), the
pendulum closed forms, the batch dimension and argument checking. The CRBA side
of tau = M a + h is in test_crba.py; Pinocchio is in test_pinocchio.py.
"""
import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.errors import InputError
from helpers import assert_close, body_jacobian, few, random_state, sample, seeds, with_armature

TOL = 1e-10


@few()
@given(seed=seeds())
def test_nonlinear_effects_is_rnea_at_zero_acceleration(model, seed):
    q, v, _ = random_state(model, np.random.default_rng(seed))
    zero = np.zeros(model.nv)
    assert_close(dynlib.nonlinear_effects(model, q, v), dynlib.rnea(model, q, v, zero), TOL, "h = rnea(q, v, 0)")
    assert_close(dynlib.gravity_torques(model, q), dynlib.rnea(model, q, zero, zero), TOL, "g = rnea(q, 0, 0)")


@few()
@given(seed=seeds())
def test_rnea_is_affine_in_acceleration(model, seed):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    b = rng.uniform(-1, 1, model.nv)
    h = dynlib.nonlinear_effects(model, q, v)
    lhs = dynlib.rnea(model, q, v, a + 2.0 * b) - h
    rhs = (dynlib.rnea(model, q, v, a) - h) + 2.0 * (dynlib.rnea(model, q, v, b) - h)
    assert_close(lhs, rhs, TOL, "rnea affine in a")


@few()
@given(seed=seeds())
def test_gravity_torques_scale_with_gravity(model, seed):
    q, _, _ = random_state(model, np.random.default_rng(seed))
    g = dynlib.gravity_torques(model, q)
    assert_close(dynlib.gravity_torques(model.with_gravity([0, 0, -19.62]), q), 2 * g, TOL, "g linear in gravity")
    assert_close(dynlib.gravity_torques(model.with_gravity([0, 0, 0]), q), 0 * g, TOL, "g = 0 without gravity")


@few()
@given(seed=seeds())
def test_external_wrenches_enter_as_minus_body_jacobian_transpose(model, seed):
    """rnea(q, v, a, f_ext) = rnea(q, v, a) - sum_i J_i^T f_i, J_i body i's Jacobian in its frame."""
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    f_ext = rng.uniform(-5, 5, (model.nb, 6))
    expected = dynlib.rnea(model, q, v, a) - sum(body_jacobian(model, q, i).T @ f_ext[i] for i in range(model.nb))
    assert_close(dynlib.rnea(model, q, v, a, f_ext), expected, TOL, "rnea f_ext = -J^T f")


@pytest.mark.parametrize("name", ["quadruped", "biped", "arm6"])
def test_free_fall_needs_no_torque(name):
    """A floating robot at rest whose every body falls with gravity needs no generalized force:
    the root's body-frame acceleration is gravity in root axes, the joints' accelerations zero."""
    model = sample(name, floating_base=True)
    rng = np.random.default_rng(3)
    q = dynlib.random_configuration(model, rng, scale=1.0)
    R = dynlib.frame_placement(model, q, model.body_links[0])[:3, :3]
    a = np.zeros(model.nv)
    a[:3] = R.T @ model.gravity
    assert_close(dynlib.rnea(model, q, np.zeros(model.nv), a), np.zeros(model.nv), TOL, "free fall tau = 0")


@pytest.mark.parametrize("q", [0.0, 0.3, -1.2, 2.5])
def test_pendulum_closed_form(q):
    """tau = 1.001 qdd + 9.81 sin q (robots/pendulum.urdf header)."""
    model = sample("pendulum")
    assert_close(dynlib.rnea(model, [q], [0.7], [-1.3]), [1.001 * -1.3 + 9.81 * np.sin(q)], TOL, "pendulum rnea")
    assert_close(dynlib.gravity_torques(model, [q]), [9.81 * np.sin(q)], TOL, "pendulum g")


def test_double_pendulum_gravity_closed_form():
    """g = dU/dq with U = -9.81 (2 cos q1 + cos(q1 + q2)) (bobs of 1 kg, rods of 1 m)."""
    model = sample("double_pendulum")
    for q1, q2 in [(0.3, -0.4), (1.1, 2.0), (-2.0, 0.5)]:
        g1 = 9.81 * (2 * np.sin(q1) + np.sin(q1 + q2))
        g2 = 9.81 * np.sin(q1 + q2)
        assert_close(dynlib.gravity_torques(model, [q1, q2]), [g1, g2], TOL, "double pendulum g")


def test_planar_arm_has_no_gravity_torque():
    model = sample("planar3")
    q = np.random.default_rng(0).uniform(-3, 3, (5, 3))
    assert_close(dynlib.gravity_torques(model, q), np.zeros((5, 3)), TOL, "planar3 g = 0")


def test_batched_calls_equal_row_calls(model):
    rng = np.random.default_rng(11)
    states = [random_state(model, rng) for _ in range(4)]
    Q, V, A = (np.array(x) for x in zip(*states))
    F = rng.uniform(-3, 3, (4, model.nb, 6))
    out = dynlib.rnea(model, Q, V, A, F)
    assert out.shape == (4, model.nv)
    for n in range(4):
        np.testing.assert_array_equal(out[n], dynlib.rnea(model, Q[n], V[n], A[n], F[n]))
    one_f = dynlib.rnea(model, Q, V, A, F[0])   # one (nb, 6) f_ext for every row
    for n in range(4):
        np.testing.assert_array_equal(one_f[n], dynlib.rnea(model, Q[n], V[n], A[n], F[0]))
    h, g = dynlib.nonlinear_effects(model, Q, V), dynlib.gravity_torques(model, Q)
    for n in range(4):
        np.testing.assert_array_equal(h[n], dynlib.nonlinear_effects(model, Q[n], V[n]))
        np.testing.assert_array_equal(g[n], dynlib.gravity_torques(model, Q[n]))


def test_bad_arguments_name_the_argument():
    model = sample("arm6")
    q, v, a = np.zeros(6), np.zeros(6), np.zeros(6)
    with pytest.raises(InputError, match=r"^q must have 6 entries"):
        dynlib.rnea(model, np.zeros(5), v, a)
    with pytest.raises(InputError, match=r"^v "):
        dynlib.rnea(model, q, np.zeros((2, 6)), a)
    with pytest.raises(InputError, match=r"^a has a non-finite value at index 2"):
        dynlib.rnea(model, q, v, [0, 0, np.nan, 0, 0, 0])
    with pytest.raises(InputError, match=r"^a must have shape"):
        dynlib.rnea(model, q, v, np.zeros((1, 1, 6)))
    with pytest.raises(InputError, match=r"^q must be an array of numbers"):
        dynlib.rnea(model, "zero", v, a)
    with pytest.raises(InputError, match=r"^f_ext must have shape \(6, 6\)"):
        dynlib.rnea(model, q, v, a, np.zeros((5, 6)))
    with pytest.raises(InputError, match=r"^f_ext has a non-finite value"):
        dynlib.rnea(model, q, v, a, np.full((6, 6), np.inf))
    with pytest.raises(InputError, match=r"^v has a non-finite value"):
        dynlib.nonlinear_effects(model, q, [np.nan] * 6)
    with pytest.raises(InputError, match=r"^q has a non-finite value at row 1, index 0"):
        dynlib.gravity_torques(model, [np.zeros(6), [np.nan] + [0] * 5])


@few()
@given(seed=seeds())
def test_armature_adds_armature_times_acceleration_only(model, seed):
    """Pinocchio's convention: rnea = M a + h with armature on M's diagonal; h and g do not change."""
    rng = np.random.default_rng(seed)
    arm = with_armature(model, rng)
    q, v, a = random_state(model, rng)
    assert_close(dynlib.rnea(arm, q, v, a), dynlib.rnea(model, q, v, a) + arm.arrays.armature * a, TOL,
                 "rnea + armature a")
    assert_close(dynlib.nonlinear_effects(arm, q, v), dynlib.nonlinear_effects(model, q, v), TOL, "h unchanged")
