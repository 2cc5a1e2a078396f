"""Memory and time of `dyn contact-id --over-time` against the number of rows.

    python benchmarks/bench_contact_id.py [--rows 1000,5000,20000] [--repeat 1]

The motion is scenarios/contact_id_quadruped.csv (a quadruped walking, 1 kHz) repeated
end to end until it has the wanted number of rows. Each size runs in its own child
process (kernels warm from a short run first) through
`dynlib.contact_inverse_dynamics(..., over_time=True, smoothing=100)`, with the four
feet as point contacts (the README's example) and again as 6D contacts. Printed per
size: wall time (best of --repeat), time per 1000 rows (noisy on a busy machine), and the rise of the child's
peak resident memory (ru_maxrss) above its resident memory just before the call (the
motion already loaded), per 1000 rows, and its marginal cost (the rise's growth from
the previous size, per 1000 rows: without the fixed part, batches of 256 rows).
Linear time shows as a flat time per 1000 rows.
Issue 19: the sparse LU took ~30 MB per 1000 rows; goal <= 4 MB. Timings only, never
asserted.
"""
import argparse
import json
import subprocess
import sys
import textwrap

from _peers import ROOT

CHILD = textwrap.dedent('''
    import json, resource, sys, time
    import numpy as np
    import dynlib
    from dynlib.motion.contact_id import contact_inverse_dynamics
    from dynlib.motion.derivatives import motion_from_trajectory

    root, rows, repeat, point = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "point"
    model = dynlib.load(root + "/robots/quadruped.urdf", floating_base=True)
    m = motion_from_trajectory(model, dynlib.read_trajectory(root + "/scenarios/contact_id_quadruped.csv"))
    feet = ["lf_foot", "lh_foot", "rf_foot", "rh_foot"]
    reps = -(-rows // len(m.q))
    q, v, a = (np.ascontiguousarray(np.tile(x, (reps, 1))[:rows]) for x in (m.q, m.v, m.a))
    time_ = np.arange(rows) * 1e-3
    run = lambda n: contact_inverse_dynamics(model, (time_[:n], q[:n], v[:n], a[:n]), feet, point=point,
                                             over_time=True, smoothing=100.0)
    run(50)
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2 ** 20
    before = rss()
    best, peak = np.inf, None
    for _ in range(repeat):
        r = None
        t0 = time.perf_counter()
        r = run(rows)
        best = min(best, time.perf_counter() - t0)
        peak = peak or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the first call's
    print(json.dumps({"time": best, "mem": peak - before, "sum": float(np.abs(r.wrenches).sum())}))
''')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1000,5000,20000", help="comma-separated row counts")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    sizes = [int(s) for s in args.rows.split(",")]
    print("dyn contact-id --over-time --smoothing 100, quadruped (4 feet), one child process per size")
    print(f"{'contacts':>8} {'rows':>7} {'time s':>8} {'s/1000 rows':>12} {'MB/1000 rows':>13} {'marginal':>9} "
          f"{'sum |w|':>14}")
    for kind in ("point", "6d"):
        last = None
        for n in sizes:
            out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(n), str(args.repeat), kind],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            marginal = "" if last is None else f"{1000 * (r['mem'] - last[1]) / (n - last[0]):.2f}"
            print(f"{kind:>8} {n:>7} {r['time']:>8.3f} {1000 * r['time'] / n:>12.4f} "
                  f"{1000 * r['mem'] / n:>13.2f} {marginal:>9} {r['sum']:>14.6e}")
            last = (n, r["mem"])


if __name__ == "__main__":
    main()
