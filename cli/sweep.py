"""`dyn sweep SCENARIO -o OUTDIR`: every variant of a scenario's `sweep:` block, in parallel.

Thin: `dynlib.runs.sweep.plan_sweep` expands and validates the variants,
`dynlib.runs.sweep.run_sweep` runs them (local processes or a Dask cluster) and
writes the trajectories and OUTDIR/summary.csv; this module renders the
progress on standard error and turns a diverged or failed variant into exit
code 1 at the end.
"""

import click

from .common import StatusLine, check_outputs, model_warnings, notice, progress_option, show_progress


@click.command(epilog="""\b
Examples:
  dyn sweep scenarios/sweep_arm6_pd.yaml --dry-run              # list the variants
  dyn sweep scenarios/sweep_arm6_pd.yaml -o pd_sweep            # one process per core
  dyn sweep scenarios/sweep_arm6_pd.yaml -o pd_sweep --workers 2 --format parquet
  dyn sweep scenarios/sweep_arm6_pd.yaml -o pd_sweep --scheduler tcp://10.0.0.5:8786

\b
OUTDIR gets one trajectory per variant (<variant>-<hash>.csv) and summary.csv:
variant, each swept key path, status (ok, diverged, failed), path, final
energy, energy drift, max contact force, final state, the file's bytes and
sha256, hash, message. A rerun
skips the variants already done (ok or diverged, their file verified against
the size and SHA-256 in its record), so an interrupted sweep resumes; failed
ones, and ones whose file is missing or changed, run again. OUTDIR is locked
while a sweep runs in it, and a folder holding a summary.csv that dyn sweep
did not write is refused. With --scheduler the variants run on a Dask
cluster ('pip install dyn[dask]'; 'dask scheduler' on one machine, 'dask worker
tcp://HOST:8786 --nthreads 1 --nworkers N' on each of the others) and the
files are written here, the same bytes as a local run.""")
@click.argument("scenario", metavar="SCENARIO", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "outdir", metavar="OUTDIR", default=None,
              help="Output folder (created if needed): the trajectories and summary.csv.  [required, "
                   "except with --dry-run]")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes [default: the core count].")
@click.option("--scheduler", metavar="tcp://HOST:PORT", default=None,
              help="Run on the Dask distributed cluster of this scheduler instead of local processes.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default=None,
              help="Trajectory format [default: the extension of the scenario's output.path, else csv].")
@click.option("--dry-run", is_flag=True, help="List the variants (CSV on standard output) and run nothing.")
@click.option("--view", is_flag=True,
              help="Also write a web page per variant (next to its trajectory) and OUTDIR/index.html linking them.")
@progress_option
@click.pass_context
def sweep(ctx, scenario, outdir, workers, scheduler, fmt, dry_run, view, no_progress):
    """Run every variant of SCENARIO's sweep: block and write OUTDIR/summary.csv.

    Exit code 1 if a variant diverged or failed (the others still run and are
    all in the summary).
    """
    from dynlib.runs.sweep import plan_sweep

    if workers is not None and scheduler is not None:
        raise click.UsageError("give either --workers (local processes) or --scheduler (a Dask cluster), not both")
    if not dry_run:
        check_outputs((outdir, "folder", "-o/--output"), inputs=(scenario,))
    planning = StatusLine(show_progress(ctx, no_progress), every=0.1)  # cleared before the listing's notice
    try:
        plan = plan_sweep(scenario, progress=lambda done, total: planning.draw(
            f"sweep: {done}/{total} variants checked", final=done == total))
    finally:
        planning.clear()
    model_warnings(ctx, plan.base.model)
    if dry_run:
        _list(ctx, plan, outdir, fmt)
        return
    if outdir is None:
        raise click.UsageError("missing -o/--output OUTDIR (the folder for the trajectories and summary.csv)")
    from dynlib.runs.sweep import run_sweep

    if scheduler is None:
        from dynlib.runs.sweep.worker import loop_ready

        if not loop_ready():
            notice(ctx, "compiling the simulation loop (first run only; later runs load it from the cache)…")
    status = _Status(ctx, show_progress(ctx, no_progress))
    pages = []
    if view:  # written while the folder is still this sweep's
        from dynlib.runs.view.runs import write_sweep_views

        def then(report):
            status.close()
            pages.append(write_sweep_views(report))
    try:
        report = run_sweep(plan, outdir, workers=workers, scheduler=scheduler, fmt=fmt, progress=status,
                           then=then if view else None)
    finally:
        status.close()
    if report.unlocked:
        notice(ctx, f"warning: {outdir} was not locked ({report.unlocked}): a second dyn sweep into it would not "
                    "have been kept out")
    notice(ctx, f"sweep: {report.total} variants ({plan.shape}): {report.count('ok')} ok, "
                f"{report.count('diverged')} diverged, {report.count('failed')} failed"
                f"{f' ({report.skipped} already done)' if report.skipped else ''}; summary in {report.summary_path}")
    if pages:
        written, warnings, index = pages[0]
        for w in warnings:
            notice(ctx, f"warning: {w}")
        notice(ctx, f"sweep: {written} pages written; index in {index}")
    if not report.ok:
        raise report.error()


def _list(ctx, plan, outdir, fmt):
    from dynlib.runs.sweep import variants_csv

    click.echo(variants_csv(plan, outdir, fmt), nl=False)
    notice(ctx, f"{len(plan)} variants ({plan.shape})")


class _Status:
    """progress(report, variant): a `StatusLine` on a terminal; a line per diverged or failed variant."""

    def __init__(self, ctx, live):
        self.ctx = ctx
        self.line = StatusLine(live)
        self.close = self.line.close

    def __call__(self, report, variant):
        if variant is None:  # before the first: the earlier results that are not kept
            for v, why in report.redo:
                notice(self.ctx, f"warning: {v.name} runs again: {why}")
        row = None if variant is None else report.rows[variant.index]
        if row is not None and row["status"] != "ok":
            self.line.clear()
            notice(self.ctx, f"warning: {variant.name} ({variant.describe()}) {row['status']}: {row['message']}")
        text = f"sweep: {report.done}/{report.total} variants done, {report.failures} failed"
        self.line.draw(text + (f" ({report.skipped} done before)" if report.skipped else ""))
