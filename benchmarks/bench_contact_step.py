"""Per-step time of the contact models against MuJoCo: a quadruped standing on four toe spheres.

    python benchmarks/bench_contact_step.py [--steps 20000] [--repeat 10] [--robot PATH.urdf]

robots/quadruped.urdf (a1-like: 12 joints, four 0.02 m foot spheres), or --robot any
quadruped URDF whose feet are collision spheres (example-robot-data's or
pybullet_data's a1), starts standing: on each leg, the chain of joints from the trunk
to the foot at (0, 0.8, -1.6) rad (abduction, hip, knee), the trunk as high as puts
the lowest foot sphere on the ground (robots/quadruped.urdf: 0.368 m), under a PD
hold (kp 300, kd 5) at dt = 1 ms, semi-implicit Euler, friction 0.8:

- dyn: `dynlib.simulate` with point contacts at the spheres' lowest points (the
  scenario key `points: {from-collision: [feet]}`), for each
  contact model (unilateral, bilateral, relaxed with the scenario's time constant
  0.01 s), and with no contact (the base step);
- MuJoCo: `mujoco.rollout` of the same URDF (visuals and the non-sphere collision
  geometry stripped, a free joint and a ground plane added, joint limits off), its
  default solver (Newton, pyramidal cones, 100 iterations), the PD as joint springs
  (stiffness 300 about the same target) and damping 5; and with contacts disabled.

Kernels warm, dyn and MuJoCo runs interleaved, best of --repeat, wall and CPU time of this process per step. Columns:
per-step time, dyn / MuJoCo (goal, issue 19: <= 1.0 for each contact model), and the
trunk height after the run (both stand: the same height to a few mm). Timings only, never asserted.
"""
import argparse
import re
import time
from pathlib import Path

import numpy as np

import dynlib
from dynlib.sim.controllers import PD
from dynlib.sim.simulate import simulate
from _peers import ROOT

DT = 1e-3
URDF = ROOT / "robots" / "quadruped.urdf"
POSE = (0.0, 0.8, -1.6)  # each leg's joints from the trunk down: abduction, hip, knee
MU = 0.8
MODELS = {"unilateral": {}, "bilateral": {}, "relaxed": {"time_constant": 0.01, "damping_ratio": 1.0}}


def standing(model):
    """(feet, {joint: angle}, q0): the links with a collision sphere, each leg's joints at POSE, and
    the configuration standing with the lowest sphere bottom at z = 0."""
    from lxml import etree

    tree = etree.parse(str(model.source))
    spheres = {}  # foot link -> (centre in the link's frame, radius)
    for link in tree.iter("link"):
        for col in link.iterfind("collision"):
            sphere, origin = col.find("geometry/sphere"), col.find("origin")
            if sphere is not None:
                xyz = [float(x) for x in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]
                spheres[link.get("name")] = (np.array(xyz + [1.0]), float(sphere.get("radius")))
    joint_of = {j.find("child").get("link"): (j.get("name"), j.get("type"), j.find("parent").get("link"))
                for j in tree.getroot().iterfind("joint")}
    target = {}
    for foot in spheres:
        chain, link = [], foot
        while link in joint_of:
            name, kind, link = joint_of[link]
            if kind in ("revolute", "continuous"):
                chain.append(name)
        target.update(zip(reversed(chain), POSE))
    q0 = np.array(model.q_neutral, dtype=float)
    for name, x in target.items():
        q0[model.q_names.index(name)] = x
    q0[model.q_names.index("root.z")] = 0.0
    low = min((dynlib.frame_placement(model, q0, foot) @ c)[2] - r for foot, (c, r) in spheres.items())
    q0[model.q_names.index("root.z")] = -low
    return sorted(spheres), target, q0


def mujoco_model(target):
    """The URDF in MuJoCo with a free-flying trunk, a floor and the PD as joint springs."""
    import mujoco

    text = URDF.read_text()
    text = re.sub(r"<visual\b.*?</visual>", "", text, flags=re.S)
    text = re.sub(r"<collision\b(?:(?!</collision>).)*?<(box|cylinder|mesh)\b.*?</collision>", "", text, flags=re.S)
    text = re.sub(r"(<robot\b[^>]*>)", r'\1<mujoco><compiler fusestatic="false"/></mujoco>', text, count=1)
    spec = mujoco.MjSpec.from_string(text)
    trunk = spec.worldbody.first_body()
    trunk.add_freejoint()
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
    mj = spec.compile()
    mj.opt.timestep = DT
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_LIMIT
    mj.geom_friction[:, 0] = MU
    for name, x in target.items():
        j = mj.joint(name)
        mj.jnt_stiffness[j.id] = 300.0
        mj.qpos_spring[mj.jnt_qposadr[j.id]] = x
    for k in range(1, mj.njnt):
        mj.dof_damping[mj.jnt_dofadr[k]] = 5.0
        mj.jnt_stiffness[k] = mj.jnt_stiffness[k] or 300.0  # haa joints hold 0
    mj.dof_armature[:] = 0.0
    mj.dof_frictionloss[:] = 0.0
    return mj


def mujoco_run(mj, q0, target, steps, contact):
    import mujoco
    from mujoco import rollout

    flag = mujoco.mjtDisableBit.mjDSBL_CONTACT
    mj.opt.disableflags = (mj.opt.disableflags | flag) if not contact else (mj.opt.disableflags & ~int(flag))
    data = mujoco.MjData(mj)
    data.qpos[:3] = (0.0, 0.0, q0[2])
    data.qpos[3:7] = (1.0, 0.0, 0.0, 0.0)
    for name, x in target.items():
        data.qpos[mj.jnt_qposadr[mj.joint(name).id]] = x
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.empty(mujoco.mj_stateSize(mj, spec))
    mujoco.mj_getState(mj, data, state0, spec)
    out = rollout.rollout(mj, data, state0[None], nstep=steps)
    state = out[0] if isinstance(out, tuple) else out
    return state[0, -1, 1 + 2]  # FULLPHYSICS: time, qpos (trunk z third)


def dyn_run(model, q0, feet, target, steps, name):
    contacts = None if name is None else {
        "model": name, "ground": {"height": 0.0, "normal": [0, 0, 1]}, "friction": MU, **MODELS[name],
        "points": {"from-collision": feet}}
    if name == "bilateral":
        contacts.pop("friction")
    r = simulate(model, q0, None, dt=DT, steps=steps, integrator="semi-implicit", joint_friction=False,
                 energy=False, every=steps, contacts=contacts,
                 controller=PD(kp=300.0, kd=5.0, target=dict(target)))
    return float(r.q[-1, 2])


def timed(fns, repeat):
    """[(best wall, best CPU) seconds, last value] of each of fns, called in turn `repeat` times
    (interleaved, so that a busy machine slows both sides alike)."""
    best = [[np.inf, np.inf, None] for _ in fns]
    for _ in range(repeat):
        for b, fn in zip(best, fns):
            w0, c0 = time.perf_counter(), time.process_time()
            b[2] = fn()
            b[0], b[1] = min(b[0], time.perf_counter() - w0), min(b[1], time.process_time() - c0)
    return best


def main():
    global URDF
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--robot", default=str(URDF), help="a quadruped URDF whose feet are collision spheres")
    args = ap.parse_args()
    URDF = Path(args.robot)
    model = dynlib.load(URDF, floating_base=True)
    feet, target, q0 = standing(model)
    mj = mujoco_model(target)
    print(f"per step: {model.name} standing on four toe spheres, dt = 1 ms, {args.steps} steps, best of "
          f"{args.repeat}; dyn from {dynlib.__file__}")
    print(f"{'contact model':14s} {'dyn us':>8s} {'MuJoCo us':>10s} {'dyn/MuJoCo':>11s} {'CPU ratio':>10s} "
          f"{'z dyn':>7s} {'z MuJoCo':>9s}")
    rows = [(None, False)] + [(name, True) for name in MODELS]
    for name, contact in rows:
        dyn_run(model, q0, feet, target, 10, name)  # compiled (or loaded from the cache) before timing
        (w_d, c_d, z_d), (w_m, c_m, z_m) = timed(
            [lambda: dyn_run(model, q0, feet, target, args.steps, name),
             lambda: mujoco_run(mj, q0, target, args.steps, contact)], args.repeat)
        print(f"{name or 'none':14s} {1e6 * w_d / args.steps:8.2f} {1e6 * w_m / args.steps:10.2f} "
              f"{w_d / w_m:11.2f} {c_d / c_m:10.2f} {z_d:7.3f} {z_m:9.3f}")


if __name__ == "__main__":
    main()
