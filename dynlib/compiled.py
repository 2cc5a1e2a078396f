"""Where numba keeps the compiled kernels, whether they are there yet, and when they are stale.

Kernels are compiled with ``cache=True``: numba writes them next to the sources
(``__pycache__``) or, where that folder is read-only (site-packages owned by
root), into ``NUMBA_CACHE_DIR`` or its per-user cache. The first run compiles;
`cache_is_warm` lets the command line say so before it starts.

Numba keys a cached function on its own source file only: a kernel whose
callee in another file changed (an upgrade of dyn, a developer's edit) would
load the old machine code. `invalidate_stale_caches` (run when dynlib is
imported) hashes every dynlib source file and, when the hash differs from the
one stored beside the cache, deletes dynlib's cached kernels so that they are
compiled again from the current sources.

Every dynlib kernel is made by `jit`, which is ``numba.njit(cache=True, ...)``
with a faster way of loading a cached kernel (see `jit`).
"""
import hashlib
import os
import types
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_STAMP = "dyn-sources.stamp"


def cache_folders():
    """Folders that may hold dynlib's compiled kernels, most likely first."""
    yield _HERE / "algorithms" / "__pycache__"
    yield _HERE / "__pycache__"
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        yield Path(env)
    yield Path.home() / ".cache" / "numba"


def cache_is_warm() -> bool:
    """True when compiled ABA and RNEA kernels are found in a numba cache folder."""
    for folder in cache_folders():
        if folder.is_dir():
            names = [p.name for p in (folder.glob("*.nbi") if folder.name == "__pycache__" else folder.rglob("*.nbi"))]
            if any(n.startswith("aba.") for n in names) and any(n.startswith("rnea.") for n in names):
                return True
    return False


def sources_hash() -> str:
    """A hash of every dynlib source file (names and contents)."""
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(_HERE.rglob("*.py")):
        h.update(str(path.relative_to(_HERE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cached_files():
    for folder in (_HERE, *[Path(p) for p in [os.environ.get("NUMBA_CACHE_DIR")] if p],
                   Path.home() / ".cache" / "numba"):
        if not folder.is_dir():
            continue
        for pattern in ("*.nbi", "*.nbc"):
            for f in folder.rglob(pattern):
                # numba's per-user cache mirrors the source path: keep to dynlib's own entries
                if folder == _HERE or "dynlib" in f.parts:
                    yield f


def invalidate_stale_caches() -> bool:
    """Delete dynlib's cached kernels when the sources changed since they were compiled.

    Returns True when something was deleted. Never raises: a read-only install
    simply keeps numba's own behaviour.
    """
    try:
        stamp_dir = _HERE / "__pycache__"
        stamp = stamp_dir / _STAMP
        current = sources_hash()
        if stamp.is_file() and stamp.read_text().strip() == current:
            return False
        removed = False
        for f in _cached_files():
            try:
                f.unlink()
                removed = True
            except OSError:
                pass
        stamp_dir.mkdir(exist_ok=True)
        tmp = stamp_dir / f".{_STAMP}.{os.getpid()}"
        tmp.write_text(current + "\n")
        os.replace(tmp, stamp)
        return removed
    except OSError:
        return False


def jit(fn=None, *, nrt=True, **options):
    """``numba.njit(cache=True, **options)``, as ``@jit`` or ``@jit(...)``, whose
    cached machine code loads without numba's compiler start-up.

    Numba refreshes its whole target context before it loads a cached function:
    it imports every lowering registry (numba.np.arraymath among them, whose BLAS
    check imports scipy.linalg) and rebuilds the typing tables, about 0.3 s of
    every short `dyn` run, although loading object code needs none of it. Here
    the load skips that refresh; numba still does it, as usual, before anything
    is compiled (a cache miss), so compiling is unchanged. nrt=False compiles
    without numba's runtime (``_nrt=False``: the kernel must not allocate) and
    then also skips initialising the runtime on load.

    What the skipped refresh would also have done, and no dyn kernel needs:
    registering the hash-secret symbols (numba.cpython.hashing, 30 ms), which a
    kernel hashing strings, dicts or sets would need. Keep kernels free of those,
    or import that module before loading them.
    """
    from numba import njit

    if not nrt:
        options["_nrt"] = False

    def decorate(f):
        dispatcher = njit(cache=True, **options)(f)
        cache = getattr(dispatcher, "_cache", None)
        # numba internals, checked: an upgrade that renames them keeps numba's own loading
        if hasattr(cache, "_load_overload") and hasattr(cache, "_guard_against_spurious_io_errors"):
            cache.load_overload = types.MethodType(_load_cached if nrt else _load_cached_without_nrt, cache)
        return dispatcher

    return decorate if fn is None else decorate(fn)


def _load_cached_without_nrt(cache, sig, target_context):
    """numba's ``Cache.load_overload`` without ``target_context.refresh()``."""
    with cache._guard_against_spurious_io_errors():
        return cache._load_overload(sig, target_context)


def _load_cached(cache, sig, target_context):
    """As `_load_cached_without_nrt`, for a kernel that may use numba's runtime."""
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)
    return _load_cached_without_nrt(cache, sig, target_context)
