"""`dyn linearize ROBOT|SCENARIO`: the linearization of the dynamics at a point, to JSON or NPZ.

Thin: the robot and the point come as `dyn simulate` takes them (scenario overrides, the
scenario's initial state), `dynlib.motion.linearize.linearize` computes, the result is written
atomically (JSON on standard output without -o).
"""
import os

import click

from .common import (Overrides, check_outputs, compile_notice, floating_base_option, gravity_option, lock_option,
                     model_warnings, notice, vector_option)


@click.command(epilog="""\b
Examples:
  dyn linearize robots/pendulum.urdf -o lin.json
  dyn linearize robots/double_pendulum.urdf --input joint2 --q joint1=3.14159 -o lin.npz
  dyn linearize scenarios/arm6_pd.yaml --qd elbow=0.1 -o arm6.json
  dyn linearize robots/pendulum.urdf --q 3.14159 --dt 0.01 --integrator euler -o step.json
  dyn linearize robots/quadruped.urdf --floating-base --q root.z=0.4 --dt 0.002 --integrator rk4 -o rk4.npz
  dyn linearize robots/cartpole.urdf --input cart --dt 0.01 -o lin.json   # for an LQR gain (README)

\b
The point: q = 0 (the root at the identity; a scenario: its initial state), qd = 0 and tau
holding it (gravity compensation), unless --q, --qd, --tau say otherwise (the whole vector,
or NAME=VALUE repeated, as dyn simulate's --q0, --qd0, --tau). Output keys: A, B, state
(q.<coord> for the tangent coordinates, then qd.<coord>), input, point (q, qd, tau), dt,
integrator (null: the continuous dynamics, x' = A x + B u). With --dt: the step map
x+ = A x + B u of dyn simulate's step (its implicit joint friction; the scenario's controller,
contacts and external wrenches, and the joint limits, are left out: the plant under the input
torques, as dyn simulate --no-limits steps it away from any limit).""")
@click.argument("source", metavar="ROBOT|SCENARIO", type=click.Path(dir_okay=False))
@click.option("--q", "q", multiple=True, metavar="VALUES|NAME=VALUE", help="The point's configuration.")
@click.option("--qd", multiple=True, metavar="VALUES|NAME=VALUE", help="The point's velocity [default: 0].")
@click.option("--tau", multiple=True, metavar="VALUES|NAME=VALUE",
              help="The point's torque [default: the torque holding the point: gravity compensation at qd = 0].")
@click.option("--input", "inputs", metavar="J1,J2,...", default=None,
              help="The coordinates whose torque is an input, in that order [default: all but a free-flyer's].")
@click.option("--dt", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Linearize dyn simulate's step map x+ = f(x, u) with this time step instead of the continuous "
                   "dynamics.")
@click.option("--integrator", type=click.Choice(["semi-implicit", "euler", "rk4"]), default=None,
              help="The step's scheme, with --dt [default: semi-implicit; rk4: where dyn simulate keeps the joint "
                   "friction explicit at dt].")
@floating_base_option
@lock_option
@gravity_option
@click.option("--no-joint-friction", is_flag=True, default=None, help="Ignore the URDF <dynamics> damping and friction.")
@click.option("-o", "--output", metavar="PATH", default=None,
              help="Output file (.json or .npz); '-' or absent: JSON on standard output.")
@click.pass_context
def linearize(ctx, source, q, qd, tau, inputs, dt, integrator, floating_base, lock, gravity, no_joint_friction,
              output):
    """Linearize the dynamics of ROBOT (.urdf/.xacro) or SCENARIO (.yaml) at a point: A and B of
    x' = A x + B u (with --dt: x+ = A x + B u), x = (δq, δqd) in the tangent coordinates, u the input torques."""
    from dynlib.motion.linearize import linearize as linearize_at

    if integrator is not None and dt is None:
        raise click.UsageError("--integrator needs --dt (without it: the continuous dynamics)")
    check_outputs((output, "linearization", "-o/--output"), inputs=(source,))
    o = Overrides()
    _point_overrides(o, q, qd)
    o.robot(floating_base, gravity, (), lock)
    if no_joint_friction:
        o.put("joint_friction", "none", "--no-joint-friction")
    scenario = o.load(source)
    model = scenario.model
    model_warnings(ctx, model)
    from dynlib.runs.scenario import initial_state

    q0, v0 = initial_state(scenario)
    left_out = [what for what, present in (("controller", scenario.control.type != "zero"),
                                           ("contacts", scenario.contacts is not None),
                                           ("external wrenches", bool(scenario.external_wrenches))) if present]
    if left_out:
        notice(ctx, f"note: the scenario's {' and '.join(left_out)} left out: the plant under the input torques")
    names = None if inputs is None else [n.strip() for n in inputs.split(",") if n.strip()]
    compile_notice(ctx)
    result = linearize_at(model, q0, v0, _torque(model, tau), names, scenario.friction_smoothing, dt,
                          integrator or ("semi-implicit" if dt else None),
                          implicit=scenario.friction_integration == "implicit")
    _write(result, output)


def _point_overrides(o, q, qd):
    """--q, --qd as the scenario's initial state (its names and checks, reported against the option)."""
    for key, values, label in ((("initial", "q"), q, "--q"), (("initial", "qd"), qd, "--qd")):
        given = vector_option(values, label)
        if isinstance(given, list):
            o.put(key, given, label)
        else:
            for name, v in given.items():
                o.put(key + (name,), v, label)


def _torque(model, tau):
    """--tau as a (nv,) vector, or None (the holding torque)."""
    import numpy as np

    from dynlib.errors import InputError

    if not tau:
        return None
    given = vector_option(tau, "--tau")
    if isinstance(given, list):
        if len(given) != model.nv:
            raise InputError(f"expected {model.nv} numbers ({', '.join(model.tau_names)}), got {len(given)}",
                             key="--tau")
        return np.array(given)
    out = np.zeros(model.nv)
    for name, value in given.items():
        names = model.tau_names if name in model.tau_names else model.v_names
        if name not in names:
            raise InputError(f"unknown coordinate {name!r}; the robot's: {', '.join(model.tau_names)}", key="--tau")
        out[names.index(name)] = value
    return out


def _write(result, output):
    """JSON (standard output, or a .json file) or NPZ, atomically."""
    import json

    import numpy as np

    from dynlib.files.output import atomic_output

    if output is None or output == "-":
        click.echo(json.dumps(result.as_dict()))
        return
    with atomic_output(output) as path:
        if os.path.splitext(output)[1].lower() == ".npz":
            with open(path, "wb") as f:
                np.savez(f, A=result.A, B=result.B, state=np.array(result.state), input=np.array(result.input),
                         q=result.point["q"], qd=result.point["qd"], tau=result.point["tau"],
                         dt=np.nan if result.dt is None else result.dt, integrator=result.integrator or "")
        else:
            path.write_text(json.dumps(result.as_dict()) + "\n")
