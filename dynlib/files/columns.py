"""Column names: the one home of every name that dyn writes to or reads from a trajectory file.

A trajectory file (SPEC §5) has one column per quantity, named ``<part>.<rest>``
(``time`` alone), in this order:

=============== ========================================== ===============================
part            columns                                    written by
=============== ========================================== ===============================
``time``        ``time`` (s)                               every command
``q``           ``q.<q_name>``                             simulate
``qd``          ``qd.<v_name>``                            simulate
``qdd``         ``qdd.<v_name>``                           simulate
``tau``         ``tau.<tau_name>``                         simulate, inverse, contact-id
``effort``      ``effort.<v_name>`` (measured torque)      read from recordings, carried by
                                                           inverse and contact-id
``residual``    ``residual.<v_name>`` (effort − tau)       inverse, contact-id (with efforts)
``energy``      ``energy.kinetic potential total`` (J)     simulate
``contact``     ``contact.<name>.fx fy fz tx ty tz``       simulate (a contact point),
                                                           contact-id (a contact frame)
``penetration`` ``penetration.<name>`` (m)                 simulate
``residual``    ``residual.root``                          contact-id
``time.absolute`` the first sample's clock + ``time``      inverse, contact-id --absolute-time
``friction``    ``friction.feasible`` (1 or 0)             contact-id --friction
``active``      ``active.<frame>`` (non-zero: in contact)  read by contact-id
``over_limit``  ``over_limit.<v_name>`` (1 or 0: |tau|     inverse, contact-id --with limits
                above the URDF effort limit)
=============== ========================================== ===============================

The coordinate names (``model.q_names``, ``v_names``, ``tau_names``) are built here
too, joint by joint (`joint_coordinates`), when a URDF is read: a revolute,
continuous or prismatic joint has one coordinate, named by the joint; a free-flyer
(the ``--floating-base`` root, or a URDF ``floating`` joint) and a planar joint have
several, ``<joint>.<suffix>``:

========== ============================ ====================== ====================
joint      q                            v (body frame)         tau (its dual)
========== ============================ ====================== ====================
floating   ``x y z qx qy qz qw``        ``vx vy vz wx wy wz``  ``fx fy fz tx ty tz``
planar     ``x y theta``                ``vx vy wz``           ``fx fy tz``
========== ============================ ====================== ====================

A torque column names the generalized force, so a free-flyer's or planar joint's
names the wrench (``tau.root.fx``), not the twist it pairs with (``qd.root.vx``).
``time`` is in seconds from the first sample in what a command writes; the first
sample's time on the recording's own clock (epoch seconds for ROS) is kept in a Parquet
output's metadata under `TIME_START_KEY`, as a decimal number of seconds.

The names a recording gives its joints are the coordinate names: a ROS
``sensor_msgs/JointState`` names joints, and a joint with one coordinate has its
name (`joint_coordinates`).

Nothing here imports numpy or numba: the names are plain strings.
"""
from __future__ import annotations

from ..errors import InputError

TIME = "time"
TIME_ABSOLUTE = "time.absolute"  # seconds on the recording's own clock (--absolute-time)
TIME_START_KEY = "dyn.time.start"  # Parquet metadata: the first sample's time, decimal seconds
# Parquet metadata of a simulated run (`run_metadata`): what `dyn inverse` and `dyn contact-id` must agree with
GRAVITY_KEY = "dyn.gravity"  # 'x,y,z', m/s^2, world frame
FLOATING_BASE_KEY = "dyn.floating_base"  # 'true' or 'false'
JOINT_FRICTION_KEY = "dyn.joint_friction"  # JSON: {"damping": {v_name: x}, "friction": {v_name: x}, "smoothing": eps}
EFFORT = "effort"  # measured joint torques (ROS JointState.effort), one per v coordinate
RESIDUAL = "residual"  # effort − computed torque, per v coordinate
PARTS = ("q", "qd", "qdd", "tau")  # the coordinate parts, one column per coordinate
ENERGY = ("energy.kinetic", "energy.potential", "energy.total")
WRENCH = ("fx", "fy", "fz", "tx", "ty", "tz")  # a wrench (f, τ): linear part first
RESIDUAL_ROOT = "residual.root"
FRICTION_FEASIBLE = "friction.feasible"
ACTIVE = "active"
CONTACT = "contact"  # contact.<point or frame>.fx … tz
PENETRATION = "penetration"
LIMIT = "limit"  # limit.<coordinate>: the torque of a held position limit (dynlib.sim.joint_limits)
OVER_LIMIT = "over_limit"  # over_limit.<coordinate>: 1 where the torque a recording needs exceeds its effort limit

# the model's names that each coordinate part takes
COORDINATES = {"q": "q_names", "qd": "v_names", "qdd": "v_names", "tau": "tau_names"}

# per joint type (dynlib.core.joints.NAMES) with more than one coordinate: the suffixes of (q, v, tau)
SUFFIXES = {
    "floating": (("x", "y", "z", "qx", "qy", "qz", "qw"), ("vx", "vy", "vz", "wx", "wy", "wz"), WRENCH),
    "planar": (("x", "y", "theta"), ("vx", "vy", "wz"), ("fx", "fy", "tz")),
}

# SPEC §5 order of the parts in a file (other parts after these)
ORDER = (TIME, "q", "qd", "qdd", "tau", EFFORT, RESIDUAL, "energy", CONTACT)
_RANK = {part: k for k, part in enumerate(ORDER)}

UNITS = {"q": "rad or m", "qd": "rad/s or m/s", "qdd": "rad/s² or m/s²", "tau": "N·m or N",
         "energy": "J", "contact": "N or N·m", "penetration": "m", "residual": "N or N·m",
         "effort": "N·m or N", "limit": "N·m or N"}

# the unit of a coordinate column by the kind of its coordinate: a translation, a rotation,
# or a unit quaternion's component (no unit)
_KIND_UNITS = {"linear": {"q": "m", "qd": "m/s", "qdd": "m/s²", "tau": "N"},
               "angular": {"q": "rad", "qd": "rad/s", "qdd": "rad/s²", "tau": "N·m"},
               "quaternion": {"q": ""}}
_SUFFIX_KINDS = {**dict.fromkeys(("x", "y", "z", "vx", "vy", "vz", "fx", "fy", "fz"), "linear"),
                 **dict.fromkeys(("theta", "wx", "wy", "wz", "tx", "ty", "tz"), "angular"),
                 **dict.fromkeys(("qx", "qy", "qz", "qw"), "quaternion")}
_JOINT_KINDS = {"revolute": "angular", "continuous": "angular", "prismatic": "linear"}


# -- coordinates -------------------------------------------------------------------------

def joint_coordinates(joint: str, kind: str) -> tuple:
    """(q names, v names, tau names) of one joint, `kind` its type name in `dynlib.core.joints.NAMES`."""
    suffixes = SUFFIXES.get(kind)
    if suffixes is None:
        return (joint,), (joint,), (joint,)
    return tuple(tuple(f"{joint}.{s}" for s in part) for part in suffixes)


# -- column names ------------------------------------------------------------------------

def column(part: str, name: str) -> str:
    """``<part>.<name>``: the column of one coordinate (``q.elbow``) or quantity."""
    return f"{part}.{name}"


def part(name: str) -> str:
    """The part a column belongs to: ``q`` for ``q.root.x``, ``time`` for ``time``."""
    return name.partition(".")[0]


def coordinate(name: str) -> str:
    """What follows the part: ``root.x`` for ``q.root.x`` ('' for ``time``)."""
    return name.partition(".")[2]


def unit(name: str, joint_types=None):
    """The unit of column `name` ('' for a number without one, e.g. a quaternion component).

    `joint_types` ({joint: type name}, e.g. ``dict(zip(model.joint_names,
    model.joint_types))``) tells a revolute joint's ``rad`` from a prismatic one's
    ``m``; without it, or for a coordinate it does not name, a one-coordinate column
    has None (unknown), while a free-flyer's or planar joint's ``<joint>.<suffix>``
    columns have their suffix's unit.
    """
    p, rest = part(name), coordinate(name)
    if p == TIME:
        return "s"
    if p == "energy":
        return "J"
    if p == PENETRATION:
        return "m"
    if p in (CONTACT, RESIDUAL):  # a wrench component: N or N·m
        return _KIND_UNITS.get(_SUFFIX_KINDS.get(rest.rpartition(".")[2]), {}).get("tau")
    if p in (ACTIVE, "friction"):
        return ""
    if p not in PARTS:
        return None
    types = joint_types or {}
    if rest in types:
        kind = _JOINT_KINDS.get(types[rest])
    else:
        joint, _, suffix = rest.rpartition(".")
        known = bool(joint) and (joint not in types or types[joint] in SUFFIXES)
        kind = _SUFFIX_KINDS.get(suffix) if known else None
    return _KIND_UNITS.get(kind, {}).get(p)


def rank(name: str) -> int:
    """The position of a column's part in the SPEC §5 order (after them all when unknown)."""
    return _RANK.get(part(name), len(_RANK))


def coordinate_columns(part_: str, names) -> list:
    """``<part>.<name>`` for each coordinate name."""
    return [f"{part_}.{n}" for n in names]


def column_names(q_names, v_names, parts=PARTS, tau_names=None) -> list:
    """The SPEC §5 column list, in order, for the requested `parts`.

    `parts` is any iterable among ``"q" "qd" "qdd" "tau" "energy"``; the order
    of the result is fixed (``time`` first) whatever the order of `parts`.
    `tau_names` (default: `v_names`) names the torque columns: `model.tau_names`
    gives a free-flyer's ``tau.root.fx … tz``.
    """
    parts = set(parts)
    unknown = parts - set(PARTS) - {"energy"}
    if unknown:
        raise InputError(f"unknown trajectory part(s) {sorted(unknown)}; "
                         f"expected some of {list(PARTS) + ['energy']}")
    names = [TIME]
    if "q" in parts:
        names += coordinate_columns("q", q_names)
    for p in ("qd", "qdd"):
        if p in parts:
            names += coordinate_columns(p, v_names)
    if "tau" in parts:
        names += coordinate_columns("tau", v_names if tau_names is None else tau_names)
    if "energy" in parts:
        names += list(ENERGY)
    return names


def model_columns(model, parts=PARTS) -> list:
    """`column_names` of a model's coordinates (its torque columns by ``model.tau_names``)."""
    return column_names(model.q_names, model.v_names, parts, tau_names=model.tau_names)


def tau_columns(model) -> list:
    """``tau.<tau_name>`` for every generalized force of `model`."""
    return coordinate_columns("tau", model.tau_names)


def effort_columns(names) -> list:
    """``effort.<name>`` for each coordinate name (a v name: measured torques)."""
    return coordinate_columns(EFFORT, names)


def residual_columns(names) -> list:
    """``residual.<name>`` for each coordinate name (effort − computed torque)."""
    return coordinate_columns(RESIDUAL, names)


def contact_columns(names) -> list:
    """``contact.<name>.fx … tz`` for each contact point or frame, in order."""
    return [f"{CONTACT}.{n}.{c}" for n in names for c in WRENCH]


def contact_names(names) -> list:
    """The contact points or frames that have a ``contact.<name>.fx`` column among `names`, in order."""
    head, tail = CONTACT + ".", "." + WRENCH[0]
    return [n[len(head):-len(tail)] for n in names if n.startswith(head) and n.endswith(tail)]


def limit_columns(names) -> list:
    """``limit.<name>`` for each coordinate with a held position limit."""
    return coordinate_columns(LIMIT, names)


def over_limit_columns(names) -> list:
    """``over_limit.<name>`` for each coordinate with an effort limit (`dynlib.motion.inverse.over_limit_flags`)."""
    return coordinate_columns(OVER_LIMIT, names)


def penetration_columns(names) -> list:
    """``penetration.<name>`` for each contact point."""
    return coordinate_columns(PENETRATION, names)


def active_frames(names) -> dict:
    """{frame: column} for the ``active.<frame>`` columns among `names`, in order."""
    return {n[len(ACTIVE) + 1:]: n for n in names if n.startswith(ACTIVE + ".")}


def run_metadata(model, friction_smoothing) -> dict:
    """The Parquet metadata of a run simulated on `model` (its gravity, floating base, joint damping
    and Coulomb friction per v coordinate, the friction's tanh smoothing): {key: text}."""
    import json

    a = model.arrays
    friction = {"damping": {n: float(x) for n, x in zip(model.v_names, a.damping)},
                "friction": {n: float(x) for n, x in zip(model.v_names, a.friction)},
                "smoothing": float(friction_smoothing)}
    return {GRAVITY_KEY: ",".join(repr(float(g)).removesuffix(".0") for g in a.gravity),
            FLOATING_BASE_KEY: "true" if model.has_floating_base else "false",
            JOINT_FRICTION_KEY: json.dumps(friction)}


def run_settings(metadata, file=None) -> dict:
    """The settings `run_metadata` wrote, from a file's metadata ({key: text} or bytes): a dict with
    ``gravity`` (3 floats), ``floating_base`` (bool), ``joint_friction`` ({"damping", "friction",
    "smoothing"}), each only when the file has it. InputError naming `file` and the key when a value
    does not read."""
    import json

    out = {}
    try:
        text = {(k.decode("utf-8", "replace") if isinstance(k, bytes) else k):
                (v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
                for k, v in (metadata or {}).items()}
        if GRAVITY_KEY in text:
            g = tuple(float(x) for x in text[GRAVITY_KEY].split(","))
            if len(g) != 3:
                raise ValueError("expected x,y,z")
            out["gravity"] = g
        if FLOATING_BASE_KEY in text:
            out["floating_base"] = {"true": True, "false": False}[text[FLOATING_BASE_KEY]]
        if JOINT_FRICTION_KEY in text:
            jf = json.loads(text[JOINT_FRICTION_KEY])
            out["joint_friction"] = {"damping": {str(k): float(v) for k, v in jf["damping"].items()},
                                     "friction": {str(k): float(v) for k, v in jf["friction"].items()},
                                     "smoothing": float(jf["smoothing"])}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # UnicodeDecodeError is a ValueError
        raise InputError(f"{file + ': ' if file else ''}its metadata does not read as dyn's run settings ({exc})") from None
    return out

