"""dynlib.algorithms.energy: kinetic and potential energy.

KE = ½ vᵀ M v, the gradient of U is g(q) (finite differences on the manifold), the
power balance dE/dt = vᵀ tau along the motion, the pendulum closed forms, the batch
dimension and argument checks.
"""
import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.errors import InputError
from helpers import SQRT_EPS, assert_close, basis, few, random_state, sample, seeds, with_armature

TOL = 1e-10


@few()
@given(seed=seeds())
def test_kinetic_energy_is_half_v_M_v(model, seed):
    q, v, _ = random_state(model, np.random.default_rng(seed))
    assert_close(dynlib.kinetic_energy(model, q, v), 0.5 * v @ dynlib.crba(model, q) @ v, TOL, "KE = v M v / 2")


@few()
@given(seed=seeds())
def test_potential_energy_gradient_is_gravity_torque(model, seed):
    """(U(q ⊕ ε e_k) - U(q ⊕ -ε e_k)) / 2ε = g_k(q), a central difference on the manifold."""
    q, _, _ = random_state(model, np.random.default_rng(seed))
    eps = 1e-5
    E = np.array([basis(model.nv, k) for k in range(model.nv)])
    Qp = dynlib.integrate(model, np.tile(q, (model.nv, 1)), eps * E)
    Qm = dynlib.integrate(model, np.tile(q, (model.nv, 1)), -eps * E)
    grad = (dynlib.potential_energy(model, Qp) - dynlib.potential_energy(model, Qm)) / (2 * eps)
    assert_close(grad, dynlib.gravity_torques(model, q), SQRT_EPS, "dU/dq = g (FD)")


@few()
@given(seed=seeds())
def test_power_balance(model, seed):
    """d/dt (KE + U) = vᵀ tau along the motion a = aba(q, v, tau) (central differences in time).

    q(t) = q ⊕ (t v + ½ t² a) has velocity v + t a + O(t²) and acceleration a at t = 0 (also
    on SE(3)), which is all a central difference of the energy sees.
    """
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    tau = rng.uniform(-5, 5, model.nv)
    a = dynlib.aba(model, q, v, tau)

    def energy(t):
        qt = dynlib.integrate(model, q, t * v + 0.5 * t * t * a)
        return dynlib.kinetic_energy(model, qt, v + t * a) + dynlib.potential_energy(model, qt)

    def central(h):
        return (energy(h) - energy(-h)) / (2 * h)

    h = 1e-4
    power = (4 * central(h / 2) - central(h)) / 3   # Richardson: O(h^4)
    scale = fd_scale(energy, h, v, tau)
    assert_close(power / scale, v @ tau / scale, SQRT_EPS, "dE/dt = v tau (FD)")


def fd_scale(energy, h, v, tau):
    """The size of the terms of a central difference of `energy` with step h: the energies differenced
    (their rounding, eps |E| / h, is the difference's error once Richardson removed the h^2 term) and
    the terms of v.tau; at least 1."""
    return max(1.0, abs(energy(h)), abs(energy(-h)), float(np.abs(v * tau).sum()))


def test_energy_of_a_robot_at_rest_is_potential_only(model):
    q, _, _ = random_state(model, np.random.default_rng(6))
    assert dynlib.kinetic_energy(model, q, np.zeros(model.nv)) == 0.0


@pytest.mark.parametrize("q, v", [(0.0, 1.0), (1.0, -0.5), (-2.2, 3.0)])
def test_pendulum_closed_form(q, v):
    """T = ½ 1.001 v², U = -9.81 cos q (bob of 1 kg, 1 m below the hinge at q = 0)."""
    model = sample("pendulum")
    assert_close(dynlib.kinetic_energy(model, [q], [v]), 0.5 * 1.001 * v * v, TOL, "pendulum KE")
    assert_close(dynlib.potential_energy(model, [q]), -9.81 * np.cos(q), TOL, "pendulum U")


def test_double_pendulum_potential_closed_form():
    model = sample("double_pendulum")
    for q1, q2 in [(0.0, 0.0), (0.5, -1.0), (2.0, 2.5)]:
        expected = -9.81 * (2 * np.cos(q1) + np.cos(q1 + q2))
        assert_close(dynlib.potential_energy(model, [q1, q2]), expected, TOL, "double pendulum U")


def test_potential_energy_is_zero_at_the_world_origin_and_linear_in_height():
    """U = -Σ m gᵀ c: lifting a floating robot by dz adds m_total 9.81 dz."""
    model = sample("quadruped", floating_base=True)
    q = dynlib.random_configuration(model, np.random.default_rng(0), scale=1.0)
    lifted = q.copy()
    lifted[2] += 0.7
    gain = dynlib.potential_energy(model, lifted) - dynlib.potential_energy(model, q)
    assert_close(gain, model.total_mass * 9.81 * 0.7, TOL, "U linear in height")
    assert dynlib.potential_energy(model.with_gravity([0, 0, 0]), q) == 0.0


def test_batched_calls_equal_row_calls(model):
    rng = np.random.default_rng(15)
    states = [random_state(model, rng) for _ in range(4)]
    Q, V, _ = (np.array(x) for x in zip(*states))
    T, U = dynlib.kinetic_energy(model, Q, V), dynlib.potential_energy(model, Q)
    assert T.shape == U.shape == (4,)
    for n in range(4):
        assert T[n] == dynlib.kinetic_energy(model, Q[n], V[n])
        assert U[n] == dynlib.potential_energy(model, Q[n])
    assert isinstance(dynlib.kinetic_energy(model, Q[0], V[0]), float)


def test_bad_arguments_name_the_argument():
    model = sample("double_pendulum")
    with pytest.raises(InputError, match=r"^v must have 2 entries"):
        dynlib.kinetic_energy(model, [0, 0], [0, 0, 0])
    with pytest.raises(InputError, match=r"^q has a non-finite value at index 1"):
        dynlib.kinetic_energy(model, [0, np.nan], [0, 0])
    with pytest.raises(InputError, match=r"^q must have 2 entries"):
        dynlib.potential_energy(model, [0.0])
    with pytest.raises(InputError, match=r"^q has a non-finite value"):
        dynlib.potential_energy(model, [np.inf, 0])


@few()
@given(seed=seeds())
def test_kinetic_energy_with_armature_is_half_v_M_v(model, seed):
    """The rotors' ½ armature v² is in the kinetic energy, so KE = ½ vᵀ M v with CRBA's M (armature included)
    and the power balance dE/dt = vᵀ tau along aba holds with armature too."""
    rng = np.random.default_rng(seed)
    model = with_armature(model, rng)
    q, v, _ = random_state(model, rng)
    assert_close(dynlib.kinetic_energy(model, q, v), 0.5 * v @ dynlib.crba(model, q) @ v, TOL, "KE = v M v / 2, armature")
    tau = rng.uniform(-5, 5, model.nv)
    a = dynlib.aba(model, q, v, tau)

    def energy(t):
        qt = dynlib.integrate(model, q, t * v + 0.5 * t * t * a)
        return dynlib.kinetic_energy(model, qt, v + t * a) + dynlib.potential_energy(model, qt)

    def central(h):
        return (energy(h) - energy(-h)) / (2 * h)

    # Richardson, as in test_power_balance: a plain central difference's error, h^2/6 times the
    # energy's third derivative, reached 1.4e-6 of the old scale where the accelerations are large
    # (arm7-fixed, seed 287, |a| ~ 50); with Richardson the worst of 6300 cases was 5e-11
    h = 1e-4
    power = (4 * central(h / 2) - central(h)) / 3
    scale = fd_scale(energy, h, v, tau)
    assert_close(power / scale, v @ tau / scale, SQRT_EPS, "dE/dt = v tau (FD), armature")
