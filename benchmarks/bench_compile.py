"""What the README's sample scenarios cost from an empty kernel cache: CPU seconds per command.

    python benchmarks/bench_compile.py [--warm] [--keep-cache DIR]

Runs every ``dyn simulate scenarios/<file>.yaml`` command of the README (the first command of each
scenario file, in the README's order: twelve today), one after another, each in a fresh process,
with ``DYN_CACHE_DIR`` an empty temporary folder (or DIR with --keep-cache, kept afterwards), and
prints for each command its CPU time (user + system of the child process), its wall time and
whether it printed dyn's one-time "compiling" notice; then the total. With --warm the same
commands run a second time on the cache the first pass filled: the per-process floor of a run that
compiles nothing. Outputs go to a temporary folder. Timings only, never asserted.
"""
import argparse
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands():
    """The README's ``dyn simulate scenarios/*.yaml`` commands, the first of each scenario file, as argv lists."""
    seen, commands = set(), []
    for line in (ROOT / "README.md").read_text().splitlines():
        m = re.match(r"(dyn simulate (scenarios/\S+\.yaml)\b[^#]*)", line.strip())
        if not m or m[2] in seen:
            continue
        seen.add(m[2])
        commands.append(shlex.split(m[1]))
    return commands


def run_all(commands, env, out):
    rows = []
    for argv in commands:
        argv = list(argv)
        if "-o" in argv:
            k = argv.index("-o") + 1
            argv[k] = str(out / Path(argv[k]).name)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "cli.main", *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                           text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        compiled = "compiling" in p.stderr
        if p.returncode not in (0, 1):
            sys.exit(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr}")
        rows.append((" ".join(argv[:3]), cpu, wall, compiled))
    return rows


def report(title, rows):
    print(f"\n{title}")
    print(f"{'command':<58} {'CPU s':>7} {'wall s':>7}  compiled")
    for name, cpu, wall, compiled in rows:
        print(f"{name:<58} {cpu:7.2f} {wall:7.2f}  {'yes' if compiled else 'no'}")
    print(f"{'total (' + str(len(rows)) + ' commands)':<58} {sum(r[1] for r in rows):7.2f} "
          f"{sum(r[2] for r in rows):7.2f}  {sum(r[3] for r in rows)} compiled")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm", action="store_true", help="run the commands again on the filled cache")
    ap.add_argument("--keep-cache", type=Path, help="use this (empty) folder as the cache and keep it")
    args = ap.parse_args()
    commands = readme_commands()
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.keep_cache or Path(tmp) / "cache"
        if cache.exists() and any(cache.iterdir()):
            sys.exit(f"{cache} is not empty: the benchmark starts from an empty cache")
        env = {**os.environ, "DYN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
        out = Path(tmp) / "out"
        out.mkdir()
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
        report("from an empty kernel cache", run_all(commands, env, out))
        if args.warm:
            report("again, on the cache the first pass filled", run_all(commands, env, out))
        print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
