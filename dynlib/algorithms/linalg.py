"""Small dense linear algebra for the kernels, allocation-free (numba).

Cholesky factorisation and solves for the joint-space inertia M (symmetric
positive definite), the same exploiting the tree's sparsity (LTDL, RBDA §6.3),
the inverse of the small SPD blocks of ABA, and solves with several right-hand sides
(`forward_substitution`, `backward_substitution` with the transpose, `ltdl_solve_columns`).
"""
import math

from .._numba.decorators import kernel


@kernel
def cholesky(A, L):
    """L = the lower Cholesky factor of the SPD matrix A (n x n). Returns False if A is not PD."""
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:  # also catches NaN
            return False
        L[j, j] = math.sqrt(s)
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
        for i in range(j):
            L[i, j] = 0.0
    return True


@kernel
def cholesky_solve(L, b, x):
    """x = A^-1 b given the Cholesky factor L of A (x may alias b)."""
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@kernel
def forward_substitution(L, B, X):
    """X = L^-1 B for L (n x n) lower triangular and B, X (n x m), column by column (X may alias B). With
    transposed views (B = Zᵀ, X = Vᵀ) it solves V Lᵀ = Z row by row."""
    n, m = B.shape
    for c in range(m):
        for a in range(n):
            s = B[a, c]
            for k in range(a):
                s -= L[a, k] * X[k, c]
            X[a, c] = s / L[a, a]


@kernel
def backward_substitution(L, B, X):
    """X = L^-T B for L (n x n) lower triangular and B, X (n x m), column by column (X may alias B)."""
    n, m = B.shape
    for c in range(m):
        for a in range(n - 1, -1, -1):
            s = B[a, c]
            for k in range(a + 1, n):
                s -= L[k, a] * X[k, c]
            X[a, c] = s / L[a, a]


@kernel
def ltdl(A, dof_parent, LD):
    """M = Lᵀ D L for the SPD matrix A with the sparsity of a joint-space inertia (RBDA Table 6.3):
    L unit lower triangular, L[i, j] nonzero only for DoF j an ancestor of DoF i (`dof_parent`
    chains, -1 ends them). LD gets L below the diagonal, D on it, on those ancestor entries
    (others stale). O(Σ depth²) against n³/6; no fill-in. Returns False if A is not PD."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1):
            LD[i, j] = A[i, j]
    for k in range(n - 1, -1, -1):
        if not LD[k, k] > 0.0:  # also catches NaN
            return False
        i = dof_parent[k]
        while i >= 0:
            a = LD[k, i] / LD[k, k]
            j = i
            while j >= 0:
                LD[i, j] -= a * LD[k, j]
                j = dof_parent[j]
            LD[k, i] = a
            i = dof_parent[i]
    return True


@kernel
def ltdl_solve(LD, dof_parent, b, x):
    """x = A^-1 b given `ltdl`'s factor LD of A (x may alias b): Lᵀ z = b (leaves to root;
    zero entries skipped, so a b on one branch costs that branch), y = D⁻¹ z, L x = y."""
    n = LD.shape[0]
    for i in range(n):
        x[i] = b[i]
    for i in range(n - 1, -1, -1):
        xi = x[i]
        if xi != 0.0:
            j = dof_parent[i]
            while j >= 0:
                x[j] -= LD[i, j] * xi
                j = dof_parent[j]
    for i in range(n):
        x[i] /= LD[i, i]
    for i in range(n):
        s = x[i]
        j = dof_parent[i]
        while j >= 0:
            s -= LD[i, j] * x[j]
            j = dof_parent[j]
        x[i] = s


@kernel
def ltdl_solve_columns(LD, dof_parent, X, s):
    """X = s A^-1 X given `ltdl`'s factor LD of A, every column of X (n x m) at once: `ltdl_solve`'s
    Lᵀ z = x, y = D⁻¹ z, L x = y by row operations (no zero entries skipped), the scale s taken with D⁻¹."""
    n, ncol = X.shape
    for i in range(n - 1, -1, -1):
        j = dof_parent[i]
        while j >= 0:
            lij = LD[i, j]
            for c in range(ncol):
                X[j, c] -= lij * X[i, c]
            j = dof_parent[j]
    for i in range(n):
        dinv = s / LD[i, i]
        for c in range(ncol):
            X[i, c] *= dinv
    for i in range(n):
        j = dof_parent[i]
        while j >= 0:
            lij = LD[i, j]
            for c in range(ncol):
                X[i, c] -= lij * X[j, c]
            j = dof_parent[j]


@kernel
def spd_inverse(A, n, W, out):
    """out[:n, :n] = A[:n, :n]^-1 for a small SPD block (W: n x n scratch, may be 6x6)."""
    if n == 1:
        out[0, 0] = 1.0 / A[0, 0]
        return
    # Gauss-Jordan without pivoting is stable for SPD matrices
    for r in range(n):
        for c in range(n):
            W[r, c] = A[r, c]
            out[r, c] = 1.0 if r == c else 0.0
    for k in range(n):
        piv = 1.0 / W[k, k]
        for c in range(n):
            W[k, c] *= piv
            out[k, c] *= piv
        for r in range(n):
            if r != k:
                f = W[r, k]
                if f != 0.0:
                    for c in range(n):
                        W[r, c] -= f * W[k, c]
                        out[r, c] -= f * out[k, c]
