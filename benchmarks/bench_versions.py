"""Step time of several versions of dyn, alternating in one session: CPU µs per step, best over rounds.

    python benchmarks/bench_versions.py /path/to/old /path/to/new [--rounds 4] [--steps 20000]

Each path is a checkout of dyn (a `git worktree add --detach /tmp/old <commit>` makes one). Every
round runs one child process per checkout, in turn, with that checkout first on PYTHONPATH; the child
simulates arm6 (dt = 1 ms, energy off) in four cases: bilateral and soft contact at the last frame
(the ground 1 cm above it), semi-implicit and rk4, and a semi-implicit run without joint friction,
each warmed up once, then timed best of 5 (CPU time of the process). Every case runs with
`limits=False` where a version has that argument (probed with a one-step run): since the limits stage
(issue 28) the arm of the no-contact case rests on its joint limits for most rows, where older
versions swing through them, so with the limits on it would not be the same work; the table marks
each version/case that ran with the limits off with `*`. Alternating the versions makes a busy
machine's load fall on each alike; the table gives each version's best over the rounds and its
ratio to the first path. Only `dynlib.simulate`'s public arguments are used, so any version since
the one-loop change runs. Timings only, never asserted.
"""
import argparse
import os
import subprocess
import sys
from collections import defaultdict

CHILD = r"""
import sys, time, numpy as np
import dynlib
from dynlib import simulate
model = dynlib.load(sys.argv[1] + "/robots/arm6.urdf")
steps = int(sys.argv[2])
q0 = np.array([0.2, -0.6, 0.8, -0.4, 0.3, 0.1])
frame = model.frame_names[-1]
height = float(np.asarray(dynlib.frame_placement(model, q0, frame))[2, 3]) + 0.01
try:  # the limits stage and its switch (issue 28); older versions have neither
    simulate(model, q0, dt=1e-3, steps=1, energy=False, limits=False)
    off = {"limits": False}
except TypeError:
    off = {}
for name, scheme in [("bilateral", "semi-implicit"), ("bilateral", "rk4"), ("none", "semi-implicit"),
                     ("soft", "semi-implicit")]:
    kw = dict(integrator=scheme, **off)
    if name == "none":
        kw["joint_friction"] = False
    else:
        kw["contacts"] = {"model": name, "points": [{"frame": frame}], "ground": {"height": height}}
    simulate(model, q0, dt=1e-3, steps=10, energy=False, **kw)
    cpu = float("inf")
    for _ in range(5):
        c0 = time.process_time()
        simulate(model, q0, dt=1e-3, steps=steps, energy=False, **kw)
        cpu = min(cpu, time.process_time() - c0)
    print(f"{name}/{scheme} {cpu / steps * 1e6:.4f} {'*' if off else ''}", flush=True)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="checkouts of dyn; the first is the reference")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20_000)
    args = ap.parse_args()
    best = defaultdict(dict)
    off = set()  # (case, path) run with limits=False
    for r in range(args.rounds):
        for path in args.paths:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
            out = subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(path), str(args.steps)], env=env,
                                 capture_output=True, text=True, check=True, cwd=path).stdout
            for line in out.splitlines():
                case, us, *mark = line.split()
                best[case][path] = min(best[case].get(path, float("inf")), float(us))
                if mark:
                    off.add((case, path))
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    ref = args.paths[0]
    print(f"CPU µs per step, best of {args.rounds} rounds × 5 runs; ratio to {ref}; * ran with limits=False")
    for case, times in best.items():
        cells = "  ".join(f"{p}: {t:.3f}{'*' if (case, p) in off else ''} ({t / times[ref]:.2f})"
                          for p, t in times.items())
        print(f"{case:26s} {cells}")


if __name__ == "__main__":
    main()
