"""`dyn info`, `dyn --help` and the error path of the command line."""
import json
import subprocess
import sys

import pytest

from cli.main import COMMANDS, dyn
from helpers import ROBOTS_DIR, invoke, run_process

SAMPLES = ["pendulum", "double_pendulum", "planar3", "arm6", "arm7", "quadruped", "biped"]


@pytest.mark.parametrize("name", SAMPLES)
def test_info_on_every_sample_robot(name):
    r = invoke("info", ROBOTS_DIR / f"{name}.urdf")
    assert r.exit_code == 0, r.output
    assert f"robot {name}" in r.output and "total mass" in r.output


def test_info_json_floating_base():
    r = invoke("info", ROBOTS_DIR / "quadruped.urdf", "--floating-base", "--json")
    d = json.loads(r.stdout)
    assert d["nq"] == 19 and d["nv"] == 18 and d["floating_base"] is True
    assert d["q_names"][:7] == ["root.x", "root.y", "root.z", "root.qx", "root.qy", "root.qz", "root.qw"]
    assert d["total_mass"] == pytest.approx(12.0)
    assert {"lf_foot", "rf_foot", "lh_foot", "rh_foot"} <= {f["name"] for f in d["frames"]}


def test_info_on_example_robot_data(erd_path):
    r = invoke("info", erd_path("talos_data/robots/talos_reduced.urdf"), "--floating-base", "--json")
    d = json.loads(r.stdout)
    assert d["nv"] == 6 + 32


def test_help_lists_commands_and_every_command_has_help():
    r = invoke("--help")
    assert r.exit_code == 0 and "info" in r.output
    for name in COMMANDS:
        if dyn.get_command(None, name) is not None:
            sub = invoke(name, "--help")
            assert sub.exit_code == 0 and "Examples" in sub.output, name


def test_help_does_not_import_the_kernels():
    code = ("import sys; from cli.main import dyn\n"
            "try:\n    dyn(['--help'])\nexcept SystemExit:\n    pass\n"
            "bad = [m for m in ('numba', 'pandas', 'dynlib.algorithms.aba') if m in sys.modules]\n"
            "print('IMPORTED', bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "IMPORTED []" in out


def test_malformed_urdf_is_one_line_exit_2_no_traceback(tmp_path):
    p = tmp_path / "bad.urdf"
    p.write_text("<robot name='x'>\n<link name='a'>\n</robot>\n")
    r = run_process("info", p)
    assert r.returncode == 2
    assert r.stderr.startswith(f"dyn: error: {p}:") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_verbose_shows_the_traceback(tmp_path):
    p = tmp_path / "bad.urdf"
    p.write_text("<robot name='x'/>")
    r = invoke("-v", "info", p)
    assert r.returncode == 2 and "Traceback" in r.stderr


def test_usage_error_is_one_line_exit_2():
    r = run_process("info")
    assert r.returncode == 2 and r.stderr.startswith("dyn: error:") and r.stderr.count("\n") == 1


def test_version():
    r = invoke("--version")
    assert r.returncode == 0 and r.stdout.startswith("dyn ")


def test_dyn_alone_prints_its_usage_not_an_error():
    r = run_process()  # the console script as typed
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("Usage: dyn") and "Commands:" in r.stdout and "error:" not in r.stdout
    assert r.stdout == run_process("--help").stdout


TRIANGLE = """<robot name="w"><link name="a"/>
<link name="b"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.5" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


@pytest.mark.parametrize("command", [["info"], ["simulate", "--steps", "3", "-o", "out.csv"], ["energy-check"],
                                     ["inverse", "TRAJ", "-o", "tau.csv"], ["view", "TRAJ", "-o", "v.html"]])
def test_a_urdf_warning_is_printed_once_by_every_command(tmp_path, command):
    """A URDF the reader accepts with a warning (an inertia breaking the triangle inequality)
    says so once, whatever the command: info in its listing, the others on standard error."""
    robot = tmp_path / "w.urdf"
    robot.write_text(TRIANGLE)
    traj = tmp_path / "t.csv"
    traj.write_text("time,q.j,qd.j,qdd.j\n0,0,0,0\n0.001,0,0,0\n0.002,0,0,0\n")
    args = [command[0], robot, *[traj if a == "TRAJ" else tmp_path / a if "." in a else a for a in command[1:]]]
    r = run_process(*args)
    assert r.returncode in (0, 1), r.stderr
    out = r.stdout if command[0] == "info" else r.stderr
    assert out.count("triangle") == 1, (r.stdout, r.stderr)
    if command[0] != "info":
        assert "triangle" not in r.stdout


def test_no_help_sends_the_reader_to_itself():
    """`dyn inverse --help` said of --columns "see 'dyn inverse --help'"."""
    for name in COMMANDS:
        text = " ".join(invoke(name, "--help").output.split())
        assert f"see 'dyn {name} --help'" not in text, name


def test_info_shows_the_locked_joints():
    r = invoke("info", ROBOTS_DIR / "arm6.urdf", "--lock", "elbow=0.5", "--json")
    d = json.loads(r.stdout)
    assert d["locked"] == {"elbow": 0.5} and d["nv"] == 5 and "elbow" not in d["q_names"]
    r = invoke("info", ROBOTS_DIR / "arm6.urdf", "--lock", "elbow=0.5")
    assert "locked (held, merged as fixed joints): elbow = 0.5" in r.stdout


def test_info_shows_the_mimic_coupling(tmp_path):
    """Issue 28 item 8: the coupling listed (follower = multiplier * leader + offset), no "independent" warning."""
    robot = tmp_path / "g.urdf"
    robot.write_text(GRIPPER)
    r = invoke("info", robot)
    assert "mimic (coupled" in r.stdout and "right = -1 * left + 0.01" in r.stdout and "nv = 2" in r.stdout
    assert "independent" not in r.stdout + r.stderr
    d = json.loads(invoke("info", robot, "--json").stdout)
    assert d["mimic"] == [["right", "left", -1.0, 0.01]] and d["coupled"]["v_names"] == ["slide", "left"]


_BOX = '<inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>'
GRIPPER = f"""<?xml version="1.0"?><robot name="g">
<link name="base">{_BOX}</link><link name="hand">{_BOX}</link><link name="fl">{_BOX}</link><link name="fr">{_BOX}</link>
<joint name="slide" type="prismatic"><parent link="base"/><child link="hand"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1" effort="100" velocity="1"/></joint>
<joint name="left" type="prismatic"><parent link="hand"/><child link="fl"/><axis xyz="0 1 0"/>
<limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
<joint name="right" type="prismatic"><parent link="hand"/><child link="fr"/><axis xyz="0 1 0"/>
<limit lower="-0.03" upper="0.01" effort="20" velocity="0.2"/><mimic joint="left" multiplier="-1" offset="0.01"/></joint>
</robot>"""
