"""`dyn info`, `dyn --help` and the error path of the command line."""
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from cli.main import COMMANDS, dyn
from helpers import ROBOTS_DIR

SAMPLES = ["pendulum", "double_pendulum", "planar3", "arm6", "arm7", "quadruped", "biped"]


def run(*args):
    return CliRunner().invoke(dyn, [str(a) for a in args], catch_exceptions=False)


def run_process(*args):
    """The real console entry point, so that exit codes and stderr are what a shell sees."""
    return subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("name", SAMPLES)
def test_info_on_every_sample_robot(name):
    r = run("info", ROBOTS_DIR / f"{name}.urdf")
    assert r.exit_code == 0, r.output
    assert f"robot {name}" in r.output and "total mass" in r.output


def test_info_json_floating_base():
    r = run("info", ROBOTS_DIR / "quadruped.urdf", "--floating-base", "--json")
    d = json.loads(r.stdout)
    assert d["nq"] == 19 and d["nv"] == 18 and d["floating_base"] is True
    assert d["q_names"][:7] == ["root.x", "root.y", "root.z", "root.qx", "root.qy", "root.qz", "root.qw"]
    assert d["total_mass"] == pytest.approx(12.0)
    assert {"lf_foot", "rf_foot", "lh_foot", "rh_foot"} <= {f["name"] for f in d["frames"]}


def test_info_on_example_robot_data(erd_path):
    r = run("info", erd_path("talos_data/robots/talos_reduced.urdf"), "--floating-base", "--json")
    d = json.loads(r.stdout)
    assert d["nv"] == 6 + 32


def test_help_lists_commands_and_every_command_has_help():
    r = run("--help")
    assert r.exit_code == 0 and "info" in r.output
    for name in COMMANDS:
        if dyn.get_command(None, name) is not None:
            sub = run(name, "--help")
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
    r = run_process("-v", "info", p)
    assert r.returncode == 2 and "Traceback" in r.stderr


def test_usage_error_is_one_line_exit_2():
    r = run_process("info")
    assert r.returncode == 2 and r.stderr.startswith("dyn: error:") and r.stderr.count("\n") == 1


def test_version():
    r = run_process("--version")
    assert r.returncode == 0 and r.stdout.startswith("dyn ")


def test_dyn_alone_prints_its_usage_not_an_error():
    r = run_process()
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("Usage: dyn") and "Commands:" in r.stdout and "error:" not in r.stdout
    assert r.stdout == run_process("--help").stdout
