"""What a sweep leaves in OUTDIR: the per-variant records (.dyn-sweep/<hash>.json), the
trajectories, summary.csv; and `SweepReport`, what a run did.

A record is written after its trajectory, both atomically; `finished_record` is the
record of a variant a rerun skips. summary.csv is rewritten (`Summary`) at most
once every SUMMARY_EVERY seconds and at the end, only when its content changes.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import time
from pathlib import Path
from typing import Optional

from ..errors import SweepFailed
from .plan import SweepPlan, cell

SUMMARY = "summary.csv"
RECORDS = ".dyn-sweep"
STATUSES = ("ok", "diverged", "failed")  # of a variant, in summary.csv
DONE = ("ok", "diverged")          # statuses a rerun keeps
FORMATS = ("csv", "parquet")
SUMMARY_EVERY = 1.0                # seconds between partial summaries


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


def default_format(base):
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


def finished_record(outdir, key, fmt) -> Optional[dict]:
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
    return finished_record(outdir, key, fmt)


def store(outdir, task, outcome, fmt, source) -> dict:
    """Write the variant's trajectory, then its record (both atomically); return the record."""
    from ..trajectory import atomic_output, write_trajectory

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


def summary_row(variant, record) -> dict:
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



def summary_text(plan: SweepPlan, rows) -> str:
    """summary.csv's content for `rows` (summary rows, variant order)."""
    columns = summary_columns(plan, rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([cell(row.get(c)) for c in columns])
    return buf.getvalue()


def variants_csv(plan: SweepPlan, outdir=None, fmt=None) -> str:
    """The `--dry-run` listing: variant, the swept key paths, hash; with `outdir`, a status column
    (ok or diverged: done by an earlier run, skipped by the next; 'to run' otherwise)."""
    fmt = fmt or default_format(plan.base)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["variant", *plan.parameters, "hash"] + (["status"] if outdir is not None else []))
    for v in plan.variants:
        row = [v.name, *(cell(v.params[k]) for k in plan.parameters), v.key[:16]]
        if outdir is not None:
            record = finished_record(outdir, v.key, fmt)
            row.append(record["status"] if record else "to run")
        w.writerow(row)
    return buf.getvalue()


class Summary:
    """summary.csv kept up to date: at most once every SUMMARY_EVERY seconds, and at the end."""

    def __init__(self, report, fmt):
        self.report = report
        self.fmt = fmt
        self.last = time.monotonic()

    def maybe_write(self):
        if time.monotonic() - self.last >= SUMMARY_EVERY:
            self.write()

    def write(self):
        from ..trajectory import atomic_output

        r = self.report
        rows = dict(r.rows)
        for v in r.plan.variants:  # not finished by this run (yet): what the records say
            if v.index not in rows:
                record = _latest(r.outdir, v.key, self.fmt)
                if record is not None:
                    rows[v.index] = summary_row(v, record)
        text = summary_text(r.plan, [row for _, row in sorted(rows.items())])
        path = r.summary_path
        with contextlib.suppress(OSError):
            if path.read_text() == text:
                self.last = time.monotonic()
                return
        with atomic_output(path) as tmp:
            Path(tmp).write_text(text)
        self.last = time.monotonic()

