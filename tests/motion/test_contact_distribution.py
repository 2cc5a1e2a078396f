"""dynlib.motion.wrench_distribution: sharing a root wrench among contacts by least squares.

The solvers on their own, on random root rows A (6, K) — not from a robot — against
numpy solves of the same problems written out here:

- per row, min (w − g)ᵀW(w − g) s.t. A w = b: the dense KKT system; masked entries are
  zero; when A w = b cannot hold (masked columns leave A short of rank 6) the root
  equations hold in the least-squares sense and, among those solutions, the weighted
  norm is least (numpy's minimum-norm lstsq in W^½ coordinates);
- over time, min μ Σ (w_t − g_t)ᵀW(w_t − g_t) + s Σ ‖w_t − w_t−1‖² s.t. A_t w_t = b_t: the
  dense KKT system of the whole problem (masked entries fixed at zero inside the
  differences), and s = 0 gives the per-row solution.

The contact-id problems built from robots are in test_contact_inverse.py.
"""
import numpy as np
import pytest

from dynlib.motion.wrench_distribution import reduced_constraints, solve_frames, solve_over_time

TOL = 1e-10


def problem(seed, n=6, k=3, masked=0.0):
    """Random rows: A (n, 6, 6k) of full row rank, b, positive weights, guesses, a mask
    (each entry off with probability `masked`, but at least 6 on per row)."""
    rng = np.random.default_rng(seed)
    K = 6 * k
    A = rng.normal(size=(n, 6, K))
    b = rng.normal(size=(n, 6)) * 10
    weight = rng.uniform(0.01, 2.0, K)
    guess = rng.normal(size=(n, K))
    mask = rng.random((n, K)) >= masked
    for t in range(n):
        if mask[t].sum() < 6:
            mask[t, rng.choice(K, 6, replace=False)] = True
    return A, b, weight, guess, mask


def dense_row(A, b, weight, guess, mask):
    """One row: [[W, Aᵀ], [A, 0]] [w; λ] = [W g; b] over the unmasked entries."""
    on = np.flatnonzero(mask)
    a, W = A[:, on], np.diag(weight[on])
    kkt = np.block([[W, a.T], [a, np.zeros((6, 6))]])
    x = np.linalg.solve(kkt, np.r_[W @ guess[on], b])
    w = np.zeros(mask.size)
    w[on] = x[:on.size]
    return w


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize("masked", [0.0, 0.4])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_per_row_solution_is_the_dense_kkt_solution(k, masked):
    A, b, weight, guess, mask = problem(k, k=k, masked=masked)
    w = solve_frames(A, b, weight, guess, mask)
    assert np.all(w[~mask] == 0)
    for t in range(len(b)):
        assert rel(A[t] @ w[t], b[t]) < TOL
        assert rel(w[t], dense_row(A[t], b[t], weight, guess[t], mask[t])) < 1e-9


def test_weights_may_differ_per_row():
    A, b, weight, guess, mask = problem(3)
    W = np.random.default_rng(3).uniform(0.1, 5.0, mask.shape)
    w = solve_frames(A, b, W, guess, mask)
    for t in range(len(b)):
        assert rel(w[t], dense_row(A[t], b[t], W[t], guess[t], mask[t])) < 1e-9


def test_equations_that_cannot_hold_are_met_in_the_least_squares_sense():
    """Three force entries cannot make six root rows: least squares first, then the least
    weighted distance to the guess among the least-squares solutions (here unique)."""
    A, b, weight, guess, _ = problem(4, k=1)
    mask = np.zeros((len(b), 6), dtype=bool)
    mask[:, :3] = True  # a point contact: forces only
    w = solve_frames(A, b, weight, guess, mask)
    for t in range(len(b)):
        ref = np.linalg.lstsq(A[t][:, :3], b[t], rcond=None)[0]
        assert rel(w[t, :3], ref) < 1e-9 and np.all(w[t, 3:] == 0)
        # the residual is orthogonal to what the entries can do
        assert np.abs(A[t][:, :3].T @ (b[t] - A[t] @ w[t])).max() < 1e-9 * np.abs(b[t]).max()


def test_underdetermined_least_squares_takes_the_least_weighted_change():
    """A rank-deficient row (two columns repeated): among the least-squares solutions, the one
    nearest the guess in the W norm — numpy's minimum-norm lstsq in W^½ coordinates."""
    rng = np.random.default_rng(5)
    K = 12
    A = rng.normal(size=(1, 6, K))
    A[0, :, 6:] = A[0, :, :6] @ rng.normal(size=(6, 6))
    A[0, 3:] = 0.0  # rank 3: A w = b cannot hold for a random b
    b = rng.normal(size=(1, 6))
    weight, guess = rng.uniform(0.1, 2.0, K), rng.normal(size=(1, K))
    w = solve_frames(A, b, weight, guess, np.ones((1, K), bool))
    s = 1 / np.sqrt(weight)
    y = np.linalg.lstsq(A[0] * s, b[0] - A[0] @ guess[0], rcond=None)[0]
    assert rel(w[0], guess[0] + s * y) < 1e-9


def test_rows_with_everything_masked_are_zero():
    A, b, weight, guess, _ = problem(6)
    mask = np.zeros(guess.shape, dtype=bool)
    assert np.array_equal(solve_frames(A, b, weight, guess, mask), np.zeros(guess.shape))
    assert np.array_equal(solve_over_time(A, b, weight, guess, mask, 1.0, 1.0), np.zeros(guess.shape))


def test_reduced_constraints_keep_the_equations_and_orthonormalise_them():
    A, b, weight, guess, mask = problem(7, k=2)
    C, d, keep = reduced_constraints(A, b, weight, mask)
    assert keep.all()  # full row rank
    for t in range(len(b)):
        scale = np.where(mask[t], 1 / np.sqrt(weight), 0.0)
        assert np.allclose((C[t] * scale) @ (C[t] * scale).T, np.eye(6), atol=1e-10)
        w = dense_row(A[t], b[t], weight, guess[t], mask[t])  # any w with A w = b also has C w = d
        assert rel(C[t] @ w, d[t]) < 1e-9


# -- over time --------------------------------------------------------------------------------

def dense_over_time(A, b, weight, guess, mask, s, mu):
    """All rows' entries in one vector, masked ones removed (fixed at zero): the KKT system of
    μ Σ (w − g)ᵀW(w − g) + s Σ ‖w_t − w_t−1‖² s.t. A_t w_t = b_t, solved densely."""
    n, K = mask.shape
    on = np.flatnonzero(mask.ravel())
    D = np.zeros(((n - 1) * K, n * K))
    for t in range(n - 1):
        D[t * K:(t + 1) * K, t * K:(t + 1) * K] = -np.eye(K)
        D[t * K:(t + 1) * K, (t + 1) * K:(t + 2) * K] = np.eye(K)
    H = mu * np.diag(np.tile(weight, n)) + s * D.T @ D
    E = np.zeros((6 * n, n * K))
    for t in range(n):
        E[6 * t:6 * t + 6, t * K:(t + 1) * K] = A[t]
    H, E = H[np.ix_(on, on)], E[:, on]
    kkt = np.block([[H, E.T], [E, np.zeros((6 * n, 6 * n))]])
    rhs = np.r_[mu * np.tile(weight, n)[on] * guess.ravel()[on], b.ravel()]
    w = np.zeros(n * K)
    w[on] = np.linalg.solve(kkt, rhs)[:on.size]
    return w.reshape(n, K)


@pytest.mark.parametrize("masked", [0.0, 0.3])
@pytest.mark.parametrize("s, mu", [(0.0, 1.0), (5.0, 1.0), (100.0, 0.5)])
def test_over_time_is_the_dense_kkt_solution(s, mu, masked):
    A, b, weight, guess, mask = problem(8, n=7, k=2, masked=masked)
    w = solve_over_time(A, b, weight, guess, mask, s, mu)
    assert np.all(w[~mask] == 0)
    assert rel(w, dense_over_time(A, b, weight, guess, mask, s, mu)) < 1e-8
    assert rel(np.einsum("nik,nk->ni", A, w), b) < 1e-10


def test_over_time_without_smoothing_is_the_per_row_solution():
    A, b, weight, guess, mask = problem(9, n=20, k=3, masked=0.2)
    assert rel(solve_over_time(A, b, weight, guess, mask, 0.0, 3.0), solve_frames(A, b, weight, guess, mask)) < 1e-9


def test_smoothing_pulls_the_rows_together():
    A, b, weight, guess, mask = problem(10, n=30, k=3)
    variation = [np.sum(np.diff(solve_over_time(A, b, weight, guess, mask, s, 1.0), axis=0) ** 2)
                 for s in (0.0, 1.0, 10.0, 100.0)]
    assert all(later <= earlier * (1 + 1e-9) for earlier, later in zip(variation, variation[1:])), variation
    assert variation[-1] < 0.5 * variation[0]
