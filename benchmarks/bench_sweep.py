"""`dyn sweep` throughput (variants per second) on 1 and 2 local worker processes.

    python benchmarks/bench_sweep.py [--variants 8] [--variant-seconds 1.0] [--workers 1,2] [--repeat 2]

The sweep: arm6 under PD control with gravity compensation and URDF joint friction
(the implicit-friction path), a grid over the start posture of the shoulder, each
variant simulated for as long as takes about --variant-seconds of compute here
(calibrated in this process first), one row kept in 1000. For each worker count,
`dynlib.runs.sweep.run_sweep` into a fresh folder, timed end to end (spawning and warming
the workers, simulating, writing every trajectory and summary.csv), best of --repeat:

- start-up: the time to the first finished variant less that variant's own compute
  time (from its record): spawn, imports, kernels loaded from the cache;
- throughput end to end, variants / wall time, and in steady state,
  variants / (wall time - start-up);
- the speed-up over 1 worker, and whether the trajectories are byte-identical to the
  1-worker run.

The machine's load average is printed: other work on the cores skews the ratios (and a
source edit between runs makes the workers compile the kernels again).

Goal (issue 8): >= 1.8x with 2 workers on a 2-core machine for variants of a second or
more. Ratios are printed, never asserted. Planning (validating each variant) is timed
apart: it runs once per sweep in the parent, before any worker starts.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCENARIO = """\
dyn: 1
robot: {robot}
duration: {duration}
initial:
  q: {{shoulder_lift: -0.5, elbow: 0.5}}
control:
  type: pd
  kp: {{shoulder_pan: 400, shoulder_lift: 600, elbow: 300, wrist_1: 30, wrist_2: 20, wrist_3: 10}}
  kd: {{shoulder_pan: 72, shoulder_lift: 86, elbow: 25, wrist_1: 1.0, wrist_2: 0.4, wrist_3: 0.08}}
  target: {{shoulder_pan: 0.5, shoulder_lift: -1.0, elbow: 1.2, wrist_1: -0.3}}
  gravity_compensation: true
joint_friction: from-urdf
output: {{every: 1000, columns: [q, qd, energy]}}
sweep:
  grid:
    initial.q.shoulder_lift: {values}
"""


def scenario(folder, name, duration, n):
    values = [round(-1.0 + 2.0 * i / max(1, n - 1), 6) for i in range(n)]
    path = Path(folder) / f"{name}.yaml"
    path.write_text(SCENARIO.format(robot=ROOT / "robots" / "arm6.urdf", duration=duration, values=values))
    return path


def calibrate(folder, seconds):
    """The simulated duration that takes about `seconds` of compute in this process."""
    from dynlib.runs.scenario import load_scenario
    from dynlib.runs.scenario import run_scenario

    probe = scenario(folder, "probe", 10.0, 1)
    sc = load_scenario(probe)
    run_scenario(sc.model_copy(update={"duration": 0.01}))  # load the kernels
    t0 = time.perf_counter()
    run_scenario(sc)
    per_second = (time.perf_counter() - t0) / 10.0
    return round(seconds / per_second, 1), per_second


def timed_sweep(path, outdir):
    """(plan seconds, a function of workers -> (wall seconds, start-up seconds))."""
    from dynlib.runs.sweep import RECORDS, plan_sweep, run_sweep

    t0 = time.perf_counter()
    plan = plan_sweep(path)
    plan_s = time.perf_counter() - t0

    def run(workers):
        first = []

        def progress(report, variant):
            if variant is not None and not first:
                first.append((time.perf_counter(), variant))

        t1 = time.perf_counter()
        report = run_sweep(plan, outdir, workers=workers, progress=progress)
        wall = time.perf_counter() - t1
        assert report.ok, report.error()
        done_at, variant = first[0]
        record = json.loads((Path(outdir) / RECORDS / f"{variant.key}.json").read_text())
        return wall, done_at - t1 - record["seconds"]

    return plan_s, run


def trajectories(outdir):
    return {p.name: p.read_bytes() for p in sorted(Path(outdir).glob("v*.csv"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", type=int, default=8)
    ap.add_argument("--variant-seconds", type=float, default=1.0)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        duration, per_second = calibrate(tmp, args.variant_seconds)
        path = scenario(tmp, "sweep", duration, args.variants)
        print(f"arm6 PD + friction, {args.variants} variants of {duration:g} s simulated "
              f"(~{duration * per_second:.2f} s of compute each, {per_second * 1e3:.1f} us/step at dt = 1 ms), "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (other work skews the ratios)")
        print(f"{'workers':>7} {'plan s':>7} {'start s':>7} {'wall s':>7} {'var/s':>7} {'steady var/s':>12} "
              f"{'speed-up':>8} {'steady':>7} {'same files':>10}")
        base = None
        for w in counts:
            runs = []
            for r in range(args.repeat):
                out = Path(tmp) / f"out{w}-{r}"
                plan_s, run = timed_sweep(path, out)
                runs.append((*run(w), out))
            wall, startup, out = min(runs)
            rate, steady = args.variants / wall, args.variants / max(wall - startup, 1e-9)
            files = trajectories(out)
            if base is None:
                base = (rate, steady, files)
            same = "yes" if files == base[2] else "NO"
            print(f"{w:>7} {plan_s:>7.2f} {startup:>7.2f} {wall:>7.2f} {rate:>7.3f} {steady:>12.3f} "
                  f"{rate / base[0]:>7.2f}x {steady / base[1]:>6.2f}x {same:>10}")
    print(f"goal: >= 1.8x with 2 workers (2 cores, variants of a second or more); "
          f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":  # the spawned workers import this file as __mp_main__
    sys.exit(main())
