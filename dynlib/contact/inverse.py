"""Contact inverse dynamics: joint torques and contact wrenches behind a floating-base motion.

The equations of motion of a robot whose free-flyer root is unactuated (SPEC §7):

    M(q) a + h(q, v) = tau + Σ_c J_c(q)ᵀ w_c,        tau[:6] = 0,

with J_c the ``local_world_aligned`` Jacobian of contact frame c (6, nv) and
w_c = (f, τ) the wrench the environment applies at the frame's origin, in
world-aligned axes (its dual). The six root rows do not involve tau:

    A w = b_root,   A = [J_1[:, :6]ᵀ … J_k[:, :6]ᵀ] (6, 6k),   b = rnea(q, v, a),

so the contact wrenches come first and the joint torques follow,
``tau = b − Σ_c J_cᵀ w_c`` (root entries then zeroed; their norm before zeroing is
the reported root residual). Each J_c[:, :6] is invertible, so one full contact
determines its wrench exactly; several contacts leave 6(k − 1) directions free,
chosen by least squares:

- per frame: ``min Σ_c (w_c − g_c)ᵀ W (w_c − g_c)  s.t.  A w = b``, with
  W = diag(0.01, 0.01, 0.01, 1, 1, 1) and g = 0 without guesses, W = I with guesses
  (contacts without a guess are guessed zero). When A w = b cannot hold (no
  contact: flight; or point contacts that cannot make a moment) the root
  equations are met in the least-squares sense first, then the weighted norm is
  minimised (w = g + W^-½ (A W^-½)⁺ (b − A g)).
- over time (`over_time=True`): all frames in one sparse equality-constrained
  least-squares problem, ``min μ Σ_t (w_t − g)ᵀ W (w_t − g) + s Σ_t ‖w_t − w_{t−1}‖²``
  (μ = `min_torque`, s = `smoothing`; an inactive contact's wrench counts as zero,
  so loads shift smoothly onto a foot that lands and off one that lifts), root
  equations at every frame; solved
  through its KKT matrix with one sparse LU (scipy.sparse.linalg.splu) and one
  step of iterative refinement. s = 0 gives the per-frame solution.
- friction (`friction=MU`): per frame, the same objective with the normal force
  nᵀf ≥ 0 and the Coulomb cone ‖f − (nᵀf) n‖ ≤ MU nᵀf (a second-order cone) on
  every active contact, n the ground normal (world z). Frames whose per-frame
  solution already lies in the cones keep it (it is then optimal); the others go
  to Clarabel. When the cones and the root equations cannot hold together the
  frame is *infeasible*: it gets the wrenches in the cones that minimise
  ρ‖A w − b‖² + (w − g)ᵀW(w − g) (ρ = 1e6, the root residual first), its
  root residual is not zero, and `feasible` is False there.

Contacts may come and go: time windows per contact (``FRAME@START:STOP``,
closed intervals in seconds) and/or ``active.<frame>`` columns of the input
(non-zero = in contact); both must allow a contact for it to be active. Inactive
contacts get zero wrenches. A *point* contact transmits a force only (its
moments are zero, e.g. a quadruped's foot).

Inputs: q (N, nq), v, a (N, nv) of a model with a free-flyer root. All rows go
through the compiled batched RNEA and Jacobian kernels in one call each; the
per-frame solves are batched numpy (an SVD per frame). O(N k²).

Public: `contact_inverse_dynamics` (the entry point of ``dyn contact-id``),
`ContactID` (its result), `Contact`, `parse_contacts`, `parse_guess`, and the
batch-friendly steps `root_problem`, `solve_frames`, `solve_over_time`,
`solve_friction`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from ..columns import FRICTION_FEASIBLE, RESIDUAL_ROOT, TIME, WRENCH, active_frames, contact_columns, tau_columns
from ..errors import InputError

COMPONENTS = WRENCH
WEIGHT = np.array([0.01, 0.01, 0.01, 1.0, 1.0, 1.0])  # per contact, without guesses
GUESS_WEIGHT = np.ones(6)                              # per contact, with guesses
RANK_RTOL = 1e-10     # singular values of A W^-1/2 below this (relative) are dropped
CONE_TOL = 1e-9       # relative slack before a per-frame solution counts as outside the cone
RELAX_WEIGHT = 1e6    # ρ on ‖A w − b‖² in the infeasible frames' relaxed problem


# --------------------------------------------------------------------- contacts

@dataclasses.dataclass(frozen=True)
class Contact:
    """A contact frame: `windows` ((start, stop), …) closed time intervals in seconds,
    () for always; `point`: forces only (moments zero)."""

    frame: str
    windows: tuple = ()
    point: bool = False

    @classmethod
    def parse(cls, text: str, point: bool = False) -> "Contact":
        """``FRAME`` or ``FRAME@START:STOP[,START:STOP…]`` (either bound may be left out)."""
        frame, at, spec = str(text).partition("@")
        frame = frame.strip()
        if not frame:
            raise InputError(f"contact {text!r}: expected FRAME or FRAME@START:STOP")
        if not at:
            return cls(frame, (), point)
        windows = []
        for part in spec.split(","):
            start, colon, stop = part.partition(":")
            try:
                lo = float(start) if start.strip() else -math.inf
                hi = float(stop) if stop.strip() else math.inf
            except ValueError:
                lo = hi = math.nan
            if not colon or math.isnan(lo) or math.isnan(hi) or lo > hi:
                raise InputError(f"contact {text!r}: time window {part!r} is not START:STOP with "
                                 "START <= STOP (seconds; either may be left out)")
            windows.append((lo, hi))
        return cls(frame, tuple(windows), point)


def parse_contacts(contacts, point=False) -> list:
    """Strings (``FRAME[@START:STOP]``) or `Contact`s -> one `Contact` per frame, in order
    of first mention. Windows of the same frame are merged; a mention without a
    window makes the contact always allowed. `point`: True, or a set of frames."""
    merged = {}
    for c in contacts:
        c = c if isinstance(c, Contact) else Contact.parse(c)
        is_point = c.point or point is True or (not isinstance(point, bool) and c.frame in point)
        if c.frame in merged:
            old = merged[c.frame]
            windows = () if not old.windows or not c.windows else old.windows + c.windows
            merged[c.frame] = Contact(c.frame, windows, old.point or is_point)
        else:
            merged[c.frame] = Contact(c.frame, c.windows, is_point)
    return list(merged.values())


def parse_guess(text: str):
    """``FRAME=fx,fy,fz,tx,ty,tz`` -> (frame, (6,) array)."""
    frame, eq, values = str(text).partition("=")
    try:
        w = np.array([float(x) for x in values.split(",")])
    except ValueError:
        w = np.zeros(0)
    if not eq or not frame.strip() or w.shape != (6,) or not np.all(np.isfinite(w)):
        raise InputError(f"guess {text!r} is not FRAME=fx,fy,fz,tx,ty,tz (six finite numbers: "
                         "force in N, moment in N·m, world-aligned axes at the frame origin)")
    return frame.strip(), w


def active_mask(contacts, time=None, columns=None) -> np.ndarray:
    """(N, k) bool: contact c allowed at row n by its windows and by `columns[frame]`
    ((N,) numbers, non-zero = in contact) when given."""
    columns = columns or {}
    n = None if time is None else len(time)
    for col in columns.values():
        n = len(col) if n is None else n
    if n is None:
        raise InputError("active_mask needs the time column or active columns to know the number of rows")
    mask = np.ones((n, len(contacts)), dtype=bool)
    for c, contact in enumerate(contacts):
        if contact.windows:
            if time is None:
                raise InputError(f"contact '{contact.frame}' has time windows but the motion has no time")
            t = np.asarray(time)
            # closed intervals, with a little slack for times written in decimal
            slack = 1e-9 * max(1.0, float(np.max(np.abs(t))))
            mask[:, c] = np.any([(t >= lo - slack) & (t <= hi + slack) for lo, hi in contact.windows], axis=0)
        if contact.frame in columns:
            mask[:, c] &= np.asarray(columns[contact.frame]) != 0
    return mask


# --------------------------------------------------------------------- the problem

class RootProblem(NamedTuple):
    """b (N, nv) = M a + h (rnea); J (N, k, 6, nv) the contacts' local_world_aligned
    Jacobians; A (N, 6, 6k) the root block of [J_1ᵀ … J_kᵀ]."""

    b: np.ndarray
    J: np.ndarray
    A: np.ndarray


def root_problem(model, q, v, a, frames) -> RootProblem:
    """The rows' inverse dynamics and contact Jacobians, each in one batched kernel call."""
    from ..algorithms.jacobians import frame_jacobian
    from ..algorithms.rnea import rnea

    q, v, a = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (q, v, a))
    n = q.shape[0]
    b = rnea(model, q, v, a)
    J = np.empty((n, len(frames), 6, model.nv))
    for c, frame in enumerate(frames):
        J[:, c] = frame_jacobian(model, q, frame, "local_world_aligned")
    A = np.ascontiguousarray(J[:, :, :, :6].transpose(0, 3, 1, 2).reshape(n, 6, 6 * len(frames)))
    return RootProblem(b, J, A)


def _reduced_constraints(A, b, weight, mask):
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
    C, d, keep = _reduced_constraints(A, b, weight, mask)
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


def _tangents(normal):
    n = np.asarray(normal, dtype=np.float64)
    n = n / np.linalg.norm(n)
    t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    return n, t1, np.cross(n, t1)


def in_cones(w, mask, mu, normal=(0.0, 0.0, 1.0), tol=CONE_TOL):
    """(N,) bool: every active contact's force (w (N, k, 6)) has nᵀf >= 0 and
    ‖f_t‖ <= mu nᵀf, within `tol` relative to the force's size."""
    n, t1, t2 = _tangents(normal)
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
    `_reduced_constraints`, or `reduced` = (C, d) already reduced), nᵀf >= 0 and
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
    nn, t1, t2 = _tangents(normal)
    W = np.broadcast_to(weight, mask.shape)[cols]
    g = np.asarray(guess)[cols]
    if relax:
        diag = np.r_[W, np.full(6, RELAX_WEIGHT)]
        q = np.r_[-W * g, np.zeros(6)]
        eq = np.hstack([A[:, cols], -np.eye(6)])
        rhs = np.asarray(b, dtype=np.float64)
    else:
        if reduced is None:
            C, d, keep = _reduced_constraints(A[None], np.asarray(b)[None],
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


SOLVED = ("Solved", "AlmostSolved")


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
        C, d, keep = _reduced_constraints(A[todo], b[todo], weight[todo], mask[todo])
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


# --------------------------------------------------------------------- the entry point

class ContactID(NamedTuple):
    """The result of `contact_inverse_dynamics`.

    time (N,); tau (N, nv) motor torques, root entries zero; wrenches (N, k, 6) per
    contact (f, τ) at the frame origin, world-aligned axes; residual (N,) the norm of
    the root rows of M a + h − Σ Jᵀw before zeroing; active (N, k) bool; feasible
    (N,) bool (all True without friction); frames (k,); derivatives: 'given',
    'central' or 'savgol'; friction: whether the cones were imposed.
    """

    time: np.ndarray
    tau: np.ndarray
    wrenches: np.ndarray
    residual: np.ndarray
    active: np.ndarray
    feasible: np.ndarray
    frames: tuple
    derivatives: str
    friction: bool

    def table(self, model):
        """(names, data): ``time``, ``tau.*``, ``contact.<frame>.fx … tz``,
        ``residual.root`` and, with friction, ``friction.feasible`` (1 or 0)."""
        names = [TIME] + tau_columns(model) + contact_columns(self.frames) + [RESIDUAL_ROOT]
        parts = [self.time[:, None], self.tau, self.wrenches.reshape(len(self.time), -1), self.residual[:, None]]
        if self.friction:
            names.append(FRICTION_FEASIBLE)
            parts.append(self.feasible[:, None].astype(np.float64))
        return names, np.hstack(parts)


def _motion(model, motion, derivatives, window, polyorder, columns):
    """(time or None, q, v, a, derivatives, active columns {frame: (N,)}, traj or None)."""
    from ..derivatives import Motion, motion_from_trajectory
    from ..trajectory import Trajectory

    if isinstance(motion, Trajectory):
        m = motion_from_trajectory(model, motion, derivatives=derivatives, window=window,
                                   polyorder=polyorder, columns=columns)
        active = {frame: motion.column(name) for frame, name in active_frames(motion.names).items()}
        return m.time, m.q, m.v, m.a, m.derivatives, active, motion
    if isinstance(motion, Motion):
        return motion.time, motion.q, motion.v, motion.a, motion.derivatives, {}, None
    try:
        time, q, v, a = motion
    except (TypeError, ValueError):
        raise InputError("motion must be a Trajectory, a dynlib.derivatives.Motion or a tuple "
                         "(time, q, v, a) (time may be None)") from None
    return time, q, v, a, "given", {}, None


def _check_number(name, value, low, strict):
    ok = value is not None and np.isfinite(value) and (value > low if strict else value >= low)
    if not ok:
        raise InputError(f"{name} must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}")


def contact_inverse_dynamics(model, motion, contacts, *, guesses=None, over_time=False, smoothing=1.0,
                             min_torque=1.0, friction=None, normal=(0.0, 0.0, 1.0), weight=None,
                             point=False, active=None, derivatives="auto", window=0.1, polyorder=4,
                             columns=None, joint_friction=True, friction_smoothing=1e-3,
                             progress=None) -> ContactID:
    """Joint torques and contact wrenches of a floating-base motion (``dyn contact-id``).

    model: a Model with a free-flyer root (``dynlib.load(..., floating_base=True)``).
    motion: a `dynlib.trajectory.Trajectory` (q from ``q.*``, v and a given or
    estimated by `derivatives` 'auto' | 'given' | 'central' | 'savgol' with `window`,
    `polyorder`, `columns` as in `dynlib.derivatives.motion_from_trajectory`; its
    ``active.<frame>`` columns switch contacts), a `dynlib.derivatives.Motion`, or a
    tuple (time, q (N, nq), v (N, nv), a (N, nv)), time may be None.
    contacts: frame names, ``FRAME@START:STOP`` strings or `Contact`s.
    guesses: {frame: (6,) or (N, 6)} wrench guesses (f, τ); the wrenches nearest to
    them (W = I, unguessed contacts guessed zero) that meet the root equations.
    weight: (6,) per-contact weight overriding W.
    over_time, smoothing (s >= 0), min_torque (μ > 0): one sparse problem over all rows.
    friction: Coulomb coefficient MU >= 0 (per row; not with over_time); normal: the
    ground normal in the world. point: True (every contact) or a set of frames that
    transmit forces only. active: {frame: (N,)} extra contact switches (non-zero: on).
    joint_friction: add the URDF damping and Coulomb friction to the joint torques.
    progress: called as progress(done, total) during the per-row friction solves.
    """
    from ..inverse import joint_friction_torques

    if not model.has_floating_base:
        raise InputError(f"robot '{model.name}' has no free-flyer root: contact inverse dynamics needs one "
                         "(load it with floating_base=True)")
    time, q, v, a, how, switch, traj = _motion(model, motion, derivatives, window, polyorder, columns)
    switch.update(active or {})
    if contacts is None or (not isinstance(contacts, (str, Contact)) and len(contacts) == 0):
        contacts = list(switch)  # no contacts named: the frames with active.<frame> columns
    contacts = parse_contacts([contacts] if isinstance(contacts, (str, Contact)) else contacts, point)
    if not contacts:
        raise InputError("no contact frames: name at least one (--contact FRAME), or give active.<frame> "
                         "columns in the input")
    frames = tuple(c.frame for c in contacts)
    for f in frames:
        model.frame_id(f)
        if model.arrays.frame_body[model.frame_id(f)] < 0:
            raise InputError(f"contact frame '{f}' is fixed to the world, not to the robot")
    if over_time:
        _check_number("smoothing", smoothing, 0.0, False)
        _check_number("min_torque", min_torque, 0.0, True)
    if friction is not None:
        _check_number("friction coefficient", friction, 0.0, False)
        if over_time:
            raise InputError("friction cones are solved frame by frame: --friction cannot be combined "
                             "with --over-time")
    nrm = np.asarray(normal, dtype=np.float64)
    if nrm.shape != (3,) or not np.all(np.isfinite(nrm)) or np.linalg.norm(nrm) == 0:
        raise InputError(f"normal must be three finite numbers, not all zero, got {normal!r}")

    q = np.atleast_2d(np.asarray(q, dtype=np.float64))
    n = q.shape[0]
    for f, col in switch.items():
        if np.shape(col) != (n,):
            raise InputError(f"active switch of '{f}' must have shape ({n},), got {np.shape(col)}")
    on = active_mask(contacts, time, {f: c for f, c in switch.items() if f in frames}) if (
        any(c.windows for c in contacts) or switch) else np.ones((n, len(frames)), dtype=bool)

    k = len(frames)
    guesses = dict(guesses or {})
    for f in guesses:
        if f not in frames:
            raise InputError(f"guess for '{f}', which is not a contact; contacts: {', '.join(frames)}")
    g = np.zeros((n, k, 6))
    for c, f in enumerate(frames):
        if f in guesses:
            gc = np.asarray(guesses[f], dtype=np.float64)
            if gc.shape not in ((6,), (n, 6)) or not np.all(np.isfinite(gc)):
                raise InputError(f"guess for '{f}' must be 6 finite numbers (or ({n}, 6)), got shape {gc.shape}")
            g[:, c] = gc
    if weight is None:
        weight = GUESS_WEIGHT if guesses else WEIGHT
    weight = np.asarray(weight, dtype=np.float64)
    if weight.shape != (6,) or not np.all(np.isfinite(weight)) or np.any(weight <= 0):
        raise InputError(f"weight must be 6 positive numbers, got {weight!r}")

    mask = np.repeat(on[:, :, None], 6, axis=2)
    for c, contact in enumerate(contacts):
        if contact.point:
            mask[:, c, 3:] = False
    mask = mask.reshape(n, 6 * k)
    W = np.tile(weight, k)
    g = g.reshape(n, 6 * k)

    prob = root_problem(model, q, v, a, frames)
    broot = prob.b[:, :6]
    feasible = np.ones(n, dtype=bool)
    if over_time:
        w = solve_over_time(prob.A, broot, W, g, mask, float(smoothing), float(min_torque))
    else:
        w = solve_frames(prob.A, broot, W, g, mask)
        if friction is not None:
            w, feasible, _ = solve_friction(prob.A, broot, W, g, mask, float(friction), nrm, w0=w,
                                            progress=progress)
    wr = w.reshape(n, k, 6)
    tau = prob.b - np.einsum("nkrv,nkr->nv", prob.J, wr)
    residual = np.linalg.norm(tau[:, :6], axis=1)
    if joint_friction:
        tau += joint_friction_torques(model, np.atleast_2d(np.asarray(v, dtype=np.float64)), friction_smoothing)
    tau[:, :6] = 0.0
    t = np.arange(n, dtype=np.float64) if time is None else np.asarray(time, dtype=np.float64)
    return ContactID(t, tau, wr, residual, on, feasible, frames, how, friction is not None)
