"""`dyn plot`: a PNG of chosen columns; bad patterns and bad files are one-line errors."""
import numpy as np
import pytest

from dynlib.files.trajectory import write_trajectory
from helpers import invoke

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def traj(tmp_path):
    t = np.linspace(0, 2, 201)
    data = np.c_[t, np.sin(t), np.cos(2 * t), np.cos(t), -2 * np.sin(2 * t)]
    path = tmp_path / "traj.csv"
    write_trajectory(path, ["time", "q.a", "q.b", "qd.a", "qd.b"], data)
    return path


def test_plot_writes_a_png_of_sensible_size(traj, tmp_path):
    out = tmp_path / "fig.png"
    r = invoke("plot", traj, "--columns", "q.*", "--columns", "qd.*", "-o", out)
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and 10_000 < len(data) < 2_000_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width >= 800 and height >= 400


def test_pattern_matching_nothing_is_an_error_and_writes_nothing(traj, tmp_path):
    out = tmp_path / "fig.png"
    r = invoke("plot", traj, "--columns", "tau.*", "-o", out)
    assert r.returncode == 2 and r.stderr.startswith("dyn: error:") and "tau.*" in r.stderr
    assert not out.exists()


def test_unknown_figure_extension(traj, tmp_path):
    r = invoke("plot", traj, "-o", tmp_path / "fig.txt")
    assert r.returncode == 2 and ".png" in r.stderr


def svg_text(path):
    import re

    return re.findall(r">([^<>]+)</text>", path.read_text())


def test_axes_carry_each_columns_unit_and_the_title_says_what_and_from_where(tmp_path):
    """With --robot, a revolute and a prismatic joint's columns go to separate panels
    labelled in rad and m (N·m and N for tau); the default title names the parts and the
    file, or standard input."""
    import matplotlib

    from dynlib.files.figures import joint_types_of, trajectory_figure
    from dynlib.files.trajectory import read_trajectory

    urdf = tmp_path / "rp.urdf"
    urdf.write_text("""<robot name="rp"><link name="a"/>
      <link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="c"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="turn" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>
      <joint name="slide" type="prismatic"><parent link="b"/><child link="c"/><axis xyz="1 0 0"/>
        <limit lower="-1" upper="1" effort="10" velocity="1"/></joint></robot>""")
    t = np.linspace(0, 1, 11)
    path = tmp_path / "rec.csv"
    write_trajectory(path, ["time", "q.turn", "q.slide", "tau.turn", "tau.slide"], np.c_[t, t, t, t, t])
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text, to read the labels back
    out = tmp_path / "fig.svg"
    trajectory_figure(read_trajectory(path), ["q.*", "tau.*"], out, joint_types=joint_types_of(urdf))
    text = svg_text(out)
    for label in ("q [rad]", "q [m]", "tau [N·m]", "tau [N]", "q, tau against time (rec.csv)"):
        assert label in text, (label, text)
    trajectory_figure(read_trajectory(path), ["q.*"], out)  # no robot: the unit is not known
    assert "q [rad or m]" in svg_text(out)

    r = invoke("plot", "-", "--robot", urdf, "-o", tmp_path / "in.png", input=path.read_text())
    assert r.returncode == 0, r.stderr


def test_a_plot_of_standard_input_is_titled_by_its_content():
    from dynlib.files.figures import default_title
    from dynlib.files.trajectory import Trajectory

    traj = Trajectory(["time", "q.a"], np.zeros((2, 2)), path="<stdin>")
    assert default_title(traj, {("q", "rad"): ["q.a"], ("energy", "J"): []}) == "q, energy against time (standard input)"
