"""`dyn energy-check ROBOT|SCENARIO...`: energy drift and model checks of each; exit 1 when one fails."""
import json

import click

from .common import (Output, Overrides, armature_option, check_outputs, compile_notice, floating_base_option,
                     for_each_input, gravity_option, lock_option, model_warnings, no_limits_option, notice, run_options)


@click.command(epilog="""\b
Examples:
  dyn energy-check robots/arm6.urdf --no-joint-friction
  dyn energy-check robots/arm6.urdf --no-joint-friction --report r.json || exit 1      # a CI gate
  dyn energy-check robots/arm6.urdf --duration 0.3 || echo "exit $?: its stiff Coulomb friction is first order"
  dyn energy-check robots/quadruped.urdf --floating-base --gravity 0,0,0
  dyn energy-check robots/arm6.urdf --integrator euler --dt 1e-2 || echo "exit $?: explicit Euler drifts"
  dyn energy-check scenarios/arm6_fall.yaml --plot energy.png
  dyn energy-check robots/pendulum.urdf robots/planar3.urdf --report reports/   # reports/pendulum.json, …

\b
Several robots or scenarios: one process checks them all (the kernels loaded
once), one table each and a last line that sums them up; --report and --plot
are a folder (ending in '/': DIR/<name>.json, DIR/<name>.png) or a name with
{stem}. A robot that cannot be read is one error line and the others still
run; the command then exits 2 naming it.

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
@click.argument("sources", metavar="ROBOT|SCENARIO...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@run_options
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random initial state and samples.")
@click.option("--tolerance", type=click.FloatRange(min=0, min_open=True), default=1e-6, show_default=True,
              help="Tolerance of the relative energy drift.")
@click.option("--no-joint-friction", is_flag=True,
              help="A robot: leave out the URDF damping and friction (free motion, the plain energy drift).")
@no_limits_option
@click.option("--report", "report_path", metavar="FILE.json", default=None,
              help="Write the report as JSON (several robots: a folder DIR/ or a name with {stem}).")
@click.option("--plot", "plot_path", metavar="FILE.png", default=None,
              help="Figure of the energies and the drift (several robots: a folder DIR/ or a name with {stem}).")
@floating_base_option
@lock_option
@gravity_option
@armature_option
@click.pass_context
def energy_check(ctx, sources, duration, dt, integrator, q0, qd0, seed, tolerance, no_joint_friction, no_limits,
                 report_path, plot_path, floating_base, lock, gravity, armature):
    """Check each ROBOT (.urdf/.xacro) or SCENARIO (.yaml): energy drift, FD∘ID, mass matrix, Coriolis skew."""
    from dynlib.files.output import ROBOT_SUFFIXES

    checked, failed = [], []  # the inputs that ran; those whose checks failed (exit 1)

    def one(source, paths):
        report = _check(ctx, source, paths, duration=duration, dt=dt, integrator=integrator, q0=q0, qd0=qd0,
                        seed=seed, tolerance=tolerance, no_joint_friction=no_joint_friction, no_limits=no_limits,
                        robot_options=(floating_base, gravity, armature, lock), several=len(sources) > 1)
        checked.append(source)
        if not report.passed:
            failed.append(source)

    outputs = [Output(report_path, "report", "--report", ".json", needed=False),
               Output(plot_path, "figure", "--plot", ".png", needed=False)]
    try:
        for_each_input(ctx, sources, outputs, one, suffixes=ROBOT_SUFFIXES)
    finally:
        if len(sources) > 1 and checked:  # several: one line that sums them up (none when refused before any work)
            bad = [s for s in sources if s not in checked]
            click.echo(f"{len(checked) - len(failed)} of {len(sources)} passed"
                       f"{'; FAILED: ' + ', '.join(failed) if failed else ''}"
                       f"{'; not checked (an error, said on standard error): ' + ', '.join(bad) if bad else ''}")
    if failed:
        ctx.exit(1)


def _check(ctx, source, paths, *, duration, dt, integrator, q0, qd0, seed, tolerance, no_joint_friction,
           no_limits, robot_options, several):
    """One robot or scenario checked: its table on standard output, its report and figure at `paths`."""
    from dynlib.runs.checks import energy_check as run_checks

    report_path, plot_path = paths
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
    o.robot(*robot_options)
    scenario = o.load(source)
    model_warnings(ctx, scenario.model)
    check_outputs((report_path, "report", "--report"), (plot_path, "figure", "--plot"),
                  inputs=(source, *scenario.input_files))
    random_initial = is_robot and not q0 and not qd0
    if random_initial:
        notice(ctx, f"random initial state, seed {seed}")
    compile_notice(ctx)
    report = run_checks(scenario, tolerance=tolerance, seed=seed, random_initial=random_initial)
    _table(report, seed if random_initial else None, source if several else None)
    _write(ctx, report, report_path, plot_path)
    return report


def _table(report, seed, source):
    """The report's table on standard output (`source`: named in the first line, among several inputs)."""
    s = report.settings
    contacts = f", {s['contacts']} contacts" if s["contacts"] else ""
    click.echo(f"robot {report.robot}{f' ({source})' if source else ''}: {s['integrator']}, dt = {s['dt']:g} s, "
               f"{s['duration']:g} s"
               f"{', work-energy balance' if s['work_energy_balance'] else ', free motion'}"
               f"{contacts}"
               f"{f', seed {seed}' if seed is not None else ''}")
    width = max(len(c.name) for c in report.checks)
    click.echo(f"  {'check'.ljust(width)}  {'value':>12}  {'tolerance':>10}  result")
    for c in report.checks:
        cmp = ">" if c.name == "mass_matrix_positive_definite" else "<="
        click.echo(f"  {c.name.ljust(width)}  {c.value:12.3e}  {cmp}{c.tolerance:9.1e}  {'pass' if c.passed else 'FAIL'}"
                   f"{'  (' + c.detail + ')' if c.detail else ''}")
    for note in report.notes:  # the step chosen, or what made the drift fail
        click.echo(note)
    click.echo("passed" if report.passed else "FAILED")


def _write(ctx, report, report_path, plot_path):
    """The JSON report and the energy figure, where asked for."""
    s = report.settings
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


for _p in energy_check.params:  # energy-check's own default step: see the epilog
    if _p.name == "dt":
        _p.help = "Time step, s [default: chosen, from 1e-3 halved until energy_drift passes]."
