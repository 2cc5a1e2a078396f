"""Shared by the benchmarks: locating example-robot-data URDFs, mapping states to Pinocchio,
and a best-of-k timer. Benchmarks print ratios measured in one run; never assert on time."""
import subprocess
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def erd(relpath):
    """Path of an example-robot-data URDF (the 'example-robot-data' distribution)."""
    dist = metadata.distribution("example-robot-data")
    return Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")) / relpath


def robot_path(name):
    """A benchmark's --robot: a URDF's path, ``kuka`` (pybullet_data's KUKA iiwa: 7 revolute joints with
    damping; the ``pybullet`` wheel, not a dependency of dyn), or a robot of robots/ by name."""
    if name.endswith((".urdf", ".xacro")):
        return Path(name)
    if name == "kuka":
        import pybullet_data

        return Path(pybullet_data.getDataPath()) / "kuka_iiwa" / "model.urdf"
    return ROOT / "robots" / f"{name}.urdf"


def best_of(fn, repeat=5):
    """The smallest wall time of `repeat` calls of fn(), in seconds."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def wall(cmd, repeat):
    """The smallest wall time of `repeat` runs of the command `cmd` (a whole process), in seconds."""
    return best_of(lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL), repeat)


def wall_cpu(cmd, repeat, env=None):
    """(smallest wall time, smallest CPU time) of `repeat` runs of the command `cmd`, in seconds. The CPU
    time is the process's user + system time, every thread's (its children's too): on a shared machine it
    moves less with the load than the wall time, but it counts dyn's second thread (batched kernels, the
    CSV writer's blocks, the recording parsed while numba imports) where the wall time does not."""
    import resource

    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


class PinMap:
    """dynlib q/v -> Pinocchio q/v by joint name (continuous joints: cos, sin in Pinocchio)."""

    def __init__(self, model, pm):
        a = model.arrays
        self.q_src, self.q_dst, self.cs = [], [], []
        self.v_perm = np.zeros(model.nv, dtype=int)
        self.nq_pin, self.nv_pin = pm.nq, pm.nv
        for k, name in enumerate(model.joint_names):
            j = pm.joints[1 if name == "root" else pm.getJointId(name)]
            iq, iv = a.idx_q[k], a.idx_v[k]
            if j.nq == 2 and j.nv == 1:
                self.cs.append((iq, j.idx_q))
            else:
                for t in range(j.nq):
                    self.q_src.append(iq + t)
                    self.q_dst.append(j.idx_q + t)
            for t in range(j.nv):
                self.v_perm[iv + t] = j.idx_v + t

    def q(self, q):
        q = np.atleast_2d(q)
        out = np.zeros((q.shape[0], self.nq_pin))
        out[:, self.q_dst] = q[:, self.q_src]
        for src, dst in self.cs:
            out[:, dst] = np.cos(q[:, src])
            out[:, dst + 1] = np.sin(q[:, src])
        return out

    def v(self, v):
        v = np.atleast_2d(v)
        out = np.zeros((v.shape[0], self.nv_pin))
        out[:, self.v_perm] = v
        return out
