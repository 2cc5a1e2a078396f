"""URDF / xacro -> Model.

Reads a URDF with lxml (line numbers kept for every error), validates it, and
builds the kinematic tree of `dynlib.core.model`:

- bodies in depth-first order over the URDF tree, children in document order (Pinocchio sorts
  them by joint name: ``model.pinocchio_joints``, `dynlib.core.pinocchio_order`);
  one body per moving joint (revolute, continuous, prismatic, planar, floating);
- fixed joints merged: the child link's inertia is lumped into the parent body
  and the link is kept as a frame; links fixed to the root of a fixed-base
  robot belong to the world (body -1);
- ``floating_base=True`` adds a free-flyer joint named ``root`` above the root link;
- joints given in ``lock`` are read as fixed joints at their values (`dynlib.files.locks`);
- a planar joint's ``<axis>`` (the plane normal) becomes the z axis of its body
  frame by the smallest turn from z (so with ``<axis xyz="0 0 1">``, x and y are the joint
  frame's, as in Pinocchio); the link's own frame stays addressable as a frame;
- a ``<mimic>`` couples its joint to the leader (`dynlib.files.mimic` checks and resolves them; the
  coupling, one coordinate for the pair, is `dynlib.core.mimic`).

``<visual>`` and ``<collision>`` geometry (boxes, cylinders, spheres, capsules,
meshes by file name) and material colours (named at robot level or in the
visual) are kept as `Shape` records for drawing (``model.visuals``,
``model.collision_shapes``); mesh files are neither opened nor looked for here
(see `dynlib.files.packages`). ``<gazebo>`` and ``<transmission>`` are not read.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..core import joints as J
from .columns import joint_coordinates
from .locks import lock_transforms
from .mimic import resolve as resolve_mimics
from ..errors import URDFError
from ..core.model import Model, ModelArrays, Shape, massless_free_flyers
from ..core.spatial import spatial_inertia, transform_inertia

SUPPORTED = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
GRAVITY = (0.0, 0.0, -9.81)
# the largest magnitude read as physical for a mass (kg), an inertia (kg m^2), an origin (m), a
# damping or a friction: larger values are refused at their line (a mass of 1e308 overflows the
# dynamics at step 0: m g alone is inf). At 1e9 the dynamics stay far from float64's overflow (a
# moment m l^2 of 1e27, its products in the algorithms 1e54), and real robots far below it:
# example-robot-data's largest are 116 kg, 9.2 kg m^2, 1.6 m and a damping of 2e4, a ship's engine
# is 2e6 kg. Joint limits are not bounded: 1e16 is a common way to write "no limit" (iris.urdf).
MAX_MAGNITUDE = 1e9
# dyn's own URDF attributes (other readers ignore them): <robot xmlns:dyn="urn:dyn:urdf"> …
# <dynamics damping="…" friction="…" dyn:armature="…"/>, the rotor inertia of a revolute or
# prismatic joint (kg m^2, kg), which URDF cannot state; `dyn identify` writes it
DYN_NAMESPACE = "urn:dyn:urdf"
ARMATURE = f"{{{DYN_NAMESPACE}}}armature"
_CODE = {"revolute": J.REVOLUTE, "continuous": J.REVOLUTE, "prismatic": J.PRISMATIC,
         "floating": J.FREEFLYER, "planar": J.PLANAR}


def rpy_to_rot(r, p, y):
    """URDF roll-pitch-yaw (fixed axes x, y, z) to a rotation matrix: Rz(y) Ry(p) Rx(r)."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


class _Reader:
    """Reads the elements of one document, raising URDFError with file:line."""

    def __init__(self, file, strict=True):
        self.file = file
        self.strict = strict  # False: non-physical inertias and friction read with a warning (`load`)
        self.warnings = []
        self.materials = {}  # material name -> rgba, robot-level and named in earlier visuals
        self.locked = {}     # locked joints: name -> ((R, p), values) (dynlib.files.locks)
        self.mimics = ()     # ((follower, leader, multiplier, offset), ...) (dynlib.files.mimic)

    def error(self, el, msg):
        return URDFError(msg, file=self.file, line=None if el is None else el.sourceline)

    def floats(self, el, attr, n, default=None):
        text = el.get(attr)
        if text is None:
            if default is None:
                raise self.error(el, f"<{el.tag}> needs the attribute {attr}=\"…\" ({n} number{'s' if n > 1 else ''})")
            return np.array(default, dtype=float)
        parts = text.split()
        if len(parts) != n:
            raise self.error(el, f"<{el.tag} {attr}=\"{text}\">: expected {n} number{'s' if n > 1 else ''}, found {len(parts)}")
        try:
            vals = np.array([float(s) for s in parts])
        except ValueError:
            raise self.error(el, f"<{el.tag} {attr}=\"{text}\">: not a number") from None
        if not np.all(np.isfinite(vals)):
            raise self.error(el, f"<{el.tag} {attr}=\"{text}\">: numbers must be finite")
        return vals

    def number(self, el, attr, default=None):
        return float(self.floats(el, attr, 1, None if default is None else [default])[0])

    def bounded(self, el, attr, vals, what):
        """`vals` (read from el's `attr`) when every magnitude is at most MAX_MAGNITUDE, else URDFError."""
        big = float(np.max(np.abs(vals)))
        if big > MAX_MAGNITUDE:
            raise self.error(el, f"{what}<{el.tag} {attr}=\"{el.get(attr)}\">: {big:.3g} is beyond {MAX_MAGNITUDE:.0e} "
                                 f"(SI units), larger than any physical robot (the dynamics would overflow)")
        return vals

    def bounded_number(self, el, attr, owner, default=None):
        """`number` of el's `attr`, at most MAX_MAGNITUDE in magnitude (`bounded`)."""
        return float(self.bounded(el, attr, self.number(el, attr, default), owner))

    def size(self, el, attr, n, owner):
        """n sizes (m) of el's `attr` as a tuple: each >= 0 and at most MAX_MAGNITUDE, else URDFError."""
        vals = self.bounded(el, attr, self.floats(el, attr, n), owner)
        if np.any(vals < 0):
            raise self.error(el, f"{owner}<{el.tag} {attr}=\"{el.get(attr)}\">: a size must be >= 0")
        return tuple(float(x) for x in vals)

    def origin(self, el):
        """(R, p) of an element's <origin> child (identity when absent)."""
        o = el.find("origin")
        if o is None:
            return np.eye(3), np.zeros(3)
        owner = f"{el.tag} '{el.get('name')}': " if el.get("name") else ""
        xyz = self.bounded(o, "xyz", self.floats(o, "xyz", 3, [0, 0, 0]), owner)
        rpy = self.floats(o, "rpy", 3, [0, 0, 0])
        return rpy_to_rot(*rpy), xyz


class _Link:
    __slots__ = ("name", "line", "mass", "com", "I", "collisions", "visuals", "collision_shapes")


class _Joint:
    __slots__ = ("name", "line", "type", "parent", "child", "R", "p", "axis", "lower", "upper",
                 "effort", "velocity", "damping", "friction", "armature", "mimic")


# an XML declaration's version other than 1.0 (pybullet_data's minitaur and some twenty others say
# version="0.0"): urdfdom (tinyxml2) and PyBullet ignore it, libxml2 refuses the file; read as 1.0
# (same line, so every line number stays right)
_XML_VERSION = re.compile(rb"""^((?:\xef\xbb\xbf)?\s*<\?xml\s+version\s*=\s*["'])(?!1\.[01]["'])([^"']*)(["'])""")


def _parse_document(path: Path, package_path=()):
    """The <robot> element of a .urdf or .xacro file."""
    from lxml import etree

    file = str(path)
    if not path.exists():
        raise URDFError("no such file", file=file)
    if path.is_dir():
        raise URDFError("is a folder, expected a .urdf or .xacro file", file=file)
    if path.is_char_device() or path.is_block_device():  # /dev/zero would fill the memory
        raise URDFError("is a device, expected a .urdf or .xacro file", file=file)
    if path.suffix == ".xacro":
        from .xacro_expand import expand_xacro

        text = expand_xacro(path, package_path)  # a xacro is a program: run in a child process, with limits
    else:
        text = path.read_bytes()
    if not text.strip():
        raise URDFError("the file is empty, expected a URDF <robot> document", file=file)
    if b"\x00" in text[:4096]:
        raise URDFError("the file is binary, expected a URDF <robot> document (XML text)", file=file)
    parser = etree.XMLParser(remove_comments=True, huge_tree=True, resolve_entities=False)
    try:
        root = etree.fromstring(_XML_VERSION.sub(rb"\g<1>1.0\g<3>", text, count=1), parser)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if getattr(exc, "lineno", None) else None
        msg = exc.msg if getattr(exc, "msg", None) else str(exc)
        raise URDFError(f"malformed XML: {msg}", file=file, line=line) from None
    if not isinstance(root.tag, str) or root.tag != "robot":
        raise URDFError(f"the root element is <{root.tag}>, expected <robot>", file=file, line=root.sourceline)
    return root


def _read_link(rd: _Reader, el) -> _Link:
    lk = _Link()
    lk.name = el.get("name")
    lk.line = el.sourceline
    lk.mass, lk.com, lk.I = 0.0, np.zeros(3), np.zeros((3, 3))
    lk.collisions = []
    inertial = el.find("inertial")
    if inertial is not None:
        R, p = rd.origin(inertial)
        m_el = inertial.find("mass")
        if m_el is None:
            raise rd.error(inertial, f"link '{lk.name}': <inertial> needs a <mass value=…>")
        mass = rd.bounded_number(m_el, "value", f"link '{lk.name}': ")
        if mass < 0:
            raise rd.error(m_el, f"link '{lk.name}': mass {mass} is negative, expected a mass >= 0 kg")
        i_el = inertial.find("inertia")
        if i_el is None:
            raise rd.error(inertial, f"link '{lk.name}': <inertial> needs an <inertia ixx=… ixy=… ixz=… iyy=… iyz=… izz=…>")
        v = {k: rd.bounded_number(i_el, k, f"link '{lk.name}': ", 0.0)
             for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]])
        ev = np.linalg.eigvalsh(I)
        scale = max(1.0, float(np.abs(ev).max()))
        if ev[0] < -max(1e-6, 1e-6 * scale):
            what = (f"link '{lk.name}': inertia is not positive semi-definite "
                    f"(principal moments {ev[0]:.6g}, {ev[1]:.6g}, {ev[2]:.6g})")
            _nonphysical(rd, i_el, what, "expected moments >= 0: no body has them, and forward dynamics with them "
                                         "is not defined")
        elif ev[0] < 0:
            rd.warnings.append(f"{rd.file}:{i_el.sourceline}: link '{lk.name}': inertia has a slightly negative "
                               f"principal moment {ev[0]:.3g} kg m^2 (CAD round-off; kept as given)")
        elif ev[2] > ev[0] + ev[1] + 1e-6 * scale:
            rd.warnings.append(f"{rd.file}:{i_el.sourceline}: link '{lk.name}': principal moments "
                               f"{ev[0]:.4g}, {ev[1]:.4g}, {ev[2]:.4g} violate the triangle inequality (kept as given)")
        lk.mass, lk.com, lk.I = mass, p, R @ I @ R.T
    for col in el.findall("collision"):
        geom = col.find("geometry")
        if geom is None or len(geom) == 0:
            continue
        g = geom[0]
        R, p = rd.origin(col)
        if g.tag in ("sphere", "box"):  # contact points (dynlib.sim.contact.points): sizes >= 0, bounded
            size = rd.size(g, "radius" if g.tag == "sphere" else "size", 1 if g.tag == "sphere" else 3,
                           f"link '{lk.name}': ")
            lk.collisions.append((g.tag, size, R, p))
    lk.visuals = [s for s in (_read_shape(rd, lk.name, v, True) for v in el.findall("visual")) if s]
    lk.collision_shapes = [s for s in (_read_shape(rd, lk.name, c, False) for c in el.findall("collision")) if s]
    return lk


def _nonphysical(rd: _Reader, el, what, why):
    """A value no physical robot has (a non-PSD inertia, negative friction): a URDFError at its line
    saying why, or, when `rd` is not strict (a model only evaluated), one warning with file:line."""
    if rd.strict:
        raise rd.error(el, f"{what}: {why}, so simulate, energy-check and sweep refuse it (inverse, contact-id, "
                           "identify and info evaluate it, with a warning)")
    rd.warnings.append(f"{rd.file}:{el.sourceline}: {what}: read as given, to evaluate the model only "
                       "(simulate, energy-check and sweep refuse it)")


def _rgba(rd: _Reader, material):
    """The colour of a <material> element: its <color rgba>, else the named material's; None."""
    color = material.find("color")
    if color is not None:
        try:
            rgba = tuple(float(x) for x in np.clip(rd.floats(color, "rgba", 4), 0.0, 1.0))
        except URDFError as exc:
            rd.warnings.append(f"{exc}: the colour is ignored")
            return None
        if material.get("name"):
            rd.materials.setdefault(material.get("name"), rgba)
        return rgba
    return rd.materials.get(material.get("name") or "")


def _read_materials(rd: _Reader, robot):
    """The robot-level <material name=…><color rgba=…/></material> table."""
    for m in robot.iterchildren("material"):
        _rgba(rd, m)


def _read_shape(rd: _Reader, link, el, visual):
    """A <visual> or <collision> element as a Shape (None without geometry; a warning when malformed)."""
    geom = el.find("geometry")
    if geom is None or len(geom) == 0 or not isinstance(geom[0].tag, str):
        return None
    g = geom[0]
    try:
        R, p = rd.origin(el)
        if g.tag == "box":
            kind, size, filename = "box", tuple(rd.floats(g, "size", 3)), ""
        elif g.tag in ("cylinder", "capsule"):
            kind, size, filename = g.tag, (rd.number(g, "radius"), rd.number(g, "length")), ""
        elif g.tag == "sphere":
            kind, size, filename = "sphere", (rd.number(g, "radius"),), ""
        elif g.tag == "mesh":
            filename = (g.get("filename") or "").strip()
            if not filename:
                raise rd.error(g, "<mesh> needs a filename=\"…\"")
            kind, size = "mesh", tuple(rd.floats(g, "scale", 3, [1, 1, 1]))
        else:
            raise rd.error(g, f"unknown geometry <{g.tag}>, expected box, cylinder, sphere or mesh")
    except URDFError as exc:
        rd.warnings.append(f"{exc} (link '{link}': this <{el.tag}> is not drawn)")
        return None
    material = el.find("material") if visual else None
    rgba = None if material is None else _rgba(rd, material)
    return Shape(link, kind, tuple(float(x) for x in size), filename, R, p, rgba, el.sourceline)


def _read_joint(rd: _Reader, el, links) -> _Joint:
    jt = _Joint()
    jt.name = el.get("name")
    jt.line = el.sourceline
    jt.type = el.get("type")
    if jt.type is None:
        raise rd.error(el, f"joint '{jt.name}' has no type=…, expected one of {', '.join(SUPPORTED)}")
    if jt.type not in SUPPORTED:
        raise rd.error(el, f"joint '{jt.name}': unsupported type '{jt.type}', expected one of {', '.join(SUPPORTED)}")
    for role in ("parent", "child"):
        e = el.find(role)
        if e is None or e.get("link") is None:
            raise rd.error(el if e is None else e, f"joint '{jt.name}' needs a <{role} link=\"…\"/>")
        name = e.get("link")
        if name not in links:
            from ..errors import closest

            raise rd.error(e, f"joint '{jt.name}': {role} link '{name}' is not defined; {closest(name, links)}")
        setattr(jt, role, name)
    if jt.parent == jt.child:
        raise rd.error(el, f"joint '{jt.name}' connects link '{jt.parent}' to itself")
    jt.R, jt.p = rd.origin(el)
    ax_el = el.find("axis")
    jt.axis = np.array([1.0, 0.0, 0.0]) if ax_el is None else rd.floats(ax_el, "xyz", 3, [1, 0, 0])
    # a direction: scaled by its largest component before the norm, which then neither overflows
    # (0 1e308 1e308 is the direction 0 1 1) nor underflows
    s = float(np.max(np.abs(jt.axis)))
    if jt.type in ("revolute", "continuous", "prismatic", "planar") and s < 1e-12:
        raise rd.error(ax_el, f"joint '{jt.name}': <axis xyz=\"{ax_el.get('xyz')}\"> is not a direction, expected a non-zero vector")
    if s > 0:
        u = jt.axis / s
        jt.axis = u / np.linalg.norm(u)
    jt.lower, jt.upper, jt.effort, jt.velocity = -np.inf, np.inf, np.inf, np.inf
    lim = el.find("limit")
    if lim is not None:
        jt.effort = abs(rd.number(lim, "effort", np.inf)) if lim.get("effort") is not None else np.inf
        jt.velocity = abs(rd.number(lim, "velocity", np.inf)) if lim.get("velocity") is not None else np.inf
        if jt.type in ("revolute", "prismatic"):
            jt.lower = rd.number(lim, "lower", 0.0) if lim.get("lower") is not None else -np.inf
            jt.upper = rd.number(lim, "upper", 0.0) if lim.get("upper") is not None else np.inf
            if jt.lower > jt.upper:
                raise rd.error(lim, f"joint '{jt.name}': lower limit {jt.lower} is above upper limit {jt.upper}")
    jt.damping = jt.friction = 0.0
    dyn = el.find("dynamics")
    if dyn is not None:
        jt.damping = rd.bounded_number(dyn, "damping", f"joint '{jt.name}': ", 0.0)
        jt.friction = rd.bounded_number(dyn, "friction", f"joint '{jt.name}': ", 0.0)
        if jt.damping < 0 or jt.friction < 0:
            _nonphysical(rd, dyn, f"joint '{jt.name}': negative damping or friction (damping {jt.damping}, "
                                  f"friction {jt.friction})", "expected both >= 0: negative friction feeds energy "
                                                              "into the motion")
    jt.armature = 0.0 if dyn is None else _armature(rd, dyn, jt.name)
    jt.mimic = None
    mim = el.find("mimic")
    if mim is not None:
        if mim.get("joint") is None:
            raise rd.error(mim, f"joint '{jt.name}': <mimic> needs joint=\"…\"")
        jt.mimic = (mim.get("joint"), rd.number(mim, "multiplier", 1.0), rd.number(mim, "offset", 0.0), mim.sourceline)
    return jt


def _armature(rd: _Reader, dyn, joint) -> float:
    """The rotor inertia of ``<dynamics dyn:armature="…">`` (`ARMATURE`), 0 without it."""
    text = dyn.get(ARMATURE)
    if text is None:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value <= MAX_MAGNITUDE):
        raise rd.error(dyn, f"joint '{joint}': <dynamics dyn:armature=\"{text}\">: expected a rotor inertia "
                            f">= 0 and at most {MAX_MAGNITUDE:.0e} (kg m^2, kg for a prismatic joint)")
    return value


def _plane_basis(n):
    """A rotation whose third column is the unit vector n: the smallest turn taking z onto n, so
    that for the usual <axis xyz="0 0 1"> x and y are the joint frame's (Pinocchio's JointModelPlanar)."""
    c = n[2]
    if c < -1 + 1e-12:  # n = -z: half a turn about x
        return np.diag([1.0, -1.0, -1.0])
    w = np.array([[0.0, 0.0, n[0]], [0.0, 0.0, n[1]], [-n[0], -n[1], 0.0]])  # [z x n]
    return np.eye(3) + w + w @ w / (1.0 + c)


def load(path, floating_base: bool = False, gravity=GRAVITY, package_path=(), lock=None, *, strict=True) -> Model:
    """Read a .urdf or .xacro file into a Model (see the module docstring). `package_path`:
    folders where a xacro's ``$(find pkg)`` looks first (then ROS_PACKAGE_PATH, AMENT_PREFIX_PATH
    and the workspace above the file: `dynlib.files.packages`). `lock`: {joint: value}, joints held
    at a value, read as fixed joints there (Pinocchio's buildReducedModel; `dynlib.files.locks`).
    `strict=False` reads a model to evaluate only (inverse dynamics, regressors; not to integrate):
    inertias that are not positive semi-definite and negative damping or friction, which published
    models have, are kept as given with one warning each (``model.warnings``) instead of a URDFError.
    A negative mass is refused either way."""
    path = Path(os.fspath(path))
    rd = _Reader(str(path), strict)
    robot = _parse_document(path, package_path)
    return _build(rd, robot, floating_base, gravity, source=str(path), lock=lock)


def _build(rd: _Reader, robot, floating_base, gravity, source, lock=None) -> Model:
    links, joints, lines = _read_elements(rd, robot)
    root, children = _tree(rd, links, joints)
    has_floating = [jt.name for jt in joints if jt.type == "floating"]
    rd.mimics, lock = resolve_mimics(rd, joints, lock)
    locked = lock_transforms(rd, robot.get("name") or Path(source).stem, joints, lock, floating_base, _plane_basis)
    if floating_base and has_floating:
        rd.warnings.append(f"the URDF has a floating joint ('{has_floating[0]}'): no second free-flyer root added")
        floating_base = False
    rd.locked = locked
    walk = _walk(links, children, root, floating_base, {name: X for name, (X, _) in locked.items()})
    # the walk numbers a body when its joint is seen, which is breadth-first among siblings;
    # renumber into depth-first pre-order so that every subtree is a contiguous range
    _check_unique_names(rd, [b.joint for b in walk.bodies], [b.type for b in walk.bodies], lines,
                        added=1 if floating_base else 0)
    order = _preorder([b.parent for b in walk.bodies])
    rd.links = links
    if len(walk.visited) != len(links):
        lost = [n for n in links if n not in walk.visited]
        raise URDFError(f"links {', '.join(lost[:6])} are not connected to the root '{root}': the joints form a cycle",
                        file=rd.file, line=links[lost[0]].line)
    model = _assemble(rd, order, walk, joints, gravity, source, robot.get("name") or Path(source).stem, floating_base)
    return dataclasses.replace(model, pinocchio_joints=_pinocchio_joints(children, root, floating_base, locked),
                               locked=tuple((name, v[0] if len(v) == 1 else v) for name, (_, v) in locked.items()))


def _pinocchio_joints(children, root, floating_base, locked) -> tuple:
    """The moving joints in Pinocchio's order: depth first from `root` as this reader's walk, but a
    link's child joints sorted by name, as urdfdom (Pinocchio's URDF parser) keeps them; the free-flyer
    'root' first; `locked` joints are fixed ones (`dynlib.core.pinocchio_order`)."""
    out = ["root"] if floating_base else []
    stack = list(reversed(sorted(children[root], key=lambda jt: jt.name)))
    while stack:
        jt = stack.pop()
        if jt.type != "fixed" and jt.name not in locked:
            out.append(jt.name)
        stack.extend(reversed(sorted(children[jt.child], key=lambda j: j.name)))
    return tuple(out)


def _read_elements(rd: _Reader, robot):
    """(links {name: _Link}, joints [_Joint] in document order, {joint name: line}): every
    <link> and <joint>, each named once."""
    links, joints = {}, []
    _read_materials(rd, robot)
    for el in robot.iterchildren("link"):
        name = el.get("name")
        if not name:
            raise rd.error(el, "<link> without a name")
        if name in links:
            raise rd.error(el, f"link '{name}' is defined twice (first at line {links[name].line})")
        links[name] = _read_link(rd, el)
    if not links:
        raise URDFError("the robot has no <link>", file=rd.file, line=robot.sourceline)
    seen = {}
    for el in robot.iterchildren("joint"):
        name = el.get("name")
        if not name:
            raise rd.error(el, "<joint> without a name")
        if name in seen:
            raise rd.error(el, f"joint '{name}' is defined twice (first at line {seen[name]})")
        seen[name] = el.sourceline
        joints.append(_read_joint(rd, el, links))
    return links, joints, seen


def _tree(rd: _Reader, links, joints):
    """(root link, {link: its child joints in document order}) of a tree of links."""
    parent_of, children = {}, {name: [] for name in links}
    for jt in joints:
        if jt.child in parent_of:
            raise URDFError(f"link '{jt.child}' is the child of two joints, '{parent_of[jt.child].name}' "
                            f"(line {parent_of[jt.child].line}) and '{jt.name}': a URDF must be a tree",
                            file=rd.file, line=jt.line)
        parent_of[jt.child] = jt
        children[jt.parent].append(jt)
    roots = [n for n in links if n not in parent_of]
    if len(roots) > 1:
        raise URDFError(f"several root links ({', '.join(roots[:6])}{' …' if len(roots) > 6 else ''}): "
                        f"expected one tree, connect them with joints", file=rd.file, line=links[roots[1]].line)
    if not roots:
        raise URDFError("every link has a parent joint: the joints form a cycle", file=rd.file, line=joints[0].line)
    return roots[0], children


@dataclasses.dataclass
class _Body:
    """A moving body as the walk meets it: its joint (in its parent body's frame) and its inertia."""

    parent: int             # the parent body in the walk's numbering, -1: the world
    code: int               # the joint code (J.REVOLUTE, …)
    axis: np.ndarray        # (3,) the joint axis, in the joint frame
    R: np.ndarray           # (3, 3) the joint frame in the parent body
    p: np.ndarray           # (3,)
    inertia: np.ndarray     # (6, 6) the spatial inertia of its links (fixed joints merged), in its frame
    joint: str
    type: str               # the URDF joint type (or "floating" for the free-flyer root)
    link: str               # the child link of the joint
    dyn: tuple              # (damping, friction, armature)
    lim: tuple              # (lower, upper, effort, velocity)


@dataclasses.dataclass
class _Walk:
    """What the depth-first walk from the root link collects: the bodies, every link as a frame
    (body, R, p in the body), the links' masses and the mass fixed to the world."""

    bodies: list
    frames: list
    frame_names: list
    link_masses: list
    fixed_mass: float
    visited: set


def _walk(links, children, root, floating_base, locked) -> _Walk:
    """The depth-first walk from `root`, children in document order: a body per moving joint,
    fixed joints merged into their parent body (with a free-flyer body first under floating_base);
    `locked`: {joint: (R, p)}, joints merged as fixed ones, their child frame at (R, p) in the joint frame."""
    walk = _Walk([], [], [], [], 0.0, set())
    top_body = -1
    if floating_base:
        walk.bodies.append(_Body(-1, J.FREEFLYER, np.zeros(3), np.eye(3), np.zeros(3), np.zeros((6, 6)), "root",
                                 "floating", root, (0.0, 0.0, 0.0), (-np.inf, np.inf, np.inf, np.inf)))
        top_body = 0
    stack = [(root, top_body, np.eye(3), np.zeros(3))]
    while stack:
        name, body, R, p = stack.pop()
        walk.visited.add(name)
        lk = links[name]
        walk.frames.append((body, R, p))
        walk.frame_names.append(name)
        walk.link_masses.append((name, lk.mass))
        if lk.mass > 0 or np.any(lk.I):
            I_link = spatial_inertia(lk.mass, lk.com, lk.I)
            if body < 0:
                walk.fixed_mass += lk.mass
            else:
                walk.bodies[body].inertia += transform_inertia(R, p, I_link)
        pushes = []
        for jt in children[name]:
            Rj, pj = R @ jt.R, R @ jt.p + p
            if jt.name in locked:
                Rl, pl = locked[jt.name]
                Rj, pj = Rj @ Rl, pj + Rj @ pl
            if jt.type == "fixed" or jt.name in locked:
                pushes.append((jt.child, body, Rj, pj))
                continue
            nb = len(walk.bodies)
            Rc = np.eye(3)
            if jt.type == "planar":
                B = _plane_basis(jt.axis)
                Rj, Rc = Rj @ B, B.T
            walk.bodies.append(_Body(body, _CODE[jt.type], jt.axis, Rj, pj, np.zeros((6, 6)), jt.name, jt.type,
                                     jt.child, (jt.damping, jt.friction, jt.armature), (jt.lower, jt.upper, jt.effort, jt.velocity)))
            pushes.append((jt.child, nb, Rc, np.zeros(3)))
        # bodies must be numbered in pre-order: renumber lazily by pushing reversed and numbering on pop
        stack.extend(reversed(pushes))
    return walk


def _check_unique_names(rd, names, types, lines, added):
    """Moving joints, and the coordinates of each of q, v and tau, must have distinct names:
    options, scenarios and columns find them by name. A URDF joint 'root' under
    floating_base, a joint 'root.x' (a coordinate of that root), or 'slide.x' next to a
    planar joint 'slide' is an error at the later joint's line. `lines`: the URDF joints' lines;
    `added`: how many joints at the start of `names` dyn added (the free-flyer root)."""
    owner = {}
    for k, (name, kind) in enumerate(zip(names, types)):
        parts = zip(("q", "v", "tau"), joint_coordinates(name, kind))
        for key in [("joint", name)] + [(ns, c) for ns, coords in parts for c in coords]:
            first = owner.setdefault(key, k)
            if first == k:
                continue
            other = names[first]
            by = ("the free-flyer joint 'root' that floating_base (--floating-base) adds" if first < added
                  else f"joint '{other}' (line {lines[other]})")
            what = "has the name of" if key[0] == "joint" else f"its coordinate '{key[1]}' is also a coordinate of"
            raise URDFError(f"joint '{name}': {what} {by}; names must be distinct, rename the joint",
                            file=rd.file, line=lines[name])


def _preorder(parent):
    """A permutation putting bodies in depth-first pre-order, children in creation order."""
    kids = [[] for _ in parent]
    tops = []
    for i, pa in enumerate(parent):
        (tops if pa < 0 else kids[pa]).append(i)
    order, stack = [], list(reversed(tops))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(kids[i]))
    return order


def _assemble(rd, order, walk: _Walk, joints, gravity, source, name, floating_base) -> Model:
    """The Model of the walk's bodies taken in `order` (depth-first pre-order)."""
    new = {old: k for k, old in enumerate(order)}
    new[-1] = -1
    bodies = [walk.bodies[o] for o in order]
    nb = len(order)
    parent = np.array([new[b.parent] for b in bodies], dtype=np.int64)
    jtype = np.array([b.code for b in bodies], dtype=np.int64)
    nqj = np.array([J.NQ[t] for t in jtype], dtype=np.int64)
    nvj = np.array([J.NV[t] for t in jtype], dtype=np.int64)
    idx_q = np.concatenate([[0], np.cumsum(nqj)[:-1]]).astype(np.int64) if nb else np.zeros(0, np.int64)
    idx_v = np.concatenate([[0], np.cumsum(nvj)[:-1]]).astype(np.int64) if nb else np.zeros(0, np.int64)
    jnames = [b.joint for b in bodies]
    coords = _coordinates(bodies, jtype, idx_q, idx_v, nqj, nvj)
    dof_parent, subtree_end = _tree_indices(parent, nvj, idx_v)
    inertia = np.array([b.inertia for b in bodies]).reshape(nb, 6, 6)
    warnings, mimics, massless = _model_warnings(rd, joints, inertia, subtree_end, jnames)
    frames = walk.frames
    arrays = ModelArrays(
        parent=parent, jtype=jtype, jaxis=np.array([b.axis for b in bodies]).reshape(nb, 3),
        idx_q=idx_q, idx_v=idx_v, nvj=nvj, subtree_end=subtree_end,
        Xtree_R=np.array([b.R for b in bodies]).reshape(nb, 3, 3), Xtree_p=np.array([b.p for b in bodies]).reshape(nb, 3),
        S=coords.S, dof_body=coords.dof_body, dof_parent=dof_parent, inertia=np.ascontiguousarray(inertia),
        gravity=np.array(gravity, dtype=float).reshape(3),
        frame_body=np.array([new[f[0]] for f in frames], dtype=np.int64),
        frame_R=np.array([f[1] for f in frames]).reshape(-1, 3, 3), frame_p=np.array([f[2] for f in frames]).reshape(-1, 3),
        damping=coords.damping, friction=coords.friction, armature=coords.armature,
    )
    for link, joint in massless_free_flyers(arrays, [b.link for b in bodies], jnames):
        warnings.append(f"the floating link '{link}' has no mass or inertia and carries one joint, '{joint}': the "
                        "mass matrix is singular, so simulate, energy-check and sweep refuse the robot (inverse "
                        f"dynamics runs); merge '{link}' into its child or give it an <inertial>")
    frame_names = walk.frame_names
    collisions = tuple((lk.name, kind, params, R, p) for lk in (rd.links[n] for n in frame_names)
                       for kind, params, R, p in lk.collisions)
    return Model(
        name=name, arrays=arrays, joint_names=tuple(jnames), joint_types=tuple(b.type for b in bodies),
        body_links=tuple(b.link for b in bodies), frame_names=tuple(frame_names),
        q_names=tuple(coords.q_names), v_names=tuple(coords.v_names), tau_names=tuple(coords.tau_names),
        q_neutral=coords.q_neutral, lower=coords.lower, upper=coords.upper, effort=coords.effort,
        velocity_limit=coords.vlim, mimic=mimics,
        link_masses=tuple(walk.link_masses), fixed_mass=walk.fixed_mass, warnings=tuple(warnings), source=source,
        floating_base=floating_base, massless_joints=tuple(massless), collisions=collisions,
        visuals=tuple(v for n in frame_names for v in rd.links[n].visuals),
        collision_shapes=tuple(c for n in frame_names for c in rd.links[n].collision_shapes),
    )


class _Coordinates(NamedTuple):
    """Per coordinate of the model: motion subspaces, names, limits and joint friction."""

    S: np.ndarray           # (nv, 6) each DoF's motion subspace column, in its body's frame
    dof_body: np.ndarray    # (nv,)
    q_names: list
    v_names: list
    tau_names: list
    q_neutral: np.ndarray   # (nq,)
    lower: np.ndarray       # (nq,)
    upper: np.ndarray       # (nq,)
    effort: np.ndarray      # (nv,)
    vlim: np.ndarray        # (nv,)
    damping: np.ndarray     # (nv,)
    friction: np.ndarray    # (nv,)
    armature: np.ndarray    # (nv,) <dynamics dyn:armature> (1-DoF joints)


def _coordinates(bodies, jtype, idx_q, idx_v, nqj, nvj) -> _Coordinates:
    """The `_Coordinates` of `bodies` (in model order, with their joint codes, indices and sizes)."""
    nq, nv = int(nqj.sum()), int(nvj.sum())
    S = np.zeros((nv, 6))
    dof_body = np.zeros(nv, dtype=np.int64)
    q_names, v_names, tau_names = [], [], []
    q_neutral = np.zeros(nq)
    lower, upper = np.full(nq, -np.inf), np.full(nq, np.inf)
    effort, vlim = np.full(nv, np.inf), np.full(nv, np.inf)
    damping, friction, armature = np.zeros(nv), np.zeros(nv), np.zeros(nv)
    for k, b in enumerate(bodies):
        iq, iv, t, ax = idx_q[k], idx_v[k], jtype[k], b.axis
        dof_body[iv:iv + nvj[k]] = k
        if t == J.REVOLUTE:
            S[iv, 3:] = ax
        elif t == J.PRISMATIC:
            S[iv, :3] = ax
        elif t == J.FREEFLYER:
            S[iv:iv + 6] = np.eye(6)
            q_neutral[iq + 6] = 1.0
        else:
            S[iv, 0] = S[iv + 1, 1] = S[iv + 2, 5] = 1.0
        jq, jv, jtau = joint_coordinates(b.joint, J.NAMES[t])
        q_names += jq
        v_names += jv
        tau_names += jtau
        if t in (J.REVOLUTE, J.PRISMATIC):
            lo, up, ef, ve = b.lim
            lower[iq], upper[iq], effort[iv], vlim[iv] = lo, up, ef, ve
            damping[iv], friction[iv], armature[iv] = b.dyn
    return _Coordinates(S, dof_body, q_names, v_names, tau_names, q_neutral, lower, upper, effort, vlim,
                        damping, friction, armature)


def _tree_indices(parent, nvj, idx_v):
    """(dof_parent (nv,): each DoF's parent DoF, -1 at the root; subtree_end (nb,): body i's subtree
    is the bodies i … subtree_end[i] − 1)."""
    nb, nv = len(parent), int(nvj.sum())
    dof_parent = np.arange(-1, nv - 1, dtype=np.int64)   # within a joint: the previous DoF
    for k in range(nb):
        p = parent[k]
        while p >= 0 and nvj[p] == 0:
            p = parent[p]
        if nvj[k]:
            dof_parent[idx_v[k]] = idx_v[p] + nvj[p] - 1 if p >= 0 else -1
    subtree_end = np.arange(1, nb + 1, dtype=np.int64)
    for i in range(nb - 1, -1, -1):
        if parent[i] >= 0:
            subtree_end[parent[i]] = max(subtree_end[parent[i]], subtree_end[i])
    return dof_parent, subtree_end


def _model_warnings(rd, joints, inertia, subtree_end, jnames):
    """(warnings, mimics, massless joints): the reader's warnings, the mimic couplings
    (`dynlib.files.mimic`) and the joints whose moving subtree has no mass."""
    warnings = list(rd.warnings)
    mimics = rd.mimics
    massless = []
    for i in range(len(jnames)):
        if not np.any(inertia[i:subtree_end[i]]):
            massless.append(jnames[i])
    if massless:
        warnings.append("massless moving subtrees (forward dynamics is undefined): joints " + ", ".join(massless))
    return warnings, mimics, massless
