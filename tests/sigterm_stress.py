"""SIGTERM at random times to real `dyn` processes (issue 33 item 6): each process must end within a
few seconds of the signal with the signal's code (143, or -15 before dyn's handler is set) or exit 2,
with no "Fatal Python error", no traceback, no temporary file and no child process left.

`run(n, folder)` sends `n` signals, one per process, cycling through `dyn simulate`, `inverse`,
`identify` and `sweep --workers 2`; each signal's time is uniform over that command's unsignalled run
(measured once, first), so the first 300 ms (imports, the kernel cache's loading, thread pools
starting) get their share. tests/test_faults.py runs a few dozen once (slow mark); the bigger run::

    PYTHONPATH=. python -m tests.sigterm_stress --signals 400 [--jobs 2] [--small] [--only simulate sweep]

prints one line per bad outcome and the counts by outcome.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROBOTS = Path(__file__).resolve().parent.parent / "robots"
HANG = 5.0  # seconds after the signal

SWEEP = """\
dyn: 1
robot: {robot}
dt: 0.001
duration: 1.0
output:
  every: 10
sweep:
  grid:
    initial.q.shoulder_lift: [{grid}]
"""


def prepare(folder: Path, steps: int = 20000, variants: int = 4) -> dict:
    """The inputs (a trajectory, a recording, a sweep scenario) and each command's arguments, by name;
    the output goes to OUT in the trial's own folder. `steps`: simulate's; `variants`: the sweep's."""
    arm6, arm7 = ROBOTS / "arm6.urdf", ROBOTS / "arm7.urdf"
    traj, rec = folder / "traj.csv", folder / "recording.csv"
    _dyn("simulate", arm6, "--steps", "3000", "-o", traj)
    _recording(arm7, rec)
    scenario = folder / "sweep.yaml"
    grid = ", ".join(f"{-1.0 + 0.5 * i:g}" for i in range(variants))
    scenario.write_text(SWEEP.format(robot=arm6, grid=grid))
    return {
        "simulate": ["simulate", arm6, "--steps", str(steps), "-o", "OUT/out.csv"],
        "inverse": ["inverse", arm6, traj, "-o", "OUT/tau.csv"],
        "identify": ["identify", arm7, rec, "-o", "OUT/identified.urdf"],
        "sweep": ["sweep", scenario, "-o", "OUT/sweep", "--workers", "2", "--no-progress"],
    }


def _dyn(*args):
    p = subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"dyn {' '.join(map(str, args))}: {p.stderr}")


def _recording(robot, out, seconds=8.0, rate=200.0):
    """Positions and torques of `robot` moving through a sum of three sines per joint."""
    import numpy as np

    import dynlib

    model, rng = dynlib.load(robot), np.random.default_rng(0)
    t = np.arange(0.0, seconds, 1.0 / rate)
    w = 2 * np.pi * rng.uniform(0.1, 0.6, (3, model.nv))
    amp, phase = rng.uniform(0.1, 0.4, (3, model.nv)), rng.uniform(0, 2 * np.pi, (3, model.nv))
    arg = t[:, None, None] * w + phase
    q = (amp * np.sin(arg)).sum(axis=1)
    v = (amp * w * np.cos(arg)).sum(axis=1)
    a = (-amp * w * w * np.sin(arg)).sum(axis=1)
    tau = dynlib.rnea(model, q, v, a)
    names = ["time"] + [f"q.{n}" for n in model.q_names] + [f"tau.{n}" for n in model.v_names]
    dynlib.write_trajectory(out, names, np.hstack([t[:, None], q, tau]))


def _group(pgid):
    """The pids of the live processes of process group `pgid` (dyn's children keep its group)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            found.append(int(entry.name))
    return found


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[-120:]
    except OSError:
        return "?"


def _state(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


def trial(args, delay, folder: Path) -> tuple[str, str]:
    """One process of `args` signalled `delay` seconds after it started: (outcome, detail)."""
    out, tmp = folder / "out", folder / "tmp"
    out.mkdir(parents=True)
    tmp.mkdir()
    argv = [sys.executable, "-m", "cli.main", *(str(a).replace("OUT", str(out)) for a in args)]
    env = dict(os.environ, TMPDIR=str(tmp))
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    time.sleep(delay)
    if proc.poll() is not None or _state(proc.pid) in "ZX":
        proc.communicate()
        return "ended first", ""
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        stack = _py_stack(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        return "hang", f"delay {delay:.3f}: {stack}"
    err = err.decode(errors="replace")
    end = time.monotonic() + 2.0  # multiprocessing's resource tracker ends when it reads its pipe's end
    while (left := _group(proc.pid)) and time.monotonic() < end:
        time.sleep(0.05)
    left = [(pid, _cmdline(pid)) for pid in left]
    for pid, _ in left:
        os.kill(pid, signal.SIGKILL)
    litter = [str(p.relative_to(folder)) for p in folder.rglob("*")
              if p.is_file() and (p.parent == tmp or ".tmp" in p.name)]
    code = proc.returncode
    detail = f"delay {delay:.3f} exit {code}: {err.strip()[-300:]}"
    if "Fatal Python error" in err:
        return "fatal python error", detail
    if code in (-signal.SIGSEGV, -signal.SIGBUS):
        return "segfault", detail
    if code == -signal.SIGABRT:
        return "abort", detail
    if code == 0:
        return "exit 0 (signal lost)", detail
    if code == 3 or "Traceback" in err or "Error" in err.replace("dyn: error:", ""):
        return "exit 3 or traceback", detail
    if code not in (2, 128 + signal.SIGTERM, -signal.SIGTERM):
        return f"exit {code}", detail
    if left:
        return "children left", f"{detail} ({left} left)"
    if litter:
        return "temporary files left", f"{detail} {litter}"
    return "ok", ""


def _py_stack(pid):
    """Where a hung process is (its threads' kernel wait channels), for the report."""
    chans = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            chans.append((task / "wchan").read_text())
        except OSError:
            pass
    return f"threads {len(chans)} waiting in {sorted(set(chans))}"


def durations(commands, folder: Path) -> dict:
    """Each command's unsignalled wall time, once."""
    found = {}
    for name, args in commands.items():
        case = folder / f"time-{name}"
        (case / "out").mkdir(parents=True)
        argv = [sys.executable, "-m", "cli.main", *(str(a).replace("OUT", str(case / "out")) for a in args)]
        start = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True)
        found[name] = time.monotonic() - start
        if p.returncode:
            raise RuntimeError(f"{argv}: exit {p.returncode}: {p.stderr}")
    return found


def run(n: int, folder: Path, seed: int = 0, names=None, log=None, jobs: int = 1, small: bool = False):
    """`n` signalled processes, `jobs` at a time; the counts by outcome. `log(outcome, name, detail)` sees
    each bad one. `small`: shorter runs (a 5000-step simulate, a sweep of 2 variants), for the test."""
    from concurrent.futures import ThreadPoolExecutor

    commands = prepare(folder, *((5000, 2) if small else ()))
    if names:
        commands = {k: v for k, v in commands.items() if k in names}
    took = durations(commands, folder)
    rng, counts = random.Random(seed), collections.Counter()
    order = list(commands)
    plan = [(i, order[i % len(order)], rng.uniform(0.0, took[order[i % len(order)]])) for i in range(n)]

    def one(case):
        i, name, delay = case
        outcome, detail = trial(commands[name], delay, folder / f"t{i:04d}")
        shutil.rmtree(folder / f"t{i:04d}", ignore_errors=True)
        return name, outcome, detail

    with ThreadPoolExecutor(jobs) as pool:
        for name, outcome, detail in pool.map(one, plan):
            counts[outcome] += 1
            if outcome not in ("ok", "ended first") and log is not None:
                log(outcome, name, detail)
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--signals", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="processes signalled at a time")
    ap.add_argument("--small", action="store_true", help="the test's shorter runs (5000 steps, 2 variants)")
    ap.add_argument("--only", nargs="*", help="commands to run (simulate inverse identify sweep)")
    opts = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        counts = run(opts.signals, Path(tmp), opts.seed, opts.only,
                     lambda outcome, name, detail: print(f"{outcome}: dyn {name}: {detail}", flush=True), opts.jobs,
                     opts.small)
    print(dict(counts))


if __name__ == "__main__":
    main()
