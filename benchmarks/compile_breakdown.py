"""Where a first run's compile time goes: per kernel and per phase, CPU seconds of this process.

    DYN_CACHE_DIR=$(mktemp -d) python benchmarks/compile_breakdown.py simulate robots/arm6.urdf --steps 10

runs the `dyn` command given (in this interpreter, after numba's compile events are hooked)
and prints on standard error, from numba's ``numba:compile`` and ``numba:run_pass`` events and timers around
numba's code library (CPUCodeLibrary):

- by phase: the self time (nested compiles excluded) of numba's passes (type inference,
  lowering...) and of LLVM's work: function passes (run on each module as numba adds it),
  module passes (on a kernel's module with every callee's module linked in: numba re-optimises
  the callees' code in each caller) and machine code;
- by kernel: each compiled kernel's self time, its LLVM share, and its inclusive time (its
  callees compiled while it was typed), with its depth in the call tree;
- the costliest kernel's self time by phase.

Use an empty DYN_CACHE_DIR to see a fresh install (every kernel compiled); with a cache where
only some kernels are missing, only those compile (a kernel loaded from the cache brings its
callees' code with it). The timers cost a little: totals are a few percent above a plain run.
"""
import collections
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

clock = time.process_time
_frames = []   # [phase, start, time in nested frames]
_kernels = []  # the kernels being compiled, innermost last
self_time = collections.defaultdict(float)  # (kernel, phase) -> CPU s
inclusive = collections.defaultdict(list)   # kernel -> [(CPU s, depth)], one per compile


def _push(phase):
    _frames.append([phase, clock(), 0.0])


def _pop():
    phase, start, nested = _frames.pop()
    spent = clock() - start
    if _frames:
        _frames[-1][2] += spent
    self_time[(_kernels[-1] if _kernels else "(outside any compile)", phase)] += spent - nested
    return spent


def install():
    from numba.core import codegen, event

    class Listener(event.Listener):
        def on_start(self, ev):
            if ev.kind == "numba:compile":
                f = ev.data["dispatcher"].py_func
                _kernels.append(f"{f.__module__}.{f.__qualname__}")
                _push("numba: compile (dispatcher, cache)")
            else:
                _push("numba: " + re.sub(r" \[.*", "", ev.data["name"]))

        def on_end(self, ev):
            spent = _pop()
            if ev.kind == "numba:compile":
                name = _kernels.pop()
                inclusive[name].append((spent, len(_kernels)))

    listener = Listener()
    event.register("numba:compile", listener)
    event.register("numba:run_pass", listener)

    def timed(attr, phase):
        original = getattr(codegen.CPUCodeLibrary, attr)

        def wrapper(*args, **kw):
            _push(phase)
            try:
                return original(*args, **kw)
            finally:
                _pop()

        setattr(codegen.CPUCodeLibrary, attr, wrapper)

    timed("add_ir_module", "numba: LLVM IR to text and parsed")
    timed("_optimize_functions", "LLVM: function passes")
    timed("finalize", "LLVM: linking, verifying")
    timed("_optimize_final_module", "LLVM: module passes (callees linked in)")
    timed("_finalize_final_module", "LLVM: machine code")


def report(wall, cpu, out=sys.stderr):
    total = sum(self_time.values())
    print(f"\nwall {wall:.1f} s, CPU {cpu:.1f} s (this process), {sum(map(len, inclusive.values()))} compiles", file=out)
    phases = collections.defaultdict(float)
    kernels = collections.defaultdict(lambda: collections.defaultdict(float))
    for (kernel, phase), t in self_time.items():
        phases[phase] += t
        kernels[kernel][phase] += t
    print("\nby phase (CPU s, self):", file=out)
    for phase, t in sorted(phases.items(), key=lambda x: -x[1]):
        if t >= 0.05:
            print(f"  {t:6.2f}  {100 * t / total:4.1f} %  {phase}", file=out)
    print("\nby kernel (CPU s): self, its LLVM share, inclusive per compile, depth", file=out)
    for kernel, by_phase in sorted(kernels.items(), key=lambda x: -sum(x[1].values())):
        own = sum(by_phase.values())
        llvm = sum(t for p, t in by_phase.items() if p.startswith("LLVM"))
        runs = inclusive.get(kernel, [])
        incl = " ".join(f"{t:.2f}" for t, _ in runs) or "-"
        depth = ",".join(str(d) for _, d in runs) or "-"
        if own >= 0.05:
            print(f"  {own:6.2f}  LLVM {llvm:5.2f}  incl {incl:<16} depth {depth:<8} {kernel}", file=out)
    top = max(kernels, key=lambda k: sum(kernels[k].values()), default=None)
    if top is not None:
        print(f"\nthe costliest kernel's phases (CPU s, self): {top}", file=out)
        for phase, t in sorted(kernels[top].items(), key=lambda x: -x[1]):
            if t >= 0.05:
                print(f"  {t:6.2f}  {phase}", file=out)


def main():
    install()
    from cli.main import dyn

    t0, c0 = time.perf_counter(), clock()
    try:
        dyn(sys.argv[1:], prog_name="dyn")
    except SystemExit as exc:
        if exc.code:
            raise
    finally:
        sys.stdout.flush()
    report(time.perf_counter() - t0, clock() - c0)


if __name__ == "__main__":
    main()
