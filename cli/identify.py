"""`dyn identify ROBOT RECORDING...`: inertial and friction parameters from recorded motion, as a URDF."""
import contextlib
import json
import math

import click

from .common import (check_outputs, check_value, compile_notice,
                     floating_base_option, gravity_option, load_robot, lock_option, naming, notice,
                     recording_source_options, resample_option)


@click.command(epilog="""\b
Examples:
  dyn identify robots/arm7.urdf recording.csv -o identified.urdf
  dyn identify robots/arm7.urdf recording.csv -o identified.urdf --report report.json \\
      --validate validation.csv --plot fit.png
  dyn identify robots/arm7.urdf recording.csv --derivatives savgol --window 0.05 -o identified.urdf
  dyn identify robots/arm7.urdf recording.csv --friction viscous,coulomb,offset -o identified.urdf
  dyn identify robots/arm7.urdf logged.csv --derivatives given --torque-filter savgol -o identified.urdf
  dyn identify robots/arm7.urdf recording.csv --armature identify -o identified.urdf

\b
Recordings: CSV or Parquet with time, q.*, optionally qd.* (measured velocities:
used by default, and differentiated once when there is no qdd.*) and qdd.*, and the
measured torques tau.<joint> (or effort.<joint>) of every actuated joint, or
what robots record, read as by 'dyn inverse' (ROS bags, rostopic echo -p and
PlotJuggler CSVs: positions and efforts of a JointState topic). A
floating base (--floating-base) reads tau.root.fx … tz when present, else the
root carries no wrench (flight), plus the contact wrenches of any
contact.<frame>.fx … tz columns (world axes, at the frame: as dyn contact-id
writes them).

\b
The output is ROBOT with the <inertial> of each moving body's heaviest link
and the <dynamics> of each joint replaced, every other byte unchanged. Links
merged into one body by fixed joints keep their URDF values, except the
heaviest, which takes the rest of the body's identified parameters. The
default estimate is physically consistent (every pseudo-inertia positive
semidefinite, friction >= 0) and stays at the URDF's values where the data
carry no information. A .xacro robot must be expanded first (xacro robot.xacro > robot.urdf).

\b
Rotor inertias (--armature identify: one more parameter per joint, >= 0, or
--armature JOINT=KG_M2 known) are physics URDF cannot state: they are written
as dyn's own attribute, <dynamics ... dyn:armature="..."/> (xmlns:dyn declared
on <robot>), which every dyn command reads and other URDF readers ignore.
Constant offsets (--friction ...,offset) are a sensor's bias, not physics:
identified and reported, not written; the URDF written is refitted without
them. The errors printed are those of the file written (as 'dyn inverse'
computes its torques). A fit above --max-error or --max-condition exits 1 and
writes nothing.""")
@click.argument("robot", metavar="ROBOT", type=click.Path(dir_okay=False))
@click.argument("recordings", metavar="RECORDING...", nargs=-1, required=True)
@click.option("-o", "--output", metavar="URDF", required=True, help="The identified URDF.")
@click.option("--report", "report_path", metavar="FILE.json", default=None,
              help="Parameters before and after, base parameters with standard deviations, rms errors, "
                   "condition number.")
@click.option("--validate", multiple=True, metavar="RECORDING",
              help="A recording to report the fit on (not used to fit); repeatable.")
@click.option("--plot", "plot_path", metavar="FIGURE.png", default=None,
              help="Measured and predicted torque per joint (of the first --validate recording, else the first "
                   "RECORDING).")
@floating_base_option
@lock_option
@gravity_option
@click.option("--armature", multiple=True, metavar="identify|JOINT=KG_M2",
              help="identify: the rotor inertia of every joint is a parameter too (>= 0), written to the URDF as "
                   "dyn:armature; JOINT=KG_M2: a known rotor inertia (taken out of the torques before the fit, or "
                   "with identify the prior), written too; repeatable [default: the URDF's dyn:armature, else none].")
@click.option("--derivatives", type=click.Choice(["auto", "given", "central", "savgol", "zero"]), default="auto",
              show_default=True, help="Where velocities and accelerations come from: the file's qd.* (given: measured "
                                      "velocities, and its qdd.* or one Savitzky–Golay differentiation of qd), "
                                      "central differences or a Savitzky–Golay filter of q, or zero (still poses). "
                                      "auto: given when the file has qd.*, else savgol of q; non-uniform stamps "
                                      "are resampled first.")
@click.option("--window", type=float, default=0.1, show_default=True, metavar="SECONDS",
              callback=lambda ctx, param, v: check_value(
                  v, math.isfinite(v) and v > 0, "Savitzky–Golay window must be a positive number of seconds"),
              help="Savitzky–Golay window length (auto and given: at least 2·polyorder + 3 samples).")
@click.option("--polyorder", type=int, default=4, show_default=True, metavar="K",
              callback=lambda ctx, param, v: check_value(
                  v, v >= 2, "Savitzky–Golay polyorder must be at least 2 to estimate accelerations"),
              help="Savitzky–Golay polynomial order (at least 2).")
@click.option("--columns", "column_map", metavar="MAP", default=None,
              help=("Columns with other names: comma-separated KEY=VALUE, KEY time, q, qd, qdd or effort and VALUE "
                      "a template with {joint} (the name 'dyn info' gives) or {index} (the position in --joint-order), "
                      "e.g. 'q=pos_{joint},qd=vel_{joint}'; or one coordinate, q.<name>=COLUMN."))
@click.option("--joint-order", metavar="A,B,...", default=None,
              help="The joints of a file without joint names, in the file's order: what {index} in --columns "
                   "counts in (needed by {index} on such a file).")
@recording_source_options
@resample_option
@click.option("--friction", default="viscous,coulomb", show_default=True, metavar="TERMS",
              help="Friction terms to identify: viscous, coulomb, offset (comma-separated), or none; the others "
                   "keep their URDF values (offset: zero).")
@click.option("--torque-filter", metavar="savgol|lowpass:HZ", default=None,
              callback=lambda ctx, param, v: _torque_filter(v),
              help="Filter the measured torques, zero-phase: savgol (the derivatives' Savitzky–Golay window and "
                   "order) or lowpass:HZ (4th-order Butterworth, forward and backward).")
@click.option("--max-error", type=float, default=20.0, show_default=True, metavar="PERCENT",
              callback=lambda ctx, param, v: check_value(v, v > 0, "--max-error must be a positive percentage"),
              help="Refuse (exit 1, no output) a fit whose rms torque error on the training data is above this.")
@click.option("--max-condition", type=float, default=1e5, show_default=True, metavar="K",
              callback=lambda ctx, param, v: check_value(v, v >= 1, "--max-condition must be at least 1"),
              help="Refuse (exit 1, no output) data whose base regressor's condition number is above this "
                   "(the motion does not excite the model); inf accepts any.")
@click.option("--friction-smoothing", type=float, default=1e-3, show_default=True, metavar="EPS",
              help="ε of the Coulomb term friction·tanh(q̇/ε), rad/s or m/s.")
@click.option("--method", type=click.Choice(["consistent", "least-squares"]), default="consistent",
              show_default=True, help="Physically consistent (an SDP), or weighted least squares without "
                                      "the consistency constraints.")
@click.option("--prior-std", type=float, default=1.0, show_default=True, metavar="S",
              callback=lambda ctx, param, v: check_value(v, math.isfinite(v) and v > 0,
                                                         "--prior-std must be a positive number"),
              help="Width of the prior at the URDF's values, relative to each parameter's scale (a mass, that "
                   "mass times the link's size, times its size squared).")
@click.pass_context
def identify(ctx, robot, recordings, output, report_path, validate, plot_path, floating_base, lock, gravity, armature,
             derivatives, window, polyorder, column_map, joint_order, topic, time_unit, resample, friction,
             torque_filter, max_error, max_condition, friction_smoothing, method, prior_std):
    """Identify ROBOT's inertial and friction parameters from RECORDING(s) and write them as a URDF."""
    from dynlib.algorithms.regressor import check_friction_terms
    from dynlib.files.column_map import parse_column_map
    from dynlib.motion.identification import check_robot_file, identify as run
    from dynlib.motion.identification.figure import check_path, fit_figure
    from dynlib.files.trajectory import atomic_output

    if plot_path:
        with naming("--plot"):
            check_path(plot_path)
    check_outputs((output, "urdf", "-o/--output"), (report_path, "report", "--report"), (plot_path, "figure", "--plot"),
                  inputs=(robot, *recordings, *validate))

    terms = () if friction.strip() == "none" else tuple(t.strip() for t in friction.split(",") if t.strip())
    with naming("--columns"):
        columns = parse_column_map(column_map) if column_map else None
    check_robot_file(robot)
    rotors = "identify" in armature
    armature = tuple(a for a in armature if a != "identify")
    model = load_robot(ctx, robot, floating_base, gravity, armature=armature, lock=lock, strict=False)
    compile_notice(ctx)
    with naming("--friction"):  # only the terms' own errors: a failure of the fit is not the option's
        check_friction_terms(terms, friction_smoothing)
    result = run(model, list(recordings), validation=list(validate), derivatives=derivatives, window=window,
                 polyorder=polyorder, columns=columns, friction=terms, friction_smoothing=friction_smoothing,
                 method=method, prior_std=prior_std, topic=topic, time_unit=time_unit, resample=resample,
                 torque_filter=torque_filter, joint_order=joint_order, armature=rotors)
    result.urdf_bytes()  # before any work on the outputs: a link that cannot be written stops here
    for rec in (*result.training, *result.validation):
        for line in rec.notes:  # what the recording reader decided (a topic, a time unit, the derivatives)
            notice(ctx, f"{rec.path}: {line}" if len(recordings) + len(validate) > 1 else line)
    result.check_fit(max_error / 100.0, max_condition)  # a fit that explains nothing is not written
    result.urdf_bytes()  # before any work on the outputs: a link that cannot be written stops here
    if model.has_floating_base and not any(r.contacts for r in result.training):
        notice(ctx, "floating base without contact.* columns: the root's equations take the recorded "
                    "tau.root.* (or no wrench at all)")
    for w in result.warnings:
        notice(ctx, f"warning: {w}")
    # every output to its temporary file first, renamed together at the end: no partial output
    with contextlib.ExitStack() as stack:
        tmp_urdf = stack.enter_context(atomic_output(output))
        tmp_report = stack.enter_context(atomic_output(report_path)) if report_path else None
        tmp_plot = stack.enter_context(atomic_output(plot_path)) if plot_path else None
        written = result.write_urdf(tmp_urdf, atomic=False, display=output)  # and read back by dyn: the errors are its
        report = result.report(written)
        if tmp_report:
            tmp_report.write_text(json.dumps(report, indent=2) + "\n")
        if tmp_plot:
            fit_figure(result, tmp_plot, atomic=False)
    notice(ctx, _summary(report))


def _summary(report):
    """The line identify ends with: base parameters, condition number, the errors of the URDF written."""
    rel = report["relative_rms_error"]
    cond = report["condition_number"]
    line = (f"{report['base_parameters_count']} base parameters, condition number "
            f"{'inf' if cond is None else f'{cond:.4g}'}; rms torque error (of the rms torque) on the training "
            f"data {100 * rel['training']['urdf']:.3g} % with the URDF, {100 * rel['training']['identified']:.3g} % "
            "identified")
    if "validation" in rel:
        line += (f"; on the validation data {100 * rel['validation']['urdf']:.3g} % -> "
                 f"{100 * rel['validation']['identified']:.3g} %")
    if report["armature_identified"]:
        line += "; the rotor inertias identified are in the URDF written (dyn:armature, which dyn reads back)"
    off = report.get("offsets")
    if off:
        e = off["relative_rms_error"]
        line += (f". With the identified offsets {100 * e['training']:.3g} %"
                 + (f" (validation {100 * e['validation']:.3g} %)" if "validation" in e else "")
                 + ", but offsets are a sensor's bias, not physics, and stay out of the URDF: the URDF written is "
                   "refitted without them, and its errors are the figures above")
    return line


def _torque_filter(value):
    """None, ('savgol',) or ('lowpass', HZ) from --torque-filter."""
    if value is None:
        return None
    text = value.strip()
    if text == "savgol":
        return ("savgol",)
    head, _, hz = text.replace(" ", ":").partition(":")
    try:
        cutoff = float(hz)
    except ValueError:
        cutoff = float("nan")
    if head != "lowpass" or not (math.isfinite(cutoff) and cutoff > 0):
        raise click.BadParameter(f"expected savgol or lowpass:HZ (a positive cut-off in Hz), got {value!r}")
    return ("lowpass", cutoff)
