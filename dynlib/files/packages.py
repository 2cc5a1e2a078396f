"""ROS packages without ROS: where ``package://pkg/...`` and ``$(find pkg)`` point.

A package is a folder holding a ``package.xml`` whose ``<name>`` is the package's
name (catkin and ament alike); failing that, a folder carrying the name itself
(a robot description downloaded without its ``package.xml``). `find_package`
looks, in this order:

1. the folders given by the user (``--package-path DIR``, repeatable): DIR is a
   package, or a folder holding packages at any depth (a workspace's ``src/``);
2. ``ROS_PACKAGE_PATH`` (ROS 1; entries as in 1), then the ``share/`` folders of
   ``AMENT_PREFIX_PATH`` (ROS 2: ``PREFIX/share/PKG``, by the ament index's markers
   ``PREFIX/share/ament_index/resource_index/packages/PKG`` and by package.xml);
3. the folders above the file being read (`near`): each of them and the packages
   directly inside it, so the package that contains the file and its sibling
   packages are found; a ``src/`` folder on the way (a catkin or colcon
   workspace) is searched at any depth, so ``src/repo/pkg`` is found too.

Every name-matching ``package.xml`` (or ament index entry) anywhere in these
places is preferred to a folder that merely has the name. Folders are scanned as ROS does: hidden
folders and folders holding ``CATKIN_IGNORE``, ``COLCON_IGNORE`` or
``AMENT_IGNORE`` are skipped, and the search does not go inside a package.
No ROS installation is needed (no rospkg, no ament_index_python).

`resolve_uri` turns a file reference of a URDF (a mesh's ``filename``) into a
path: ``package://pkg/rel``, ``file:///abs`` (or ``file://rel``), an absolute
path, or a path relative to the referring file's folder. A package that cannot
be found is a `PackageNotFound` naming it and every place looked in; whether the
file exists is the caller's business (a missing mesh is only a warning).
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from urllib.parse import unquote

from ..errors import InputError

__all__ = ["PackageNotFound", "Packages", "find_package", "resolve_uri"]

IGNORE_MARKERS = ("CATKIN_IGNORE", "COLCON_IGNORE", "AMENT_IGNORE")
MAX_DEPTH = 6  # how deep a folder of packages is searched (src/org/repo/group/pkg is 4)
_NAME = re.compile(rb"<name>\s*([^<\s]+)\s*</name>")


class PackageNotFound(InputError):
    """A ROS package that none of the places looked in holds."""


@functools.lru_cache(maxsize=4096)
def _manifest_name(folder: str, mtime: float) -> str | None:
    """The <name> of folder/package.xml (None when unreadable); cached per file version."""
    try:
        with open(os.path.join(folder, "package.xml"), "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    m = _NAME.search(head)
    return m.group(1).decode("utf-8", "replace") if m else None


def package_name(folder) -> str | None:
    """The name in `folder`/package.xml, or None when the folder holds none."""
    path = os.path.join(os.fspath(folder), "package.xml")
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    return _manifest_name(os.fspath(folder), mtime)


def _subfolders(folder: str):
    try:
        with os.scandir(folder) as it:
            return sorted(e.path for e in it if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return []


def _entries(folder: str):
    """Names of the entries of `folder` (files too: the ament index's markers are empty files)."""
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _ignored(folder: str) -> bool:
    return any(os.path.exists(os.path.join(folder, m)) for m in IGNORE_MARKERS)


def _packages_under(root: str, depth: int = MAX_DEPTH):
    """(folder, name) of every package at or below `root`, not looking inside packages."""
    if _ignored(root):
        return
    name = package_name(root)
    if name is not None:
        yield root, name
        return
    if depth == 0:
        return
    for sub in _subfolders(root):
        yield from _packages_under(sub, depth - 1)


class Packages:
    """The package search of one run: the user's folders, the environment, and the file read.

    `package_path`: folders from the user (``--package-path``); `near`: the file whose
    references are resolved (its folder and the folders above it are searched last);
    `environ`: the environment (default ``os.environ``). `find` caches its answers.
    """

    def __init__(self, package_path=(), near=None, environ=None):
        env = os.environ if environ is None else environ
        self.user = [os.path.abspath(os.path.expanduser(os.fspath(p))) for p in (package_path or ())]
        self.ros = [os.path.abspath(p) for p in env.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
        self.ament = [os.path.abspath(p) for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
        self.near = None if near is None else os.path.abspath(os.fspath(near))
        self._found = {}

    # -- where to look -------------------------------------------------------
    def _ancestors(self):
        if self.near is None:
            return []
        folder = self.near if os.path.isdir(self.near) else os.path.dirname(self.near)
        out = []
        while True:
            out.append(folder)
            up = os.path.dirname(folder)
            if up == folder:
                return out
            folder = up

    def _candidates(self):
        """(folder, name from package.xml or None) in search order, lazily."""
        for root in self.user + self.ros:
            yield from _packages_under(root)
        for prefix in self.ament:
            share = os.path.join(prefix, "share")
            for name in _entries(os.path.join(share, "ament_index", "resource_index", "packages")):
                yield os.path.join(share, name), name  # registered in the ament index
            yield from _packages_under(share, depth=1)
        for folder in self._ancestors():
            name = package_name(folder)
            if name is not None:
                yield folder, name
            if os.path.basename(folder) == "src":  # a catkin / colcon workspace
                yield from _packages_under(folder)
                continue
            for sub in _subfolders(folder):
                if not _ignored(sub):
                    sub_name = package_name(sub)
                    if sub_name is not None:
                        yield sub, sub_name

    def _named_folders(self, pkg):
        """Folders called `pkg`, in search order (whatever their package.xml says: example-robot-data's
        names itself example_robot_descriptions, and its URDFs say package://example-robot-data)."""
        roots = self.user + self.ros + [os.path.join(p, "share") for p in self.ament] + self._ancestors()
        for root in roots:
            for folder in (root, os.path.join(root, pkg)):
                if os.path.basename(folder) == pkg and os.path.isdir(folder) and not _ignored(folder):
                    yield folder

    def places(self) -> str:
        """Where `find` looks, as a message fragment."""
        def listing(paths):
            return ", ".join(paths) if paths else "unset"
        parts = [f"--package-path ({listing(self.user)})", f"ROS_PACKAGE_PATH ({listing(self.ros)})",
                 f"AMENT_PREFIX_PATH ({listing(self.ament)})"]
        if self.near is not None:
            parts.append(f"the folders above {self.near}")
        return ", ".join(parts)

    # -- finding -------------------------------------------------------------
    def find(self, pkg: str) -> Path:
        """The folder of package `pkg`; PackageNotFound naming every place looked in."""
        if pkg in self._found:
            return self._found[pkg]
        found = next((folder for folder, name in self._candidates() if name == pkg), None)
        if found is None:
            found = next(self._named_folders(pkg), None)
        if found is None:
            raise PackageNotFound(f"ROS package '{pkg}' not found; looked in {self.places()}. "
                                  "Give its folder (or a folder holding it) with --package-path DIR, "
                                  "or set ROS_PACKAGE_PATH")
        self._found[pkg] = Path(found)
        return self._found[pkg]

    def resolve(self, uri: str, base=None) -> Path:
        """The path a file reference points to (see the module docstring); `base` is the
        referring file (default: `near`). The file itself may not exist."""
        uri = str(uri).strip()
        base = self.near if base is None else os.path.abspath(os.fspath(base))
        folder = Path(base).parent if base is not None else Path.cwd()
        if uri.startswith("package://"):
            pkg, _, rel = uri[len("package://"):].partition("/")
            if not pkg:
                raise InputError(f"{uri!r}: expected package://PACKAGE/PATH")
            return self.find(unquote(pkg)) / unquote(rel)
        if uri.startswith("file://"):
            path = Path(unquote(uri[len("file://"):]))
        elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]+://", uri):
            raise InputError(f"{uri!r}: only package://, file:// and file paths are read (nothing is downloaded)")
        else:
            path = Path(uri)
        path = path.expanduser()
        return path if path.is_absolute() else folder / path


def find_package(name: str, *, package_path=(), near=None, environ=None) -> Path:
    """The folder of ROS package `name` (see the module docstring for where it is looked for)."""
    return Packages(package_path, near, environ).find(name)


def resolve_uri(uri: str, *, base=None, package_path=(), environ=None) -> Path:
    """The path of a URDF file reference (package://, file://, absolute or relative to `base`)."""
    return Packages(package_path, base, environ).resolve(uri)
