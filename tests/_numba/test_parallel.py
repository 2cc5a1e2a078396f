"""Batches on several threads (dynlib._numba.parallel): the same numbers as one thread,
bit for bit, whatever the split; DYN_THREADS; one workspace per thread."""
import pickle
import threading

import numba
import numpy as np
import pytest

import dynlib
from dynlib._numba import parallel
from dynlib.errors import InputError
from helpers import random_state, sample

N = 3 * parallel.MIN_BLOCK + 17  # three blocks on three threads, uneven


def _batch(model, n, seed=0):
    rng = np.random.default_rng(seed)
    rows = [random_state(model, rng) for _ in range(n)]
    return tuple(np.array(x) for x in zip(*rows))


def _every_batched_function(model):
    Q, V, A = _batch(model, N)
    F = np.random.default_rng(1).standard_normal((N, model.nb, 6))
    frame = model.frame_names[-1]
    return {
        "rnea": lambda: dynlib.rnea(model, Q, V, A),
        "rnea f_ext per row": lambda: dynlib.rnea(model, Q, V, A, f_ext=F),
        "rnea one f_ext": lambda: dynlib.rnea(model, Q, V, A, f_ext=F[0]),
        "nonlinear_effects (broadcast a = 0)": lambda: dynlib.nonlinear_effects(model, Q, V),
        "gravity_torques": lambda: dynlib.gravity_torques(model, Q),
        "aba": lambda: dynlib.aba(model, Q, V, A),
        "crba": lambda: dynlib.crba(model, Q),
        "forward crba": lambda: dynlib.forward_dynamics(model, Q, V, A, method="crba"),
        "forward rnea": lambda: dynlib.forward_dynamics(model, Q, V, A, method="rnea"),
        "coriolis": lambda: dynlib.coriolis_matrix(model, Q, V),
        "jacobian": lambda: dynlib.frame_jacobian(model, Q, frame),
        "jacobian_dot_v": lambda: dynlib.frame_jacobian_dot_times_v(model, Q, V, frame),
        "placement": lambda: dynlib.frame_placement(model, Q, frame),
        "kinetic": lambda: dynlib.kinetic_energy(model, Q, V),
        "potential": lambda: dynlib.potential_energy(model, Q),
        "task space": lambda: dynlib.task_space_inertia(model, Q, frame, V),
    }


@pytest.mark.parametrize("robot, floating", [("arm6", False), ("quadruped", True)])
def test_threads_give_bit_identical_results(robot, floating, monkeypatch):
    model = sample(robot, floating)
    for name, fn in _every_batched_function(model).items():
        monkeypatch.setenv("DYN_THREADS", "1")
        one = fn()
        monkeypatch.setenv("DYN_THREADS", "3")
        three = fn()
        for a, b in zip(*(x if isinstance(x, tuple) else (x,) for x in (one, three))):
            assert np.array_equal(a, b), f"{robot}: {name} differs on 3 threads"


def test_rows_across_block_edges_match_single_calls(monkeypatch):
    monkeypatch.setenv("DYN_THREADS", "2")
    model = sample("arm7")
    Q, V, A = _batch(model, N, seed=3)
    tau = dynlib.rnea(model, Q, V, A)
    acc = dynlib.aba(model, Q, V, tau)
    for r in (0, N // 2 - 1, N // 2, N // 2 + 1, N - 1):
        assert np.array_equal(tau[r], dynlib.rnea(model, Q[r], V[r], A[r]))
    assert np.max(np.abs(acc - A)) < 1e-9


def test_run_splits_marked_arguments_and_reports_block_starts(monkeypatch):
    """Rows are cut only for arguments given as 1-tuples with the batch's row count; results carry their first row."""
    monkeypatch.setenv("DYN_THREADS", "4")
    model = sample("pendulum")
    n = 4 * parallel.MIN_BLOCK + 3
    x = np.arange(n, dtype=float)
    seen = []

    def kernel(m, d, rows, whole, one_row, out):
        seen.append((threading.get_ident(), id(d)))
        out[:] = rows * 2 + whole.sum() + one_row[0]
        return int(rows[0])

    out = np.empty(n)
    blocks = parallel.run(model, n, kernel, (x,), np.ones(5), (np.array([7.0]),),
                          (out,))
    assert [start for start, _ in blocks] == [first for _, first in blocks]  # each block's first row is its start
    assert [start for start, _ in blocks] == sorted(start for start, _ in blocks) and blocks[0][0] == 0
    assert len(blocks) == 4
    assert np.array_equal(out, x * 2 + 5 + 7)
    # one workspace per thread (a pool thread that finishes early may take another block)
    workspace_of = dict(seen)
    assert len(set(workspace_of.values())) == len(workspace_of) >= 2
    assert all(workspace_of[t] == d for t, d in seen)


def test_small_batches_stay_on_the_calling_thread(monkeypatch):
    monkeypatch.setenv("DYN_THREADS", "8")
    model = sample("pendulum")
    caller = threading.get_ident()
    seen = []

    def kernel(m, d, rows):
        seen.append(threading.get_ident())

    parallel.run(model, 2 * parallel.MIN_BLOCK - 1, kernel, (np.zeros(2 * parallel.MIN_BLOCK - 1),))
    assert seen == [caller]


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_bad_dyn_threads_is_an_input_error(value, monkeypatch):
    monkeypatch.setenv("DYN_THREADS", value)
    with pytest.raises(InputError, match="DYN_THREADS must be a positive whole number"):
        parallel.threads()


def test_default_threads_is_the_usable_cores(monkeypatch):
    monkeypatch.delenv("DYN_THREADS", raising=False)
    assert parallel.threads() >= 1


def test_workspace_is_per_thread_and_model_pickles():
    model = sample("arm6")
    here = model.workspace
    assert model.workspace is here  # reused in one thread
    other = []
    t = threading.Thread(target=lambda: other.append(model.workspace))
    t.start()
    t.join()
    assert other[0] is not here and other[0].M.shape == here.M.shape
    copy = pickle.loads(pickle.dumps(model))
    q, v, a = random_state(copy, np.random.default_rng(0))
    assert np.array_equal(dynlib.rnea(copy, q, v, a), dynlib.rnea(model, q, v, a))


def test_concurrent_callers_do_not_share_a_workspace():
    """Kernels release the GIL: two user threads calling at once must not corrupt each other."""
    model = sample("arm7")
    Q, V, A = _batch(model, 2000, seed=5)
    expected = dynlib.rnea(model, Q, V, A)
    results, errors = [], []

    def worker():
        try:
            for _ in range(20):
                results.append(np.array_equal(dynlib.rnea(model, Q, V, A), expected))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 60 and all(results)


def test_a_forked_child_gets_its_own_pool(monkeypatch):
    """multiprocessing's fork start method copies the pool object but not its threads."""
    import multiprocessing

    monkeypatch.setenv("DYN_THREADS", "2")
    model = sample("arm6")
    Q, V, A = _batch(model, 2 * parallel.MIN_BLOCK + 1, seed=7)
    expected = dynlib.rnea(model, Q, V, A)  # the parent's pool is running now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=lambda: queue.put(np.array_equal(dynlib.rnea(model, Q, V, A), expected)))
    child.start()
    child.join(120)
    if child.is_alive():  # hung on the parent's threadless pool
        child.kill()
    assert child.exitcode == 0 and queue.get(timeout=5)


def _single_calls(model, q, v, a, frame):
    return {
        "rnea": lambda: dynlib.rnea(model, q, v, a),
        "rnea f_ext": lambda: dynlib.rnea(model, q, v, a, f_ext=np.ones((model.nb, 6))),
        "nonlinear_effects": lambda: dynlib.nonlinear_effects(model, q, v),
        "gravity_torques": lambda: dynlib.gravity_torques(model, q),
        "aba": lambda: dynlib.aba(model, q, v, a),
        "crba": lambda: dynlib.crba(model, q),
        "forward crba": lambda: dynlib.forward_dynamics(model, q, v, a, method="crba"),
        "coriolis": lambda: dynlib.coriolis_matrix(model, q, v),
        "jacobian": lambda: dynlib.frame_jacobian(model, q, frame),
        "jacobian_dot_v": lambda: dynlib.frame_jacobian_dot_times_v(model, q, v, frame),
        "placement": lambda: dynlib.frame_placement(model, q, frame),
        "kinetic": lambda: dynlib.kinetic_energy(model, q, v),
    }


@pytest.mark.parametrize("robot, floating", [("arm7", False), ("quadruped", True)])
def test_single_calls_through_the_compiled_entry_equal_numba_dispatch_and_the_batch(robot, floating, monkeypatch):
    """A single call runs numba's compiled entry for the model (not the dispatcher): the same
    numbers as the dispatcher, bit for bit, and as the row of a batch."""
    model = sample(robot, floating)
    Q, V, A = _batch(model, 3, seed=7)
    frame = model.frame_names[-1]
    fast = {name: fn() for name, fn in _single_calls(model, Q[1], V[1], A[1], frame).items()}
    entries = [e for e in model.entries.values()]
    assert entries and not any(hasattr(e, "py_func") for e in entries)  # numba's entries, not dispatchers
    batch = {name: fn() for name, fn in _single_calls(model, Q, V, A, frame).items()}
    monkeypatch.setattr(parallel, "entry", lambda model, kernel, lead, rest: kernel)
    other = pickle.loads(pickle.dumps(model))  # a fresh workspace, no entries
    slow = {name: fn() for name, fn in _single_calls(other, Q[1], V[1], A[1], frame).items()}
    assert not other.entries
    for name in fast:
        for x, y, z in zip(*(r if isinstance(r, tuple) else (r,) for r in (fast[name], slow[name], batch[name]))):
            assert np.array_equal(x, y), f"{robot}: {name}: the entry and numba's dispatch differ"
            assert np.array_equal(x, z[1]), f"{robot}: {name}: the single call and row 1 of the batch differ"


def test_an_entry_is_kept_per_model_kernel_and_argument_types():
    """Arguments of other numba types (a read-only array) get an entry of their own, with
    the right results; a model made from another (other gravity) has entries of its own.
    (A kernel of the test's own, uncached, so that the suite's kernel cache keeps only dyn's overloads.)"""
    numba = pytest.importorskip("numba")

    @numba.njit
    def kernel(m, d, rows, out):
        for n in range(rows.shape[0]):
            out[n] = rows[n, 0] * m.gravity[2]

    model = sample("pendulum")
    rows, out = np.array([[2.0]]), np.empty(1)
    ro = rows.copy()
    ro.flags.writeable = False
    own = lambda m: [k for k in m.entries if k[0] is kernel]  # noqa: E731
    parallel.run(model, 1, kernel, (rows,), (out,))
    assert out[0] == 2.0 * model.arrays.gravity[2] and len(own(model)) == 1
    assert not hasattr(model.entries[own(model)[0]], "py_func")  # numba's entry, not the dispatcher
    parallel.run(model, 1, kernel, (ro,), (out,))
    assert out[0] == 2.0 * model.arrays.gravity[2] and len(own(model)) == 2
    parallel.run(model, 1, kernel, (rows,), (out,))
    assert len(own(model)) == 2
    moon = model.with_gravity([0, 0, -1.62])
    assert not own(moon)
    parallel.run(moon, 1, kernel, (rows,), (out,))
    assert out[0] == 2.0 * -1.62 and len(own(moon)) == 1


def test_a_non_contiguous_first_argument_among_many_gets_its_own_entry():
    """Six array arguments, the first of them a reversed (non-contiguous) view after a contiguous
    one: numba 0.60's fingerprint of such a tuple lost its first items, and the kernel compiled for
    a contiguous first array read the reversed one as contiguous (a wrong result, no error)."""
    numba = pytest.importorskip("numba")

    @numba.njit
    def kernel(m, d, rows, a, b, c, e, out):
        for n in range(rows.shape[0]):
            out[n] = rows[n, 0] - rows[n, 1] + a[0, 0] + b[0, 0] + c[0, 0] + e[0, 0]

    model = sample("pendulum")
    z, out = np.zeros((1, 1)), np.empty(1)
    parallel.run(model, 1, kernel, (np.array([[1.0, 2.0]]),), (z,), (z,), (z,), (z,), (out,))
    assert out[0] == -1.0
    parallel.run(model, 1, kernel, (np.array([[1.0, 2.0]])[:, ::-1],), (z,), (z,), (z,), (z,), (out,))
    assert out[0] == 1.0
    rest = (z, z, z, z, out)  # the key of the arguments' types tells the two first arguments apart
    assert parallel._fingerprint((np.array([[1.0, 2.0]]), *rest)) != parallel._fingerprint(
        (np.array([[1.0, 2.0]])[:, ::-1], *rest))


def test_arguments_numba_cannot_fingerprint_use_the_kernel_as_it_is():
    model = sample("pendulum")
    seen = []

    def kernel(m, d, label, rows):
        seen.append(label)

    parallel.run(model, 1, kernel, "a label", (np.zeros((1, 1)),))
    parallel.run(model, 1, kernel, "another", (np.zeros((1, 1)),))
    assert seen == ["a label", "another"]


def test_without_numbas_private_fingerprint_the_key_is_the_numba_types(monkeypatch):
    """The probe of numba's private compute_fingerprint: when it is gone, the key of the arguments' types is
    the tuple of their numba types (public), which tells the layouts apart too."""
    import numba._dispatcher

    monkeypatch.delattr(numba._dispatcher, "compute_fingerprint")
    monkeypatch.setattr(parallel, "_fingerprint", parallel._choose_fingerprint)
    assert parallel._fingerprint_is_exact() is False
    model = sample("pendulum")
    z = np.zeros((1, 1))
    for Q, expected in ((np.array([[1.0, 2.0]]), -1.0), (np.array([[1.0, 2.0]])[:, ::-1], 1.0)):
        out = np.empty(1)
        parallel.run(model, 1, _difference_kernel, (Q,), (z,), (out,))
        assert out[0] == expected
    assert parallel._fingerprint.__module__ == parallel.__name__  # the public key, not numba's


@numba.njit
def _difference_kernel(m, d, rows, a, out):
    for n in range(rows.shape[0]):
        out[n] = rows[n, 0] - rows[n, 1] + a[0, 0]
