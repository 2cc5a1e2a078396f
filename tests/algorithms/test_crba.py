"""dynlib.algorithms.crba: the joint-space inertia matrix M(q).

CRBA columns against RNEA differences, tau = M a + h, symmetry and positive
definiteness, the closed forms of the pendulum, double pendulum and planar 3-link
arm, the batch dimension and argument checking.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dynlib
from dynlib.errors import InputError
from helpers import assert_close, basis, few, random_state, sample, seeds, with_armature

TOL = 1e-10


@few()
@given(seed=seeds())
def test_columns_are_rnea_differences(model, seed):
    """M[:, j] = rnea(q, 0, e_j) - g(q)."""
    q, _, _ = random_state(model, np.random.default_rng(seed))
    g = dynlib.gravity_torques(model, q)
    zero = np.zeros(model.nv)
    expected = np.column_stack([dynlib.rnea(model, q, zero, basis(model.nv, j)) - g for j in range(model.nv)])
    assert_close(dynlib.crba(model, q), expected, TOL, "crba columns = rnea(e_j) - g")


@few()
@given(seed=seeds())
def test_inverse_dynamics_is_mass_matrix_times_acceleration_plus_bias(model, seed):
    q, v, a = random_state(model, np.random.default_rng(seed))
    expected = dynlib.crba(model, q) @ a + dynlib.nonlinear_effects(model, q, v)
    assert_close(dynlib.rnea(model, q, v, a), expected, TOL, "tau = M a + h")


@few()
@given(seed=seeds())
def test_mass_matrix_is_symmetric_positive_definite(model, seed):
    q, _, _ = random_state(model, np.random.default_rng(seed))
    M = dynlib.crba(model, q)
    np.testing.assert_array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 0


def test_mass_matrix_does_not_depend_on_gravity(model):
    q, _, _ = random_state(model, np.random.default_rng(5))
    np.testing.assert_array_equal(dynlib.crba(model.with_gravity([3, -2, 1]), q), dynlib.crba(model, q))


def test_floating_base_mass_matrix_top_left_is_total_mass():
    """For a free-flyer, M[:3, :3] = m_total I (body-frame linear velocity of the root)."""
    for name in ("quadruped", "biped", "arm7"):
        model = sample(name, floating_base=True)
        q = dynlib.random_configuration(model, np.random.default_rng(1), scale=1.0)
        assert_close(dynlib.crba(model, q)[:3, :3], model.total_mass * np.eye(3), TOL, "M[:3,:3] = m I")


def planar_mass_matrix(q, L=(1.0, 0.8, 0.6), m=(3.0, 2.0, 1.0), lc=(0.5, 0.4, 0.3),
                       Izz=(0.25, 0.10666666666666667, 0.03)):
    """The closed form of robots/planar3.urdf's header comment, for n links."""
    n = len(q)
    th = np.cumsum(q)
    o = np.zeros((n + 1, 2))
    for i in range(n):
        o[i + 1] = o[i] + L[i] * np.array([np.cos(th[i]), np.sin(th[i])])
    M = np.zeros((n, n))
    for i in range(n):
        p = o[i] + lc[i] * np.array([np.cos(th[i]), np.sin(th[i])])
        Jv = np.zeros((2, n))
        for j in range(i + 1):
            d = p - o[j]
            Jv[:, j] = (-d[1], d[0])
        M += m[i] * Jv.T @ Jv
        M[:i + 1, :i + 1] += Izz[i]
    return M


def test_planar_arm_at_zero_matches_header():
    expected = [[9.46666666666667, 3.56666666666667, 0.66], [3.56666666666667, 1.66666666666667, 0.36],
                [0.66, 0.36, 0.12]]
    np.testing.assert_allclose(dynlib.crba(sample("planar3"), np.zeros(3)), expected, rtol=0, atol=1e-13)


@few(20)
@given(q=st.lists(st.floats(-np.pi, np.pi), min_size=3, max_size=3))
def test_planar_arm_closed_form(q):
    assert_close(dynlib.crba(sample("planar3"), q), planar_mass_matrix(np.array(q)), TOL, "planar3 M closed form")


@pytest.mark.parametrize("q", [-2.0, 0.0, 1.0])
def test_pendulum_closed_form(q):
    assert_close(dynlib.crba(sample("pendulum"), [q]), [[1.001]], TOL, "pendulum M")


@few(20)
@given(q1=st.floats(-np.pi, np.pi), q2=st.floats(-np.pi, np.pi))
def test_double_pendulum_closed_form(q1, q2):
    """The header comment of robots/double_pendulum.urdf (m = l = 1, I_c = 0.001)."""
    c2 = np.cos(q2)
    M11 = 1 + (1 + 1 + 2 * c2) + 2 * 0.001
    M12 = (1 + c2) + 0.001
    M22 = 1 + 0.001
    assert_close(dynlib.crba(sample("double_pendulum"), [q1, q2]), [[M11, M12], [M12, M22]], TOL,
                 "double pendulum M")


def test_batched_calls_equal_row_calls(model):
    rng = np.random.default_rng(12)
    Q = np.array([dynlib.random_configuration(model, rng, scale=1.0) for _ in range(4)])
    out = dynlib.crba(model, Q)
    assert out.shape == (4, model.nv, model.nv)
    for n in range(4):
        np.testing.assert_array_equal(out[n], dynlib.crba(model, Q[n]))


def test_bad_arguments_name_the_argument():
    model = sample("arm7")
    with pytest.raises(InputError, match=r"^q must have 7 entries"):
        dynlib.crba(model, np.zeros(8))
    with pytest.raises(InputError, match=r"^q has a non-finite value at index 3"):
        dynlib.crba(model, [0, 0, 0, np.inf, 0, 0, 0])
    with pytest.raises(InputError, match=r"^q must have shape"):
        dynlib.crba(model, np.zeros((2, 2, 7)))


@few()
@given(seed=seeds())
def test_armature_is_on_the_diagonal_and_in_the_rnea_columns(model, seed):
    """crba(armature) = crba + diag(armature), and its columns are still rnea(e_j) - g."""
    rng = np.random.default_rng(seed)
    arm = with_armature(model, rng)
    q, _, _ = random_state(model, rng)
    M = dynlib.crba(arm, q)
    assert_close(M, dynlib.crba(model, q) + np.diag(arm.arrays.armature), 1e-14, "M + diag(armature)")
    g = dynlib.gravity_torques(arm, q)
    zero = np.zeros(model.nv)
    expected = np.column_stack([dynlib.rnea(arm, q, zero, basis(model.nv, j)) - g for j in range(model.nv)])
    assert_close(M, expected, TOL, "crba columns = rnea(e_j) - g, armature")
