"""`dyn contact-id`: the sample motion through the command line (CSV, Parquet, standard
input and output), every mode's options reaching the library, the notices on standard
error, and one-line errors with exit code 2 and no output file."""
from pathlib import Path

import numpy as np
import pytest

from dynlib.files.columns import WRENCH, tau_columns
from dynlib.motion.contact_id import contact_inverse_dynamics
from dynlib.files.trajectory import read_trajectory, write_trajectory
from helpers import ROBOTS_DIR, invoke, run_process, sample

QUADRUPED = ROBOTS_DIR / "quadruped.urdf"
BIPED = ROBOTS_DIR / "biped.urdf"
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SAMPLE = SCENARIOS / "contact_id_quadruped.csv"
NOISY = SCENARIOS / "contact_id_quadruped_noisy.csv"
FEET = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")
QUAD = sample("quadruped", True)


def only_files(folder):
    return sorted(p.name for p in Path(folder).iterdir())


def feet(*extra):
    out = []
    for f in FEET:
        out += ["--contact", f]
    return out + list(extra)


def test_help_has_examples():
    r = invoke("contact-id", "--help")
    assert r.exit_code == 0
    for word in ("Examples", "--contact", "--guess", "--over-time", "--friction", "residual.root", "@START:STOP"):
        assert word in r.output, word


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_sample_motion_is_the_library_result(tmp_path, suffix):
    out = tmp_path / f"out{suffix}"
    r = invoke("contact-id", QUADRUPED, SAMPLE, *feet("--point-contacts"), "-o", out)
    assert r.exit_code == 0, r.output
    table = read_trajectory(out)
    ref = contact_inverse_dynamics(QUAD, read_trajectory(SAMPLE), list(FEET), point=True)
    names, data = ref.table(QUAD)
    assert table.names == names
    assert names == ["time"] + tau_columns(QUAD) + [f"contact.{f}.{c}" for f in FEET for c in WRENCH] + \
        ["residual.root"]
    assert np.array_equal(table.data, data)
    assert np.all(table.columns(tau_columns(QUAD)[:6]) == 0)
    assert table.column("residual.root").max() < 1e-9
    # the active.<foot> columns switch lf_foot off while it is lifted
    lifted = read_trajectory(SAMPLE).column("active.lf_foot") == 0
    assert lifted.any() and np.all(table.column("contact.lf_foot.fz")[lifted] == 0)


def test_torques_beyond_the_effort_limits_are_a_warning_per_joint(tmp_path):
    """The quadruped's joints are limited to 30 N·m: the sample motion under ten times Earth's gravity needs more
    at some rows; each such joint is one warning line naming it, with the counts of `effort_excess`."""
    from dynlib.motion.inverse import effort_excess

    r = invoke("contact-id", QUADRUPED, SAMPLE, "--point-contacts", "--gravity", "0,0,-98.1", "-o", tmp_path / "a.csv")
    assert r.exit_code == 0, r.stderr
    table = read_trajectory(tmp_path / "a.csv")
    expected = effort_excess(QUAD, table.time, table.columns(tau_columns(QUAD)))
    assert expected and len(expected) < QUAD.nv - 6
    lines = [line for line in r.stderr.splitlines() if "effort limit" in line]
    assert lines == [f"dyn: warning: {o.message()}" for o in expected]
    r = invoke("contact-id", QUADRUPED, SAMPLE, "--point-contacts", "-o", tmp_path / "b.csv")
    assert "effort limit" not in r.stderr  # Earth's gravity: within the limits


def test_with_limits_marks_exactly_the_rows_over_the_effort_limit(tmp_path):
    """--with limits: over_limit.<joint> for each of the quadruped's twelve joints (the root has no effort limit),
    1 exactly on the rows where |tau| exceeds 30 N·m, after the other columns; the warnings are unchanged."""
    from dynlib.motion.inverse import effort_excess

    args = ("contact-id", QUADRUPED, SAMPLE, "--point-contacts", "--gravity", "0,0,-98.1")
    r = invoke(*args, "--with", "limits", "-o", tmp_path / "a.parquet")
    assert r.exit_code == 0, r.stderr
    plain = invoke(*args, "-o", tmp_path / "b.csv")
    table, before = read_trajectory(tmp_path / "a.parquet"), read_trajectory(tmp_path / "b.csv")
    joints = QUAD.v_names[6:]
    assert table.names == before.names + [f"over_limit.{j}" for j in joints]
    tau = table.columns(tau_columns(QUAD)[6:])
    over = np.abs(tau) > 30.0
    assert over.any() and not over.all()
    assert np.array_equal(table.columns([f"over_limit.{j}" for j in joints]), over.astype(float))
    lines = [line for line in r.stderr.splitlines() if "effort limit" in line]
    assert lines == [line for line in plain.stderr.splitlines() if "effort limit" in line]
    assert len(lines) == len(effort_excess(QUAD, table.time, table.columns(tau_columns(QUAD))))


def test_contacts_default_to_the_active_columns(tmp_path):
    r = invoke("contact-id", QUADRUPED, SAMPLE, "--point-contacts", "-o", tmp_path / "a.csv")
    assert r.exit_code == 0, r.output
    r = invoke("contact-id", QUADRUPED, SAMPLE, *feet("--point-contacts"), "-o", tmp_path / "b.csv")
    assert np.array_equal(read_trajectory(tmp_path / "a.csv").data, read_trajectory(tmp_path / "b.csv").data)


def test_standard_input_to_standard_output():
    r = run_process("contact-id", QUADRUPED, "-", "--point-contacts", input=SAMPLE.read_text())
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("time,tau.root.fx") and len(lines) == 1 + len(read_trajectory(SAMPLE))


def test_options_reach_the_library(tmp_path):
    traj = read_trajectory(SAMPLE)
    cases = [
        (["--guess", "lf_foot=0,0,30,0,0,0", "--guess", "rh_foot=1,2,3,0,0,0"],
         {"guesses": {"lf_foot": [0, 0, 30, 0, 0, 0], "rh_foot": [1, 2, 3, 0, 0, 0]}}),
        (["--over-time", "--smoothing", "50", "--min-torque", "2"],
         {"over_time": True, "smoothing": 50.0, "min_torque": 2.0}),
        (["--friction", "0.5", "--point-contacts"], {"friction": 0.5, "point": True}),
        (["--no-joint-friction", "--gravity", "0,0,-9"], {"joint_friction": False}),
        (["--armature", "lf_kfe=0.05", "--armature", "rh_hfe=0.02"], {}),
    ]
    for k, (args, kw) in enumerate(cases):
        out = tmp_path / f"{k}.csv"
        r = invoke("contact-id", QUADRUPED, SAMPLE, *feet(*args), "-o", out)
        assert r.exit_code == 0, r.output
        model = QUAD.with_gravity([0, 0, -9]) if "--gravity" in args else QUAD
        if "--armature" in args:
            model = model.with_armature({"lf_kfe": 0.05, "rh_hfe": 0.02})
        names, data = contact_inverse_dynamics(model, traj, list(FEET), **kw).table(model)
        got = read_trajectory(out)
        assert got.names == names and np.array_equal(got.data, data), args
    assert "friction.feasible" in read_trajectory(tmp_path / "2.csv").names
    # the rotors are not lost on the way to the free-flyer model: without them the knee's torque differs
    names, bare = contact_inverse_dynamics(QUAD, traj, list(FEET)).table(QUAD)
    knee = names.index("tau.lf_kfe")
    assert np.abs(bare[:, knee] - read_trajectory(tmp_path / "4.csv").column("tau.lf_kfe")).max() > 1e-3


def test_time_windows(tmp_path):
    r = invoke("contact-id", QUADRUPED, SAMPLE, "--point-contacts", "--contact", "lf_foot@:0.5,1.6:",
               "--contact", "rf_foot", "--contact", "lh_foot", "--contact", "rh_foot", "-o", tmp_path / "w.csv")
    assert r.exit_code == 0, r.output
    out = read_trajectory(tmp_path / "w.csv")
    t = out.time
    off = ((t > 0.5) & (t < 1.6)) | (read_trajectory(SAMPLE).column("active.lf_foot") == 0)
    assert np.all(out.column("contact.lf_foot.fz")[off] == 0)
    assert np.all(out.column("contact.lf_foot.fz")[~off] != 0)


def test_contact_and_guess_parsing():
    """FRAME@START:STOP text becomes dynlib's structured ContactFrame here, in the command."""
    from cli.contact_id import parse_contact, parse_guess
    from dynlib.motion.contact_id import ContactFrame
    from dynlib.errors import InputError

    assert parse_contact(" a ") == ContactFrame("a")
    assert parse_contact("a@0.5:1,2:") == ContactFrame("a", ((0.5, 1.0), (2.0, np.inf)))
    assert parse_contact("a@:1") == ContactFrame("a", ((-np.inf, 1.0),))
    for bad in ("@0:1", "a@1:0", "a@1", "a@x:1", "a@nan:1"):
        with pytest.raises(InputError, match="START:STOP"):
            parse_contact(bad)
    assert parse_guess("x = 1,2,3,4,5,6") == ("x", (1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
    for bad in ("x=1,2,3", "=1,2,3,4,5,6", "x=1,2,3,4,5,inf", "x:1,2,3,4,5,6", "x=1,2,3,4,5,a"):
        with pytest.raises(InputError, match="FRAME=fx,fy,fz,tx,ty,tz"):
            parse_guess(bad)


def test_flight_and_infeasible_rows_are_reported_on_standard_error(tmp_path):
    r = invoke("contact-id", QUADRUPED, SAMPLE, "--contact", "lf_foot@:0.2", "-o", tmp_path / "f.csv")
    assert r.returncode == 0, r.stderr
    assert "rows without contact (t = 0.2" in r.stderr and "lf_foot" not in r.stderr
    out = read_trajectory(tmp_path / "f.csv")
    assert out.column("residual.root")[out.time > 0.2].min() > 50  # the whole weight, ~118 N
    r = invoke("contact-id", QUADRUPED, SAMPLE, "--point-contacts", "--friction", "0", "-o", tmp_path / "g.csv")
    assert r.returncode == 0
    assert "warning: friction cones infeasible at" in r.stderr and "friction.feasible = 0" in r.stderr
    assert read_trajectory(tmp_path / "g.csv").column("friction.feasible").min() == 0


def test_positions_only_notice_and_savgol(tmp_path):
    r = invoke("contact-id", QUADRUPED, NOISY, "--point-contacts", "-o", tmp_path / "c.csv")
    assert r.returncode == 0 and "central differences" in r.stderr and "savgol" in r.stderr
    r = invoke("contact-id", QUADRUPED, NOISY, "--point-contacts", "--derivatives", "savgol",
               "-o", tmp_path / "s.csv")
    assert r.returncode == 0 and r.stderr == ""
    truth = read_trajectory(SAMPLE).columns([f"contact.{f}.fz" for f in FEET]).sum(axis=1)
    err = {k: np.sqrt(np.mean((read_trajectory(tmp_path / f"{k}.csv").columns(
        [f"contact.{f}.fz" for f in FEET]).sum(axis=1) - truth) ** 2)) for k in ("c", "s")}
    assert err["s"] < 0.25 * err["c"], err


def test_adds_the_free_flyer_root_and_takes_a_urdf_floating_joint(tmp_path):
    urdf = QUADRUPED.read_text()
    first_link = urdf.index("<link ")
    floating = urdf[:first_link] + '<link name="world"/>\n<joint name="root" type="floating">' \
        '<parent link="world"/><child link="trunk"/></joint>\n' + urdf[first_link:]
    (tmp_path / "q.urdf").write_text(floating)
    r1 = invoke("contact-id", tmp_path / "q.urdf", SAMPLE, "--point-contacts", "-o", tmp_path / "a.csv")
    r2 = invoke("contact-id", QUADRUPED, SAMPLE, "--point-contacts", "-o", tmp_path / "b.csv")
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    a, b = read_trajectory(tmp_path / "a.csv"), read_trajectory(tmp_path / "b.csv")
    assert a.names == b.names and np.allclose(a.data, b.data, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("args, message", [
    (["--contact", "lf_fot"], "no frame (link) 'lf_fot'; did you mean 'lf_foot'"),
    (["--contact", "lf_foot@1:0"], "START:STOP"),
    (["--contact", "lf_foot", "--guess", "lf_foot=1,2"], "FRAME=fx,fy,fz,tx,ty,tz"),
    (["--contact", "lf_foot", "--guess", "trunk=0,0,0,0,0,0"], "not a contact"),
    (["--contact", "lf_foot", "--smoothing", "3"], "--smoothing applies only with --over-time"),
    (["--contact", "lf_foot", "--over-time", "--min-torque", "0"], "min_torque must be"),
    (["--contact", "lf_foot", "--over-time", "--friction", "0.5"], "cannot be combined with --over-time"),
    (["--contact", "lf_foot", "--derivatives", "given", "--columns", "qd=v_{joint}"], "v_root.vx"),
    (["--contact", "lf_foot", "--friction", "-1"], "friction coefficient must be"),
    (["--contact", "lf_foot", "--armature", "lf_kef=0.1"], "--armature: robot 'quadruped' has no moving joint 'lf_kef'"),
])
def test_errors_are_one_line_exit_2_no_output(tmp_path, args, message):
    out = tmp_path / "out.csv"
    r = invoke("contact-id", QUADRUPED, SAMPLE, *args, "-o", out)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("dyn: error:") and r.stderr.count("\n") == 1, r.stderr
    assert message in r.stderr, r.stderr
    assert only_files(tmp_path) == []


def test_missing_columns_and_wrong_robot(tmp_path):
    write_trajectory(tmp_path / "bad.csv", ["time", "q.root.x"], np.zeros((3, 2)))
    r = invoke("contact-id", QUADRUPED, tmp_path / "bad.csv", "--contact", "lf_foot", "-o", tmp_path / "o.csv")
    assert r.returncode == 2 and "bad.csv" in r.stderr and r.stderr.count("\n") == 1
    r = invoke("contact-id", BIPED, SAMPLE, "--contact", "left_foot", "-o", tmp_path / "o.csv")
    assert r.returncode == 2 and "lf_haa" in r.stderr and r.stderr.count("\n") == 1
    assert only_files(tmp_path) == ["bad.csv"]


def test_contact_id_uses_the_gravity_of_a_parquet_run_and_refuses_another(tmp_path):
    """A free fall simulated on the Moon: with the run's gravity the root needs no wrench (no contact
    rows: residual.root is the whole root wrench); a contradicting --gravity is one line."""
    drop = tmp_path / "drop.parquet"
    r = invoke("simulate", QUADRUPED, "--floating-base", "--gravity", "0,0,-1.62", "--q0", "root.z=1",
               "--steps", "50", "--no-joint-friction", "-o", drop)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out.csv"
    r = invoke("contact-id", QUADRUPED, drop, "--contact", "lf_foot@5:6", "-o", out)
    assert r.returncode == 0, r.stderr
    table = read_trajectory(out)
    root = table.columns([n for n in table.names if n.startswith("residual.root")])
    assert np.abs(root[2:-2]).max() <= 1e-6, np.abs(root).max()
    r = invoke("contact-id", QUADRUPED, drop, "--contact", "lf_foot@5:6", "--gravity", "0,0,-9.81", "-o", tmp_path / "e.csv")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "0,0,-1.62" in r.stderr, r.stderr


def test_several_recordings_in_one_process_equal_their_single_runs(tmp_path):
    import shutil

    shutil.copy(SAMPLE, tmp_path / "walk.csv")
    shutil.copy(NOISY, tmp_path / "noisy.csv")
    (tmp_path / "broken.csv").write_text("time,q.root.x\n0,nan\n")
    r = invoke("contact-id", QUADRUPED, tmp_path / "walk.csv", tmp_path / "broken.csv", tmp_path / "noisy.csv",
               *feet("--point-contacts"), "-o", f"{tmp_path}/out/")
    assert r.exit_code == 2 and "1 of 3 inputs failed (" in r.stderr and "broken.csv" in r.stderr
    assert only_files(tmp_path / "out") == ["noisy.csv", "walk.csv"]
    for name in ("walk", "noisy"):
        alone = invoke("contact-id", QUADRUPED, tmp_path / f"{name}.csv", *feet("--point-contacts"),
                       "-o", tmp_path / f"{name}_alone.csv")
        assert alone.exit_code == 0, alone.output
        assert (tmp_path / "out" / f"{name}.csv").read_bytes() == (tmp_path / f"{name}_alone.csv").read_bytes()
