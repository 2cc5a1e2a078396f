"""One variant, in a worker process (local or Dask): run it through `dynlib.runs.scenario.run`.

`run_variant(task)` never raises for the variant's own errors: it returns the
outcome (status, the trajectory's columns, metrics, message) for the client
process to write. `warm(scenario)` loads the compiled loop in a worker once.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import socket
import time
from typing import Any

from ...errors import DynError


@dataclasses.dataclass(frozen=True)
class Task:
    """What a worker gets: the variant's name, key and validated scenario (pickled)."""

    name: str
    key: str
    scenario: Any


def run_variant(task: Task) -> dict:
    """Simulate one variant; never raises for the variant's own errors.

    Returns {status, names, data (rows x columns, float64) or None, metrics,
    message, seconds, worker}. The same function runs on both backends. Energy
    is always computed (for the metrics); the returned columns are the
    scenario's ``output.columns``.
    """
    from ..scenario import run

    t0 = time.perf_counter()
    sc = task.scenario
    names, data, metrics, message = None, None, {}, ""
    try:
        result = run(sc, energy=True)
        metrics = _metrics(result)
        if len(result):
            names, data = result.table(sc.output.columns)
        status = "ok" if result.diverged is None else "diverged"
        if result.diverged is not None:
            message = result.diverged.message
    except DynError as exc:
        status, message = "failed", str(exc)
    except Exception as exc:  # a bug or a resource error: recorded, the sweep goes on
        status, message = "failed", f"internal error ({type(exc).__name__}: {exc})"
    return {"status": status, "names": names, "data": data, "metrics": metrics, "message": message,
            "seconds": time.perf_counter() - t0, "worker": f"{socket.gethostname()}:{os.getpid()}"}


def _metrics(result) -> dict:
    """Per-variant numbers for summary.csv (NaN where they do not apply)."""
    import numpy as np

    nan = float("nan")
    m = {"energy.final": nan, "energy.initial": nan, "energy.drift": nan, "contact.max_force": nan,
         "diverged.time": nan if result.diverged is None else float(result.diverged.time)}
    if len(result) and result.energy is not None:
        E = result.energy[:, 2]
        m["energy.final"], m["energy.initial"] = float(E[-1]), float(E[0])
        m["energy.drift"] = float(np.max(np.abs(E - E[0])))
    if len(result) and result.contact_force is not None:
        names, data = result.table(["contact"])
        m["contact.max_force"] = max_contact_force(names, data)
    model = result.model
    m.update({f"final.q.{n}": float(x) for n, x in zip(model.q_names, result.q_final)})
    m.update({f"final.qd.{n}": float(x) for n, x in zip(model.v_names, result.v_final)})
    return m


def max_contact_force(names, data) -> float:
    """The largest |(fx, fy, fz)| of any `contact.<frame>.*` column triple over the rows (NaN if none)."""
    import numpy as np

    from ...files.columns import contact_columns, contact_names

    index = {n: j for j, n in enumerate(names)}
    best = float("nan")
    for f in contact_names(names):
        cols = [index.get(c) for c in contact_columns([f])[:3]]
        if None in cols or len(data) == 0:
            continue
        norm = float(np.max(np.linalg.norm(np.asarray(data)[:, cols], axis=1)))
        best = norm if math.isnan(best) else max(best, norm)
    return best


def warm(scenario) -> str:
    """Load the compiled simulation loop in this process (one step of `scenario`); returns dyn's version.

    Best effort: a scenario that fails here fails again, and is recorded, when its variant runs.
    """
    from ... import __version__
    from ..scenario import run

    with contextlib.suppress(Exception):
        run(scenario.model_copy(update={"steps": 1, "duration": None}), energy=True)
    return __version__


def loop_ready() -> bool:
    """Whether the compiled loop that `warm` loads is in dyn's kernel cache (one loop for every scenario:
    `dynlib.sim.simulate.loop_is_cached`)."""
    from ...sim.simulate import loop_is_cached

    return loop_is_cached()


def init_worker(scenario, parent=None):
    """Local worker start: ends with its parent `parent` (a pid), however that ends
    (`dynlib.processes.die_with_parent`: no orphaned worker holds memory and the
    caller's pipes); Ctrl-C is the parent's to handle; one thread per process
    (the processes already share out the cores; a DYN_THREADS the user set is kept);
    kernels loaded once, here."""
    import signal

    if parent is not None:
        from ...processes import die_with_parent

        die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("DYN_THREADS", "1")
    warm(scenario)

