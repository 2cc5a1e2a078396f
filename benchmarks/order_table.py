"""The observed order of every integrator of `dynlib.simulate` against a converged reference.

    python benchmarks/order_table.py [--duration 1.0] [--dts 2e-3,1e-3,5e-4,2.5e-4] [--robots kuka,arm6,kuka-floating]

Robots: pybullet_data's kuka_iiwa (joint damping 0.5, no friction; the folder of the
`pybullet` package), robots/arm6.urdf (damping and Coulomb friction, tanh-smoothed,
eps = 1e-3 rad/s), arm6-damping (arm6 without its Coulomb friction: wrist_3's damping is
stiff at 1 ms) and the kuka with a floating base (free-flyer root, quaternion).
Each runs with zero torque from q0 = 0.5 rad on every joint (the floating root at
the identity, twist (0.5, 0, 1, 2, -1.5, 1)), v0 = 0, under gravity, for
--duration s, with each integrator at each step of --dts (friction as `simulate`'s
default: rk4 takes a joint's friction implicitly only where it is stiff at dt and
says so, `dynlib.sim.simulate.friction_steps`).

The reference is independent of dyn's kernels: scipy's DOP853 (rtol 1e-12, atol
1e-12; Radau with an analytic-free Jacobian where the friction is stiff: arm6) on
Pinocchio's ``aba`` with dyn's joint friction law (`dynlib.sim.dynamics.joint_friction`)
subtracted from the torque; the free-flyer's configuration moves by its body twist
(position rate R v, quaternion rate ½ q ⊗ (ω, 0)). The error is the largest
|q_dyn(T) ⊖ q_ref(T)| (Pinocchio's ``difference``); the order between two steps is
log(err(dt) / err(dt/2)) / log 2. `reference_final_state` and `dyn_final_state` are
what tests/sim/test_integrators.py calls. Needs the test extra (``pin``) and
``pybullet`` (for its data folder).
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EPS = 1e-3  # simulate's default friction_smoothing
TWIST = np.array([0.5, 0.0, 1.0, 2.0, -1.5, 1.0])


def kuka_path() -> Path:
    import pybullet_data

    return Path(pybullet_data.getDataPath()) / "kuka_iiwa" / "model.urdf"


ROBOTS = {  # name: (path, floating base, stiff friction: the reference needs an implicit solver, Coulomb friction)
    "kuka": (kuka_path, False, False, True),
    "arm6": (lambda: ROOT / "robots" / "arm6.urdf", False, True, True),
    "arm6-damping": (lambda: ROOT / "robots" / "arm6.urdf", False, True, False),
    "kuka-floating": (kuka_path, True, False, True),
}


def initial_state(model):
    """(q0, v0): 0.5 rad on every joint, the floating root at the identity with the twist TWIST."""
    q0, v0 = np.array(model.q_neutral, float), np.zeros(model.nv)
    joints = 7 if model.has_floating_base else 0
    q0[joints:] = 0.5
    if model.has_floating_base:
        v0[:6] = TWIST
    return q0, v0


def dyn_final_state(model, integrator, dt, duration, **options):
    """q at `duration` of `dynlib.simulate` from `initial_state`, zero torque, without joint limits (the
    reference has none: the kuka's fall from 0.5 rad reaches joint_2's limit within the second)."""
    import warnings

    import dynlib

    q0, v0 = initial_state(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = dynlib.simulate(model, q0, v0, dt=dt, steps=int(round(duration / dt)), integrator=integrator,
                            energy=False, every=int(round(duration / dt)), **{"limits": False, **options})
    if r.diverged is not None:
        return None
    return r.q_final


def _pin_model(path, floating):
    import pinocchio as pin

    return pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else \
        pin.buildModelFromUrdf(str(path))


def reference_final_state(model, path, duration, stiff=False):
    """q at `duration` from `initial_state`: scipy's DOP853 (Radau when `stiff`) on Pinocchio's aba with dyn's
    joint friction law, tolerances 1e-12."""
    import pinocchio as pin
    from scipy.integrate import solve_ivp

    from dynlib.sim.dynamics import joint_friction

    pm = _pin_model(path, model.has_floating_base)
    assert pm.nv == model.nv and pm.nq == model.nq, (pm.nv, model.nv)  # chains: the same joint order
    data = pm.createData()
    pm.gravity.linear = np.asarray(model.arrays.gravity, float)
    damping, friction = np.asarray(model.arrays.damping, float), np.asarray(model.arrays.friction, float)
    nq, nv, fl = model.nq, model.nv, model.has_floating_base
    law = joint_friction.py_func

    def rhs(_t, y):
        q, v = y[:nq].copy(), y[nq:]
        if fl:
            q[3:7] /= np.linalg.norm(q[3:7])
        a = pin.aba(pm, data, q, v, -law(damping, friction, EPS, v))
        qd = np.empty(nq)
        if fl:
            R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
            qd[:3] = R @ v[:3]
            x, yy, z, w = q[3:7]
            wx, wy, wz = v[3:6]
            qd[3:7] = 0.5 * np.array([w * wx + yy * wz - z * wy, w * wy + z * wx - x * wz,
                                      w * wz + x * wy - yy * wx, -x * wx - yy * wy - z * wz])
            qd[7:] = v[6:]
        else:
            qd[:] = v
        return np.concatenate([qd, a])

    q0, v0 = initial_state(model)
    sol = solve_ivp(rhs, (0.0, duration), np.concatenate([q0, v0]), method="Radau" if stiff else "DOP853",
                    rtol=1e-12, atol=1e-12)
    q = sol.y[:nq, -1].copy()
    if fl:
        q[3:7] /= np.linalg.norm(q[3:7])
    return q


def error(model, path, q, q_ref):
    """The largest |q ⊖ q_ref| (Pinocchio's difference: the root's twist and the joint angles)."""
    import pinocchio as pin

    if q is None:
        return math.inf
    return float(np.max(np.abs(pin.difference(_pin_model(path, model.has_floating_base), q_ref, q))))


def table(robots, dts, duration, integrators=("rk4", "semi-implicit", "euler")):
    import dynlib

    rows = []
    for name in robots:
        make, floating, stiff, coulomb = ROBOTS[name]
        path = make()
        model = dynlib.load(path, floating_base=floating)
        if not coulomb:
            model.arrays.friction[:] = 0.0
        t0 = time.perf_counter()
        q_ref = reference_final_state(model, path, duration, stiff)
        print(f"# {name}: reference in {time.perf_counter() - t0:.1f} s", flush=True)
        for integ in integrators:
            errs = [error(model, path, dyn_final_state(model, integ, dt, duration), q_ref) for dt in dts]
            orders = [math.log(a / b) / math.log(dt_a / dt_b) if 0 < b < math.inf and a < math.inf else math.nan
                      for a, b, dt_a, dt_b in zip(errs, errs[1:], dts, dts[1:])]
            rows.append((name, integ, errs, orders))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--dts", default="2e-3,1e-3,5e-4,2.5e-4")
    ap.add_argument("--robots", default=",".join(ROBOTS))
    args = ap.parse_args()
    dts = [float(x) for x in args.dts.split(",")]
    rows = table(args.robots.split(","), dts, args.duration)
    head = " | ".join(f"dt = {dt:g}" for dt in dts)
    print(f"| robot | integrator | {head} | observed order |")
    print("|---|---|" + "---|" * len(dts) + "---|")
    for name, integ, errs, orders in rows:
        e = " | ".join("diverged" if not math.isfinite(x) else f"{x:.1e}" for x in errs)
        o = ", ".join("-" if math.isnan(x) else f"{x:.1f}" for x in orders)
        print(f"| {name} | {integ} | {e} | {o} |")


if __name__ == "__main__":
    main()
