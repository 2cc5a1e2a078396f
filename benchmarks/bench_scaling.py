"""Time per simulation step against the number of links: chains of 5 to 200 links, one run.

    python benchmarks/bench_scaling.py [--links 5,10,20,50,100,200] [--steps 2000]

For each chain (revolute joints about alternating axes, 0.1 m links, fixed base and
floating base) prints the time of one forward-dynamics evaluation by ABA (O(n)) and
by CRBA + Cholesky (O(n^3) — shown for contrast), both as batched compiled calls,
and one semi-implicit simulation step (`dynlib.simulate`, ABA inside) without joint
damping and with ``<dynamics damping="0.05"/>`` on every joint (the default implicit
damping: one ABA with dt·damping on each joint's D_k, issue #21, plus the explicit
ABA of the recorded row, which reuses the first one's pass 1 at the same state). The slope of log(time) against log(links) is printed: ABA
should be about 1, with damping too; the goal of issues #10 and #21 is
time(100 links) / time(10 links) <= 15 for a step, with and without damping.
"""
import argparse
import tempfile
from pathlib import Path

import numpy as np

import dynlib
from _peers import best_of


def chain_urdf(n, folder, damping=0.0):
    base = ('<link name="base"><inertial><mass value="2"/>'
            '<inertia ixx="1e-2" iyy="1e-2" izz="1e-2" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    links, joints = [base], []
    for i in range(n):
        links.append(f'<link name="l{i}"><inertial><origin xyz="0 0 0.05"/><mass value="1"/>'
                     f'<inertia ixx="1e-3" iyy="1e-3" izz="2e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>')
        axis = "0 1 0" if i % 2 else "1 0 0"
        parent = "base" if i == 0 else f"l{i - 1}"
        dynamics = f'<dynamics damping="{damping}"/>' if damping else ""
        joints.append(f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
                      f'<origin xyz="0 0 {0.0 if i == 0 else 0.1}"/><axis xyz="{axis}"/>{dynamics}</joint>')
    path = Path(folder) / f"chain{n}{'d' if damping else ''}.urdf"
    path.write_text(f'<robot name="chain{n}">' + "".join(links + joints) + "</robot>")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", default="5,10,20,50,100,200")
    ap.add_argument("--steps", type=int, default=2000)
    args = ap.parse_args()
    sizes = [int(s) for s in args.links.split(",")]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for floating in (False, True):
            rows = []
            for n in sizes:
                model = dynlib.load(chain_urdf(n, tmp), floating_base=floating)
                N = 200
                Q = np.array([dynlib.random_configuration(model, rng, scale=0.3) for _ in range(N)])
                V = rng.uniform(-0.1, 0.1, (N, model.nv))
                T = rng.uniform(-0.1, 0.1, (N, model.nv))
                dynlib.aba(model, Q[:1], V[:1], T[:1])
                dynlib.forward_dynamics(model, Q[:1], V[:1], T[:1], method="crba")
                t_aba = best_of(lambda: dynlib.aba(model, Q, V, T), 5) / N
                t_crba = best_of(lambda: dynlib.forward_dynamics(model, Q, V, T, method="crba"), 3) / N
                q0 = dynlib.random_configuration(model, rng, scale=0.3)
                t_step = step_time(model, q0, args.steps)
                damped = dynlib.load(chain_urdf(n, tmp, damping=0.05), floating_base=floating)
                t_damped = step_time(damped, q0, args.steps)
                rows.append((n, t_aba, t_crba, t_step, t_damped))
            label = "floating base" if floating else "fixed base"
            print(f"\n{label}: time per evaluation [us]")
            print(f"{'links':>6} {'ABA':>10} {'CRBA+Chol':>10} {'sim step':>10} {'damped step':>12}")
            for n, a, c, s, sd in rows:
                print(f"{n:6d} {a * 1e6:10.2f} {c * 1e6:10.2f} {s * 1e6:10.2f} {sd * 1e6:12.2f}")
            x = np.log([r[0] for r in rows])
            names = ((1, "ABA"), (2, "CRBA+Cholesky"), (3, "simulation step"), (4, "simulation step, damping 0.05"))
            for k, name in names:
                slope = np.polyfit(x, np.log([r[k] for r in rows]), 1)[0]
                print(f"  slope of log(time) vs log(links), {name}: {slope:.2f}")
            by_n = {r[0]: r for r in rows}
            if 10 in by_n and 100 in by_n:
                for k, name in names[2:]:
                    print(f"  {name}, 100 links / 10 links: {by_n[100][k] / by_n[10][k]:.1f} (goal <= 15)")


def step_time(model, q0, steps):
    """Seconds per step of a semi-implicit run (the default implicit joint damping), best of 3."""
    kw = dict(dt=1e-4, steps=steps, integrator="semi-implicit", energy=False)
    dynlib.simulate(model, q0, dt=1e-4, steps=2, integrator="semi-implicit", energy=False)
    return best_of(lambda: dynlib.simulate(model, q0, **kw), 3) / steps


if __name__ == "__main__":
    main()
