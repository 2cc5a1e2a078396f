"""`dyn identify` and `dyn excite`: files in and out, the report and figure, and one-line errors
with exit code 2 (1 when a least-squares link cannot be written) and no output files."""
import json
import re

import numpy as np
import pytest

import dynlib
from dynlib.motion.identification.excite import excitation
from dynlib.motion.inverse import joint_friction_torques
from dynlib.files.trajectory import column_names, read_trajectory, write_trajectory
from helpers import ROBOTS_DIR, invoke
from tests.motion.test_identify import perturbed_urdf

ARM7 = ROBOTS_DIR / "arm7.urdf"


def files(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """Training and validation recordings of a perturbed arm7 (q, qd, qdd, tau with 1 % noise) in CSV."""
    folder = tmp_path_factory.mktemp("recordings")
    nominal = dynlib.load(ARM7)
    true = dynlib.load(perturbed_urdf(ARM7, folder / "true.urdf", seed=2))
    rng = np.random.default_rng(0)
    paths = []
    for name, seed, seconds in (("train.csv", 0, 8.0), ("validate.csv", 1, 4.0)):
        ex = excitation(nominal, seconds, 3, iterations=0, seed=seed)
        tau = dynlib.rnea(true, ex.q, ex.v, ex.a) + joint_friction_torques(true, ex.v)
        tau += 0.01 * np.sqrt(np.mean(tau ** 2, axis=0)) * rng.normal(size=tau.shape)
        names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "qdd", "tau"))
        write_trajectory(folder / name, names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau]))
        paths.append(folder / name)
    return paths


def test_help_lists_the_commands_with_examples():
    r = invoke("--help")
    assert r.returncode == 0 and "identify" in r.stdout and "excite" in r.stdout
    for cmd, words in (("identify", ("Examples", "--validate", "--friction", "xacro")),
                       ("excite", ("Examples", "--harmonics", "--duration"))):
        r = invoke(cmd, "--help")
        assert r.returncode == 0, r.stderr
        assert all(w in r.stdout for w in words)


def test_identify_writes_the_urdf_report_and_figure(recordings, tmp_path):
    train, validate = recordings
    out, report, fig = tmp_path / "identified.urdf", tmp_path / "report.json", tmp_path / "fit.png"
    r = invoke("identify", ARM7, train, "-o", out, "--report", report, "--validate", validate, "--plot", fig)
    assert r.returncode == 0, r.stderr
    assert "base parameters" in r.stderr and "validation" in r.stderr
    assert r.stdout == ""
    # the URDF: loadable by dyn and Pinocchio, the input outside <inertial> and <dynamics>
    model = dynlib.load(out)
    assert model.nv == 7
    replaced = re.compile(rb"<inertial>.*?</inertial>|<dynamics[^>]*/>", re.S)
    assert replaced.sub(b"", out.read_bytes()) == replaced.sub(b"", ARM7.read_bytes())
    pin = pytest.importorskip("pinocchio")
    assert pin.buildModelFromUrdf(str(out)).nv == 7
    # the report
    d = json.loads(report.read_text())
    assert {"robot", "method", "condition_number", "base_parameters", "links", "joints", "rms_error",
            "relative_rms_error", "recordings", "validation_recordings"} <= set(d)
    assert d["method"] == "physically consistent" and d["condition_number"] > 1
    assert len(d["base_parameters"]) == d["base_parameters_count"]
    assert all({"name", "urdf", "least_squares", "std", "identified"} <= set(b) for b in d["base_parameters"])
    assert [e["joint"] for e in d["rms_error"]["validation"]] == list(model.v_names)
    val = d["relative_rms_error"]["validation"]
    assert val["identified"] < 0.2 * val["urdf"]
    assert {e["link"] for e in d["links"]} >= {"link4", "link4_cover", "flange"}
    assert all(e["pseudo_inertia_min_eigenvalue"] >= -1e-12 for e in d["links"])
    assert [j["joint"] for j in d["joints"]] == list(model.v_names)
    assert fig.read_bytes().startswith(b"\x89PNG")


def test_friction_option_holds_the_other_terms_at_the_urdf(recordings, tmp_path):
    train, _ = recordings
    out = tmp_path / "id.urdf"
    r = invoke("identify", ARM7, train, "-o", out, "--friction", "viscous,offset", "--report", tmp_path / "r.json")
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["friction_terms"] == ["viscous", "offset"]
    nominal, identified = dynlib.load(ARM7), dynlib.load(out)
    assert np.array_equal(identified.arrays.friction, nominal.arrays.friction)  # Coulomb held at the URDF
    assert not np.array_equal(identified.arrays.damping, nominal.arrays.damping)
    assert all("offset" in j for j in d["joints"])


def test_armature_option_takes_the_rotors_torque_out_before_the_fit(tmp_path):
    """A recording of arm7 with geared motors (rotor inertia per joint, no noise): with --armature the fit
    is exact and the report lists the values; without it the rotors' torque is a misfit."""
    rotors = dict(zip(dynlib.load(ARM7).v_names, (0.3, 0.3, 0.2, 0.2, 0.05, 0.05, 0.02)))
    true = dynlib.load(perturbed_urdf(ARM7, tmp_path / "true.urdf", seed=3)).with_armature(rotors)
    ex = excitation(true, 8.0, 3, iterations=0, seed=4)
    tau = dynlib.rnea(true, ex.q, ex.v, ex.a) + joint_friction_torques(true, ex.v)
    names = column_names(true.q_names, true.v_names, ("q", "qd", "qdd", "tau"))
    write_trajectory(tmp_path / "rec.csv", names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau]))
    errors = {}
    for label, extra in (("with", [a for j, x in rotors.items() for a in ("--armature", f"{j}={x}")]), ("without", [])):
        r = invoke("identify", ARM7, tmp_path / "rec.csv", "-o", tmp_path / f"{label}.urdf",
                   "--report", tmp_path / f"{label}.json", *extra)
        assert r.returncode == 0, r.stderr
        report = json.loads((tmp_path / f"{label}.json").read_text())
        errors[label] = report["relative_rms_error"]["training"]["identified"]
        assert report["armature"] == (rotors if label == "with" else {})
    assert errors["with"] < 1e-4 < errors["without"]


def test_least_squares_links_that_are_not_physical_exit_1_and_write_nothing(recordings, tmp_path):
    """8 s of a random (not optimised) motion leave weakly identified directions that plain least
    squares turns into non-physical links."""
    train, _ = recordings
    r = invoke("identify", ARM7, train, "-o", tmp_path / "ls.urdf", "--method", "least-squares",
               "--report", tmp_path / "r.json", "--plot", tmp_path / "f.png")
    assert r.returncode == 1, r.stderr
    assert re.match(r"dyn: error: links? 'link\d'", r.stderr.strip().splitlines()[-1])
    assert "not physically consistent" in r.stderr
    assert files(tmp_path) == []


def test_excite_writes_a_trajectory_within_the_limits(tmp_path):
    out = tmp_path / "excite.csv"
    r = invoke("excite", ROBOTS_DIR / "arm6.urdf", "--duration", 3, "--harmonics", 2, "--iterations", 3, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "condition number" in r.stderr
    model = dynlib.load(ROBOTS_DIR / "arm6.urdf")
    traj = read_trajectory(out)
    assert traj.names == column_names(model.q_names, model.v_names, ("q", "qd", "qdd"))
    assert len(traj) == 3001
    q = traj.columns([f"q.{n}" for n in model.q_names])
    v = traj.columns([f"qd.{n}" for n in model.v_names])
    a = traj.columns([f"qdd.{n}" for n in model.v_names])
    assert np.all(q >= model.lower) and np.all(q <= model.upper)
    assert np.all(np.abs(v) <= model.velocity_limit)
    tau = dynlib.rnea(model, q, v, a) + joint_friction_torques(model, v)
    assert np.all(np.abs(tau) <= model.effort)


@pytest.mark.parametrize("case, message", [
    ("no-torques", "has no measured torques"),
    ("short", "too short for identification"),
    ("xacro", "expand it first"),
    ("friction", "friction terms must be among"),
    ("missing", "no such file"),
    ("armature", "no moving joint 'wrist'"),
])
def test_identify_bad_input_is_one_line_exit_2_and_no_output(recordings, tmp_path, case, message):
    train, _ = recordings
    model = dynlib.load(ARM7)
    robot, rec, extra = ARM7, train, []
    if case == "no-torques":
        traj = read_trajectory(train)
        keep = [n for n in traj.names if not n.startswith("tau.")]
        rec = tmp_path / "q_only.csv"
        write_trajectory(rec, keep, traj.columns(keep))
    elif case == "short":
        traj = read_trajectory(train)
        rec = tmp_path / "short.csv"
        write_trajectory(rec, traj.names, traj.data[:4])
    elif case == "xacro":
        robot = ROBOTS_DIR / "arm6.urdf.xacro"
    elif case == "friction":
        extra = ["--friction", "stiction"]
    elif case == "missing":
        rec = tmp_path / "nope.csv"
    elif case == "armature":
        extra = ["--armature", "wrist=0.1"]
    out = tmp_path / "out"
    out.mkdir()
    r = invoke("identify", robot, rec, "-o", out / "id.urdf", "--report", out / "r.json", "--plot", out / "f.png", *extra)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("dyn: error:") and message in lines[-1]
    assert not any(line.startswith("Traceback") for line in lines)
    assert files(out) == []
    del model


def test_identify_bad_figure_name_fails_before_any_work(recordings, tmp_path):
    train, _ = recordings
    r = invoke("identify", ARM7, train, "-o", tmp_path / "id.urdf", "--report", tmp_path / "r.json",
               "--plot", tmp_path / "fit.txt")
    assert r.returncode == 2 and "figure files must end in" in r.stderr
    assert files(tmp_path) == []


@pytest.mark.parametrize("case, message", [
    ("output-is-the-recording", "must end in .urdf"),
    ("output-is-the-robot", "is an input of this command"),
    ("report-is-the-recording", "must end in .json"),
    ("report-is-the-output", "must end in .json"),
])
def test_identify_never_writes_over_an_input_or_another_output(recordings, tmp_path, case, message):
    """dyn identify wrote its URDF or its report over whatever path it was given: over the
    recording (-o rec.csv, --report rec.csv), the robot's own URDF, or the URDF output (the report
    lost), with exit code 0."""
    train, validate = recordings
    robot, rec, val = tmp_path / "arm7.urdf", tmp_path / "train.csv", tmp_path / "validate.csv"
    for src, dst in ((ARM7, robot), (train, rec), (validate, val)):
        dst.write_bytes(src.read_bytes())
    out, report = {"output-is-the-recording": (rec, None), "output-is-the-robot": (robot, None),
                   "report-is-the-recording": (tmp_path / "id.urdf", rec),
                   "report-is-the-output": (tmp_path / "id.urdf", tmp_path / "id.urdf")}[case]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    r = invoke("identify", robot, rec, "--validate", val, "-o", out, *(["--report", report] if report else []))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dyn: error:") and message in lines[0], r.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("args", [("--duration", "1e9"), ("--duration", "10", "--dt", "1e-12")])
def test_excite_samples_that_cannot_fit_are_one_line(tmp_path, args):
    """dyn excite --duration 1e9 (or --dt 1e-12) was an internal error (MemoryError: 7.28 TiB)."""
    r = invoke("excite", ARM7, *args, "-o", tmp_path / "x.csv")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dyn: error:") and "GB" in lines[0], r.stderr
    assert files(tmp_path) == []


def test_excite_rejects_a_floating_base(tmp_path):
    urdf = tmp_path / "floating.urdf"
    text = (ROBOTS_DIR / "pendulum.urdf").read_text()
    urdf.write_text(text.replace('type="revolute"', 'type="floating"', 1))
    r = invoke("excite", urdf, "--duration", 1, "-o", tmp_path / "e.csv")
    assert r.returncode == 2 and "fixed-base" in r.stderr
    assert not (tmp_path / "e.csv").exists()


def test_identify_reads_a_ros_bag_as_inverse_does(recordings, tmp_path):
    """The training recording as a driver logs it (a ROS 1 bag, joints in alphabetical order, epoch
    stamps, positions and efforts, a second JointState topic): the same parameters as from the CSV of
    the same positions and torques, both with central differences of q."""
    from recording_files import EPOCH_NS, messages, write_bag

    train, validate = recordings
    traj = read_trajectory(train)
    names = dynlib.load(ARM7).q_names
    Q, E = traj.columns([f"q.{n}" for n in names]), traj.columns([f"tau.{n}" for n in names])
    t_ns = EPOCH_NS + np.round(traj.time * 1e9).astype(np.int64)
    order = sorted(range(len(names)), key=lambda j: names[j])
    bag = tmp_path / "train.bag"
    write_bag(bag, {"/joint_states": messages(names, t_ns, Q, E=E, order=order),
                    "/arm2/joint_states": messages(names, t_ns, Q + 0.1, E=E, order=order)}, "bag")
    plain = tmp_path / "plain.csv"
    write_trajectory(plain, ["time"] + [f"q.{n}" for n in names] + [f"tau.{n}" for n in names],
                     np.column_stack([(t_ns - t_ns[0]) * 1e-9, Q, E]))
    r = invoke("identify", ARM7, bag, "-o", tmp_path / "x.urdf")
    assert r.returncode == 2 and "--topic" in r.stderr and files(tmp_path) == ["plain.csv", "train.bag"], r.stderr
    reports = []
    for source, extra in ((bag, ["--topic", "/joint_states"]), (plain, [])):
        report = tmp_path / f"{source.stem}.json"
        r = invoke("identify", ARM7, source, *extra, "--derivatives", "central", "--validate", validate,
                   "-o", tmp_path / f"{source.stem}.urdf", "--report", report)
        assert r.returncode == 0, r.stderr
        reports.append(json.loads(report.read_text()))
    from_bag, from_csv = ([b["identified"] for b in d["base_parameters"]] for d in reports)
    np.testing.assert_allclose(from_bag, from_csv, rtol=1e-6, atol=1e-9)
    val = reports[0]["relative_rms_error"]["validation"]
    assert val["identified"] < 0.2 * val["urdf"]


# -- real-looking recordings (issue 30) ---------------------------------------------------------

OFFSETS = (0.8, -1.2, 0.5, -0.4, 0.3, -0.2, 0.1)  # N m: a torque sensor's constant bias per joint


def _standin(folder, offsets=OFFSETS):
    """A perturbed arm7 "runs" two motions. The training recording is what a logging PC writes: stamps
    0.4 - 4 ms apart (jittery), q with 0.1 mrad of encoder noise, measured velocities qd.* (0.01 rad/s
    of noise), no qdd.*, torques with 1 % noise plus a constant bias per joint. The validation
    recording: 1 kHz, exact q, qd, qdd, its torques (with the same bias) as effort.* (so that
    `dyn inverse` writes residual.* = effort - tau)."""
    nominal = dynlib.load(ARM7)
    true = dynlib.load(perturbed_urdf(ARM7, folder / "true.urdf", seed=5))
    rng = np.random.default_rng(3)
    ex = excitation(nominal, 10.0, 4, iterations=0, seed=11, dt=2e-4)
    bias = np.array(offsets)
    tau = dynlib.rnea(true, ex.q, ex.v, ex.a) + joint_friction_torques(true, ex.v) + bias
    rows = np.cumsum(rng.integers(2, 21, size=len(ex.time)))
    rows = np.concatenate([[0], rows[rows < len(ex.time)]])
    q = ex.q[rows] + rng.normal(scale=1e-4, size=(rows.size, nominal.nq))
    v = ex.v[rows] + rng.normal(scale=1e-2, size=(rows.size, nominal.nv))
    t_tau = tau[rows] + 0.01 * np.sqrt(np.mean(tau ** 2, axis=0)) * rng.normal(size=(rows.size, nominal.nv))
    names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "tau"))
    write_trajectory(folder / "logged.csv", names, np.hstack([ex.time[rows, None], q, v, t_tau]))
    val = excitation(nominal, 5.0, 3, iterations=0, seed=12)
    vtau = dynlib.rnea(true, val.q, val.v, val.a) + joint_friction_torques(true, val.v) + bias
    names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "qdd")) + [f"effort.{n}" for n in nominal.v_names]
    write_trajectory(folder / "check.csv", names, np.hstack([val.time[:, None], val.q, val.v, val.a, vtau]))
    return folder / "logged.csv", folder / "check.csv"


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return _standin(tmp_path_factory.mktemp("standin"))


@pytest.fixture(scope="module")
def standin_unbiased(tmp_path_factory):
    return _standin(tmp_path_factory.mktemp("standin_unbiased"), offsets=(0.0,) * 7)


def inverse_error(urdf, recording, folder):
    """The relative rms torque error of `urdf` on `recording` as `dyn inverse` gives it:
    sqrt(sum residual^2 / sum effort^2) over its output."""
    out = folder / "inverse.csv"
    r = invoke("inverse", urdf, recording, "-o", out)
    assert r.returncode == 0, r.stderr
    d = read_trajectory(out)
    names = dynlib.load(ARM7).v_names
    res = d.columns([f"residual.{n}" for n in names])
    eff = d.columns([f"effort.{n}" for n in names])
    return float(np.sqrt(np.sum(res ** 2) / np.sum(eff ** 2)))


def test_offsets_are_never_lost_the_printed_error_is_the_written_files(standin, tmp_path):
    """--friction ...,offset: a URDF cannot hold the offsets, so the URDF written is refitted without
    them; the report and the printed line give both fits, and the validation error printed for the
    written file is what `dyn inverse` measures with it."""
    train, check = standin
    out, report = tmp_path / "id.urdf", tmp_path / "r.json"
    r = invoke("identify", ARM7, train, "--validate", check, "--friction", "viscous,coulomb,offset",
               "-o", out, "--report", report)
    assert r.returncode == 0, r.stderr
    d = json.loads(report.read_text())
    written = d["relative_rms_error"]["validation"]["identified"]
    measured = inverse_error(out, check, tmp_path)
    assert abs(written / measured - 1) < 1e-3, (written, measured)
    assert f"{100 * written:.3g} %" in r.stderr
    offsets = d["offsets"]
    assert offsets["in_urdf"] is False and "refitted without" in r.stderr
    with_off = offsets["relative_rms_error"]["validation"]
    assert with_off < written  # the offsets are real here: the fit with them is better
    assert f"{100 * with_off:.3g} %" in r.stderr
    assert set(offsets["values"]) == set(dynlib.load(ARM7).v_names)
    assert abs(offsets["values"]["joint1"] - OFFSETS[0]) < 0.1  # a vertical axis: no gravity term to trade with
    assert [j["offset"] for j in d["joints"]] == [offsets["values"][j["joint"]] for j in d["joints"]]


def test_auto_uses_measured_velocities_and_resamples_jittery_stamps(standin_unbiased, tmp_path):
    """The default derivatives of a logged recording (jittery stamps, qd.*, no qdd.*): the measured
    velocities, differentiated once by Savitzky–Golay after resampling, all said on standard error."""
    train, check = standin_unbiased
    out, report = tmp_path / "id.urdf", tmp_path / "r.json"
    r = invoke("identify", ARM7, train, "--validate", check, "-o", out, "--report", report)
    assert r.returncode == 0, r.stderr
    assert "no qd.*" not in r.stderr
    assert "measured velocities (qd.*)" in r.stderr and "Savitzky–Golay" in r.stderr and "resampled" in r.stderr
    d = json.loads(report.read_text())
    assert d["recordings"][0]["derivatives"] == "given velocities, savgol accelerations"
    assert d["relative_rms_error"]["validation"]["urdf"] > 0.1
    assert d["relative_rms_error"]["validation"]["identified"] < 0.03


def test_a_fit_that_explains_nothing_exits_1_and_writes_nothing(standin, tmp_path):
    """Torques that are not the robot's (another recording's, shuffled in time): one line naming the
    cause and the fix, exit 1, no URDF."""
    train, _ = standin
    traj = read_trajectory(train)
    data = traj.data.copy()
    cols = [i for i, n in enumerate(traj.names) if n.startswith("tau.")]
    data[:, cols] = np.random.default_rng(0).permutation(data[:, cols])
    bad = tmp_path / "in" / "bad.csv"
    bad.parent.mkdir()
    write_trajectory(bad, traj.names, data)
    out = tmp_path / "out"
    out.mkdir()
    r = invoke("identify", ARM7, bad, "-o", out / "id.urdf", "--report", out / "r.json")
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("dyn: error:") and "identified" in last and "--max-error" in last, r.stderr
    assert files(out) == []


def test_a_motion_that_does_not_excite_the_model_exits_1(standin, tmp_path):
    """Joint 7 held still: its parameters are not seen (condition number infinite)."""
    train, _ = standin
    traj = read_trajectory(train)
    data = traj.data.copy()
    data[:, traj.names.index("q.joint7")] = 0.2
    data[:, traj.names.index("qd.joint7")] = 0.0
    bad = tmp_path / "still.csv"
    write_trajectory(bad, traj.names, data)
    r = invoke("identify", ARM7, bad, "-o", tmp_path / "id.urdf")
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("dyn: error:") and "condition number" in last and "dyn excite" in last
    assert not (tmp_path / "id.urdf").exists()
    r = invoke("identify", ARM7, bad, "-o", tmp_path / "id.urdf", "--max-condition", "inf")
    assert r.returncode == 0, r.stderr


def test_given_derivatives_from_a_bags_velocities(standin_unbiased, tmp_path):
    """A ROS 1 bag with JointState.velocity: --derivatives given uses them and differentiates them
    once (the bag has no accelerations), as from the CSV of the same values."""
    from recording_files import EPOCH_NS, messages, write_bag

    train, check = standin_unbiased
    traj = read_trajectory(train)
    names = dynlib.load(ARM7).q_names
    Q, V, T = (traj.columns([f"{p}.{n}" for n in names]) for p in ("q", "qd", "tau"))
    bag = tmp_path / "run.bag"
    write_bag(bag, {"/joint_states": messages(names, EPOCH_NS + np.round(traj.time * 1e9).astype(np.int64),
                                              Q, V=V, E=T)}, "bag")
    reports = []
    for source in (bag, train):
        report = tmp_path / f"{source.stem}.json"
        r = invoke("identify", ARM7, source, "--derivatives", "given", "--validate", check,
                   "-o", tmp_path / f"{source.stem}.urdf", "--report", report)
        assert r.returncode == 0, r.stderr
        assert "measured velocities (qd.*)" in r.stderr
        reports.append(json.loads(report.read_text()))
    a, b = ([x["identified"] for x in d["base_parameters"]] for d in reports)
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-6)  # stamps rounded to ns in the bag
    assert reports[0]["relative_rms_error"]["validation"]["identified"] < 0.03


def test_static_poses_with_zero_derivatives(tmp_path):
    """A calibration bag: arm7 held still at 40 poses, 1 s each at 100 Hz (positions only, no
    velocities), with gaps of seconds between the poses. --derivatives zero: q̇ = q̈ = 0, the
    torques are gravity's, and the identified model predicts the gravity torques of other poses."""
    from recording_files import EPOCH_NS, messages, write_bag

    nominal = dynlib.load(ARM7)
    true = dynlib.load(perturbed_urdf(ARM7, tmp_path / "true.urdf", seed=8))
    rng = np.random.default_rng(4)
    names = nominal.q_names

    def poses(n):
        P = rng.uniform(np.maximum(0.8 * nominal.lower, -2.5), np.minimum(0.8 * nominal.upper, 2.5), (n, nominal.nq))
        Q = np.repeat(P, 100, axis=0) + rng.normal(scale=1e-5, size=(100 * n, nominal.nq))
        t = (np.repeat(np.arange(n) * 5.0, 100) + np.tile(np.arange(100) * 0.01, n))
        tau = dynlib.rnea(true, Q, np.zeros_like(Q), np.zeros_like(Q))
        return t, Q, tau + 0.01 * np.sqrt(np.mean(tau ** 2, axis=0)) * rng.normal(size=tau.shape)

    t, Q, E = poses(40)
    bag = tmp_path / "poses.bag"
    write_bag(bag, {"/joint_states": messages(names, EPOCH_NS + np.round(t * 1e9).astype(np.int64), Q, E=E)}, "bag")
    t, Q, E = poses(10)
    check = tmp_path / "check.csv"
    write_trajectory(check, column_names(names, names, ("q", "qd", "qdd")) + [f"tau.{n}" for n in names],
                     np.column_stack([t, Q, 0 * Q, 0 * Q, E]))
    report = tmp_path / "r.json"
    r = invoke("identify", ARM7, bag, "--derivatives", "zero", "--friction", "none", "--validate", check,
               "-o", tmp_path / "id.urdf", "--report", report)
    assert r.returncode == 0, r.stderr
    assert "still poses" in r.stderr
    d = json.loads(report.read_text())
    assert d["recordings"][0]["derivatives"] == "zero"
    val = d["relative_rms_error"]["validation"]
    assert val["identified"] < 0.03 < val["urdf"]


def test_torque_filter_is_zero_phase_and_said(standin_unbiased, tmp_path):
    train, check = standin_unbiased
    for how, words in (("savgol", "Savitzky–Golay smoothing, zero-phase"), ("lowpass:20", "low-pass at 20 Hz")):
        report = tmp_path / "r.json"
        r = invoke("identify", ARM7, train, "--torque-filter", how, "--validate", check, "-o", tmp_path / "id.urdf",
                   "--report", report)
        assert r.returncode == 0, r.stderr
        assert words in r.stderr
        assert json.loads(report.read_text())["relative_rms_error"]["validation"]["identified"] < 0.03
    r = invoke("identify", ARM7, train, "--torque-filter", "bandpass", "-o", tmp_path / "x.urdf")
    assert r.returncode == 2 and "savgol or lowpass:HZ" in r.stderr


def test_index_in_columns_needs_the_files_joint_order(tmp_path):
    """{index} counts in --joint-order (issue 29): without it on a file without joint names, one line."""
    path = tmp_path / "log.csv"
    path.write_text("t,p0,p1,p2,p3,p4,p5,e0,e1,e2,e3,e4,e5\n" + "".join(
        f"{k * 1e-3}," + ",".join(["0.1"] * 12) + "\n" for k in range(50)))
    r = invoke("identify", ROBOTS_DIR / "arm6.urdf", path, "--columns", "time=t,q=p{index},effort=e{index}",
               "-o", tmp_path / "id.urdf")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--joint-order" in r.stderr, r.stderr
    assert not (tmp_path / "id.urdf").exists()
    r = invoke("identify", "--help")
    assert "--joint-order" in r.stdout


ROTORS = (0.3, 0.3, 0.2, 0.2, 0.05, 0.05, 0.02)  # kg m^2: a geared arm's reflected rotor inertias


@pytest.fixture(scope="module")
def geared(tmp_path_factory):
    """A perturbed arm7 with rotor inertias ROTORS: a training recording (tau.*, 1 % noise) and a
    validation one (effort.*, for `inverse_error`), q, qd, qdd exact."""
    folder = tmp_path_factory.mktemp("geared")
    nominal = dynlib.load(ARM7)
    true = dynlib.load(perturbed_urdf(ARM7, folder / "true.urdf", seed=3)).with_armature(ROTORS)
    rng = np.random.default_rng(0)
    for name, seed, seconds, column in (("rec.csv", 4, 8.0, "tau"), ("check.csv", 5, 4.0, "effort")):
        ex = excitation(nominal, seconds, 3, iterations=0, seed=seed)
        tau = dynlib.rnea(true, ex.q, ex.v, ex.a) + joint_friction_torques(true, ex.v)
        tau += 0.01 * np.sqrt(np.mean(tau ** 2, axis=0)) * rng.normal(size=tau.shape)
        names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "qdd")) + [f"{column}.{n}" for n in nominal.v_names]
        write_trajectory(folder / name, names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau]))
    return folder / "rec.csv", folder / "check.csv"


def test_armature_identify_writes_the_rotors_where_every_dyn_command_reads_them(geared, tmp_path):
    """--armature identify: one more parameter per joint (>= 0), written as <dynamics dyn:armature>; the
    validation error printed is `dyn inverse`'s on the file written; Pinocchio still loads the file."""
    train, check = geared
    out, report = tmp_path / "id.urdf", tmp_path / "r.json"
    r = invoke("identify", ARM7, train, "--validate", check, "--armature", "identify", "-o", out, "--report", report)
    assert r.returncode == 0, r.stderr
    d = json.loads(report.read_text())
    assert d["armature_identified"] is True and "dyn:armature" in r.stderr
    np.testing.assert_allclose(list(d["armature"].values()), ROTORS, rtol=0.1)
    assert [j["armature"]["after"] for j in d["joints"]] == list(d["armature"].values())
    written = d["relative_rms_error"]["validation"]["identified"]
    assert abs(written / inverse_error(out, check, tmp_path) - 1) < 1e-3
    assert f"{100 * written:.3g} %" in r.stderr and written < 0.02
    text = out.read_text()
    assert '<robot xmlns:dyn="urn:dyn:urdf" name="arm7">' in text and text.count("dyn:armature=") == 7
    assert dynlib.load(out).arrays.armature.tolist() == list(d["armature"].values())  # repr: the same doubles
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(out))  # an attribute it does not know: ignored
    assert pm.nv == 7 and not np.any(pm.armature)
    np.testing.assert_allclose(pm.damping, [j["damping"]["after"] for j in d["joints"]], rtol=1e-15)


def test_without_armature_identify_the_rotors_are_a_misfit(geared, tmp_path):
    train, check = geared
    r = invoke("identify", ARM7, train, "--validate", check, "-o", tmp_path / "id.urdf", "--report", tmp_path / "r.json")
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["armature"] == {} and d["armature_identified"] is False
    assert d["relative_rms_error"]["validation"]["identified"] > 0.03
    assert "dyn:" not in (tmp_path / "id.urdf").read_text()  # no armature: the URDF as before


def test_a_urdfs_armature_is_read_by_simulate_and_overridden_per_joint(tmp_path):
    """<dynamics dyn:armature> is physics every command reads: simulate with it equals simulate of the
    same URDF without it given --armature; --armature JOINT=V overrides that joint only."""
    text = ARM7.read_text().replace('<robot name="arm7">', '<robot xmlns:dyn="urn:dyn:urdf" name="arm7">')
    assert 'xmlns:dyn' in text
    text = text.replace('<dynamics damping="1" friction="0.5"/>', '<dynamics damping="1" friction="0.5" dyn:armature="0.3"/>')
    (tmp_path / "geared.urdf").write_text(text)
    assert dynlib.load(tmp_path / "geared.urdf").arrays.armature.tolist() == [0.3, 0.3, 0, 0, 0, 0, 0]
    runs = {"file": (tmp_path / "geared.urdf",), "option": (ARM7, "--armature", "joint1=0.3", "--armature", "joint2=0.3"),
            "override": (tmp_path / "geared.urdf", "--armature", "joint2=0.1")}
    out = {}
    for label, args in runs.items():
        r = invoke("simulate", *args, "--steps", "50", "-o", tmp_path / f"{label}.csv")
        assert r.returncode == 0, r.stderr
        out[label] = read_trajectory(tmp_path / f"{label}.csv").data
    assert np.array_equal(out["file"], out["option"])
    assert not np.array_equal(out["file"], out["override"])
    r = invoke("simulate", ARM7, "--armature", "joint1=0.3", "--armature", "joint2=0.1", "--steps", "50",
               "-o", tmp_path / "override_option.csv")
    assert r.returncode == 0 and np.array_equal(out["override"], read_trajectory(tmp_path / "override_option.csv").data)
