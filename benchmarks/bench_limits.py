"""Per-step cost of holding a URDF's joint limits: pybullet's KUKA iiwa, limits active vs ``--no-limits``.

    python benchmarks/bench_limits.py [--steps 2000] [--repeat 7]

Each case is a zero-torque fall from the neutral configuration at dt = 1 ms (the fall of issue 28, which
takes joint_2 and joint_4 onto their ±2.09 rad limits after about 0.5 s and holds them there), with
kernels warm (a short run first compiles or loads them), best of --repeat, divided by the number of steps:

- ``free``: ``limits=False``, today's unconstrained motion;
- ``held``: the limits held (`dynlib.sim.joint_limits`): while a joint is at or near its limit, the
  evaluation's ABA gives a_free, one O(n) solve on its factorization per joint held gives that joint's
  column of M⁻¹ (`dynlib.algorithms.aba.aba_solve`), and the acceleration stage's own ABA is not run again
  (the kuka's rk4 here: 1.30-1.46 before, 1.10-1.14 after, measured in one run each);
- ``held, still``: the limits on, the arm held still at 0.3 rad by gravity compensation, far from every
  limit (a compare per limited joint and evaluation: the price of the switch alone), against ``free, still``.

The ratio held / free is the issue's measure (goal <= 1.3). Also: the fraction of steps at which a limit
acted (``limit`` rows not zero), and the CPU time (the steadier on a busy machine). Timings only, never
asserted.
"""
import argparse
import time

import numpy as np

import dynlib
from dynlib.sim.controllers import GravityCompensation
from dynlib.sim.simulate import simulate


def kuka():
    import pybullet_data

    return dynlib.load(f"{pybullet_data.getDataPath()}/kuka_iiwa/model.urdf")


def timed(model, q0, steps, repeat, **kw):
    simulate(model, q0, dt=1e-3, steps=10, energy=False, **kw)  # compile or load
    best, cpu, r = np.inf, np.inf, None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(model, q0, dt=1e-3, steps=steps, energy=False, **kw)
        best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return best / steps * 1e6, cpu / steps * 1e6, r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--integrator", default="rk4")
    args = ap.parse_args()
    model = kuka()
    q0 = model.q_neutral.copy()
    far = np.full(model.nq, 0.3)
    print(f"per step: {model.name} (nv = {model.nv}), {args.integrator}, dt = 1 ms, {args.steps} steps, best of "
          f"{args.repeat}, energy off; dyn from {dynlib.__file__}")
    print(f"{'case':14s} {'us/step':>9s} {'cpu':>9s} {'limit active':>13s}")
    rows = {}
    still = GravityCompensation()
    for label, start, limits, control in (("free", q0, False, None), ("held", q0, True, None),
                                          ("free, still", far, False, still), ("held, still", far, True, still)):
        wall, cpu, r = timed(model, start, args.steps, args.repeat, integrator=args.integrator, limits=limits,
                             controller=control)
        active = "" if r.limit is None else f"{np.mean(np.any(r.limit != 0, axis=1)):12.0%}"
        rows[label] = cpu
        print(f"{label:14s} {wall:9.2f} {cpu:9.2f} {active:>13s}", flush=True)
    print(f"ratio held / free (cpu): {rows['held'] / rows['free']:.2f} (goal <= 1.3); "
          f"far from the limits: {rows['held, still'] / rows['free, still']:.2f}")


if __name__ == "__main__":
    main()
