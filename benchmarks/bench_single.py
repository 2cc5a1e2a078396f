"""One call from Python of each quantity of issue 36's single-call row, dynlib / Pinocchio, one run.

    python benchmarks/bench_single.py [--calls 20000] [--repeat 7]

For gravity_torques, crba, kinetic_energy, potential_energy, forward_dynamics,
frame_jacobian_dot_times_v and task_space_inertia on a 7-DoF arm (robots/arm7.urdf) and on
ur5 and panda (example-robot-data): the best over `--repeat` timings of `--calls` calls of each
side, Pinocchio's and dynlib's timed in the same run, and their ratio (goal dyn/pin <= 1.5).

Pinocchio's side is the shortest Pinocchio script giving the same quantity:
gravity_torques: computeGeneralizedGravity; crba: crba (its upper triangle; dynlib fills both);
kinetic_energy: computeKineticEnergy; potential_energy: computePotentialEnergy;
forward_dynamics: aba; frame_jacobian_dot_times_v (LOCAL_WORLD_ALIGNED, the last frame
of the last body):
forwardKinematics(q, v, 0) and getFrameClassicalAcceleration (the same 6 numbers);
task_space_inertia (that frame, with v): computeFrameJacobian, computeMinverse,
nonLinearEffects, forwardKinematics(q, v, 0) and getFrameClassicalAcceleration, then
Lambda = pinv(J M^-1 J^T) and mu = Lambda (J M^-1 h - Jdot v) in numpy. Each pair is checked
equal (to 1e-8) before it is timed.
"""
import argparse

import numpy as np
import pinocchio as pin

import dynlib
from _peers import ROOT, PinMap, best_of, erd

ROBOTS = [
    ("arm7", ROOT / "robots/arm7.urdf"),
    ("ur5", erd("ur_description/urdf/ur5_robot.urdf")),
    ("panda", erd("panda_description/urdf/panda.urdf")),
]


def per_call(fn, calls, repeat):
    """Best time of one fn() over `repeat` runs of `calls` calls, in seconds."""
    return best_of(lambda: [fn() for _ in range(calls)], repeat) / calls


def cases(model, pm, pd, q, v, tau, frame):
    """{name: (pinocchio call, dynlib call, pinocchio's result as dynlib orders it from the call's return)}."""
    mp = PinMap(model, pm)
    qp, vp, taup = mp.q(q)[0], mp.v(v)[0], mp.v(tau)[0]
    zero = np.zeros(pm.nv)
    fid = pm.getFrameId(frame)
    lwa = pin.LOCAL_WORLD_ALIGNED
    perm = mp.v_perm  # dynlib's v index -> Pinocchio's

    def jdot_v():
        pin.forwardKinematics(pm, pd, qp, vp, zero)
        return pin.getFrameClassicalAcceleration(pm, pd, fid, lwa).vector

    def task_space():
        J = pin.computeFrameJacobian(pm, pd, qp, fid, lwa)
        Minv = pin.computeMinverse(pm, pd, qp)
        Minv = np.triu(Minv) + np.triu(Minv, 1).T
        h = pin.nonLinearEffects(pm, pd, qp, vp)
        JMinv = J @ Minv
        lam = np.linalg.pinv(JMinv @ J.T, rcond=1e-12)
        return lam, lam @ (JMinv @ h - jdot_v())

    return {
        "gravity_torques": (lambda: pin.computeGeneralizedGravity(pm, pd, qp),
                            lambda: dynlib.gravity_torques(model, q), lambda r: r[perm]),
        "crba": (lambda: pin.crba(pm, pd, qp), lambda: dynlib.crba(model, q),
                 lambda r: (np.triu(r) + np.triu(r, 1).T)[np.ix_(perm, perm)]),
        "kinetic_energy": (lambda: pin.computeKineticEnergy(pm, pd, qp, vp),
                           lambda: dynlib.kinetic_energy(model, q, v), lambda r: r),
        "potential_energy": (lambda: pin.computePotentialEnergy(pm, pd, qp),
                             lambda: dynlib.potential_energy(model, q), lambda r: r),
        "forward_dynamics": (lambda: pin.aba(pm, pd, qp, vp, taup),
                             lambda: dynlib.forward_dynamics(model, q, v, tau), lambda r: r[perm]),
        "frame_jacobian_dot_times_v": (jdot_v, lambda: dynlib.frame_jacobian_dot_times_v(model, q, v, frame),
                                       lambda r: r),
        "task_space_inertia": (task_space, lambda: dynlib.task_space_inertia(model, q, frame, v), lambda r: r),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    print(f"one call from Python, best of {args.repeat} x {args.calls} calls (goal dyn/pin <= 1.5)")
    print(f"{'robot':8s} {'quantity':27s} {'pin/call':>10s} {'dyn/call':>10s} {'dyn/pin':>8s}")
    for label, path in ROBOTS:
        model = dynlib.load(path)
        pm = pin.buildModelFromUrdf(str(path))
        pd = pm.createData()
        q = dynlib.random_configuration(model, rng, scale=1.0)
        v, tau = rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)
        frame = [f for f, b in zip(model.frame_names, model.arrays.frame_body) if b == model.nb - 1][-1]
        for name, (pin_call, dyn_call, as_dyn) in cases(model, pm, pd, q, v, tau, frame).items():
            got, want = dyn_call(), as_dyn(pin_call())  # compiled or loaded here, outside the timings
            for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-8, err_msg=f"{label} {name}")
            tp, td = per_call(pin_call, args.calls, args.repeat), per_call(dyn_call, args.calls, args.repeat)
            print(f"{label:8s} {name:27s} {tp * 1e6:8.2f}us {td * 1e6:8.2f}us {td / tp:8.2f}", flush=True)


if __name__ == "__main__":
    main()
