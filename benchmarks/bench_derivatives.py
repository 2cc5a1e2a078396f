"""rnea_derivatives / aba_derivatives against Pinocchio's computeRNEADerivatives / computeABADerivatives.

    python benchmarks/bench_derivatives.py [--rows 1000] [--calls 2000] [--wall]

Per robot (talos_reduced with a free-flyer, panda, and the sample arm7), the same random states:

- batched: dynlib's one call on all the rows (one thread, DYN_THREADS=1: the machine's other cores
  are not the question) per row, against Pinocchio's Python loop over the rows per call. Pinocchio
  returns views into its Data, overwritten by the next call: ``pin`` discards them (the goal's
  reference), ``pin kept`` copies each into (N, nv, nv) arrays as the batched call returns them
  (fresh memory, whose first touch, page faults, costs dynlib's batch 3-7 us per talos row too);
- one call from Python, dynlib's against Pinocchio's.

Ratios dynlib / Pinocchio (below 1: dynlib faster). Goal (issue 35): batched <= 1.0, one call
<= 1.5. Timed in the thread's CPU time (``time.thread_time``, best of 5), not wall time: on a
machine shared with other jobs the wall time measures the others (``--wall`` for wall time).
Prints ratios measured in one run; never asserts on time.
"""
import argparse
import os
import time

import numpy as np
import pinocchio as pin

import dynlib
from _peers import ROOT, PinMap, erd

ROBOTS = [
    ("talos_reduced (floating)", erd("talos_data/robots/talos_reduced.urdf"), True),
    ("panda", erd("panda_description/urdf/panda.urdf"), False),
    ("arm7", ROOT / "robots/arm7.urdf", False),
]
CLOCK = time.thread_time


def best_of(fn, repeat=5):
    """The smallest time of `repeat` calls of fn() on CLOCK, in seconds."""
    best = np.inf
    for _ in range(repeat):
        t0 = CLOCK()
        fn()
        best = min(best, CLOCK() - t0)
    return best


def repeat(fn, calls):
    """`calls` calls of fn(), each result dropped before the next call (as a controller's loop does)."""
    for _ in range(calls):
        fn()


def kept(pin_fn, args, rows, nv):
    """Pinocchio's loop keeping each result in (N, nv, nv) arrays, as a batched call returns them."""
    out = [np.empty((rows, nv, nv)) for _ in range(3)]
    for i in range(rows):
        for o, r in zip(out, pin_fn(*args(i))):
            o[i] = r
    return out


def cases(model, pm, pd, mp, rows, rng):
    """{name: (pin loop, pin loop kept, dyn batch, pin one call, dyn one call)} on `rows` random states."""
    Q = np.array([dynlib.random_configuration(model, rng, scale=1.0) for _ in range(rows)])
    V, A = rng.uniform(-1, 1, (rows, model.nv)), rng.uniform(-1, 1, (rows, model.nv))
    T = dynlib.rnea(model, Q, V, A)
    Qp, Vp, Ap, Tp = mp.q(Q), mp.v(V), mp.v(A), mp.v(T)
    q, v, a, tau, qp, vp, ap, taup = Q[0], V[0], A[0], T[0], Qp[0], Vp[0], Ap[0], Tp[0]
    return {
        "rnea_derivatives": (lambda: [pin.computeRNEADerivatives(pm, pd, Qp[i], Vp[i], Ap[i]) for i in range(rows)],
                             lambda: kept(pin.computeRNEADerivatives, lambda i: (pm, pd, Qp[i], Vp[i], Ap[i]), rows,
                                          pm.nv),
                             lambda: dynlib.rnea_derivatives(model, Q, V, A),
                             lambda: pin.computeRNEADerivatives(pm, pd, qp, vp, ap),
                             lambda: dynlib.rnea_derivatives(model, q, v, a)),
        "aba_derivatives": (lambda: [pin.computeABADerivatives(pm, pd, Qp[i], Vp[i], Tp[i]) for i in range(rows)],
                            lambda: kept(pin.computeABADerivatives, lambda i: (pm, pd, Qp[i], Vp[i], Tp[i]), rows,
                                         pm.nv),
                            lambda: dynlib.aba_derivatives(model, Q, V, T),
                            lambda: pin.computeABADerivatives(pm, pd, qp, vp, taup),
                            lambda: dynlib.aba_derivatives(model, q, v, tau)),
    }


def main():
    global CLOCK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000, help="states of the batched timings")
    ap.add_argument("--calls", type=int, default=2000, help="calls per timing of one call")
    ap.add_argument("--wall", action="store_true", help="wall time instead of the thread's CPU time")
    args = ap.parse_args()
    if args.wall:
        CLOCK = time.perf_counter
    os.environ["DYN_THREADS"] = "1"
    rng = np.random.default_rng(0)
    print(f"per row over {args.rows} rows (batched: dyn on one thread, pin a Python loop); one call: best of 5 x "
          f"{args.calls}; {'wall' if args.wall else 'thread CPU'} time")
    print(f"{'robot':26s} {'alg':17s} {'pin':>8s} {'pin kept':>9s} {'dyn':>8s} {'dyn/pin':>8s} {'/kept':>6s} "
          f"{'pin one':>8s} {'dyn one':>8s} {'one/pin':>8s}")
    for label, path, fb in ROBOTS:
        model = dynlib.load(path, floating_base=fb)
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(str(path))
        pd, mp = pm.createData(), PinMap(model, pm)
        for alg, (pin_loop, pin_kept, dyn_batch, pin_one, dyn_one) in cases(model, pm, pd, mp, args.rows,
                                                                          rng).items():
            dyn_one(), dyn_batch()  # compiled or loaded here, outside the timings
            tp, tk, td = (best_of(f) / args.rows for f in (pin_loop, pin_kept, dyn_batch))
            po, do = (best_of(lambda: repeat(f, args.calls)) / args.calls for f in (pin_one, dyn_one))
            print(f"{label:26s} {alg:17s} {tp * 1e6:6.2f}us {tk * 1e6:7.2f}us {td * 1e6:6.2f}us {td / tp:8.2f} "
                  f"{td / tk:6.2f} {po * 1e6:6.2f}us {do * 1e6:6.2f}us {do / po:8.2f}")


if __name__ == "__main__":
    main()
