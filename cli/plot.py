"""`dyn plot TRAJ`: chosen columns of a trajectory file against time, as a figure."""
import click

from .common import check_outputs


@click.command(epilog="""\b
Examples:
  dyn plot traj.csv -o q.png                          # every q.* column
  dyn plot traj.csv --columns 'q.*' --columns 'tau.*' -o fig.png
  dyn simulate robots/arm6.urdf --steps 2000 --columns q,energy | dyn plot - --columns 'energy.*' -o energy.png
  dyn plot traj.csv --robot robots/arm6.urdf --columns 'tau.*' -o tau.png   # units per joint""")
@click.argument("traj", metavar="TRAJ")
@click.option("--columns", "patterns", multiple=True, metavar="PATTERN",
              help="Glob pattern of columns to plot (repeatable) [default: q.*]. One panel per group (q, qd, tau, …).")
@click.option("-o", "--output", required=True, metavar="FIGURE.png", help="Figure file (.png, .pdf or .svg).")
@click.option("--title", default=None, help="Figure title [default: the parts plotted and the file's name].")
@click.option("--robot", metavar="ROBOT", type=click.Path(dir_okay=False), default=None,
              help="The robot's URDF, to label each joint column in its unit (rad or m, N·m or N).")
def plot(traj, patterns, output, title, robot):
    """Plot columns of the trajectory file TRAJ ('-': standard input) against time."""
    from dynlib.files.figures import trajectory_figure
    from dynlib.files.trajectory import read_trajectory

    check_outputs((output, "figure", "-o/--output"), inputs=(traj,) + ((robot,) if robot else ()))
    joint_types = None
    if robot is not None:
        from dynlib.files.figures import joint_types_of

        joint_types = joint_types_of(robot)
    trajectory_figure(read_trajectory(traj), list(patterns), output, title=title, joint_types=joint_types)
