"""dynlib.sim.dynamics: the implicit acceleration stage (one ABA with a joint-space diagonal, O(n)) against
the dense solve of (M + diag(dt B + gain_m)) a = tau_total - gain_v v - h that the contact stages
build (`mass_and_bias`), on random trees and the sample robots, fixed and floating base, with armature.
"""
import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.sim.dynamics import (IMPLICIT_FRICTION, Evaluation, Forces, Implicit, explicit_acceleration,
                                 implicit_acceleration, implicit_diagonal, mass_and_bias)
from helpers import assert_close, few, random_state, sample, seeds

TOL = 1e-12


def forces(model, rng, implicit_dt, gains=True):
    """(Forces with random joint friction, no external wrenches; Implicit with random PD gain terms)."""
    nv = model.nv
    gain_m = rng.uniform(0, 0.5, nv) if gains else np.zeros(nv)
    gain_v = rng.uniform(0, 5, nv) if gains else np.zeros(nv)
    fo = Forces(rng.uniform(0, 2, nv), rng.uniform(0, 1, nv), 1e-2, np.zeros(0, dtype=np.int64), np.zeros((0, 3)),
                np.zeros((0, 6)), np.zeros(0), np.zeros(0))
    return fo, Implicit(IMPLICIT_FRICTION, np.full(nv, float(implicit_dt)), gain_m, gain_v)


def sums(model, tau_total, fext):
    """The Evaluation of a stage with tau_total and fext (tau unused)."""
    return Evaluation(np.zeros(model.nv), np.asarray(tau_total, float), np.asarray(fext, float), np.zeros(model.nv),
                      np.zeros(model.nv))


def both_paths(model, fo, im, q, v, tau_total, fext):
    """(a by the ABA stage, a by the dense solve of mass_and_bias's M and tau_h)."""
    m = model.arrays
    d = model.create_data()
    a = np.zeros(model.nv)
    ok = implicit_acceleration(m, d, fo, im, sums(model, tau_total, fext), q, v, a)
    assert ok
    dense = model.create_data()
    e = sums(model, tau_total, fext)
    mass_and_bias(m, dense, fo, im, e, q, v)
    return a, np.linalg.solve(dense.M, e.tau_h)


@few()
@given(seed=seeds())
def test_implicit_aba_step_equals_the_dense_solve(model, seed):
    rng = np.random.default_rng(seed)
    model = model.with_armature(rng.uniform(0, 0.05, model.nv))
    q, v, _ = random_state(model, rng)
    fo, im = forces(model, rng, implicit_dt=rng.uniform(1e-4, 1e-1))
    tau_total = rng.uniform(-5, 5, model.nv)
    fext = rng.uniform(-5, 5, (model.nb, 6))
    a, expected = both_paths(model, fo, im, q, v, tau_total, fext)
    assert_close(a, expected, TOL, "implicit ABA = (M + dt B + gain_m)^-1 (tau - gain_v v - h)")


@pytest.mark.parametrize("name", ["arm6", "arm7", "planar3", "quadruped", "biped", "double_pendulum"])
def test_implicit_aba_step_equals_the_dense_solve_on_the_sample_robots_urdf_friction(name):
    """The robots' own URDF damping and friction, explicit PD gains off, a stiff dt."""
    model = sample(name)
    rng = np.random.default_rng(7)
    m = model.arrays
    fo, im = forces(model, rng, implicit_dt=1e-3, gains=False)
    fo = fo._replace(damping=m.damping, friction=m.friction)
    q, v, _ = random_state(model, rng)
    a, expected = both_paths(model, fo, im, q, v, rng.uniform(-5, 5, model.nv), np.zeros((model.nb, 6)))
    assert_close(a, expected, TOL, "implicit ABA = dense solve, URDF friction")


@few()
@given(seed=seeds())
def test_the_recorded_acceleration_after_the_implicit_stage_is_the_explicit_aba(model, seed):
    """The recorded row's kernel reuses pass 1 of the implicit stage's ABA at the same state: its result is
    the public aba's, on a fresh Data, with the same tau_total and fext."""
    rng = np.random.default_rng(seed)
    model = model.with_armature(rng.uniform(0, 0.05, model.nv))
    m, d = model.arrays, model.create_data()
    q, v, _ = random_state(model, rng)
    fo, im = forces(model, rng, implicit_dt=rng.uniform(1e-4, 1e-1))
    tau_total = rng.uniform(-5, 5, model.nv)
    fext = rng.uniform(-5, 5, (model.nb, 6))
    a, out = np.zeros(model.nv), np.zeros(model.nv)
    e = sums(model, tau_total, fext)
    assert implicit_acceleration(m, d, fo, im, e, q, v, a)
    explicit_acceleration(m, d, e, out)
    expected = dynlib.aba(model, q, v, tau_total, fext)
    assert_close(out, expected, TOL, "recorded acceleration = ABA(q, v, tau_total, fext)")
    assert np.abs(out - a).max() > 1e-6 * np.abs(expected).max()  # the diagonal did change the stage's a


def test_without_implicit_terms_the_stage_is_the_aba():
    model = sample("arm6").with_armature(0.01)
    rng = np.random.default_rng(3)
    fo, im = forces(model, rng, implicit_dt=0.0, gains=False)
    q, v, _ = random_state(model, rng)
    tau = rng.uniform(-5, 5, model.nv)
    a, _ = both_paths(model, fo, im, q, v, tau, np.zeros((model.nb, 6)))
    assert_close(a, dynlib.aba(model, q, v, tau), TOL, "implicit stage with a zero diagonal = aba")


def test_the_implicit_diagonal_is_dt_times_the_friction_jacobian_plus_the_gains():
    model = sample("arm6")
    rng = np.random.default_rng(5)
    fo, im = forces(model, rng, implicit_dt=2e-3)
    v = rng.uniform(-0.05, 0.05, model.nv)
    diag = np.zeros(model.nv)
    implicit_diagonal(fo, im, v, diag)

    def friction(x):  # the negated joint friction torque (dynamics.joint_forces)
        return fo.damping * x + fo.friction * np.tanh(x / fo.eps)

    h = 1e-7  # central differences of the friction torque, DoF by DoF (it is diagonal)
    jac = (friction(v + h) - friction(v - h)) / (2 * h)
    assert_close(diag, im.friction_dt * jac + im.gain_m, 1e-6, "dt dF/dv + gain_m")


def test_the_joint_friction_law_is_one_function_for_kernels_and_arrays():
    """`joint_friction` is the one law (SPEC §2): compiled on numbers in the step's `joint_forces` (and the
    computed-torque controller), on arrays through its py_func in inverse dynamics (numpy's vectorised tanh
    may differ from the C library's in the last bit, as it did when the law was written twice)."""
    from dynlib.motion.inverse import joint_friction_torques
    from dynlib.sim.dynamics import joint_forces, joint_friction

    model = sample("arm6")
    rng = np.random.default_rng(7)
    fo, _ = forces(model, rng, implicit_dt=0.0)
    V = rng.uniform(-0.05, 0.05, (4, model.nv))
    law = joint_friction.py_func(fo.damping, fo.friction, fo.eps, V)
    compiled = [[joint_friction(fo.damping[k], fo.friction[k], fo.eps, V[n, k]) for k in range(model.nv)]
                for n in range(len(V))]
    assert_close(law, np.array(compiled), 1e-15, "py_func on arrays = the kernel on numbers")
    tau, tau_total = rng.normal(size=model.nv), np.zeros(model.nv)
    joint_forces(fo, V[0], tau, tau_total)
    assert np.array_equal(tau_total, tau - np.array(compiled[0]))
    a = model.arrays
    assert np.array_equal(joint_friction_torques(model, V, fo.eps), joint_friction.py_func(a.damping, a.friction,
                                                                                            fo.eps, V))
