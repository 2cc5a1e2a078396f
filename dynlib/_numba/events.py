"""Compile events: what the command line hears while numba compiles dyn's kernels.

- `on_first_compile`: a callback just before the first kernel of the process that is not in
  dyn's cache is compiled (the command line's "compiling" notice);
- `watch_compiles`: callbacks at the start and end of every compile (the command line's
  progress line), through numba's event API (``numba.core.event``); when that API is gone,
  nothing is watched and the compile goes on unseen;
- `expected_compiles` / `record_compiles`: how many kernels a task compiled the last time
  (the progress line's total), kept in the cache root.
"""
import contextlib
import os

from . import entries, folder, probes


def on_first_compile(callback) -> bool:
    """Call `callback()` once, just before the first dynlib kernel of this process is
    compiled (a kernel not in the cache: the command line's compile notice). Returns
    False when dyn's cache is not in use (numba's own cache cannot tell)."""
    if probes.checked().cache != "dyn":
        return False
    entries.before_compile.append(callback)
    return True


def watch_compiles(on_start, on_end):
    """Call `on_start()` when numba starts compiling a function and `on_end()` when it is done, until
    the function returned is called. Nothing is watched (and the function returned does nothing) when
    numba's event API is not there as dyn knows it."""
    try:
        from numba.core import event

        class Listener(event.Listener):
            def on_start(self, ev):
                on_start()

            def on_end(self, ev):
                on_end()

        listener = Listener()
        event.register("numba:compile", listener)
    except Exception:  # noqa: BLE001 (a numba whose event API changed: no progress line)
        return lambda: None
    return lambda: event.unregister("numba:compile", listener)


_COUNTS = "compile-counts.json"  # in the cache root: kept across dyn versions (pruning removes folders only)
_COUNTS_SHIPPED = {"simulate": 137}
"""Compiles of a first run of `dyn simulate robot.urdf` (numba compile events, a kernel's helpers included:
the one simulation loop with every stage's kernels, whatever the scenario, and the set-up kernel), for the
progress line of a fresh install; a later run records its own (tests/runs/test_scenario.py checks it within
a tenth of a first run's count)."""


def expected_compiles(task):
    """How many kernels `task` (e.g. a command's name) compiled the last time it compiled any, or
    the shipped figure, or None when unknown: the total of a progress line."""
    root = folder.cache_root()
    if root is not None:
        import json

        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            n = json.loads((root / _COUNTS).read_text()).get(task)
            if isinstance(n, int) and n > 0:
                return n
    return _COUNTS_SHIPPED.get(task)


def record_compiles(task, n):
    """Remember that `task` compiled `n` kernels (`expected_compiles`); silently nothing when the
    cache root cannot be written."""
    root = folder.cache_root()
    if root is None or n <= 0 or not folder.cache_writable():
        return
    import json

    path = root / _COUNTS
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        counts = {}
        with contextlib.suppress(OSError, ValueError):
            counts = dict(json.loads(path.read_text()))
        counts[task] = int(n)
        tmp = path.with_name(f"{_COUNTS}.tmp.{os.getpid():x}")
        tmp.write_text(json.dumps(counts, sort_keys=True))
        os.replace(tmp, path)

