"""`dyn contact-id ROBOT TRAJ... --contact FRAME …`: joint torques and contact wrenches of a floating-base motion."""
import math

import click

from .common import (armature_option, check_value, compile_notice, derivative_options,
                     derivatives_notice, each_input, gravity_option, load_robot, lock_option, model_of_run, naming, notice,
                     output_option,
                     progress_counter, progress_option, read_motion, recording_options, robot_argument, with_option,
                     write_motion)


@click.command(epilog="""\b
Examples:
  dyn contact-id robots/quadruped.urdf scenarios/contact_id_quadruped.csv --point-contacts -o out.csv
  dyn contact-id robots/quadruped.urdf scenarios/contact_id_quadruped.csv \\
      --contact lf_foot --contact rf_foot --contact lh_foot --contact rh_foot --point-contacts -o out.csv
  dyn contact-id robots/quadruped.urdf scenarios/contact_id_quadruped.csv --contact lh_foot --contact rh_foot \\
      --guess lh_foot=0,0,60,0,0,0 --guess rh_foot=0,0,60,0,0,0 -o guessed.csv
  dyn contact-id robots/quadruped.urdf scenarios/contact_id_quadruped.csv --point-contacts \\
      --over-time --smoothing 100 --min-torque 1 -o smooth.parquet
  dyn contact-id robots/quadruped.urdf scenarios/contact_id_quadruped_noisy.csv --derivatives savgol \\
      --friction 0.7 --contact 'lf_foot@:0.99,1.6:' --contact rf_foot --contact lh_foot --contact rh_foot \\
      --point-contacts -o cone.csv

\b
Output per row: time, tau.* (the root's six entries zero), contact.<frame>.fx … tz
(the wrench the ground applies at the frame origin, world-aligned axes, N and N·m),
residual.root (the norm of the root equations' residual before zeroing: ~0 when
the contacts explain the motion; the whole root wrench in flight), with
--friction, friction.feasible (1, or 0 where no wrench in the cones meets the root
equations: the closest one is written there, with its residual) and, with --with
limits, over_limit.<joint> (1 where |tau| exceeds the joint's URDF effort limit).

\b
Several contacts: the wrenches nearest (least squares) to the --guess values
(unguessed contacts guessed zero) that meet the root equations; without guesses
the ones that minimise the sum of w'Ww, W = diag(0.01, 0.01, 0.01, 1, 1, 1).
--over-time solves all rows together, trading --smoothing (weight on the sum of
|w_t - w_t-1|^2) against --min-torque (weight on the sum of w'Ww).

\b
Contacts that come and go: FRAME@START:STOP (seconds, closed; repeat for more
windows; either bound may be left out) and/or a column active.<frame> in TRAJ
(non-zero: in contact). Without --contact, the frames of the active.* columns.
A free-flyer root is added when the URDF has none. Time windows are in the
output's time: seconds from the first sample.

\b
Several TRAJ: read in one process, -o a folder or a {stem} name, a failing
one named and the others written, as by 'dyn inverse' (see its --help).

\b
TRAJ is read as by 'dyn inverse' (see its --help): dyn's CSV or Parquet, a
PlotJuggler export with the root's pose mapped by --columns
(q.root.x=/odom/pose/pose/position/x, …); measured efforts are written as
effort.* with residual.<joint> = effort - tau.""")
@robot_argument
@click.argument("traj", metavar="TRAJ...", nargs=-1, required=True)
@click.option("--contact", "contacts", multiple=True, metavar="FRAME[@START:STOP]",
              help="A contact frame (a link name), optionally with a time window. Repeatable.")
@click.option("--point-contacts", is_flag=True,
              help="Contacts transmit forces only (zero moments), e.g. a quadruped's feet.")
@click.option("--guess", "guesses", multiple=True, metavar="FRAME=fx,fy,fz,tx,ty,tz",
              help="A wrench guess for a contact. Repeatable.")
@click.option("--over-time", is_flag=True, help="Solve all rows in one sparse problem.")
@click.option("--smoothing", type=float, default=None, metavar="W",
              callback=lambda ctx, param, v: v if v is None else check_value(
                  v, math.isfinite(v) and v >= 0, "smoothing must be a finite number >= 0"),
              help="With --over-time: weight on the wrenches' changes between rows [default: 1].")
@click.option("--min-torque", type=float, default=None, metavar="W",
              callback=lambda ctx, param, v: v if v is None else check_value(
                  v, math.isfinite(v) and v > 0, "min_torque must be a finite number > 0"),
              help="With --over-time: weight on the weighted wrench norm (> 0) [default: 1].")
@click.option("--friction", type=float, default=None, metavar="MU",
              callback=lambda ctx, param, v: v if v is None else check_value(
                  v, math.isfinite(v) and v >= 0, "friction coefficient must be a finite number >= 0"),
              help="Normal forces >= 0 and forces in the Coulomb cone of coefficient MU (ground normal +z).")
@output_option
@lock_option
@gravity_option
@armature_option
@derivative_options
@recording_options
@click.option("--floating-base", is_flag=True, hidden=True, help="Implied: contact-id always has a free-flyer root.")
@progress_option
@with_option
@click.pass_context
def contact_id(ctx, robot, traj, contacts, point_contacts, guesses, over_time, smoothing, min_torque, friction,
               output, lock, gravity, armature, derivatives, window, polyorder, column_map, no_joint_friction,
               friction_smoothing, topic, time_unit, resample, joint_order, clock, absolute_time, floating_base,
               no_progress, with_parts):
    """Torques and ground-contact wrenches of the floating-base motion in each TRAJ ('-': standard input).

    The root's six coordinates are unactuated: what holds the body up comes
    through the contact frames, not through an imaginary crane on the root.
    """
    from dynlib.files.recordings import read_ahead

    read_ahead(traj[0])  # a CSV or Parquet file is parsed in a thread while numba imports and the kernels load
    from dynlib.files.column_map import parse_column_map

    if not over_time:
        given = [name for name, value in (("--smoothing", smoothing), ("--min-torque", min_torque)) if value is not None]
        if given:
            raise click.UsageError(f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} only with --over-time")
    guess = {}
    for text in guesses:
        with naming("--guess"):
            frame, w = parse_guess(text)
        if frame in guess:
            raise click.BadParameter(f"two guesses for '{frame}'", param_hint="--guess")
        guess[frame] = w
    with naming("--columns"):
        columns = parse_column_map(column_map) if column_map else None
    run = dict(guess=guess, over_time=over_time, smoothing=1.0 if smoothing is None else smoothing,
               min_torque=1.0 if min_torque is None else min_torque, friction=friction, point=point_contacts,
               derivatives=derivatives, window=window, polyorder=polyorder, joint_friction=not no_joint_friction,
               over_limit="limits" in with_parts)
    reading = (columns, topic, time_unit, resample, clock, joint_order)
    setup = {}

    def before():
        setup["model"], setup["contacts"] = _robot_and_contacts(ctx, robot, gravity, armature, lock, contacts, guess)
        if run["over_limit"]:  # a robot without effort limits: one error line before any recording is read
            from dynlib.motion.inverse import effort_limited

            with naming("--with"):
                effort_limited(setup["model"])

    def one(source, out):
        rec = read_motion(ctx, setup["model"], source, *reading)
        model, eps = model_of_run(ctx, setup["model"], rec, gravity, no_joint_friction, friction_smoothing)
        if "said" not in setup:
            setup["said"] = compile_notice(ctx)
        names, table = _solve(ctx, model, rec, setup["contacts"], run, eps, no_progress)
        write_motion(ctx, out, names, table, robot, rec, absolute_time)

    each_input(ctx, robot, traj, output, one, before=before)


def _robot_and_contacts(ctx, robot, gravity, armature, lock, contacts, guess):
    """The robot with a free-flyer root (the options' warnings said once) and the parsed --contact values,
    checked against the --guess frames."""
    model = load_robot(ctx, robot, False, gravity, armature=armature, lock=lock, strict=False)
    if not model.has_floating_base:  # the same options on the robot with a free-flyer root (warned once)
        said = set(model.warnings)
        model = load_robot(ctx, robot, True, gravity, warn=False, armature=armature, lock=lock, strict=False)
        for w in dict.fromkeys(w for w in model.warnings if w not in said):  # what the free-flyer adds
            notice(ctx, f"warning: {w}")
    with naming("--contact"):  # the options' own mistakes, named by option, before the file is read
        contacts = [parse_contact(text) for text in contacts]
        frames = [model.frame_names[model.frame_id(f)] for f in dict.fromkeys(c.frame for c in contacts)]
    unknown = [f for f in guess if frames and f not in frames]
    if unknown:
        raise click.BadParameter(f"guess for '{unknown[0]}', which is not a contact; contacts: {', '.join(frames)}",
                                 param_hint="--guess")
    return model, contacts


def _solve(ctx, model, rec, contacts, run, friction_smoothing, no_progress):
    """(names, table) of one recording's contact inverse dynamics; its notices on standard error."""
    from dynlib.motion.contact_id import contact_inverse_dynamics

    with progress_counter(ctx, no_progress, "friction cones", "rows") as progress:
        result = contact_inverse_dynamics(model, rec.trajectory, contacts, guesses=run["guess"],
                                          friction_smoothing=friction_smoothing, progress=progress,
                                          **{k: v for k, v in run.items() if k not in ("guess", "over_limit")})
    derivatives_notice(ctx, run["derivatives"], result.derivatives)
    flight = ~result.active.any(axis=1)
    if flight.any():
        notice(ctx, f"{int(flight.sum())} of {len(flight)} rows without contact ({_times(result.time, flight)}): "
                    "zero wrenches, residual.root is the whole root wrench there")
    if not result.feasible.all():
        bad = ~result.feasible
        notice(ctx, f"warning: friction cones infeasible at {int(bad.sum())} of {len(bad)} rows "
                    f"({_times(result.time, bad)}): friction.feasible = 0 there, with the wrenches in the cones "
                    "that come closest to the root equations (residual.root > 0)")
    for over in result.over_limit(model):
        notice(ctx, f"warning: {over.message()}")
    return result.table(model, over_limit=run["over_limit"])


def parse_contact(text):
    """``FRAME`` or ``FRAME@START:STOP[,START:STOP…]`` (either bound may be left out)
    -> a `dynlib.motion.contact_id.ContactFrame`; InputError naming the text otherwise."""
    from dynlib.motion.contact_id import ContactFrame
    from dynlib.errors import InputError

    frame, at, spec = str(text).partition("@")
    frame = frame.strip()
    if not frame:
        raise InputError(f"contact {text!r}: expected FRAME or FRAME@START:STOP")
    if not at:
        return ContactFrame(frame)
    windows = []
    for part in spec.split(","):
        start, colon, stop = part.partition(":")
        try:
            lo = float(start) if start.strip() else -math.inf
            hi = float(stop) if stop.strip() else math.inf
        except ValueError:
            lo = hi = math.nan
        if not colon or math.isnan(lo) or math.isnan(hi) or lo > hi:
            raise InputError(f"contact {text!r}: time window {part!r} is not START:STOP with "
                             "START <= STOP (seconds; either may be left out)")
        windows.append((lo, hi))
    return ContactFrame(frame, tuple(windows))


def parse_guess(text):
    """``FRAME=fx,fy,fz,tx,ty,tz`` -> (frame, six floats); InputError naming the text otherwise."""
    from dynlib.errors import InputError

    frame, eq, values = str(text).partition("=")
    try:
        w = tuple(float(x) for x in values.split(","))
    except ValueError:
        w = ()
    if not eq or not frame.strip() or len(w) != 6 or not all(math.isfinite(x) for x in w):
        raise InputError(f"guess {text!r} is not FRAME=fx,fy,fz,tx,ty,tz (six finite numbers: "
                         "force in N, moment in N·m, world-aligned axes at the frame origin)")
    return frame.strip(), w


def _times(t, rows, show=4):
    """'t = 0.1–0.25 s, 0.4 s, … (N spans)' for the runs of True in `rows`."""
    import numpy as np

    edges = np.flatnonzero(np.diff(np.r_[0, rows.astype(np.int8), 0]))
    spans = list(zip(edges[::2], edges[1::2] - 1))
    text = ", ".join(f"{t[a]:.6g}" if a == b else f"{t[a]:.6g}–{t[b]:.6g}" for a, b in spans[:show])
    more = f", … ({len(spans)} spans)" if len(spans) > show else ""
    return f"t = {text} s{more}"
