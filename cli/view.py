"""`dyn view ROBOT TRAJECTORY -o motion.html`: one web page that plays the motion on the robot's meshes."""
import time

import click

from .common import (check_outputs, floating_base_option, load_robot, lock_option, model_warnings, naming, notice,
                     package_path_option, recording_source_options, robot_argument)


@click.command(epilog="""\b
Examples:
  dyn simulate robots/arm6.urdf --steps 2000 -o fall.csv && dyn view robots/arm6.urdf fall.csv -o fall.html
  dyn simulate scenarios/contact_unilateral_quadruped.yaml --columns q,qd,contact -o quad.csv
  dyn view scenarios/contact_unilateral_quadruped.yaml quad.csv --trace lf_foot -o quad.html
  dyn view robots/arm6.urdf fall.csv --fps 60 --trace tool0 -o fall60.html

\b
The page opens from the file in any current browser, with no network: the
viewer (meshcat's), the meshes and the motion are inside it. Open Controls (top
right) > Animations: play, pause, time. Add #t=SECONDS to its address to open
it paused at that time (seconds from the first sample), e.g. fall.html#t=0.5.

\b
ROBOT is a .urdf/.xacro file or a scenario .yaml: a scenario also gives the
floating base, the contact points of the contact.<name>.* force columns and the
ground plane. Without one, contact.<name> forces are drawn at the frame (link)
<name>. Meshes (.stl, .obj with its .mtl, .dae, .gltf, .glb): package://PKG/...
is looked up in --package-path folders, then ROS_PACKAGE_PATH,
AMENT_PREFIX_PATH, and the folders above the robot file; a mesh that cannot be
found or read is a warning naming the link and the file, not an error, and the
page shows a placeholder box there (the link's collision or inertia size).""")
@robot_argument
@click.argument("trajectory", metavar="TRAJECTORY")
@click.option("-o", "--output", metavar="PAGE.html", default=None,
              help="The page to write; '-' or absent: standard output.")
@floating_base_option
@lock_option
@package_path_option
@click.option("--columns", "column_map", metavar="MAP", default=None,
              help="Read q from columns with other names, as in 'dyn inverse --help' (e.g. 'q=pos_{joint}').")
@recording_source_options
@click.option("--fps", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Display rate: keyframes per second of motion (the page's size grows with it).")
@click.option("--trace", "traces", multiple=True, metavar="FRAME",
              help="Draw the path of this frame (a link) over the motion (repeatable).")
@click.option("--force-scale", type=click.FloatRange(min=0, min_open=True), default=None, metavar="M_PER_N",
              help="Length of the contact-force arrows, metres per newton [default: the robot's weight is "
                   "half its size].")
@click.option("--show", "show", multiple=True, metavar="inertia,com,collision",
              help="Draw what the numbers mean (a comma list): each body's equivalent inertia box, the centres "
                   "of mass (each body's and the robot's), the collision geometry.")
@click.option("--compare", metavar="OTHER.urdf", default=None,
              help="Draw the inertia boxes of this URDF of the same robot beside the robot's own (--show inertia), e.g. "
                   "the one 'dyn identify' wrote.")
@click.option("--max-triangles", type=click.IntRange(min=4), default=None, metavar="N",
              help="Decimate each mesh above N triangles to about N (quadric decimation): a smaller page "
                   "[default: meshes as they are].")
@click.pass_context
def view(ctx, robot, trajectory, output, floating_base, lock, package_path, column_map, topic, time_unit, fps, traces,
         force_scale, show, compare, max_triangles):
    """A self-contained web page that plays TRAJECTORY ('-': standard input) on ROBOT.

    Reads q (time and q.* columns, CSV or Parquet) and draws the robot's URDF
    <visual> geometry and meshes (or its collision geometry, or its link frames),
    contact-force arrows from contact.<name>.fx/fy/fz columns, the ground plane
    of contact scenarios and the traced frames. The page's size and the time it
    took go to standard error.
    """
    from dynlib.files.column_map import parse_column_map
    from dynlib.runs.view import write_view
    from dynlib.runs.view.runs import scenario_contacts

    start = time.perf_counter()
    check_outputs((output, "page", "-o/--output"), inputs=(robot, trajectory) + ((compare,) if compare else ()))
    with naming("--columns"):
        columns = parse_column_map(column_map) if column_map else None
    contacts = None
    if robot.lower().endswith((".yaml", ".yml")):
        from .common import Overrides

        overrides = Overrides()
        overrides.robot(floating_base, None, lock=lock)
        scenario = overrides.load(robot)
        model = scenario.model
        model_warnings(ctx, model)
        contacts = scenario_contacts(scenario)
    else:
        model = load_robot(ctx, robot, floating_base, package_path=package_path, lock=lock)
    other = None
    if compare is not None:
        from dynlib.runs.view.overlays import load_like

        other = load_like(model, compare, package_path)
        model_warnings(ctx, other)
    page = write_view(output, model, trajectory, columns=columns, topic=topic, time_unit=time_unit, fps=fps, traces=traces, contacts=contacts,
                      force_scale=force_scale, package_path=package_path, show=show, compare=other,
                      max_triangles=max_triangles)
    page_notice(ctx, output, page, time.perf_counter() - start)


def page_notice(ctx, output, page, seconds):
    """The page's warnings, then its size and build time, on standard error."""
    for w in page.warnings:
        notice(ctx, f"warning: {w}")
    notice(ctx, f"{'page' if output in (None, '-') else output}: {len(page.html) / 1e6:.2f} MB "
                f"({page.frames} frames for {page.duration:.6g} s, {page.meshes} mesh "
                f"file{'' if page.meshes == 1 else 's'}), built in {seconds:.2f} s")
