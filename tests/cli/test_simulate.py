"""`dyn simulate`: outputs that open in pandas, options, scenarios, exit codes, one-line errors,
no partial files, and round trips with `dyn inverse` and `--tau-csv`."""
import numpy as np
import pandas as pd
import pytest

import dynlib

from dynlib.files.trajectory import read_trajectory
from helpers import ROBOTS_DIR, invoke, run_process
from tests.core.test_model import DUMMY_ROOT as MODEL_DUMMY_ROOT

ARM6 = ROBOTS_DIR / "arm6.urdf"
SCENARIOS = ROBOTS_DIR.parent / "scenarios"
ARM6_COLUMNS = (["time"] + [f"q.{n}" for n in ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")])


def one_line_error(stderr):
    lines = [ln for ln in stderr.splitlines() if ln.startswith("dyn: error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_arm6_1000_steps_to_standard_output_opens_in_pandas():
    p = run_process("simulate", ARM6, "--steps", "1000")  # standard output as a shell reads it
    assert p.returncode == 0, p.stderr
    from io import StringIO

    df = pd.read_csv(StringIO(p.stdout))
    assert df.shape == (1001, 1 + 6 + 6 + 6 + 6)
    assert list(df.columns[:7]) == ARM6_COLUMNS
    assert list(df.columns[-6:]) == [f"tau.{n}" for n in ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1",
                                                           "wrist_2", "wrist_3")]
    assert df["time"].iloc[-1] == pytest.approx(1.0)
    assert np.all(np.isfinite(df.to_numpy())) and df["q.shoulder_lift"].abs().max() > 0.1  # it fell
    assert "compiling" not in p.stdout


@pytest.mark.parametrize("ext, reader", [("csv", pd.read_csv), ("parquet", pd.read_parquet)])
def test_output_format_follows_the_extension(tmp_path, ext, reader):
    out = tmp_path / f"t.{ext}"
    r = invoke("simulate", ARM6, "--steps", "50", "--every", "10", "--columns", "q,qd,energy", "-o", out)
    assert r.exit_code == 0, r.output
    df = reader(out)
    assert df.shape == (6, 1 + 6 + 6 + 3)
    assert list(df.columns[-3:]) == ["energy.kinetic", "energy.potential", "energy.total"]
    assert np.allclose(df["time"], np.arange(6) * 0.01)
    assert r.stdout == ""


def test_initial_state_by_name_and_whole_vector(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert invoke("simulate", ARM6, "--steps", "5", "--q0", "elbow=0.5", "--q0", "wrist_1=-0.2",
                  "--qd0", "shoulder_pan=1", "-o", a).exit_code == 0
    assert invoke("simulate", ARM6, "--steps", "5", "--q0", "0,0,0.5,-0.2,0,0", "--qd0", "1,0,0,0,0,0", "-o", b).exit_code == 0
    ta, tb = read_trajectory(a), read_trajectory(b)
    assert np.array_equal(ta.data, tb.data)
    assert ta.column("q.elbow")[0] == 0.5 and ta.column("qd.shoulder_pan")[0] == 1.0


def test_options_set_integrator_dt_duration_gravity_and_friction(tmp_path):
    out = tmp_path / "p.csv"
    r = invoke("simulate", ROBOTS_DIR / "pendulum.urdf", "--duration", "0.5", "--dt", "0.01", "--integrator", "euler",
               "--q0", "1.0", "--gravity", "0,0,0", "--no-joint-friction", "--columns", "q,qd", "-o", out)
    assert r.exit_code == 0, r.output
    t = read_trajectory(out)
    assert len(t) == 51 and t.time[-1] == pytest.approx(0.5)
    assert np.all(t.column("q.hinge") == 1.0)  # no gravity: it stays


def test_floating_base_adds_the_root_columns(tmp_path):
    out = tmp_path / "f.csv"
    r = invoke("simulate", ROBOTS_DIR / "quadruped.urdf", "--floating-base", "--steps", "100", "--q0", "root.z=1",
               "--columns", "q,tau", "-o", out)
    assert r.exit_code == 0, r.output
    t = read_trajectory(out)
    assert t.names[1:8] == ["q.root.x", "q.root.y", "q.root.z", "q.root.qx", "q.root.qy", "q.root.qz", "q.root.qw"]
    assert t.column("q.root.z")[-1] == pytest.approx(1 - 0.5 * 9.81 * 0.1 ** 2, abs=1e-9)  # free fall
    assert t.column("q.root.qw")[0] == 1.0
    assert [n for n in t.names if n.startswith("tau.root")][0] == "tau.root.fx"


def test_scenario_with_command_line_overrides(tmp_path):
    out = tmp_path / "pd.csv"
    r = invoke("simulate", SCENARIOS / "arm6_pd.yaml", "--steps", "200", "--every", "50", "--q0", "wrist_2=0.1", "-o", out)
    assert r.exit_code == 0, r.output
    t = read_trajectory(out)
    assert len(t) == 5 and t.column("q.wrist_2")[0] == 0.1 and t.column("q.shoulder_lift")[0] == -0.5
    assert "energy.total" in t.names  # the scenario's columns


def test_dyn_inverse_on_the_output_gives_back_the_torques(tmp_path):
    traj, tau = tmp_path / "pd.csv", tmp_path / "tau.csv"
    assert invoke("simulate", SCENARIOS / "arm6_pd.yaml", "--steps", "500", "-o", traj).exit_code == 0
    r = invoke("inverse", ARM6, traj, "-o", tau)
    assert r.exit_code == 0, r.output
    sim, inv = read_trajectory(traj), read_trajectory(tau)
    cols = [f"tau.{n}" for n in ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")]
    assert np.allclose(inv.columns(cols), sim.columns(cols), rtol=1e-8, atol=1e-8)


def test_replaying_recorded_torques_with_tau_csv_reproduces_the_motion(tmp_path):
    # semi-implicit Euler evaluates the controller once per step, at the rows' times: the
    # interpolated table gives back exactly the recorded torques, hence the same motion
    pd_run, replay = tmp_path / "pd.csv", tmp_path / "replay.csv"
    args = ("--steps", "400", "--integrator", "semi-implicit")
    assert invoke("simulate", SCENARIOS / "arm6_pd.yaml", *args, "--every", "1", "-o", pd_run).exit_code == 0
    r = invoke("simulate", SCENARIOS / "arm6_pd.yaml", *args, "--every", "1", "--tau-csv", pd_run, "-o", replay)
    assert r.exit_code == 0, r.output
    a, b = read_trajectory(pd_run), read_trajectory(replay)
    qcols = [n for n in a.names if n.startswith("q.")]
    assert np.abs(a.columns(qcols) - b.columns(qcols)).max() < 1e-12
    assert np.abs(a.columns(qcols)[-1] - a.columns(qcols)[0]).max() > 0.1


def test_constant_tau_by_name(tmp_path):
    out = tmp_path / "t.csv"
    r = invoke("simulate", ROBOTS_DIR / "pendulum.urdf", "--steps", "10", "--tau", "hinge=0.5", "-o", out)
    assert r.exit_code == 0, r.output
    assert np.all(read_trajectory(out).column("tau.hinge") == 0.5)


def test_divergence_writes_the_finite_rows_and_exits_1(tmp_path):
    out = tmp_path / "d.csv"
    p = invoke("simulate", ROBOTS_DIR / "pendulum.urdf", "--steps", "100", "--tau", "1e12", "--no-limits", "-o", out)
    assert p.returncode == 1
    line = one_line_error(p.stderr)
    assert "diverged at step 1 (t = 0.001 s)" in line and "max_state" in line
    t = read_trajectory(out)
    assert len(t) == 1 and np.all(np.isfinite(t.data))


@pytest.mark.parametrize("args, message", [
    (("--q0", "1,2,3"), "--q0: expected 6 values (shoulder_pan, shoulder_lift, elbow"),
    (("--q0", "elbw=0.3"), "--q0: robot 'arm6' has no coordinate 'elbw'; did you mean 'elbow'?"),
    (("--qd0", "elbow=fast"), "'fast' is not a number"),
    (("--q0", "1,2", "--q0", "elbow=1"), "either the whole vector once or NAME=VALUE pairs"),
    (("--tau", "shoulder=1"), "--tau: robot 'arm6' has no torque coordinate 'shoulder'"),
    (("--dt", "0"), "--dt"),
    (("--dt", "-1e-3"), "--dt"),
    (("--steps", "0"), "--steps"),
    (("--integrator", "rk5"), "--integrator"),
    (("--steps", "10", "--duration", "1"), "either --steps or --duration"),
    (("--columns", "q,qdot"), "--columns"),
    (("--gravity", "0,0"), "--gravity"),
    (("--tau-csv", "missing.csv"), "missing.csv"),
    (("--armature", "elbw=0.1"), "--armature: robot 'arm6' has no moving joint 'elbw'; did you mean 'elbow'?"),
    (("--armature", "elbow=-1"), "--armature"),
])
def test_bad_options_exit_2_with_one_line(tmp_path, args, message):
    out = tmp_path / "never.csv"
    p = invoke("simulate", ARM6, *args, "-o", out)
    assert p.returncode == 2, p.stderr
    assert message in one_line_error(p.stderr)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_bad_scenario_exits_2_naming_file_line_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"dyn: 1\nrobot: {ARM6}\ncontrol:\n  type: pd\n  kp: 10\n  kdd: 1\n")
    p = invoke("simulate", bad, "-o", tmp_path / "never.csv")
    assert p.returncode == 2
    assert one_line_error(p.stderr) == f"dyn: error: {bad}:6: control.kdd: unknown key 'kdd'; did you mean 'kd'?"
    assert not (tmp_path / "never.csv").exists()


def test_a_contacts_block_writes_contact_columns(tmp_path):
    sc = tmp_path / "c.yaml"
    sc.write_text(f"dyn: 1\nrobot: {ROBOTS_DIR / 'quadruped.urdf'}\nfloating_base: true\nsteps: 20\n"
                  "initial:\n  q: {root.z: 0.34}\ncontacts:\n  model: soft\n"
                  "  points:\n    - {frame: lf_foot, offset: [0, 0, -0.02], name: lf}\n"
                  "output:\n  columns: [q, contact]\n")
    p = invoke("simulate", sc, "-o", tmp_path / "out.csv")
    assert p.returncode == 0, p.stderr
    header = (tmp_path / "out.csv").read_text().splitlines()[0].split(",")
    assert header[-7:] == ["contact.lf.fx", "contact.lf.fy", "contact.lf.fz", "contact.lf.tx", "contact.lf.ty",
                           "contact.lf.tz", "penetration.lf"]


def test_help_lists_the_options_with_examples():
    r = invoke("simulate", "--help")
    assert r.exit_code == 0
    for word in ("--steps", "--duration", "--dt", "--integrator", "--q0", "--qd0", "--tau", "--tau-csv", "--every",
                 "--gravity", "--floating-base", "--no-joint-friction", "--output", "--no-progress", "Examples:"):
        assert word in r.output


DUMMY_ROOT = MODEL_DUMMY_ROOT.format(root="world", joint="hinge", kind="revolute")


def test_a_massless_floating_root_is_refused_at_load_naming_the_link_and_the_fix(tmp_path):
    """A dummy root link jointed to the real body, under --floating-base: M is singular. simulate,
    energy-check and a scenario refuse it before step 0 (it used to diverge with 'try a smaller dt');
    inverse dynamics runs it with one warning."""
    robot = tmp_path / "dummy.urdf"
    robot.write_text(DUMMY_ROOT)
    out = tmp_path / "never.csv"
    for args in (("simulate", robot, "--floating-base", "--steps", "10", "-o", out),
                 ("energy-check", robot, "--floating-base", "--duration", "0.01")):
        p = invoke(*args)
        assert p.returncode == 2, p.stderr
        line = one_line_error(p.stderr)
        assert "--floating-base" in line and "floating link 'world' has no mass or inertia" in line, line
        assert "delete link 'world' and joint 'hinge'" in line and "give 'world' an <inertial>" in line
        assert "smaller dt" not in p.stderr and not out.exists()
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"dyn: 1\nrobot: {robot}\nfloating_base: true\nsteps: 10\n")
    p = invoke("simulate", scenario, "-o", out)
    assert p.returncode == 2 and one_line_error(p.stderr).startswith(f"dyn: error: {scenario}:3: floating_base: ")
    assert not out.exists()
    motion = tmp_path / "m.csv"
    motion.write_text("time,q.root.x,q.root.y,q.root.z,q.root.qx,q.root.qy,q.root.qz,q.root.qw,q.hinge\n" + "".join(
        f"{k / 100},0,0,0,0,0,0,1,{(k / 10) ** 2}\n" for k in range(6)))
    p = invoke("inverse", robot, motion, "--floating-base", "-o", tmp_path / "tau.csv")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("floating link 'world' has no mass or inertia") == 1
    p = invoke("contact-id", robot, motion, "--contact", "body", "-o", tmp_path / "wrench.csv")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("floating link 'world' has no mass or inertia") == 1


def test_lock_holds_joints_and_leaves_their_columns_out(tmp_path):
    """--lock JOINT=VALUE (repeatable) and a scenario's lock: simulate the robot without those joints."""
    out = tmp_path / "locked.csv"
    p = invoke("simulate", ARM6, "--steps", "20", "--lock", "elbow=0.5", "--lock", "wrist_2=-0.3", "-o", out)
    assert p.returncode == 0, p.stderr
    columns = list(read_trajectory(out).names)
    assert "q.shoulder_lift" in columns and not [c for c in columns if "elbow" in c or "wrist_2" in c]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"dyn: 1\nrobot: {ARM6}\nsteps: 20\nlock:\n  elbow: 0.5\n  wrist_2: -0.3\n")
    again = tmp_path / "again.csv"
    assert invoke("simulate", scenario, "-o", again).returncode == 0
    assert again.read_bytes() == out.read_bytes()
    scenario.write_text(f"dyn: 1\nrobot: {ARM6}\nsteps: 20\nlock:\n  elbw: 0.5\n")
    p = invoke("simulate", scenario, "-o", tmp_path / "never.csv")
    assert p.returncode == 2
    assert one_line_error(p.stderr) == (f"dyn: error: {scenario}:5: lock.elbw: cannot lock joint 'elbw': robot "
                                        "'arm6' has no joint 'elbw'; did you mean 'elbow'?")


@pytest.mark.parametrize("lock, message", [
    ("elbw=0.5", "dyn: error: --lock: cannot lock joint 'elbw': robot 'arm6' has no joint 'elbw'; "
                 "did you mean 'elbow'?"),
    ("elbow=9", "dyn: error: --lock: cannot lock joint 'elbow' at 9: outside its limits [-3.14159, 3.14159] ("),
    ("elbow", "dyn: error: Invalid value for --lock: 'elbow': expected JOINT=VALUE"),
])
def test_a_bad_lock_exits_2_with_one_line(tmp_path, lock, message):
    for command in (("simulate", ARM6, "--steps", "5"), ("energy-check", ARM6, "--duration", "0.01"), ("info", ARM6)):
        p = invoke(*command, "--lock", lock, "-o", tmp_path / "never.csv") if command[0] == "simulate" else \
            invoke(*command, "--lock", lock)
        assert p.returncode == 2, (command, p.stderr)
        assert one_line_error(p.stderr).startswith(message), (command, p.stderr)
    assert list(tmp_path.iterdir()) == []


def test_a_simulation_of_mimic_joints_couples_them_without_a_warning(tmp_path):
    """Issue 28 item 8 in the simulation loop (dynlib.sim.mimic): right = -left + 0.01 at every row, its tau
    0, no warning (it said "does not couple mimic joints yet" before); a locked leader holds its follower."""
    from tests.cli.test_info import GRIPPER

    robot = tmp_path / "g.urdf"
    robot.write_text(GRIPPER)
    r = invoke("simulate", robot, "--steps", "30", "--tau", "left=0.5", "-o", tmp_path / "out.csv")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    t = read_trajectory(tmp_path / "out.csv")
    q = t.columns(["q.left", "q.right"])
    assert np.max(np.abs(q[:, 1] - (-q[:, 0] + 0.01))) <= 1e-12 and q[-1, 0] > 0.0
    assert np.all(t.columns(["tau.right"]) == 0.0)
    # dyn inverse of the file: the tree's torques, whose projection Gᵀ (tau.left - tau.right) is the leader's
    r = invoke("inverse", robot, tmp_path / "out.csv", "-o", tmp_path / "back.csv")
    assert r.returncode == 0, r.stderr
    back = read_trajectory(tmp_path / "back.csv").columns(["tau.slide", "tau.left", "tau.right"])
    sim = t.columns(["tau.slide", "tau.left"])
    assert np.max(np.abs(np.column_stack([back[:, 0], back[:, 1] - back[:, 2]]) - sim)) < 1e-9
    r = invoke("simulate", robot, "--steps", "3", "--tau", "right=1", "-o", tmp_path / "bad.csv")
    assert r.returncode == 2, r.stderr
    assert "tau.right: joint 'right' mimics 'left' and has no motor" in one_line_error(r.stderr), r.stderr
    assert not (tmp_path / "bad.csv").exists()
    scenario = tmp_path / "s.yaml"
    scenario.write_text("dyn: 1\nrobot: g.urdf\nduration: 0.01\ncontrol: {type: pd, kp: {right: 10.0}}\n")
    r = invoke("simulate", scenario, "-o", tmp_path / "bad.csv")
    assert r.returncode == 2 and one_line_error(r.stderr).startswith(
        f"dyn: error: {scenario}:4: control: kp.right: joint 'right' mimics 'left' and has no motor"), r.stderr
    assert not (tmp_path / "bad.csv").exists()
    r = invoke("simulate", robot, "--steps", "3", "--q0", "left=0.02", "--q0", "right=0", "-o", tmp_path / "w.csv")
    assert r.returncode == 0 and r.stderr.count("dyn: warning: q0: joint 'right' mimics 'left'") == 1, r.stderr
    r = invoke("simulate", robot, "--steps", "3", "--lock", "left=0.02", "-o", tmp_path / "out.csv")
    assert r.returncode == 0 and "mimic" not in r.stderr, r.stderr
    assert dict(dynlib.load(robot, lock={"left": 0.02}).locked) == {"left": 0.02, "right": -0.01}
