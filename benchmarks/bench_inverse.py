"""The whole `dyn inverse` command against a Pinocchio script doing the same job, same files, one run.

    python benchmarks/bench_inverse.py [--rows 200000] [--repeat 3] [--robot arm6|kuka|PATH.urdf]

Writes a smooth trajectory of the robot (arm6 by default; kuka: pybullet_data's KUKA iiwa; any
fixed-base URDF whose joints are revolute or prismatic) (time, q, qd, qdd) of --rows rows as CSV and as
Parquet, then times, as separate processes (start-up and imports included):

- `dyn inverse ROBOT traj -o tau` (joint friction included), and
- a Pinocchio script that reads the same file with pyarrow, loops pin.rnea over
  the rows, adds the same URDF damping and Coulomb friction (vectorised) and
  writes time + tau.* with pyarrow.

Prints the best-of-repeat wall time of each, the ratio dyn / Pinocchio (goal,
issue 36: at most 0.6), the same for the processes' CPU time (user + system, every thread: on a
shared machine it moves less with the load, but it counts the second thread dyn's batched kernel and
CSV writer use) and the largest difference between the two outputs, the same
for CSV with both sides' Python bytecode cached, and the load average; then,
for CSV, where dyn's time goes (stages timed in this process, kernels warm) next
to the Pinocchio loop alone, the rest of each total being start-up.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

import dynlib
from dynlib.files.trajectory import column_names, read_trajectory, write_trajectory
from _peers import ROOT, best_of, robot_path, wall_cpu

ROBOT = ROOT / "robots" / "arm6.urdf"

PIN_SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    import pinocchio as pin

    robot, src, dst = sys.argv[1:4]
    pm = pin.buildModelFromUrdf(robot)
    pd = pm.createData()
    table = pcsv.read_csv(src) if src.endswith(".csv") else pq.read_table(src)
    joints = [pm.names[j] for j in range(1, pm.njoints)]   # revolute or prismatic joints: nq = nv = 1 each
    def block(prefix):
        return np.ascontiguousarray(np.column_stack([table[f"{prefix}.{n}"].to_numpy() for n in joints]))
    Q, V, A = block("q"), block("qd"), block("qdd")
    tau = np.empty_like(V)
    for i in range(Q.shape[0]):
        tau[i] = pin.rnea(pm, pd, Q[i], V[i], A[i])
    tau += pm.damping * V + pm.friction * np.tanh(V / 1e-3)
    out = pa.table([table["time"]] + [pa.array(tau[:, k]) for k in range(len(joints))],
                   names=["time"] + [f"tau.{n}" for n in joints])
    if dst.endswith(".csv"):
        pcsv.write_csv(out, dst)
    else:
        pq.write_table(out, dst)
''')


def make_trajectory(model, n, folder):
    """Sinusoids in every joint at 1 kHz with their exact derivatives, as CSV and Parquet."""
    rng = np.random.default_rng(0)
    t = np.arange(n) * 1e-3
    amp, om, ph = rng.uniform(0.3, 1.0, model.nv), rng.uniform(0.5, 3, model.nv), rng.uniform(0, 6, model.nv)
    arg = om * t[:, None] + ph
    data = np.hstack([t[:, None], amp * np.sin(arg), amp * om * np.cos(arg), -amp * om ** 2 * np.sin(arg)])
    names = column_names(model.q_names, model.v_names, ("q", "qd", "qdd"))
    paths = {}
    for fmt in ("csv", "parquet"):
        paths[fmt] = folder / f"traj.{fmt}"
        write_trajectory(paths[fmt], names, data)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--robot", default="arm6", help="a robot of robots/ by name, kuka, or a fixed-base URDF's path")
    args = ap.parse_args()
    global ROBOT
    ROBOT = robot_path(args.robot)
    model = dynlib.load(ROBOT)
    with tempfile.TemporaryDirectory(prefix="bench-inverse-") as tmp:
        folder = Path(tmp)
        paths = make_trajectory(model, args.rows, folder)
        script = folder / "pin_inverse.py"
        script.write_text(PIN_SCRIPT)
        # one untimed run of each: numba's cache and the OS file cache warm, as for a user's second run
        dyn = [sys.executable, "-m", "cli.main", "-q", "inverse", str(ROBOT)]
        subprocess.run(dyn + [str(paths["csv"]), "-o", str(folder / "warm.csv")], check=True)
        load0 = os.getloadavg()[0]
        print(f"dyn inverse vs Pinocchio script, {model.name} (nv = {model.nv}), {args.rows} rows, best of {args.repeat} (whole processes)")
        print(f"{'format':8s} {'dyn [s]':>9s} {'pinocchio [s]':>14s} {'dyn/pin':>8s} {'CPU: dyn [s]':>13s} "
              f"{'pinocchio [s]':>14s} {'dyn/pin':>8s} {'max |Δtau| / max |tau|':>24s}")
        for fmt, src in paths.items():
            out_dyn, out_pin = folder / f"tau_dyn.{fmt}", folder / f"tau_pin.{fmt}"
            td, cd = wall_cpu(dyn + [str(src), "-o", str(out_dyn)], args.repeat)
            tp, cp = wall_cpu([sys.executable, str(script), str(ROBOT), str(src), str(out_pin)], args.repeat)
            a, b = read_trajectory(out_dyn), read_trajectory(out_pin)
            assert sorted(a.names) == sorted(b.names), (a.names, b.names)
            diff = np.abs(a.columns(b.names) - b.data).max() / np.abs(b.data).max()
            print(f"{fmt:8s} {td:9.3f} {tp:14.3f} {td / tp:8.2f} {cd:13.3f} {cp:14.3f} {cd / cp:8.2f} {diff:24.1e}")
        # as above, with both sides' bytecode cached (what an install that keeps bytecode runs: an
        # editable install under PYTHONDONTWRITEBYTECODE=1 compiles every module of dynlib and cli
        # at every run, Pinocchio's are byte-compiled in site-packages), see bench_startup
        env = dict(os.environ, PYTHONPYCACHEPREFIX=str(folder / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        out = folder / "bc.csv"
        cmds = {"dyn": dyn + [str(paths["csv"]), "-o", str(out)],
                "pin": [sys.executable, str(script), str(ROBOT), str(paths["csv"]), str(out)]}
        for cmd in cmds.values():  # writes the bytecode
            subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        tb = {k: wall_cpu(c, args.repeat, env=env) for k, c in cmds.items()}
        (wd, cd), (wp, cp) = tb["dyn"], tb["pin"]
        print(f"{'csv, bytecode cached':20s} {wd:9.3f} {wp:14.3f} {wd / wp:8.2f} {cd:13.3f} {cp:14.3f} {cd / cp:8.2f}")
        print(f"load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after (a shared machine: "
              "compare the ratios of one run)")
        stages(model, paths["csv"], folder / "stage.csv", args.repeat)


def stages(model, src, dst, repeat):
    """dyn's stages in this process (kernels warm) and Pinocchio's per-row loop alone."""
    import pinocchio as pin

    from dynlib.motion.inverse import inverse_dynamics_trajectory

    traj = read_trajectory(src)
    res = inverse_dynamics_trajectory(model, traj)
    rows = [("read_trajectory (csv)", lambda: read_trajectory(src)),
            ("inverse_dynamics_trajectory", lambda: inverse_dynamics_trajectory(model, traj)),
            ("  of which dynlib.rnea (batched)", lambda: dynlib.rnea(model, Q, V, A)),
            ("write_trajectory (csv)", lambda: write_trajectory(dst, res.names, res.data))]
    Q, V, A = (traj.columns([f"{p}.{n}" for n in model.v_names]) for p in ("q", "qd", "qdd"))
    pm = pin.buildModelFromUrdf(str(ROBOT))
    pd = pm.createData()
    tau = np.empty_like(V)

    def pin_loop():
        for i in range(Q.shape[0]):
            tau[i] = pin.rnea(pm, pd, Q[i], V[i], A[i])

    rows.append(("Pinocchio: loop of pin.rnea", pin_loop))
    print(f"\nwhere the time goes, {len(traj)} rows, in-process, best of {repeat}")
    for label, fn in rows:
        best = min(_timed(fn) for _ in range(repeat))
        print(f"  {label:34s} {best:7.3f} s  {best / len(traj) * 1e6:6.2f} us/row")


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
