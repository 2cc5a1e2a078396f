"""dynlib.algorithms.linalg against numpy: Cholesky, its solve, the small SPD inverse of ABA, the
triangular solve with several right-hand sides, and the tree-sparse LᵀDL solves.

Random symmetric positive definite matrices of sizes 1..40 are built from a random
orthogonal basis and chosen eigenvalues, so that their condition number is known:
well conditioned (1 to 10), and ill conditioned (1e8 and 1e12, as a long chain's mass
matrix gets). For those the forward error may grow with the condition number, so
the checks are the ones a backward-stable algorithm guarantees: the factor
reproduces A (‖L Lᵀ − A‖ / ‖A‖ ~ eps), the solve's residual is small
(‖A x − b‖ / (‖A‖ ‖x‖) ~ eps), and the forward error stays within cond · eps.
"""
import numpy as np
import pytest

from dynlib.algorithms.linalg import backward_substitution, cholesky, cholesky_solve, forward_substitution, spd_inverse
from helpers import EPS

SIZES = (1, 2, 3, 6, 7, 15, 40)
CONDITIONS = (1.0, 10.0, 1e8, 1e12)


def spd(n, cond, rng):
    """A random SPD matrix of size n whose eigenvalues span [1/cond, 1] (log-uniformly)."""
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    eig = np.geomspace(1.0 / cond, 1.0, n) if n > 1 else np.ones(1)
    A = (Q * rng.permutation(eig)) @ Q.T
    return 0.5 * (A + A.T)


def factor(A):
    L = np.full_like(A, np.nan)  # every entry must be written, the upper triangle as zeros
    ok = cholesky(A, L)
    return ok, L


@pytest.mark.parametrize("cond", CONDITIONS)
@pytest.mark.parametrize("n", SIZES)
def test_cholesky_is_numpys_factor(n, cond):
    rng = np.random.default_rng(n * 7 + int(np.log10(cond)))
    A = spd(n, cond, rng)
    ok, L = factor(A)
    assert ok
    assert np.array_equal(L, np.tril(L)), "the upper triangle must be zero"
    assert np.all(np.diag(L) > 0)
    assert np.linalg.norm(L @ L.T - A) <= 20 * n * EPS * np.linalg.norm(A)
    # the factor is unique: numpy's (LAPACK's) agrees within the factor's own conditioning
    ref = np.linalg.cholesky(A)
    assert np.linalg.norm(L - ref) <= 20 * n * EPS * np.sqrt(cond) * np.linalg.norm(ref)


@pytest.mark.parametrize("cond", CONDITIONS)
@pytest.mark.parametrize("n", SIZES)
def test_cholesky_solve_against_numpy(n, cond):
    rng = np.random.default_rng(1000 + n)
    A = spd(n, cond, rng)
    x_true = rng.normal(size=n)
    b = A @ x_true
    ok, L = factor(A)
    assert ok
    x = np.full(n, np.nan)
    cholesky_solve(L, b, x)
    assert np.linalg.norm(A @ x - b) <= 50 * n * EPS * np.linalg.norm(A) * np.linalg.norm(x)
    assert np.linalg.norm(x - x_true) <= 50 * n * EPS * cond * np.linalg.norm(x_true)
    ref = np.linalg.solve(A, b)
    assert np.linalg.norm(x - ref) <= 100 * n * EPS * cond * np.linalg.norm(ref)


def test_cholesky_solve_may_overwrite_its_right_hand_side():
    rng = np.random.default_rng(3)
    A = spd(9, 100.0, rng)
    b = rng.normal(size=9)
    _, L = factor(A)
    x = np.empty(9)
    cholesky_solve(L, b, x)
    cholesky_solve(L, b, b)  # x aliasing b, as the kernels call it
    assert np.array_equal(b, x)


@pytest.mark.parametrize("m", [0, 1, 4])
@pytest.mark.parametrize("n", SIZES)
def test_forward_substitution_against_numpy_in_both_orientations(n, m):
    """X = L⁻¹ B column by column; with transposed views V Lᵀ = Z row by row, in place (as contact-id's
    distribution calls it)."""
    rng = np.random.default_rng(50 + n)
    _, L = factor(spd(n, 100.0, rng))
    B = rng.normal(size=(n, m))
    X = np.full((n, m), np.nan)
    forward_substitution(L, B, X)
    assert np.linalg.norm(L @ X - B) <= 50 * n * EPS * np.linalg.norm(L) * max(np.linalg.norm(X), 1.0)
    assert np.allclose(X, np.linalg.solve(L, B), rtol=1e-10, atol=1e-12)
    Z = rng.normal(size=(m, n))
    V = Z.copy()
    forward_substitution(L, V.T, V.T)
    assert np.allclose(V @ L.T, Z, rtol=1e-10, atol=1e-12)
    assert np.allclose(V, np.linalg.solve(L, Z.T).T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("m", [0, 1, 4])
@pytest.mark.parametrize("n", SIZES)
def test_backward_substitution_against_numpy_and_in_place(n, m):
    """X = L⁻ᵀ B column by column, into another array and in place."""
    rng = np.random.default_rng(70 + n)
    _, L = factor(spd(n, 100.0, rng))
    B = rng.normal(size=(n, m))
    X = np.full((n, m), np.nan)
    backward_substitution(L, B, X)
    assert np.linalg.norm(L.T @ X - B) <= 50 * n * EPS * np.linalg.norm(L) * max(np.linalg.norm(X), 1.0)
    assert np.allclose(X, np.linalg.solve(L.T, B), rtol=1e-10, atol=1e-12)
    Y = B.copy()
    backward_substitution(L, Y, Y)
    assert np.array_equal(Y, X)


@pytest.mark.parametrize("bad", ["indefinite", "semidefinite", "nan"])
def test_cholesky_reports_a_matrix_that_is_not_positive_definite(bad):
    rng = np.random.default_rng(4)
    A = spd(6, 10.0, rng)
    if bad == "indefinite":
        Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
        A = (Q * np.array([1.0, 2.0, -0.5, 3.0, 1.0, 1.0])) @ Q.T
        assert np.linalg.eigvalsh(A).min() < -0.4
    elif bad == "semidefinite":
        A[2, :] = A[:, 2] = 0.0  # a massless DoF: the third pivot is exactly zero
    else:
        A[3, 3] = np.nan
    ok, _ = factor(A)
    assert not ok


@pytest.mark.parametrize("cond", (1.0, 1e3, 1e8))
@pytest.mark.parametrize("n", (1, 2, 3, 4, 5, 6))
def test_spd_inverse_against_numpy(n, cond):
    """The 1x1 .. 6x6 blocks of ABA (D = Sᵀ IA S), written into the top-left of 6x6 buffers."""
    rng = np.random.default_rng(50 + n)
    A6 = np.full((6, 6), np.nan)
    A6[:n, :n] = spd(n, cond, rng) * rng.uniform(0.1, 100.0)  # not only unit scale
    W = np.full((6, 6), np.nan)
    out = np.full((6, 6), np.nan)
    spd_inverse(A6, n, W, out)
    A, X = A6[:n, :n], out[:n, :n]
    ref = np.linalg.inv(A)
    assert np.linalg.norm(X - ref) <= 100 * n * EPS * cond * np.linalg.norm(ref)
    assert np.linalg.norm(A @ X - np.eye(n)) <= 100 * n * EPS * cond
    assert np.all(np.isnan(out[n:, :])) and np.all(np.isnan(out[:, n:])), "only the n x n block is written"


# ----------------------------------------------------------------------------- LTDL along the tree

def _ltdl_cases():
    from helpers import random_tree, sample

    for name, floating in (("arm6", False), ("quadruped", True), ("biped", True)):
        yield sample(name, floating_base=floating)
    for nb, seed, floating in ((1, 0, False), (7, 1, False), (15, 2, True), (40, 3, True), (40, 4, False)):
        yield random_tree(nb, seed, floating_base=floating)


def test_ltdl_solve_equals_the_dense_cholesky_solve_on_trees():
    """M of random trees and sample robots at random configurations (with a diagonal added, as
    implicit joint friction does): the tree-sparse LᵀDL solve equals the dense Cholesky solve,
    and its factor reproduces M."""
    import dynlib
    from dynlib.algorithms.linalg import ltdl, ltdl_solve

    rng = np.random.default_rng(5)
    for model in _ltdl_cases():
        par = model.arrays.dof_parent
        for _ in range(3):
            M = dynlib.crba(model, dynlib.random_configuration(model, rng)) + np.diag(rng.uniform(0, 0.1, model.nv))
            LD = np.full_like(M, np.nan)
            assert ltdl(M, par, LD)
            L = np.eye(model.nv)
            for i in range(model.nv):  # the factor lives on the ancestor entries only
                j = par[i]
                while j >= 0:
                    L[i, j] = LD[i, j]
                    j = par[j]
            assert np.abs(L.T @ np.diag(np.diag(LD)) @ L - M).max() <= 1e-12 * np.abs(M).max(), model.name
            Lc = np.zeros_like(M)
            assert cholesky(M, Lc)
            for b in (rng.normal(size=model.nv), np.r_[np.zeros(model.nv - 1), 1.0]):
                x, ref = np.empty(model.nv), np.empty(model.nv)
                ltdl_solve(LD, par, b, x)
                cholesky_solve(Lc, b, ref)
                assert np.abs(x - ref).max() <= 1e-12 * np.abs(ref).max(), model.name


def test_ltdl_solve_columns_is_ltdl_solve_of_each_column_times_the_scale():
    """The several right-hand sides of `aba_derivatives` (dynlib.algorithms.derivatives): X = s M^-1 X at once
    equals `ltdl_solve` column by column, scaled, on the trees of the test above."""
    import dynlib
    from dynlib.algorithms.linalg import ltdl, ltdl_solve, ltdl_solve_columns

    rng = np.random.default_rng(6)
    for model in _ltdl_cases():
        par = model.arrays.dof_parent
        M = dynlib.crba(model, dynlib.random_configuration(model, rng)) + np.diag(rng.uniform(0, 0.1, model.nv))
        LD = np.full_like(M, np.nan)
        assert ltdl(M, par, LD)
        for s, B in ((-1.0, rng.normal(size=(model.nv, model.nv))), (1.0, np.eye(model.nv)),
                     (0.5, rng.normal(size=(model.nv, 3)))):
            X = B.copy()
            ltdl_solve_columns(LD, par, X, s)
            ref = np.empty_like(B)
            for c in range(B.shape[1]):
                x = np.empty(model.nv)
                ltdl_solve(LD, par, np.ascontiguousarray(B[:, c]), x)
                ref[:, c] = s * x
            assert np.abs(X - ref).max() <= 1e-12 * np.abs(ref).max(), (model.name, s)


def test_ltdl_rejects_a_matrix_that_is_not_positive_definite():
    from dynlib.algorithms.linalg import ltdl
    from helpers import sample

    model = sample("arm6")
    M = np.eye(model.nv)
    M[2, 2] = -1.0
    assert not ltdl(M, model.arrays.dof_parent, np.zeros_like(M))


def test_dof_parent_is_the_sparsity_of_m():
    """M[i, j] (j < i) is zero unless DoF j is an ancestor of DoF i in dof_parent."""
    import dynlib
    from helpers import random_tree

    model = random_tree(20, 6, floating_base=True)
    par = model.arrays.dof_parent
    M = dynlib.crba(model, dynlib.random_configuration(model, np.random.default_rng(6)))
    for i in range(model.nv):
        chain, j = set(), par[i]
        while j >= 0:
            assert j < i
            chain.add(j)
            j = par[j]
        for j in range(i):
            if j not in chain:
                assert M[i, j] == 0.0
