"""Start-up time and peak memory of whole `dyn` commands, one run, warm caches.

    python benchmarks/bench_startup.py [--repeat 5] [--steps 100000] [--rows 200000] [--first-run]

(e) the start-up goals, each ratio of two best-of-`--repeat` wall times measured in this run:
    `dyn --help` against `python -c "import numpy"` (issue #10: ratio <= 2), and a 10-step
    `dyn simulate arm6 -o CSV` (kernels loaded from dyn's kernel cache) against
    `python -c "import numba, numpy"`, the floor of any run that loads a compiled kernel
    (issue #36: ratio <= 1.5, i.e. what dyn adds beyond numba's import <= 0.14 s); the run twice:
    as this checkout runs it (under PYTHONDONTWRITEBYTECODE=1 an editable install compiles every
    module of dynlib and cli at every run) and with dyn's bytecode cached (a PYTHONPYCACHEPREFIX in
    a temporary folder, PYTHONDONTWRITEBYTECODE unset: what an install that keeps bytecode pays,
    as numba's and numpy's own imports do); `python -c "import pinocchio"` for the record (issue #19's
    reference); then where that run's time goes, stage by stage in fresh processes (numba's import,
    dynlib's kernel modules, the scenario package (a robot path's options are checked without
    pydantic: dynlib.runs.scenario.plain), loading the robot, the cached loop's load, the run, the
    CSV write (a small table without pyarrow: dynlib.files.trajectory.csv_text), the exit);
(f) peak resident memory (ru_maxrss of the child) of `dyn simulate` with --steps and
    of `dyn inverse` on --rows rows, CSV in and out;
(g) with --first-run: the 10-step `dyn simulate` on a fresh install, every kernel
    compiled (an empty DYN_CACHE_DIR; goal of issue #19: <= 30 s): its wall time, the CPU time
    (user + sys) of its process tree, and the load average before and after (the machine may be
    shared: wall time above CPU time means the run waited for a core). Minutes, so not by default.
    Where that time goes, per kernel and per phase: benchmarks/compile_breakdown.py.
"""
import os
import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _peers import ROOT, best_of

DYN = [sys.executable, "-m", "cli.main"]

# the stages of `dyn simulate ROBOT --steps 10 -o OUT` in one fresh process (what cli/simulate calls),
# each printed as "name seconds" (the interpreter's own start is timed apart: `python -c pass`)
STAGES = """
import sys, time
T = [time.perf_counter()]
out = []
def mark(name):
    T.append(time.perf_counter()); out.append(f"{name} {T[-1] - T[-2]:.6f}")
import click; mark("click")
import numpy, numba; mark("numba+numpy")
import dynlib.files.urdf, dynlib.sim.simulate, dynlib.sim.controllers, dynlib.sim.contact; mark("dynlib-kernel-modules")
import dynlib.runs.scenario; mark("scenario-package")
from dynlib.runs.scenario import load_scenario, run
from dynlib.sim.simulate import loop_is_cached
sc = load_scenario(sys.argv[1], {"steps": 10, "output.path": sys.argv[2]}); mark("load_scenario")
loop_is_cached(); mark("loop_is_cached")
r = run(sc); mark("run")
r.write(sc.output_path, sc.output.columns, source=sc.robot); mark("write")
import gc; gc.freeze()  # as the console script does at its end (cli.main.run)
print(" ".join(out), "end", time.time())
"""
FLOOR = ("python -c pass", "numba+numpy")  # what `python -c "import numba, numpy"` does too


def peak_mb(cmd):
    """Peak resident memory of one run of cmd, in MB (Linux ru_maxrss is in KB)."""
    script = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", script, *cmd], check=True, capture_output=True, text=True, cwd=ROOT)
    return int(out.stdout.strip()) / 1024.0


def wall_and_cpu(fn):
    """Wall time of fn() and the CPU time (user + sys) of the child processes it waited for."""
    import resource
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(cmd, env=None):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--first-run", action="store_true", help="also time a run that compiles every kernel")
    args = ap.parse_args()
    arm6 = str(ROOT / "robots" / "arm6.urdf")
    sim10 = DYN + ["simulate", arm6, "--steps", "10", "-o", os.devnull]
    run(sim10)  # warm the caches
    t_numpy = best_of(lambda: run([sys.executable, "-c", "import numpy"]), args.repeat)
    t_help = best_of(lambda: run(DYN + ["--help"]), args.repeat)
    t_numba = best_of(lambda: run([sys.executable, "-c", "import numba, numpy"]), args.repeat)
    t_sim10 = best_of(lambda: run(sim10), args.repeat)
    with tempfile.TemporaryDirectory() as pycache:
        env = dict(os.environ, PYTHONPYCACHEPREFIX=pycache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        run(sim10, env)  # writes the bytecode
        t_sim10_bc = best_of(lambda: run(sim10, env), args.repeat)
    t_pin = best_of(lambda: run([sys.executable, "-c", "import pinocchio"]), args.repeat)
    print(f"start-up, best of {args.repeat}:")
    print(f"  python -c 'import numpy'                 {t_numpy:.3f} s")
    print(f"  dyn --help                               {t_help:.3f} s   ratio {t_help / t_numpy:.2f} (goal <= 2)")
    print(f"  python -c 'import numba, numpy'          {t_numba:.3f} s   (the floor of a run that loads a kernel)")
    for label, t in (("dyn simulate arm6 --steps 10", t_sim10), ("the same, dyn's bytecode cached", t_sim10_bc)):
        print(f"  {label:40s} {t:.3f} s   ratio {t / t_numba:.2f} (goal <= 1.5), dyn adds {t - t_numba:.3f} s "
              "(goal <= 0.14 s)")
    print(f"  python -c 'import pinocchio'             {t_pin:.3f} s   (the 10 steps, bytecode cached: "
          f"{t_sim10_bc / t_pin:.2f} x)")
    print(f"where a 10-step run's time goes, each stage's best of {args.repeat} fresh processes "
          "(bytecode cached; numba and numpy imported first, as the run's first kernel module does):")
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPYCACHEPREFIX=str(Path(tmp) / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        stages = [sys.executable, "-c", STAGES, arm6, str(Path(tmp) / "s.csv")]
        run(stages, env)  # writes the bytecode
        for _ in range(args.repeat):
            out = subprocess.run(stages, check=True, capture_output=True, text=True, cwd=ROOT, env=env).stdout.split()
            ended = time.time()
            for name, t in zip(out[::2], out[1::2]):
                if name == "end":  # the exit: from the child's last print to the end of the wait for it
                    name, t = "exit", ended - float(t)
                best[name] = min(best.get(name, float("inf")), float(t))
        best["python -c pass"] = best_of(lambda: run([sys.executable, "-c", "pass"], env), args.repeat)
    for name, t in best.items():
        print(f"  {name:34s} {t:.3f} s")
    floor = sum(best[k] for k in FLOOR)
    added = sum(best.values()) - floor
    print(f"  the interpreter and numba+numpy: {floor:.3f} s; the other stages, what dyn adds: {added:.3f} s "
          "(goal <= 0.14 s)")
    if args.first_run:
        load0 = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, DYN_CACHE_DIR=cache)
            t_first, cpu_first = wall_and_cpu(lambda: run(DYN + ["simulate", arm6, "--steps", "10"], env))
        print(f"  the same, first run (empty DYN_CACHE_DIR, every kernel compiled)   {t_first:.1f} s (goal <= 30 s), "
              f"CPU (user + sys) {cpu_first:.1f} s, load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after")
    with tempfile.TemporaryDirectory() as tmp:
        traj = Path(tmp) / "traj.csv"
        sim = DYN + ["simulate", arm6, "--steps", str(args.rows - 1), "--no-joint-friction", "-o", str(traj)]
        run(sim)
        print("\npeak memory (ru_maxrss), one run each:")
        big_sim = DYN + ["simulate", arm6, "--steps", str(args.steps), "-o", str(Path(tmp) / "s.csv")]
        print(f"  dyn simulate arm6 --steps {args.steps} -o CSV   {peak_mb(big_sim):8.1f} MB")
        print(f"  dyn inverse arm6 on {args.rows} rows, CSV        "
              f"{peak_mb(DYN + ['inverse', arm6, str(traj), '-o', str(Path(tmp) / 'tau.csv')]):8.1f} MB")
        print(f"  (python -c 'import numpy'                        {peak_mb([sys.executable, '-c', 'import numpy']):8.1f} MB)")


if __name__ == "__main__":
    main()
