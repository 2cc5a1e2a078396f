"""`dyn excite ROBOT`: an excitation trajectory for identification, within the URDF's limits."""
import math

import click

from .common import (check_outputs, check_value, compile_notice, gravity_option, load_robot, lock_option, notice,
                     output_option)


@click.command(epilog="""\b
Examples:
  dyn excite robots/arm7.urdf --duration 20 --harmonics 5 -o excite.csv
  dyn excite robots/arm6.urdf --duration 10 --harmonics 4 --margin 0.1 --seed 3 -o excite.parquet

\b
Each joint follows a Fourier series (period: the duration, cut into equal
periods of at most 10 s, or --period) that starts and ends at rest; the
coefficients minimise the condition number of the base regressor (inertial
parameters and viscous friction) over one period, keeping positions,
velocities and the URDF model's torques within the URDF's limits less
--margin. The file has time, q.*, qd.*, qdd.*: track it on the robot, record
q and the torques, then run dyn identify.""")
@click.argument("robot", metavar="ROBOT", type=click.Path(dir_okay=False))
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), required=True, help="Seconds.")
@click.option("--harmonics", type=click.IntRange(min=1), default=5, show_default=True,
              help="Fourier harmonics per joint.")
@click.option("--period", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Period of the series, s [default: the duration cut into periods of at most 10 s].")
@click.option("--dt", type=click.FloatRange(min=0, min_open=True), default=1e-3, show_default=True,
              help="Sample step of the output, s.")
@click.option("--margin", type=float, default=0.05, show_default=True,
              callback=lambda ctx, param, v: check_value(v, 0 <= v < 1, "--margin must be in [0, 1)"),
              help="Fraction of each limit kept free (of the range for positions).")
@click.option("--iterations", type=click.IntRange(min=0), default=50, show_default=True,
              help="Optimiser iterations (SLSQP).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random start.")
@output_option
@gravity_option
@lock_option
@click.pass_context
def excite(ctx, robot, duration, harmonics, period, dt, margin, iterations, seed, output, gravity, lock):
    """An excitation trajectory for ROBOT (time, q.*, qd.*, qdd.*), optimised for identification."""
    import numpy as np

    from dynlib.motion.identification.excite import excitation
    from dynlib.files.trajectory import column_names, write_trajectory

    check_outputs((output, "trajectory", "-o/--output"), inputs=(robot,))
    model = load_robot(ctx, robot, False, gravity, lock=lock)
    compile_notice(ctx)
    ex = excitation(model, duration, harmonics, dt=dt, period=period, margin=margin, seed=seed,
                    iterations=iterations)
    names = column_names(model.q_names, model.v_names, ("q", "qd", "qdd"))
    write_trajectory(output, names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a]), source=robot)
    used = []
    for what, x, lim in (("velocity", np.abs(ex.v).max(axis=0), model.velocity_limit),
                         ("effort", np.abs(ex.tau).max(axis=0), model.effort)):
        frac = x / lim
        if np.any(np.isfinite(lim)):
            used.append(f"{what} {100 * float(np.max(frac[np.isfinite(lim)])):.0f} %")
    notice(ctx, f"condition number {ex.condition:.4g} (random start {ex.initial_condition:.4g}); period "
                f"{ex.period:g} s; largest use of a limit: {', '.join(used) or 'no limits'}")
    if not math.isfinite(ex.condition):
        notice(ctx, "warning: the base regressor is singular over this trajectory")
