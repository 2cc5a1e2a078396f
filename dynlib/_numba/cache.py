"""What dyn's kernel cache holds: the folders to look in (`cache_folders`), whether the first run's
kernels are there (`cache_is_warm`), whether one kernel is (`is_cached`, for the simulation loop).

The folder itself (where, its naming, pruning, writing) is `dynlib._numba.folder`; which cache is in
use (dyn's, or numba's own when numba's internals changed) `dynlib._numba.probes`.
"""
import contextlib
import os
from pathlib import Path

from . import folder, probes, sources


def cache_folders():
    """Folders that may hold dyn's compiled kernels (numba's ``*.nbi`` index files):
    the cache folder, then its subfolders."""
    if probes.checked().cache == "numba-default":  # numba's own places, next to each source
        for top, dirs, _ in os.walk(sources._HERE):
            if "__pycache__" in dirs:
                yield Path(top) / "__pycache__"
            dirs[:] = [d for d in dirs if d != "__pycache__"]
        return
    current = folder.cache_folder()
    if current is None:
        return
    yield current
    with contextlib.suppress(OSError):
        yield from sorted(p for p in current.iterdir() if p.is_dir())


def cache_is_warm() -> bool:
    """True when compiled ABA and RNEA kernels are in the cache (the first run compiles)."""
    names = set()
    for place in cache_folders():
        with contextlib.suppress(OSError):
            names.update(p.name for p in place.glob("*.nbi"))
    return any(n.startswith("aba.") for n in names) and any(n.startswith("rnea.") for n in names)


def is_cached(name, dispatcher=None) -> bool:
    """Whether dyn's cache holds a compilation of the kernel `name` (numba's name of its index files, the
    module's file stem and the function's qualified name: ``simulate._run``) for this numba version and
    the current sources (those of `dispatcher`, the kernel, when numba says which they are). A cache index
    this function cannot read counts as holding it when it is there."""
    return any(index_holds(index, dispatcher) for place in cache_folders() if place.is_dir()
               for index in place.glob(f"{name}-*.nbi"))


def index_holds(index, dispatcher) -> bool:
    """Whether numba's cache index file `index` lists a compilation of `dispatcher` of this numba version (and
    of the current source when numba says which stamp that is)."""
    import pickle

    import numba

    try:
        with open(index, "rb") as f:
            version = pickle.load(f)
            stamp, overloads = pickle.loads(f.read())
        current = getattr(getattr(getattr(dispatcher, "_cache", None), "_cache_file", None), "_source_stamp", stamp)
        return version == numba.__version__ and stamp == current and len(overloads) > 0
    except Exception:  # numba's private format changed: the file is there
        return True
