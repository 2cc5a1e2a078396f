"""One call from Python (dynlib.algorithms._one): rnea, aba and frame_jacobian of one state.

The one-call path must give what the batch path gives (the same kernel, so the same
bits) and what Pinocchio gives; it must be the path a plain call takes (checked by
making the general path raise), and every input it does not take (lists, integer,
float32, byte-swapped, non-contiguous, unaligned, 2-D arrays, subclasses) or refuses
(wrong sizes, NaN, Inf) must go to the general path: the same result or the same
InputError as before. Read-only vectors take it (the kernels only read them).
"""
import threading

import numpy as np
import pytest

import dynlib
from dynlib.algorithms import _args
from dynlib.errors import InputError, NumericalError
from helpers import PinMap, pinocchio_model, assert_close, erd_path, random_state, random_tree, sample

REFERENCES = ("world", "local", "local_world_aligned")


def _models():
    return [sample("arm7"), sample("quadruped", floating_base=True), random_tree(12, 5, floating_base=True)]


def _calls(model, q, v, a, frame):
    out = {"rnea": dynlib.rnea(model, q, v, a), "aba": dynlib.aba(model, q, v, a)}
    for ref in REFERENCES:
        out[ref] = dynlib.frame_jacobian(model, q, frame, ref)
    return out


@pytest.fixture
def no_general_path(monkeypatch):
    """The general path (argument conversion, batch) made to fail: what passes took the one-call path."""
    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")
    monkeypatch.setattr(_args, "vectors", refuse)


@pytest.mark.parametrize("k", range(3))
def test_one_call_equals_the_batch_path_bit_for_bit(k):
    model = _models()[k]
    rng = np.random.default_rng(k)
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, A = (np.array(x) for x in zip(*states))
    frame = model.frame_names[-1]
    batch = {"rnea": dynlib.rnea(model, Q, V, A), "aba": dynlib.aba(model, Q, V, A)}
    for ref in REFERENCES:
        batch[ref] = dynlib.frame_jacobian(model, Q, frame, ref)
    for n in range(3):
        one = _calls(model, Q[n].copy(), V[n].copy(), A[n].copy(), frame)
        for name, value in one.items():
            np.testing.assert_array_equal(value, batch[name][n], err_msg=name)


def test_plain_calls_take_the_one_call_path(no_general_path):
    model = sample("arm7")
    rng = np.random.default_rng(3)
    q, v, a = random_state(model, rng)
    out = _calls(model, q, v, a, model.frame_names[-1])
    assert all(np.all(np.isfinite(x)) for x in out.values())
    by_index = dynlib.frame_jacobian(model, q, model.frame_names.index(model.frame_names[-1]))  # a frame index too
    np.testing.assert_array_equal(by_index, out["local_world_aligned"])
    with pytest.raises(AssertionError, match="general path"):  # (the fixture does refuse the others)
        dynlib.rnea(model, list(q), v, a)


@pytest.mark.oracle
@pytest.mark.parametrize("rel, floating", [("ur_description/urdf/ur5_robot.urdf", False),
                                           ("talos_data/robots/talos_reduced.urdf", True)])
def test_one_call_equals_pinocchio(rel, floating, no_general_path):
    pin = pytest.importorskip("pinocchio")
    path = erd_path(rel)
    model = dynlib.load(path, floating_base=floating)
    pm = pinocchio_model(path, floating)
    pd = pm.createData()
    P = PinMap(model, pm)
    rng = np.random.default_rng(7)
    for _ in range(2):
        q, v, a = random_state(model, rng)
        qp, vp, ap = P.q(q), P.v(v), P.v(a)
        assert_close(dynlib.rnea(model, q, v, a), P.v_back(pin.rnea(pm, pd, qp, vp, ap)), 1e-8, "rnea")
        assert_close(dynlib.aba(model, q, v, a), P.v_back(pin.aba(pm, pd, qp, vp, ap)), 1e-8, "aba")
        for frame in (model.frame_names[-1], model.frame_names[len(model.frame_names) // 2]):
            J = dynlib.frame_jacobian(model, q, frame)
            Jp = pin.computeFrameJacobian(pm, pd, qp, pm.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED)
            assert_close(J, P.jac(Jp), 1e-8, f"frame_jacobian {frame}")


def test_inputs_the_one_call_path_does_not_take_give_the_same_results():
    model = sample("arm7")
    rng = np.random.default_rng(11)
    q, v, a = random_state(model, rng)
    frame = model.frame_names[-1]
    ref = _calls(model, q, v, a, frame)
    readonly = q.copy()
    readonly.flags.writeable = False
    for qq in (list(q), tuple(q), readonly, np.repeat(q, 2)[::2], q.astype(">f8")):
        got = _calls(model, qq, list(v), a, frame)
        for name, value in got.items():
            np.testing.assert_array_equal(value, ref[name], err_msg=f"{name} {type(qq).__name__}")
    flipped = _calls(model, np.ascontiguousarray(q[::-1]), v, a, frame)
    for name, value in _calls(model, q[::-1], v, a, frame).items():  # (a negative stride)
        np.testing.assert_array_equal(value, flipped[name], err_msg=f"{name} reversed")
    qi = np.round(q).astype(np.int64)
    vi = np.arange(model.nv)
    np.testing.assert_array_equal(dynlib.rnea(model, qi, vi, vi), dynlib.rnea(model, qi.astype(float), vi * 1.0, vi * 1.0))
    np.testing.assert_array_equal(dynlib.aba(model, qi, vi, vi), dynlib.aba(model, qi.astype(float), vi * 1.0, vi * 1.0))
    np.testing.assert_array_equal(dynlib.frame_jacobian(model, qi, frame), dynlib.frame_jacobian(model, qi * 1.0, frame))
    f32 = _calls(model, q.astype(np.float32), v.astype(np.float32), a.astype(np.float32), frame)
    f64 = _calls(model, q.astype(np.float32).astype(float), v.astype(np.float32).astype(float),
                 a.astype(np.float32).astype(float), frame)
    for name in f32:
        np.testing.assert_array_equal(f32[name], f64[name], err_msg=name)
    assert dynlib.rnea(model, q[None], v[None], a[None]).shape == (1, model.nv)


class _Vector(np.ndarray):
    """A numpy subclass: never the one-call path's (numba would convert it as a plain array)."""


def test_arrays_of_other_kinds_give_the_same_results_and_errors():
    model = sample("arm7")
    q, v, a = random_state(model, np.random.default_rng(12))
    frame = model.frame_names[-1]
    ref = _calls(model, q, v, a, frame)
    raw = np.zeros(model.nq * 8 + 1, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64)  # float64 entries at an odd address
    unaligned[:] = q
    assert not unaligned.flags.aligned
    subclass = q.view(_Vector)
    for qq in (unaligned, subclass, q.astype(">f8")):
        for name, value in _calls(model, qq, v, a, frame).items():
            np.testing.assert_array_equal(value, ref[name], err_msg=f"{name} {qq.dtype} {type(qq).__name__}")
    column = q[:, None]  # 2-D, (nq, 1): the general path's error, not a 1-D conversion of it
    nq = model.nq
    expected = f"q must have {nq} entries for robot 'arm7' (shape ({nq},) or (N, {nq})), got shape ({nq}, 1)"
    assert _message(lambda: dynlib.rnea(model, column, v, a)) == expected
    assert _message(lambda: dynlib.aba(model, column, v, a)) == expected
    assert _message(lambda: dynlib.frame_jacobian(model, column, frame)) == expected
    assert _message(lambda: dynlib.rnea(model, np.float64(1.0), v, a)).startswith("q must have")


def test_read_only_vectors_take_the_one_call_path(no_general_path):
    model = sample("arm7")
    q, v, a = random_state(model, np.random.default_rng(13))
    frame = model.frame_names[-1]
    ref = _calls(model, q, v, a, frame)
    for x in (q, v, a):
        x.flags.writeable = False
    for name, value in _calls(model, q, v, a, frame).items():
        np.testing.assert_array_equal(value, ref[name], err_msg=name)


def test_a_busy_shared_workspace_sends_the_call_to_the_threads_own(no_general_path):
    """While another thread holds the model's shared buffer (its lock word taken here by hand), a call
    runs on the calling thread's own buffer and workspace: the same results, not the general path."""
    model = sample("quadruped", floating_base=True)
    q, v, a = random_state(model, np.random.default_rng(14))
    frame = model.frame_names[-1]
    ref = _calls(model, q, v, a, frame)
    assert not hasattr(model._local, "native")  # (no call needed the thread's own buffer yet)
    _, shared, _ = model._one["one"]
    shared[0] = 1
    try:
        got = _calls(model, q, v, a, frame)
    finally:
        shared[0] = 0
    assert hasattr(model._local, "native")
    for name, value in got.items():
        np.testing.assert_array_equal(value, ref[name], err_msg=name)


def _message(fn):
    with pytest.raises(InputError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize("bad", ["short", "long", "nan", "inf", "-inf", "text", "matrix"])
def test_bad_vectors_give_the_general_paths_error(bad):
    model = sample("arm7")
    q, v, a = random_state(model, np.random.default_rng(2))
    frame = model.frame_names[-1]
    nq, nv = model.nq, model.nv
    for which in range(3):
        args = [q.copy(), v.copy(), a.copy()]
        x = args[which]
        if bad == "short":
            args[which] = x[:-1].copy()
        elif bad == "long":
            args[which] = np.append(x, 0.0)
        elif bad == "text":
            args[which] = "zero"
        elif bad == "matrix":
            args[which] = np.zeros((2, 2, len(x)))
        else:
            x[len(x) // 2] = float(bad)
        name = ("q", "v", "a")[which]
        size = nq if which == 0 else nv
        expected = {"short": f"{name} must have {size} entries for robot 'arm7' (shape ({size},) or (N, {size})), "
                             f"got shape ({size - 1},)",
                    "long": f"{name} must have {size} entries for robot 'arm7' (shape ({size},) or (N, {size})), "
                            f"got shape ({size + 1},)",
                    "nan": f"{name} has a non-finite value at index {size // 2}",
                    "inf": f"{name} has a non-finite value at index {size // 2}",
                    "-inf": f"{name} has a non-finite value at index {size // 2}",
                    "text": f"{name} must be an array of numbers, got str",
                    "matrix": f"{name} must have shape ({size},) or (N, {size}), got (2, 2, {size})"}[bad]
        assert _message(lambda: dynlib.rnea(model, *args)) == expected
        tau_name = expected.replace("a ", "tau ", 1) if which == 2 and expected.startswith("a ") else expected
        assert _message(lambda: dynlib.aba(model, *args)) == tau_name
        if which == 0:
            assert _message(lambda: dynlib.frame_jacobian(model, args[0], frame)) == expected
    # q is checked before the frame and the reference, as before
    assert _message(lambda: dynlib.frame_jacobian(model, q[:-1], "no such link")).startswith("q must have")
    assert "no frame (link) 'no such link'" in _message(lambda: dynlib.frame_jacobian(model, q, "no such link"))
    assert "reference must be one of" in _message(lambda: dynlib.frame_jacobian(model, q, frame, "body"))


def test_a_bad_call_leaves_the_next_one_right():
    model = sample("arm7")
    q, v, a = random_state(model, np.random.default_rng(4))
    good = dynlib.rnea(model, q, v, a)
    bad = q.copy()
    bad[0] = np.nan
    with pytest.raises(InputError):
        dynlib.rnea(model, bad, v, a)
    np.testing.assert_array_equal(dynlib.rnea(model, q, v, a), good)


def test_singular_mass_matrix_in_one_call_is_the_same_error():
    model = sample("pendulum", floating_base=True)  # massless root, the hinge through it
    zero = np.zeros(model.nv)
    with pytest.raises(NumericalError) as one:
        dynlib.aba(model, model.q_neutral.copy(), zero, zero)
    with pytest.raises(NumericalError) as general:
        dynlib.aba(model, list(model.q_neutral), list(zero), zero)
    assert str(one.value) == str(general.value)
    assert "the mass matrix is singular at q" in str(one.value)


def test_derived_models_use_their_own_arrays():
    model = sample("arm7")
    q, v, a = random_state(model, np.random.default_rng(5))
    dynlib.rnea(model, q, v, a)  # the original's native struct made first
    for derived in (model.with_gravity([0.0, 0.0, 0.0]), model.with_armature(0.5)):
        np.testing.assert_array_equal(dynlib.rnea(derived, q, v, a), dynlib.rnea(derived, q[None], v[None], a[None])[0])
        np.testing.assert_array_equal(dynlib.aba(derived, q, v, a), dynlib.aba(derived, q[None], v[None], a[None])[0])


def test_threads_calling_at_once_each_get_their_own_results():
    model = sample("quadruped", floating_base=True)
    rng = np.random.default_rng(6)
    states = [random_state(model, rng) for _ in range(8)]
    expected = [dynlib.rnea(model, *s) for s in states]
    errors = []

    def work():
        for _ in range(200):
            for s, e in zip(states, expected):
                if not np.array_equal(dynlib.rnea(model, *s), e):
                    errors.append(1)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
