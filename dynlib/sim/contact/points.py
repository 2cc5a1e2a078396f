"""Contact points: where a robot can touch the ground, and their kinematics in the compiled loop.

A contact point is a point of one body, given as

- a frame (a URDF link) and an offset in that frame's axes (SPEC §6
  ``{frame, offset, name}``), or
- from the URDF ``<collision>`` elements (``points: from-collision``): a sphere
  gives one point, the sphere's point closest to the ground (its centre minus
  radius times the ground normal, recomputed at every evaluation, so a rolling
  sphere touches at its lowest point); a box gives its eight corners.
  Collisions of links fixed to the world are skipped.

`contact_points` gives them as a `ContactPoints` (``names``, the column names
``contact.<name>.fx``; ``body`` (nc,) the body each point is on; ``p`` (nc, 3) the
point (sphere centre) in that body's frame; ``radius`` (nc,), 0 for a plain point).
The contact kernels take them with the ground as one `Points` tuple, and write
what every model computes at its points, the positions, depths and forces a
recorded row reports, in one `PointState` (`point_state`). Each contact model
is a pair of its own (`dynlib.sim.contact`: `MODELS`), as Pinocchio's constraint
model and data: its parameter tuple and its workspace, which one stage of the
simulation step runs on (`dynlib.sim.stages`).

Compiled helpers (plain arrays, placements done: ``Data.oR, op``):

- `point_position`: world position ``x = op_b + oR_b p - r n``;
- `point_jacobian`: the (3, nv) Jacobian of the world velocity of the material
  point at x, ``ẋ = Jp v``: column k (a DoF of body j on the path to the root) is
  ``oR_j S_k^lin + (oR_j S_k^ang) × (x − op_j)`` (the linear rows of the
  ``local_world_aligned`` frame Jacobian at x, computed from the stored placements);
- `add_point_force`: a world force at x as a body wrench;
- `delassus`: ``D = Jc M⁻¹ Jcᵀ`` from the Cholesky factor of M.

`at_configuration` gives what a simulation's set-up computes at one state, in Python, by one compiled
entry (`setup_kernel`) that every run calls, so that the first run compiles it and no later scenario
compiles a kernel of its own before its loop: M(q) (CRBA: rk4's friction-stiffness estimate,
`dynlib.sim.simulate.friction_steps`, and the stiff-gains warning, `dynlib.sim.controllers`),
RNEA(q, v, 0) (a state feedback's holding torque), the body placements (``offset_world`` points) and
the contact points' world positions (bilateral targets, `dynlib.sim.contact.build`). It lives here,
beside `point_position`, so that the contact package can call it too without an import cycle.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from ..._numba.decorators import kernel
from ...algorithms import _args
from ...algorithms.crba import crba_kernel
from ...algorithms.linalg import ltdl_solve
from ...algorithms.rnea import rnea_kernel
from ...errors import InputError


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


def _collision_links(points):
    """The links of ``{"from-collision": [links]}`` (a dict, either spelling, or an object with
    ``from_collision``), None for anything else."""
    if isinstance(points, dict) and len(points) == 1 and set(points) & {"from-collision", "from_collision"}:
        return list(next(iter(points.values())))
    links = getattr(points, "from_collision", None)
    return None if links is None else list(links)


def contact_points(model, points, q0=None) -> ContactPoints:
    """The contact points of `model`: ``"from-collision"`` (the collision spheres and boxes of every
    moving link), ``{"from-collision": [link, ...]}`` (of those links), or a list of ``{frame,
    offset, offset_world, name}`` (dicts or objects with those attributes): ``offset`` is in the
    frame's own axes, ``offset_world`` in the world's axes at the configuration `q0` (needed
    then). InputError for a frame fixed to the world, a link without such collision geometry."""
    a = model.arrays
    names, body, p, radius = [], [], [], []
    links = _collision_links(points)
    if isinstance(points, str) or links is not None:
        if isinstance(points, str) and points != "from-collision":
            raise InputError(f"contact points must be a list of {{frame, offset}} or 'from-collision', got {points!r}")
        if links is not None:
            from ...errors import closest

            have = {c[0] for c in model.collisions}
            for i, link in enumerate(links):
                if link not in model.frame_names:
                    raise InputError(f"points: from-collision[{i}]: robot '{model.name}' has no link '{link}'; "
                                     f"{closest(link, model.frame_names)}")
                if link not in have:
                    raise InputError(f"points: from-collision[{i}]: link '{link}' has no <collision> geometry")
        for link, kind, size, R, pc in model.collisions:
            if links is not None and link not in links:
                continue
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
            which = f"link{'s' if len(links) > 1 else ''} {', '.join(links)}" if links else f"robot '{model.name}'"
            raise InputError(f"points: from-collision: {which} has no sphere or box <collision> on a moving link")
    else:
        oR = None
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
            world = get("offset_world")
            names.append(get("name") or frame)
            body.append(b)
            radius.append(0.0)
            if world is None:
                p.append(a.frame_p[fid] + a.frame_R[fid] @ off)
                continue
            if np.any(off != 0.0):
                raise InputError(f"points[{i}]: give offset (the frame's axes) or offset_world (the world's), not both")
            if q0 is None:
                raise InputError(f"points[{i}]: offset_world needs the initial configuration")
            if oR is None:
                oR = at_configuration(model, q0).oR
            # the world offset at q0, carried by the body from then on
            p.append(a.frame_p[fid] + oR[b].T @ np.asarray(world, float).reshape(3))
    return ContactPoints(_unique(names), np.array(body, dtype=np.int64), np.array(p, float).reshape(-1, 3),
                         np.array(radius, float))


@kernel
def point_position(oR, op, b, p, r, normal, x):
    """x = op_b + oR_b p - r n: the world position of a contact point."""
    for i in range(3):
        x[i] = op[b, i] + oR[b, i, 0] * p[0] + oR[b, i, 1] * p[1] + oR[b, i, 2] * p[2] - r * normal[i]


class AtConfiguration(NamedTuple):
    """The set-up quantities of one state (q, v) (`at_configuration`)."""

    M: np.ndarray    # (nv, nv) the joint-space inertia matrix M(q), CRBA
    tau: np.ndarray  # (nv,) RNEA(q, v, 0): the torque that holds (q, v) with zero acceleration
    oR: np.ndarray   # (nb, 3, 3) body placements in the world at q, rotation
    op: np.ndarray   # (nb, 3) body placements in the world at q, translation
    x: np.ndarray    # (nc, 3) world positions of the points given, at q


@kernel
def setup_kernel(m, d, q, v, a0, fext, body, p, r, normal, M, tau, x):
    """M = CRBA(q) (which leaves d's placements at q: oR, op), x[c] = `point_position` of each point at q,
    tau = RNEA(q, v, a0, fext) (a0, fext: zeros; RNEA does not change the placements oR, op)."""
    crba_kernel(m, d, q, M)
    for c in range(body.shape[0]):
        point_position(d.oR, d.op, body[c], p[c], r[c], normal, x[c])
    rnea_kernel(m, d, q, v, a0, fext, m.gravity, tau)


def at_configuration(model, q, v=None, points=None) -> AtConfiguration:
    """M(q), RNEA(q, v, 0) (v default zero), the body placements at q and the world positions at q of
    `points` (a `Points`: body, p, radius and the ground normal; None: no point), by the one set-up
    kernel (see the module docstring). InputError naming q or v when it is not a finite vector of its size."""
    nv = model.nv
    v = np.zeros(nv) if v is None else v
    (Q, V), _, _ = _args.vectors(model, q=(q, model.nq), v=(v, nv))
    if points is None:
        body, p, r, normal = np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros(3)
    else:
        body, p, r = (np.ascontiguousarray(points.body, np.int64), np.ascontiguousarray(points.p, float),
                      np.ascontiguousarray(points.radius, float))
        normal = np.ascontiguousarray(points.normal, float)
    d = model.create_data()
    out = AtConfiguration(np.empty((nv, nv)), np.empty(nv), d.oR, d.op, np.empty((body.shape[0], 3)))
    setup_kernel(model.arrays, d, np.ascontiguousarray(Q[0]), np.ascontiguousarray(V[0]), np.zeros(nv),
                 _args.no_forces(model)[0], body, p, r, normal, out.M, out.tau, out.x)
    return out


@kernel
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


@kernel
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


class Points(NamedTuple):
    """The contact points and the ground, as the contact kernels take them."""

    body: np.ndarray    # (nc,) int64
    p: np.ndarray       # (nc, 3) point (sphere centre) in the body frame
    radius: np.ndarray  # (nc,) sphere radius, 0 for a point
    target: np.ndarray  # (nc, 3) bilateral: where each point is held (world)
    normal: np.ndarray  # (3,) unit ground normal, world
    height: float       # the ground is n·x = height
    frame: np.ndarray   # (3, 3) rows: the normal n and two tangents t1, t2 (world)


class PointState(NamedTuple):
    """What a contact model computes at every point in an evaluation: what a recorded row reports."""

    x: np.ndarray      # (nc, 3) world positions of the last evaluation
    pen: np.ndarray    # (nc,) penetration depth h - n·x (> 0: inside the ground)
    force: np.ndarray  # (nc, 3) world force on each point of the last evaluation


def point_state(nc) -> PointState:
    return PointState(np.zeros((nc, 3)), np.zeros(nc), np.zeros((nc, 3)))


def empty_like(work):
    """A workspace tuple of the type of `work` with every array zero-size: the workspace of a contact model
    that a simulation does not use (one numba type for every model, `dynlib.sim.contact.ContactModel`)."""
    return type(work)(*(np.zeros((0,) * x.ndim, x.dtype) for x in work))


def ground_points(pts, normal, height, target) -> Points:
    """The `Points` of ContactPoints `pts` on the ground n·x = height (normal: nonzero, normalised here);
    target (nc, 3): where bilateral contact holds each point."""
    try:
        n = np.asarray(normal, float).reshape(3)
    except (TypeError, ValueError):
        raise InputError(f"ground normal must be three numbers, got {normal!r}") from None
    norm = float(np.linalg.norm(n))
    if not (norm > 0 and math.isfinite(norm)):
        raise InputError(f"ground normal must be a nonzero vector, got {tuple(normal)}")
    n = n / norm
    return Points(pts.body, np.ascontiguousarray(pts.p, float), pts.radius,
                  np.ascontiguousarray(target, float).reshape(-1, 3), n, float(height), _contact_frame(n))


def no_points() -> Points:
    """The Points of a simulation without contact: none, on the ground z = 0."""
    return Points(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), np.array([0.0, 0.0, 1.0]),
                  0.0, np.eye(3))


def _contact_frame(n):
    """(3, 3) rows n, t1, t2: an orthonormal frame with n first."""
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = a - (a @ n) * n
    t1 /= np.linalg.norm(t1)
    return np.array([n, t1, np.cross(n, t1)])


class ContactSpec(NamedTuple):
    """A contact block as `dynlib.sim.simulate.simulate(contacts=...)` takes it (SPEC §6 `contacts:`),
    besides a dict of the same keys (with ``ground: {height, normal}``); None: the model's default.

    model: soft | bilateral | unilateral | relaxed. points: "from-collision" or a list of
    {frame, offset, name, target}. ground: (height, normal). Each model's parameters are the
    fields of its parameter tuple (`dynlib.sim.contact.MODELS`), defaults included.
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
    stiffness_per_mass: float | None = None
    damping_per_mass: float | None = None


@kernel
def delassus(LD, dof_parent, Jc, Y, D):
    """Y rows = M⁻¹ Jc rows (LD: `ltdl`'s factor of M), D = Jc M⁻¹ Jcᵀ. Each row of Jc must be zero
    off the ancestor chain of its last nonzero DoF, as a point's is (its body's path to the root):
    its products run over that chain."""
    m, nv = Jc.shape
    for r in range(m):
        ltdl_solve(LD, dof_parent, Jc[r], Y[r])
    for r in range(m):
        last = nv - 1
        while last >= 0 and Jc[r, last] == 0.0:
            last -= 1
        for r2 in range(r + 1):
            s = 0.0
            j = last
            while j >= 0:
                s += Jc[r, j] * Y[r2, j]
                j = dof_parent[j]
            D[r, r2] = s
            D[r2, r] = s
