"""What the first run's compile costs under changes to how numba compiles dyn's kernels: CPU seconds.

    python benchmarks/compile_variants.py [--rounds 2] [--variants plain,byref,...]

Runs `dyn simulate scenarios/arm6_fall.yaml` (the README's first scenario: it compiles the one
simulation loop and every kernel it calls) in a fresh process with an empty DYN_CACHE_DIR, once per
variant and round, the variants in turn within each round so that a busy machine's load falls on
each alike, and prints each variant's CPU time (user + system of the child) per round, its median and
its ratio to `plain`, and whether its trajectory is byte for byte plain's. The variants are experiments
on numba's code generation, applied in the child before dyn is imported; none is dyn's code:

- plain: dyn as it is;
- byref: a NamedTuple argument of a compiled function passed as a pointer to a copy of the record
  (numba passes each of its arrays' fields as an argument of its own: the loop's stages take about
  1,200), the callee loading the record from it;
- byref-through: the same, passing the pointer a record was loaded from (a variable's slot, or a field
  of a record passed by pointer) instead of a copy where there is one;
- named-types: the LLVM types of records of more than four fields named (``%"dyn.v.Data.<hash>"``)
  instead of literal, so the IR text does not spell a record's few hundred fields at every use;
- twin-module-passes-off: a kernel compiled for its compiled callers (`dynlib._numba.callees`) not
  optimised as a module with its callees linked in (its caller optimises its code with its own);
- opt2, opt1: LLVM's optimisation level 2 or 1 instead of numba's 3 (``NUMBA_OPT``).

Timings only, never asserted. README, Performance: what the variants measured and why the goal of
issue 31 (the README's scenarios from an empty cache in <= 25 s of CPU) stays out of numba's reach.
"""
import argparse
import filecmp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PATCHES = {
    "byref": "byref(through=False)",
    "byref-through": "byref(through=True)",
    "named-types": "named_types()",
    "twin-module-passes-off": "twin_module_passes_off()",
}
ENVIRONMENT = {"opt2": {"NUMBA_OPT": "2"}, "opt1": {"NUMBA_OPT": "1"}}
VARIANTS = ["plain", *PATCHES, *ENVIRONMENT]

CHILD = textwrap.dedent('''
    import hashlib, sys
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.core.datamodel import models, registry

    I32 = ir.IntType(32)


    def source_pointer(builder, value):
        """The pointer `value` was loaded from (or a field of such a load), else None."""
        if isinstance(value, ir.LoadInstr):
            return value.operands[0]
        if isinstance(value, ir.ExtractValue):
            base = source_pointer(builder, value.aggregate)
            if base is not None:
                return builder.gep(base, [I32(0)] + [I32(i) for i in value.indices], inbounds=True)
        return None


    def byref(through):
        def by_pointer(base):
            class Model(base):
                def get_argument_type(self):
                    return self.get_value_type().as_pointer()

                def as_argument(self, builder, value):
                    ptr = source_pointer(builder, value) if through else None
                    if ptr is not None and ptr.type == self.get_value_type().as_pointer():
                        return ptr
                    slot = cgutils.alloca_once(builder, value.type)
                    builder.store(value, slot)
                    return slot

                def from_argument(self, builder, value):
                    return builder.load(value)
            return Model

        registry.default_manager._handlers[types.NamedTuple] = by_pointer(models.TupleModel)
        registry.default_manager._handlers[types.NamedUniTuple] = by_pointer(models.UniTupleModel)


    def named_types():
        class Model(models.TupleModel):
            def _named(self, kind, elements):
                if len(elements) <= 4:
                    return ir.LiteralStructType(elements)
                digest = hashlib.blake2b(str(self.fe_type).encode(), digest_size=6).hexdigest()
                named = ir.global_context.get_identified_type(
                    f"dyn.{kind}.{self.fe_type.instance_class.__name__}.{digest}")
                if named.is_opaque:
                    named.set_body(*elements)
                return named

            def get_value_type(self):
                if self._value_type is None:
                    self._value_type = self._named("v", [m.get_value_type() for m in self._models])
                return self._value_type

            def get_data_type(self):
                if self._data_type is None:
                    self._data_type = self._named("d", [m.get_data_type() for m in self._models])
                return self._data_type

        registry.default_manager._handlers[types.NamedTuple] = Model


    def twin_module_passes_off():
        from dynlib._numba import callees
        callees.callee_library_class()._optimize_final_module = lambda self: None


    PATCH
    from cli.main import dyn
    dyn(sys.argv[1:], prog_name="dyn")
''')


def run(variant, out, cache):
    """CPU seconds of one first run of arm6_fall under `variant` (its trajectory written to `out`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_OPT")}
    env.update(ENVIRONMENT.get(variant, {}), DYN_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    code = CHILD.replace("PATCH", PATCHES.get(variant, "pass"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, "-c", code, "simulate", "scenarios/arm6_fall.yaml", "-o", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        sys.exit(f"{variant}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    args = ap.parse_args()
    variants = ["plain"] + [v for v in args.variants.split(",") if v != "plain"]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        sys.exit(f"unknown variant(s): {', '.join(sorted(unknown))}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    cpu = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for r in range(args.rounds):
            for v in variants:
                cpu[v].append(run(v, tmp / f"{v}.csv", tmp / f"cache-{v}-{r}"))
                print(f"round {r + 1}: {v:24s} {cpu[v][-1]:6.1f} s", flush=True)
        base = statistics.median(cpu["plain"])
        print(f"\n{'variant':24s} {'CPU s per round':>24s} {'median':>7s} {'/ plain':>8s}  same trajectory")
        for v in variants:
            same = filecmp.cmp(tmp / "plain.csv", tmp / f"{v}.csv", shallow=False)
            rounds = " ".join(f"{c:5.1f}" for c in cpu[v])
            print(f"{v:24s} {rounds:>24s} {statistics.median(cpu[v]):7.1f} {statistics.median(cpu[v]) / base:8.2f}  "
                  f"{'yes' if same else 'NO'}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
