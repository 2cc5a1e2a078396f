"""Friction cones for contact-id: contact wrenches with non-negative normal forces inside
Coulomb cones.

Per row, the objective of `dynlib.motion.wrench_distribution.solve_frames` with, on every
active contact, the normal force nᵀf ≥ 0 and the Coulomb cone ‖f − (nᵀf) n‖ ≤ μ nᵀf
(a second-order cone), n the ground normal. Rows whose unconstrained solution
already lies in the cones keep it (it is then optimal); the others go to Clarabel
(`friction_frame`). When the cones and the root equations cannot hold together
the row is *infeasible*: it gets the wrenches in the cones that minimise
ρ‖A w − b‖² + (w − g)ᵀW(w − g) (ρ = `RELAX_WEIGHT`, the root residual first), and
`feasible` is False there.
"""
from __future__ import annotations

import numpy as np

from .wrench_distribution import reduced_constraints, solve_frames

CONE_TOL = 1e-9       # relative slack before a per-frame solution counts as outside the cone
RELAX_WEIGHT = 1e6    # ρ on ‖A w − b‖² in the infeasible frames' relaxed problem
SOLVED = ("Solved", "AlmostSolved")  # Clarabel statuses taken as solved


def tangents(normal):
    """(n, t1, t2): the unit normal and two unit tangents, an orthonormal basis."""
    n = np.asarray(normal, dtype=np.float64)
    n = n / np.linalg.norm(n)
    t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    return n, t1, np.cross(n, t1)


def in_cones(w, mask, mu, normal=(0.0, 0.0, 1.0), tol=CONE_TOL):
    """(N,) bool: every active contact's force (w (N, k, 6)) has nᵀf >= 0 and
    ‖f_t‖ <= mu nᵀf, within `tol` relative to the force's size."""
    n, t1, t2 = tangents(normal)
    f = w[:, :, :3]
    fn = f @ n
    ft = np.hypot(f @ t1, f @ t2)
    slack = tol * np.maximum(1.0, np.linalg.norm(f, axis=2))
    ok = (fn >= -slack) & (ft <= mu * fn + slack)
    return np.all(ok | ~mask, axis=1)


def _clarabel_settings():
    import clarabel

    s = clarabel.DefaultSettings()
    s.verbose = False
    s.tol_gap_abs = s.tol_gap_rel = 1e-10
    s.tol_feas = 1e-11
    s.tol_ktratio = 1e-9
    return s


def _csc(M):
    """A dense matrix as scipy CSC (column-major nonzeros), without scipy's dense path."""
    import scipy.sparse as sp

    nz = M.T != 0
    counts = nz.sum(axis=1)
    return sp.csc_matrix((M.T[nz], np.nonzero(nz)[1], np.r_[0, np.cumsum(counts)]), shape=M.shape)


def friction_frame(A, b, weight, guess, mask, mu, normal=(0.0, 0.0, 1.0), relax=False, reduced=None):
    """One row with friction cones, by Clarabel: (w (K,), status, z).

    A (6, K), b (6,), weight, guess (K,), mask (K,) bool (6 entries per contact; the
    force entries of an active contact are unmasked). Without `relax`:
    min ½(w − g)ᵀW(w − g) s.t. the root equations (in the reduced form of
    `reduced_constraints`, or `reduced` = (C, d) already reduced), nᵀf >= 0 and
    ‖f − (nᵀf) n‖ <= mu nᵀf per active contact. With `relax`:
    min ½(w − g)ᵀW(w − g) + ½ρ‖r‖² s.t. A w − r = b and the cones, always feasible.
    `z` are Clarabel's multipliers (P x + q + Aᵀz = 0 for the unmasked entries
    [and r]), in the order: the equations, then per active contact [nᵀf >= 0, cone (3)];
    `status` is Clarabel's status name ('Solved', 'PrimalInfeasible', …).
    """
    import clarabel
    import scipy.sparse as sp

    mask = np.asarray(mask, dtype=bool)
    cols = np.flatnonzero(mask)
    nx = cols.size
    nn, t1, t2 = tangents(normal)
    W = np.broadcast_to(weight, mask.shape)[cols]
    g = np.asarray(guess)[cols]
    if relax:
        diag = np.r_[W, np.full(6, RELAX_WEIGHT)]
        q = np.r_[-W * g, np.zeros(6)]
        eq = np.hstack([A[:, cols], -np.eye(6)])
        rhs = np.asarray(b, dtype=np.float64)
    else:
        if reduced is None:
            C, d, keep = reduced_constraints(A[None], np.asarray(b)[None],
                                              np.broadcast_to(weight, mask.shape)[None], mask[None])
            reduced = C[0][keep[0]], d[0][keep[0]]
        eq, rhs = reduced[0][:, cols], reduced[1]
        diag, q = W, -W * g
    nvar = diag.size
    on = [c for c in range(mask.size // 6) if mask[6 * c]]
    cone = np.zeros((4 * len(on), nvar))
    position = np.cumsum(mask) - 1
    rows = -np.array([nn, mu * nn, t1, t2]) / np.array([[1.0], [max(1.0, mu)], [max(1.0, mu)], [max(1.0, mu)]])
    for k, c in enumerate(on):
        cone[4 * k:4 * k + 4, position[6 * c:6 * c + 3]] = rows  # the cone's rows scaled to O(1)
    Acl = _csc(np.vstack([eq, cone]))
    bcl = np.r_[rhs, np.zeros(cone.shape[0])]
    P = sp.csc_matrix((diag, np.arange(nvar), np.arange(nvar + 1)), shape=(nvar, nvar))
    cones = [clarabel.ZeroConeT(eq.shape[0])]
    cones += [clarabel.NonnegativeConeT(1), clarabel.SecondOrderConeT(3)] * len(on)
    sol = clarabel.DefaultSolver(P, q, Acl, bcl, cones, _clarabel_settings()).solve()
    w = np.zeros(mask.size)
    w[cols] = np.asarray(sol.x)[:nx]
    return w, str(sol.status), np.asarray(sol.z)


def solve_friction(A, b, weight, guess, mask, mu, normal=(0.0, 0.0, 1.0), w0=None, progress=None):
    """Per row with friction cones (see `friction_frame`). Rows whose unconstrained
    solution `w0` (`solve_frames`, computed when not given) already lies in the cones
    keep it: it is optimal there. Returns (w (N, K), feasible (N,) bool, status (N,)
    object array: 'in cone', or Clarabel's status, with '; relaxed: …' when infeasible)."""
    mask = np.asarray(mask, dtype=bool)
    n, K = mask.shape
    weight = np.broadcast_to(weight, mask.shape)
    w = solve_frames(A, b, weight, guess, mask) if w0 is None else np.array(w0, dtype=np.float64)
    status = np.full(n, "in cone", dtype=object)
    feasible = np.ones(n, dtype=bool)
    contact_on = mask.reshape(n, -1, 6)[:, :, 0]
    todo = np.flatnonzero(~in_cones(w.reshape(n, -1, 6), contact_on, mu, normal))
    if todo.size:
        C, d, keep = reduced_constraints(A[todo], b[todo], weight[todo], mask[todo])
    for k, t in enumerate(todo):
        wt, st, _ = friction_frame(A[t], b[t], weight[t], guess[t], mask[t], mu, normal,
                                   reduced=(C[k][keep[k]], d[k][keep[k]]))
        if st not in SOLVED:
            wt, st2, _ = friction_frame(A[t], b[t], weight[t], guess[t], mask[t], mu, normal, relax=True)
            feasible[t] = False
            st = f"{st}; relaxed: {st2}"
        w[t], status[t] = wt, st
        if progress is not None:
            progress(k + 1, todo.size)
    return w, feasible, status
