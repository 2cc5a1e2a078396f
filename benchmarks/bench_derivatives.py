"""rnea_derivatives / aba_derivatives against Pinocchio's computeRNEADerivatives / computeABADerivatives.

    python benchmarks/bench_derivatives.py [--rows 2000] [--calls 5000]

Per robot (talos_reduced with a free-flyer, panda, a 7-DoF arm, and the sample arm7): Pinocchio's
time per call in a Python loop over the rows, dynlib's time per row in one batched call (DYN_THREADS=1,
one thread, and on every core) and dynlib's one call from Python against one Pinocchio call, the same
states. Ratios dynlib / Pinocchio (below 1: dynlib faster). Goal (issue 35): batched <= 1.0x Pinocchio's
loop, one call <= 1.5x. Prints ratios measured in one run; never asserts on time.
"""
import argparse
import os

import numpy as np
import pinocchio as pin

import dynlib
from dynlib._numba.parallel import threads
from _peers import ROOT, PinMap, best_of, erd

ROBOTS = [
    ("talos_reduced (floating)", erd("talos_data/robots/talos_reduced.urdf"), True),
    ("panda", erd("panda_description/urdf/panda.urdf"), False),
    ("arm7", ROOT / "robots/arm7.urdf", False),
]


def cases(model, pm, pd, mp, rows, rng):
    """{name: (pin loop, dyn batch, pin one call, dyn one call)} on `rows` random states."""
    Q = np.array([dynlib.random_configuration(model, rng, scale=1.0) for _ in range(rows)])
    V, A = rng.uniform(-1, 1, (rows, model.nv)), rng.uniform(-1, 1, (rows, model.nv))
    T = dynlib.rnea(model, Q, V, A)
    Qp, Vp, Ap, Tp = mp.q(Q), mp.v(V), mp.v(A), mp.v(T)
    q, v, a, tau, qp, vp, ap, taup = Q[0], V[0], A[0], T[0], Qp[0], Vp[0], Ap[0], Tp[0]
    return {
        "rnea_derivatives": (lambda: [pin.computeRNEADerivatives(pm, pd, Qp[i], Vp[i], Ap[i]) for i in range(rows)],
                             lambda: dynlib.rnea_derivatives(model, Q, V, A),
                             lambda: pin.computeRNEADerivatives(pm, pd, qp, vp, ap),
                             lambda: dynlib.rnea_derivatives(model, q, v, a)),
        "aba_derivatives": (lambda: [pin.computeABADerivatives(pm, pd, Qp[i], Vp[i], Tp[i]) for i in range(rows)],
                            lambda: dynlib.aba_derivatives(model, Q, V, T),
                            lambda: pin.computeABADerivatives(pm, pd, qp, vp, taup),
                            lambda: dynlib.aba_derivatives(model, q, v, tau)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000, help="states of the batched timings")
    ap.add_argument("--calls", type=int, default=5000, help="calls per timing of one call")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    cores = str(threads())
    print(f"batched: per row over {args.rows} rows (pin: a Python loop); one call: best of 5 x {args.calls}")
    print(f"{'robot':26s} {'alg':17s} {'pin/row':>9s} {'dyn 1 thr':>10s} {f'dyn {cores} thr':>10s} "
          f"{'1 thr/pin':>9s} {f'{cores} thr/pin':>9s} {'pin one':>9s} {'dyn one':>9s} {'one/pin':>8s}")
    for label, path, fb in ROBOTS:
        model = dynlib.load(path, floating_base=fb)
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(str(path))
        pd, mp = pm.createData(), PinMap(model, pm)
        for alg, (pin_loop, dyn_batch, pin_one, dyn_one) in cases(model, pm, pd, mp, args.rows, rng).items():
            dyn_one(), dyn_batch()  # compiled or loaded here, outside the timings
            tp = best_of(pin_loop, 3) / args.rows
            os.environ["DYN_THREADS"] = "1"
            t1 = best_of(dyn_batch, 3) / args.rows
            os.environ["DYN_THREADS"] = cores
            tb = best_of(dyn_batch, 3) / args.rows
            po = best_of(lambda: [pin_one() for _ in range(args.calls)], 5) / args.calls
            do = best_of(lambda: [dyn_one() for _ in range(args.calls)], 5) / args.calls
            print(f"{label:26s} {alg:17s} {tp * 1e6:7.2f}us {t1 * 1e6:8.2f}us {tb * 1e6:8.2f}us {t1 / tp:9.2f} "
                  f"{tb / tp:9.2f} {po * 1e6:7.2f}us {do * 1e6:7.2f}us {do / po:8.2f}")


if __name__ == "__main__":
    main()
