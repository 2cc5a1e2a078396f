"""`dyn inverse ROBOT TRAJ...`: the motor torques behind recorded trajectories (inverse dynamics)."""
import click

from .common import (armature_option, compile_notice, derivative_options, derivatives_notice, each_input,
                     floating_base_of_run, floating_base_option, gravity_option, load_robot, lock_option, model_of_run,
                     naming, notice, output_option, read_motion, recording_options, robot_argument, with_option,
                     write_motion)


@click.command(epilog="""\b
Examples:
  dyn inverse robots/arm6.urdf traj.csv -o tau.csv
  dyn simulate robots/arm6.urdf --steps 2000 --tau 1,2,3,0,0,0 | dyn inverse robots/arm6.urdf -
  dyn inverse robots/arm6.urdf run_bag --derivatives savgol -o tau.parquet   # a ROS 2 bag (folder)
  dyn inverse robots/arm6.urdf run_bag --topic /joint_states -o tau.csv     # ROS 1 .bag, .db3, .mcap alike
  dyn inverse robots/quadruped.urdf --floating-base walk.parquet -o tau.csv
  dyn inverse robots/arm6.urdf a.csv b.parquet -o torques/       # torques/a.csv, torques/b.csv
  dyn inverse robots/arm6.urdf run_bag --topic /joint_states -o 'torques/{stem}.parquet'
  dyn inverse robots/arm7.urdf held.csv --with limits -o marked.parquet   # over_limit.<joint> columns

\b
Several recordings: one process reads them all (the robot is loaded and the
kernels are loaded once); -o is a folder (ending in '/', made when missing:
FOLDER/<name>.csv) or a name with {stem}. A recording that fails is one error
line and the others are still written; the command then exits 2 naming it.

\b
Recordings: ROS 1 bags, ROS 2 bags (a folder, .db3 or .mcap), rostopic echo -p
CSV and PlotJuggler CSV exports are recognised by their content. Joints are
matched by the names in each JointState message (any order; a message without
one of the robot's joints is an error); time is header.stamp (--clock log: the
bag's log time), and a sample stamped out of the driver's rhythm is an error
naming it. A Parquet file written by dyn simulate carries the run's gravity,
floating base and joint friction, used where no option chooses (a CSV cannot
carry them: give --gravity). The output's time
is in seconds from the first sample (the recording's clock: Parquet metadata
dyn.time.start, or --absolute-time). Measured efforts are written as effort.*
with residual.* = effort - tau.

\b
Derivatives: 'given' reads qd.* and qdd.* (the default when they are there);
'central' and 'savgol' estimate them from q alone (the default when there is no
qdd.* is 'central'). Use 'savgol' for a real, noisy recording: central
differences amplify noise by 1/dt^2 in the accelerations. Savitzky-Golay needs
uniform samples: --resample HZ first for jittery stamps.

\b
Column map (--columns, for CSV and Parquet): comma-separated KEY=VALUE; KEY q,
qd, qdd or effort with a template using {joint} (the coordinate name from 'dyn
info') or {index} (the joint's 0-based position in --joint-order, the file's
order, which {index} needs), one coordinate as q.<name>=COLUMN, or time=COLUMN
(with a median step over 0.5 s it needs --time-unit), e.g.
  --columns 'q=pos_{joint},qd=vel_{joint},qdd=acc_{joint}'
  --columns 'q=position{index},time=t_ms' --time-unit ms --joint-order b,a,c
A file that names its joints (rostopic, PlotJuggler) is read by those names; a
map that contradicts them is an error.""")
@robot_argument
@click.argument("traj", metavar="TRAJ...", nargs=-1, required=True)
@output_option
@floating_base_option
@lock_option
@gravity_option
@armature_option
@derivative_options
@recording_options
@click.option("--keep-columns", is_flag=True, help="Also write the input's columns (its tau.* are replaced) and the qd.* and qdd.* used "
                   "(given, or estimated from q).")
@with_option
@click.pass_context
def inverse(ctx, robot, traj, output, floating_base, lock, gravity, armature, derivatives, window, polyorder,
            no_joint_friction, friction_smoothing, column_map, topic, time_unit, resample, joint_order, clock,
            absolute_time, keep_columns, with_parts):
    """The motor torques tau.* that produce the motion in each TRAJ ('-': standard input).

    Reads a recording (a ROS bag, a rostopic or PlotJuggler CSV, or dyn's CSV or
    Parquet: time, q.*, optionally qd.*, qdd.*, effort.*) and writes time and
    tau.<v_name> for every sample: M(q) qdd + h(q, qd) plus the URDF joint
    friction (damping·qd + friction·tanh(qd/ε)). With --floating-base the root's
    tau.root.fx … tz is the wrench the root would need (no contacts).
    """
    from dynlib.files.recordings import read_ahead

    read_ahead(traj[0])  # a CSV or Parquet file is parsed in a thread while numba imports and the kernels load
    from dynlib.files.column_map import parse_column_map
    from dynlib.motion.inverse import inverse_dynamics_trajectory

    with naming("--columns"):
        columns = parse_column_map(column_map) if column_map else None
    robots, bases, said = {}, {}, []  # floating base -> model, loaded once (its warnings said once); input -> base

    def base(source):
        if source not in bases:
            bases[source] = floating_base_of_run(ctx, source, floating_base)
        return bases[source]

    def load(fb):
        if bool(fb) not in robots:
            robots[bool(fb)] = load_robot(ctx, robot, fb, gravity, armature=armature, lock=lock, strict=False)
        return robots[bool(fb)]

    def one(source, out):
        model = load(base(source))
        rec = read_motion(ctx, model, source, columns, topic, time_unit, resample, clock, joint_order)
        model, smoothing = model_of_run(ctx, model, rec, gravity, no_joint_friction, friction_smoothing)
        if not said:
            said.append(compile_notice(ctx))
        result = inverse_dynamics_trajectory(
            model, rec.trajectory, derivatives=derivatives, window=window, polyorder=polyorder,
            joint_friction=not no_joint_friction, friction_smoothing=smoothing, keep_columns=keep_columns)
        derivatives_notice(ctx, derivatives, result.derivatives)
        for over in result.over_limit(model):
            notice(ctx, f"warning: {over.message()}")
        if "limits" in with_parts:
            result = result.with_over_limit(model)
        write_motion(ctx, out, result.names, result.data, robot, rec, absolute_time)

    def before():
        model = load(base(traj[0]) if len(traj) == 1 else floating_base)
        if "limits" in with_parts:  # a robot without effort limits: one error line before any recording is read
            from dynlib.motion.inverse import effort_limited

            with naming("--with"):
                effort_limited(model)

    each_input(ctx, robot, traj, output, one, before=before)
