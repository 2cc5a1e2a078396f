"""Contact points: where a robot can touch the ground, and their kinematics in the compiled loop.

A contact point is a point of one body, given as

- a frame (a URDF link) and an offset in that frame's axes (SPEC §6
  ``{frame, offset, name}``), or
- from the URDF ``<collision>`` elements (``points: from-collision``): a sphere
  gives one point, the sphere's point closest to the ground (its centre minus
  radius times the ground normal, recomputed at every evaluation, so a rolling
  sphere touches at its lowest point); a box gives its eight corners.
  Collisions of links fixed to the world are skipped.

`ContactPoints` holds them as plain arrays: ``body`` (nc,) the body each point is
on, ``p`` (nc, 3) the point (sphere centre) in that body's frame, ``radius`` (nc,)
(0 for a plain point), and ``names`` (column names ``contact.<name>.fx``).

Compiled helpers (plain arrays, placements done: ``Data.oR, op``):

- `point_position`: world position ``x = op_b + oR_b p - r n``;
- `point_jacobian`: the (3, nv) Jacobian of the world velocity of the material
  point at x, ``ẋ = Jp v``: column k (a DoF of body j on the path to the root) is
  ``oR_j S_k^lin + (oR_j S_k^ang) × (x − op_j)`` (the linear rows of the
  ``local_world_aligned`` frame Jacobian at x, computed from the stored placements).
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from ..compiled import jit
from ..algorithms.linalg import cholesky_solve
from ..errors import InputError

_jit = jit()


class ContactPoints(NamedTuple):
    names: tuple          # (nc,) column names
    body: np.ndarray      # (nc,) int64
    p: np.ndarray         # (nc, 3) point (sphere centre) in the body frame
    radius: np.ndarray    # (nc,) sphere radius, 0 for a point


def _unique(names):
    seen, out = {}, []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}_{seen[n]}")
        else:
            seen[n] = 0
            out.append(n)
    return tuple(out)


def contact_points(model, points) -> ContactPoints:
    """The contact points of `model`: ``"from-collision"`` or a list of ``{frame, offset, name}``
    (dicts or objects with those attributes). InputError for a frame fixed to the world."""
    a = model.arrays
    names, body, p, radius = [], [], [], []
    if isinstance(points, str):
        if points != "from-collision":
            raise InputError(f"contact points must be a list of {{frame, offset}} or 'from-collision', got {points!r}")
        for link, kind, size, R, pc in model.collisions:
            fid = model.frame_id(link)
            b = int(a.frame_body[fid])
            if b < 0:
                continue
            R, pc = np.asarray(R, float).reshape(3, 3), np.asarray(pc, float).reshape(3)
            if kind == "sphere":
                names.append(link)
                body.append(b)
                p.append(a.frame_p[fid] + a.frame_R[fid] @ pc)
                radius.append(float(size[0]))
            elif kind == "box":
                half = 0.5 * np.asarray(size, float)
                for k, signs in enumerate(itertools.product((-1.0, 1.0), repeat=3)):
                    corner = pc + R @ (np.asarray(signs) * half)
                    names.append(f"{link}_corner{k}")
                    body.append(b)
                    p.append(a.frame_p[fid] + a.frame_R[fid] @ corner)
                    radius.append(0.0)
        if not names:
            raise InputError(f"points: from-collision: robot '{model.name}' has no sphere or box <collision> "
                             "on a moving link")
    else:
        for i, pt in enumerate(points):
            get = (lambda k, default=None: pt.get(k, default)) if isinstance(pt, dict) else \
                (lambda k, default=None: getattr(pt, k, default))
            frame = get("frame")
            fid = model.frame_id(frame)
            b = int(a.frame_body[fid])
            if b < 0:
                raise InputError(f"points[{i}]: frame '{frame}' is fixed to the world; a contact there moves "
                                 "nothing (choose a link of a moving body)")
            off = np.asarray(get("offset", (0.0, 0.0, 0.0)), float).reshape(3)
            names.append(get("name") or frame)
            body.append(b)
            p.append(a.frame_p[fid] + a.frame_R[fid] @ off)
            radius.append(0.0)
    return ContactPoints(_unique(names), np.array(body, dtype=np.int64), np.array(p, float).reshape(-1, 3),
                         np.array(radius, float))


@_jit
def point_position(oR, op, b, p, r, normal, x):
    """x = op_b + oR_b p - r n: the world position of a contact point."""
    for i in range(3):
        x[i] = op[b, i] + oR[b, i, 0] * p[0] + oR[b, i, 1] * p[1] + oR[b, i, 2] * p[2] - r * normal[i]


@_jit
def point_jacobian(oR, op, S, parent, idx_v, nvj, b, x, Jp):
    """Jp (3, nv) = d(world velocity of the body-b material point at x)/dv (zeros off the path)."""
    Jp[:, :] = 0.0
    j = b
    while j >= 0:
        for k in range(idx_v[j], idx_v[j] + nvj[j]):
            w0 = oR[j, 0, 0] * S[k, 3] + oR[j, 0, 1] * S[k, 4] + oR[j, 0, 2] * S[k, 5]
            w1 = oR[j, 1, 0] * S[k, 3] + oR[j, 1, 1] * S[k, 4] + oR[j, 1, 2] * S[k, 5]
            w2 = oR[j, 2, 0] * S[k, 3] + oR[j, 2, 1] * S[k, 4] + oR[j, 2, 2] * S[k, 5]
            r0, r1, r2 = x[0] - op[j, 0], x[1] - op[j, 1], x[2] - op[j, 2]
            Jp[0, k] = oR[j, 0, 0] * S[k, 0] + oR[j, 0, 1] * S[k, 1] + oR[j, 0, 2] * S[k, 2] + w1 * r2 - w2 * r1
            Jp[1, k] = oR[j, 1, 0] * S[k, 0] + oR[j, 1, 1] * S[k, 1] + oR[j, 1, 2] * S[k, 2] + w2 * r0 - w0 * r2
            Jp[2, k] = oR[j, 2, 0] * S[k, 0] + oR[j, 2, 1] * S[k, 1] + oR[j, 2, 2] * S[k, 2] + w0 * r1 - w1 * r0
        j = parent[j]


@_jit
def add_point_force(oR, op, b, x, f, fext):
    """fext[b] += the body wrench (body frame, at the body origin) of world force f at world point x:
    f_b = R^T f, n_b = R^T ((x - op_b) × f)."""
    r0, r1, r2 = x[0] - op[b, 0], x[1] - op[b, 1], x[2] - op[b, 2]
    t0 = r1 * f[2] - r2 * f[1]
    t1 = r2 * f[0] - r0 * f[2]
    t2 = r0 * f[1] - r1 * f[0]
    for c in range(3):
        fext[b, c] += oR[b, 0, c] * f[0] + oR[b, 1, c] * f[1] + oR[b, 2, c] * f[2]
        fext[b, 3 + c] += oR[b, 0, c] * t0 + oR[b, 1, c] * t1 + oR[b, 2, c] * t2


# contact model codes, as the compiled loop takes them
NONE, SOFT, BILATERAL, UNILATERAL, RELAXED = 0, 1, 2, 3, 4
MODELS = {"soft": SOFT, "bilateral": BILATERAL, "unilateral": UNILATERAL, "relaxed": RELAXED}


class Contact(NamedTuple):
    """A contact model with its points and parameters, as `dynlib.simulate._run` takes it."""

    code: int              # NONE, SOFT, ...
    body: np.ndarray       # (nc,) int64
    p: np.ndarray          # (nc, 3) body frame
    radius: np.ndarray     # (nc,)
    normal: np.ndarray     # (3,) unit ground normal, world
    height: float          # ground: n·x = height
    stiffness: float
    damping: float
    friction: float        # Coulomb coefficient μ
    slip: float            # soft: regularisation velocity of Coulomb friction
    gains: np.ndarray      # (2,) bilateral: Baumgarte (kp, kd); relaxed: (time constant, damping ratio)
    target: np.ndarray     # (nc, 3) bilateral: where the points are held (world)
    x: np.ndarray          # (nc, 3) work: world positions of the last evaluation
    pen: np.ndarray        # (nc,) work: penetration depth h - n·x (> 0: inside the ground)
    force: np.ndarray      # (nc, 3) work: world force on each point of the last evaluation
    Jp: np.ndarray         # (3, nv) work: one point's Jacobian
    Jc: np.ndarray         # (3 nc, nv) work: the stacked point Jacobians
    Y: np.ndarray          # (3 nc, nv) work: rows of M^-1 Jcᵀ
    D: np.ndarray          # (3 nc, 3 nc) work: Delassus matrix Jc M^-1 Jcᵀ
    DL: np.ndarray         # (3 nc, 3 nc) work: its Cholesky factor
    gam: np.ndarray        # (3 nc,) work: constraint right-hand side
    lam: np.ndarray        # (3 nc,) work: multipliers (forces or impulses)
    bias: np.ndarray       # (3,) work: a point's bias acceleration
    tau_h: np.ndarray      # (nv,) work: τ − h
    zero6: np.ndarray      # (6,) zeros, never written
    frame: np.ndarray      # (3, 3) rows: the ground normal n and two tangents t1, t2 (world)
    solver: np.ndarray     # (3,) unilateral/relaxed: PGS tolerance, iteration limit, penetration correction β
    Rg: np.ndarray         # (3 nc,) work: relaxed compliance on the diagonal of D
    wv: np.ndarray         # (3 nc,) work: contact velocities at the free velocity
    vt: np.ndarray         # (3 nc,) work: velocity targets (bounds)
    active: np.ndarray     # (nc,) bool work: points in the solve
    stats: np.ndarray      # (3,) steps stopped on the iteration limit, most sweeps, worst relative change


def no_contact(nv) -> Contact:
    return make_contact(NONE, ContactPoints((), np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0)), nv)


def make_contact(code, pts, nv, *, normal=(0.0, 0.0, 1.0), height=0.0, stiffness=0.0, damping=0.0, friction=0.0,
                 slip=0.01, gains=(0.0, 0.0), target=None, solver=(1e-8, 200, 0.2)) -> Contact:
    n = np.asarray(normal, float).reshape(3)
    norm = float(np.linalg.norm(n))
    if not norm > 0:
        raise InputError(f"ground normal must be a nonzero vector, got {tuple(normal)}")
    nc = pts.body.shape[0]
    tgt = np.zeros((nc, 3)) if target is None else np.ascontiguousarray(target, float).reshape(nc, 3)
    return Contact(int(code), pts.body, np.ascontiguousarray(pts.p), pts.radius, n / norm, float(height),
                   float(stiffness), float(damping), float(friction), float(slip), np.asarray(gains, float),
                   tgt, np.zeros((nc, 3)), np.zeros(nc), np.zeros((nc, 3)), np.zeros((3, nv)),
                   np.zeros((3 * nc, nv)), np.zeros((3 * nc, nv)), np.zeros((3 * nc, 3 * nc)),
                   np.zeros((3 * nc, 3 * nc)), np.zeros(3 * nc), np.zeros(3 * nc), np.zeros(3), np.zeros(nv),
                   np.zeros(6), _contact_frame(n / norm), np.asarray(solver, float), np.zeros(3 * nc),
                   np.zeros(3 * nc), np.zeros(3 * nc), np.zeros(nc, dtype=np.bool_), np.zeros(3))


def _contact_frame(n):
    """(3, 3) rows n, t1, t2: an orthonormal frame with n first."""
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = a - (a @ n) * n
    t1 /= np.linalg.norm(t1)
    return np.array([n, t1, np.cross(n, t1)])


class ContactSpec(NamedTuple):
    """What `dynlib.simulate.simulate(contacts=...)` takes (SPEC §6 `contacts:`); None: the model's default.

    model: soft | bilateral | unilateral | relaxed. points: "from-collision" or a list of
    {frame, offset, name}. ground: (height, normal). See each model's module for its parameters.
    """

    model: str
    points: object = "from-collision"
    height: float = 0.0
    normal: tuple = (0.0, 0.0, 1.0)
    stiffness: float | None = None
    damping: float | None = None
    friction: float | None = None
    slip_velocity: float | None = None
    baumgarte_kp: float | None = None
    baumgarte_kd: float | None = None
    time_constant: float | None = None
    damping_ratio: float | None = None
    tolerance: float | None = None
    max_iterations: int | None = None
    penetration_correction: float | None = None


DEFAULTS = {"stiffness": 1.0e5, "damping": 1.0e3, "friction": 0.8, "slip_velocity": 0.01,
            "baumgarte_kp": 1.0e4, "baumgarte_kd": 200.0, "time_constant": 0.02, "damping_ratio": 1.0,
            "tolerance": 1e-8, "max_iterations": 200, "penetration_correction": 0.2}


def build_contact(model, spec, q0):
    """(Contact, point names) for a ContactSpec (or a dict of its fields) at the initial configuration q0."""
    if isinstance(spec, dict):
        spec = dict(spec)
        ground = spec.pop("ground", None) or {}
        spec.setdefault("height", ground.get("height", 0.0))
        spec.setdefault("normal", tuple(ground.get("normal", (0.0, 0.0, 1.0))))
        try:
            spec = ContactSpec(**spec)
        except TypeError as exc:
            raise InputError(f"contacts: {exc}") from None
    if spec.model not in MODELS:
        raise InputError(f"contacts: model must be one of {', '.join(MODELS)}, got {spec.model!r}")
    pts = contact_points(model, spec.points)
    par = {k: (DEFAULTS[k] if getattr(spec, k) is None else float(getattr(spec, k))) for k in DEFAULTS}
    code = MODELS[spec.model]
    gains = (par["baumgarte_kp"], par["baumgarte_kd"]) if code == BILATERAL else \
        (par["time_constant"], par["damping_ratio"])
    ct = make_contact(code, pts, model.nv, normal=spec.normal, height=spec.height,
                      stiffness=par["stiffness"], damping=par["damping"], friction=par["friction"],
                      slip=par["slip_velocity"], gains=gains,
                      solver=(par["tolerance"], par["max_iterations"], par["penetration_correction"]))
    # bilateral targets: the points' positions at q0, or the given ones
    from ..algorithms.kinematics import placements

    d = model.create_data()
    placements(model.arrays, d, np.asarray(q0, float))
    for c in range(ct.body.shape[0]):
        point_position(d.oR, d.op, ct.body[c], ct.p[c], ct.radius[c], ct.normal, ct.target[c])
    if not isinstance(spec.points, str):
        for c, pt in enumerate(spec.points):
            tgt = pt.get("target") if isinstance(pt, dict) else getattr(pt, "target", None)
            if tgt is not None:
                ct.target[c] = np.asarray(tgt, float).reshape(3)
    return ct, pts.names


@jit
def delassus(L, Jc, Y, D):
    """Y rows = M⁻¹ Jc rows (L: Cholesky factor of M), D = Jc M⁻¹ Jcᵀ."""
    m, nv = Jc.shape
    for r in range(m):
        cholesky_solve(L, Jc[r], Y[r])
    for r in range(m):
        for r2 in range(r + 1):
            s = 0.0
            for j in range(nv):
                s += Jc[r, j] * Y[r2, j]
            D[r, r2] = s
            D[r2, r] = s
