"""Pages for runs: a simulation just made (`dyn simulate --view`) and a sweep's variants
(`dyn sweep --view`: one page per variant next to its trajectory, and OUTDIR/index.html
linking them with the summary)."""
from __future__ import annotations

import html
import os
from pathlib import Path

import numpy as np

from ...errors import DynError, shown


def scenario_contacts(scenario):
    """The contact setting `build_view` takes, from a scenario (None without contacts)."""
    c = getattr(scenario, "contacts", None)
    if c is None:
        return None
    from ..scenario.run import initial_state

    return {"points": c.points, "height": c.ground.height, "normal": c.ground.normal,
            "q0": initial_state(scenario)[0]}  # where offset_world is measured


def result_playback(result, source: str):
    """A `dynlib.sim.simulate.SimulationResult`'s rows as a `Playback` (contact forces included)."""
    from . import Playback

    forces = {}
    if result.contact_force is not None:
        forces = {n: np.asarray(result.contact_force[:, i, :]) for i, n in enumerate(result.contact_names)}
    return Playback(np.asarray(result.time), np.asarray(result.q), forces, result.contact_force is not None, source)


def write_result_view(path, scenario, result, **options):
    """The page of a simulation result (`dyn simulate --view PAGE`), written atomically."""
    from . import build_view, _write

    source = scenario.output_path or scenario.source or scenario.robot
    page = build_view(scenario.model, result_playback(result, os.path.basename(str(source))),
                      contacts=scenario_contacts(scenario), **options)
    _write(path, page.html)
    return page


def write_sweep_views(report, **options):
    """A page per finished variant of a `dynlib.runs.sweep.SweepReport` (``<trajectory>.html`` next
    to its trajectory; kept when newer than it and whole) and OUTDIR/index.html. Returns
    (pages written, warnings, index path)."""
    from . import build_view, read_playback, _write

    outdir = Path(report.outdir)
    variants = {v.index: v for v in report.plan.variants}
    written, warnings, rows = 0, [], []
    for index, row in sorted(report.rows.items()):
        v = variants[index]
        page_name = None
        if row.get("path"):
            traj = outdir / row["path"]
            page = traj.with_suffix(".html")
            page_name = page.name
            try:
                if not (_whole_page(page) and page.stat().st_mtime >= traj.stat().st_mtime):
                    sc = v.scenario
                    built = build_view(sc.model, read_playback(sc.model, traj), contacts=scenario_contacts(sc),
                                       title=f"{v.name}: {v.describe() or 'base scenario'}", **options)
                    _write(page, built.html)
                    written += 1
                    warnings += [f"{v.name}: {w}" for w in built.warnings]
            except (DynError, OSError) as exc:
                warnings.append(f"{v.name}: no page ({exc})")
                page_name = None
        rows.append((v, row, page_name))
    index = outdir / "index.html"
    _write(index, shown(_index_html(report.plan, rows)).encode("utf-8"))  # a name that is not UTF-8: \xNN
    return written, list(dict.fromkeys(warnings)), index


def _whole_page(path) -> bool:
    """Whether `path` is a page of dyn view's that was written whole (not truncated or emptied)."""
    try:
        with open(path, "rb") as f:
            start = f.read(16)
            f.seek(max(0, os.fstat(f.fileno()).st_size - 32))
            end = f.read()
    except OSError:
        return False
    return start.startswith(b"<!DOCTYPE html>") and end.rstrip().endswith(b"</html>")


def _index_html(plan, rows) -> str:
    params = list(plan.parameters)
    head = "".join(f"<th>{html.escape(str(p))}</th>" for p in ["variant", *params, "status", "page", "trajectory"])
    body = []
    for v, row, page in rows:
        cells = [html.escape(v.name)] + [html.escape(str(row.get(p, ""))) for p in params]
        cells.append(f'<span class="{html.escape(row["status"])}">{html.escape(row["status"])}</span>')
        cells.append(f'<a href="{html.escape(page)}">view</a>' if page else "")
        cells.append(f'<a href="{html.escape(row["path"])}">{html.escape(row["path"])}</a>' if row.get("path") else "")
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dyn sweep: {html.escape(Path(plan.source).name)}</title>
<style>body {{ font-family: sans-serif; margin: 1.5em; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }} .diverged, .failed {{ color: #b00; }}</style>
</head><body>
<h1>{html.escape(Path(plan.source).name)}: {len(plan)} variants ({html.escape(plan.shape)})</h1>
<p>Each page plays its variant's motion (dyn view). The numbers are in <a href="summary.csv">summary.csv</a>.</p>
<table><tr>{head}</tr>
{chr(10).join(body)}
</table></body></html>
"""
