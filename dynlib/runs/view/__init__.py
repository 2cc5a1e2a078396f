"""`dyn view`: one self-contained web page that plays a motion on the robot's own meshes.

    page = dynlib.runs.view.build_view(model, dynlib.runs.view.read_playback(model, "traj.csv"))
    dynlib.runs.view.write_view("motion.html", model, "traj.csv")

The page is meshcat's viewer (three.js) with the scene and the motion inside it
(`dynlib.runs.view.page`): it opens from ``file://`` without any network, plays in
real time, pauses, scrubs (meshcat's Animations controls: play, pause, time),
and ``#t=SECONDS`` at the end of its address opens it paused at that time
(seconds from the first sample, as the time control counts).

What it draws:

- the robot: every URDF ``<visual>`` (boxes, cylinders, spheres, capsules,
  meshes .stl/.obj/.dae/.gltf/.glb with their scale and material colour, read in
  Python by `dynlib.runs.view.meshes` and embedded as triangles; mesh files found
  through `dynlib.files.packages`: package://, file:// or relative to the URDF). A
  mesh that cannot be found or read is a warning naming the link and the file, and
  a placeholder box stands in (`dynlib.runs.view.scene.placeholder`).
  With no visual drawn at all, the ``<collision>`` geometry stands in, and
  without that, the link frames (a ball and axes at each body, sticks to the
  child joints): never a blank page;
- the motion: forward kinematics (`dynlib.frame_placement`) at keyframes at
  the display rate (`dynlib.runs.view.motion`), so the page grows with the
  duration, not with the number of samples;
- contact forces: the ``contact.<name>.fx fy fz`` columns (world axes, at the
  point: what ``dyn simulate --columns …,contact`` and ``dyn contact-id``
  write) as arrows at their points, hidden while zero. The point of
  ``contact.<name>``: with a scenario (``ROBOT`` given as the scenario's
  .yaml), its ``contacts.points`` (frame and offset, or from-collision); else
  the origin of the frame (link) called ``<name>`` (where contact-id puts its
  wrenches), or else the from-collision point of that name (``<link>_cornerK``,
  a box corner). Force moments
  (``tx ty tz``) are not drawn. Arrow length: the robot's weight is half the
  robot's size (``force_scale`` in m/N sets it);
- the ground plane (n·x = height) of the scenario's contacts, or z = 0 when
  the file has contact or penetration columns but no scenario says where; in
  other cases a grid at the robot's lowest point;
- traces: the path of each frame named in `traces`, over the whole motion;
- what the numbers mean (`show`, `compare`): inertia boxes, centres of mass, collision
  geometry, and a second model's inertia boxes (`dynlib.runs.view.overlays`).

The camera looks at the centre of the robot's box at the first keyframe (its shapes, or its
link frames without any) from the front right, above, at the distance where the box's ball
(with the bodies' paths on a short journey) fills the view's height; without a scenario or
contact columns the grid lies at the robot's lowest point there. The controls start closed.
"""
from __future__ import annotations

import itertools
import math
import sys
from typing import NamedTuple

import numpy as np

from ...algorithms.configuration import interpolate
from ...errors import InputError, TrajectoryError, shown
from ...files.columns import PENETRATION, contact_columns, contact_names, coordinate_columns, part
from . import overlays as O
from . import scene as S
from .meshes import MeshFiles
from .motion import body_placements, keyframe_times
from .page import html_page

__all__ = ["Playback", "ViewPage", "build_view", "read_playback", "write_view"]

DEFAULT_FPS = 30.0
DEFAULT_MAX_TRIANGLES = None
MAX_TRACE_POINTS = 20000


class Playback(NamedTuple):
    """What the page plays: time (N,), configurations q (N, nq), and the contact forces
    ``{name: (N, 3)}`` (world axes) found in the file; `source` names the file."""

    time: np.ndarray
    q: np.ndarray
    forces: dict
    has_penetration: bool
    source: str


class ViewPage(NamedTuple):
    html: bytes
    warnings: list      # what was left out, and why (one line each)
    frames: int         # keyframes in the animation
    fps: float
    duration: float     # seconds from the first to the last sample
    meshes: int         # mesh files embedded


# ------------------------------------------------------------------- reading

def read_playback(model, source, *, columns=None, topic=None, time_unit=None) -> Playback:
    """What the page plays of a recording (`dynlib.files.recordings.read_recording`: a ROS bag, a rostopic or
    PlotJuggler CSV, dyn's CSV or Parquet, '-') or a `dynlib.files.trajectory.Trajectory`.

    q comes from the ``q.<name>`` columns, or through `columns` (the column map of
    ``dyn inverse --columns``: ``{"q": "pos_{joint}", "q.elbow": "elbow"}``), or from a
    recording's named joints; time is in seconds from the first sample.
    """
    from ...files.column_map import check_known_coordinates, check_quaternions
    from ...files.recordings import read_recording
    from ...files.trajectory import check_increasing_time, require_columns

    traj = read_recording(model, source, columns=columns, topic=topic, time_unit=time_unit).trajectory
    check_known_coordinates(model, traj, ["q"])
    qcols = coordinate_columns("q", model.q_names)
    require_columns(traj, qcols)
    Q = traj.finite_columns(qcols)
    check_quaternions(model, traj, qcols, Q)
    check_increasing_time(traj)
    forces = {}
    names = list(traj.names) + list(traj.unusable)
    for point in contact_names(names):
        cols = contact_columns([point])[:3]  # (fx, fy, fz)
        if all(traj.has(c) for c in cols):
            try:
                F = traj.columns(cols)
            except TrajectoryError:  # text or empty cells: shown as no force where unusable
                F = np.column_stack([_numbers(traj, c) for c in cols])
            forces[point] = np.where(np.isfinite(F), F, 0.0)
    has_pen = any(part(n) == PENETRATION for n in names)
    return Playback(traj.time.copy(), Q, forces, has_pen, traj.path or "<trajectory>")


def _numbers(traj, name):
    try:
        return traj.column(name)
    except TrajectoryError:
        return np.full(len(traj), np.nan)


# ------------------------------------------------------------------- building

def _contact_positions(model, names, contacts, Tb, frame_poses):
    """{name: (K, 3)} world positions of the contact points with forces, and notes for the rest."""
    from ...sim.contact.points import contact_points

    points, normal = {}, np.array([0.0, 0.0, 1.0])
    if contacts is not None:
        normal = np.asarray(contacts.get("normal", normal), float)
        normal = normal / np.linalg.norm(normal)
        pts = contact_points(model, contacts["points"], contacts.get("q0"))
        points = {n: (int(b), p, r) for n, b, p, r in zip(pts.names, pts.body, pts.p, pts.radius)}
    elif model.collisions:
        try:
            pts = contact_points(model, "from-collision")
            points = {n: (int(b), p, r) for n, b, p, r in zip(pts.names, pts.body, pts.p, pts.radius)}
        except InputError:
            points = {}
    out, missing = {}, []
    for name in names:
        if name in points and (contacts is not None or name not in model.frame_names):
            b, p, r = points[name]
            out[name] = Tb[b, :, :3, :3] @ p + Tb[b, :, :3, 3] - r * normal
        elif name in model.frame_names:
            out[name] = frame_poses(name)[:, :3, 3]
        else:
            missing.append(name)
    return out, missing


def build_view(model, playback: Playback, *, fps: float = DEFAULT_FPS, traces=(), contacts=None,
               force_scale=None, package_path=(), title=None, show=(), compare=None,
               max_triangles=DEFAULT_MAX_TRIANGLES) -> ViewPage:
    """The page (see the module docstring) for `playback` on `model`.

    `contacts`: a scenario's contact setting, ``{"points": [...] or "from-collision",
    "height": h, "normal": n}`` (None: none given). `traces`: frame names.
    `package_path`: folders for package:// (see `dynlib.files.packages`). `show`: overlays
    ("inertia", "com", "collision"; `dynlib.runs.view.overlays`); `compare`: a model of the
    same robot whose inertia boxes are drawn too. `max_triangles`: a mesh above it is
    decimated to about that many triangles (None: never).
    """
    if not (math.isfinite(fps) and fps > 0):
        raise InputError(f"display rate must be a positive number of frames per second, got {fps!r}")
    traces = list(dict.fromkeys(traces))
    for frame in traces:
        model.frame_id(frame)
    t, Q = playback.time, playback.q
    times = keyframe_times(t, fps)
    Qk = interpolate(model, t, Q, times)
    anim_t = times - t[0]
    K = len(times)
    Tb = body_placements(model, Qk) if model.nb else np.zeros((0, K, 4, 4))

    show = O.parse_show(show)
    if compare is not None:  # two models' boxes: the robot's own too
        O.check_same_robot(model, compare)
        show = tuple(dict.fromkeys(("inertia",) + show))
    objects, drawn_from, meshes, warnings = _robot(model, Tb, package_path, max_triangles)
    (lo, hi), reach, spread = _extent(model, Tb, objects)
    size, centre = max(float(np.linalg.norm(hi - lo)), 0.2), (lo + hi) / 2
    commands, clips = [], []
    for b, obj in objects.items():
        path = "/dyn/robot/" + S.node_name("world" if b < 0 else model.body_links[b])
        commands.append(S.set_object(path, obj.lower()))
        if b >= 0:
            commands.append(S.set_transform(path, Tb[b, 0]))
            if K > 1:
                clips.append(S.clip(path, S.pose_tracks(anim_t, Tb[b])))
    info_forces = None
    if playback.forces:
        arrows, arrow_clips, info_forces, missing = _arrows(model, playback, contacts, times, Qk, Tb, size,
                                                            force_scale)
        commands += arrows
        clips += arrow_clips
        warnings += [f"contact.{name}: no contact point or frame named '{name}' (give the scenario as ROBOT): "
                     "its force is not drawn" for name in missing]
    extra = _overlays(model, show, Tb, Qk, anim_t, size, compare, drawn_from, package_path, meshes)
    commands, clips, warnings = commands + extra[0], clips + extra[1], warnings + extra[3]
    commands += _floor(contacts, playback, centre, size, spread, lo[2])
    colours = S.palette()
    for frame in traces:
        commands.append(S.set_object("/dyn/traces/" + S.node_name(frame), S.line_object(_trace(model, Q, frame),
                                                                                        next(colours))))
    commands += S.camera_commands(centre, reach)
    if clips:
        commands.append({"type": "set_animation", "animations": clips, "options": {"play": True, "repetitions": 1}})

    duration = float(t[-1] - t[0])
    title = shown(title or f"{model.name}: {playback.source}")  # a file name that is not UTF-8: \xNN
    info = [f"{title} — {duration:.6g} s, {len(t)} samples, {K} frames"
            + (f" at {fps:g} fps" if K < len(t) else "")
            + ("" if drawn_from == "visual" else f"; drawn from its {drawn_from}"),
            "Open Controls (top right) › Animations: play, pause, time · address #t=SECONDS opens paused at that "
            "time"] + extra[2]
    if info_forces:
        info.append(info_forces)
    if traces:
        info.append("traces: " + ", ".join(traces))
    page = html_page(commands, title=title, info_lines=info, camera_target=centre)
    return ViewPage(page, warnings, K, float(fps), duration, meshes.count)


def _robot(model, Tb, package_path, max_triangles=None):
    """The robot's objects ({body or -1: ObjectBuilder}) from its visuals (a placeholder box for a mesh
    that cannot be drawn), else its collision geometry, else its link frames; what they were drawn from;
    the mesh files; the warnings."""
    from ...files.packages import Packages

    packages = Packages(package_path, near=model.source or None)
    meshes, notes, warnings = MeshFiles(model.source or None, max_triangles), [], []
    objects, drawn = S.robot_objects(model, model.visuals, meshes, packages, S.DEFAULT_RGBA, notes)
    drawn_from = "visual"
    if drawn == 0:
        collision, drawn = S.robot_objects(model, model.collision_shapes, meshes, packages, S.COLLISION_RGBA, notes)
        if drawn or not objects:
            objects, drawn_from = collision, "collision"
    if drawn == 0 and not objects:
        first = _frame_positions(model, Tb)
        objects = S.frame_objects(model, max(float(np.linalg.norm(np.ptp(first, axis=0))), 0.2))
        drawn_from = "frames"
    warnings += _summarise(notes, drawn_from == "visual") + meshes.notes
    if drawn_from == "collision":
        warnings.append("no <visual> could be drawn: the robot is drawn from its <collision> geometry")
    elif drawn_from == "frames":
        warnings.append("no <visual> or <collision> geometry could be drawn: the robot is drawn as its link frames")
    return objects, drawn_from, meshes, warnings


def _frame_positions(model, Tb) -> np.ndarray:
    """(nframes, 3) every link frame's origin at the first keyframe."""
    a = model.arrays
    return np.array([(Tb[b, 0] if b >= 0 else np.eye(4)) @ np.append(a.frame_p[f], 1.0)
                     for f, b in enumerate(a.frame_body)])[:, :3]


def _extent(model, Tb, objects):
    """((lo, hi) the box of the robot's shapes at the first keyframe (of its link frames when it has
    none), the radius about its centre that the camera frames, the spread of the bodies' paths): the
    radius is the box's, or reaches the bodies' paths too when they stay near the start."""
    K = Tb.shape[1] if model.nb else 1
    pts = [((Tb[b, 0] if b >= 0 else np.eye(4)) @ np.c_[c, np.ones(8)].T).T[:, :3]
           for b, o in objects.items() for c in o.bounds]
    pts = np.vstack(pts) if pts else _frame_positions(model, Tb)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    size, centre = max(float(np.linalg.norm(hi - lo)), 0.2), (lo + hi) / 2
    reach = size / 2
    paths = Tb[:, :, :3, 3].reshape(-1, 3) if model.nb else pts
    spread = np.ptp(paths - (Tb[:, :1, :3, 3].repeat(K, axis=1).reshape(-1, 3) if model.nb else 0), axis=0)
    if np.linalg.norm(spread) < 2 * size:  # a short journey: frame all of it (a long one: the start)
        reach = max(reach, float(np.linalg.norm(paths - centre, axis=1).max()))
    return (lo, hi), reach, spread


def _overlays(model, show, Tb, Qk, anim_t, size, compare, drawn_from, package_path, meshes):
    """`dynlib.runs.view.overlays.overlays`, with the collision geometry when it is asked for and the
    robot is not already drawn from it."""
    collision, notes = None, []
    if "collision" in show and drawn_from != "collision":
        from ...files.packages import Packages

        collision, _ = S.robot_objects(model, model.collision_shapes, meshes,
                                       Packages(package_path, near=model.source or None), O.COLLISION_RGBA, notes)
    commands, clips, info, warnings = O.overlays(model, show, Tb, Qk, anim_t, size, compare=compare,
                                                 collision=collision)
    return commands, clips, info, warnings + [f"--show collision: {w}" for w in _summarise(notes)]


def _arrows(model, playback, contacts, times, Qk, Tb, size, force_scale):
    """Commands and animation clips of the contact-force arrows, the caption line, and the
    names that no point or frame matches."""
    import dynlib

    K, t = len(times), playback.time
    anim_t = times - t[0]
    positions, missing = _contact_positions(
        model, list(playback.forces), contacts, Tb,
        lambda name: dynlib.frame_placement(model, Qk, name).reshape(K, 4, 4))
    if not positions:
        return [], [], None, missing
    fmax = max(float(np.abs(F).max()) for F in playback.forces.values())
    weight = model.total_mass * float(np.linalg.norm(model.gravity))
    scale = force_scale or (0.5 * size / weight if weight > 0 else (0.5 * size / fmax if fmax > 0 else 1.0))
    shaft, cone = S.arrow_objects(0.012 * size, 0.06 * size)
    commands, clips = [], []
    for name, X in positions.items():
        F = np.array([np.interp(times, t, playback.forces[name][:, c]) for c in range(3)]).T
        path = "/dyn/contacts/" + S.node_name(name)
        length = np.linalg.norm(F, axis=1) * scale
        shown = np.linalg.norm(F, axis=1) > 1e-9 * max(fmax, 1e-300)
        T = np.repeat(np.eye(4)[None], K, axis=0)
        T[:, :3, :3], T[:, :3, 3] = S.rotation_to(F), X
        commands += [S.set_object(path + "/shaft", shaft), S.set_object(path + "/head", cone),
                     S.set_transform(path, T[0]),
                     S.set_transform(path + "/shaft", np.diag([1.0, max(length[0], 1e-6), 1.0, 1.0])),
                     S.set_transform(path + "/head", S.pose(p=(0, length[0], 0))),
                     S.set_property(path, "visible", bool(shown[0]))]
        if K > 1:
            lengths = np.column_stack([np.ones(K), np.maximum(length, 1e-6), np.ones(K)])
            tips = np.column_stack([np.zeros(K), length, np.zeros(K)])
            clips += [S.clip(path, S.pose_tracks(anim_t, T) + [S.track(".visible", "boolean", anim_t, shown)]),
                      S.clip(path + "/shaft", [S.track(".scale", "vector3", anim_t, lengths)]),
                      S.clip(path + "/head", [S.track(".position", "vector3", anim_t, tips)])]
    return commands, clips, f"contact forces: arrows of {1 / scale:.4g} N per metre ({len(positions)} points)", missing


def _floor(contacts, playback, centre, size, spread, lowest=0.0):
    """The ground of contact runs (a slab at n·x = height), else a grid at the robot's lowest point
    (z = `lowest`); meshcat's grid hidden."""
    ground = None
    if contacts is not None:
        ground = (float(contacts.get("height", 0.0)), np.asarray(contacts.get("normal", (0, 0, 1)), float))
    elif playback.forces or playback.has_penetration:
        ground = (0.0, np.array([0.0, 0.0, 1.0]))
    spacing = 10.0 ** np.floor(np.log10(max(size, 1e-3)))
    extent = max(20 * spacing, 4 * float(np.linalg.norm(spread)) + 4 * size)
    for step in itertools.cycle((2.0, 2.5, 2.0)):  # 1, 2, 5, 10, ... times: at most 40 lines
        if extent / spacing <= 40:
            break
        spacing *= step
    height, normal = ground if ground is not None else (float(lowest), (0.0, 0.0, 1.0))
    obj, T = S.ground_object(height, normal, centre, extent, spacing, slab=ground is not None)
    return [S.set_property("/Grid", "visible", False), S.set_object("/dyn/ground", obj),
            S.set_transform("/dyn/ground", T)]


def _trace(model, Q, frame) -> np.ndarray:
    """(n, 3) the frame's origin over the samples (at most MAX_TRACE_POINTS, the last one kept)."""
    import dynlib

    step = max(1, int(np.ceil(len(Q) / MAX_TRACE_POINTS)))
    pts = dynlib.frame_placement(model, Q[::step], frame).reshape(-1, 4, 4)[:, :3, 3]
    if (len(Q) - 1) % step:
        pts = np.vstack([pts, dynlib.frame_placement(model, Q[-1], frame)[:3, 3]])
    return pts


def _summarise(notes, placeholders=False) -> list:
    """One warning per missing package (listing its meshes), one per mesh that cannot be drawn (a
    placeholder box stands in when `placeholders`)."""
    out, packages = [], {}
    instead = "drawn as a placeholder box" if placeholders else "not drawn"
    for kind, shape, message in notes:
        if kind == "package":
            packages.setdefault(message, []).append(shape.filename)
        else:
            out.append(f"link '{shape.link}': {shape.filename or shape.kind}: {message}; "
                       f"{instead if kind == 'mesh' else 'not drawn'}")
    for message, files in packages.items():
        listed = ", ".join(files[:3]) + (f", … ({len(files) - 3} more)" if len(files) > 3 else "")
        n = len(files)
        out.append(f"{message}: {n} mesh{'es' if n > 1 else ''} "
                   f"{('drawn as placeholder boxes' if n > 1 else instead) if placeholders else 'not drawn'} ({listed})")
    return list(dict.fromkeys(out))


def write_view(path, model, source, *, columns=None, topic=None, time_unit=None, **options) -> ViewPage:
    """Read `source` (see `read_playback`: `columns`, `topic`, `time_unit`), build the page and
    write it to `path` ('-' or None: standard output), atomically. Returns the ViewPage."""
    page = build_view(model, read_playback(model, source, columns=columns, topic=topic, time_unit=time_unit),
                      **options)
    _write(path, page.html)
    return page


def _write(path, data: bytes):
    from ...files.trajectory import atomic_output

    if path in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)

