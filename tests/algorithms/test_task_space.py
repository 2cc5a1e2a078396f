"""dynlib.algorithms.task_space: operational-space inertia Λ and bias μ of a frame.

Λ and μ against their definitions computed with numpy from dynlib's M, h, J and J̇v
(the LOCAL_WORLD_ALIGNED Jacobian), the task-space equation of motion
Λ ẍ + μ = F when the frame has six independent directions, the batch dimension
and argument checks.
"""
import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.errors import InputError, ModelError
from helpers import assert_close, few, random_state, sample, seeds

TOL = 1e-10


def last_moving_frame(model):
    return max(f for f in range(model.nframes) if model.arrays.frame_body[f] >= 0)


def definition(model, q, v, frame):
    J = dynlib.frame_jacobian(model, q, frame, "local_world_aligned")
    M = dynlib.crba(model, q)
    A = J @ np.linalg.solve(M, J.T)
    Lam = np.linalg.pinv(A, rcond=1e-12)
    rhs = J @ np.linalg.solve(M, dynlib.nonlinear_effects(model, q, v)) - dynlib.frame_jacobian_dot_times_v(model, q, v, frame)
    s = np.linalg.svd(A, compute_uv=False)
    kept = s[s > 1e-12 * s[0]]
    return Lam, Lam @ rhs, kept[0] / kept[-1]


@few()
@given(seed=seeds())
def test_matches_the_definition(model, seed):
    """Λ = (J M⁻¹ Jᵀ)⁺ and μ = Λ (J M⁻¹ h − J̇v)."""
    q, v, _ = random_state(model, np.random.default_rng(seed))
    f = last_moving_frame(model)
    Lam, mu = dynlib.task_space_inertia(model, q, f, v)
    Lam_ref, mu_ref, cond = definition(model, q, v, f)
    scale = max(1.0, float(np.abs(Lam_ref).max()))
    tol = 1e-14 * max(1e4, cond)   # an inverse is as accurate as its matrix is well conditioned
    assert_close(Lam / scale, Lam_ref / scale, tol, "Lambda = (J M^-1 J^T)^+ (tol 1e-14 cond)")
    assert_close(mu / scale, mu_ref / scale, tol, "mu = Lambda (J M^-1 h - Jdot v) (tol 1e-14 cond)")
    np.testing.assert_allclose(Lam, Lam.T, rtol=0, atol=1e-9 * scale)
    assert np.linalg.eigvalsh(0.5 * (Lam + Lam.T)).min() > -1e-9 * scale


@pytest.mark.parametrize("name, floating, frame", [
    ("arm6", False, "tool0"), ("arm7", False, "flange"), ("quadruped", True, "lf_foot"),
    ("biped", True, "left_foot"), ("arm7", False, "link4_cover")])
def test_task_space_equation_of_motion(name, floating, frame):
    """With six independent directions, tau = Jᵀ F gives the frame ẍ = J a + J̇v with Λ ẍ + μ = F."""
    model = sample(name, floating)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v, _ = random_state(model, rng)
        J = dynlib.frame_jacobian(model, q, frame)
        if np.linalg.matrix_rank(J) < 6:
            continue
        F = rng.uniform(-10, 10, 6)
        a = dynlib.aba(model, q, v, J.T @ F)
        xdd = J @ a + dynlib.frame_jacobian_dot_times_v(model, q, v, frame)
        Lam, mu = dynlib.task_space_inertia(model, q, frame, v)
        assert_close(Lam @ xdd + mu, F, 1e-8, "Lambda xdd + mu = F")


def test_pendulum_sees_its_bob_inertia_along_the_motion():
    """One DoF: J M⁻¹ Jᵀ = j jᵀ / 1.001 (j the tip's Jacobian column), so Λ = 1.001 j jᵀ / |j|⁴."""
    model = sample("pendulum")
    q = np.array([0.4])
    J = dynlib.frame_jacobian(model, q, "tip")[:, 0]
    Lam, _ = dynlib.task_space_inertia(model, q, "tip")
    expected = 1.001 * np.outer(J, J) / (J @ J) ** 2
    assert_close(Lam, expected, TOL, "pendulum Lambda")


def test_zero_velocity_is_the_default(model):
    q, _, _ = random_state(model, np.random.default_rng(3))
    f = last_moving_frame(model)
    Lam0, mu0 = dynlib.task_space_inertia(model, q, f)
    Lam, mu = dynlib.task_space_inertia(model, q, f, np.zeros(model.nv))
    np.testing.assert_array_equal(Lam0, Lam)
    np.testing.assert_array_equal(mu0, mu)


def test_batched_calls_equal_row_calls(model):
    rng = np.random.default_rng(18)
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, _ = (np.array(x) for x in zip(*states))
    f = last_moving_frame(model)
    Lam, mu = dynlib.task_space_inertia(model, Q, f, V)
    assert Lam.shape == (3, 6, 6) and mu.shape == (3, 6)
    for n in range(3):
        Ln, mn = dynlib.task_space_inertia(model, Q[n], f, V[n])
        np.testing.assert_array_equal(Lam[n], Ln)
        np.testing.assert_array_equal(mu[n], mn)
    Lam0, _ = dynlib.task_space_inertia(model, Q, f)   # v defaults to zeros of the batch shape
    np.testing.assert_array_equal(Lam0[2], dynlib.task_space_inertia(model, Q[2], f)[0])


def test_bad_arguments_name_the_argument(tmp_path):
    model = sample("arm6")
    with pytest.raises(InputError, match=r"no frame \(link\) 'tool'"):
        dynlib.task_space_inertia(model, np.zeros(6), "tool")
    with pytest.raises(InputError, match=r"^q has a non-finite value"):
        dynlib.task_space_inertia(model, [np.nan] * 6, "tool0")
    with pytest.raises(InputError, match=r"^v must have 6 entries"):
        dynlib.task_space_inertia(model, np.zeros(6), "tool0", np.zeros(5))
    path = tmp_path / "ghost.urdf"
    path.write_text("""<robot name="ghost"><link name="base"/><link name="ghost"/>
      <joint name="spin" type="continuous"><parent link="base"/><child link="ghost"/><axis xyz="0 0 1"/></joint>
    </robot>""")
    with pytest.raises(ModelError, match="spin"):
        dynlib.task_space_inertia(dynlib.load(path), [0.0], "ghost")


@pytest.mark.parametrize("name, floating", [("arm7", False), ("quadruped", True)])
def test_one_call_equals_the_batch_row_bit_for_bit(name, floating):
    # (task_space_kernel allocates, so it has no one-call kernel, dynlib._numba.one: one call takes the batch path)
    model = sample(name, floating_base=floating)
    rng = np.random.default_rng(5)
    Q, V = (np.array(x) for x in zip(*[random_state(model, rng)[:2] for _ in range(3)]))
    frame = last_moving_frame(model)
    L, mu = dynlib.task_space_inertia(model, Q, frame, V)
    for n in range(3):
        Ln, mun = dynlib.task_space_inertia(model, Q[n].copy(), frame, V[n].copy())
        np.testing.assert_array_equal(Ln, L[n])
        np.testing.assert_array_equal(mun, mu[n])
