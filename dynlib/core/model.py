"""Model (the robot, frozen) and Data (preallocated workspace), Pinocchio's split.

A `Model` is built and validated once (by `dynlib.files.urdf`) and never changes; its
numeric part, `model.arrays`, is a NamedTuple of contiguous arrays that every
compiled kernel takes first. Bodies are 0-based and topologically ordered
(``parent[i] < i``, ``parent == -1`` for a body attached to the world); body
``i`` is moved by joint ``i``. Fixed URDF joints are merged into their parent
body, and every URDF link is kept as a frame (``frame_body``, ``frame_R``,
``frame_p``: the frame's placement in its body; ``frame_body == -1`` for links
fixed to the world).

A `Data` holds every per-call buffer of the kernels (`model.create_data()`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import threading
from typing import NamedTuple

import numpy as np

from ..errors import InputError, closest


class ModelArrays(NamedTuple):
    """The numbers of a model, as the compiled kernels take them."""

    parent: np.ndarray     # (nb,) int64, parent body, -1 for the world
    jtype: np.ndarray      # (nb,) int64, joint code (dynlib.core.joints)
    jaxis: np.ndarray      # (nb, 3) unit joint axis in the joint frame (revolute, prismatic)
    idx_q: np.ndarray      # (nb,) int64, first coordinate of joint i in q
    idx_v: np.ndarray      # (nb,) int64, first coordinate of joint i in v
    nvj: np.ndarray        # (nb,) int64, velocity dimension of joint i
    subtree_end: np.ndarray  # (nb,) int64, bodies i..subtree_end[i]-1 are i's subtree
    Xtree_R: np.ndarray    # (nb, 3, 3) joint frame in the parent body frame, rotation
    Xtree_p: np.ndarray    # (nb, 3) joint frame in the parent body frame, translation
    S: np.ndarray          # (nv, 6) motion subspace column of each DoF, body frame
    dof_body: np.ndarray   # (nv,) int64, body of each DoF
    dof_parent: np.ndarray  # (nv,) int64, parent DoF (RBDA §6.3's λ): the joint's previous DoF, else the last
                            # DoF of the nearest ancestor joint that has any; -1 for none. M's sparsity
    inertia: np.ndarray    # (nb, 6, 6) spatial inertia about the body origin, body frame
    gravity: np.ndarray    # (3,) world frame
    frame_body: np.ndarray  # (nf,) int64, body of each frame (-1: the world)
    frame_R: np.ndarray    # (nf, 3, 3) frame placement in its body, rotation
    frame_p: np.ndarray    # (nf, 3) frame placement in its body, translation
    damping: np.ndarray    # (nv,) viscous joint friction (URDF <dynamics damping>)
    friction: np.ndarray   # (nv,) Coulomb joint friction (URDF <dynamics friction>)
    armature: np.ndarray   # (nv,) rotor inertia on M's diagonal (not in URDF: Model.with_armature; zeros)


class Data(NamedTuple):
    """Preallocated workspace of the kernels; one per thread of work."""

    oR: np.ndarray   # (nb, 3, 3) body i in the world, rotation (oMi; by placements(), not by rnea/aba)
    op: np.ndarray   # (nb, 3) body i in the world, translation (oMi)
    lR: np.ndarray   # (nb, 3, 3) body i in its parent, rotation (liMi = Xtree * XJ)
    lp: np.ndarray   # (nb, 3) body i in its parent, translation (liMi)
    v: np.ndarray    # (nb, 6) body spatial velocities, body frame
    a: np.ndarray    # (nb, 6) body spatial accelerations (gravity included where stated), body frame
    f: np.ndarray    # (nb, 6) body forces / articulated bias forces pA, body frame
    c: np.ndarray    # (nb, 6) velocity-product accelerations v x vJ, body frame
    IC: np.ndarray   # (nb, 6, 6) composite / articulated inertias, body frame
    U: np.ndarray    # (nv, 6) ABA: IA S_k for each DoF k, as the DoFs of a joint are eliminated one at a time
    Dinv: np.ndarray  # (nb, 6, 6) ABA: 1 / D_k of each DoF on the diagonal (D_k = S_k^T IA S_k)
    u: np.ndarray    # (nv,) ABA: tau_k - S_k^T pA for each DoF k
    tmp6: np.ndarray  # (4, 6) scratch vectors
    zeros_v: np.ndarray  # (nv,) zeros, never written
    diag: np.ndarray  # (nv,) ABA and mass_and_bias: the implicit step's joint-space diagonal (dynlib.sim.dynamics)
    M: np.ndarray    # (nv, nv) joint-space inertia (crba output)
    h: np.ndarray    # (nv,) nonlinear effects / bias torques
    L: np.ndarray    # (nv, nv) factor scratch: Cholesky's L, or LTDL's L and D (linalg.ltdl)
    BC: np.ndarray   # (nb, 6, 6) Coriolis: composite B(I, v) matrices, world frame
    Sw: np.ndarray   # (nv, 6) CRBA and Coriolis: motion subspace columns, world frame
    dS: np.ndarray   # (nv, 6) Coriolis: their time derivatives v_i x S_k, world frame


def _armature_value(value, what) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x >= 0.0):
        raise InputError(f"{what} must be a finite number >= 0 (kg m^2), got {value!r}")
    return x


def massless_free_flyers(arrays: ModelArrays, body_links, joint_names) -> tuple:
    """((link, joint), ...): each free-flyer body (the --floating-base root, or a URDF floating joint)
    whose own spatial inertia is zero, fixed joints merged, and which carries exactly one moving
    joint: a dummy base link jointed to the real body. Its six coordinates already give every motion of
    that joint (root velocity -S y with joint velocity y moves no body), so M is singular and forward
    dynamics undefined; inverse dynamics stays defined. (With no moving child the subtree is massless,
    `Model.massless_joints`; with several, their motions differ and M is regular in general.)"""
    from .joints import FREEFLYER

    out = []
    for i in range(len(joint_names)):
        if arrays.jtype[i] != FREEFLYER or np.any(arrays.inertia[i]):
            continue
        children = [k for k in range(i + 1, len(joint_names)) if arrays.parent[k] == i]
        if len(children) == 1:
            out.append((body_links[i], joint_names[children[0]]))
    return tuple(out)


def massless_free_flyer_message(model, link, joint) -> str:
    """What is wrong with a massless free-flyer (`massless_free_flyers`), and the fixes."""
    return (f"robot '{model.name}': the floating link '{link}' has no mass or inertia (fixed joints merged) and "
            f"carries one joint, '{joint}', whose every motion the free-flyer already gives: the mass matrix is "
            f"singular, so forward dynamics is undefined. Merge '{link}' into its child: delete link '{link}' and "
            f"joint '{joint}' from the URDF (the free-flyer then carries the body), make '{joint}' fixed "
            f"(or --lock {joint}=VALUE, a scenario's lock:), or give '{link}' an <inertial>")


class MimicStateWarning(UserWarning):
    """A simulation's given initial state moved a mimic joint off its leader: it starts from the leader
    (`dynlib.sim.mimic.initial_state`)."""


def check_forward_dynamics(model) -> None:
    """Raise ModelError when a massless free-flyer (`massless_free_flyers`) makes M singular: forward
    dynamics (simulate, energy-check, sweep) refuse such a model at load, before step 0. (Mimic joints are
    coupled in the simulation: `dynlib.sim.mimic`.)"""
    from ..errors import ModelError

    for link, joint in model.massless_free_flyers:
        raise ModelError(massless_free_flyer_message(model, link, joint), file=model.source or None)


class Shape(NamedTuple):
    """One URDF <visual> or <collision> geometry, in its link's frame (what `dyn view` draws)."""

    link: str              # the URDF link it belongs to (a frame name)
    kind: str              # 'box' | 'cylinder' | 'sphere' | 'capsule' | 'mesh'
    size: tuple            # box (x, y, z); cylinder, capsule (radius, length); sphere (radius,); mesh: scale (sx, sy, sz)
    filename: str          # mesh: the filename as written (package://, file://, absolute or relative); '' otherwise
    R: np.ndarray          # (3, 3) the <origin> rotation in the link frame
    p: np.ndarray          # (3,) the <origin> translation in the link frame
    rgba: tuple | None     # the <material> colour (r, g, b, a in [0, 1]); None when none is given
    line: int | None = None  # line in the URDF


@dataclasses.dataclass(frozen=True, eq=False)
class Model:
    """A rigid-body tree built from a URDF. Immutable; see `dynlib.load`."""

    name: str
    arrays: ModelArrays
    joint_names: tuple      # (nb,) name of the joint moving body i
    joint_types: tuple      # (nb,) URDF type name of each joint ('revolute', 'continuous', ...)
    body_links: tuple       # (nb,) name of the URDF link that body i starts at
    frame_names: tuple      # (nf,) every URDF link, in depth-first order
    q_names: tuple
    v_names: tuple
    tau_names: tuple        # (nv,) the generalized forces: v_names, with fx fy fz tx ty tz for a free-flyer
    q_neutral: np.ndarray   # (nq,) zero angles, root at the identity
    lower: np.ndarray       # (nq,) position limits (-inf when none)
    upper: np.ndarray       # (nq,) position limits (+inf when none)
    effort: np.ndarray      # (nv,) effort limits (inf when none)
    velocity_limit: np.ndarray  # (nv,) velocity limits (inf when none)
    mimic: tuple            # ((follower, leader, multiplier, offset), ...): follower = multiplier * leader + offset
                            # (dynlib.files.mimic; the coupling: Model.coupling, dynlib.core.mimic)
    link_masses: tuple      # ((link name, mass), ...) every link's own mass
    fixed_mass: float       # mass of the links fixed to the world (not moving)
    warnings: tuple         # what the reader noticed and let pass
    massless_joints: tuple = ()  # joints whose moving subtree has no mass at all
    collisions: tuple = ()  # ((link, 'sphere'|'box', size, R, p), ...) URDF <collision> in the link frame
    visuals: tuple = ()     # (Shape, ...) every URDF <visual>, links in frame order
    collision_shapes: tuple = ()  # (Shape, ...) every URDF <collision> (meshes too), for drawing
    source: str = ""        # the file it was read from
    floating_base: bool = False
    pinocchio_joints: tuple = ()  # (nb,) the joint names in Pinocchio's order (dynlib.core.pinocchio_order)
    locked: tuple = ()      # ((joint, value), ...) URDF joints held at a value, merged as fixed (dynlib.files.locks)

    # -- sizes (kept once computed: the model never changes) -------------------
    @functools.cached_property
    def nb(self) -> int:
        return len(self.joint_names)

    @functools.cached_property
    def nq(self) -> int:
        return len(self.q_names)

    @functools.cached_property
    def nv(self) -> int:
        return len(self.v_names)

    @property
    def nframes(self) -> int:
        return len(self.frame_names)

    @property
    def gravity(self) -> np.ndarray:
        return self.arrays.gravity.copy()

    @property
    def total_mass(self) -> float:
        """Mass of every link, moving or fixed to the world."""
        return float(sum(m for _, m in self.link_masses))

    @property
    def has_floating_base(self) -> bool:
        from .joints import FREEFLYER

        return self.nb > 0 and self.arrays.jtype[0] == FREEFLYER

    # -- derived models ------------------------------------------------------
    def with_gravity(self, gravity) -> "Model":
        """The same robot under another gravity vector (world frame)."""
        try:
            g = np.asarray(gravity, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            g = np.zeros(0)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise InputError(f"gravity must be three finite numbers, got {gravity!r}")
        return dataclasses.replace(self, arrays=self.arrays._replace(gravity=g.copy()))

    def with_armature(self, armature, *, keep=False) -> "Model":
        """The same robot with rotor inertia on each DoF: ``M(q) + diag(armature)`` everywhere (CRBA, ABA,
        RNEA's ``armature a``, the kinetic energy's ``1/2 armature v^2``), as MuJoCo's MJCF ``armature`` and
        Pinocchio's ``model.armature``. `armature`: one number for every DoF, nv numbers, or
        {joint name: value} (each of the joint's DoFs; the others zero, or with `keep` their current
        values: a URDF's ``dyn:armature``); kg m^2 (kg for a prismatic joint), finite and >= 0."""
        if isinstance(armature, dict):
            arm = self.arrays.armature.copy() if keep else np.zeros(self.nv)
            for joint, value in armature.items():
                i = self.joint_id(joint)
                iv = int(self.arrays.idx_v[i])
                arm[iv:iv + int(self.arrays.nvj[i])] = _armature_value(value, f"armature of joint '{joint}'")
        else:
            try:
                arm = np.broadcast_to(np.asarray(armature, dtype=float), (self.nv,)).copy()
            except (TypeError, ValueError):
                raise InputError(f"armature must be one number, {self.nv} numbers or {{joint: value}} "
                                 f"for robot '{self.name}', got {armature!r}") from None
            for k in range(self.nv):
                _armature_value(arm[k], f"armature of '{self.v_names[k]}'")
        return dataclasses.replace(self, arrays=self.arrays._replace(armature=arm))

    def without_joint_friction(self) -> "Model":
        """The same robot with URDF damping and friction set to zero."""
        z = np.zeros(self.nv)
        return dataclasses.replace(self, arrays=self.arrays._replace(damping=z, friction=z.copy()))

    # -- Pinocchio's order (dynlib.core.pinocchio_order) ----------------------
    def pinocchio_order(self):
        """`PinocchioOrder`: the moving joints in Pinocchio's order (dyn's is the URDF document's) and
        the permutation of the DoFs (``v_pin = v[..., v_index]``); see `dynlib.core.pinocchio_order`."""
        return self._pinocchio

    def to_pinocchio_q(self, q) -> np.ndarray:
        """q (nq,) or (N, nq) as Pinocchio's model of the same URDF takes it (its order; a continuous
        joint (cos, sin), a planar one (x, y, cos, sin))."""
        from .pinocchio_order import q_to_pinocchio
        return q_to_pinocchio(self._pinocchio, self.nq, q)

    def from_pinocchio_q(self, q_pin) -> np.ndarray:
        """Pinocchio's q of the same URDF -> q (nq,) or (N, nq) in dyn's order."""
        from .pinocchio_order import q_from_pinocchio
        return q_from_pinocchio(self._pinocchio, self.nq, q_pin)

    def to_pinocchio_v(self, v) -> np.ndarray:
        """A per-DoF vector (v, a, tau; (nv,) or (N, nv)) in Pinocchio's order."""
        from .pinocchio_order import v_to_pinocchio
        return v_to_pinocchio(self._pinocchio, v)

    def from_pinocchio_v(self, v_pin) -> np.ndarray:
        """A per-DoF vector in Pinocchio's order -> dyn's order."""
        from .pinocchio_order import v_from_pinocchio
        return v_from_pinocchio(self._pinocchio, v_pin)

    @functools.cached_property
    def _pinocchio(self):
        from .pinocchio_order import build
        return build(self)

    # -- names ---------------------------------------------------------------
    def frame_id(self, name: str) -> int:
        """Index of a frame (a URDF link) by name; InputError with the closest names."""
        try:
            return self._frame_index[name]
        except (KeyError, TypeError):
            raise InputError(f"robot '{self.name}' has no frame (link) '{name}'; {closest(name, self.frame_names)}") from None

    def joint_id(self, name: str) -> int:
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise InputError(f"robot '{self.name}' has no moving joint '{name}'; {closest(name, self.joint_names)}") from None

    @property
    def workspace(self) -> Data:
        """The Data that the public wrappers reuse: one per model and thread, so
        that the kernels (which run without the GIL) can run in several threads."""
        local = self._local
        try:
            return local.data
        except AttributeError:
            local.data = self.create_data()
            return local.data

    @functools.cached_property
    def coupling(self):
        """The mimic joints' coupling (`dynlib.core.mimic.Coupling`): the coupled robot's coordinates
        (the tree's without the followers) and the maps q = expand_q(q_r), v = G v_r, tau_r = G^T tau;
        None without mimic joints."""
        from .mimic import Coupling
        return Coupling(self) if self.mimic else None

    @functools.cached_property
    def massless_free_flyers(self) -> tuple:
        """((link, joint), ...): each free-flyer body with neither mass nor inertia of its own (fixed joints
        merged) that carries exactly one moving joint (see `massless_free_flyers`)."""
        return massless_free_flyers(self.arrays, self.body_links, self.joint_names)

    @functools.cached_property
    def quaternions(self) -> tuple:
        """((joint name, index in q of its quaternion's x), ...) for each free-flyer joint:
        q[i:i + 4] is its orientation (x, y, z, w), normalised where it is used."""
        from .joints import FREEFLYER
        a = self.arrays
        return tuple((self.joint_names[i], int(a.idx_q[i]) + 3) for i in range(self.nb) if a.jtype[i] == FREEFLYER)

    @functools.cached_property
    def _local(self) -> threading.local:
        return threading.local()

    @functools.cached_property
    def _frame_index(self) -> dict:
        """Frame name -> index (the first, should two links share a name)."""
        index = {}
        for i, name in enumerate(self.frame_names):
            index.setdefault(name, i)
        return index

    @functools.cached_property
    def entries(self) -> dict:
        """The compiled kernels' entries for this model's argument types (see dynlib._numba.parallel)."""
        return {}

    @functools.cached_property
    def _one(self) -> dict:
        """The one-call path's shared native buffer and compiled entries (see dynlib._numba.one)."""
        return {}

    def __getstate__(self):
        # the per-thread workspaces and the compiled entries stay behind (neither can be pickled)
        return {k: v for k, v in self.__dict__.items() if k not in ("_local", "entries", "_frame_index", "_one", "coupling")}

    def create_data(self) -> Data:
        nb, nv = self.nb, self.nv
        return Data(
            oR=np.zeros((nb, 3, 3)), op=np.zeros((nb, 3)), lR=np.zeros((nb, 3, 3)), lp=np.zeros((nb, 3)),
            v=np.zeros((nb, 6)), a=np.zeros((nb, 6)), f=np.zeros((nb, 6)), c=np.zeros((nb, 6)),
            IC=np.zeros((nb, 6, 6)), U=np.zeros((nv, 6)), Dinv=np.zeros((nb, 6, 6)), u=np.zeros(nv),
            tmp6=np.zeros((4, 6)), zeros_v=np.zeros(nv), diag=np.zeros(nv), M=np.zeros((nv, nv)), h=np.zeros(nv),
            L=np.zeros((nv, nv)), BC=np.zeros((nb, 6, 6)), Sw=np.zeros((nv, 6)), dS=np.zeros((nv, 6)),
        )

    def summary(self) -> dict:
        """The tree as plain data (what `dyn info` prints): joints, layout, masses, frames, warnings."""
        a = self.arrays
        joints = []
        for i, name in enumerate(self.joint_names):
            iq, iv, nvi = int(a.idx_q[i]), int(a.idx_v[i]), int(a.nvj[i])
            nqi = (int(a.idx_q[i + 1]) if i + 1 < self.nb else self.nq) - iq
            pa = int(a.parent[i])
            joints.append({
                "name": name, "type": self.joint_types[i],
                "parent": "world" if pa < 0 else self.joint_names[pa], "link": self.body_links[i],
                "q": list(self.q_names[iq:iq + nqi]), "v": list(self.v_names[iv:iv + nvi]),
                "idx_q": iq, "idx_v": iv, "body_mass": float(a.inertia[i, 0, 0]),
                "lower": [float(x) for x in self.lower[iq:iq + nqi]], "upper": [float(x) for x in self.upper[iq:iq + nqi]],
                "damping": [float(x) for x in a.damping[iv:iv + nvi]], "friction": [float(x) for x in a.friction[iv:iv + nvi]],
                "armature": [float(x) for x in a.armature[iv:iv + nvi]],
            })
        frames = [{"name": n, "joint": "world" if a.frame_body[k] < 0 else self.joint_names[a.frame_body[k]],
                   "mass": dict(self.link_masses)[n]} for k, n in enumerate(self.frame_names)]
        return {
            "robot": self.name, "source": self.source, "floating_base": bool(self.has_floating_base),
            "nq": self.nq, "nv": self.nv, "bodies": self.nb, "total_mass": self.total_mass,
            "moving_mass": float(a.inertia[:, 0, 0].sum()) if self.nb else 0.0,
            "gravity": [float(g) for g in a.gravity], "q_names": list(self.q_names), "v_names": list(self.v_names),
            "joints": joints, "frames": frames, "mimic": [list(mm) for mm in self.mimic],
            "coupled": None if self.coupling is None else {"q_names": list(self.coupling.q_names),
                                                           "v_names": list(self.coupling.v_names)},
            "locked": {j: (list(x) if isinstance(x, tuple) else x) for j, x in self.locked}, "warnings": list(self.warnings),
        }

    def __repr__(self) -> str:
        return f"Model({self.name!r}, nq={self.nq}, nv={self.nv}, bodies={self.nb}, frames={self.nframes})"
