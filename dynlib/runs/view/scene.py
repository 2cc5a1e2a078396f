"""The scene as meshcat commands: the robot's shapes, contact-force arrows, traces,
the ground, the camera, and the animation that moves them.

Paths in the viewer's scene tree (each holds one object, meshcat's
``<path>/<object>``; the animation moves the path):

- ``/dyn/robot/<link>``: one per moving body, named after the link the body
  starts at, holding the shapes of every link merged into that body (fixed
  joints), each at its place in the body frame; ``/dyn/robot/world`` holds
  the links fixed to the world;
- ``/dyn/contacts/<name>``: a force arrow at a contact point, pointing along
  the force (its ``shaft`` scaled to the force's magnitude, its ``head`` at
  the tip), hidden while the force is zero;
- ``/dyn/traces/<frame>``: the path of a frame over the whole motion;
- ``/dyn/ground``: the contact ground plane (n·x = height), with a grid;
- ``/dyn/inertia``, ``/dyn/compare``, ``/dyn/com``, ``/dyn/collision``: what
  `dynlib.runs.view.overlays` draws.

Objects are in three.js JSON (version 4.5) as meshcat's Python package lowers
them; three.js cylinders and cones point along y, URDF cylinders along z.
"""
from __future__ import annotations

import itertools
import uuid
from urllib.parse import unquote

import numpy as np

from ...errors import InputError
from .meshes import MeshError
from .motion import link_in_body, quaternions, rotation_to
from .page import float32

DEFAULT_RGBA = (0.72, 0.72, 0.74, 1.0)      # a shape without a material
COLLISION_RGBA = (0.85, 0.55, 0.25, 1.0)   # the collision-geometry stand-in
FRAME_RGBA = (0.55, 0.6, 0.7, 1.0)         # the link-frame stand-in
ARROW_RGBA = (0.9, 0.15, 0.1, 1.0)
GROUND_RGBA = (0.55, 0.6, 0.55, 0.85)
PLACEHOLDER_RGBA = (0.95, 0.75, 0.2, 0.55)  # a mesh that cannot be drawn
TRACE_COLOURS = (0xFFD400, 0x00C8FF, 0xFF4FD8, 0x7CFF4F, 0xFF8C1A, 0xFFFFFF)
Y_TO_Z = np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])  # y axis onto z


def new_uuid() -> str:
    """A fresh random UUID string: the ``uuid`` of a three.js object, geometry or material."""
    return str(uuid.uuid4())


def node_name(name: str) -> str:
    """A scene-tree path element (no '/'), one per name: '%' and '/' percent-encoded, so that tf-prefixed
    names that differ only by '/' and '_' (``arm/link1``, ``arm_link1``) stay two nodes (mapping '/' to
    '_' merged them: one link's shapes and motion replaced the other's)."""
    return str(name).replace("%", "%25").replace("/", "%2F") or "%"


def matrix(T) -> list:
    """A 4x4 as three.js stores it: column-major."""
    return [float(x) for x in np.asarray(T, dtype=float).T.reshape(16)]


def pose(R=None, p=None) -> np.ndarray:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def corners(T, box) -> np.ndarray:
    """(8, 3): the corners of the axis-aligned box (2, 3) placed by T."""
    pts = np.array([[box[i, 0], box[j, 1], box[k, 2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)])
    return pts @ T[:3, :3].T + T[:3, 3]


def colour(rgba) -> tuple[int, float]:
    r, g, b, a = (list(rgba) + [1.0])[:4]
    return (int(round(255 * r)) << 16) | (int(round(255 * g)) << 8) | int(round(255 * b)), float(a)


class ObjectBuilder:
    """One three.js object JSON: a Group of meshes sharing geometries and materials."""

    def __init__(self):
        self.geometries, self.materials, self.children = [], [], []
        self._geometry_ids, self._material_ids = {}, {}
        self.bounds = []  # (8, 3) corners of every shape's box in the object's frame: where the robot is

    def material(self, rgba, kind="MeshPhongMaterial", vertex_colors=False) -> str:
        key = (kind, tuple(np.round(rgba, 4)), vertex_colors)
        if key not in self._material_ids:
            c, a = colour(rgba)
            m = {"uuid": new_uuid(), "type": kind, "color": c, "opacity": a, "transparent": a < 1.0}
            if vertex_colors:
                m["vertexColors"] = True
            if kind == "MeshPhongMaterial":
                m.update({"side": 2, "reflectivity": 0.5, "shininess": 30})
            self.materials.append(m)
            self._material_ids[key] = m["uuid"]
        return self._material_ids[key]

    def geometry(self, key, make) -> str:
        if key not in self._geometry_ids:
            g = make()
            g["uuid"] = new_uuid()
            self.geometries.append(g)
            self._geometry_ids[key] = g["uuid"]
        return self._geometry_ids[key]

    def mesh(self, name, geometry_id, material_id, T):
        self.children.append({"uuid": new_uuid(), "type": "Mesh", "name": name, "geometry": geometry_id,
                              "material": material_id, "matrix": matrix(T)})

    def add(self, child):
        self.children.append(child)

    def lower(self, T=None) -> dict:
        return {"metadata": {"version": 4.5, "type": "Object"}, "geometries": self.geometries,
                "materials": self.materials,
                "object": {"uuid": new_uuid(), "type": "Group", "matrix": matrix(np.eye(4) if T is None else T),
                           "children": self.children}}


# ------------------------------------------------------------------- shapes

def box_geometry(size) -> dict:
    """A three.js BoxGeometry (no uuid yet: `ObjectBuilder.geometry` gives it one) of sides `size` = (x, y, z)
    in metres, centred on its frame's origin."""
    return {"type": "BoxGeometry", "width": size[0], "height": size[1], "depth": size[2]}


def sphere_geometry(radius) -> dict:
    """A three.js SphereGeometry (no uuid yet) of `radius` metres, centred on its frame's origin."""
    return {"type": "SphereGeometry", "radius": radius, "widthSegments": 24, "heightSegments": 16}


def cylinder_geometry(radius, length, top=None) -> dict:
    """A three.js CylinderGeometry (no uuid yet) of `radius` and `length` metres along its y axis, centred;
    `top`: another radius at +y (0: a cone)."""
    return {"type": "CylinderGeometry", "radiusTop": radius if top is None else top, "radiusBottom": radius,
            "height": length, "radialSegments": 32}


def add_shape(obj: ObjectBuilder, shape, T_link, meshes, packages, rgba_default, notes) -> bool:
    """Add one model.visuals / collision_shapes entry at T_link (the link in the object's
    frame); False when it cannot be drawn (a note says why)."""
    T = T_link @ pose(shape.R, shape.p)
    rgba = shape.rgba or rgba_default
    name = node_name(shape.link)
    kind, size = shape.kind, shape.size
    if kind in ("box", "sphere", "cylinder", "capsule"):
        half = {"box": lambda: np.asarray(size) / 2, "sphere": lambda: np.full(3, size[0]),
                "cylinder": lambda: np.array([size[0], size[0], size[1] / 2]),
                "capsule": lambda: np.array([size[0], size[0], size[0] + size[1] / 2])}[kind]()
        obj.bounds.append(corners(T, np.array([-half, half])))
    if kind == "box":
        obj.mesh(name, obj.geometry(("box", size), lambda: box_geometry(size)), obj.material(rgba), T)
    elif kind == "sphere":
        obj.mesh(name, obj.geometry(("sphere", size), lambda: sphere_geometry(size[0])), obj.material(rgba), T)
    elif kind == "cylinder":
        obj.mesh(name, obj.geometry(("cylinder", size), lambda: cylinder_geometry(*size)), obj.material(rgba),
                 T @ Y_TO_Z)
    elif kind == "capsule":
        r, length = size
        mid = obj.material(rgba)
        obj.mesh(name, obj.geometry(("cylinder", size), lambda: cylinder_geometry(r, length)), mid, T @ Y_TO_Z)
        ball = obj.geometry(("sphere", (r,)), lambda: sphere_geometry(r))
        for end in (-0.5, 0.5):
            obj.mesh(name, ball, mid, T @ pose(p=(0, 0, end * length)))
    elif kind == "mesh":
        try:
            path = packages.resolve(shape.filename)
            uri = str(shape.filename).strip()
            package = (packages.find(unquote(uri[len("package://"):].partition("/")[0]))
                       if uri.startswith("package://") else None)
        except InputError as exc:  # PackageNotFound, or a URI scheme that is not read
            notes.append(("package", shape, str(exc)))
            return False
        try:
            mf = meshes.load(path, package)
        except MeshError as exc:
            notes.append(("mesh", shape, str(exc)))
            return False
        scaled = T @ pose(np.diag(np.asarray(shape.size, float) * mf.unit))
        obj.bounds.append(corners(scaled, mf.box / mf.unit))
        own = mf.own_materials and shape.rgba is None  # the file's colours, as RViz shows them
        gid = obj.geometry(("mesh", str(mf.path)), lambda: dict(meshes.buffers(mf)))
        obj.mesh(name, gid, obj.material((1.0, 1.0, 1.0, 1.0), vertex_colors=True) if own else obj.material(rgba),
                 scaled)
    else:
        notes.append(("shape", shape, f"geometry '{kind}' is not drawn"))
        return False
    return True


def robot_objects(model, shapes, meshes, packages, rgba_default, notes):
    """{body index or -1: ObjectBuilder} with every shape at its place in its body frame, and how many
    were drawn; a mesh that cannot be drawn is a placeholder box (`placeholder`), not counted."""
    objects, drawn = {}, 0
    for shape in shapes:
        body, T = link_in_body(model, shape.link)
        obj = objects.setdefault(body, ObjectBuilder())
        if add_shape(obj, shape, T, meshes, packages, rgba_default, notes):
            drawn += 1
        elif shape.kind == "mesh":
            placeholder(obj, model, shape, body, T, lambda c: _mesh_box(c, meshes, packages))
    return {b: o for b, o in objects.items() if o.children}, drawn


def _mesh_box(shape, meshes, packages):
    """(2, 3) the bounding box of a mesh shape in its own frame, scaled (None when it cannot be read)."""
    try:
        mf = meshes.load(packages.resolve(shape.filename))
    except (InputError, MeshError):
        return None
    return np.sort(mf.box * np.asarray(shape.size, float), axis=0)


def placeholder(obj: ObjectBuilder, model, shape, body, T_link, mesh_box=None):
    """A box where a mesh cannot be drawn: the box around the link's <collision> geometry (its meshes
    through `mesh_box`, when they can be read), else the body's equivalent inertia box (the uniform box of
    its mass and principal moments, at its centre of mass, in its principal axes; for the link the body
    starts at), else a 5 cm cube."""
    boxes = []
    for c in model.collision_shapes:
        box = mesh_box(c) if c.link == shape.link and c.kind == "mesh" and mesh_box is not None else None
        if box is not None:
            boxes.append(corners(pose(c.R, c.p), box))
        if c.link == shape.link and c.kind in ("box", "sphere", "cylinder", "capsule"):
            size = np.asarray(c.size, float)
            half = {"box": lambda: size / 2, "sphere": lambda: np.full(3, size[0]),
                    "cylinder": lambda: np.array([size[0], size[0], size[1] / 2]),
                    "capsule": lambda: np.array([size[0], size[0], size[0] + size[1] / 2])}[c.kind]()
            boxes.append(corners(pose(c.R, c.p), np.array([-half, half])))
    if boxes:
        pts = np.vstack(boxes)
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        T, dims = T_link @ pose(p=(lo + hi) / 2), hi - lo
    elif body >= 0 and model.body_links[body] == shape.link and model.arrays.inertia[body, 0, 0] > 0:
        T, dims = _inertia_box(model.arrays.inertia[body])
    else:
        T, dims = T_link @ pose(shape.R, shape.p), np.full(3, 0.05)
    dims = np.maximum(dims, 1e-3)
    obj.bounds.append(corners(T, np.array([-dims / 2, dims / 2])))
    obj.mesh(node_name(shape.link), obj.geometry(("placeholder", tuple(np.round(dims, 9))), lambda: box_geometry(dims)),
             obj.material(PLACEHOLDER_RGBA), T)


def _inertia_box(I):
    """(pose, dimensions) of the uniform box with the spatial inertia I's mass and principal moments
    (`dynlib.algorithms.inertia_box`, the boxes of --show inertia)."""
    from ...algorithms.inertia_box import body_inertial, box_dimensions, principal_axes

    m, c, I_c = body_inertial(I)
    moments, R = principal_axes(I_c)
    return pose(R, c), box_dimensions(m, moments)[0]


def frame_objects(model, size):
    """The stand-in when nothing else can be drawn: per body, a ball at its origin, a stick to
    each child joint, and its axes (x red, y green, z blue); links fixed to the world too."""
    a = model.arrays
    r = 0.03 * size
    objects = {}
    for i in range(-1, model.nb):
        obj = ObjectBuilder()
        ball = obj.geometry("ball", lambda: sphere_geometry(r))
        if i >= 0:
            obj.mesh("origin", ball, obj.material(FRAME_RGBA), np.eye(4))
            _axes(obj, 3 * r)
        for c in np.flatnonzero(a.parent == i):
            p = a.Xtree_p[c]
            length = float(np.linalg.norm(p))
            if length < 1e-9:
                continue
            stick = obj.geometry(("stick", round(length, 9)), lambda: cylinder_geometry(0.4 * r, length))
            obj.mesh("link", stick, obj.material(FRAME_RGBA), pose(rotation_to(p)[0], p / 2))
        if i < 0 and obj.children:  # the robot's mount on the world
            obj.mesh("origin", ball, obj.material(FRAME_RGBA), np.eye(4))
        if obj.children:
            objects[i] = obj
    return objects


def _axes(obj: ObjectBuilder, length):
    positions = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1]], float) * length
    colours = np.array([[1, 0, 0], [1, 0.6, 0], [0, 1, 0], [0.6, 1, 0], [0, 0, 1], [0, 0.6, 1]], float)
    gid = obj.geometry("axes", lambda: {"type": "BufferGeometry", "data": {"attributes": {
        "position": {"itemSize": 3, "type": "Float32Array", "array": float32(positions), "normalized": False},
        "color": {"itemSize": 3, "type": "Float32Array", "array": float32(colours), "normalized": False}}}})
    m = {"uuid": new_uuid(), "type": "LineBasicMaterial", "color": 0xFFFFFF, "vertexColors": True}
    obj.materials.append(m)
    obj.children.append({"uuid": new_uuid(), "type": "LineSegments", "name": "axes", "geometry": gid,
                         "material": m["uuid"], "matrix": matrix(np.eye(4))})


# ------------------------------------------------------------------- commands

def set_object(path, obj: dict) -> dict:
    return {"type": "set_object", "path": path, "object": obj}


def set_transform(path, T) -> dict:
    return {"type": "set_transform", "path": path, "matrix": float32(np.asarray(T, float).T.reshape(16))}


def set_property(path, key, value) -> dict:
    return {"type": "set_property", "path": path, "property": key, "value": value}


def track(name, kind, times, values) -> dict:
    if kind == "boolean":
        vals = [bool(v) for v in values]
    else:
        vals = float32(values)
    return {"name": name, "type": kind, "times": float32(times), "values": vals}


def pose_tracks(times, T) -> list:
    """.position and .quaternion tracks of (K, 4, 4) placements."""
    return [track(".position", "vector3", times, T[:, :3, 3]),
            track(".quaternion", "quaternion", times, quaternions(T[:, :3, :3]))]


def clip(path, tracks) -> dict:
    # times are in seconds: fps 1 (three.js scales the key times by 1/fps)
    return {"path": path, "clip": {"fps": 1, "name": "default", "tracks": tracks}}


def line_object(points, rgb) -> dict:
    obj = ObjectBuilder()
    gid = obj.geometry("line", lambda: {"type": "BufferGeometry", "data": {"attributes": {
        "position": {"itemSize": 3, "type": "Float32Array", "array": float32(points), "normalized": False}}}})
    m = {"uuid": new_uuid(), "type": "LineBasicMaterial", "color": rgb, "linewidth": 2}
    obj.materials.append(m)
    obj.children.append({"uuid": new_uuid(), "type": "Line", "name": "path", "geometry": gid,
                         "material": m["uuid"], "matrix": matrix(np.eye(4))})
    return obj.lower()


def arrow_objects(radius, head):
    """(shaft, head) objects of a force arrow along y: a unit-length shaft from 0 to 1 (scaled
    to the length by the animation) and a cone whose base is at the head node's origin."""
    shaft = ObjectBuilder()
    shaft.mesh("shaft", shaft.geometry("shaft", lambda: cylinder_geometry(radius, 1.0)), shaft.material(ARROW_RGBA),
               pose(p=(0, 0.5, 0)))
    cone = ObjectBuilder()
    cone.mesh("head", cone.geometry("head", lambda: cylinder_geometry(2.2 * radius, head, top=0.0)),
              cone.material(ARROW_RGBA), pose(p=(0, head / 2, 0)))
    return shaft.lower(), cone.lower()


def ground_object(height, normal, centre, extent, spacing, slab=True) -> tuple[dict, np.ndarray]:
    """Grid lines in the plane n·x = height, under `centre`, on a thin slab (the contact ground)
    or alone (a floor to see the motion against; meshcat's own grid is hidden: headless
    Chromium's software renderer drops its lines that pass behind the camera)."""
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    R = rotation_to(n[None])[0] @ np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])  # z onto n
    origin = centre - (n @ centre - height) * n
    obj = ObjectBuilder()
    if slab:
        thickness = 0.02 * spacing
        obj.mesh("ground", obj.geometry("slab", lambda: box_geometry((extent, extent, thickness))),
                 obj.material(GROUND_RGBA), pose(p=(0, 0, -thickness / 2 - 1e-3 * spacing)))
    ticks = np.arange(-np.floor(extent / 2 / spacing), np.floor(extent / 2 / spacing) + 1) * spacing
    # each line in 16 pieces: headless Chromium's software renderer drops a whole line
    # segment that passes behind the camera
    cuts = np.linspace(-extent / 2, extent / 2, 17)
    a, b = np.meshgrid(ticks, cuts[:-1], indexing="ij")
    _, c = np.meshgrid(ticks, cuts[1:], indexing="ij")
    zeros = np.zeros_like(a)
    along_y = np.stack([np.stack([a, b, zeros], -1), np.stack([a, c, zeros], -1)], axis=2).reshape(-1, 3)
    pts = np.vstack([along_y, along_y[:, [1, 0, 2]]])
    gid = obj.geometry("grid", lambda: {"type": "BufferGeometry", "data": {"attributes": {
        "position": {"itemSize": 3, "type": "Float32Array", "array": float32(pts), "normalized": False}}}})
    m = {"uuid": new_uuid(), "type": "LineBasicMaterial", "color": 0x3A403A if slab else 0x9AA0A8}
    obj.materials.append(m)
    obj.children.append({"uuid": new_uuid(), "type": "LineSegments", "name": "grid", "geometry": gid,
                         "material": m["uuid"], "matrix": matrix(np.eye(4))})
    return obj.lower(), pose(R, origin)


def camera_commands(centre, radius, fov=75.0) -> list:
    """The camera at the front right of `centre`, above it, where a ball of `radius` about it fills
    the height of meshcat's view with a margin (vertical field of view `fov` degrees; the page's loader points
    the orbit controls at `centre`). meshcat's camera sits in /Cameras/default/rotated, which is
    y-up: world (x, y, z) is (x, z, -y) there."""
    d = np.array([1.0, 0.75, 0.7])
    distance = 1.25 * max(radius, 0.1) / np.sin(np.radians(fov) / 2)
    p = np.asarray(centre, float) + distance * d / np.linalg.norm(d)
    return [set_property("/Cameras/default/rotated/<object>", "position", [float(p[0]), float(p[2]), float(-p[1])])]


def palette():
    return itertools.cycle(TRACE_COLOURS)
