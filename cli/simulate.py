"""`dyn simulate ROBOT|SCENARIO`: forward-dynamics integration to a trajectory file.

Thin: the options become scenario overrides, `dynlib.runs.scenario.load_scenario`
validates them, `dynlib.runs.scenario.run` runs, the result is written
(atomically) and a divergence becomes exit code 1 after the write.
"""
import os
import time
from pathlib import Path

import click

from .common import (Overrides, armature_option, check_outputs, compile_notice, compile_progress,
                     floating_base_option, gravity_option, lock_option, model_warnings, no_limits_option, notice,
                     output_option,
                     progress_counter, progress_option, run_options, vector_option)

PARTS = ("q", "qd", "qdd", "tau", "energy", "contact", "limits")


@click.command(epilog="""\b
Examples:
  dyn simulate robots/arm6.urdf --steps 1000 -o fall.csv
  dyn simulate robots/arm6.urdf --duration 2 --integrator semi-implicit --q0 shoulder_lift=-1.2 -o fall.parquet
  dyn simulate robots/pendulum.urdf --steps 500 --q0 1.0 --columns q,qd,energy
  dyn simulate scenarios/arm6_pd.yaml --duration 3 -o pd.csv
  dyn simulate scenarios/arm6_pd.yaml -o pd.csv
  dyn simulate scenarios/arm6_pd.yaml --integrator semi-implicit --every 1 -o pd_steps.csv
  dyn simulate scenarios/arm6_pd.yaml --integrator semi-implicit --every 1 --tau-csv pd_steps.csv \\
      -o open_loop.csv   # the PD's torques played open loop: the same motion to round-off

\b
--q0, --qd0 and --tau take the whole vector (0.1,0,0.3) or, repeated, one
coordinate by name (--q0 elbow=0.5 --q0 wrist_1=-0.2); unnamed ones stay at
zero (the root at the identity). Options override the scenario's fields.""")
@click.argument("source", metavar="ROBOT|SCENARIO", type=click.Path(dir_okay=False))
@click.option("--steps", type=click.IntRange(min=1), default=None, help="Number of steps.")
@run_options
@click.option("--tau", multiple=True, metavar="VALUES|NAME=VALUE",
              help="Constant joint torques (a floating base's root.fx … root.tz: a wrench on the root).")
@click.option("--tau-csv", type=click.Path(dir_okay=False), default=None,
              help="Torques over time: a time column and tau.<joint> columns, linearly interpolated.")
@click.option("--every", type=click.IntRange(min=1), default=None, help="Keep one sample in K [default: 1].")
@click.option("--columns", metavar="LIST", default=None,
              help="Columns to write, among q,qd,qdd,tau,energy,contact,limits [default: q,qd,qdd,tau].")
@floating_base_option
@lock_option
@gravity_option
@armature_option
@click.option("--no-joint-friction", is_flag=True, default=None, help="Ignore the URDF <dynamics> damping and friction.")
@no_limits_option
@output_option
@click.option("--view", metavar="PAGE.html", type=click.Path(dir_okay=False), default=None,
              help="Also write a web page that plays the motion (as 'dyn view' makes).")
@progress_option
@click.pass_context
def simulate(ctx, source, steps, duration, dt, integrator, q0, qd0, tau, tau_csv, every, columns, floating_base,
             lock, gravity, armature, no_joint_friction, no_limits, output, view, no_progress):
    """Integrate the forward dynamics of ROBOT (.urdf/.xacro) or SCENARIO (.yaml) and write the trajectory.

    Rows at t = 0, dt, ..., steps*dt (one in K with --every): time, q.*, qd.*, qdd.*, tau.*
    (and energy.* with --columns). Exit code 1 if the simulation diverges (the
    finite part is written).
    """
    from dynlib.runs.scenario import run

    o = Overrides()
    if steps is not None and duration is not None:
        raise click.UsageError("give either --steps or --duration, not both")
    o.put_if("steps", steps, "--steps")
    o.put_if("duration", duration, "--duration")
    o.put_if("dt", dt, "--dt")
    o.put_if("integrator", integrator, "--integrator")
    o.put_if("output.every", every, "--every")
    o.initial_state(q0, qd0)
    if tau and tau_csv:
        raise click.UsageError("give either --tau or --tau-csv, not both")
    if tau:
        o.put("control", {"type": "constant", "tau": vector_option(tau, "--tau")}, "--tau")
    if tau_csv:
        o.put("control", {"type": "csv", "file": str(Path(tau_csv).resolve())}, "--tau-csv")
    o.robot(floating_base, gravity, armature, lock)
    if no_joint_friction:
        o.put("joint_friction", "none", "--no-joint-friction")
    if no_limits:
        o.put("limits", {"position": False, "effort": False}, "--no-limits")
    if columns is not None:
        parts = [c.strip() for c in columns.split(",") if c.strip()]
        bad = [c for c in parts if c not in PARTS]
        if bad or not parts:
            raise click.BadParameter(f"expected some of {','.join(PARTS)}, got {columns!r}", param_hint="--columns")
        o.put("output.columns", parts, "--columns")
    if output is not None:
        # absolute, not resolved: /dev/stdout stays itself (a symlink is followed when written)
        o.put("output.path", output if output == "-" else os.path.abspath(output), "-o/--output")

    scenario = o.load(source)
    model_warnings(ctx, scenario.model)
    check_outputs((scenario.output_path, "trajectory", "-o/--output" if output is not None else "output.path"),
                  (view, "page", "--view"), inputs=(source, *scenario.input_files))
    from dynlib._numba.cache import cache_is_warm
    from dynlib.sim.simulate import loop_is_cached

    if cache_is_warm() and not loop_is_cached():
        notice(ctx, "compiling the simulation loop (first run only; later runs load it from the cache)…")
        compile_progress(ctx, "simulate loop")
    else:
        compile_notice(ctx)
    with progress_counter(ctx, no_progress, "simulating", "steps", delay=1.0) as progress:  # a short run: none
        result = run(scenario, progress=progress)
    from dynlib.files.columns import run_metadata

    result.write(scenario.output_path, scenario.output.columns, source=scenario.source or scenario.robot,
                 metadata=run_metadata(scenario.model, scenario.friction_smoothing))
    if view is not None:
        from dynlib.runs.view.runs import write_result_view

        from .view import page_notice

        start = time.perf_counter()
        page_notice(ctx, view, write_result_view(view, scenario, result), time.perf_counter() - start)
    from dynlib.sim.limits import excursions

    for excursion in excursions(result.model, result.time, result.q, result.v, result.tau, result.limits):
        notice(ctx, f"warning: {excursion.message()}")
    solver = result.contact_solver
    if solver and solver["steps_not_converged"]:
        notice(ctx, f"warning: the contact solver stopped on its iteration limit ({solver['max_iterations']}) at "
                    f"{solver['steps_not_converged']} steps (worst last change {solver['worst_change']:.3g}, tolerance "
                    f"{solver['tolerance']:.3g}); raise contacts.max_iterations or lower dt")
    if result.diverged is not None:
        raise result.error()

