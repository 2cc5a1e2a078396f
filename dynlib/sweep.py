"""Parameter sweeps: every variant of a scenario's `sweep:` block (SPEC §4 `dyn sweep`, §6).

`plan_sweep(path)` expands the block into variants and validates each one with
`load_scenario(path, overrides)` (the overrides are the variant's key paths, so
a variant is exactly the scenario a user would get from the command line):

- ``grid``: the cartesian product of the listed values, the first key varying
  slowest (YAML order);
- ``random``: ``count`` samples, drawn once with ``numpy.random.default_rng(seed)``,
  uniform in each ``[low, high]`` range, log-uniform in ``[low, high, log]``;
- both: every grid point with every random sample (the same samples at each
  grid point, so that grid points compare on common random numbers).

`run_sweep(plan, outdir)` runs the variants in parallel, on local processes
(``workers``, default the core count) or on a Dask cluster (``scheduler``,
``tcp://HOST:PORT``). Both backends call the same function, `run_variant`, on
the same pickled, validated scenario, and every file is written by this
(the client) process from the arrays the worker returns; the same variant gives
the same bytes on both (the cluster needs no shared folder).

Outputs in OUTDIR:

- ``<variant>-<hash16>.csv`` (or ``.parquet``): the variant's trajectory, the
  scenario's ``output.columns`` (a diverged variant: up to its last finite state);
- ``.dyn-sweep/<hash>.json``: one record per finished variant (status, metrics,
  the file it wrote), written after the trajectory; both atomically;
- ``summary.csv``: one row per variant in variant order (`summary_columns`).

The hash keys a variant by what determines its result: the validated scenario
(``model_dump``) without ``sweep`` and ``output.path``, with each file it reads
(the robot, CSV tables) replaced by the SHA-256 of its content. It does not
depend on where the files are, on the variant's position in the sweep, or on
the machine. A rerun skips every variant whose record says ok or diverged and
whose trajectory is still there (a diverged variant diverges again); failed
variants and variants without a record (an interrupted run) run again.

`summary.csv` is rewritten, atomically, at most once a second while the sweep
runs, on Ctrl-C, and at the end, with a row for every variant that has a record
(finished by this run or an earlier one, or failed in an earlier one and not yet
retried): an interrupted sweep leaves a partial summary that agrees with the
files. A file whose content would not change is not rewritten. A sweep stopped
by SIGKILL may leave a summary up to a second behind the records; the next run
brings it up to date without running those variants again.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import io
import itertools
import json
import math
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable, Optional

from .errors import DynError, InputError, ScenarioError, SweepFailed

SUMMARY = "summary.csv"
RECORDS = ".dyn-sweep"
HASH_SCHEME = 1                    # bump when the hashed content changes meaning
STATUSES = ("ok", "diverged", "failed")  # of a variant, in summary.csv
DONE = ("ok", "diverged")          # statuses a rerun keeps
FORMATS = ("csv", "parquet")
SUMMARY_EVERY = 1.0                # seconds between partial summaries
# never swept: they belong to the sweep itself
RESERVED = (("sweep",), ("output", "path"))


# ================================================================== planning

@dataclasses.dataclass(frozen=True)
class Variant:
    """One scenario of a sweep: `params` {key path: resolved value} applied to the base."""

    index: int
    name: str        # v000, v001, … (variant order)
    params: dict
    scenario: Any    # the validated dynlib.scenario.Scenario
    key: str         # SHA-256 hex of the resolved variant (`variant_key`)

    def describe(self) -> str:
        """'initial.q.elbow = 0.5, dt = 0.002'"""
        return ", ".join(f"{k} = {_cell(v)}" for k, v in self.params.items())


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    """The base scenario, the swept key paths (grid first, then random) and the variants."""

    source: str
    base: Any
    parameters: tuple
    variants: tuple
    shape: str       # "3 x 2 grid", "20 random", "3 x 2 grid x 20 random"

    def __len__(self) -> int:
        return len(self.variants)


def plan_sweep(path) -> SweepPlan:
    """Read a scenario with a `sweep:` block and validate every variant (ScenarioError on bad input)."""
    from .scenario import load_scenario

    path = str(path)
    base = load_scenario(path)
    if base.source is None:
        raise ScenarioError(f"{path}: dyn sweep needs a scenario (.yaml) with a 'sweep:' block, not a robot file")
    sw = base.sweep
    if sw is None:
        raise base.error((), "no 'sweep:' block: dyn sweep runs the variants of a scenario's sweep; add one, "
                             "e.g. 'sweep: {grid: {dt: [0.001, 0.002]}}'")
    if not sw.grid and sw.random is None:
        raise base.error(("sweep",), "the sweep is empty; give 'grid:' (key path: [values]), "
                                     "'random:' (count, seed, ranges) or both")
    for key, values in sw.grid.items():
        _check_key(base, ("sweep", "grid", key), key)
        if not values:
            raise base.error(("sweep", "grid", key), "no values; give a list of at least one")
    ranges = {}
    if sw.random is not None:
        if not sw.random.ranges:
            raise base.error(("sweep", "random", "ranges"), "no ranges; give {key path: [low, high]}")
        for key, r in sw.random.ranges.items():
            where = ("sweep", "random", "ranges", key)
            _check_key(base, where, key)
            if key in sw.grid:
                raise base.error(where, f"'{key}' is also in sweep.grid; sweep each key path in one place")
            try:
                ranges[key] = _range(r)
            except ValueError as exc:
                raise base.error(where, str(exc)) from None

    grid = grid_points(sw.grid)
    samples = random_points(ranges, sw.random.count, sw.random.seed) if ranges else [{}]
    points = [{**g, **s} for g in grid for s in samples]
    paths = {key: key_path(base, key) for key in (*sw.grid, *ranges)}
    labels = {paths[key]: base.error(("sweep", "grid", key), "").location for key in sw.grid}
    labels.update({paths[key]: base.error(("sweep", "random", "ranges", key), "").location for key in ranges})
    width = max(3, len(str(len(points) - 1)))
    hashes, variants = {}, []
    for i, point in enumerate(points):
        name = f"v{i:0{width}d}"
        sc = _load_variant(path, base, name, point, paths, labels)
        key = variant_key(sc, hashes)
        variants.append(Variant(i, name, _resolved_params(sc, point, paths), sc, key))

    sizes = [str(len(v)) for v in sw.grid.values()]
    shape = " x ".join(sizes) + " grid" if sizes else ""
    if ranges:
        shape = (shape + " x " if shape else "") + f"{sw.random.count} random"
    return SweepPlan(path, base, tuple(sw.grid) + tuple(ranges), tuple(variants), shape)


# mappings keyed by joint or coordinate names, which may hold dots (root.x), and the robot's names
# they take: after these, a key path's next part is one name, then a field for the first two
_BY_NAME = {("control", "target", "sinusoids"): "q_names", ("joint_friction",): "joint_names",
            ("initial", "q"): "q_names", ("initial", "qd"): "v_names", ("control", "kp"): "v_names",
            ("control", "kd"): "v_names", ("control", "tau"): "tau_names", ("control", "target"): "q_names"}
_NAME_THEN_FIELD = (("control", "target", "sinusoids"), ("joint_friction",))


def key_path(base, key) -> tuple:
    """'initial.q.root.z' -> ('initial', 'q', 'root.z'): a sweep key as load_scenario's override path.

    Dots split keys, except in a joint or coordinate name: after a mapping keyed by
    names, the longest run of parts that names something of the base scenario's
    robot (else all the parts up to the field, so that a misspelt name is reported
    whole, with the closest ones).
    """
    from .scenario import as_path

    parts = as_path(key)
    for prefix, attr in _BY_NAME.items():
        names = getattr(base.model, attr)
        n = len(prefix)
        rest = parts[n:]
        if parts[:n] != prefix or not rest or not all(isinstance(p, str) for p in rest):
            continue
        for k in range(len(rest), 0, -1):
            if ".".join(rest[:k]) in names:
                return prefix + (".".join(rest[:k]),) + rest[k:]
        k = len(rest) - 1 if prefix in _NAME_THEN_FIELD and len(rest) > 1 else len(rest)
        return prefix + (".".join(rest[:k]),) + rest[k:]
    return parts


def _check_key(base, where, key):
    from .scenario import as_path

    path = as_path(key)
    if not path or any(path[:len(r)] == r for r in RESERVED):
        raise base.error(where, f"'{key}' cannot be swept (the sweep sets where outputs go); "
                                "sweep scenario keys such as dt, initial.q.<joint>, control.kp, gravity")


def _range(r):
    """(low, high, scale) from [low, high] or [low, high, 'uniform' | 'log']; ValueError when it is not one."""
    low, high, *rest = r
    scale = rest[0] if rest else "uniform"
    if scale not in ("uniform", "log"):
        raise ValueError(f"unknown scale {scale!r}; expected 'uniform' or 'log'")
    if not low <= high:
        raise ValueError(f"expected [low, high] with low <= high, got [{low}, {high}]")
    if scale == "log" and not low > 0:
        raise ValueError(f"a log-uniform range needs low > 0, got [{low}, {high}, log]")
    return float(low), float(high), scale


def grid_points(grid: dict) -> list:
    """[{key: value}, …]: the cartesian product of `grid`'s lists, the first key slowest."""
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def random_points(ranges: dict, count: int, seed: int) -> list:
    """`count` points {key: value}: uniform, or log-uniform for scale 'log', from numpy's default_rng(seed).

    `ranges`: {key: (low, high)} or {key: (low, high, 'uniform' | 'log')}. One
    (count, len(ranges)) block of uniforms, so a point's values depend on the
    seed, the point's index and the key's position.
    """
    import numpy as np

    keys = list(ranges)
    bounds = [_range(ranges[k]) for k in keys]
    u = np.random.default_rng(seed).random((count, len(keys)))
    points = []
    for row in u:
        point = {}
        for key, (low, high, scale), x in zip(keys, bounds, row):
            if scale == "log":
                point[key] = float(math.exp(math.log(low) + (math.log(high) - math.log(low)) * x))
            else:
                point[key] = float(low + (high - low) * x)
        points.append(point)
    return points


def _load_variant(path, base, name, point, paths, labels):
    """load_scenario with the point as overrides; errors name the sweep entry (or the variant)."""
    from .scenario import load_scenario

    try:
        return load_scenario(path, {paths[k]: v for k, v in point.items()}, origins=labels)
    except ScenarioError as exc:
        if any(str(exc).startswith(label) for label in labels.values()):
            raise
        desc = ", ".join(f"{k} = {_cell(v)}" for k, v in point.items())
        where = f"{exc.key}: " if exc.key else ""
        raise base.error(("sweep",), f"variant {name} ({desc}): {where}{exc.message}") from None


def _resolved_params(sc, point, paths):
    """The swept values as the validated scenario holds them (1e-3 read as text by YAML becomes 0.001)."""
    dump = sc.model_dump()
    out = {}
    for key, given in point.items():
        node = dump
        try:
            for k in paths[key]:
                node = node[k]
        except (KeyError, IndexError, TypeError):
            node = given
        out[key] = list(node) if isinstance(node, tuple) else node
    return out


def variant_key(sc, file_hashes=None) -> str:
    """SHA-256 (hex) of what determines a variant's result (see the module docstring)."""
    data = sc.model_dump()
    data.pop("sweep", None)
    data["output"].pop("path", None)
    cache = {} if file_hashes is None else file_hashes
    data["robot"] = _file_hash(sc.resolve(sc.robot), cache)
    control = data["control"]
    if isinstance(control.get("file"), str):
        control["file"] = _file_hash(sc.resolve(control["file"]), cache)
    target = control.get("target")
    if isinstance(target, dict) and isinstance(target.get("file"), str):
        target["file"] = _file_hash(sc.resolve(target["file"]), cache)
    text = json.dumps({"dyn-sweep": HASH_SCHEME, "scenario": data}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _file_hash(path, cache):
    path = Path(path).resolve()
    if path not in cache:
        cache[path] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    return cache[path]


# ================================================================== one variant (in the worker)

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
    from .scenario import run_scenario

    t0 = time.perf_counter()
    sc = task.scenario
    names, data, metrics, message = None, None, {}, ""
    try:
        parts = list(sc.output.columns)
        run_parts = parts + [p for p in ("energy",) if p not in parts]
        if sc.contacts is not None and "contact" not in run_parts:
            run_parts.append("contact")
        run_sc = sc.model_copy(update={"output": sc.output.model_copy(update={"columns": run_parts})})
        result = run_scenario(run_sc)
        metrics = _metrics(result, run_parts)
        if len(result):
            names, data = result.table(parts)
        status = "ok" if result.diverged is None else "diverged"
        if result.diverged is not None:
            message = result.diverged.message
    except DynError as exc:
        status, message = "failed", str(exc)
    except Exception as exc:  # a bug or a resource error: recorded, the sweep goes on
        status, message = "failed", f"internal error ({type(exc).__name__}: {exc})"
    return {"status": status, "names": names, "data": data, "metrics": metrics, "message": message,
            "seconds": time.perf_counter() - t0, "worker": f"{socket.gethostname()}:{os.getpid()}"}


def _metrics(result, run_parts) -> dict:
    """Per-variant numbers for summary.csv (NaN where they do not apply)."""
    import numpy as np

    nan = float("nan")
    m = {"energy.final": nan, "energy.initial": nan, "energy.drift": nan, "contact.max_force": nan,
         "diverged.time": nan if result.diverged is None else float(result.diverged.time)}
    if len(result) and result.energy is not None:
        E = result.energy[:, 2]
        m["energy.final"], m["energy.initial"] = float(E[-1]), float(E[0])
        m["energy.drift"] = float(np.max(np.abs(E - E[0])))
    if len(result) and "contact" in run_parts:
        names, data = result.table(["contact"])
        m["contact.max_force"] = max_contact_force(names, data)
    model = result.model
    m.update({f"final.q.{n}": float(x) for n, x in zip(model.q_names, result.q_final)})
    m.update({f"final.qd.{n}": float(x) for n, x in zip(model.v_names, result.v_final)})
    return m


def max_contact_force(names, data) -> float:
    """The largest |(fx, fy, fz)| of any `contact.<frame>.*` column triple over the rows (NaN if none)."""
    import numpy as np

    index = {n: j for j, n in enumerate(names)}
    frames = [n[len("contact."):-len(".fx")] for n in names if n.startswith("contact.") and n.endswith(".fx")]
    best = float("nan")
    for f in frames:
        cols = [index.get(f"contact.{f}.{c}") for c in ("fx", "fy", "fz")]
        if None in cols or len(data) == 0:
            continue
        norm = float(np.max(np.linalg.norm(np.asarray(data)[:, cols], axis=1)))
        best = norm if math.isnan(best) else max(best, norm)
    return best


def warm(scenario) -> str:
    """Load the compiled simulation loop in this process (one step of `scenario`); returns dyn's version.

    Best effort: a scenario that fails here fails again, and is recorded, when its variant runs.
    """
    from . import __version__

    with contextlib.suppress(Exception):
        from .scenario import run_scenario

        sc = scenario.model_copy(update={"steps": 1, "duration": None})
        run_scenario(sc.model_copy(update={"output": sc.output.model_copy(update={"columns": ["q", "energy"]})}))
    return __version__


def _init_worker(scenario):
    """Local worker start: Ctrl-C is the parent's to handle; one thread per process
    (the processes already share out the cores; a DYN_THREADS the user set is kept);
    kernels loaded once, here."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("DYN_THREADS", "1")
    warm(scenario)


# ================================================================== running the sweep

@dataclasses.dataclass
class SweepReport:
    """What a sweep did: one row per finished variant (variant order), counts, where the summary is."""

    plan: SweepPlan
    outdir: Path
    rows: dict = dataclasses.field(default_factory=dict)    # variant index -> summary row
    skipped: int = 0                                         # already done by an earlier run
    ran: int = 0

    @property
    def total(self) -> int:
        return len(self.plan)

    @property
    def done(self) -> int:
        return len(self.rows)

    def count(self, status) -> int:
        return sum(1 for r in self.rows.values() if r["status"] == status)

    @property
    def failures(self) -> int:
        return self.done - self.count("ok")

    @property
    def ok(self) -> bool:
        return self.done == self.total and self.failures == 0

    @property
    def summary_path(self) -> Path:
        return self.outdir / SUMMARY

    def error(self) -> Optional[SweepFailed]:
        """The SweepFailed to raise when a variant diverged or failed (None otherwise)."""
        if self.ok:
            return None
        bad = [r for _, r in sorted(self.rows.items()) if r["status"] != "ok"]
        first = f"; first: {bad[0]['variant']} {bad[0]['status']}" if bad else ""
        missing = f", {self.total - self.done} not run" if self.done < self.total else ""
        return SweepFailed(f"{self.total - self.count('ok')} of {self.total} variants did not finish ok "
                           f"({self.count('diverged')} diverged, {self.count('failed')} failed{missing}{first}); "
                           f"see {self.summary_path}")


def run_sweep(plan: SweepPlan, outdir, *, workers=None, scheduler=None, fmt=None,
              progress: Optional[Callable] = None) -> SweepReport:
    """Run the variants of `plan` not already done in `outdir`; write trajectories, records, summary.csv.

    workers: local processes (default: the core count); scheduler: a Dask
    scheduler address (``tcp://HOST:PORT``) instead. fmt: "csv" or "parquet"
    (default: the extension of the scenario's output.path, else csv).
    progress(report, variant): called after each variant (its summary row is
    ``report.rows[variant.index]``), and once with variant None before the
    first, once the variants done by an earlier run are counted. Ctrl-C stops the workers, writes
    the summary of the variants done so far and re-raises KeyboardInterrupt.
    """
    fmt = fmt or _default_format(plan.base)
    if fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise InputError(f"{outdir}: exists and is not a folder; expected the sweep's output folder")
    try:
        (outdir / RECORDS).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{outdir}: cannot create the output folder: {exc.strerror or exc}") from None
    report = SweepReport(plan, outdir)
    tasks, by_key = [], {}
    for v in plan.variants:
        record = _finished(outdir, v.key, fmt)
        if record is not None:
            report.rows[v.index] = _row(v, record)
            report.skipped += 1
        elif v.key in by_key:
            by_key[v.key].append(v)         # the same scenario twice: run once
        else:
            by_key[v.key] = [v]
            tasks.append(Task(v.name, v.key, v.scenario))
    summary = _Summary(report, fmt)
    if progress is not None:
        progress(report, None)

    def finished(task, outcome):
        record = _store(outdir, task, outcome, fmt, plan.source)
        for v in by_key[task.key]:
            report.rows[v.index] = _row(v, record)
        report.ran += 1
        summary.maybe_write()
        if progress is not None:
            for v in by_key[task.key]:
                progress(report, v)

    try:
        if tasks:
            backend = _Dask(scheduler) if scheduler else _Local(workers)
            backend.run(tasks, plan.variants[0].scenario, finished)
    finally:
        summary.write()
    return report


def _default_format(base):
    suffix = Path(base.output.path or "").suffix.lower().lstrip(".")
    return suffix if suffix in FORMATS else "csv"


def _record_path(outdir, key) -> Path:
    return Path(outdir) / RECORDS / f"{key}.json"


def _read_record(outdir, key) -> Optional[dict]:
    try:
        record = json.loads(_record_path(outdir, key).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("key") == key else None


def _finished(outdir, key, fmt) -> Optional[dict]:
    """The record of a variant done by an earlier run (ok or diverged, its file there, same format)."""
    record = _read_record(outdir, key)
    if record is None or record.get("status") not in DONE:
        return None
    path = record.get("path")
    if path and (Path(path).suffix != f".{fmt}" or not (Path(outdir) / path).is_file()):
        return None
    return record


def _latest(outdir, key, fmt) -> Optional[dict]:
    """The last known state of a variant this run has not finished: done before, or failed before."""
    record = _read_record(outdir, key)
    if record is not None and record.get("status") == "failed":
        return record
    return _finished(outdir, key, fmt)


def _store(outdir, task, outcome, fmt, source) -> dict:
    """Write the variant's trajectory, then its record (both atomically); return the record."""
    from .trajectory import atomic_output, write_trajectory

    path = None
    if outcome["data"] is not None:
        path = f"{task.name}-{task.key[:16]}.{fmt}"
        write_trajectory(Path(outdir) / path, outcome["names"], outcome["data"], source=source)
    record = {"key": task.key, "variant": task.name, "status": outcome["status"], "path": path,
              "metrics": outcome["metrics"], "message": outcome["message"],
              "seconds": outcome["seconds"], "worker": outcome["worker"]}
    with atomic_output(_record_path(outdir, task.key)) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=1) + "\n")
    return record


def _row(variant, record) -> dict:
    row = {"variant": variant.name, **variant.params, "status": record["status"], "path": record["path"] or ""}
    row.update(record["metrics"])
    row["hash"] = variant.key[:16]
    row["message"] = record["message"]
    return row


def summary_columns(plan: SweepPlan, rows) -> list:
    """variant, the swept key paths, status, path, energy.final, the other metrics (first seen, variant
    order), hash, message."""
    head = ["variant", *plan.parameters, "status", "path"]
    cols = dict.fromkeys(head + ["energy.final"])
    for row in rows:
        cols.update(dict.fromkeys(k for k in row if k not in ("hash", "message")))
    return list(cols) + ["hash", "message"]


def _cell(x) -> str:
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return "" if math.isnan(x) else repr(x)
    if isinstance(x, (list, tuple, dict)):
        return json.dumps(x, separators=(", ", ": "))
    return str(x)


def summary_text(plan: SweepPlan, rows) -> str:
    """summary.csv's content for `rows` (summary rows, variant order)."""
    columns = summary_columns(plan, rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([_cell(row.get(c)) for c in columns])
    return buf.getvalue()


def variants_csv(plan: SweepPlan, outdir=None, fmt=None) -> str:
    """The `--dry-run` listing: variant, the swept key paths, hash; with `outdir`, a status column
    (ok or diverged: done by an earlier run, skipped by the next; 'to run' otherwise)."""
    fmt = fmt or _default_format(plan.base)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["variant", *plan.parameters, "hash"] + (["status"] if outdir is not None else []))
    for v in plan.variants:
        row = [v.name, *(_cell(v.params[k]) for k in plan.parameters), v.key[:16]]
        if outdir is not None:
            record = _finished(outdir, v.key, fmt)
            row.append(record["status"] if record else "to run")
        w.writerow(row)
    return buf.getvalue()


class _Summary:
    """summary.csv kept up to date: at most once every SUMMARY_EVERY seconds, and at the end."""

    def __init__(self, report, fmt):
        self.report = report
        self.fmt = fmt
        self.last = time.monotonic()

    def maybe_write(self):
        if time.monotonic() - self.last >= SUMMARY_EVERY:
            self.write()

    def write(self):
        from .trajectory import atomic_output

        r = self.report
        rows = dict(r.rows)
        for v in r.plan.variants:  # not finished by this run (yet): what the records say
            if v.index not in rows:
                record = _latest(r.outdir, v.key, self.fmt)
                if record is not None:
                    rows[v.index] = _row(v, record)
        text = summary_text(r.plan, [row for _, row in sorted(rows.items())])
        path = r.summary_path
        with contextlib.suppress(OSError):
            if path.read_text() == text:
                self.last = time.monotonic()
                return
        with atomic_output(path) as tmp:
            Path(tmp).write_text(text)
        self.last = time.monotonic()


# ------------------------------------------------------------------ backends

def _lost(message) -> dict:
    return {"status": "failed", "names": None, "data": None, "metrics": {}, "message": message,
            "seconds": float("nan"), "worker": ""}


class _Local:
    """A pool of spawned processes (numba and fork do not mix), each warmed once, ≤ 2 tasks per worker queued."""

    def __init__(self, workers=None):
        n = _cores() if workers is None else int(workers)
        if n < 1:
            raise InputError(f"workers must be at least 1, got {workers!r}")
        self.workers = n

    def run(self, tasks, scenario, finished):
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        n = min(self.workers, len(tasks))
        ctx = multiprocessing.get_context("spawn")
        from .simulate import loop_is_cached

        if not loop_is_cached():  # compile once here; the workers then load the kernels from the cache
            warm(scenario)

        def start():
            return ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker, initargs=(scenario,))

        pool, queue, running, breaks = start(), list(reversed(tasks)), {}, {}
        try:
            while queue or running:
                while queue and len(running) < 2 * n:
                    task = queue.pop()
                    running[pool.submit(run_variant, task)] = task
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = False
                for fut in done:
                    task = running.pop(fut)
                    try:
                        outcome = fut.result()
                    except BrokenProcessPool:
                        # every task in the pool fails with it: each is retried once in a new pool
                        broken = True
                        breaks[task.key] = breaks.get(task.key, 0) + 1
                        if breaks[task.key] < 2:
                            queue.append(task)
                            continue
                        outcome = _lost("a worker process died twice while this variant was running or queued "
                                        "(a crash or out of memory); rerun the sweep to retry it")
                    finished(task, outcome)
                if broken:
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = start()
        except BaseException:
            _terminate(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _cores() -> int:
    """The cores this process may run on (a container's CPU set), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _terminate(pool):
    """Stop a ProcessPoolExecutor now: cancel what is queued, end the worker processes it started."""
    if hasattr(pool, "terminate_workers"):  # Python 3.14
        pool.terminate_workers()
        return
    procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown() forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(5)


class _Dask:
    """Tasks on a running Dask distributed cluster; results come back to this process, which writes them."""

    CONNECT_TIMEOUT = 10  # s, to reach the scheduler and to see a first worker

    def __init__(self, address):
        try:
            import distributed
        except ImportError:
            raise InputError("--scheduler needs Dask distributed: pip install 'dyn[dask]' "
                             "(or pip install 'dask[distributed]')") from None
        self.distributed = distributed
        self.address = address

    def run(self, tasks, scenario, finished):
        from . import __version__

        d = self.distributed
        try:
            client = d.Client(self.address, timeout=self.CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        futures = {}
        try:
            try:
                client.wait_for_workers(1, timeout=self.CONNECT_TIMEOUT)
            except TimeoutError:
                raise InputError(f"the Dask scheduler at {self.address} has no workers; start some with "
                                 f"'dask worker {self.address} --nthreads 1 --nworkers N'") from None
            try:
                versions = client.run(warm, scenario)
            except Exception as exc:
                raise InputError(f"the Dask workers cannot run dyn ({type(exc).__name__}: {exc}); "
                                 "install the same dyn on every worker") from None
            other = {w: v for w, v in versions.items() if v != __version__}
            if other:
                raise InputError(f"Dask workers run another dyn version ({_short(other)}), this one is "
                                 f"{__version__}; the same variant must run the same code")
            for task in tasks:
                fut = client.submit(run_variant, task, pure=False, key=f"dyn-{task.name}-{task.key[:8]}-"
                                                                        f"{os.urandom(4).hex()}")
                futures[fut] = task
            for fut in d.as_completed(list(futures), loop=client.loop):
                task = futures.pop(fut)
                try:
                    outcome = fut.result()
                except Exception as exc:  # KilledWorker, a lost connection: the cluster failed, not the variant
                    outcome = _lost(f"the Dask cluster could not run it ({type(exc).__name__}: {exc}); "
                                    "rerun the sweep to retry it")
                finished(task, outcome)
                fut.release()
        finally:
            with contextlib.suppress(Exception):
                if futures:
                    client.cancel(list(futures))
            with contextlib.suppress(Exception):
                client.close()


def _short(mapping, n=3):
    items = [f"{k}: {v}" for k, v in list(mapping.items())[:n]]
    return ", ".join(items) + (f", … ({len(mapping) - n} more)" if len(mapping) > n else "")
