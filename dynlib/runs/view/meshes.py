"""Mesh files for the page: .stl (binary or ASCII), .obj (with or without its .mtl), .dae,
.gltf and .glb, read once each, made ready in Python (`dynlib.runs.view.mesh_geometry`: trimesh
reads them, normals and colours are made here, decimated to ``max_triangles`` on request) and
embedded as one BufferGeometry each, which every meshcat viewer loads (its own loaders failed on
real robots' files, and only on the page):

- the file's colours (its materials, its textures sampled at the vertices) are kept when the URDF
  gives no ``<material>`` colour (as RViz shows them); else, or when the file has none, the URDF's
  colour or a neutral one;
- only files of the robot's own are read besides the mesh: an ``mtllib`` that is an ``.mtl`` file,
  textures that are images and a glTF's buffers, each inside the mesh's package (the nearest folder
  above the mesh with a ``package.xml``; without one, the mesh's folder), symlinks resolved. Anything
  else (``mtllib /etc/passwd``, ``map_Kd ../../../../home/me/.ssh/id.png``) is one warning and is
  left out: a page is meant to be mailed, and a robot package must not smuggle the reader's files
  into it;
- a mesh file itself is read only when it is inside the robot's package (the nearest folder
  above the URDF with a ``package.xml``; without one, the URDF's folder), inside the package
  its ``package://`` names, or inside any ROS package (a folder above it holds a
  ``package.xml``: a generated URDF names another package's meshes by ``file://``); a mesh
  elsewhere (``file:///etc/passwd.stl``, ``../../../home/me/scan.obj``) is one warning and
  left out, for the same reason;
- a mesh, material library, texture or buffer is read only from a regular file: a device
  (``/dev/zero``, which filled the memory) or a FIFO (which hung the page's build) is one
  warning and left out; a .dae that declares XML entities (``<!ENTITY``: a way to pull other
  files or expand without end) is one warning and left out;
- a .dae's ``<unit meter="…">`` is applied; its ``<up_axis>`` is ignored, as RViz and
  Pinocchio's viewers do.

A mesh that cannot be drawn (missing, unreadable, no triangle) is a `MeshError` naming the file:
the page draws a placeholder box instead (`dynlib.runs.view.scene`).
"""
from __future__ import annotations

import base64
import errno
import os
import re
import stat
import struct
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .page import FLOAT32, INT8, UINT8, UINT16, UINT32, Blob

FORMATS = {".stl": "stl", ".obj": "obj", ".dae": "dae", ".gltf": "gltf", ".glb": "glb"}
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".bmp": "image/bmp", ".webp": "image/webp"}
BUFFER_TYPES = {".bin"}  # a glTF's buffers
_UNIT = re.compile(rb"<unit\b[^>]*\bmeter\s*=\s*[\"']([^\"']+)[\"']")


class MeshFile(NamedTuple):
    path: Path
    format: str           # 'stl' | 'obj' | 'dae' | 'gltf' | 'glb'
    unit: float           # metres per file unit (a .dae's <unit meter>; 1 otherwise)
    geometry: object      # mesh_geometry.Geometry: the triangles in file units (decimated on request)
    box: np.ndarray       # (2, 3) the vertices' bounding box in the file's frame, metres

    @property
    def own_materials(self) -> bool:
        """Whether the file brings colours of its own (materials, textures, vertex colours)."""
        return self.geometry.colors is not None


class MeshError(Exception):
    """A mesh file that cannot be drawn (the message names it); the page goes on without it."""


def _png(r: int, g: int, b: int) -> bytes:
    """A 1x1 PNG of one colour (stands in for a texture file that is missing)."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes([0, r, g, b]))) + chunk(b"IEND", b""))


MISSING_TEXTURE = "data:image/png;base64," + base64.b64encode(_png(160, 160, 160)).decode()


class NotRegular(OSError):
    """A device, FIFO or socket where a file is read (its strerror says which)."""


def read_regular(path) -> bytes:
    """The bytes of the regular file at `path`; OSError for anything else (a device such as /dev/zero,
    a FIFO, a socket), found on the open file without blocking or reading."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotRegular(errno.EINVAL, f"is not a regular file (a {_KINDS.get(stat.S_IFMT(mode), 'special file')}): "
                                        "left out")
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = None
            return f.read()
    finally:
        if fd is not None:
            os.close(fd)


_KINDS = {stat.S_IFCHR: "character device", stat.S_IFBLK: "block device", stat.S_IFIFO: "FIFO",
          stat.S_IFSOCK: "socket"}


class MeshFiles:
    """Reads mesh files once each; `notes` collects what was wrong with their materials and textures.
    `max_triangles`: a mesh above it is decimated to about that many triangles (None: never)."""

    def __init__(self, robot=None, max_triangles=None):
        self._cache = {}
        self._roots = {}
        self._buffers = {}
        self.notes = []
        self.max_triangles = max_triangles
        # the folder whose meshes the robot may name: its URDF's package, else the URDF's folder
        self.robot_root = self._root(Path(os.path.abspath(robot if robot else "robot.urdf")))

    def _root(self, mesh: Path) -> str:
        """The folder whose files a mesh may name: its package's (the nearest folder above it holding a
        package.xml), else its own; resolved."""
        folder = os.path.realpath(mesh.parent)
        if folder not in self._roots:
            up = folder
            while not os.path.isfile(os.path.join(up, "package.xml")) and os.path.dirname(up) != up:
                up = os.path.dirname(up)
            self._roots[folder] = up if os.path.isfile(os.path.join(up, "package.xml")) else folder
        return self._roots[folder]

    @staticmethod
    def _inside(file: Path, root: str) -> bool:
        real = os.path.realpath(file)
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    @property
    def count(self) -> int:
        """How many mesh files are in the page (one read only to size a placeholder box is not)."""
        return len(self._buffers)

    def load(self, path, package=None) -> MeshFile:
        """The mesh file at `path`; `package`: the folder of the package its ``package://`` names."""
        path = Path(path)
        key = str(path.resolve()) if path.exists() else str(path)
        if key not in self._cache:
            try:
                self._allowed(path, package)
                self._cache[key] = self._read(path)
            except MeshError as exc:
                self._cache[key] = exc
        found = self._cache[key]
        if isinstance(found, MeshError):
            raise found
        return found

    def _allowed(self, path: Path, package) -> None:
        """MeshError unless `path` is inside the robot's package (or folder), the named package, or any
        ROS package (see the module docstring); symlinks resolved."""
        if not os.path.lexists(path):
            return  # _read says it is missing
        roots = [self.robot_root] + ([os.path.realpath(package)] if package is not None else [])
        if any(self._inside(path, root) for root in roots):
            return
        if os.path.isfile(os.path.join(self._root(Path(os.path.realpath(path))), "package.xml")):
            return
        raise MeshError(f"{path}: is not a mesh file inside the robot's package ({self.robot_root}) or another "
                        "ROS package: left out")

    def _read(self, path: Path) -> MeshFile:
        from . import mesh_geometry

        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise MeshError(f"{path}: mesh format '{path.suffix}' is not drawn (only .stl, .obj, .dae, .gltf "
                            "and .glb)")
        try:
            data = read_regular(path)
        except FileNotFoundError:
            raise MeshError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise MeshError(f"{path}: is a folder, expected a mesh file") from None
        except NotRegular as exc:
            raise MeshError(f"{path}: {exc.strerror}") from None
        except OSError as exc:
            raise MeshError(f"{path}: cannot read: {exc.strerror}") from None
        if not data.strip():
            raise MeshError(f"{path}: the file is empty")
        unit = 1.0
        if fmt == "dae":
            if b"<!ENTITY" in data:
                raise MeshError(f"{path}: declares XML entities (<!ENTITY): left out")
            m = _UNIT.search(data[:1 << 16])
            try:
                unit = float(m.group(1)) if m else 1.0
            except ValueError:
                unit = 1.0
            unit = unit if unit > 0 and np.isfinite(unit) else 1.0
        try:
            geometry = mesh_geometry.read(data, fmt, _resolver(self, path, fmt))
        except ValueError as exc:
            raise MeshError(f"{path}: {exc}") from None
        geometry = mesh_geometry.decimate(geometry, self.max_triangles)
        V = geometry.vertices[np.unique(geometry.faces)]
        return MeshFile(path, fmt, unit, geometry, np.array([V.min(axis=0), V.max(axis=0)]) * unit)

    def resource(self, referrer: Path, fmt: str, name: str) -> bytes:
        """The bytes of the file `name` that the mesh `referrer` names (an .obj's material library or
        texture, a .dae's texture, a glTF's buffer or texture), if the module docstring's rules allow it;
        else a note, and OSError (the mesh is drawn without it)."""
        name = str(name).strip()
        file = Path(name[len("file://"):] if name.startswith("file://") else name)
        file = file if file.is_absolute() else referrer.parent / file
        root = self._root(referrer)
        suffix = file.suffix.lower()
        library = fmt == "obj" and suffix not in IMAGE_TYPES
        allowed = suffix == ".mtl" if library else suffix in IMAGE_TYPES or (fmt == "gltf" and suffix in BUFFER_TYPES)
        what, plain = (f"material library '{name}'", "drawn in one colour") if library else (
            (f"texture '{name}'", "drawn plain") if suffix in IMAGE_TYPES or fmt != "gltf" else
            (f"buffer '{name}'", "not drawn"))
        if not allowed or not self._inside(file, root):
            kind = "an .mtl file" if library else ("an image" if suffix in IMAGE_TYPES or fmt != "gltf" else
                                                    "a buffer (.bin) or an image")
            self._note(f"{referrer}: {what} is not {kind} inside the robot's package ({root}): left out ({plain})")
            raise FileNotFoundError(name)
        if not file.exists():
            where = " next to it" if library else ""
            self._note(f"{referrer}: {what} not found{where} ({plain})")
            raise FileNotFoundError(name)
        try:
            return read_regular(file)
        except OSError as exc:
            self._note(f"{referrer}: {what}: {exc.strerror} ({plain})")
            raise

    def _note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def buffers(self, mf: MeshFile) -> dict:
        """The three.js BufferGeometry JSON of a mesh file (its arrays stored once in the page): float32
        positions, normals as normalized int8 (a quarter of the bytes; the shaders normalize them),
        uint8 colours, uint16 indices (uint32 from 65 536 vertices)."""
        from .mesh_geometry import lower

        key = str(mf.path)
        if key not in self._buffers:
            low = lower(mf.geometry)
            small = len(low.positions) < 65536
            attributes = {
                "position": _attribute(low.positions.astype("<f4"), "Float32Array", FLOAT32, False, key + "#position"),
                "normal": _attribute(np.round(low.normals * 127).astype(np.int8), "Int8Array", INT8, True,
                                     key + "#normal")}
            if low.colors is not None:
                attributes["color"] = _attribute(low.colors, "Uint8Array", UINT8, True, key + "#color")
            index = low.index.astype("<u2" if small else "<u4")
            self._buffers[key] = {"type": "BufferGeometry", "data": {"attributes": attributes, "index": {
                "type": "Uint16Array" if small else "Uint32Array",
                "array": Blob(index.tobytes(), key=key + "#index", code=UINT16 if small else UINT32)}}}
        return self._buffers[key]


def _attribute(array, kind, code, normalized, key) -> dict:
    return {"itemSize": 3, "type": kind, "normalized": normalized,
            "array": Blob(np.ascontiguousarray(array).tobytes(), key=key, code=code)}


def _resolver(files: MeshFiles, referrer: Path, fmt: str):
    """A trimesh resolver that reads only what `MeshFiles.resource` allows."""
    from trimesh.resolvers import Resolver

    class PackageResolver(Resolver):
        def __init__(self):
            pass

        def get(self, key):
            return files.resource(referrer, fmt, key)

        def write(self, name, data):
            raise OSError("a page's mesh reader writes nothing")

        def namespaced(self, namespace):
            return self

        def keys(self):
            return []

    return PackageResolver()
