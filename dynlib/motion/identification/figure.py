"""The fit figure of `dyn identify --plot`: measured against predicted torque, one panel per DoF.

For one recording (the first validation recording when there is one, else the
first training recording): the measured generalized force, the URDF's
prediction and the identified model's, against time. Written through
`dynlib.files.trajectory.atomic_output`; the format follows the extension.
"""
from __future__ import annotations

import math

import numpy as np


def check_path(path):
    """An InputError unless `path` ends in a figure format (.png, .pdf, .svg)."""
    from pathlib import Path

    from ...errors import InputError
    from ...files.figures import FIGURE_FORMATS

    if Path(str(path)).suffix.lower() not in FIGURE_FORMATS:
        raise InputError(f"{path}: figure files must end in {', '.join(FIGURE_FORMATS)}")


def fit_figure(result, path, atomic=True):
    """Write the figure of `result` (an `Identification`) to `path` (.png, .pdf or .svg); through
    `atomic_output` unless `atomic` is False (the caller's own temporary file)."""
    import contextlib

    from ...files.figures import glyphs_quiet
    from ...files.trajectory import atomic_output

    check_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    which = "validation" if result.validation else "training"
    rec = (result.validation or result.training)[0]
    before, after = result.predict(rec, after=False), result.predict(rec, after=True)
    names = result.model.tau_names
    rows = [k for k in range(len(names)) if np.any(rec.tau[:, k]) or np.any(after[:, k])] or list(range(len(names)))
    ncol = 1 if len(rows) <= 4 else 2
    nrow = math.ceil(len(rows) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(9 * ncol, 1.9 * nrow + 1.2), sharex=True, squeeze=False,
                             constrained_layout=True)
    rms = lambda x: float(np.sqrt(np.mean(x ** 2)))  # noqa: E731
    for ax, k in zip(axes.T.ravel(), rows):
        ax.plot(rec.time, rec.tau[:, k], color="k", linewidth=1.0, label="measured")
        ax.plot(rec.time, before[:, k], color="C1", linewidth=0.9, alpha=0.8,
                label=f"URDF (rms error {rms(before[:, k] - rec.tau[:, k]):.3g})")
        ax.plot(rec.time, after[:, k], color="C0", linewidth=0.9, linestyle="--",
                label=f"identified (rms error {rms(after[:, k] - rec.tau[:, k]):.3g})")
        ax.set_ylabel(names[k])
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize="x-small")
    for ax in axes.T.ravel()[len(rows):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    fig.suptitle(f"{result.model.name}: measured and predicted torque [N·m or N], {which} recording {rec.path}")
    with (atomic_output(path) if atomic else contextlib.nullcontext(path)) as tmp, glyphs_quiet():
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
