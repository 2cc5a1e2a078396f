"""Contact models for the simulation, and contact inverse dynamics (`dynlib.motion.contact_id`).

A simulation's ``contacts`` (SPEC §6; `dynlib.sim.simulate.simulate(contacts=...)`) is a
dict (or a `points.ContactSpec`) with ``model``, ``points``, ``ground`` and the
model's parameters. `build` turns it into a `Contact`:

1. ``model`` picks a parameter class in `MODELS` (`SoftParams`, `BilateralParams`,
   `UnilateralParams`, `RelaxedParams`, each in the module of its model);
2. the parameters are that class's fields, filled from the keys of the same
   names, the class's defaults for the keys not given (`params_from`);
3. ``points`` and ``ground`` become the shared `points.Points`.

The simulation loop takes a built contact (or none) as one `ContactModel`
record (`contact_record`): the model's code ``kind`` (NO_CONTACT, SOFT,
BILATERAL, UNILATERAL, RELAXED), the `Points`, the `points.PointState` every
model writes (positions, depths, forces: what a row reports), and one pair per
model, as Pinocchio's constraint model and data: its parameters and its own
workspace (`soft.SoftContact`, `bilateral.BilateralContact`,
`unilateral.UnilateralContact`, `relaxed.RelaxedContact`); the models not used
have their defaults and zero-size workspaces, and without contacts every array
is empty. Every contact model is thus a value of the same numba type: the loop's
stages (`dynlib.sim.stages`) branch on ``kind`` (soft contact in ``body_forces``,
the other three in ``acceleration``), and a new contact model compiles no new
loop. Adding a parameter to a model means a field (with its default) in its
parameter class, the scenario schema's key, and its use in the model's kernel.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...errors import InputError
from .bilateral import BilateralContact, BilateralParams, bilateral_work
from .points import (ContactSpec, Points, PointState, at_configuration, contact_points, empty_like, ground_points,
                     no_points, point_state)
from .relaxed import DIRECT_FORM, RENAMED, TIME_CONSTANT_FORM, RelaxedContact, RelaxedParams
from .soft import SoftContact, SoftParams, soft_work
from .unilateral import UnilateralContact, UnilateralParams, impulse_work

MODELS = {"soft": SoftParams, "bilateral": BilateralParams, "unilateral": UnilateralParams,
          "relaxed": RelaxedParams}
PARAMETERS = sorted({f for cls in MODELS.values() for f in cls._fields})  # every model's keys

# the contact model of a ContactModel record (its `kind`)
NO_CONTACT, SOFT, BILATERAL, UNILATERAL, RELAXED = range(5)
KINDS = {"soft": SOFT, "bilateral": BILATERAL, "unilateral": UNILATERAL, "relaxed": RELAXED}


class ContactModel(NamedTuple):
    """The contact stages' record: the model (`kind`), the points, and every model's parameters and workspace
    (the others' defaults, zero-size), one numba type for every contact model and for none."""

    kind: int                     # NO_CONTACT, SOFT, BILATERAL, UNILATERAL or RELAXED
    points: Points                # contact points and ground (none without contacts)
    state: PointState             # every point's position, depth and force of the last evaluation
    soft: SoftContact
    bilateral: BilateralContact
    unilateral: UnilateralContact
    relaxed: RelaxedContact


class Contact(NamedTuple):
    """A built contact model: its name, point names, parameters and points."""

    model: str          # soft | bilateral | unilateral | relaxed
    names: tuple        # (nc,) point names (the contact.<name>.* columns)
    params: tuple       # SoftParams, BilateralParams, UnilateralParams or RelaxedParams
    points: Points


# each model's pair and its workspace's allocation (nc, nv)
_PAIRS = {"soft": (SoftContact, soft_work), "bilateral": (BilateralContact, bilateral_work),
          "unilateral": (UnilateralContact, impulse_work), "relaxed": (RelaxedContact, impulse_work)}


def contact_record(contact, nv) -> ContactModel:
    """The ContactModel record of a built `Contact` (None: no contact) for a model of nv velocities, with the
    workspace of the contact's model allocated."""
    nc = 0 if contact is None else len(contact.names)
    pairs = {}
    for name, (pair, work) in _PAIRS.items():
        used = contact is not None and contact.model == name
        pairs[name] = pair(contact.params if used else MODELS[name](),
                           work(nc, nv) if used else empty_like(work(0, 0)))
    return ContactModel(NO_CONTACT if contact is None else KINDS[contact.model],
                        no_points() if contact is None else contact.points, point_state(nc), **pairs)


def key_problem(name, keys):
    """(key, message) for the first of `keys` (a contacts block's keys) that the model `name`
    does not use, or for a relaxed model given both forms of its spring; None when all is well.
    The scenario loader and `build` both ask it (the loader with the key's line)."""
    if name not in MODELS:
        return None
    keys = [k for k in keys if k not in ("model", "points", "ground")]
    used = MODELS[name]._fields
    for key in keys:
        if name == "relaxed" and key in RENAMED:
            new, unit, soft_unit = RENAMED[key]
            return key, f"relaxed's direct form names it {new} ({unit}); {key} is soft contact's, in {soft_unit}"
        if key not in used and key in PARAMETERS:
            users = [m for m, cls in MODELS.items() if key in cls._fields]
            return key, (f"the {name} model has no parameter '{key}' (it is {' and '.join(users)}'s); "
                         f"{name}'s are {', '.join(used)}")
    if name == "relaxed":
        direct = [k for k in keys if k in DIRECT_FORM]
        tc = [k for k in keys if k in TIME_CONSTANT_FORM]
        if direct and tc:
            return direct[0], (f"give either stiffness_per_mass/damping_per_mass (MuJoCo's direct form) or "
                               f"time_constant/damping_ratio, not both ({', '.join(tc + direct)} given)")
    return None


def params_from(cls, values) -> tuple:
    """A `cls` parameter tuple: each field from `values` (a mapping) under its own name, else the class default;
    converted to the default's type (float or int). InputError for a value that is not a finite number."""
    fields = {}
    for name, default in cls._field_defaults.items():
        x = values.get(name)
        fields[name] = default if x is None else _number(type(default), x, name)
    return cls(**fields)


def _number(kind, x, name):
    try:
        y = float(x)
    except (TypeError, ValueError):
        raise InputError(f"contacts: {name} must be a number, got {x!r}") from None
    if not math.isfinite(y) or isinstance(x, bool) or (kind is int and y != int(y)):
        raise InputError(f"contacts: {name} must be a finite {'integer' if kind is int else 'number'}, got {x!r}")
    return kind(y)


def _as_dict(spec) -> dict:
    """The keys of a ContactSpec or a dict, with the ground as ``ground: {height, normal}``."""
    if isinstance(spec, ContactSpec):
        d = {k: v for k, v in spec._asdict().items() if v is not None}
        d["ground"] = {"height": d.pop("height"), "normal": d.pop("normal")}
        return d
    if not isinstance(spec, dict):
        raise InputError(f"contacts must be a dict or a ContactSpec, got {type(spec).__name__}")
    return {k: v for k, v in spec.items() if v is not None}


def build(model, spec, q0) -> Contact:
    """The `Contact` of a contacts dict (or ContactSpec) for `model`, at the initial configuration q0."""
    spec = _as_dict(spec)
    name = spec.pop("model", None)
    if name not in MODELS:
        raise InputError(f"contacts: model must be one of {', '.join(MODELS)}, got {name!r}")
    points, ground = spec.pop("points", "from-collision"), spec.pop("ground", None) or {}
    unknown = sorted(set(spec) - set(PARAMETERS))
    if unknown:
        raise InputError(f"contacts: unknown key '{unknown[0]}'; the keys are model, points, ground, "
                         f"{', '.join(PARAMETERS)}")
    problem = key_problem(name, spec)
    if problem is not None:
        raise InputError(f"contacts.{problem[0]}: {problem[1]}")
    if not isinstance(ground, dict):
        raise InputError(f"contacts: ground must be a dict of height and normal, got {ground!r}")
    params = params_from(MODELS[name], spec)
    pts = contact_points(model, points, q0)
    nc = len(pts.names)
    held = ground_points(pts, ground.get("normal", (0.0, 0.0, 1.0)),
                         _number(float, ground.get("height", 0.0), "ground.height"), np.zeros((nc, 3)))
    _hold_targets(model, held, points, q0)
    return Contact(name, pts.names, params, held)


def _hold_targets(model, pts, points, q0):
    """pts.target = where each point is at q0, or the target its entry of `points` gives."""
    pts.target[:] = at_configuration(model, q0, points=pts).x  # (the set-up kernel every run compiles)
    if not isinstance(points, str):
        for c, pt in enumerate(points):
            tgt = pt.get("target") if isinstance(pt, dict) else getattr(pt, "target", None)
            if tgt is not None:
                pts.target[c] = np.asarray(tgt, float).reshape(3)
