"""Many recordings through one `dyn inverse` command against a Pinocchio script looping over them.

    python benchmarks/bench_inverse_many.py [--files 100] [--seconds 2] [--repeat 3] [--robot kuka|PATH.urdf]

Writes --files smooth recordings of --seconds each at 1 kHz (time, q, qd, qdd: the
exact derivatives, so both sides read the same numbers), then times, as whole
processes (start-up and imports included, each side's Python bytecode cached):

- `dyn inverse ROBOT rec000.csv … -o OUT/` (one process; joint friction included), and
- a Pinocchio script that reads each file with pyarrow, loops pin.rnea over its rows,
  adds the same URDF damping and Coulomb friction and writes OUT/<name>.csv.

Prints the best-of-repeat wall time of each, the ratio dyn / Pinocchio (issue 36's goal:
at most 0.7), the same ratio for one process per file (what `dyn inverse` took before it
read several recordings: measured on the first 10 files, scaled), and the largest
difference between the two sides' torques over all files.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

import dynlib
from bench_inverse import make_trajectory
from dynlib.files.trajectory import read_trajectory
from _peers import ROOT, best_of, robot_path

PIN_SCRIPT = textwrap.dedent('''
    import sys
    from pathlib import Path
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pinocchio as pin

    robot, dst, *sources = sys.argv[1:]
    pm = pin.buildModelFromUrdf(robot)
    pd = pm.createData()
    joints = [pm.names[j] for j in range(1, pm.njoints)]   # revolute or prismatic joints: nq = nv = 1 each
    for src in sources:
        table = pcsv.read_csv(src)
        def block(prefix):
            return np.ascontiguousarray(np.column_stack([table[f"{prefix}.{n}"].to_numpy() for n in joints]))
        Q, V, A = block("q"), block("qd"), block("qdd")
        tau = np.empty_like(V)
        for i in range(Q.shape[0]):
            tau[i] = pin.rnea(pm, pd, Q[i], V[i], A[i])
        tau += pm.damping * V + pm.friction * np.tanh(V / 1e-3)
        out = pa.table([table["time"]] + [pa.array(tau[:, k]) for k in range(len(joints))],
                       names=["time"] + [f"tau.{n}" for n in joints])
        pcsv.write_csv(out, str(Path(dst) / (Path(src).stem + ".csv")))
''')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--robot", default="kuka", help="kuka (pybullet_data), a robot of robots/, or a fixed-base URDF")
    args = ap.parse_args()
    robot = robot_path(args.robot)
    model = dynlib.load(robot)
    rows = int(round(args.seconds * 1000))
    with tempfile.TemporaryDirectory(prefix="bench-inverse-many-") as tmp:
        folder = Path(tmp)
        sources = []
        for k in range(args.files):
            sub = folder / f"src{k:03d}"
            sub.mkdir()
            src = make_trajectory(model, rows, sub)["csv"].rename(folder / f"rec{k:03d}.csv")
            sources.append(str(src))
        script = folder / "pin_many.py"
        script.write_text(PIN_SCRIPT)
        env = dict(os.environ, PYTHONPYCACHEPREFIX=str(folder / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        dyn_out, pin_out, one_out = folder / "dyn", folder / "pin", folder / "one"
        for d in (dyn_out, pin_out, one_out):
            d.mkdir()
        dyn = [sys.executable, "-m", "cli.main", "-q", "inverse", str(robot), *sources, "-o", f"{dyn_out}/"]
        pin = [sys.executable, str(script), str(robot), str(pin_out), *sources]

        def run(cmd):
            subprocess.run(cmd, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)

        def one_per_file():
            for src in sources[:10]:
                run(dyn[:5] + [str(robot), src, "-o", str(one_out / Path(src).name)])

        for cmd in (dyn, pin):  # untimed: numba's cache, the bytecode and the OS file cache warm
            run(cmd)
        load0 = os.getloadavg()[0]
        td = best_of(lambda: run(dyn), args.repeat)
        tp = best_of(lambda: run(pin), args.repeat)
        t1 = best_of(one_per_file, args.repeat) * args.files / 10
        worst = 0.0
        for src in sources:
            a = read_trajectory(dyn_out / Path(src).name)
            b = read_trajectory(pin_out / Path(src).name)
            worst = max(worst, np.abs(a.columns(b.names) - b.data).max() / np.abs(b.data).max())
        print(f"{args.files} recordings of {args.seconds:g} s at 1 kHz, {model.name} (nv = {model.nv}), "
              f"best of {args.repeat}, whole processes")
        print(f"  dyn inverse, one command    {td:7.2f} s")
        print(f"  Pinocchio script, one loop  {tp:7.2f} s")
        print(f"  dyn / Pinocchio             {td / tp:7.2f}   (goal <= 0.7)")
        print(f"  dyn, one process per file   {t1:7.2f} s   ({t1 / tp:.2f} x Pinocchio; first 10 files, scaled)")
        print(f"  max |dtau| / max |tau|      {worst:7.1e}")
        print(f"load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after (a shared machine: compare the "
              "ratios of one run)")


if __name__ == "__main__":
    main()
