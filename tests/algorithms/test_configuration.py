"""dynlib.algorithms.configuration: q ⊕ v, q1 ⊖ q0 and random configurations.

Round trips integrate∘difference and difference∘integrate, unit quaternions, the
one-parameter subgroup property of the free-flyer and planar exponentials, closed
forms of pure translations and rotations, random configurations within limits,
the batch dimension and argument checks. Pinocchio's integrate/difference are in
test_pinocchio.py.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dynlib
from dynlib.core import joints as J
from dynlib.errors import InputError
from helpers import assert_close, few, random_state, sample, seeds

TOL = 1e-10


def quaternion_slices(model):
    ar = model.arrays
    return [slice(ar.idx_q[i] + 3, ar.idx_q[i] + 7) for i in range(model.nb) if ar.jtype[i] == J.FREEFLYER]


def same_configuration(model, q1, q2):
    """q with each quaternion's sign chosen like q2's (q and -q are the same rotation)."""
    q1 = np.array(q1, dtype=float)
    for s in quaternion_slices(model):
        if q1[s] @ q2[s] < 0:
            q1[s] = -q1[s]
    return q1


@few()
@given(seed=seeds())
def test_difference_inverts_integrate(model, seed):
    """(q ⊕ v) ⊖ q = v for rotations below π."""
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    assert_close(dynlib.difference(model, q, dynlib.integrate(model, q, v)), v, TOL, "(q + v) - q = v")


@few()
@given(seed=seeds())
def test_integrate_inverts_difference(model, seed):
    """q0 ⊕ (q1 ⊖ q0) = q1 for any two configurations."""
    rng = np.random.default_rng(seed)
    q0, q1 = random_state(model, rng)[0], random_state(model, rng)[0]
    back = dynlib.integrate(model, q0, dynlib.difference(model, q0, q1))
    assert_close(same_configuration(model, back, q1), q1, TOL, "q0 + (q1 - q0) = q1")


@few()
@given(seed=seeds(), scale=st.floats(0.0, 50.0))
def test_quaternions_stay_unit(model, seed, scale):
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    out = dynlib.integrate(model, q, scale * v)
    for s in quaternion_slices(model):
        assert abs(np.linalg.norm(out[s]) - 1.0) < 1e-14


@few()
@given(seed=seeds(), t1=st.floats(-2.0, 2.0), t2=st.floats(-2.0, 2.0))
def test_integration_along_one_velocity_composes(model, seed, t1, t2):
    """q ⊕ t1 v ⊕ t2 v = q ⊕ (t1 + t2) v: exp(t v) is a one-parameter subgroup."""
    q, v, _ = random_state(model, np.random.default_rng(seed))
    twice = dynlib.integrate(model, dynlib.integrate(model, q, t1 * v), t2 * v)
    once = dynlib.integrate(model, q, (t1 + t2) * v)
    assert_close(same_configuration(model, twice, once), once, TOL, "q + t1 v + t2 v = q + (t1 + t2) v")


def test_zero_motion():
    model = sample("biped", floating_base=True)
    q = dynlib.random_configuration(model, 5)
    np.testing.assert_allclose(dynlib.integrate(model, q, np.zeros(model.nv)), q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(dynlib.difference(model, q, q), np.zeros(model.nv), rtol=0, atol=1e-15)


def test_free_flyer_translation_is_expressed_in_the_body_frame():
    """A pure linear velocity moves the root by R v (v in the root frame)."""
    model = sample("quadruped", floating_base=True)
    q = dynlib.random_configuration(model, 1)
    R = dynlib.frame_placement(model, q, "trunk")[:3, :3]
    v = np.zeros(model.nv)
    v[:3] = (0.3, -1.0, 2.0)
    out = dynlib.integrate(model, q, v)
    assert_close(out[:3], q[:3] + R @ v[:3], TOL, "free-flyer translation")
    assert_close(out[3:], q[3:], TOL, "free-flyer translation keeps the rest")


def test_free_flyer_rotation_about_a_body_axis():
    """From the identity, ω = (0, 0, θ) gives the quaternion (0, 0, sin θ/2, cos θ/2)."""
    model = sample("quadruped", floating_base=True)
    for theta in (0.1, 1.0, 3.0):
        v = np.zeros(model.nv)
        v[5] = theta
        out = dynlib.integrate(model, model.q_neutral, v)
        assert_close(out[:7], [0, 0, 0, 0, 0, np.sin(theta / 2), np.cos(theta / 2)], TOL, "free-flyer rotation")


def test_free_flyer_screw_motion():
    """ω = (0, 0, w) with v = (u, 0, 0) from the identity: a circle of radius u / w in the x-y plane."""
    model = sample("biped", floating_base=True)
    u, w = 0.6, 1.3
    v = np.zeros(model.nv)
    v[0], v[5] = u, w
    out = dynlib.integrate(model, model.q_neutral, v)
    r = u / w
    assert_close(out[:3], [r * np.sin(w), r * (1 - np.cos(w)), 0.0], TOL, "free-flyer screw")


def test_difference_takes_the_shorter_rotation():
    model = sample("quadruped", floating_base=True)
    q1 = model.q_neutral.copy()
    q1[3:7] = [0, 0, -np.sin(0.2), -np.cos(0.2)]   # the rotation of 0.4 rad about z, sign flipped
    d = dynlib.difference(model, model.q_neutral, q1)
    assert_close(d[3:6], [0, 0, 0.4], TOL, "shorter rotation")


def test_other_joints_add():
    model = sample("arm7")
    q, v, _ = random_state(model, np.random.default_rng(0))
    np.testing.assert_array_equal(dynlib.integrate(model, q, v), q + v)
    np.testing.assert_array_equal(dynlib.difference(model, q, q + v), (q + v) - q)


def test_random_configurations_respect_the_limits(model):
    rng = np.random.default_rng(8)
    for _ in range(20):
        q = dynlib.random_configuration(model, rng)
        assert q.shape == (model.nq,)
        assert np.all(q >= model.lower) and np.all(q <= model.upper)
        for s in quaternion_slices(model):
            assert abs(np.linalg.norm(q[s]) - 1.0) < 1e-14
    np.testing.assert_array_equal(dynlib.random_configuration(model, 3), dynlib.random_configuration(model, 3))


def test_batched_calls_equal_row_calls(model):
    rng = np.random.default_rng(19)
    states = [random_state(model, rng) for _ in range(4)]
    Q, V, _ = (np.array(x) for x in zip(*states))
    Q1 = dynlib.integrate(model, Q, V)
    D = dynlib.difference(model, Q, Q1)
    assert Q1.shape == (4, model.nq) and D.shape == (4, model.nv)
    for n in range(4):
        np.testing.assert_array_equal(Q1[n], dynlib.integrate(model, Q[n], V[n]))
        np.testing.assert_array_equal(D[n], dynlib.difference(model, Q[n], Q1[n]))


def test_bad_arguments_name_the_argument():
    model = sample("biped", floating_base=True)
    q, v = model.q_neutral, np.zeros(model.nv)
    with pytest.raises(InputError, match=r"^v_dt must have 14 entries"):
        dynlib.integrate(model, q, np.zeros(15))
    with pytest.raises(InputError, match=r"^v_dt has a non-finite value at index 13"):
        dynlib.integrate(model, q, np.where(np.arange(14) == 13, np.inf, 0.0))
    with pytest.raises(InputError, match=r"^q must have 15 entries"):
        dynlib.integrate(model, q[:-1], v)
    with pytest.raises(InputError, match=r"^q0 has a non-finite value"):
        dynlib.difference(model, np.full(15, np.nan), q)
    with pytest.raises(InputError, match=r"^q1 must have 15 entries"):
        dynlib.difference(model, q, q[:7])


# every public function of a configuration q: (name, arguments after the model, index of q in them)
Q_FUNCTIONS = [
    ("aba", lambda m, q, v, f: (q, v, v)), ("rnea", lambda m, q, v, f: (q, v, v)),
    ("crba", lambda m, q, v, f: (q,)), ("coriolis_matrix", lambda m, q, v, f: (q, v)),
    ("forward_dynamics", lambda m, q, v, f: (q, v, v)), ("frame_jacobian", lambda m, q, v, f: (q, f)),
    ("frame_jacobian_dot_times_v", lambda m, q, v, f: (q, v, f)), ("frame_placement", lambda m, q, v, f: (q, f)),
    ("gravity_torques", lambda m, q, v, f: (q,)), ("integrate", lambda m, q, v, f: (q, v)),
    ("difference", lambda m, q, v, f: (q, q.copy())), ("kinetic_energy", lambda m, q, v, f: (q, v)),
    ("nonlinear_effects", lambda m, q, v, f: (q, v)), ("potential_energy", lambda m, q, v, f: (q,)),
    ("regressor", lambda m, q, v, f: (q, v, v)), ("task_space_inertia", lambda m, q, v, f: (q, f)),
]


@pytest.mark.parametrize("name, args", Q_FUNCTIONS, ids=[n for n, _ in Q_FUNCTIONS])
def test_a_quaternion_that_cannot_be_normalised_is_an_input_error_not_nan(name, args):
    """The kernels normalise a free-flyer's quaternion: zero gave NaN without a word (and aba a
    'singular mass matrix'), and one whose squared norm overflows a wrong rotation."""
    model = sample("biped", floating_base=True)
    fn, rng = getattr(dynlib, name), np.random.default_rng(3)
    q, v, frame = dynlib.random_configuration(model, rng), rng.uniform(-1, 1, model.nv), model.frame_names[-1]
    q[3:7] *= 5.0  # any nonzero norm is taken
    out = fn(model, *args(model, q, v, frame))
    assert all(np.all(np.isfinite(x)) for x in (out if isinstance(out, tuple) else (out,)))
    arg = "q0" if name == "difference" else "q"
    for bad, what in [(0.0, "is zero"), (1e200, "has norm 2e[+]200, which cannot be normalised"),
                      (1e-170, "has norm 2e-170, which cannot be normalised")]:
        q1 = q.copy()
        q1[3:7] = bad
        with pytest.raises(InputError, match=rf"^{arg}\[3:7\], the quaternion \(x, y, z, w\) of joint 'root', {what}"):
            fn(model, *args(model, q1, v, frame))
    Q = np.tile(q, (3, 1))
    Q[2, 3:7] = 0.0
    V = np.tile(v, (3, 1))
    with pytest.raises(InputError, match=rf"^{arg}\[3:7\] of row 2, the quaternion .* is zero"):
        fn(model, *args(model, Q, V, frame))
