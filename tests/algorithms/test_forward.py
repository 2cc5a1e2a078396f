"""dynlib.algorithms.forward: forward dynamics by ABA, CRBA + Cholesky, and n + 1 RNEA calls.

The three methods agree (with and without external wrenches), invert RNEA, handle
the batch dimension, and report bad methods, massless subtrees and singular mass
matrices as DynErrors.
"""
import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.errors import InputError, ModelError, NumericalError
from helpers import assert_close, few, random_state, sample, seeds

METHODS = ("aba", "crba", "rnea")


@few()
@given(seed=seeds())
def test_methods_agree(model, seed):
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    tau = rng.uniform(-5, 5, model.nv)
    a = {m: dynlib.forward_dynamics(model, q, v, tau, method=m) for m in METHODS}
    assert_close(a["crba"], a["aba"], 1e-9, "forward crba = aba")
    assert_close(a["rnea"], a["aba"], 1e-9, "forward rnea = aba")


@few()
@given(seed=seeds())
def test_methods_agree_with_external_wrenches(model, seed):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    f_ext = rng.uniform(-5, 5, (model.nb, 6))
    tau = dynlib.rnea(model, q, v, a, f_ext)
    for m in METHODS:
        assert_close(dynlib.forward_dynamics(model, q, v, tau, method=m, f_ext=f_ext), a, 1e-9,
                     f"forward {m} f_ext inverts rnea")


def test_default_method_is_aba(model):
    q, v, a = random_state(model, np.random.default_rng(4))
    np.testing.assert_array_equal(dynlib.forward_dynamics(model, q, v, a), dynlib.aba(model, q, v, a))


@pytest.mark.parametrize("method", METHODS)
def test_batched_calls_equal_row_calls(model, method):
    rng = np.random.default_rng(14)
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, T = (np.array(x) for x in zip(*states))
    F = rng.uniform(-3, 3, (3, model.nb, 6))
    out = dynlib.forward_dynamics(model, Q, V, T, method=method, f_ext=F)
    assert out.shape == (3, model.nv)
    for n in range(3):
        np.testing.assert_array_equal(out[n], dynlib.forward_dynamics(model, Q[n], V[n], T[n], method=method, f_ext=F[n]))


def test_unknown_method_is_an_input_error():
    model = sample("pendulum")
    with pytest.raises(InputError, match="method must be one of aba, crba, rnea, got 'euler'"):
        dynlib.forward_dynamics(model, [0.0], [0.0], [0.0], method="euler")


@pytest.mark.parametrize("method", METHODS)
def test_massless_subtree_is_a_model_error_for_every_method(tmp_path, method):
    path = tmp_path / "ghost.urdf"
    path.write_text("""<robot name="ghost">
      <link name="base"/><link name="ghost"/>
      <joint name="slide" type="prismatic"><parent link="base"/><child link="ghost"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>""")
    model = dynlib.load(path)
    with pytest.raises(ModelError, match="slide"):
        dynlib.forward_dynamics(model, [0.0], [0.0], [0.0], method=method)


@pytest.mark.parametrize("method", ["crba", "rnea"])
def test_singular_mass_matrix_is_a_numerical_error(method):
    """A free-flying pendulum (massless root, the hinge through it) has a singular M."""
    model = sample("pendulum", floating_base=True)
    Q = np.tile(model.q_neutral, (2, 1))
    zero = np.zeros((2, model.nv))
    with pytest.raises(NumericalError, match="row 0"):
        dynlib.forward_dynamics(model, Q, zero, zero, method=method)


def test_bad_arguments_name_the_argument():
    model = sample("arm6")
    z = np.zeros(6)
    for method in METHODS:
        with pytest.raises(InputError, match=r"^tau has a non-finite value"):
            dynlib.forward_dynamics(model, z, z, [np.nan] * 6, method=method)
        with pytest.raises(InputError, match=r"^v must have 6 entries"):
            dynlib.forward_dynamics(model, z, np.zeros(7), z, method=method)
        with pytest.raises(InputError, match=r"^f_ext must have shape"):
            dynlib.forward_dynamics(model, z, z, z, method=method, f_ext=np.zeros(6))
