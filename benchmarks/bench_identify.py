"""Identification time for 60 s of 1 kHz data on a 7-DoF arm, its split, and Pinocchio's regressor as a peer.

    python benchmarks/bench_identify.py [--robot arm7|panda|PATH.urdf] [--seconds 60]

The recording: a Fourier excitation of the robot (`dynlib.excitation`, not
optimised), torques of the robot with 10 % heavier links plus its joint friction
and 1 % noise, q, qd, qdd given. Prints:

- `dynlib.identify` on the recording in memory (best of 3), split into reading the
  recording (q, v, a, torques), the regressor and its normal equations per DoF
  (the compiled pass over every sample), the base parameters and weighted least
  squares, and the estimate (the regularised solution and the SDP), on one thread
  (DYN_THREADS=1) and on every core;
- the whole `dyn identify` command on the same data as a CSV file (best of 2);
- the peer for the pass over the samples: Pinocchio's computeJointTorqueRegressor
  called per sample from Python, with the same per-DoF normal equations summed by
  numpy, against dyn's pass (ratio below 1: dyn faster); and the regressor alone,
  Pinocchio's loop against `dynlib.regressor` batched over the same samples.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

import dynlib
from dynlib.motion.identification import estimate as E
from dynlib.motion.inverse import joint_friction_torques
from dynlib._numba.parallel import threads
from dynlib.files.trajectory import Trajectory, column_names, write_trajectory
from _peers import ROOT, PinMap, best_of, erd

ROBOTS = {"arm7": ROOT / "robots/arm7.urdf", "panda": None}
CHUNK = 10_000


def recording(model, seconds):
    ex = dynlib.excitation(model, seconds, 5, iterations=0, seed=0)
    tau = 1.1 * dynlib.rnea(model, ex.q, ex.v, ex.a) + joint_friction_torques(model, ex.v)
    tau += 0.01 * np.sqrt(np.mean(tau ** 2, axis=0)) * np.random.default_rng(0).normal(size=tau.shape)
    names = column_names(model.q_names, model.v_names, ("q", "qd", "qdd", "tau"))
    return Trajectory(names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau])), ex


def pinocchio_pass(model, pm, mp, ex, tau):
    """Pinocchio's regressor per sample and numpy's per-DoF normal equations (the same as dyn's pass)."""
    pd = pm.createData()
    lm = E.LinearModel(model)
    G = [np.zeros((c.size + 1, c.size + 1)) for c in lm.active]
    cols = np.concatenate([10 * (j - 1) + np.arange(10) for j in
                           [1 if n == "root" else pm.getJointId(n) for n in model.joint_names]])
    n = len(ex.time)
    for s in range(0, n, CHUNK):
        e = min(s + CHUNK, n)
        Qp, Vp, Ap = mp.q(ex.q[s:e]), mp.v(ex.v[s:e]), mp.v(ex.a[s:e])
        Y = np.empty((e - s, pm.nv, 10 * (pm.njoints - 1)))
        for i in range(e - s):
            Y[i] = pin.computeJointTorqueRegressor(pm, pd, Qp[i], Vp[i], Ap[i])
        W = np.concatenate([Y[:, mp.v_perm][:, :, cols],
                            E.friction_regressor(model, ex.v[s:e], lm.terms, lm.smoothing)], axis=2)
        for k, c in enumerate(lm.active):
            A = np.empty((e - s, c.size + 1))
            A[:, :-1] = W[:, k, c] * lm.scale[c]
            A[:, -1] = tau[s:e, k]
            G[k] += A.T @ A
    return G


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="arm7", help="arm7, panda, or the path of a fixed-base URDF")
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    path = ROBOTS.get(args.robot) if args.robot in ROBOTS else Path(args.robot)
    if path is None:
        path = erd("panda_description/urdf/panda.urdf")
    model = dynlib.load(path)
    traj, ex = recording(model, args.seconds)
    n = len(traj)
    cores = threads()
    print(f"{args.robot}: nv = {model.nv}, {n} samples ({args.seconds:g} s at 1 kHz)")
    dynlib.identify(model, [traj])  # compile / load the kernels outside the timings
    for label, k in (("1 thread", 1), (f"{cores} threads", cores)):
        os.environ["DYN_THREADS"] = str(k)
        best, split = np.inf, None
        for _ in range(3):
            t0 = time.perf_counter()
            res = dynlib.identify(model, [traj])
            t = time.perf_counter() - t0
            if t < best:
                best, split = t, dict(res.timings)
        parts = ", ".join(f"{name} {sec:.3f}" for name, sec in split.items())
        print(f"dynlib.identify, {label}: {best:.3f} s ({parts})")
    os.environ.pop("DYN_THREADS", None)
    print(f"  base parameters {res.base.rank} of {res.lm.p}; condition number {res.wls.condition:.4g}; "
          f"relative rms error {100 * res.relative_rms_error():.2f} %; solver {res.status}")

    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "recording.csv"
        write_trajectory(csv, traj.names, traj.data)
        cmd = [sys.executable, "-m", "cli.main", "-q", "identify", str(path), str(csv), "-o", str(Path(tmp) / "id.urdf")]
        subprocess.run(cmd, check=True)
        t_cmd = best_of(lambda: subprocess.run(cmd, check=True), 2)
    print(f"dyn identify (whole command, CSV {csv.name}): {t_cmd:.3f} s")

    pm = pin.buildModelFromUrdf(str(path))
    mp = PinMap(model, pm)
    tau = traj.columns([f"tau.{v}" for v in model.v_names])
    t_pin = best_of(lambda: pinocchio_pass(model, pm, mp, ex, tau), 2)
    lm = E.LinearModel(model)
    t_dyn = best_of(lambda: E.Stack(lm).add(ex.q, ex.v, ex.a, tau), 3)
    G_pin = pinocchio_pass(model, pm, mp, ex, tau)
    G_dyn = E.Stack(lm).add(ex.q, ex.v, ex.a, tau).G
    agree = max(float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) for a, b in zip(G_dyn, G_pin))
    print(f"pass over the samples (regressor + normal equations): Pinocchio loop + numpy {t_pin:.3f} s, "
          f"dyn {t_dyn:.3f} s, dyn/peer {t_dyn / t_pin:.3f} (same sums to {agree:.1e})")
    pd = pm.createData()
    n = min(CHUNK, len(ex.q))  # a short recording (--seconds) has fewer samples than a chunk
    Qp, Vp, Ap = mp.q(ex.q[:n]), mp.v(ex.v[:n]), mp.v(ex.a[:n])
    t_pin_reg = best_of(lambda: [pin.computeJointTorqueRegressor(pm, pd, Qp[i], Vp[i], Ap[i])
                                 for i in range(n)], 3) / n
    t_dyn_reg = best_of(lambda: dynlib.regressor(model, ex.q[:n], ex.v[:n], ex.a[:n]), 3) / n
    print(f"regressor alone, per sample: pin.computeJointTorqueRegressor {t_pin_reg * 1e6:.2f} us, "
          f"dynlib.regressor batched {t_dyn_reg * 1e6:.2f} us, dyn/peer {t_dyn_reg / t_pin_reg:.3f}")


if __name__ == "__main__":
    main()
