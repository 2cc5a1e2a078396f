"""What a sweep leaves in OUTDIR: the per-variant records (.dyn-sweep/<hash>.json), the
trajectories, summary.csv, the folder's manifest and lock; and `SweepReport`, what a run did.

A record is written after its trajectory, both atomically and durably (file and
folder fsync'ed before the rename is relied on), and holds the trajectory's
size and SHA-256; `check_record` is the record of a variant a rerun skips, its
file verified against them (a truncated, emptied or changed file is run again).
summary.csv is rewritten (`Summary`) at most once every SUMMARY_EVERY seconds
and at the end, only when its content changes.

`claim(outdir)` makes OUTDIR the sweep's, for the length of the run: a folder
that holds a summary.csv, an index.html or variant files but no ``.dyn-sweep``
was not made by dyn sweep and is refused (its files are not dyn's to
overwrite); ``.dyn-sweep/manifest`` marks the folder as dyn's; a folder
holding records of variants that a sweep does not have is another sweep's,
whose summary.csv it would replace without them, and is refused
(`refuse_another_sweep`); an
exclusive lock (``fcntl.flock`` on ``.dyn-sweep/lock``, which names the
holder's pid) keeps a second sweep out while one runs, and while ``dyn sweep
--view`` writes its pages. On a file system without locks the sweep runs
unlocked and says so (`SweepReport.unlocked`).
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import hashlib
import io
import json
import os
import re
import time
from pathlib import Path
from typing import Optional

from ...errors import InputError, SweepFailed
from .plan import SweepPlan, cell

SUMMARY = "summary.csv"
RECORDS = ".dyn-sweep"
MANIFEST = "manifest"              # in RECORDS (JSON; not .json, the records are): the folder is dyn sweep's
LOCK = "lock"                      # in RECORDS: flock'ed by the sweep writing the folder; its pid
# files of these names in a folder without RECORDS were not written by dyn sweep
_OURS = re.compile(r"summary\.csv|index\.html|v\d+-[0-9a-f]{16}\.(csv|parquet|html)")
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
    redo: list = dataclasses.field(default_factory=list)     # (variant, why its earlier result is not kept)
    unlocked: Optional[str] = None                           # why the folder could not be locked, else None

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


def check_record(outdir, key, fmt) -> tuple:
    """(record, problem) of a variant done by an earlier run: (record, None) when it is done (ok or
    diverged, same format, its file there with the size and SHA-256 its record gives);
    (None, why) when a done record's file does not match; (None, None) when there is no done record."""
    record = _read_record(outdir, key)
    if record is None or record.get("status") not in DONE:
        return None, None
    path = record.get("path")
    if not path:  # diverged before its first row: no file
        return record, None
    if Path(path).suffix != f".{fmt}":
        return None, None
    file = Path(outdir) / path
    if not file.is_file():
        return None, f"its trajectory {path} is missing"
    if not isinstance(record.get("bytes"), int) or not isinstance(record.get("sha256"), str):
        return None, f"its record has no size and SHA-256 of {path} (an older dyn) to verify it with"
    size = file.stat().st_size
    if size != record["bytes"]:
        return None, f"its trajectory {path} is {size} bytes, its record says {record['bytes']}"
    if file_sha256(file) != record["sha256"]:
        return None, f"its trajectory {path} has changed (its SHA-256 is not the one in its record)"
    return record, None


def finished_record(outdir, key, fmt) -> Optional[dict]:
    """The record of a variant done by an earlier run, its file verified (`check_record`); else None."""
    return check_record(outdir, key, fmt)[0]


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _latest(outdir, key, fmt) -> Optional[dict]:
    """The last known state of a variant this run has not finished: done before, or failed before."""
    record = _read_record(outdir, key)
    if record is not None and record.get("status") == "failed":
        return record
    return finished_record(outdir, key, fmt)


def store(outdir, task, outcome, fmt, source) -> dict:
    """Write the variant's trajectory, then its record (both atomically, file and folder fsync'ed, so
    that a record on disk means its trajectory is whole); return the record."""
    from ...files.trajectory import atomic_output, write_trajectory

    path, size, digest = None, None, None
    if outcome["data"] is not None:
        path = f"{task.name}-{task.key[:16]}.{fmt}"
        file = Path(outdir) / path
        write_trajectory(file, outcome["names"], outcome["data"], source=source, durable=True)
        size, digest = file.stat().st_size, file_sha256(file)
    record = {"key": task.key, "variant": task.name, "status": outcome["status"], "path": path,
              "bytes": size, "sha256": digest,
              "metrics": outcome["metrics"], "message": outcome["message"],
              "seconds": outcome["seconds"], "worker": outcome["worker"]}
    with atomic_output(_record_path(outdir, task.key), durable=True) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=1) + "\n")
    return record


def summary_row(variant, record) -> dict:
    row = {"variant": variant.name, **variant.params, "status": record["status"], "path": record["path"] or ""}
    row.update(record["metrics"])
    row["bytes"] = record.get("bytes")
    row["sha256"] = record.get("sha256")
    row["hash"] = variant.key[:16]
    row["message"] = record["message"]
    return row


def summary_columns(plan: SweepPlan, rows) -> list:
    """variant, the swept key paths, status, path, energy.final, the other metrics (first seen, variant
    order), bytes and sha256 (of the trajectory file), hash (of the variant), message."""
    head = ["variant", *plan.parameters, "status", "path"]
    tail = ["bytes", "sha256", "hash", "message"]
    cols = dict.fromkeys(head + ["energy.final"])
    for row in rows:
        cols.update(dict.fromkeys(k for k in row if k not in tail))
    return list(cols) + tail


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
        from ...files.trajectory import atomic_output

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
        with atomic_output(path, durable=True) as tmp:
            Path(tmp).write_text(text)
        self.last = time.monotonic()



# ------------------------------------------------------------------ the folder: dyn's, one sweep at a time

class Claim:
    """OUTDIR held by this sweep: the lock file's descriptor (flock'ed) until `release`."""

    def __init__(self, fd):
        self.fd = fd
        self.unlocked = None  # why the folder is not locked (no locks on its file system), else None

    def release(self):
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # closing the last descriptor releases the flock
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def claim(outdir, source=None) -> Claim:
    """Make `outdir` this sweep's (see the module docstring): InputError when it holds files that dyn
    sweep did not write, or when another sweep holds it; else the folder is made if needed, locked,
    and marked with its manifest."""
    outdir = Path(outdir)
    records = outdir / RECORDS
    if outdir.is_dir() and not records.is_dir():
        with os.scandir(outdir) as entries:
            foreign = sorted(e.name for e in entries if _OURS.fullmatch(e.name))
        if foreign:
            raise InputError(f"{outdir}: holds {foreign[0]}, which dyn sweep did not write (the folder has no "
                             f"{RECORDS}/{MANIFEST}); give a new or empty folder, or the folder of an earlier "
                             "dyn sweep")
    try:
        records.mkdir(parents=True, exist_ok=True)
        fd = os.open(records / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise InputError(f"{outdir}: cannot create the output folder: {exc.strerror or exc}") from None
    held = Claim(fd)
    try:
        held.unlocked = _lock(fd, outdir)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        if not (records / MANIFEST).is_file():
            _write_manifest(records / MANIFEST, source)
    except OSError as exc:  # a full disk (ENOSPC), a quota: the caller removes what this made (`unmake`)
        held.release()
        raise InputError(f"{outdir}: cannot start the sweep there: {exc.strerror or exc}") from None
    except BaseException:
        held.release()
        raise
    return held


_RECORD = re.compile(r"([0-9a-f]{64})\.json")


def refuse_another_sweep(outdir, keys) -> None:
    """InputError when `outdir` holds records of variants that are not among `keys` (this sweep's): a
    different sweep, whose summary.csv this one would replace without them. A rerun, or a sweep that
    keeps every variant done (a grid with more values), resumes. Called with the folder claimed."""
    records = Path(outdir) / RECORDS
    try:
        with os.scandir(records) as entries:
            theirs = {m.group(1) for e in entries if (m := _RECORD.fullmatch(e.name))}
    except OSError:
        return
    missing = len(theirs - set(keys))
    if missing:
        try:
            scenario = json.loads((records / MANIFEST).read_text()).get("scenario") or "a scenario not named"
        except (OSError, ValueError, AttributeError):
            scenario = "a scenario not named"
        raise InputError(f"{outdir}: holds the results of another sweep ({scenario}); {missing} of its variants "
                         "are not in this one, and its summary.csv would be replaced without them; give "
                         "another folder, or a sweep that keeps those variants")


def first_missing(outdir) -> Optional[Path]:
    """The outermost folder of `outdir`'s path that does not exist yet (`claim` makes it), or None."""
    outdir = Path(os.path.abspath(outdir))
    missing = None
    for folder in (outdir, *outdir.parents):
        if folder.exists():
            break
        missing = folder
    return missing


def unmake(outdir, made) -> None:
    """Remove what `claim` made for a sweep refused before any variant was written (its scheduler
    could not be reached, its workers cannot run dyn), when `outdir` holds nothing else: the
    header-only summary, the manifest and lock and their folder; then, when `made` is a folder
    (`first_missing` before the claim), `outdir` and its empty parents up to `made`. Anything else
    in it, and it all stays."""
    outdir = Path(os.path.abspath(outdir))
    records = outdir / RECORDS
    try:
        if {e.name for e in os.scandir(outdir)} - {SUMMARY, RECORDS} or \
                {e.name for e in os.scandir(records)} - {MANIFEST, LOCK}:
            return
        for path in (outdir / SUMMARY, records / MANIFEST, records / LOCK):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        records.rmdir()
        folder = outdir
        while made is not None:
            folder.rmdir()
            if folder == made:
                break
            folder = folder.parent
    except OSError:  # (what could not be removed stays: nothing of the user's is in it)
        pass


def _lock(fd, outdir):
    """flock `fd` (InputError naming the holder's pid when another sweep holds it); None when locked,
    else why it could not be (the sweep then runs unlocked)."""
    try:
        import fcntl
    except ImportError:
        return "this system has no flock"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.lseek(fd, 0, os.SEEK_SET)
        pid = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
        raise InputError(f"{outdir}: another dyn sweep (pid {pid}) is writing into this folder; wait for it "
                         "to end, or give another folder") from None
    except OSError as exc:  # a file system without locks (some network file systems)
        return f"its file system refuses locks: {exc.strerror or exc}"
    return None


def _write_manifest(path, source):
    from ... import __version__
    from ...files.output import atomic_output

    manifest = {"dyn-sweep": 1, "written by": f"dyn {__version__}",
                "scenario": None if source is None else str(source),
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "note": "this folder's summary.csv, trajectories and records are written by dyn sweep"}
    with atomic_output(path, durable=True) as tmp:
        Path(tmp).write_text(json.dumps(manifest, indent=1) + "\n")
