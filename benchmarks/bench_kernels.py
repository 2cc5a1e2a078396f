"""Per-call and per-batch time of dynlib's rnea / crba / aba / frame_jacobian against Pinocchio, one run.

    python benchmarks/bench_kernels.py [--rows 20000] [--calls 20000] [--single]

Prints, per robot: Pinocchio's time per call from Python, dynlib's time per call
from Python, and dynlib's time per row in a batched (compiled-loop) call on one
thread (DYN_THREADS=1) and on every core (the default), with the ratios batched
dynlib / Pinocchio (below 1: dynlib faster). Goal (issue 2): a compiled loop of
ABA at least 2x faster per step than calling pin.aba from Python.

Then (issue 19) one call from Python, dynlib / Pinocchio, of rnea, aba,
frame_jacobian (LOCAL_WORLD_ALIGNED, the last frame), crba, gravity_torques,
nonlinear_effects, frame_placement (pin: forwardKinematics + updateFramePlacement),
kinetic_energy, potential_energy and coriolis_matrix on arm7, ur5 and
talos_reduced (goal <= 1.5), and a batched frame_jacobian of a hand frame on
talos_reduced against a Python loop of pin.computeFrameJacobian (goal <= 0.5).
--single prints only these.
"""
import argparse
import os

import numpy as np
import pinocchio as pin

import dynlib
from dynlib._numba.parallel import threads
from _peers import ROOT, PinMap, best_of, erd

ROBOTS = [
    ("arm6", ROOT / "robots/arm6.urdf", False),
    ("ur5", erd("ur_description/urdf/ur5_robot.urdf"), False),
    ("panda", erd("panda_description/urdf/panda.urdf"), False),
    ("solo12 (floating)", erd("solo_description/robots/solo12.urdf"), True),
    ("talos_reduced (floating)", erd("talos_data/robots/talos_reduced.urdf"), True),
]


SINGLE = [
    ("arm7", ROOT / "robots/arm7.urdf", False),
    ("ur5", erd("ur_description/urdf/ur5_robot.urdf"), False),
    ("talos_reduced (floating)", erd("talos_data/robots/talos_reduced.urdf"), True),
]


def pin_model(path, fb):
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(str(path))
    return pm, pm.createData()


def per_call(fn, calls):
    """Best time of one fn() over 5 runs of `calls` calls, in seconds."""
    return best_of(lambda: [fn() for _ in range(calls)], 5) / calls


def single_calls(calls, rows):
    """Issue 19: one call from Python, and a batched frame_jacobian on talos_reduced."""
    rng = np.random.default_rng(1)
    print(f"one call from Python, best of 5 x {calls} calls (goal dyn/pin <= 1.5)")
    print(f"{'robot':26s} {'alg':17s} {'pin/call':>10s} {'dyn/call':>10s} {'dyn/pin':>8s}")
    for label, path, fb in SINGLE:
        model = dynlib.load(path, floating_base=fb)
        pm, pd = pin_model(path, fb)
        mp = PinMap(model, pm)
        q = dynlib.random_configuration(model, rng, scale=1.0)
        v, a = rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)
        qp, vp, ap = mp.q(q)[0], mp.v(v)[0], mp.v(a)[0]
        frame = model.frame_names[-1]
        fid = pm.getFrameId(frame)
        lwa = pin.LOCAL_WORLD_ALIGNED
        cases = {
            "rnea": (lambda: pin.rnea(pm, pd, qp, vp, ap), lambda: dynlib.rnea(model, q, v, a)),
            "aba": (lambda: pin.aba(pm, pd, qp, vp, ap), lambda: dynlib.aba(model, q, v, a)),
            "frame_jacobian": (lambda: pin.computeFrameJacobian(pm, pd, qp, fid, lwa),
                               lambda: dynlib.frame_jacobian(model, q, frame)),
            "crba": (lambda: pin.crba(pm, pd, qp), lambda: dynlib.crba(model, q)),
            "gravity_torques": (lambda: pin.computeGeneralizedGravity(pm, pd, qp),
                                lambda: dynlib.gravity_torques(model, q)),
            "nonlinear_effects": (lambda: pin.nonLinearEffects(pm, pd, qp, vp),
                                  lambda: dynlib.nonlinear_effects(model, q, v)),
            "frame_placement": (lambda: (pin.forwardKinematics(pm, pd, qp), pin.updateFramePlacement(pm, pd, fid)),
                                lambda: dynlib.frame_placement(model, q, frame)),
            "kinetic_energy": (lambda: pin.computeKineticEnergy(pm, pd, qp, vp),
                               lambda: dynlib.kinetic_energy(model, q, v)),
            "potential_energy": (lambda: pin.computePotentialEnergy(pm, pd, qp),
                                 lambda: dynlib.potential_energy(model, q)),
            "coriolis_matrix": (lambda: pin.computeCoriolisMatrix(pm, pd, qp, vp),
                                lambda: dynlib.coriolis_matrix(model, q, v)),
        }
        for alg, (pin_call, dyn_call) in cases.items():
            dyn_call()  # compiled or loaded here, outside the timings
            tp, td = per_call(pin_call, calls), per_call(dyn_call, calls)
            print(f"{label:26s} {alg:17s} {tp * 1e6:8.2f}us {td * 1e6:8.2f}us {td / tp:8.2f}")
    label, path, fb = SINGLE[-1]
    model = dynlib.load(path, floating_base=fb)
    pm, pd = pin_model(path, fb)
    mp = PinMap(model, pm)
    Q = np.array([dynlib.random_configuration(model, rng, scale=1.0) for _ in range(rows)])
    Qp = mp.q(Q)
    frame = "gripper_left_base_link" if "gripper_left_base_link" in model.frame_names else model.frame_names[-1]
    fid = pm.getFrameId(frame)
    dynlib.frame_jacobian(model, Q[:1], frame)
    tp = best_of(lambda: [pin.computeFrameJacobian(pm, pd, Qp[i], fid, pin.LOCAL_WORLD_ALIGNED)
                          for i in range(rows)], 3) / rows
    cores = str(threads())
    os.environ["DYN_THREADS"] = "1"
    t1 = best_of(lambda: dynlib.frame_jacobian(model, Q, frame), 3) / rows
    os.environ["DYN_THREADS"] = cores
    print(f"\nbatched frame_jacobian of {frame} on {label}, {rows} rows, 1 thread (goal dyn/pin <= 0.5)")
    print(f"  pin loop {tp * 1e6:8.2f}us/row   dyn batch {t1 * 1e6:8.2f}us/row   dyn/pin {t1 / tp:6.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--calls", type=int, default=20000, help="calls per timing of the one-call section")
    ap.add_argument("--single", action="store_true", help="only the one-call and batched-Jacobian section")
    args = ap.parse_args()
    if not args.single:
        batches(args.rows)
        print()
    single_calls(args.calls, args.rows)


def batches(n):
    rng = np.random.default_rng(0)
    cores = threads()
    print(f"batched: per row over {n} rows, on 1 thread and on {cores} (DYN_THREADS or the usable cores)")
    print(f"{'robot':26s} {'alg':5s} {'pin/call':>10s} {'dyn/call':>10s} {'dyn/row 1 thr':>14s} "
          f"{f'dyn/row {cores} thr':>14s} {'1 thr/pin':>10s} {f'{cores} thr/pin':>10s}")
    for label, path, fb in ROBOTS:
        model = dynlib.load(path, floating_base=fb)
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(str(path))
        pd = pm.createData()
        mp = PinMap(model, pm)
        Q = np.array([dynlib.random_configuration(model, rng, scale=1.0) for _ in range(n)])
        V = rng.uniform(-1, 1, (n, model.nv))
        A = rng.uniform(-1, 1, (n, model.nv))
        Qp, Vp, Ap = mp.q(Q), mp.v(V), mp.v(A)
        TAU = dynlib.rnea(model, Q, V, A)
        TAUp = mp.v(TAU)
        # warm up (compilation happens here, outside the timings)
        dynlib.rnea(model, Q[0], V[0], A[0]); dynlib.crba(model, Q[0]); dynlib.aba(model, Q[0], V[0], TAU[0])
        cases = {
            "rnea": (lambda: [pin.rnea(pm, pd, Qp[i], Vp[i], Ap[i]) for i in range(n)],
                     lambda: [dynlib.rnea(model, Q[i], V[i], A[i]) for i in range(n // 10)],
                     lambda: dynlib.rnea(model, Q, V, A)),
            "crba": (lambda: [pin.crba(pm, pd, Qp[i]) for i in range(n)],
                     lambda: [dynlib.crba(model, Q[i]) for i in range(n // 10)],
                     lambda: dynlib.crba(model, Q)),
            "aba": (lambda: [pin.aba(pm, pd, Qp[i], Vp[i], TAUp[i]) for i in range(n)],
                    lambda: [dynlib.aba(model, Q[i], V[i], TAU[i]) for i in range(n // 10)],
                    lambda: dynlib.aba(model, Q, V, TAU)),
        }
        for alg, (pin_loop, dyn_loop, dyn_batch) in cases.items():
            tp = best_of(pin_loop, 3) / n
            td = best_of(dyn_loop, 3) / (n // 10)
            os.environ["DYN_THREADS"] = "1"
            t1 = best_of(dyn_batch, 3) / n
            os.environ["DYN_THREADS"] = str(cores)
            tb = best_of(dyn_batch, 3) / n
            print(f"{label:26s} {alg:5s} {tp * 1e6:8.2f}us {td * 1e6:8.2f}us {t1 * 1e6:12.2f}us {tb * 1e6:12.2f}us "
                  f"{t1 / tp:10.2f} {tb / tp:10.2f}")


if __name__ == "__main__":
    main()
