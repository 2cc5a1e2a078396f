"""`dyn energy-check ROBOT|SCENARIO`: energy drift and model checks; exit 1 when one fails."""
import json

import click

from .common import (Overrides, armature_option, check_outputs, compile_notice, floating_base_option, gravity_option,
                     lock_option, model_warnings, no_limits_option, notice, run_options)


@click.command(epilog="""\b
Examples:
  dyn energy-check robots/arm6.urdf --no-joint-friction
  dyn energy-check robots/arm6.urdf --no-joint-friction --report r.json || exit 1      # a CI gate
  dyn energy-check robots/arm6.urdf --duration 0.3 || echo "exit $?: its stiff Coulomb friction is first order"
  dyn energy-check robots/quadruped.urdf --floating-base --gravity 0,0,0
  dyn energy-check robots/arm6.urdf --integrator euler --dt 1e-2 || echo "exit $?: explicit Euler drifts"
  dyn energy-check scenarios/arm6_fall.yaml --plot energy.png

\b
A robot runs with zero torque and its URDF joint damping and friction (as dyn
simulate runs it; --no-joint-friction: free motion) from a seeded random state
(--seed; the seed is printed) unless --q0/--qd0 are given. A scenario runs as
written: with torques, friction, external wrenches or contacts the drift check
becomes the work-energy balance E(t) - E(0) = work done, the friction's and the
contact forces' work included.

\b
The step: without --dt (and without dt: in the scenario) energy-check
starts at 1 ms and halves the step while energy_drift fails (down to 1/64
of it), and prints the step it used. With --dt, a failing drift is rerun at
dt/2 and dt/4 to say why: the time step (the drift falls with it,
integration error: the step that passes is named) or not (the drift stays,
or the motion blows up at the same time at every step: the model, or a
force the work-energy balance cannot account for).""")
@click.argument("source", metavar="ROBOT|SCENARIO", type=click.Path(dir_okay=False))
@run_options
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random initial state and samples.")
@click.option("--tolerance", type=click.FloatRange(min=0, min_open=True), default=1e-6, show_default=True,
              help="Tolerance of the relative energy drift.")
@click.option("--no-joint-friction", is_flag=True,
              help="A robot: leave out the URDF damping and friction (free motion, the plain energy drift).")
@no_limits_option
@click.option("--report", "report_path", metavar="FILE.json", default=None, help="Write the report as JSON.")
@click.option("--plot", "plot_path", metavar="FILE.png", default=None, help="Figure of the energies and the drift.")
@floating_base_option
@lock_option
@gravity_option
@armature_option
@click.pass_context
def energy_check(ctx, source, duration, dt, integrator, q0, qd0, seed, tolerance, no_joint_friction, no_limits,
                 report_path, plot_path, floating_base, lock, gravity, armature):
    """Check ROBOT (.urdf/.xacro) or SCENARIO (.yaml): energy drift, FD∘ID, mass matrix, Coriolis skew."""
    from dynlib.runs.checks import energy_check as run_checks

    o = Overrides()
    is_robot = not str(source).lower().endswith((".yaml", ".yml"))
    if is_robot:
        o.put("control", {"type": "zero"}, "energy-check")
    if no_joint_friction:
        o.put("joint_friction", "none", "--no-joint-friction")
    if no_limits:
        o.put("limits", {"position": False, "effort": False}, "--no-limits")
    o.put_if("duration", duration, "--duration")
    o.put_if("dt", dt, "--dt")
    o.put_if("integrator", integrator, "--integrator")
    o.initial_state(q0, qd0)
    o.robot(floating_base, gravity, armature, lock)
    scenario = o.load(source)
    model_warnings(ctx, scenario.model)
    check_outputs((report_path, "report", "--report"), (plot_path, "figure", "--plot"),
                  inputs=(source, *scenario.input_files))
    random_initial = is_robot and not q0 and not qd0
    if random_initial:
        notice(ctx, f"random initial state, seed {seed}")
    compile_notice(ctx)
    report = run_checks(scenario, tolerance=tolerance, seed=seed, random_initial=random_initial)

    s = report.settings
    contacts = f", {s['contacts']} contacts" if s["contacts"] else ""
    click.echo(f"robot {report.robot}: {s['integrator']}, dt = {s['dt']:g} s, {s['duration']:g} s"
               f"{', work-energy balance' if s['work_energy_balance'] else ', free motion'}"
               f"{contacts}"
               f"{f', seed {seed}' if random_initial else ''}")
    width = max(len(c.name) for c in report.checks)
    click.echo(f"  {'check'.ljust(width)}  {'value':>12}  {'tolerance':>10}  result")
    for c in report.checks:
        cmp = ">" if c.name == "mass_matrix_positive_definite" else "<="
        click.echo(f"  {c.name.ljust(width)}  {c.value:12.3e}  {cmp}{c.tolerance:9.1e}  {'pass' if c.passed else 'FAIL'}"
                   f"{'  (' + c.detail + ')' if c.detail else ''}")
    for note in report.notes:  # the step chosen, or what made the drift fail
        click.echo(note)
    click.echo("passed" if report.passed else "FAILED")
    if report_path:
        from dynlib.files.trajectory import atomic_output

        with atomic_output(report_path) as tmp:
            tmp.write_text(json.dumps(report.as_dict(), indent=2) + "\n")
    if plot_path:
        if not report.series:
            notice(ctx, "warning: the run diverged; no energy figure written")
        else:
            from dynlib.files.figures import energy_figure

            energy_figure(report.series, plot_path, title=f"{report.robot}: {s['integrator']}, dt = {s['dt']:g} s")
    if not report.passed:
        ctx.exit(1)


for _p in energy_check.params:  # energy-check's own default step: see the epilog
    if _p.name == "dt":
        _p.help = "Time step, s [default: chosen, from 1e-3 halved until energy_drift passes]."
