"""How a root wrench is shared among contacts: the least-squares solvers of contact-id.

The root rows of the equations of motion, ``A w = b`` (A (6, K) the root block of
the contacts' transposed Jacobians, b (6,) the root rows of M a + h; see
`dynlib.motion.contact_id`), leave the K contact-wrench entries w underdetermined
when there are several contacts. These solvers pick

- per row (`solve_frames`): ``min (w − g)ᵀ W (w − g)  s.t.  A w = b``, batched over
  the rows (one pseudo-inverse per row); when A w = b cannot hold (flight, or
  point contacts that cannot make a moment) the root equations are met in the
  least-squares sense first: w = g + W^-½ (A W^-½)⁺ (b − A g);
- over time (`solve_over_time`): all rows in one sparse equality-constrained
  least-squares problem, trading the weighted norm against the wrenches' changes
  from row to row.

Entries may be masked out (an inactive contact, a point contact's moments): a
masked entry is a fixed zero. Arrays: A (N, 6, K), b (N, 6), weight (N, K) or
(K,), guess (N, K), mask (N, K) bool; results w (N, K).
"""
from __future__ import annotations

import numpy as np

from .._numba.decorators import kernel
from ..algorithms.linalg import backward_substitution, cholesky, cholesky_solve, forward_substitution

RANK_RTOL = 1e-10     # singular values of A W^-1/2 below this (relative) are dropped


def reduced_constraints(A, b, weight, mask):
    """The root equations of each row in well-conditioned, independent form.

    With A W^-1/2 = U Σ Vᵀ (masked columns zero), keep the r singular values above
    RANK_RTOL·σ_max and return C = Σ_r⁻¹ U_rᵀ A and d = Σ_r⁻¹ U_rᵀ b (so that
    C W^-1/2 = V_rᵀ has orthonormal rows), with `keep` (N, 6) marking the rows kept.
    Rows of A w = b outside range(A) cannot hold and are dropped: what remains is
    the least-squares part of the root equations.
    """
    scale = np.where(mask, 1.0 / np.sqrt(weight), 0.0)              # (N, K) W^-1/2, masked
    U, s, _ = np.linalg.svd(A * scale[:, None, :], full_matrices=False)
    keep = s > RANK_RTOL * s[:, :1]
    keep &= s[:, :1] > 0
    inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)         # (N, 6)
    Ut = U.transpose(0, 2, 1) * inv[:, :, None]                     # Σ⁻¹ Uᵀ, zero rows dropped
    return Ut @ A, np.einsum("nij,nj->ni", Ut, b), keep


def solve_frames(A, b, weight, guess, mask):
    """Per row: min (w − g)ᵀ W (w − g) s.t. A w = b (least squares in A w = b first).

    A (N, 6, K), b (N, 6) root rows, weight (N, K) or (K,) positive, guess (N, K),
    mask (N, K) bool (False: the variable is zero). Returns w (N, K).
    """
    mask = np.asarray(mask, dtype=bool)
    scale = np.where(mask, 1.0 / np.sqrt(np.broadcast_to(weight, mask.shape)), 0.0)
    g = np.where(mask, guess, 0.0)
    e = b - np.einsum("nik,nk->ni", A, g)
    B = A * scale[:, None, :]
    y = np.einsum("nki,ni->nk", np.linalg.pinv(B, rcond=RANK_RTOL), e)
    return g + scale * y


def solve_over_time(A, b, weight, guess, mask, smoothing, min_torque):
    """All rows at once: min μ Σ_t (w_t − g_t)ᵀ W (w_t − g_t) + s Σ_t ‖w_t − w_{t−1}‖²
    subject to the (reduced) root equations of every row; μ = `min_torque` > 0,
    s = `smoothing` >= 0. A masked (inactive) entry counts as a fixed zero in the
    differences, so that a contact's wrench is drawn smoothly to and from zero where it
    starts and ends. Same arguments as `solve_frames`; returns w (N, K).

    The KKT system [[H, Cᵀ], [C, 0]] (H = μW + s DᵀD, C block diagonal) is block
    tri-diagonal in time; it is solved by block elimination (a Riccati recursion): the
    forward pass (`_forward`, rows in chunks of CHUNK) leaves each row's wrenches as
    w_t = u_t + s G_t w_{t+1}, G_t (n_t, n_t) symmetric on the row's n_t active entries
    (stored as a triangle), and the backward pass (`_backward`) applies it. O(N K³)
    time, O(N n²/2) memory: 0.6 kB a row for four point contacts, 2.4 kB for four 6D ones.
    """
    from ..errors import NumericalError

    mask = np.asarray(mask, dtype=bool)
    n, K = mask.shape
    weight = np.broadcast_to(weight, mask.shape)
    guess = np.broadcast_to(guess, mask.shape)
    w = np.zeros((n, K))
    if not mask.any():
        return w
    active = mask.sum(axis=1)
    size = active * (active + 1) // 2 if smoothing > 0 else np.zeros(n, dtype=np.int64)
    off = np.r_[0, np.cumsum(size)].astype(np.int64)
    G = np.empty(max(int(off[-1]), 1))
    work = np.empty((5, K, K))
    ia, pos = np.empty(K, dtype=np.int64), np.empty(K, dtype=np.int64)
    vec = np.empty((2, K))
    for t0 in range(0, n, CHUNK):
        rows = slice(t0, t0 + CHUNK)
        C, d, keep = reduced_constraints(A[rows], b[rows], weight[rows], mask[rows])
        wt = np.ascontiguousarray(weight[rows])
        rhs = np.where(mask[rows], min_torque * wt * guess[rows], 0.0)
        bad = _forward(t0, mask, wt, rhs, np.ascontiguousarray(C), np.ascontiguousarray(d), keep,
                       float(smoothing), float(min_torque), off, G, w, work, vec, ia, pos)
        if bad >= 0:
            raise NumericalError(f"contact wrenches over time: row {bad}: the block elimination met a "
                                 "matrix that is not positive definite")
    if smoothing > 0:
        _backward(mask, float(smoothing), off, G, w, ia)
    return w


CHUNK = 256           # rows per batch of constraint reductions (their SVDs) in solve_over_time


@kernel
def _tri(i, j):
    """Index of entry (i, j) of a symmetric matrix stored as its lower triangle, row by row."""
    return i * (i + 1) // 2 + j if j <= i else j * (j + 1) // 2 + i


@kernel
def _forward(t0, mask, weight, rhs, C, d, keep, s, mu, off, G, w, work, vec, ia, pos):
    """Rows t0 … t0 + len(C) − 1 of the forward elimination. Row t, entries ia (n active):
    H = μW + s deg − s² P G_{t−1} Pᵀ, r = μWg + s P u_{t−1} (P: entries active in both
    rows), then u_t = H⁻¹r + Z Q⁻¹(d − C H⁻¹r) (Z = H⁻¹Cᵀ, Q = C H⁻¹ Cᵀ) into w[t] and
    G_t = H⁻¹ − Z Q⁻¹ Zᵀ into G[off[t]:]. Returns the first row whose H or Q is not
    positive definite, or -1."""
    N, K = mask.shape
    H, L, Y, Z, R = work[0], work[1], work[2], work[3], work[4]
    x, e = vec[0], vec[1]
    for tc in range(C.shape[0]):
        t = t0 + tc
        n = 0
        for j in range(K):
            if mask[t, j]:
                ia[n] = j
                n += 1
        if n == 0:
            continue
        # pass 1: the row's Hessian and gradient, the earlier rows eliminated
        deg = (1.0 if t > 0 else 0.0) + (1.0 if t < N - 1 else 0.0)
        for a in range(n):
            for c in range(n):
                H[a, c] = 0.0
            H[a, a] = mu * weight[tc, ia[a]] + s * deg
            x[a] = rhs[tc, ia[a]]
        if t > 0 and s > 0:
            p = 0
            for j in range(K):
                pos[j] = p if mask[t - 1, j] else -1
                p += 1 if mask[t - 1, j] else 0
            for a in range(n):
                if pos[ia[a]] >= 0:
                    x[a] += s * w[t - 1, ia[a]]
                    for c in range(n):
                        if pos[ia[c]] >= 0:
                            H[a, c] -= s * s * G[off[t - 1] + _tri(pos[ia[a]], pos[ia[c]])]
        # pass 2: H = L Lᵀ; Z = Cᵀ (kept rows), Y = L⁻¹ Cᵀ, Q = YᵀY = R Rᵀ
        if not cholesky(H[:n, :n], L[:n, :n]):
            return t
        m = 0
        for i in range(6):
            if keep[tc, i]:
                for a in range(n):
                    Z[a, m] = C[tc, i, ia[a]]
                e[m] = d[tc, i]
                m += 1
        forward_substitution(L[:n, :n], Z[:n, :m], Y[:n, :m])
        for i in range(m):
            for c in range(m):
                acc = 0.0
                for a in range(n):
                    acc += Y[a, i] * Y[a, c]
                H[i, c] = acc
        if not cholesky(H[:m, :m], R[:m, :m]):
            return t
        # pass 3: u = x0 + Z Q⁻¹ (d − C x0), x0 = H⁻¹ r; then Z = H⁻¹Cᵀ = L⁻ᵀ Y
        cholesky_solve(L[:n, :n], x[:n], x[:n])
        for c in range(m):
            for a in range(n):
                e[c] -= Z[a, c] * x[a]
        cholesky_solve(R[:m, :m], e[:m], e[:m])
        backward_substitution(L[:n, :n], Y[:n, :m], Z[:n, :m])
        for a in range(n):
            for c in range(m):
                x[a] += Z[a, c] * e[c]
            w[t, ia[a]] = x[a]
        if s == 0:
            continue
        _store_inverse(L, R, Y, Z, n, m, G, off[t])
    return -1


@kernel
def _store_inverse(L, R, Y, Z, n, m, G, g0):
    """G[g0:] = the lower triangle of H⁻¹ − Z Q⁻¹ Zᵀ = L⁻ᵀL⁻¹ − V Vᵀ (H = L Lᵀ, Q = R Rᵀ,
    V = Z R⁻ᵀ, n x n, Z n x m); Y (scratch) gets L⁻¹, Z gets V."""
    forward_substitution(R[:m, :m], Z[:n, :m].T, Z[:n, :m].T)  # V Rᵀ = Z, row by row
    for c in range(n):
        for a in range(n):
            Y[a, c] = 1.0 if a == c else 0.0
    forward_substitution(L[:n, :n], Y[:n, :n], Y[:n, :n])
    for a in range(n):
        for c in range(a + 1):
            acc = 0.0
            for k in range(a, n):
                acc += Y[k, a] * Y[k, c]
            for k in range(m):
                acc -= Z[a, k] * Z[c, k]
            G[g0 + _tri(a, c)] = acc


@kernel
def _backward(mask, s, off, G, w, ia):
    """w_t += s G_t w_{t+1} on row t's active entries, from the last row back."""
    N, K = mask.shape
    for t in range(N - 2, -1, -1):
        n = 0
        for j in range(K):
            if mask[t, j]:
                ia[n] = j
                n += 1
        for a in range(n):
            acc = 0.0
            for c in range(n):
                acc += G[off[t] + _tri(a, c)] * w[t + 1, ia[c]]
            w[t, ia[a]] += s * acc
