"""`dyn inverse ROBOT TRAJ`: the motor torques behind a recorded trajectory (inverse dynamics)."""
import click

from .common import (check_outputs, compile_notice, derivative_options, floating_base_option, gravity_option,
                     load_robot, naming, notice, output_option, robot_argument)


@click.command(epilog="""\b
Examples:
  dyn inverse robots/arm6.urdf traj.csv -o tau.csv
  dyn simulate robots/arm6.urdf --steps 2000 --tau 1,2,3,0,0,0 | dyn inverse robots/arm6.urdf -
  dyn inverse robots/arm6.urdf recording.csv --derivatives savgol --window 0.1 -o tau.parquet
  dyn inverse robots/quadruped.urdf --floating-base walk.parquet -o tau.csv
  dyn inverse robots/arm6.urdf export.csv --columns 'q=/joint_states/{joint}/position' \\
      --derivatives savgol -o tau.csv

\b
Derivatives: 'given' reads qd.* and qdd.* (the default when they are there);
'central' and 'savgol' estimate them from q alone (the default when they are
not there is 'central'). Use 'savgol' for a real, noisy recording: central
differences amplify noise by 1/dt^2 in the accelerations.

\b
Column map (--columns): comma-separated KEY=VALUE; KEY q, qd or qdd with a
template using {joint} (the coordinate name from 'dyn info') or {index} (its
0-based position there), or one coordinate as q.<name>=COLUMN, e.g.
  --columns 'q=pos_{joint},qd=vel_{joint},qdd=acc_{joint}'
  --columns 'q=position{index},q.elbow=elbow_angle'""")
@robot_argument
@click.argument("traj", metavar="TRAJ")
@output_option
@floating_base_option
@gravity_option
@derivative_options
@click.option("--keep-columns", is_flag=True, help="Also write the input's columns (its tau.* are replaced).")
@click.pass_context
def inverse(ctx, robot, traj, output, floating_base, gravity, derivatives, window, polyorder,
            no_joint_friction, friction_smoothing, column_map, keep_columns):
    """The motor torques tau.* that produce the motion in TRAJ ('-': standard input).

    Reads a CSV or Parquet trajectory (time, q.*, optionally qd.* and qdd.*) and
    writes time and tau.<v_name> for every row: M(q) qdd + h(q, qd) plus the URDF
    joint friction (damping·qd + friction·tanh(qd/ε)). With --floating-base the
    root's tau.root.fx … tz is the wrench the root would need (no contacts).
    """
    from dynlib.derivatives import parse_column_map
    from dynlib.inverse import inverse_dynamics_trajectory
    from dynlib.trajectory import read_trajectory, write_trajectory

    with naming("--columns"):
        columns = parse_column_map(column_map) if column_map else None
    check_outputs((output, "trajectory", "-o/--output"), inputs=(robot, traj))
    model = load_robot(ctx, robot, floating_base, gravity)
    data = read_trajectory(traj)
    compile_notice(ctx)
    result = inverse_dynamics_trajectory(
        model, data, derivatives=derivatives, window=window, polyorder=polyorder,
        joint_friction=not no_joint_friction, friction_smoothing=friction_smoothing,
        columns=columns, keep_columns=keep_columns)
    if derivatives == "auto" and result.derivatives != "given":
        notice(ctx, f"no qd.*/qdd.* columns: velocities and accelerations by {result.derivatives} differences "
                    "(for a noisy recording use --derivatives savgol)")
    write_trajectory(output, result.names, result.data, source=robot)
