"""`dyn sweep`: --help, --dry-run listing, a run that writes only files, exit 1 after a diverging
variant, one-line errors with exit 2, and Ctrl-C: the workers stop, the finished variants stay,
a rerun resumes."""
import csv
import io
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from dynlib.runs.sweep import RECORDS, SUMMARY
from helpers import ROBOTS_DIR, default_sigint, invoke, run_process

ARM6 = ROBOTS_DIR / "arm6.urdf"
PENDULUM = ROBOTS_DIR / "pendulum.urdf"

GRID = f"""\
dyn: 1
robot: {ARM6}
duration: 0.1
initial: {{q: {{elbow: 0.5}}}}
output: {{every: 10, columns: [q, energy]}}
sweep:
  grid:
    initial.q.shoulder_lift: [-1.0, -0.5, 0.0]
    dt: [0.001, 0.002]
"""

# rk4 on a stiff PD loop (its gains explicit; euler takes them implicitly): the 50 ms step diverges
DIVERGING = f"""\
dyn: 1
robot: {PENDULUM}
duration: 1.0
integrator: rk4
joint_friction: none
limits: {{position: false, effort: false}}  # the PD's 1e4 N·m/rad unsaturated: dt = 0.05 diverges
initial: {{q: [1.0]}}
control: {{type: pd, kp: 1.0e4, kd: 0}}
sweep:
  grid:
    dt: [0.001, 0.05, 0.002]
"""


def write(folder, text, name="sweep.yaml"):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def one_line_error(stderr):
    lines = [ln for ln in stderr.splitlines() if ln.startswith("dyn: error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_help_shows_the_options_and_examples():
    r = invoke("sweep", "--help")
    assert r.exit_code == 0
    for word in ("--workers", "--scheduler", "--dry-run", "--format", "-o, --output", "Examples:", "dask worker"):
        assert word in r.output
    assert "sweep" in invoke("--help").output
    assert "[required, except with --dry-run]" in " ".join(r.output.split())  # -o is asked for, as run enforces


def test_dry_run_lists_the_variants_on_standard_output(tmp_path):
    path = write(tmp_path, GRID)
    r = invoke("sweep", path, "--dry-run")
    assert r.exit_code == 0, r.output
    listed = rows(r.stdout)
    assert [x["variant"] for x in listed] == [f"v00{i}" for i in range(6)]
    assert [(x["initial.q.shoulder_lift"], x["dt"]) for x in listed] == [
        (q, dt) for q in ("-1.0", "-0.5", "0.0") for dt in ("0.001", "0.002")]
    assert all(len(x["hash"]) == 16 for x in listed)
    assert "6 variants (3 x 2 grid)" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_sweep_writes_the_files_and_nothing_on_standard_output_then_a_rerun_skips_them(tmp_path):
    path, out = write(tmp_path, GRID), tmp_path / "out"
    r = invoke("sweep", path, "-o", out, "--workers", "2")
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    assert "6 variants (3 x 2 grid): 6 ok, 0 diverged, 0 failed" in r.stderr
    summary = rows((out / SUMMARY).read_text())
    assert [x["status"] for x in summary] == ["ok"] * 6
    assert sorted(p.name for p in out.glob("v*.csv")) == sorted(x["path"] for x in summary)
    # the listing knows what is done; the rerun says so
    assert {x["status"] for x in rows(invoke("sweep", path, "--dry-run", "-o", out).stdout)} == {"ok"}
    again = invoke("sweep", path, "-o", out)
    assert again.exit_code == 0 and "(6 already done)" in again.stderr


def test_parquet_format(tmp_path):
    r = invoke("sweep", write(tmp_path, GRID), "-o", tmp_path / "out", "--format", "parquet", "--workers", "1")
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "out").glob("v*.parquet"))) == 6


def test_a_diverging_variant_warns_and_exits_1_once_the_others_are_done(tmp_path):
    out = tmp_path / "out"
    r = invoke("sweep", write(tmp_path, DIVERGING), "-o", out, "--workers", "2")
    assert r.exit_code == 1
    line = one_line_error(r.stderr)
    assert "1 of 3 variants did not finish ok (1 diverged, 0 failed; first: v001 diverged)" in line
    assert "dyn: warning: v001 (dt = 0.05) diverged: the simulation diverged at step" in r.stderr
    assert [x["status"] for x in rows((out / SUMMARY).read_text())] == ["ok", "diverged", "ok"]


@pytest.mark.parametrize("text, args, words", [
    (GRID.replace("dt: [0.001, 0.002]", "dtt: [0.001]"), (), "sweep.grid.dtt: unknown key 'dtt'; did you mean 'dt'?"),
    (GRID.replace("initial.q.shoulder_lift", "initial.q.shoulder_lfit"), (),
     "no coordinate 'shoulder_lfit'; did you mean 'shoulder_lift'"),
    (GRID[:GRID.index("sweep:")], (), "no 'sweep:' block"),
    (GRID[:GRID.index("sweep:")] + "sweep: {}\n", (), "the sweep is empty"),
    (GRID, ("--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"), "either --workers"),
    (GRID, ("--workers", "0"), "--workers"),
])
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(tmp_path, text, args, words):
    out = tmp_path / "out"
    r = invoke("sweep", write(tmp_path, text), "-o", out, *args)
    assert r.exit_code == 2
    assert words in one_line_error(r.stderr)
    assert not out.exists()


def test_missing_output_folder_and_a_robot_instead_of_a_scenario_are_exit_2(tmp_path):
    r = invoke("sweep", write(tmp_path, GRID))
    assert r.exit_code == 2 and "missing -o/--output OUTDIR" in one_line_error(r.stderr)
    r = invoke("sweep", ARM6, "-o", tmp_path / "out")
    assert r.exit_code == 2 and "needs a scenario (.yaml) with a 'sweep:' block" in one_line_error(r.stderr)


def test_an_unreachable_scheduler_is_exit_2(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    from dynlib.runs.sweep import backends

    monkeypatch.setattr(backends.Dask, "CONNECT_TIMEOUT", 1)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = invoke("sweep", write(tmp_path, GRID), "-o", tmp_path / "out", "--scheduler", f"tcp://127.0.0.1:{port}")
    assert r.exit_code == 2
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in one_line_error(r.stderr)
    assert not list((tmp_path / "out").glob("v*"))


@pytest.mark.parametrize("address", ["nonsense", "tcp://host:port"])
def test_a_scheduler_address_without_a_port_is_one_line_without_a_traceback(tmp_path, address):
    """--scheduler nonsense: the one-line error came, then, 20 s later, "Exception ignored in
    Client.__del__" and a traceback (the half-made Client closing itself at exit)."""
    pytest.importorskip("distributed")
    # a process: what its interpreter prints at exit is under test
    r = run_process("sweep", write(tmp_path, GRID), "-o", tmp_path / "out", "--scheduler", address)
    assert r.returncode == 2, r.stderr
    assert "Dask scheduler" in one_line_error(r.stderr) and "Exception ignored" not in r.stderr, r.stderr
    assert not list((tmp_path / "out").glob("v*"))


def _group_alive(pgid):
    """Processes of a process group that are still running (zombies excluded)."""
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(int(entry))
    return alive


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_the_workers_keeps_finished_variants_and_a_rerun_resumes(tmp_path):
    # four variants of about a second each, one worker; Ctrl-C (to the whole process group, as a
    # terminal sends it) once the first is recorded
    text = f"""\
    dyn: 1
    robot: {ARM6}
    duration: 150.0
    control: {{type: pd, kp: 100, kd: 20, gravity_compensation: true}}
    output: {{every: 1000, columns: [q, energy]}}
    sweep:
      grid:
        initial.q.shoulder_lift: [-1.0, -0.5, 0.0, 0.5]
    """
    path, out = write(tmp_path, text), tmp_path / "out"
    cmd = [sys.executable, "-m", "cli.main", "sweep", str(path), "-o", str(out), "--workers", "1"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 300
        # a record, not its temporary file (.<key>.<token>.tmp.json, renamed onto it once whole)
        while not list((out / RECORDS).glob("[!.]*.json")):
            assert p.poll() is None and time.monotonic() < deadline, "no variant finished"
            time.sleep(0.05)
        os.killpg(p.pid, signal.SIGINT)
        _, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130
    assert one_line_error(stderr) == "dyn: error: interrupted"
    deadline = time.monotonic() + 30
    while _group_alive(p.pid):
        assert time.monotonic() < deadline, f"worker processes left: {_group_alive(p.pid)}"
        time.sleep(0.1)
    # no temporary files; the summary lists exactly the variants recorded
    assert not [f for f in os.listdir(out) if f.startswith(".") and f != RECORDS]
    done = len(list((out / RECORDS).glob("[!.]*.json")))
    assert 1 <= done < 4
    assert len(rows((out / SUMMARY).read_text())) == done
    # the rerun runs the others only
    r = invoke(*cmd[3:])
    assert r.returncode == 0, r.stderr
    assert f"({done} already done)" in r.stderr
    assert [x["status"] for x in rows((out / SUMMARY).read_text())] == ["ok"] * 4
