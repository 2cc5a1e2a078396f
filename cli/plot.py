"""`dyn plot TRAJ`: chosen columns of a trajectory file against time, as a figure."""
import click

from .common import check_outputs


@click.command(epilog="""\b
Examples:
  dyn plot traj.csv -o q.png                          # every q.* column
  dyn plot traj.csv --columns 'q.*' --columns 'tau.*' -o fig.png
  dyn simulate robots/arm6.urdf --steps 2000 | dyn plot - --columns 'energy.*' -o energy.png""")
@click.argument("traj", metavar="TRAJ")
@click.option("--columns", "patterns", multiple=True, metavar="PATTERN",
              help="Glob pattern of columns to plot (repeatable) [default: q.*]. One panel per group (q, qd, tau, …).")
@click.option("-o", "--output", required=True, metavar="FIGURE.png", help="Figure file (.png, .pdf or .svg).")
@click.option("--title", default="", help="Figure title.")
def plot(traj, patterns, output, title):
    """Plot columns of the trajectory file TRAJ ('-': standard input) against time."""
    from dynlib.figures import trajectory_figure
    from dynlib.trajectory import read_trajectory

    check_outputs((output, "figure", "-o/--output"), inputs=(traj,))
    trajectory_figure(read_trajectory(traj), list(patterns), output, title=title or str(traj))
