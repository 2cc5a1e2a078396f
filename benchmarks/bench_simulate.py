"""`dyn simulate` against Pinocchio and MuJoCo on the same URDF, in one run: per step and whole command.

    python benchmarks/bench_simulate.py [--robot arm6] [--steps 100000] [--repeat 5]
                                        [--command-steps 1000,10000,100000]

1. Per step, in this process, kernels warm, zero torque, no joint friction, gravity on,
   from the same random state, dt = 1 ms (best of --repeat):

   - dyn: `dynlib.simulate` (the compiled loop; it also records q, v, a, tau every step);
   - Pinocchio: a Python loop of pin.aba + pin.integrate, the same scheme (semi-implicit
     Euler; classical RK4 with the same stages), storing q and v every step;
   - MuJoCo: `mujoco.rollout` of the model compiled from the same URDF (meshes stripped,
     contacts, joint limits, damping and friction loss off), its Euler (semi-implicit) and RK4
     integrators.

   Each row also gives the largest |q_dyn - q_peer| after 1 s (1000 steps): the three
   compute the same trajectory. (Over longer runs the falling arm is chaotic: round-off
   differences grow to O(1) within a few seconds, for any pair of peers.)

2. The whole command, as separate processes (start-up, imports and the CSV included):
   `dyn -q simulate ROBOT --steps N --no-joint-friction -o out.csv` against a Pinocchio
   script that integrates the same RK4 and writes the same columns (time, q.*, qd.*,
   qdd.*, tau.*) with pyarrow's CSV writer, for each N of --command-steps, and for the
   largest N as Parquet too (pyarrow's Parquet writer); wall time and the processes' CPU
   time (user + system, every thread: it moves less with the load of a shared machine, but
   counts the second thread dyn's CSV writer uses); then each one's start-up and cost per
   step (a line through the two largest N) and the run length from which dyn is the faster.

Goals (issue 3): per step faster than MuJoCo and at most half the Pinocchio loop; (issue 36)
the whole command of 100k steps at most 0.7 of the Pinocchio script. Ratios only, never asserted.
"""
import argparse
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

import dynlib
from dynlib.sim.simulate import simulate
from dynlib.files.trajectory import read_trajectory
from _peers import PinMap, best_of, robot_path, wall_cpu

DT = 1e-3

PIN_SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pinocchio as pin

    robot, steps, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    dt = 1e-3
    pm = pin.buildModelFromUrdf(robot)
    pd = pm.createData()
    names = [pm.names[j] for j in range(1, pm.njoints)]   # revolute joints: nq = nv = 1 each
    zero = np.zeros(pm.nv)
    def f(q, v):
        return pin.aba(pm, pd, q, v, zero)
    Q = np.empty((steps + 1, pm.nq)); V = np.empty((steps + 1, pm.nv)); A = np.empty((steps + 1, pm.nv))
    q, v = pin.neutral(pm), np.zeros(pm.nv)
    for k in range(steps + 1):
        a1 = f(q, v)
        Q[k], V[k], A[k] = q, v, a1
        if k == steps:
            break
        q2, v2 = pin.integrate(pm, q, dt / 2 * v), v + dt / 2 * a1
        a2 = f(q2, v2)
        q3, v3 = pin.integrate(pm, q, dt / 2 * v2), v + dt / 2 * a2
        a3 = f(q3, v3)
        q4, v4 = pin.integrate(pm, q, dt * v3), v + dt * a3
        a4 = f(q4, v4)
        q = pin.integrate(pm, q, dt / 6 * (v + 2 * v2 + 2 * v3 + v4))
        v = v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    cols = [np.arange(steps + 1) * dt] + [Q[:, i] for i in range(pm.nq)] + [V[:, i] for i in range(pm.nv)]
    cols += [A[:, i] for i in range(pm.nv)] + [np.zeros(steps + 1)] * pm.nv
    header = ["time"] + [f"{p}.{n}" for p in ("q", "qd", "qdd", "tau") for n in names]
    table = pa.table([pa.array(c) for c in cols], names=header)
    if dst.endswith(".parquet"):
        import pyarrow.parquet as pq
        pq.write_table(table, dst)
    else:
        pcsv.write_csv(table, dst)
''')


# ------------------------------------------------------------------ peers, per step

def pinocchio_loop(pm, q, v, steps, scheme):
    import pinocchio as pin

    pd = pm.createData()
    zero = np.zeros(pm.nv)
    Q = np.empty((steps + 1, pm.nq))
    V = np.empty((steps + 1, pm.nv))
    Q[0], V[0] = q, v
    for k in range(steps):
        a1 = pin.aba(pm, pd, q, v, zero)
        if scheme == "semi-implicit":
            v = v + DT * a1
            q = pin.integrate(pm, q, DT * v)
        else:
            q2, v2 = pin.integrate(pm, q, DT / 2 * v), v + DT / 2 * a1
            a2 = pin.aba(pm, pd, q2, v2, zero)
            q3, v3 = pin.integrate(pm, q, DT / 2 * v2), v + DT / 2 * a2
            a3 = pin.aba(pm, pd, q3, v3, zero)
            q4, v4 = pin.integrate(pm, q, DT * v3), v + DT * a3
            a4 = pin.aba(pm, pd, q4, v4, zero)
            q = pin.integrate(pm, q, DT / 6 * (v + 2 * v2 + 2 * v3 + v4))
            v = v + DT / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
        Q[k + 1], V[k + 1] = q, v
    return Q


def mujoco_model(urdf_path):
    """MuJoCo's model of the URDF: meshes stripped, no contacts, no joint limits (dyn does not enforce
    URDF limits), no joint damping or friction loss."""
    import mujoco

    text = Path(urdf_path).read_text()
    text = re.sub(r"<(visual|collision)\b.*?</\1>", "", text, flags=re.S)  # meshes (and all geometry) out
    mj = mujoco.MjModel.from_xml_string(text)
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    mj.dof_damping[:] = 0.0
    mj.dof_frictionloss[:] = 0.0
    mj.dof_armature[:] = 0.0
    mj.opt.timestep = DT
    return mj


def mujoco_rollout(mj, q, v, steps, scheme):
    import mujoco
    from mujoco import rollout

    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4 if scheme == "rk4" else mujoco.mjtIntegrator.mjINT_EULER
    data = mujoco.MjData(mj)
    data.qpos[:], data.qvel[:] = q, v
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.empty(mujoco.mj_stateSize(mj, spec))
    mujoco.mj_getState(mj, data, state0, spec)
    out = rollout.rollout(mj, data, state0[None], nstep=steps)
    state = out[0] if isinstance(out, tuple) else out
    return state[0, -1, 1:1 + mj.nq]  # FULLPHYSICS: time, qpos, qvel, ...


def per_step(model, steps, repeat):
    import pinocchio as pin

    pm = pin.buildModelFromUrdf(str(model.source))
    pmap = PinMap(model, pm)
    mj = mujoco_model(model.source)
    rng = np.random.default_rng(0)
    q0 = rng.uniform(-1, 1, model.nq)
    v0 = rng.uniform(-1, 1, model.nv)
    pin_steps = max(1000, steps // 20)  # the Python loop is slow; its cost per step does not depend on the count
    print(f"per step: {model.name} (nq = {model.nq}), dt = {DT:g} s, zero torque, no joint friction, "
          f"best of {repeat}; dyn and MuJoCo over {steps} steps, the Pinocchio loop over {pin_steps}")
    print(f"{'scheme':14s} {'dyn [us]':>9s} {'MuJoCo [us]':>12s} {'Pinocchio [us]':>15s} "
          f"{'dyn/MuJoCo':>11s} {'dyn/Pinocchio':>14s} {'max|dq| MuJoCo':>15s} {'max|dq| Pin':>12s}")
    for scheme in ("semi-implicit", "rk4"):
        kw = dict(dt=DT, integrator=scheme, joint_friction=False, energy=False)
        simulate(model, q0, v0, steps=10, **kw)  # compiled (or loaded from the cache) before timing
        t_dyn = best_of(lambda: simulate(model, q0, v0, steps=steps, **kw), repeat) / steps
        t_mj = best_of(lambda: mujoco_rollout(mj, q0, v0, steps, scheme), repeat) / steps
        t_pin = best_of(lambda: pinocchio_loop(pm, pmap.q(q0)[0], pmap.v(v0)[0], pin_steps, scheme),
                        max(1, repeat // 2)) / pin_steps
        n = 1000
        q_dyn = simulate(model, q0, v0, steps=n, **kw).q[-1]
        dq_pin = np.abs(pmap.q(q_dyn)[0] - pinocchio_loop(pm, pmap.q(q0)[0], pmap.v(v0)[0], n, scheme)[-1]).max()
        dq_mj = np.abs(q_dyn - mujoco_rollout(mj, q0, v0, n, scheme)).max()
        print(f"{scheme:14s} {t_dyn * 1e6:9.2f} {t_mj * 1e6:12.2f} {t_pin * 1e6:15.2f} "
              f"{t_dyn / t_mj:11.2f} {t_dyn / t_pin:14.3f} {dq_mj:15.1e} {dq_pin:12.1e}")
    kw = dict(dt=DT, integrator="rk4", energy=False)
    t_fric = best_of(lambda: simulate(model, q0, v0, steps=steps, **kw), repeat) / steps
    print(f"(dyn rk4 with the URDF joint friction, implicit as by default: {t_fric * 1e6:.2f} us per step)")


# ------------------------------------------------------------------ whole command

def whole_command(model, counts, repeat):
    robot = str(model.source)
    with tempfile.TemporaryDirectory(prefix="bench-simulate-") as tmp:
        folder = Path(tmp)
        script = folder / "pin_simulate.py"
        script.write_text(PIN_SCRIPT)
        dyn = [sys.executable, "-m", "cli.main", "-q", "simulate", robot, "--no-joint-friction"]
        subprocess.run(dyn + ["--steps", "10", "-o", str(folder / "warm.csv")], check=True)  # numba's cache warm
        print(f"\nwhole command: dyn simulate vs a Pinocchio script writing the same CSV, {model.name}, rk4, "
              f"best of {repeat} (separate processes)")
        print(f"{'steps':>8s} {'format':>8s} {'dyn [s]':>9s} {'pinocchio [s]':>14s} {'dyn/pin':>8s} "
              f"{'CPU: dyn [s]':>13s} {'pinocchio [s]':>14s} {'dyn/pin':>8s} {'max |Δ| first 1 s':>18s}")
        times = []
        for n, fmt in [(n, "csv") for n in counts] + [(counts[-1], "parquet")]:
            out_dyn, out_pin = folder / f"dyn{n}.{fmt}", folder / f"pin{n}.{fmt}"
            td, cd = wall_cpu(dyn + ["--steps", str(n), "-o", str(out_dyn)], repeat)
            tp, cp = wall_cpu([sys.executable, str(script), robot, str(n), str(out_pin)], repeat)
            a, b = read_trajectory(out_dyn), read_trajectory(out_pin)
            assert a.names == b.names, (a.names, b.names)
            diff = np.abs(a.data[:1001] - b.data[:1001]).max()
            if fmt == "csv":
                times.append((n, td, tp))
            print(f"{n:8d} {fmt:>8s} {td:9.3f} {tp:14.3f} {td / tp:8.2f} {cd:13.3f} {cp:14.3f} {cd / cp:8.2f} "
                  f"{diff:18.1e}")
        if len(times) >= 2:
            (n0, d0, p0), (n1, d1, p1) = times[-2], times[-1]
            sd, sp = (d1 - d0) / (n1 - n0), (p1 - p0) / (n1 - n0)
            od, op = d0 - sd * n0, p0 - sp * n0
            print(f"start-up: dyn {od:.2f} s, Pinocchio script {op:.2f} s; per step, CSV included: dyn "
                  f"{sd * 1e6:.1f} us, Pinocchio {sp * 1e6:.1f} us", end="")
            print(f"; dyn is the faster from about {(od - op) / (sp - sd):.0f} steps on" if sp > sd and od > op else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="arm6",
                    help="a robot of robots/ by name, kuka (pybullet_data), or the path of any fixed-base URDF with "
                         "revolute joints")
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--command-steps", default="1000,10000,100000")
    ap.add_argument("--command-only", action="store_true", help="only part 2, the whole command")
    args = ap.parse_args()
    model = dynlib.load(robot_path(args.robot))
    if not args.command_only:
        per_step(model, args.steps, args.repeat)
    whole_command(model, [int(n) for n in args.command_steps.split(",")], max(1, args.repeat // 2 + 1))


if __name__ == "__main__":
    main()
