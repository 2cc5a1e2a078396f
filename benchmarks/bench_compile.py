"""What the README's sample scenarios cost from an empty kernel cache: CPU seconds per command.

    python benchmarks/bench_compile.py [--warm] [--keep-cache DIR] [TREE ...]

Runs every ``dyn simulate scenarios/<file>.yaml`` command of the README (the first command of each
scenario file, in the README's order: twelve today), one after another, each in a fresh process,
with ``DYN_CACHE_DIR`` an empty temporary folder (or DIR with --keep-cache, kept afterwards), and
prints for each command its CPU time (user + system of the child process), its wall time and
whether it printed dyn's one-time "compiling" notice; then the total. With --warm the same
commands run a second time on the cache the first pass filled: the per-process floor of a run that
compiles nothing. Outputs go to a temporary folder. Timings only, never asserted.

With TREE arguments (checkouts of dyn, e.g. /work/main), each command runs in this checkout and then
in each TREE (its own empty cache, the TREE first on PYTHONPATH), in turn, so that a busy machine's
load falls on each alike; the table then gives each tree's column and its ratio to this checkout, and
whether each tree's output files are byte for byte this checkout's.

Python's bytecode: the children read it from a folder of their own (``PYTHONPYCACHEPREFIX``, one per
tree; ``PYTHONDONTWRITEBYTECODE`` removed), filled before the timed runs (dyn's sources, and the
modules that importing the command and compiling a numba function load), as on an install; with
--no-bytecode the environment's setting stands (with ``PYTHONDONTWRITEBYTECODE`` set, every command
compiles every source it imports: about 0.15 s of CPU each).
"""
import argparse
import filecmp
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


def run_one(argv, tree, env, out):
    """(command, CPU s, wall s, compiled) of one README command run in the checkout `tree`."""
    argv = list(argv)
    if "-o" in argv:
        k = argv.index("-o") + 1
        argv[k] = str(out / Path(argv[k]).name)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "cli.main", *argv[1:]], cwd=tree, env=env, capture_output=True,
                       text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode not in (0, 1):
        sys.exit(f"{tree}: {' '.join(argv)}: exit {p.returncode}\n{p.stderr}")
    return " ".join(argv[:3]), cpu, wall, "compiling" in p.stderr


def fill_bytecode(tree, env):
    """Compile the bytecode of `tree`'s sources and of the modules a command loads, untimed (see the docstring)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "dynlib", "cli"], cwd=tree, env=env, check=True,
                   capture_output=True)
    warm = "import cli.main, cli.simulate, dynlib.runs.scenario.run, numba; numba.njit(lambda x: x + 1)(1.0)"
    subprocess.run([sys.executable, "-c", warm], cwd=tree, env=env, check=True, capture_output=True)


def run_all(commands, trees, envs, outs):
    """For each tree, its rows; the commands in order, each run in every tree in turn."""
    rows = {tree: [] for tree in trees}
    for argv in commands:
        for tree in trees:
            rows[tree].append(run_one(argv, tree, envs[tree], outs[tree]))
    return rows


def report(title, rows):
    trees = list(rows)
    ref = rows[trees[0]]
    print(f"\n{title}")
    head = f"{'command':<58} {'CPU s':>7} {'wall s':>7}  compiled"
    for tree in trees[1:]:
        head += f" | {tree}: CPU s (ratio), compiled"
    print(head)
    for i, (name, cpu, wall, compiled) in enumerate(ref):
        line = f"{name:<58} {cpu:7.2f} {wall:7.2f}  {'yes' if compiled else 'no'}"
        for tree in trees[1:]:
            _, c, _, comp = rows[tree][i]
            line += f" | {c:7.2f} ({c / cpu:.2f}) {'yes' if comp else 'no'}"
        print(line)
    total = sum(r[1] for r in ref)
    line = f"{'total (' + str(len(ref)) + ' commands)':<58} {total:7.2f} {sum(r[2] for r in ref):7.2f}  " \
           f"{sum(r[3] for r in ref)} compiled"
    for tree in trees[1:]:
        t = sum(r[1] for r in rows[tree])
        line += f" | {t:7.2f} ({t / total:.2f}) {sum(r[3] for r in rows[tree])} compiled"
    print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm", action="store_true", help="run the commands again on the filled cache")
    ap.add_argument("--keep-cache", type=Path, help="use this (empty) folder as this checkout's cache and keep it")
    ap.add_argument("--no-bytecode", action="store_true", help="leave Python's bytecode caching as the "
                    "environment sets it")
    ap.add_argument("trees", nargs="*", type=Path, help="other checkouts of dyn to run in turn with this one")
    args = ap.parse_args()
    commands = readme_commands()
    trees = [ROOT, *(t.resolve() for t in args.trees)]
    with tempfile.TemporaryDirectory() as tmp:
        envs, outs = {}, {}
        for k, tree in enumerate(trees):
            cache = args.keep_cache if args.keep_cache and k == 0 else Path(tmp) / f"cache{k}"
            if cache.exists() and any(cache.iterdir()):
                sys.exit(f"{cache} is not empty: the benchmark starts from an empty cache")
            envs[tree] = {**os.environ, "DYN_CACHE_DIR": str(cache), "PYTHONPATH": str(tree)}
            if not args.no_bytecode:
                envs[tree].pop("PYTHONDONTWRITEBYTECODE", None)
                envs[tree]["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / f"pyc{k}")
                fill_bytecode(tree, {**envs[tree], "DYN_CACHE_DIR": str(Path(tmp) / f"scratch{k}")})
            outs[tree] = Path(tmp) / f"out{k}"
            outs[tree].mkdir()
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
        report("from an empty kernel cache", run_all(commands, trees, envs, outs))
        for tree in trees[1:]:
            differ = [p.name for p in sorted(outs[ROOT].iterdir())
                      if not filecmp.cmp(p, outs[tree] / p.name, shallow=False)]
            print(f"outputs of {tree}: " + (f"differ: {', '.join(differ)}" if differ else "byte for byte the same"))
        if args.warm:
            report("again, on the cache the first pass filled", run_all(commands, trees, envs, outs))
        print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
