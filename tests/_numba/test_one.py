"""One call from Python (dynlib._numba.one): rnea, aba, frame_jacobian, crba, gravity_torques,
nonlinear_effects, frame_placement, kinetic_energy, potential_energy, coriolis_matrix, forward_dynamics
and frame_jacobian_dot_times_v of one state (task_space_inertia, which allocates, takes the batch path).

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
from dynlib._numba import one
from dynlib.algorithms import _args
from dynlib.errors import InputError, NumericalError
from helpers import ROBOTS_DIR, PinMap, pinocchio_model, assert_close, erd_path, random_state, random_tree, sample

REFERENCES = ("world", "local", "local_world_aligned")


def _models():
    return [sample("arm7"), sample("quadruped", floating_base=True), random_tree(12, 5, floating_base=True)]


# every function with a one-call path: name -> (call of (model, q, v, a, frame), how many of q, v, a it takes)
CALLS = {
    "rnea": (lambda model, q, v, a, frame: dynlib.rnea(model, q, v, a), 3),
    "aba": (lambda model, q, v, a, frame: dynlib.aba(model, q, v, a), 3),
    **{ref: (lambda model, q, v, a, frame, ref=ref: dynlib.frame_jacobian(model, q, frame, ref), 1)
       for ref in REFERENCES},
    "crba": (lambda model, q, v, a, frame: dynlib.crba(model, q), 1),
    "gravity_torques": (lambda model, q, v, a, frame: dynlib.gravity_torques(model, q), 1),
    "nonlinear_effects": (lambda model, q, v, a, frame: dynlib.nonlinear_effects(model, q, v), 2),
    "frame_placement": (lambda model, q, v, a, frame: dynlib.frame_placement(model, q, frame), 1),
    "kinetic_energy": (lambda model, q, v, a, frame: dynlib.kinetic_energy(model, q, v), 2),
    "potential_energy": (lambda model, q, v, a, frame: dynlib.potential_energy(model, q), 1),
    "coriolis_matrix": (lambda model, q, v, a, frame: dynlib.coriolis_matrix(model, q, v), 2),
    "forward_dynamics": (lambda model, q, v, a, frame: dynlib.forward_dynamics(model, q, v, a), 3),
    **{f"jdot_v {ref}": (lambda model, q, v, a, frame, ref=ref: dynlib.frame_jacobian_dot_times_v(model, q, v, frame,
                                                                                                  ref), 2)
       for ref in REFERENCES},
    # (their three matrices stacked: (3, nv, nv), (N, 3, nv, nv) for a batch)
    "rnea_derivatives": (lambda model, q, v, a, frame: np.stack(dynlib.rnea_derivatives(model, q, v, a), -3), 3),
    "aba_derivatives": (lambda model, q, v, a, frame: np.stack(dynlib.aba_derivatives(model, q, v, a), -3), 3),
}


def _calls(model, q, v, a, frame):
    """Every function of CALLS on q, v, a (single vectors, or batches: the general path)."""
    return {name: call(model, q, v, a, frame) for name, (call, _) in CALLS.items()}


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
    batch = _calls(model, Q, V, A, frame)
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
    index = model.frame_names.index(model.frame_names[-1])  # a frame index too
    np.testing.assert_array_equal(dynlib.frame_jacobian(model, q, index), out["local_world_aligned"])
    np.testing.assert_array_equal(dynlib.frame_placement(model, q, np.int64(index)), out["frame_placement"])
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
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T  # (Pinocchio fills the upper triangle only)
        assert_close(dynlib.crba(model, q), P.mat(Mp), 1e-8, "crba")
        assert_close(dynlib.gravity_torques(model, q), P.v_back(pin.computeGeneralizedGravity(pm, pd, qp)), 1e-8,
                     "gravity_torques")
        assert_close(dynlib.nonlinear_effects(model, q, v), P.v_back(pin.nonLinearEffects(pm, pd, qp, vp)), 1e-8,
                     "nonlinear_effects")
        assert_close(dynlib.coriolis_matrix(model, q, v), P.mat(pin.computeCoriolisMatrix(pm, pd, qp, vp)), 1e-8,
                     "coriolis_matrix")
        assert_close(dynlib.kinetic_energy(model, q, v), pin.computeKineticEnergy(pm, pd, qp, vp), 1e-8, "kinetic")
        assert_close(dynlib.potential_energy(model, q), pin.computePotentialEnergy(pm, pd, qp), 1e-8, "potential")
        pin.framesForwardKinematics(pm, pd, qp)
        for frame in (model.frame_names[-1], model.frame_names[len(model.frame_names) // 2]):
            T = pd.oMf[pm.getFrameId(frame, pin.BODY)].homogeneous
            assert_close(dynlib.frame_placement(model, q, frame), T, 1e-8, f"frame_placement {frame}")


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
    floats = _calls(model, qi.astype(float), vi * 1.0, vi * 1.0, frame)
    for name, value in _calls(model, qi, vi, vi, frame).items():
        np.testing.assert_array_equal(value, floats[name], err_msg=f"{name} int64")
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
    for name, (call, _) in CALLS.items():
        assert _message(lambda: call(model, column, v, a, frame)) == expected, name
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
        for fn, (call, n_args) in CALLS.items():
            if which < n_args:
                message = expected.replace("a ", "tau ", 1) if fn in ("aba", "aba_derivatives", "forward_dynamics") \
                    and which == 2 else expected
                assert _message(lambda: call(model, *args, frame)) == message, fn
    # q is checked before the frame and the reference, as before
    for frame_function in (dynlib.frame_jacobian, dynlib.frame_placement):
        assert _message(lambda: frame_function(model, q[:-1], "no such link")).startswith("q must have")
        assert "no frame (link) 'no such link'" in _message(lambda: frame_function(model, q, "no such link"))
        assert _message(lambda: frame_function(model, q, 10 ** 6)).startswith("frame index 1000000 is out of range")
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
    frame = model.frame_names[-1]
    original = _calls(model, q, v, a, frame)  # the original's native struct made first
    for derived in (model.with_gravity([0.0, 0.0, 0.0]), model.with_armature(0.5)):
        batch = _calls(derived, q[None], v[None], a[None], frame)
        for name, value in _calls(derived, q, v, a, frame).items():
            np.testing.assert_array_equal(value, batch[name][0], err_msg=name)
    assert not np.any(dynlib.gravity_torques(model.with_gravity([0.0, 0.0, 0.0]), q))
    assert np.any(original["gravity_torques"])


def test_threads_calling_at_once_each_get_their_own_results():
    model = sample("quadruped", floating_base=True)
    rng = np.random.default_rng(6)
    states = [random_state(model, rng) for _ in range(8)]
    frame = model.frame_names[-1]
    expected = [_calls(model, *s, frame) for s in states]
    errors = []

    def work():
        for _ in range(50):
            for s, e in zip(states, expected):
                for name, value in _calls(model, *s, frame).items():
                    if not np.array_equal(value, e[name]):
                        errors.append(name)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---------------------------------------------------------------- the probe and the fallback


def _fresh_models():
    """Models that no test has called yet (`sample` keeps its models: their entries are made)."""
    return [dynlib.load(ROBOTS_DIR / "arm7.urdf"), dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True)]


def _general_path_count(monkeypatch):
    calls = []
    real = _args.vectors
    monkeypatch.setattr(_args, "vectors", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_the_probe_finds_the_one_call_path_works():
    assert one.available() and not one.notes


@pytest.mark.parametrize("broken", ["probe", "compile"])
def test_when_numbas_internals_fail_every_call_takes_the_general_path(monkeypatch, broken):
    """The probe of the one-call path failed (a numba whose internals changed), or a one-call kernel did not
    compile: the same results, bit for bit, by the general path (numba's public entry)."""
    models = _fresh_models()
    rng = np.random.default_rng(21)
    states = [random_state(m, rng) for m in models]
    expected = [_calls(m, q[None], v[None], a[None], m.frame_names[-1]) for m, (q, v, a) in zip(models, states)]
    if broken == "probe":
        monkeypatch.setattr(one, "available", lambda: False)
    else:
        def no_compile(*args):
            raise TypeError("a numba that cannot compile this")
        monkeypatch.setattr(one, "_entry", no_compile)
        monkeypatch.setattr(one, "notes", [])
    calls = _general_path_count(monkeypatch)
    for model, (q, v, a), ref in zip(models, states, expected):
        for _ in range(2):  # the second call finds the fallback kept in model._one
            got = _calls(model, q, v, a, model.frame_names[-1])
            for name, value in got.items():
                np.testing.assert_array_equal(value, ref[name][0], err_msg=name)
    assert len(calls) == 2 * len(models) * len(CALLS)
    assert all(entry[0] is (one._not_run if entry[3] is not None else one._nan)  # (shape None: a scalar's kernel)
               for key, entry in models[0]._one.items() if key != "one")
    if broken == "compile":
        assert any("a numba that cannot compile this" in n for n in one.notes)


def test_a_probe_that_fails_turns_the_one_call_path_off(monkeypatch):
    def broken(value):
        raise AttributeError("numba's array model changed")
    monkeypatch.setattr(one, "native", broken)
    monkeypatch.setattr(one, "notes", [])
    assert one.available.__wrapped__() is False
    assert one.notes == ["one-call path: AttributeError: numba's array model changed"]


def test_a_wrapper_has_its_general_paths_name_signature_and_docstring():
    import inspect

    assert dynlib.rnea.__name__ == "rnea" and dynlib.rnea.__doc__.startswith("Inverse dynamics")
    assert list(inspect.signature(dynlib.frame_jacobian).parameters) == ["model", "q", "frame", "reference"]
    assert dynlib.frame_jacobian.__defaults__ == ("local_world_aligned",)
