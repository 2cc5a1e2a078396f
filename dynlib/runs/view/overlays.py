"""What the numbers mean, drawn over the robot: ``dyn view --show inertia,com,collision --compare OTHER.urdf``.

- ``inertia``: each body's equivalent inertia box (`dynlib.algorithms.inertia_box`: the
  uniform box with the body's mass and principal moments, at its centre of mass, its edges
  along the principal axes), translucent blue, at ``/dyn/inertia/<link>``. A body is every
  link that fixed joints hold together, as `dyn identify` estimates them; a massless body has
  no box.
- ``com``: a small sphere at each body's centre of mass (``/dyn/com/links/<link>``) and a larger
  one at the whole robot's (``/dyn/com/robot``, `dynlib.center_of_mass` at every keyframe:
  the moving bodies).
- ``collision``: the URDF ``<collision>`` geometry, translucent orange, at
  ``/dyn/collision/<link>`` (each node's ``visible`` box in the page's controls, Scene ›
  dyn, hides it or shows it again).
- `compare`: a second model of the same robot (the same joints, in the same tree: the URDF
  that `dyn identify` wrote, say) with its inertia boxes in another colour at
  ``/dyn/compare/<link>``, placed by its own kinematics at the same joint positions (`build_view`
  draws the robot's own boxes with them).

Each overlay moves with its body (the animation moves each path as the robot's).
"""
from __future__ import annotations

import numpy as np

from ...algorithms.inertia_box import center_of_mass, inertia_boxes
from ...errors import InputError, ModelError
from . import scene as S
from .motion import body_placements
from .page import float32

SHOW = ("inertia", "com", "collision")
INERTIA_RGBA = (0.15, 0.45, 1.0, 0.35)   # the robot's inertia boxes
COMPARE_RGBA = (1.0, 0.5, 0.05, 0.35)    # the compared model's
COLLISION_RGBA = (1.0, 0.55, 0.2, 0.45)
COM_RGBA = (0.05, 0.05, 0.05, 1.0)       # a body's centre of mass
ROBOT_COM_RGBA = (0.95, 0.1, 0.65, 1.0)  # the robot's


def parse_show(values) -> tuple:
    """The overlays asked for: names from SHOW, as a comma list and/or repeated (``("inertia,com",)``)."""
    out = []
    for value in values or ():
        for name in str(value).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in SHOW:
                raise InputError(f"unknown overlay '{name}', expected a comma list of {', '.join(SHOW)}", key="--show")
            out.append(name)
    return tuple(dict.fromkeys(out))


def check_same_robot(model, other) -> None:
    """A ModelError unless `other` has `model`'s joints (names, types, order, tree) and coordinates."""
    where = {"file": other.source or None, "key": "--compare"}
    if tuple(other.joint_names) != tuple(model.joint_names):
        mine, theirs = set(model.joint_names), set(other.joint_names)
        odd = sorted(theirs - mine) or sorted(mine - theirs)
        what = (f"joint '{odd[0]}' is {'not in' if odd[0] in theirs else 'missing from'} {model.name}"
                if odd else "its joints are in another order")
        raise ModelError(f"not the same robot as '{model.name}': {what} (the boxes of two models are compared "
                         "joint by joint)", **where)
    a, b = model.arrays, other.arrays
    for i, name in enumerate(model.joint_names):
        if a.parent[i] != b.parent[i] or a.jtype[i] != b.jtype[i]:
            raise ModelError(f"not the same robot as '{model.name}': joint '{name}' has another "
                             f"{'parent' if a.parent[i] != b.parent[i] else 'type'}", **where)
    if tuple(other.q_names) != tuple(model.q_names):
        raise ModelError(f"not the same robot as '{model.name}': its coordinates differ "
                         "(a floating base or a locked joint on one of them only?)", **where)


def load_like(model, path, package_path=()):
    """The robot at `path` read as `model` was (its floating base, its locked joints), to compare; a model
    only drawn, so non-physical inertias are read with a warning (`dynlib.load`'s strict=False)."""
    from ...files.urdf import load

    return load(path, floating_base=model.floating_base, package_path=tuple(package_path),
                lock=dict(model.locked) or None, strict=False)


def _material(obj, rgba):
    """A material id of `obj` drawn over the robot (no depth test: seen through the robot's shapes,
    as an x-ray; the robot still shows through a translucent one), front faces only."""
    mid = obj.material(rgba)
    next(m for m in obj.materials if m["uuid"] == mid).update({"depthTest": False, "depthWrite": False, "side": 0, "transparent": True})
    return mid


def _edges(obj, dims, rgba, T):
    """The box's 12 edges as lines, drawn over the robot too."""
    half = np.asarray(dims) / 2
    c = S.corners(np.eye(4), np.array([-half, half]))  # corner k = (i, j, l) bits of x, y, z
    pairs = [(k, k ^ bit) for k in range(8) for bit in (1, 2, 4) if not k & bit]
    gid = obj.geometry(("edges", tuple(dims)), lambda: {"type": "BufferGeometry", "data": {"attributes": {
        "position": {"itemSize": 3, "type": "Float32Array", "array": float32(c[np.array(pairs)].reshape(-1, 3)),
                     "normalized": False}}}})
    m = {"uuid": S.new_uuid(), "type": "LineBasicMaterial", "color": S.colour(rgba)[0], "depthTest": False,
         "transparent": True, "opacity": 0.9}
    obj.materials.append(m)
    obj.children.append({"uuid": S.new_uuid(), "type": "LineSegments", "name": "edges", "geometry": gid,
                         "material": m["uuid"], "matrix": S.matrix(T)})


def box_objects(model, boxes, rgba) -> dict:
    """{body: ObjectBuilder} of the inertia boxes, faces and edges (massless bodies have none)."""
    objects = {}
    for b in range(model.nb):
        if not boxes.mass[b] > 0:
            continue
        obj = S.ObjectBuilder()
        dims = tuple(float(x) for x in np.maximum(boxes.dims[b], 1e-5))  # a side 0 drawn as a sheet
        T = S.pose(boxes.R[b], boxes.com[b])
        obj.mesh("inertia", obj.geometry(("box", dims), lambda: S.box_geometry(dims)), _material(obj, rgba), T)
        _edges(obj, dims, rgba, T)
        objects[b] = obj
    return objects


def com_objects(model, boxes, radius) -> dict:
    """{body: ObjectBuilder} of a sphere at each massive body's centre of mass."""
    objects = {}
    for b in range(model.nb):
        if boxes.mass[b] > 0:
            obj = S.ObjectBuilder()
            obj.mesh("com", obj.geometry("ball", lambda: S.sphere_geometry(radius)), _material(obj, COM_RGBA),
                     S.pose(p=boxes.com[b]))
            objects[b] = obj
    return objects


def moving(root, model, objects, Tb, anim_t) -> tuple[list, list]:
    """set_object and set_transform commands of per-body `objects` under `root`, and their clips."""
    commands, clips = [], []
    for b, obj in objects.items():
        path = f"{root}/" + S.node_name("world" if b < 0 else model.body_links[b])
        commands.append(S.set_object(path, obj.lower()))
        if b >= 0:
            commands.append(S.set_transform(path, Tb[b, 0]))
            if len(anim_t) > 1:
                clips.append(S.clip(path, S.pose_tracks(anim_t, Tb[b])))
    return commands, clips


def clamped_warnings(model, boxes, what="") -> list:
    return [f"{what}link '{model.body_links[b]}': principal moments {m[0]:.4g}, {m[1]:.4g}, {m[2]:.4g} kg m^2 break "
            "the triangle inequality (no body has them): its inertia box is drawn with a side 0"
            for b, m in enumerate(boxes.moments) if boxes.clamped[b]]


def overlays(model, show, Tb, Qk, anim_t, size, *, compare=None, collision=None) -> tuple[list, list, list, list]:
    """(commands, clips, caption lines, warnings) of the overlays `show` (names from SHOW) and of the
    `compare` model's inertia boxes; `collision`: {body: ObjectBuilder} of the collision geometry."""
    commands, clips, info, warnings = [], [], [], []
    boxes = inertia_boxes(model)
    if "inertia" in show:
        c, k = moving("/dyn/inertia", model, box_objects(model, boxes, INERTIA_RGBA), Tb, anim_t)
        commands, clips = commands + c, clips + k
        warnings += clamped_warnings(model, boxes)
        info.append("inertia boxes (blue): each body's uniform box of its mass and principal moments, at its "
                    "centre of mass")
    if compare is not None:
        other = inertia_boxes(compare)
        Tc = body_placements(compare, Qk) if compare.nb else Tb
        c, k = moving("/dyn/compare", compare, box_objects(compare, other, COMPARE_RGBA), Tc, anim_t)
        commands, clips = commands + c, clips + k
        warnings += clamped_warnings(compare, other, f"--compare {compare.source or compare.name}: ")
        info.append(f"compared (orange): the inertia boxes of {compare.source or compare.name}")
    if "com" in show:
        c, k = moving("/dyn/com/links", model, com_objects(model, boxes, 0.012 * size), Tb, anim_t)
        commands, clips = commands + c, clips + k
        if boxes.mass.sum() > 0:
            X = center_of_mass(model, Qk).reshape(-1, 3)
            obj = S.ObjectBuilder()
            obj.mesh("com", obj.geometry("ball", lambda: S.sphere_geometry(0.025 * size)),
                     _material(obj, ROBOT_COM_RGBA), np.eye(4))
            commands += [S.set_object("/dyn/com/robot", obj.lower()), S.set_transform("/dyn/com/robot", S.pose(p=X[0]))]
            if len(anim_t) > 1:
                clips.append(S.clip("/dyn/com/robot", [S.track(".position", "vector3", anim_t, X)]))
        info.append("centres of mass: each body's (black), the robot's (pink)")
    if "collision" in show and collision:
        c, k = moving("/dyn/collision", model, collision, Tb, anim_t)
        commands, clips = commands + c, clips + k
        info.append("collision geometry (orange; controls › Scene › dyn › collision hides it)")
    return commands, clips, info, warnings
