"""`dyn energy-check`: the table, the JSON report, the figure and the exit codes."""
import json

import numpy as np
import pytest

from helpers import ROBOTS_DIR, invoke


def test_passes_and_writes_the_report_and_figure(tmp_path):
    report, fig = tmp_path / "r.json", tmp_path / "e.png"
    r = invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--no-joint-friction", "--report", report, "--plot", fig)
    assert r.returncode == 0, r.stderr
    assert "seed 0" in r.stderr and "energy_drift" in r.stdout and "passed" in r.stdout
    d = json.loads(report.read_text())
    assert d["passed"] is True and d["robot"] == "arm6"
    names = [c["name"] for c in d["checks"]]
    assert names[:1] == ["energy_drift"] and {"fd_id_roundtrip", "mass_matrix_symmetric",
                                               "mass_matrix_positive_definite", "coriolis_skew"} <= set(names)
    assert all(set(c) == {"name", "value", "tolerance", "passed"} for c in d["checks"])
    assert d["settings"]["integrator"] == "rk4"
    data = fig.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 10_000


def test_euler_at_large_dt_exits_1(tmp_path):
    report = tmp_path / "r.json"
    r = invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--integrator", "euler", "--dt", "1e-2", "--report", report)
    assert r.returncode == 1 and "FAIL" in r.stdout
    assert json.loads(report.read_text())["passed"] is False


def test_floating_base_reports_the_quaternion_norm():
    r = invoke("energy-check", ROBOTS_DIR / "quadruped.urdf", "--floating-base", "--seed", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "quaternion_norm" in r.stdout


def test_bad_input_exit_2(tmp_path):
    r = invoke("energy-check", tmp_path / "missing.urdf")
    assert r.returncode == 2 and r.stderr.startswith("dyn: error:")
    r = invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--q0", "nope=1")
    assert r.returncode == 2 and "nope" in r.stderr


def test_modern_robotics_demonstration_scenarios():
    from helpers import ROBOTS_DIR as robots

    scenarios = robots.parent / "scenarios"
    assert invoke("energy-check", scenarios / "arm6_fall.yaml").returncode == 0
    r = invoke("energy-check", scenarios / "arm6_fall_euler.yaml")
    assert r.returncode == 1 and "euler" in r.stdout and "FAIL" in r.stdout


def test_a_contact_scenario_runs_its_contacts_and_says_so(tmp_path):
    scenarios = ROBOTS_DIR.parent / "scenarios"
    report = tmp_path / "r.json"
    r = invoke("energy-check", scenarios / "contact_soft_ball.yaml", "--duration", "0.6", "--report", report)
    # the soft penalty's jump at touch-down costs RK4 its order: the balance fails the default 1e-6
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("robot ball: rk4, dt = 0.001 s, 0.6 s, work-energy balance, soft contacts\n")
    d = json.loads(report.read_text())
    assert d["settings"]["contacts"] == "soft" and d["settings"]["work_energy_balance"] is True
    drift = next(c for c in d["checks"] if c["name"] == "energy_drift")
    assert drift["passed"] is False and 1e-6 < drift["value"] < 0.1
    r = invoke("energy-check", scenarios / "contact_bilateral_standing.yaml", "--duration", "0.5", "--report", report)
    assert r.returncode == 0 and "bilateral contacts" in r.stdout, r.stdout + r.stderr
    assert json.loads(report.read_text())["settings"]["contacts"] == "bilateral"
    invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--duration", "0.1", "--report", report)
    assert json.loads(report.read_text())["settings"]["contacts"] is None


KINOVA = "kinova_description/robots/kinova.urdf"


def test_a_real_robot_passes_by_default_at_the_step_it_chooses(erd_path, tmp_path):
    report = tmp_path / "r.json"
    r = invoke("energy-check", erd_path(KINOVA), "--no-joint-friction", "--no-limits", "--report", report)
    assert r.returncode == 0, r.stdout + r.stderr
    s = json.loads(report.read_text())["settings"]
    assert s["dt_fixed"] is False and s["dt"] < 1e-3  # 1 ms fails on kinova with RK4 (drift 1.06e-3)
    assert r.stdout.startswith(f"robot kinova: rk4, dt = {s['dt']:g} s, 1 s, free motion")
    assert f"dt = {s['dt']:.4g} s chosen" in r.stdout and r.stdout.endswith("passed\n")


def test_a_fixed_step_too_large_exits_1_naming_the_step_and_the_integrator(erd_path, tmp_path):
    report = tmp_path / "r.json"
    r = invoke("energy-check", erd_path(KINOVA), "--no-joint-friction", "--no-limits", "--dt", "1e-3", "--integrator",
               "rk4", "--report", report)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "energy_drift fails at dt = 0.001 s because of the time step: integration error of rk4" in r.stdout
    s = json.loads(report.read_text())["settings"]
    assert s["dt_fixed"] is True and s["dt"] == 1e-3 and s["drift_cause"] == "integration_error"
    assert f"it passes at dt = {s['passing_dt']:.4g} s" in r.stdout
    assert json.loads(report.read_text())["notes"] == [line for line in r.stdout.splitlines()
                                                       if line.startswith("energy_drift fails")]
    # the step it names does pass
    assert invoke("energy-check", erd_path(KINOVA), "--no-joint-friction", "--no-limits", "--dt", s["passing_dt"],
                  "--integrator", "rk4").returncode == 0


def test_a_run_that_reaches_a_limit_passes_and_counts_the_limits_work(tmp_path):
    """arm6's free motion (0.3 s from the seeded random state) reaches a limit: the limit takes energy, the
    balance stays closed (no false alarm), limit_work says the limits gave none; --no-limits: free motion."""
    report = tmp_path / "r.json"
    r = invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--no-joint-friction", "--dt", "1e-3", "--duration", "0.3",
               "--report", report)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(report.read_text())
    checks = {c["name"]: c for c in d["checks"]}
    assert d["settings"]["work_energy_balance"] is True and checks["limit_work"]["passed"]
    assert "work-energy balance" in r.stdout and "limit_work" in r.stdout
    taken = min(d["series"]["limit_work"]) if "series" in d and "limit_work" in d["series"] else None
    assert taken is None or taken < 0


def test_a_limit_that_gives_energy_is_flagged(tmp_path, monkeypatch):
    """A limit model broken on purpose: every held limit moved to [0.05, 1] rad, so that arm6, started at q = 0,
    is 0.05 rad past each lower limit and the limit torque pushes it back with positive power (it gives energy):
    limit_work, the work of that torque, fails; the real limits pass (the test above)."""
    from dynlib.sim import simulate as sim

    real = sim.limits_record

    def broken(*args):
        rec = real(*args)
        return rec._replace(lower=np.full_like(rec.lower, 0.05), upper=np.full_like(rec.upper, 1.0))

    monkeypatch.setattr(sim, "limits_record", broken)
    report = tmp_path / "r.json"
    r = invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--no-joint-friction", "--dt", "1e-3", "--duration", "0.1",
               "--q0", "0,0,0,0,0,0", "--report", report)
    assert r.returncode == 1, r.stdout + r.stderr
    checks = {c["name"]: c for c in json.loads(report.read_text())["checks"]}
    assert not checks["limit_work"]["passed"] and checks["limit_work"]["value"] > 1e-3


def test_armature_option_reaches_the_run_and_energy_is_still_conserved(tmp_path):
    report = tmp_path / "r.json"
    r = invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--no-joint-friction", "--armature", "shoulder_pan=0.5",
               "--armature", "elbow=0.2", "--report", report)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(report.read_text())["passed"] is True


def test_a_robot_is_checked_with_its_urdf_friction_and_the_cause_is_named(tmp_path):
    # arm6's URDF damping and Coulomb friction are in the run and in the work-energy balance by default; at 1 ms
    # rk4 takes the stiff Coulomb friction by backward Euler (first order), and the diagnosis says so, and
    # names no contact (arm6 has none)
    report = tmp_path / "r.json"
    r = invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--dt", "1e-3", "--duration", "0.3", "--report", report)
    assert r.returncode == 1, r.stdout + r.stderr
    d = json.loads(report.read_text())
    assert d["settings"]["work_energy_balance"] is True
    assert r.stdout.startswith("robot arm6: rk4, dt = 0.001 s, 0.3 s, work-energy balance")
    assert "dyn: note: rk4 with implicit friction on shoulder_lift, elbow" in r.stderr
    note = " ".join(d["notes"])
    assert "rk4's implicit friction on shoulder_lift, elbow" in note and "first order in that term" in note
    assert "contact" not in note
    free = invoke("energy-check", ROBOTS_DIR / "arm6.urdf", "--no-joint-friction", "--no-limits", "--dt", "1e-3",
                  "--duration", "0.3")
    assert free.returncode == 0 and "free motion" in free.stdout and "dyn: note:" not in free.stderr


# ------------------------------------------------------------------ several robots, one process

def _robots(folder, names):
    """Copies of the sample robots under `names` ({name: sample robot file}), their paths in order."""
    paths = []
    for name, sample in names.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text((ROBOTS_DIR / sample).read_text())
        paths.append(folder / name)
    return paths


def test_several_robots_give_each_the_single_runs_report_and_figure(tmp_path):
    """`dyn energy-check A B C --report DIR/ --plot 'figs/{stem}.png'`: one report and figure per robot, each
    report the one a run of that robot alone writes; each table on standard output names its file, a last
    line sums them up; a robot whose checks fail (the double pendulum drifts 1.8e-12 at 1 ms, the others
    less than 1e-12) makes the command exit 1 and is named in it."""
    robots = _robots(tmp_path, {"pendulum.urdf": "pendulum.urdf", "more/double.urdf.xacro": "double_pendulum.urdf",
                                "planar3.urdf": "planar3.urdf"})
    args = ["--no-joint-friction", "--duration", "0.2", "--dt", "1e-3", "--tolerance", "1.3e-12"]
    r = invoke("energy-check", *robots, *args, "--report", f"{tmp_path / 'out'}/",
               "--plot", str(tmp_path / "figs" / "{stem}.png"))
    assert r.returncode == 1, r.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["double.json", "pendulum.json", "planar3.json"]
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["double.png", "pendulum.png", "planar3.png"]
    for robot, stem, code in zip(robots, ("pendulum", "double", "planar3"), (0, 1, 0)):
        alone = invoke("energy-check", robot, *args, "--report", tmp_path / f"{stem}_alone.json")
        assert alone.returncode == code, alone.stdout + alone.stderr
        report = (tmp_path / f"{stem}_alone.json").read_text()
        assert (tmp_path / "out" / f"{stem}.json").read_text() == report
        assert f"robot {json.loads(report)['robot']} ({robot}): rk4" in r.stdout
        assert alone.stdout.splitlines()[1:] == r.stdout.split(f" ({robot}): ")[1].splitlines()[1:len(
            alone.stdout.splitlines())]  # the same table
    assert r.stdout.splitlines()[-1] == f"2 of 3 passed; FAILED: {robots[1]}"
    notes = [line for line in r.stderr.splitlines() if "random initial state" in line]
    assert len(notes) == 3 and all(f"dyn: {robot}: " in line for robot, line in zip(robots, notes)), notes


def test_a_bad_robot_is_named_and_the_others_are_checked(tmp_path):
    robots = _robots(tmp_path, {"a.urdf": "pendulum.urdf", "c.urdf": "double_pendulum.urdf"})
    (tmp_path / "b.urdf").write_text("<robot name='b'><link name='l'/><joint name='j'/></robot>\n")
    r = invoke("energy-check", robots[0], tmp_path / "b.urdf", robots[1], "--no-joint-friction", "--duration", "0.1",
               "--report", f"{tmp_path}/out/")
    assert r.returncode == 2, r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if "error:" in line]
    assert len(errors) == 2 and "b.urdf" in errors[0], errors
    assert "1 of 3 inputs failed" in errors[1] and "b.urdf" in errors[1], errors
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.json", "c.json"]
    assert r.stdout.count("\npassed\n") + r.stdout.startswith("passed\n") == 2
    assert r.stdout.splitlines()[-1] == f"2 of 3 passed; not checked (an error, said on standard error): {tmp_path / 'b.urdf'}"


@pytest.mark.parametrize("case", ["clash", "file", "stdout"])
def test_several_robots_bad_outputs_are_refused_before_any_work(tmp_path, case):
    robots = _robots(tmp_path, {"a/arm.urdf": "pendulum.urdf", "b/arm.urdf.xacro": "pendulum.urdf",
                                "c.urdf": "double_pendulum.urdf"})
    sources = {"clash": robots[:2], "file": robots[1:], "stdout": robots[1:]}[case]
    report = {"clash": f"{tmp_path}/out/", "file": str(tmp_path / "r.json"), "stdout": "-"}[case]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    r = invoke("energy-check", *sources, "--report", report)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and "error" in r.stderr, r.stderr
    assert {"clash": "arm.json", "file": "folder", "stdout": "output folder"}[case] in r.stderr, r.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # no folder, no file made
