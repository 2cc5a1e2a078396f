"""Figures (matplotlib, Agg backend): energy against time, and trajectory columns.

Both write through `dynlib.files.output.atomic_output`, so a failure leaves no
partial PNG behind. The format follows the extension (png, pdf, svg).
"""
from __future__ import annotations

import contextlib
import fnmatch
import warnings

import numpy as np

from .columns import TIME, UNITS, coordinate, part, unit
from ..errors import InputError, TrajectoryError, shown

FIGURE_FORMATS = (".png", ".pdf", ".svg")
DEFAULT_COLUMNS = ("q.*",)  # every configuration column


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _check_path(path):
    from pathlib import Path

    if Path(str(path)).suffix.lower() not in FIGURE_FORMATS:
        raise InputError(f"{path}: figure files must end in {', '.join(FIGURE_FORMATS)}")


def _save(fig, path):
    """fig to `path`, atomically, without matplotlib's glyph warnings (`glyphs_quiet`)."""
    from .output import atomic_output

    with atomic_output(path) as tmp, glyphs_quiet():
        fig.savefig(tmp, dpi=110)


@contextlib.contextmanager
def glyphs_quiet():
    """A context in which a character no installed font has (a CJK or Arabic file, robot or joint
    name where only DejaVu Sans is installed) is drawn as a box without matplotlib's warning per
    character ("Glyph … missing from font(s)"): the figure is still right, and the names are in
    the file and on the command line."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        yield


def energy_figure(series, path, title=""):
    """Kinetic, potential and total energy against time, and the relative drift (log axis)."""
    _check_path(path)
    plt = _pyplot()
    t = series["time"]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True, constrained_layout=True)
    ax1.plot(t, series["kinetic"], label="kinetic T")
    ax1.plot(t, series["potential"], label="potential U")
    ax1.plot(t, series["total"], label="total E = T + U", color="k", linewidth=2)
    if "work" in series:
        ax1.plot(t, series["total"][0] + series["work"], "--", label="E(0) + work of non-conservative forces")
    ax1.set_ylabel("energy [J]")
    ax1.legend(loc="best")
    ax1.grid(True, alpha=0.3)
    ax1.set_title(title or "energy")
    drift = np.maximum(series["drift"], 1e-16)  # round-off floor, so the log axis stays readable
    ax2.semilogy(t, drift, color="C3")
    ax2.set_ylabel("relative drift |E(t) - E(0)| / scale")
    ax2.set_xlabel("time [s]")
    ax2.grid(True, which="both", alpha=0.3)
    _save(fig, path)
    plt.close(fig)


def select_columns(names, patterns, file=None):
    """Columns matching any glob pattern (in file order); TrajectoryError when a pattern matches nothing."""
    chosen = []
    for pat in patterns:
        hits = [n for n in names if fnmatch.fnmatchcase(n, pat) and n != TIME]
        if not hits:
            from ..errors import closest

            raise TrajectoryError(f"no column matches {pat!r}; {closest(pat, names)}", file=file)
        chosen += [h for h in hits if h not in chosen]
    return [n for n in names if n in chosen]


def trajectory_figure(traj, patterns, path, title=None, joint_types=None):
    """Chosen columns of a trajectory against time, one panel per column group and unit (q [rad],
    q [m], tau [N·m], ...). `joint_types` ({joint: type}) gives the units of one-coordinate
    columns (see `dynlib.files.columns.unit`); without it they are labelled "rad or m". The default
    title says what is plotted and from where (the file's name, or standard input)."""
    _check_path(path)
    cols = select_columns(traj.names, patterns or list(DEFAULT_COLUMNS), file=traj.path)
    groups = {}
    for c in cols:
        groups.setdefault((part(c), unit(c, joint_types)), []).append(c)
    plt = _pyplot()
    t = traj.time
    fig, axes = plt.subplots(len(groups), 1, figsize=(9, 2.6 * len(groups) + 1), sharex=True,
                             constrained_layout=True, squeeze=False)
    for ax, ((group, u), members) in zip(axes[:, 0], groups.items()):
        for c in members:
            ax.plot(t, traj.column(c), label=coordinate(c) or c)
        ax.set_ylabel(axis_label(group, u))
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small", ncol=max(1, len(members) // 8))
    axes[-1, 0].set_xlabel("time [s]")
    axes[0, 0].set_title(default_title(traj, groups) if title is None else title)
    _save(fig, path)
    plt.close(fig)


def axis_label(group: str, u) -> str:
    """``q [rad]``; ``q`` for a number without unit; ``q [rad or m]`` when the unit is unknown."""
    if u is None:
        u = UNITS.get(group)
    return f"{group} [{u}]" if u else group


def default_title(traj, groups) -> str:
    """What a figure shows: the parts plotted, and the file's name or "standard input"."""
    from pathlib import Path

    source = "standard input" if traj.path in (None, "-", "<stdin>") else Path(traj.path).name
    parts = list(dict.fromkeys(g for g, _ in groups))
    return f"{', '.join(parts)} against time ({shown(source)})"  # a name that is not UTF-8: \\xNN


def joint_types_of(robot) -> dict:
    """{joint: type} of a URDF (as `dynlib.load` reads it, floating root included), for `unit`."""
    from .. import load

    model = load(robot)
    return dict(zip(model.joint_names, model.joint_types))
