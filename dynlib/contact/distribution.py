"""How a root wrench is shared among contacts: the least-squares solvers of contact-id.

The root rows of the equations of motion, ``A w = b`` (A (6, K) the root block of
the contacts' transposed Jacobians, b (6,) the root rows of M a + h; see
`dynlib.contact.inverse`), leave the K contact-wrench entries w underdetermined
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

    One sparse KKT matrix [[H, Cᵀ], [C, 0]] (H = μW + s DᵀD, C block diagonal),
    with the unknowns in time order (frame t's wrenches, then its multipliers), so
    that it is banded; factorised once by SuperLU in that order without pivoting,
    with one step of iterative refinement. O(N K³) time and O(N K²) memory (about
    0.45 GB for 20 000 rows of four 6D contacts).
    """
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    mask = np.asarray(mask, dtype=bool)
    n, K = mask.shape
    weight = np.broadcast_to(weight, mask.shape)
    w = np.zeros((n, K))
    if not mask.any():
        return w
    C, d, keep = reduced_constraints(A, b, weight, mask)
    # unknowns in time order: frame t's active wrench entries, then its kept equations
    nvar, nrow = mask.sum(axis=1), keep.sum(axis=1)
    base = np.r_[0, np.cumsum(nvar + nrow)[:-1]]
    xi = np.where(mask, base[:, None] + np.cumsum(mask, axis=1) - 1, -1)
    li = np.where(keep, (base + nvar)[:, None] + np.cumsum(keep, axis=1) - 1, -1)
    size = int(base[-1] + nvar[-1] + nrow[-1])
    # H: μ W on the diagonal, + s DᵀD (D: differences between consecutive rows, an
    # inactive entry counting as a fixed zero: every entry has one difference per neighbour)
    t_, j_ = np.nonzero(mask[1:] & mask[:-1])
    deg = np.zeros(mask.shape)
    deg[1:] += 1.0
    deg[:-1] += 1.0
    diag = min_torque * weight[mask] + smoothing * deg[mask]
    xa, xb = xi[t_ + 1, j_], xi[t_, j_]
    # C and Cᵀ: C[t, i, j] for kept rows i and active entries j of frame t
    tc, ic, jc = np.nonzero(keep[:, :, None] & mask[:, None, :])
    cv, cr, cc = C[tc, ic, jc], li[tc, ic], xi[tc, jc]
    off = np.full(t_.size, -smoothing) if smoothing > 0 else np.zeros(0)
    if smoothing == 0:
        xa = xb = np.zeros(0, dtype=np.int64)
    rows = np.r_[xi[mask], xa, xb, cr, cc]
    cols = np.r_[xi[mask], xb, xa, cc, cr]
    vals = np.r_[diag, off, off, cv, cv]
    kkt = sp.csc_matrix((vals, (rows, cols)), shape=(size, size))
    rhs = np.zeros(size)
    rhs[xi[mask]] = min_torque * weight[mask] * np.asarray(guess)[mask]
    rhs[li[keep]] = d[keep]
    # Time order needs no pivoting: eliminating the frames before t leaves a convex
    # quadratic in frame t's wrenches (an SPD block, pivots > 0), then its equations
    # give −C H⁻¹ Cᵀ (negative definite): diagonal pivots keep the band, and the fill.
    lu = splu(kkt, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    sol = lu.solve(rhs)
    sol += lu.solve(rhs - kkt @ sol)
    w[mask] = sol[xi[mask]]
    return w
