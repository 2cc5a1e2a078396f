"""Mesh files for the page: .stl (binary or ASCII), .obj and .dae, read once each.

Each file becomes a `Blob` of the page (stored once however often it is drawn)
and a geometry or object that meshcat's viewer loads with three.js's own
loaders (``_meshfile_geometry`` / ``_meshfile_object``):

- a mesh drawn in the URDF's material colour is a ``_meshfile_geometry`` (the
  viewer merges its parts into one geometry) with a Phong material;
- a .dae with its own materials, or an .obj whose ``mtllib`` is found, drawn
  without a URDF colour, is a ``_meshfile_object`` keeping those materials (as
  RViz shows them), with the textures they name embedded as data: URLs;
- only files of the robot's own are embedded besides the mesh: an ``mtllib`` that
  is an ``.mtl`` file and textures that are images, each inside the mesh's package
  (the nearest folder above the mesh with a ``package.xml``; without one, the
  mesh's folder), symlinks resolved. Anything else (``mtllib /etc/passwd``,
  ``map_Kd ../../../../home/me/.ssh/id.png``) is one warning and is left out:
  a page is meant to be mailed, and a robot package must not smuggle the
  reader's files into it;
- a mesh file itself is read only when it is inside the robot's package (the nearest folder
  above the URDF with a ``package.xml``; without one, the URDF's folder), inside the package
  its ``package://`` names, or inside any ROS package (a folder above it holds a
  ``package.xml``: a generated URDF names another package's meshes by ``file://``); a mesh
  elsewhere (``file:///etc/passwd.stl``, ``../../../home/me/scan.obj``) is one warning and
  left out, for the same reason;
- a mesh, material library or texture is read only from a regular file: a device
  (``/dev/zero``, which filled the memory) or a FIFO (which hung the page's build) is one
  warning and left out;
- a .dae's ``<unit meter="…">`` is applied (the viewer's loader leaves it out);
  its ``<up_axis>`` is ignored, as RViz and Pinocchio's viewers do.
"""
from __future__ import annotations

import base64
import errno
import os
import stat
import re
import struct
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .page import Blob

FORMATS = {".stl": "stl", ".obj": "obj", ".dae": "dae"}
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".bmp": "image/bmp", ".webp": "image/webp"}
_UNIT = re.compile(rb"<unit\b[^>]*\bmeter\s*=\s*[\"']([^\"']+)[\"']")
_INIT_FROM = re.compile(r"<init_from>\s*([^<]+?)\s*</init_from>")
_MTLLIB = re.compile(r"^\s*mtllib\s+(.+?)\s*$", re.MULTILINE)
_MTL_MAP = re.compile(r"^\s*(?:map_\w+|bump|disp|decal|refl)\s+(.+?)\s*$", re.MULTILINE | re.IGNORECASE)


_OBJ_VERTEX = re.compile(r"^v\s+(\S+)\s+(\S+)\s+(\S+)", re.MULTILINE)
_STL_VERTEX = re.compile(rb"vertex\s+(\S+)\s+(\S+)\s+(\S+)")
_DAE_POSITIONS = re.compile(r"<float_array[^>]*\bid=\"[^\"]*pos[^\"]*\"[^>]*>([^<]*)</float_array>", re.IGNORECASE)


def _box(rows, unit=1.0):
    """(2, 3) min and max of rows of three numbers (None when there are none or they are not numbers)."""
    try:
        v = np.asarray(rows, dtype=float).reshape(-1, 3)
    except ValueError:
        return None
    v = v[np.isfinite(v).all(axis=1)]
    return np.array([v.min(axis=0), v.max(axis=0)]) * unit if len(v) else None


def _stl_box(data: bytes):
    if len(data) >= 84:
        n = struct.unpack_from("<I", data, 80)[0]
        if len(data) == 84 + 50 * n and n > 0:  # binary: 50 bytes per triangle, 3 vertices after the normal
            tri = np.frombuffer(data, dtype=np.uint8, count=50 * n, offset=84).reshape(n, 50)
            return _box(tri[:, 12:48].copy().view("<f4").reshape(-1, 3))
    return _box(_STL_VERTEX.findall(data))


def _dae_positions(text):
    return [x for block in _DAE_POSITIONS.findall(text) for x in block.split()]


class MeshFile(NamedTuple):
    path: Path
    format: str           # 'stl' | 'obj' | 'dae'
    blob: Blob            # the file's bytes (stl) or text (obj, dae)
    unit: float           # metres per file unit (a .dae's <unit meter>; 1 otherwise)
    own_materials: bool   # a .dae with <library_materials>, an .obj whose mtllib was read
    mtl: str | None       # the .obj's material library
    resources: dict       # texture name as written -> data: URL
    box: np.ndarray | None  # (2, 3) the vertices' bounding box in the file's frame, metres (None: unknown)


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
    """Reads mesh files once each; `notes` collects what was wrong with the textures."""

    def __init__(self, robot=None):
        self._cache = {}
        self._roots = {}
        self.notes = []
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
        """How many mesh files were read."""
        return sum(not isinstance(m, MeshError) for m in self._cache.values())

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
        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise MeshError(f"{path}: mesh format '{path.suffix}' is not drawn (only .stl, .obj and .dae)")
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
        if fmt == "stl":
            return MeshFile(path, fmt, Blob(data, key=str(path)), 1.0, False, None, {}, _stl_box(data))
        text = data.decode("utf-8", errors="replace")
        if fmt == "dae":
            m = _UNIT.search(data[:1 << 16])
            try:
                unit = float(m.group(1)) if m else 1.0
            except ValueError:
                unit = 1.0
            if not unit > 0:
                unit = 1.0
            own = "<library_materials" in text and "<material " in text
            images = {name for name in _INIT_FROM.findall(text) if Path(name).suffix.lower() in IMAGE_TYPES}
            return MeshFile(path, fmt, Blob(text, key=str(path)), unit, own, None,
                            self._textures(path, images, self._root(path)), _box(_dae_positions(text), unit))
        mtl, resources, root = None, {}, self._root(path)
        for names in _MTLLIB.findall(text):
            lib = path.parent / names
            if lib.suffix.lower() != ".mtl" or not self._inside(lib, root):
                self.notes.append(f"{path}: material library '{names}' is not an .mtl file inside the robot's "
                                  f"package ({root}): left out (drawn in one colour)")
                continue
            if lib.exists():  # a FIFO or device too: read_regular refuses it
                try:
                    mtl = read_regular(lib).decode("utf-8", errors="replace")
                except OSError as exc:
                    self.notes.append(f"{path}: material library '{names}': {exc.strerror} (drawn in one colour)")
                    continue
                # a texture statement's file is its last word (options such as -s 1 1 1 come first)
                resources = self._textures(lib, {line.split()[-1] for line in _MTL_MAP.findall(mtl)}, root)
                break
            self.notes.append(f"{path}: material library '{names}' not found next to it (drawn in one colour)")
        return MeshFile(path, fmt, Blob(text, key=str(path)), 1.0, mtl is not None, mtl, resources,
                        _box(_OBJ_VERTEX.findall(text)))

    def _textures(self, referrer: Path, names, root: str) -> dict:
        """{name: data: URL} of the images `names` inside `root`; a plain stand-in for the others."""
        out = {}
        for name in sorted(names):
            file = Path(name[len("file://"):] if name.startswith("file://") else name)
            file = file if file.is_absolute() else referrer.parent / file
            mime = IMAGE_TYPES.get(file.suffix.lower())
            if not mime or not self._inside(file, root):
                out[name] = MISSING_TEXTURE
                self.notes.append(f"{referrer}: texture '{name}' is not an image inside the robot's package "
                                  f"({root}): left out (drawn plain)")
            elif file.exists():  # a FIFO or device too: read_regular refuses it
                try:
                    out[name] = f"data:{mime};base64," + base64.b64encode(read_regular(file)).decode()
                except OSError as exc:
                    out[name] = MISSING_TEXTURE
                    self.notes.append(f"{referrer}: texture '{name}': {exc.strerror} (drawn plain)")
            else:
                out[name] = MISSING_TEXTURE
                self.notes.append(f"{referrer}: texture '{name}' not found (drawn plain)")
        return out
