"""Where dyn's compiled kernels are kept: the cache folder, its naming, its pruning, whether it can be written.

Every dynlib kernel is made by `dynlib._numba.decorators.jit`: ``numba.njit`` with a cache of
dyn's own (`dynlib._numba.entries`).

Where the cache lives. Numba writes dyn's kernels into one folder per dyn
source tree and numba version (`cache_folder`)::

    <root>/<dyn version>-<hash of the kernels' sources, 12 digits>-numba<version>-py<XY>/

with a subfolder per dynlib subpackage (``algorithms/``, ``sim/contact/``, ...).
<root> is ``$DYN_CACHE_DIR`` when it is set, else ``$NUMBA_CACHE_DIR/dyn``
when that is set, else ``$XDG_CACHE_HOME/dyn`` or ``~/.cache/dyn``. The hash
(`dynlib._numba.sources`) covers every source that holds or feeds compiled code,
so stale code never loads, while an edit elsewhere keeps every cached kernel.
Nothing is deleted when dynlib is imported, and two versions of dyn side by side
keep their own kernels. When a new folder is made (that is, after a compile),
folders of dyn's naming beyond the three most recently used are removed, and only
folders holding nothing but dyn's cache files. Other numba users in the same
process keep numba's own cache: dyn reads ``NUMBA_CACHE_DIR``, it never sets it.

Read-only installs. The cache is the user's, not the package's: an install in
root-owned site-packages compiles once per user and loads afterwards. When no
cache can be written (no writable home or cache folder, a full disk), the
kernels are compiled in memory for the run, with one `CacheWarning`. A cache
folder made read-only after it was filled still loads.
"""
import contextlib
import functools
import os
import re
import sys
import warnings
from pathlib import Path

from . import sources

_KEEP = 3  # older cache folders of dyn's naming kept besides the current one
_TAG = "CACHEDIR.TAG"  # https://bford.info/cachedir/: backup tools skip the folder
_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
             "# Compiled kernels of dyn (dynlib): a cache, recreated when needed.\n")
_FOLDER_NAME = re.compile(r"[0-9A-Za-z.+_!]+-[0-9a-f]{12}-numba[0-9A-Za-z.+_]+-py\d+")
_OWN_FILE = re.compile(r".+\.(nbi|nbc)(\.tmp\.[0-9a-f]+)?|CACHEDIR\.TAG|save\.lock")

_warned = set()
unwritable = []  # the first save that failed (then no more saves are tried)


class CacheWarning(UserWarning):
    """The kernel cache could not be used as it should; the results are not affected."""


def warn_once(kind, message):
    """One `CacheWarning` of each kind per process."""
    if kind not in _warned:
        _warned.add(kind)
        warnings.warn(message, CacheWarning, stacklevel=3)


def cache_root():
    """The folder under which dyn keeps its caches (see the module docstring), or None
    when there is none (no DYN_CACHE_DIR and no home directory)."""
    for var, sub in (("DYN_CACHE_DIR", ""), ("NUMBA_CACHE_DIR", "dyn")):
        value = os.environ.get(var)
        if value:
            return Path(os.path.abspath(os.path.expanduser(value))) / sub
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "dyn"
    try:
        return Path.home() / ".cache" / "dyn"
    except RuntimeError:
        return None


def cache_folder():
    """The folder of this dyn source tree and numba version (numba writes dyn's kernels
    there), or None when there is no cache root."""
    return _cache_folder(tuple(os.environ.get(v) for v in _ROOT_ENVIRONMENT), sources.sources_hash())


_ROOT_ENVIRONMENT = ("DYN_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "HOME")  # what cache_root reads


@functools.lru_cache(maxsize=16)  # asked for by every kernel as it is defined: once per environment and sources
def _cache_folder(environment, sources_hash):
    root = cache_root()
    if root is None:
        return None
    import numba

    from .. import __version__

    py = f"{sys.version_info[0]}{sys.version_info[1]}"
    return root / f"{__version__}-{sources_hash[:12]}-numba{numba.__version__}-py{py}"


def cache_writable() -> bool:
    """Whether compiled kernels can be saved (False after a save failed in this process)."""
    folder = cache_folder()
    if folder is None or unwritable:
        return False
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    effective = os.access in os.supports_effective_ids
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK, effective_ids=effective)


@functools.lru_cache(maxsize=None)  # once per module, not per kernel: a path's resolve is ~1 ms of a start-up
def package_dir(py_file):
    """The folder of `py_file` relative to dynlib, or None when it is not in dynlib."""
    try:
        return Path(py_file).resolve().parent.relative_to(sources._HERE)
    except (ValueError, OSError):
        return None


def new_folder(folder):
    """A cache folder was just made: tag it as a cache, and prune old folders of dyn's naming."""
    with contextlib.suppress(OSError):
        with open(folder / _TAG, "x") as f:
            f.write(_TAG_TEXT)
    with contextlib.suppress(OSError):
        prune_cache(folder.parent, keep=_KEEP, current=folder)


def prune_cache(root, keep=_KEEP, current=None):
    """Remove cache folders of dyn's naming under `root` beyond the `keep` most recently
    used (besides `current`); a folder holding anything but dyn's cache files, or another
    user's, is kept. Returns the folders removed."""
    old = []
    for p in Path(root).iterdir():
        if p != current and _FOLDER_NAME.fullmatch(p.name) and p.is_dir() and not p.is_symlink():
            st = p.stat()
            if st.st_uid == os.geteuid():
                old.append((st.st_mtime, p))
    removed = []
    for _, p in sorted(old, reverse=True)[keep:]:
        if _only_cache_files(p):
            import shutil

            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def _only_cache_files(folder):
    if not (folder / _TAG).is_file():
        return False
    for top, dirs, names in os.walk(folder, followlinks=False):
        if any(os.path.islink(os.path.join(top, d)) for d in dirs):
            return False
        if not all(_OWN_FILE.fullmatch(n) for n in names):
            return False
    return True


_touched = []


def touch(folder):
    """Mark the cache folder as used, once per process (pruning keeps the most recently used)."""
    if not _touched:
        _touched.append(folder)
        with contextlib.suppress(OSError):
            os.utime(folder)

