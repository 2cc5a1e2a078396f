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
  the file it wrote, its size and SHA-256), written after the trajectory; both
  atomically, each file and its folder fsync'ed before the next step;
- ``summary.csv``: one row per variant in variant order (`summary_columns`);
- ``.dyn-sweep/manifest``: the folder is dyn sweep's; ``.dyn-sweep/lock``:
  locked (flock) by the sweep running in it, with its pid. A folder holding a
  summary.csv (or variant files) but no ``.dyn-sweep`` is refused, and so is a
  folder another sweep is writing (`records.claim`).

The hash keys a variant by what determines its result: the validated scenario
(``model_dump``) without ``sweep`` and ``output.path``, with each file it reads
(the robot, CSV tables) replaced by the SHA-256 of its content. It does not
depend on where the files are, on the variant's position in the sweep, or on
the machine. A rerun skips every variant whose record says ok or diverged and
whose trajectory is still there with the size and SHA-256 its record gives (a
diverged variant diverges again); failed variants, variants without a record
(an interrupted run) and variants whose file is missing, truncated or changed
run again (`SweepReport.redo` says which, and why).

`summary.csv` is rewritten, atomically, at most once a second while the sweep
runs, on Ctrl-C, and at the end, with a row for every variant that has a record
(finished by this run or an earlier one, or failed in an earlier one and not yet
retried): an interrupted sweep leaves a partial summary that agrees with the
files. A file whose content would not change is not rewritten. A sweep stopped
by SIGKILL may leave a summary up to a second behind the records; the next run
brings it up to date without running those variants again.

The package: `plan` (variants, key paths, grid and random points, variant
keys), `worker` (one variant through `dynlib.runs.scenario.run`, the same runner as
`dyn simulate`; the warm-up), `records` (the records, summary.csv, the report)
and `backends` (local processes, Dask); `run_sweep`, here, ties them together.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Optional

from ...errors import DynError, InputError, SweepFailed
from .backends import Dask, Local
from .plan import SweepPlan, Variant, grid_points, key_path, plan_sweep, random_points, variant_key
from .records import (FORMATS, MANIFEST, RECORDS, SUMMARY, Summary, SweepReport, check_record, claim,
                      default_format, first_missing, refuse_another_sweep, store, summary_columns, summary_row,
                      summary_text, unmake, variants_csv)
from .worker import Task, max_contact_force, run_variant, warm

__all__ = ["MANIFEST", "RECORDS", "SUMMARY", "SweepFailed", "SweepPlan", "SweepReport", "Task", "Variant",
           "grid_points", "key_path", "max_contact_force", "plan_sweep", "random_points", "run_sweep", "run_variant",
           "summary_columns", "summary_text", "variant_key", "variants_csv", "warm"]


def run_sweep(plan: SweepPlan, outdir, *, workers=None, scheduler=None, fmt=None,
              progress: Optional[Callable] = None, then: Optional[Callable] = None) -> SweepReport:
    """Run the variants of `plan` not already done in `outdir`; write trajectories, records, summary.csv.

    workers: local processes (default: the core count); scheduler: a Dask
    scheduler address (``tcp://HOST:PORT``) instead. fmt: "csv" or "parquet"
    (default: the extension of the scenario's output.path, else csv).
    progress(report, variant): called after each variant (its summary row is
    ``report.rows[variant.index]``), and once with variant None before the
    first, once the variants done by an earlier run are counted (and ``report.redo`` lists those
    whose earlier result is not kept). Ctrl-C stops the workers, writes the summary of the variants
    done so far and re-raises KeyboardInterrupt. InputError when `outdir` holds files dyn sweep did
    not write, or another sweep is writing into it (`records.claim`). then(report): called once the
    summary is written, while the folder is still this sweep's (``dyn sweep --view`` writes its pages
    there, so that a second sweep cannot change the trajectories under them). ``report.unlocked`` says
    why the folder could not be locked (a file system without locks), else None.
    """
    fmt = fmt or default_format(plan.base)
    if fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise InputError(f"{outdir}: exists and is not a folder; expected the sweep's output folder")
    made = first_missing(outdir)  # the folders this sweep makes; or its folder was there and empty:
    empty = made is None and outdir.is_dir() and next(os.scandir(outdir), None) is None
    try:
        with claim(outdir, plan.source) as held:
            refuse_another_sweep(outdir, [v.key for v in plan.variants])
            report = _run(plan, outdir, workers, scheduler, fmt, progress, held.unlocked)
            if then is not None:
                then(report)
            return report
    except InputError:  # bad input (an unreachable scheduler): what this sweep made, when no variant was written,
        if made is not None or empty:  # is not left behind; an interrupted sweep keeps its folder (see above)
            unmake(outdir, made)
        raise


def _run(plan, outdir, workers, scheduler, fmt, progress, unlocked):
    report = SweepReport(plan, outdir, unlocked=unlocked)
    tasks, by_key = [], {}
    for v in plan.variants:
        record, problem = check_record(outdir, v.key, fmt)
        if problem is not None:
            report.redo.append((v, problem))
        if record is not None:
            report.rows[v.index] = summary_row(v, record)
            report.skipped += 1
        elif v.key in by_key:
            by_key[v.key].append(v)         # the same scenario twice: run once
        else:
            by_key[v.key] = [v]
            tasks.append(Task(v.name, v.key, v.scenario))
    summary = Summary(report, fmt)
    if progress is not None:
        progress(report, None)

    def finished(task, outcome):
        try:
            record = store(outdir, task, outcome, fmt, plan.source)
        except DynError as exc:  # a full disk: the variant whose file could not be written, not summary.csv
            raise type(exc)(f"variant {task.name}: {exc.message}", file=exc.file, line=exc.line,
                            key=exc.key) from None
        for v in by_key[task.key]:
            report.rows[v.index] = summary_row(v, record)
        report.ran += 1
        summary.maybe_write()
        if progress is not None:
            for v in by_key[task.key]:
                progress(report, v)

    try:
        if tasks:
            backend = Dask(scheduler) if scheduler else Local(workers)
            backend.run(tasks, plan.variants[0].scenario, finished)
    except BaseException:
        # the summary of what is done, if it can be written: its own error (the same full disk) would
        # replace the one that stopped the sweep
        with contextlib.suppress(DynError, OSError):
            summary.write()
        raise
    summary.write()
    return report

