"""Per-step time of `dynlib.simulate` for each combination of stages, on one robot (default arm6).

    python benchmarks/bench_stages.py [--robot arm6] [--steps 20000] [--repeat 5]

Each row is one run of `simulate` with kernels warm (a short run first compiles or loads
them), best of --repeat, divided by the number of steps: the two schemes (semi-implicit
Euler, RK4) with and without the URDF joint friction (implicit, the default; explicit
friction at dt = 1 ms diverges on arm6's light wrist), under a PD controller, and with one contact point at the robot's last frame
for each contact model (the ground 1 cm above that point at the start, so the
contact is active; the impulse models need semi-implicit Euler). Columns: wall time and
CPU time of this process per step (the CPU time is the steadier on a busy machine);
sum(q_final), which tells two versions of dyn computed the same trajectory.

To compare two versions of dyn, run this file with each on PYTHONPATH (it uses only
`simulate`'s public arguments), one after the other on an otherwise idle machine, e.g.

    PYTHONPATH=/path/to/one python benchmarks/bench_stages.py
    PYTHONPATH=/path/to/other python benchmarks/bench_stages.py

Timings only, never asserted.
"""
import argparse
import time

import numpy as np

import dynlib
from dynlib.sim.controllers import PD
from dynlib.sim.simulate import simulate
from _peers import ROOT

Q0 = {"arm6": [0.2, -0.6, 0.8, -0.4, 0.3, 0.1]}


def cases(model, q0):
    frame = model.frame_names[-1]
    height = float(np.asarray(dynlib.frame_placement(model, q0, frame))[2, 3]) + 0.01
    contact = {"points": [{"frame": frame}], "ground": {"height": height}}
    gains = PD(kp=[400, 600, 300, 30, 20, 10], kd=[72, 86, 25, 1.0, 0.4, 0.08], target=np.zeros(model.nq)) \
        if model.nv == 6 else PD(kp=10.0, kd=1.0)
    for scheme in ("semi-implicit", "rk4"):
        yield f"{scheme}, no friction", dict(integrator=scheme, joint_friction=False)
        yield f"{scheme}, implicit friction", dict(integrator=scheme)
        yield f"{scheme}, PD, implicit friction", dict(integrator=scheme, controller=gains)
        for name in ("soft", "bilateral"):
            yield f"{scheme}, {name} contact", dict(integrator=scheme, contacts={"model": name, **contact})
    for name in ("unilateral", "relaxed"):
        yield f"semi-implicit, {name} contact", dict(integrator="semi-implicit", contacts={"model": name, **contact})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="arm6", help="a robot of robots/")
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    model = dynlib.load(ROOT / "robots" / f"{args.robot}.urdf")
    q0 = np.array(Q0.get(args.robot, model.q_neutral), dtype=float)
    print(f"per step: {model.name} (nq = {model.nq}), dt = 1 ms, {args.steps} steps, best of {args.repeat}, "
          f"energy off; dyn from {dynlib.__file__}")
    print(f"{'case':40s} {'us/step':>9s} {'cpu':>9s}   sum(q_final)")
    for label, kw in cases(model, q0):
        simulate(model, q0, dt=1e-3, steps=10, energy=False, **kw)  # compile or load
        best, cpu, r = np.inf, np.inf, None
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            r = simulate(model, q0, dt=1e-3, steps=args.steps, energy=False, **kw)
            best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        print(f"{label:40s} {best / args.steps * 1e6:9.2f} {cpu / args.steps * 1e6:9.2f}   {np.sum(r.q_final):.12g}",
              flush=True)


if __name__ == "__main__":
    main()
