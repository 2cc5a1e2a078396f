"""`dyn plot`: a PNG of chosen columns; bad patterns and bad files are one-line errors."""
import subprocess
import sys

import numpy as np
import pytest

from dynlib.trajectory import write_trajectory

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def traj(tmp_path):
    t = np.linspace(0, 2, 201)
    data = np.c_[t, np.sin(t), np.cos(2 * t), np.cos(t), -2 * np.sin(2 * t)]
    path = tmp_path / "traj.csv"
    write_trajectory(path, ["time", "q.a", "q.b", "qd.a", "qd.b"], data)
    return path


def dyn(*args):
    return subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], capture_output=True, text=True)


def test_plot_writes_a_png_of_sensible_size(traj, tmp_path):
    out = tmp_path / "fig.png"
    r = dyn("plot", traj, "--columns", "q.*", "--columns", "qd.*", "-o", out)
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and 10_000 < len(data) < 2_000_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width >= 800 and height >= 400


def test_pattern_matching_nothing_is_an_error_and_writes_nothing(traj, tmp_path):
    out = tmp_path / "fig.png"
    r = dyn("plot", traj, "--columns", "tau.*", "-o", out)
    assert r.returncode == 2 and r.stderr.startswith("dyn: error:") and "tau.*" in r.stderr
    assert not out.exists()


def test_unknown_figure_extension(traj, tmp_path):
    r = dyn("plot", traj, "-o", tmp_path / "fig.txt")
    assert r.returncode == 2 and ".png" in r.stderr
