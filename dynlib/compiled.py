"""Where numba keeps the compiled kernels, and whether they are there yet.

Kernels are compiled with ``cache=True``: numba writes them next to the sources
(``__pycache__``) or, where that folder is read-only (site-packages owned by
root), into ``NUMBA_CACHE_DIR`` or its per-user cache. The first run compiles;
`cache_is_warm` lets the command line say so before it starts.
"""
import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def cache_folders():
    yield _HERE / "algorithms" / "__pycache__"
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        yield Path(env)
    yield Path.home() / ".cache" / "numba"


def cache_is_warm() -> bool:
    """True when compiled ABA and RNEA kernels are found in a numba cache folder."""
    for folder in cache_folders():
        if folder.is_dir():
            names = [p.name for p in folder.rglob("*.nbi")] if folder.name != "__pycache__" else [p.name for p in folder.glob("*.nbi")]
            if any(n.startswith("aba.") for n in names) and any(n.startswith("rnea.") for n in names):
                return True
    return False
