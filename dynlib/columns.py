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
``energy``      ``energy.kinetic potential total`` (J)     simulate
``contact``     ``contact.<name>.fx fy fz tx ty tz``       simulate (a contact point),
                                                           contact-id (a contact frame)
``penetration`` ``penetration.<name>`` (m)                 simulate
``residual``    ``residual.root``                          contact-id
``friction``    ``friction.feasible`` (1 or 0)             contact-id --friction
``active``      ``active.<frame>`` (non-zero: in contact)  read by contact-id
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
Nothing here imports numpy or numba: the names are plain strings.
"""
from __future__ import annotations

from .errors import InputError

TIME = "time"
PARTS = ("q", "qd", "qdd", "tau")  # the coordinate parts, one column per coordinate
ENERGY = ("energy.kinetic", "energy.potential", "energy.total")
WRENCH = ("fx", "fy", "fz", "tx", "ty", "tz")  # a wrench (f, τ): linear part first
RESIDUAL_ROOT = "residual.root"
FRICTION_FEASIBLE = "friction.feasible"
ACTIVE = "active"

# the model's names that each coordinate part takes
COORDINATES = {"q": "q_names", "qd": "v_names", "qdd": "v_names", "tau": "tau_names"}

# per joint type (dynlib.joints.NAMES) with more than one coordinate: the suffixes of (q, v, tau)
SUFFIXES = {
    "floating": (("x", "y", "z", "qx", "qy", "qz", "qw"), ("vx", "vy", "vz", "wx", "wy", "wz"), WRENCH),
    "planar": (("x", "y", "theta"), ("vx", "vy", "wz"), ("fx", "fy", "tz")),
}

# SPEC §5 order of the parts in a file (other parts after these)
ORDER = (TIME, "q", "qd", "qdd", "tau", "energy", "contact")
_RANK = {part: k for k, part in enumerate(ORDER)}

UNITS = {"q": "rad or m", "qd": "rad/s or m/s", "qdd": "rad/s² or m/s²", "tau": "N·m or N",
         "energy": "J", "contact": "N or N·m", "penetration": "m", "residual": "N or N·m"}


# -- coordinates -------------------------------------------------------------------------

def joint_coordinates(joint: str, kind: str) -> tuple:
    """(q names, v names, tau names) of one joint, `kind` its type name in `dynlib.joints.NAMES`."""
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


def contact_columns(names) -> list:
    """``contact.<name>.fx … tz`` for each contact point or frame, in order."""
    return [f"contact.{n}.{c}" for n in names for c in WRENCH]


def penetration_columns(names) -> list:
    """``penetration.<name>`` for each contact point."""
    return coordinate_columns("penetration", names)


def active_frames(names) -> dict:
    """{frame: column} for the ``active.<frame>`` columns among `names`, in order."""
    return {n[len(ACTIVE) + 1:]: n for n in names if n.startswith(ACTIVE + ".")}
