"""dynlib.algorithms.coriolis: the Coriolis matrix C(q, v).

C v = h - g, Ṁ - 2C skew-symmetric with Ṁ by central differences along v
(Ṁ = C + Cᵀ), C linear in v, the double pendulum closed form, the batch dimension
and argument checks. Every call goes through `helpers.coriolis_poisoned`, so an entry
that the kernel leaves unwritten reads NaN instead of whatever the memory held.
"""
import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.errors import InputError
from helpers import SQRT_EPS, assert_close, few, random_state, sample, seeds
from helpers import coriolis_poisoned as coriolis

TOL = 1e-10

@few()
@given(seed=seeds())
def test_coriolis_times_v_is_h_minus_g(model, seed):
    q, v, _ = random_state(model, np.random.default_rng(seed))
    expected = dynlib.nonlinear_effects(model, q, v) - dynlib.gravity_torques(model, q)
    assert_close(coriolis(model, q, v) @ v, expected, TOL, "C v = h - g")


@few()
@given(seed=seeds())
def test_mass_matrix_derivative_minus_twice_coriolis_is_skew(model, seed):
    """Ṁ by the fourth-order central difference along q ⊕ s v (truncation ~h⁴, round-off ~eps/h);
    Ṁ - 2C skew-symmetric, i.e. Ṁ = C + Cᵀ."""
    q, v, _ = random_state(model, np.random.default_rng(seed))
    h = 1e-4
    steps = np.array([2 * h, h, -h, -2 * h])[:, None] * v
    M2, M1, Mm1, Mm2 = dynlib.crba(model, dynlib.integrate(model, np.array([q] * 4), steps))
    Mdot = (8 * (M1 - Mm1) - (M2 - Mm2)) / (12 * h)
    C = coriolis(model, q, v)
    N = Mdot - 2 * C
    scale = max(1.0, float(np.abs(Mdot).max()))
    assert_close((N + N.T) / scale, np.zeros_like(N), SQRT_EPS, "Mdot - 2C skew (FD)")
    assert_close(C + C.T, Mdot, SQRT_EPS, "Mdot = C + C^T (FD)")


@few()
@given(seed=seeds())
def test_coriolis_is_linear_in_v(model, seed):
    rng = np.random.default_rng(seed)
    q, v, w = random_state(model, rng)
    assert_close(coriolis(model, q, 2.5 * v - w), 2.5 * coriolis(model, q, v) - coriolis(model, q, w), TOL,
                 "C linear in v")
    assert_close(coriolis(model, q, np.zeros(model.nv)), np.zeros((model.nv, model.nv)), TOL, "C(q, 0) = 0")


def test_double_pendulum_closed_form():
    """With M12 = 1 + cos q2 + I_c: C = -sin q2 [[v2, v1 + v2], [-v1, 0]] (Christoffel symbols)."""
    model = sample("double_pendulum")
    for q, v in [((0.3, 1.2), (0.5, -2.0)), ((-2.0, -0.7), (1.5, 0.25))]:
        s2 = np.sin(q[1])
        expected = -s2 * np.array([[v[1], v[0] + v[1]], [-v[0], 0.0]])
        assert_close(coriolis(model, q, v), expected, TOL, "double pendulum C")


def test_batched_calls_equal_row_calls(model):
    rng = np.random.default_rng(16)
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, _ = (np.array(x) for x in zip(*states))
    out = coriolis(model, Q, V)
    assert out.shape == (3, model.nv, model.nv)
    assert np.all(np.isfinite(out))
    for n in range(3):
        np.testing.assert_array_equal(out[n], coriolis(model, Q[n], V[n]))


def test_bad_arguments_name_the_argument():
    model = sample("planar3")
    with pytest.raises(InputError, match=r"^v must have 3 entries"):
        dynlib.coriolis_matrix(model, np.zeros(3), np.zeros(2))
    with pytest.raises(InputError, match=r"^q has a non-finite value at index 0"):
        dynlib.coriolis_matrix(model, [np.nan, 0, 0], np.zeros(3))
