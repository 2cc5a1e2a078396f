"""`dyn info ROBOT`: the kinematic tree, coordinates, masses and frames of a robot."""
import json

import click

from .common import floating_base_option, gravity_option, load_robot, lock_option, robot_argument


@click.command(epilog="""\b
Examples:
  dyn info robots/arm6.urdf
  dyn info robots/quadruped.urdf --floating-base --json > quadruped.json""")
@robot_argument
@floating_base_option
@lock_option
@gravity_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def info(ctx, robot, floating_base, lock, gravity, as_json):
    """Show ROBOT's tree: joints, types, DoF, q/v/tau layout, masses, frames, warnings.

    The q, v and tau names are those of --q0, --qd0, --tau and of the trajectory
    columns q.<name>, qd.<name>, qdd.<name>, tau.<name>.
    """
    model = load_robot(ctx, robot, floating_base, gravity, warn=False, lock=lock, strict=False)  # listed below (and in --json)
    s = model.summary()
    s["tau_names"] = list(model.tau_names)  # --tau and tau.*: a free-flyer names its wrench (root.fx), not root.vx
    if as_json:
        click.echo(json.dumps(_finite(s), indent=2, allow_nan=False))
        return
    from dynlib.errors import shown  # a file name that is not UTF-8: its bytes as \xNN

    click.echo(f"robot {s['robot']}  ({shown(str(s['source']))})")
    click.echo(f"  nq = {s['nq']}, nv = {s['nv']}, moving bodies = {s['bodies']}, frames = {len(s['frames'])}")
    click.echo(f"  total mass = {s['total_mass']:.6g} kg (moving {s['moving_mass']:.6g} kg), "
               f"gravity = ({', '.join(f'{g:g}' for g in s['gravity'])})")
    rows = [("joint", "type", "parent", "link", "q", "v", "mass [kg]")]
    for j in s["joints"]:
        rows.append((j["name"], j["type"], j["parent"], j["link"],
                     _span(j["idx_q"], len(j["q"])), _span(j["idx_v"], len(j["v"])), f"{j['body_mass']:.4g}"))
    click.echo("")
    _table(rows)
    click.echo("")
    click.echo("q = " + " ".join(s["q_names"]))
    click.echo("v = " + " ".join(s["v_names"]))
    click.echo("tau = " + " ".join(s["tau_names"]))
    click.echo("")
    click.echo("frames (link: moved by joint): " + ", ".join(f"{f['name']}: {f['joint']}" for f in s["frames"]))
    if model.coupling is not None:
        c = model.coupling
        click.echo("mimic (coupled: one coordinate per leader, its followers' positions from it): "
                   + ", ".join(c.describe()))
        click.echo(f"  coupled coordinates (dynlib.coupled_rnea, coupled_crba, coupled_aba): nq = {c.nq}, nv = {c.nv}")
    if s["locked"]:
        click.echo("locked (held, merged as fixed joints): " + ", ".join(f"{j} = {x}" for j, x in s["locked"].items()))
    if s["warnings"]:
        click.echo("")
        for w in s["warnings"]:
            click.echo(f"warning: {w}")


def _span(start, n):
    return f"{start}" if n == 1 else f"{start}..{start + n - 1}"


def _finite(x):
    """JSON has no infinity: unbounded limits become null."""
    if isinstance(x, float):
        return x if x == x and abs(x) != float("inf") else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def _table(rows):
    widths = [max(len(str(r[c])) for r in rows) for c in range(len(rows[0]))]
    for r in rows:
        click.echo("  " + "  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())
