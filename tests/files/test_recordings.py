"""Reading robots' recordings (`dynlib.files.recordings`, ``dyn inverse`` / ``dyn contact-id``):
ROS 1 and ROS 2 bags written with `rosbags`' own writers, ``rostopic echo -p`` and
PlotJuggler CSVs written as those tools write them (tests/recording_files.py).

The driver lists the joints alphabetically (as the UR driver does), not in the URDF's
order, and stamps in epoch nanoseconds. Every format must give the torques of the
same motion: equal to dynlib's inverse of that motion in dyn's own CSV (exactly where
the format keeps the doubles), and to Pinocchio's RNEA of the exact motion to the
accuracy of central differences. Bad input is one line, exit code 2, no output file.
"""
import re
from decimal import Decimal

import numpy as np
import pyarrow.parquet as pq
import pytest

from dynlib.files.columns import TIME_START_KEY, tau_columns
from dynlib.errors import DynError
from dynlib.motion.inverse import inverse_dynamics_trajectory
from dynlib.files.recordings import read_recording
from dynlib.files.recordings.clock import rhythm_break
from dynlib.files.trajectory import column_names, read_trajectory, write_trajectory
from helpers import ROBOTS_DIR, invoke, run_process, sample
from recording_files import (EPOCH_NS, messages, swing, write_bag, write_plotjuggler_csv, write_rostopic_csv)

ARM6 = ROBOTS_DIR / "arm6.urdf"
ARM = sample("arm6")
N = 400            # samples
STEP_NS = 1_000_000  # 1 kHz
ORDER = sorted(range(ARM.nq), key=lambda j: ARM.q_names[j])  # the driver's order: alphabetical
# (a bag written at this path, reader's argument): ROS 2 bags as folders and as their one file
FORMATS = {
    "ros1-bag": ("run.bag", "run.bag"),
    "ros2-db3-folder": ("db3", "db3"),
    "ros2-db3-file": ("db3", "db3/db3.db3"),
    "ros2-mcap-folder": ("mcap", "mcap"),
    "ros2-mcap-file": ("mcap", "mcap/mcap.mcap"),
    "rostopic": ("rostopic.csv", "rostopic.csv"),
    "plotjuggler": ("plotjuggler.csv", "plotjuggler.csv"),
}


def motion(n=N, seed=0):
    """Stamps (ns, epoch), t (s from the first), exact Q, V, A, and measured efforts."""
    t_ns = EPOCH_NS + 123_456_789 + np.arange(n, dtype=np.int64) * STEP_NS
    t = (t_ns - t_ns[0]) * 1e-9
    Q, V, A = swing(ARM.nq, t, seed=seed)
    E = np.random.default_rng(seed + 1).normal(size=Q.shape)
    return t_ns, t, Q, V, A, E


def write(folder, fmt, msgs, **topics):
    """The recording of `msgs` on /joint_states (and `topics`) in format `fmt`; its path."""
    made, given = FORMATS[fmt]
    topics = {"/joint_states": msgs, **topics}
    if fmt == "rostopic":
        write_rostopic_csv(folder / made, msgs)
    elif fmt == "plotjuggler":
        write_plotjuggler_csv(folder / made, topics)
    elif not (folder / made).exists():
        write_bag(folder / made, topics, "bag" if made.endswith(".bag") else made)
    return folder / given


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("recordings")
    t_ns, t, Q, V, A, E = motion()
    msgs = messages(ARM.q_names, t_ns, Q, V, E, order=ORDER)
    paths = {fmt: write(folder, fmt, msgs) for fmt in FORMATS}
    return folder, paths, (t_ns, t, Q, V, A, E)


def pinocchio_torques(Q, V, A):
    import pinocchio as pin
    from helpers import PinMap

    pm = pin.buildModelFromUrdf(str(ARM6))
    pd = pm.createData()
    mp = PinMap(ARM, pm)
    return np.array([mp.v_back(pin.rnea(pm, pd, mp.q(q), mp.v(v), mp.v(a))) for q, v, a in zip(Q, V, A)])


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_gives_the_torques_of_the_motion(recorded, fmt):
    folder, paths, (t_ns, t, Q, V, A, E) = recorded
    assert ARM.q_names != tuple(ARM.q_names[j] for j in ORDER)  # the file's order is not the robot's
    rec = read_recording(ARM, paths[fmt])
    traj = rec.trajectory
    # time in seconds from the first sample; the clock's start kept exactly
    # (PlotJuggler writes its time axis, the header stamps here, with 6 decimals)
    clock_tol = Decimal("5e-7") if fmt == "plotjuggler" else Decimal(0)
    assert abs(rec.start - Decimal(int(t_ns[0])) / 10**9) <= clock_tol
    assert traj.time[0] == 0.0 and np.allclose(traj.time, t, rtol=0, atol=1e-6 if fmt == "plotjuggler" else 1e-15)
    # joints by name: the robot's q.<joint> is that joint's position, whatever the file's order
    digits = 9 if fmt == "plotjuggler" else 15  # PlotJuggler writes values with 9 decimals
    tol = 0.6 * 10.0 ** -digits
    for name_k, name in enumerate(ARM.q_names):
        assert np.abs(traj.column(f"q.{name}") - Q[:, name_k]).max() <= tol
        assert np.abs(traj.column(f"effort.{name}") - E[:, name_k]).max() <= tol
    out = inverse_dynamics_trajectory(ARM, traj, joint_friction=False)
    assert out.derivatives == "central"
    tau = out.data[:, 1:1 + ARM.nv]
    # dynlib's inverse of the same motion written in dyn's own CSV
    own = folder / "own.csv"
    write_trajectory(own, column_names(ARM.q_names, ARM.v_names, ("q",)), np.hstack([t[:, None], Q]))
    ref = inverse_dynamics_trajectory(ARM, read_trajectory(own), joint_friction=False).data[:, 1:]
    scale = np.abs(ref).max()
    # bags keep the doubles and integer stamps, rostopic Python's repr (exact) and decimal stamps;
    # PlotJuggler's 9 decimals (±5e-10 rad) become ±4·5e-10/dt² = ±2e-3 rad/s² in central differences
    assert np.abs(tau - ref).max() <= (5e-3 if fmt == "plotjuggler" else 1e-12) * scale
    # Pinocchio's RNEA of the exact motion: central differences at 1 kHz of this motion (|q''''| <=
    # 0.6·4⁴) are within h²/12·154 = 1.3e-5 rad/s² inside and h²/3·|q'''| at the two ends
    pin_tau = pinocchio_torques(Q, V, A)
    assert np.abs(tau[1:-1] - pin_tau[1:-1]).max() <= 5e-3 * scale
    assert np.abs(tau - pin_tau).max() <= 2e-2 * scale
    # the measured efforts are carried, with effort - tau
    names = out.names
    for k, name in enumerate(ARM.v_names):
        e = out.data[:, names.index(f"effort.{name}")]
        assert np.array_equal(e, traj.column(f"effort.{name}"))
        assert np.array_equal(out.data[:, names.index(f"residual.{name}")], e - tau[:, k])


@pytest.mark.parametrize("fmt", ["rostopic", "plotjuggler"])
def test_a_csv_read_ahead_is_parsed_once_and_gives_the_same_recording(recorded, fmt, monkeypatch):
    # dyn inverse and contact-id start a read ahead of the recording (dynlib.files.recordings.read_ahead);
    # a PlotJuggler CSV is read as a table (it takes the parse), a rostopic CSV by its own reader
    # (with its own column types): it must not be parsed ahead too, and held unused
    import dynlib.files.trajectory as tj
    from dynlib.files.recordings import read_ahead
    from dynlib.files.trajectory import csv as tcsv

    folder, paths, _ = recorded
    expected = read_recording(ARM, paths[fmt])
    parsed = []
    real = tcsv.read
    monkeypatch.setattr(tcsv, "read", lambda *args, **kw: parsed.append(args) or real(*args, **kw))
    assert read_ahead(paths[fmt])
    rec = read_recording(ARM, paths[fmt])
    assert rec.trajectory.names == expected.trajectory.names and rec.format == expected.format
    assert np.array_equal(rec.trajectory.data, expected.trajectory.data)
    assert len(parsed) == (1 if fmt == "plotjuggler" else 0)
    assert not tj._ahead or all(a.result() is None for a in tj._ahead.values())


def test_a_wrong_order_is_not_silently_wrong_torques(recorded):
    """Mapping the columns by position ({index}) on a file whose joints are named and in another
    order is an error, in both CSV formats; the same map on a file in the robot's order reads."""
    folder, paths, (t_ns, t, Q, V, A, E) = recorded
    with pytest.raises(DynError, match="field.name0 names that column's joint 'elbow'"):
        read_recording(ARM, paths["rostopic"], columns={"q": "field.position{index}"})
    wrong = {"q": "/joint_states/{joint}/position", "q.elbow": "/joint_states/wrist_1/position"}
    with pytest.raises(DynError, match="joint 'wrist_1'"):
        read_recording(ARM, paths["plotjuggler"], columns=wrong)
    in_order = write_rostopic_csv(folder / "in_order.csv", messages(ARM.q_names, t_ns, Q, V, E))
    rec = read_recording(ARM, in_order, columns={"q": "field.position{index}"})
    assert np.array_equal(rec.trajectory.columns([f"q.{n}" for n in ARM.q_names]), Q)


def test_joint_order_may_change_between_messages(tmp_path):
    t_ns, t, Q, V, A, E = motion(n=60)
    first = messages(ARM.q_names, t_ns[:30], Q[:30], V[:30], E[:30], order=ORDER)
    then = messages(ARM.q_names, t_ns[30:], Q[30:], V[30:], E[30:], order=ORDER[::-1])
    for fmt in ("ros1-bag", "ros2-mcap-file", "plotjuggler"):
        rec = read_recording(ARM, write(tmp_path, fmt, first + then))
        error = np.abs(rec.trajectory.columns([f"q.{n}" for n in ARM.q_names]) - Q).max()
        assert error <= (6e-10 if fmt == "plotjuggler" else 0.0)


def test_two_joint_state_topics_need_topic(tmp_path):
    t_ns, t, Q, V, A, E = motion(n=50)
    msgs = messages(ARM.q_names, t_ns, Q, V, E, order=ORDER)
    other = messages(ARM.q_names, t_ns, Q + 0.1, V, E, order=ORDER)
    for fmt in ("ros1-bag", "ros2-db3-folder", "plotjuggler"):
        path = write(tmp_path, fmt, msgs, **{"/left/joint_states": other})
        with pytest.raises(DynError, match="2 .*JointState topics.*--topic"):
            read_recording(ARM, path)
        rec = read_recording(ARM, path, topic="/left/joint_states")
        assert np.abs(rec.trajectory.column("q.elbow") - (Q[:, 2] + 0.1)).max() <= 6e-10


def test_unstamped_messages_use_the_log_time_and_say_so(tmp_path):
    t_ns, t, Q, V, A, E = motion(n=50)
    msgs = [m._replace(stamp=0) for m in messages(ARM.q_names, t_ns, Q, V, E, order=ORDER)]
    rec = read_recording(ARM, write(tmp_path, "ros1-bag", msgs))
    assert any("log time" in note for note in rec.notes)
    assert rec.start == Decimal(msgs[0].logtime) / 10**9 and np.allclose(rec.trajectory.time, t, atol=1e-12)


def test_epoch_nanoseconds_in_a_plain_column(tmp_path):
    """A dyn-style CSV whose time column (named by --columns) holds epoch ns: recognised from its
    size and said, or read in the unit given; never read as seconds."""
    t_ns, t, Q, V, A, E = motion(n=50)
    names = ["stamp"] + [f"pos_{n}" for n in ARM.q_names]
    path = tmp_path / "log.csv"
    path.write_text(",".join(names) + "\n" + "".join(
        f"{s}," + ",".join(repr(float(x)) for x in q) + "\n" for s, q in zip(t_ns, Q)))
    cols = {"time": "stamp", "q": "pos_{joint}"}
    rec = read_recording(ARM, path, columns=cols)
    assert any("epoch nanoseconds" in note for note in rec.notes)
    assert np.allclose(rec.trajectory.time, t, atol=1e-12) and rec.start == Decimal(int(t_ns[0])) / 10**9
    assert np.array_equal(read_recording(ARM, path, columns=cols, time_unit="ns").trajectory.time,
                          rec.trajectory.time)
    with pytest.raises(DynError, match="did you mean --time-unit ns"):
        read_recording(ARM, path, columns=cols, time_unit="s")


def test_resample_makes_jittery_stamps_uniform_for_savgol(tmp_path):
    t_ns, t, Q, V, A, E = motion()
    jitter = np.random.default_rng(3).integers(-50_000, 50_000, size=len(t_ns))  # ±50 µs
    jitter[0] = 0
    t_ns = t_ns + jitter
    t = (t_ns - t_ns[0]) * 1e-9
    Q, V, A = swing(ARM.nq, t)
    path = write(tmp_path, "ros1-bag", messages(ARM.q_names, t_ns, Q, V, None, order=ORDER))
    with pytest.raises(DynError, match="--resample"):
        inverse_dynamics_trajectory(ARM, read_recording(ARM, path).trajectory, derivatives="savgol")
    rec = read_recording(ARM, path, resample=1000.0)
    times = rec.trajectory.time
    assert np.allclose(np.diff(times), 1e-3, rtol=0, atol=1e-12) and times[-1] <= t[-1]
    out = inverse_dynamics_trajectory(ARM, rec.trajectory, derivatives="savgol", joint_friction=False)
    Qr, Vr, Ar = swing(ARM.nq, times)
    ref = pinocchio_torques(Qr, Vr, Ar)
    # linear interpolation between 1 kHz samples: |q''|·h²/8 = 1.2e-6 rad, smoothed by the fit
    inner = slice(60, -60)
    assert np.abs(out.data[inner, 1:1 + ARM.nv] - ref[inner]).max() <= 2e-2 * np.abs(ref).max()


# ------------------------------------------------------------------ the command line

def test_inverse_reads_a_bag_and_keeps_the_clock(recorded, tmp_path):
    folder, paths, (t_ns, t, Q, V, A, E) = recorded
    out = tmp_path / "tau.parquet"
    r = invoke("inverse", ARM6, paths["ros2-mcap-folder"], "-o", out)
    assert r.returncode == 0, r.stderr
    table = pq.read_table(out)
    assert table.schema.metadata[TIME_START_KEY.encode()].decode() == "1700000000.123456789"
    lib = inverse_dynamics_trajectory(ARM, read_recording(ARM, paths["ros2-mcap-folder"]).trajectory)
    got = read_trajectory(out)
    assert got.names == lib.names and got.names[1:1 + ARM.nv] == tau_columns(ARM)
    assert np.array_equal(got.data, lib.data)
    r = invoke("inverse", ARM6, paths["rostopic"], "--absolute-time", "-o", tmp_path / "abs.csv")
    assert r.returncode == 0, r.stderr
    got = read_trajectory(tmp_path / "abs.csv")
    assert got.names[:2] == ["time", "time.absolute"]
    assert np.abs(got.column("time.absolute") - t_ns * 1e-9).max() <= 1e-6  # a double near 1.7e9: ulp 2.4e-7


def bad_recordings(folder):
    """{case: (recording, extra arguments, what the message must say)}."""
    t_ns, t, Q, V, A, E = motion(n=80)
    good = messages(ARM.q_names, t_ns, Q, V, E, order=ORDER)
    renamed = [m._replace(names=[("elbow_joint" if n == "elbow" else n) for n in m.names]) for m in good]
    nan = list(good)
    k = nan[40].names.index("wrist_1")
    nan[40] = nan[40]._replace(position=nan[40].position[:k] + [float("nan")] + nan[40].position[k + 1:])
    back = list(good)
    back[50] = back[50]._replace(stamp=back[48].stamp)  # a stamp that goes back (logged in order)
    back[50] = back[50]._replace(logtime=back[49].logtime + 1)
    cases = {}
    for fmt in ("ros1-bag", "ros2-db3-file", "rostopic", "plotjuggler"):
        sub = folder / fmt
        sub.mkdir()
        for case, msgs in (("good", good), ("renamed", renamed), ("nan", nan), ("back", back)):
            (sub / case).mkdir()
            path = write(sub / case, fmt, msgs)
            if case == "good":
                if fmt != "rostopic":
                    cases[(fmt, "missing topic")] = (path, ["--topic", "/nope"], "'/nope'")
                if fmt != "plotjuggler":
                    cases[(fmt, "ns read as s")] = (path, ["--time-unit", "s"], "--time-unit ns")
            elif case == "renamed":
                cases[(fmt, case)] = (path, [], "elbow")
            elif case == "nan":
                cases[(fmt, case)] = (path, [], "not finite")
            else:
                cases[(fmt, case)] = (path, [], "does not increase")
    two = write(folder, "ros1-bag", good, **{"/left/joint_states": good})
    cases[("ros1-bag", "two topics")] = (two, [], "--topic")
    return cases


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    return bad_recordings(tmp_path_factory.mktemp("bad"))


# rostopic echo -p holds one topic (no --topic to miss); PlotJuggler's time is in seconds and
# sorted by PlotJuggler (no ns to misread, no stamp going back)
BAD_CASES = [(fmt, case) for fmt in ("ros1-bag", "ros2-db3-file", "rostopic", "plotjuggler")
             for case in ("missing topic", "ns read as s", "renamed", "nan", "back")
             if not (fmt == "rostopic" and case == "missing topic")
             and not (fmt == "plotjuggler" and case in ("ns read as s", "back"))] + [("ros1-bag", "two topics")]


@pytest.mark.parametrize("fmt, case", BAD_CASES, ids=[f"{f}-{c}".replace(" ", "_") for f, c in BAD_CASES])
def test_bad_recordings_are_one_line_errors_without_output(bad, tmp_path, fmt, case):
    path, extra, says = bad[(fmt, case)]
    out = tmp_path / "tau.csv"
    r = invoke("inverse", ARM6, path, *extra, "-o", out)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dyn: error:") and says in lines[0], r.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("hz", ["1e9", "1e300"])
def test_a_resampling_rate_whose_samples_cannot_fit_is_one_line(recorded, tmp_path, hz):
    """--resample 1e9 on 0.4 s (4e8 samples) was an internal error (MemoryError), 1e300 too
    (ValueError: Maximum allowed size exceeded): the count is checked before the arrays are made."""
    folder, paths, _ = recorded
    out = tmp_path / "tau.csv"
    r = invoke("inverse", ARM6, paths["rostopic"], "--resample", hz, "-o", out)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("dyn: error:") and "--resample" in lines[-1] and "internal" not in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("kind", ["bag", "db3"])
@pytest.mark.parametrize("part", ["velocity", "effort"])
def test_a_bag_whose_messages_carry_velocities_or_efforts_only_sometimes_is_one_error(tmp_path, kind, part):
    # two publishers on one topic, one without efforts: the rows without them were NaN cells
    # (written by dyn inverse, exit 0; 'value nan is not finite' in dyn identify)
    t_ns, t, Q, V, A, E = motion(40)
    msgs = messages(ARM.q_names, t_ns, Q, V, E)
    for k in (3, 17):
        msgs[k] = msgs[k]._replace(**{part: []})
    path = write_bag(tmp_path / ("mixed.bag" if kind == "bag" else "mixed"), {"/joint_states": msgs}, kind)
    with pytest.raises(DynError) as err:
        read_recording(ARM, path)
    message = str(err.value)
    assert "message 4 of /joint_states has no " + ("velocities" if part == "velocity" else "efforts") in message
    assert "message 1 has them" in message and "\n" not in message
    # every message without: no such columns, no error
    for k in range(len(msgs)):
        msgs[k] = msgs[k]._replace(**{part: []})
    path = write_bag(tmp_path / ("none.bag" if kind == "bag" else "none"), {"/joint_states": msgs}, kind)
    names = read_recording(ARM, path).trajectory.names
    assert not any(n.startswith("qd." if part == "velocity" else "effort.") for n in names)


def test_a_bag_cannot_come_from_standard_input(recorded):
    folder, paths, _ = recorded
    r = run_process("inverse", ARM6, "-", input=paths["ros1-bag"].read_bytes(), text=False)  # a real standard input
    assert r.returncode == 2 and b"give its path" in r.stderr and r.stdout == b""


# ------------------------------------------------------------------ a stamp that breaks the rhythm

def jittery(n=N, seed=5):
    """A driver's stamps: 1 kHz with ±20 µs of jitter; the exact motion at those times."""
    t_ns, _, _, _, _, _ = motion(n)
    jitter = np.random.default_rng(seed).integers(-20_000, 20_000, size=n)
    jitter[0] = 0
    t_ns = t_ns + jitter
    t = (t_ns - t_ns[0]) * 1e-9
    Q, V, A = swing(ARM.nq, t)
    E = np.random.default_rng(seed + 1).normal(size=Q.shape)
    return t_ns, t, Q, V, A, E


def early_stamp(folder, kind, early_ns, *, logged_at_stamp, k=300):
    """A bag whose message `k` is stamped `early_ns` early: (path, the stray's index in the bag's log
    order, its stamp). `logged_at_stamp`: the bag's log time is the header stamp (a re-recorded or
    sim-time bag: the stray sample is logged where its stamp puts it), else the time it arrived."""
    t_ns, t, Q, V, A, E = jittery()
    msgs = messages(ARM.q_names, t_ns, Q, V, E, order=ORDER)
    msgs[k] = msgs[k]._replace(stamp=msgs[k].stamp - early_ns)
    if logged_at_stamp:
        msgs = [m._replace(logtime=m.stamp) for m in msgs]
    folder.mkdir()
    path = write_bag(folder / ("run.bag" if kind == "bag" else "run"), {"/joint_states": msgs}, kind)
    index = sorted(range(len(msgs)), key=lambda j: msgs[j].logtime).index(k)
    return path, index, msgs[k].stamp


@pytest.mark.parametrize("early_ms", [49.0, 49.5, 0.7])
@pytest.mark.parametrize("kind", ["db3", "mcap", "bag"])
def test_a_stamp_that_breaks_the_rhythm_is_one_error_naming_the_message(tmp_path, kind, early_ms):
    """One message stamped 49 ms early in a bag logged at its stamps lands among samples 49 ms earlier
    (at 1 kHz: next to one of them, or, 49.5 ms, between two): read in stamp order, its position
    49 ms away made the torques spike to 1.2e6 N·m, exit 0. Stamped 0.7 ms early it stays in place
    with a gap of 0.3 ms before it and 1.7 ms after. Either is one error naming the message, its stamp
    and the fixes."""
    path, index, stamp = early_stamp(tmp_path / "b", kind, int(early_ms * 1e6), logged_at_stamp=early_ms > 1)
    out = tmp_path / "tau.csv"
    r = invoke("inverse", ARM6, path, "-o", out)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dyn: error:"), r.stderr
    assert f"message {index + 1} of /joint_states" in lines[0], (index, lines[0])
    assert f"stamp {stamp // 10**9}.{stamp % 10**9:09d}" in lines[0]
    assert "--clock log" in lines[0] and "--resample" in lines[0] and "median step 1 ms" in lines[0]
    # logged at its stamps, the log time is no way out: the message says so
    assert ("drop or re-stamp that message" in lines[0]) == (early_ms > 1)
    assert not out.exists()


def test_stamps_without_a_rhythm_have_none_to_break():
    """A logging PC's stamps, 0.4 to 4 ms apart at random, have no rhythm: every step is its own, none is
    a stray (identification resamples them; central differences take them as they are). One early stamp
    in a driver's 1 kHz rhythm with jitter is still found."""
    rng = np.random.default_rng(3)
    t = np.concatenate([[0.0], np.cumsum(rng.integers(2, 21, size=2000) * 2e-4)])
    assert rhythm_break(t) is None
    _, t, Q, _, _, _ = jittery()
    assert rhythm_break(t, Q) is None
    t[300] -= 0.7e-3
    assert rhythm_break(t, Q).k == 300


def test_clock_log_reads_a_bag_logged_in_order_whose_stamp_is_wrong(tmp_path):
    path, _, _ = early_stamp(tmp_path / "b", "db3", 700_000, logged_at_stamp=False)
    t_ns, t, Q, V, A, E = jittery()
    with pytest.raises(DynError, match="--clock log"):
        read_recording(ARM, path)
    rec = read_recording(ARM, path, clock="log")
    assert np.allclose(rec.trajectory.time, t, rtol=0, atol=1e-15)
    assert np.array_equal(rec.trajectory.columns([f"q.{n}" for n in ARM.q_names]), Q)
    assert any("log time" in note for note in rec.notes)
    # header (the default) on a bag without the stray: the stamps, as before
    t_ns, t, Q, V, A, E = jittery()
    good = write_bag(tmp_path / "good", {"/joint_states": messages(ARM.q_names, t_ns, Q, V, E, order=ORDER)}, "db3")
    assert np.array_equal(read_recording(ARM, good, clock="header").trajectory.time, read_recording(ARM, good).trajectory.time)
    with pytest.raises(DynError, match="clock"):
        read_recording(ARM, good, clock="wall")


def test_clock_log_is_for_recordings_with_two_clocks(recorded, tmp_path):
    folder, paths, _ = recorded
    assert read_recording(ARM, paths["rostopic"], clock="log").format == "rostopic-csv"
    for fmt in ("plotjuggler",):
        r = invoke("inverse", ARM6, paths[fmt], "--clock", "log", "-o", tmp_path / "tau.csv")
        assert r.returncode == 2 and "--clock" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = invoke("inverse", "--help")
    text = re.sub(r"\s+", " ", r.stdout)
    assert "--clock [header|log]" in text and "[default: header]" in text


def counted_from_zero(folder, unit="ms", seconds=6.0, hz=1000):
    """A logger's CSV: a time column counting `unit` from zero, positions named pos_<joint>; (path, t, Q)."""
    t = np.arange(int(seconds * hz)) / hz
    Q, V, A = swing(ARM.nq, t)
    factor = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[unit]
    path = folder / f"log_{unit}.csv"
    path.write_text(f"t_{unit}," + ",".join(f"pos_{n}" for n in ARM.q_names) + "\n" + "".join(
        f"{repr(float(x)) if unit == 's' else round(x * factor)}," + ",".join(repr(float(v)) for v in q) + "\n" for x, q in zip(t, Q)))
    return path, t, Q


@pytest.mark.parametrize("unit", ["ms", "us"])
def test_a_time_column_counting_milliseconds_from_zero_asks_for_its_unit(tmp_path, unit):
    """A 6 s recording with its time in milliseconds from zero was read as 6000 s: the torques were gravity
    alone (rms error 101 %), exit 0. A median step over 0.5 s in a joint recording is an error asking
    for --time-unit; given, it is read in that unit."""
    path, t, Q = counted_from_zero(tmp_path, unit)
    cols = {"time": f"t_{unit}", "q": "pos_{joint}"}
    r = invoke("inverse", ARM6, path, "--columns", f"time=t_{unit},q=pos_{{joint}}", "-o", tmp_path / "tau.csv")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dyn: error:") and "--time-unit" in lines[0], r.stderr
    assert f"t_{unit}" in lines[0] and "median step" in lines[0] and not (tmp_path / "tau.csv").exists()
    rec = read_recording(ARM, path, columns=cols, time_unit=unit)
    assert np.allclose(rec.trajectory.time, t, rtol=0, atol=1e-12)
    # seconds, said so: read as they are
    slow = read_recording(ARM, path, columns=cols, time_unit="s")
    assert np.allclose(slow.trajectory.time, np.arange(len(t)) * {"ms": 1.0, "us": 1000.0}[unit], rtol=1e-12, atol=0)


def test_a_time_column_in_seconds_reads_as_before(tmp_path):
    path, t, Q = counted_from_zero(tmp_path, "s", seconds=2.0, hz=1000)
    cols = {"q": "pos_{joint}", "time": "t_s"}
    rec = read_recording(ARM, path, columns=cols)
    assert rec.unit == "s" and rec.trajectory.time[-1] == t[-1]
    # a slow recording in seconds (1 Hz) needs its unit said; dyn's own `time` column is seconds (SPEC §5,
    # as dyn view plays a file of key frames)
    lines = path.read_text().splitlines()
    slow = [f"{1.0 * k}," + line.split(",", 1)[1] for k, line in enumerate(lines[1:20])]
    path.write_text("\n".join([lines[0]] + slow) + "\n")
    with pytest.raises(DynError, match="--time-unit"):
        read_recording(ARM, path, columns=cols)
    assert read_recording(ARM, path, columns=cols, time_unit="s").trajectory.time[1] == 1.0
    path.write_text("\n".join([lines[0].replace("t_s,", "time,", 1)] + slow) + "\n")
    assert read_recording(ARM, path, columns={"q": "pos_{joint}"}).trajectory.time[1] == 1.0


# ------------------------------------------------------------------ {index}: the file's joint order

def by_position(folder, order):
    """A driver's CSV without joint names: time, then pos0..pos5 in the joint order `order` (the
    driver's), vel0..vel5 alike; (path, t, Q)."""
    t = np.arange(300) * 1e-3
    Q, V, A = swing(ARM.nq, t)
    path = folder / "driver.csv"
    head = ["time"] + [f"pos{i}" for i in range(ARM.nq)] + [f"vel{i}" for i in range(ARM.nv)]
    rows = np.hstack([t[:, None], Q[:, order], V[:, order]])
    path.write_text(",".join(head) + "\n" + "".join(",".join(repr(float(x)) for x in r) + "\n" for r in rows))
    return path, t, Q


def test_index_maps_by_the_joint_order_given_and_says_the_mapping(tmp_path):
    """--columns q=pos{index} on a file in the driver's order mapped positions by dyn's order, silently
    (36 N·m wrong). {index} now counts in --joint-order, which a file without names needs."""
    path, t, Q = by_position(tmp_path, ORDER)
    driver = [ARM.q_names[j] for j in ORDER]
    cols = {"q": "pos{index}", "qd": "vel{index}"}
    with pytest.raises(DynError, match="--joint-order") as err:
        read_recording(ARM, path, columns=cols)
    assert "\n" not in str(err.value)
    rec = read_recording(ARM, path, columns=cols, joint_order=driver)
    assert np.array_equal(rec.trajectory.columns([f"q.{n}" for n in ARM.q_names]), Q)
    said = [n for n in rec.notes if "--joint-order" in n]
    assert len(said) == 1 and f"q.{driver[0]}=pos0" in said[0] and f"q.{driver[1]}=pos1" in said[0]
    # on the command line: one notice line with the mapping, the torques of the motion
    out = tmp_path / "tau.csv"
    r = invoke("inverse", ARM6, path, "--columns", "q=pos{index},qd=vel{index}", "--joint-order", ",".join(driver),
               "-o", out)
    assert r.returncode == 0, r.stderr
    assert sum("--joint-order" in line for line in r.stderr.splitlines()) == 1
    r = invoke("inverse", ARM6, path, "--columns", "q=pos{index}", "-o", tmp_path / "no.csv")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--joint-order" in r.stderr, r.stderr
    assert not (tmp_path / "no.csv").exists()


@pytest.mark.parametrize("order, says", [
    ("shoulder_pan,elbow", "no 'shoulder_lift'"),
    ("shoulder_pan,shoulder_pan,shoulder_lift,elbow,wrist_1,wrist_2,wrist_3", "twice"),
])
def test_a_joint_order_that_does_not_fit_is_one_line(tmp_path, order, says):
    path, t, Q = by_position(tmp_path, ORDER)
    r = invoke("inverse", ARM6, path, "--columns", "q=pos{index}", "--joint-order", order, "-o", tmp_path / "tau.csv")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr


def test_a_joint_order_is_for_index_on_a_file_without_names(recorded, tmp_path):
    folder, paths, _ = recorded
    order = ",".join(ARM.q_names)
    r = invoke("inverse", ARM6, paths["ros1-bag"], "--joint-order", order, "-o", tmp_path / "tau.csv")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "names its joints" in r.stderr, r.stderr
    path, t, Q = by_position(tmp_path, ORDER)
    r = invoke("inverse", ARM6, path, "--columns", "q=pos_{joint}", "--joint-order", order, "-o", tmp_path / "t.csv")
    assert r.returncode == 2 and "{index}" in r.stderr, r.stderr


def test_a_rostopic_file_of_many_joints_is_read_in_time_linear_in_its_columns(tmp_path):
    """#33 item 9: the header's field.nameI columns were looked up in a list, once per column (10^5
    joints: hours, 10^6: about 13 h), and a header longer than Arrow's 1 MB block was refused ("cannot be
    read"). 10^5 joints of which the robot's are the last: seconds, the robot's values found."""
    t_ns, t, Q, V, A, E = motion(n=3)
    extra = 100_000 - ARM.nq
    names = [f"other{i}" for i in range(extra)] + list(ARM.q_names)
    wide = [np.hstack([np.zeros((3, extra)), X]) for X in (Q, V, E)]
    path = write_rostopic_csv(tmp_path / "wide.csv", messages(names, t_ns, *wide))
    rec = read_recording(ARM, path)
    assert np.array_equal(rec.trajectory.columns([f"q.{n}" for n in ARM.q_names]), Q)


def test_a_plotjuggler_export_with_rows_of_another_topic_leaves_them_out(tmp_path):
    """#33 item 10: rows of a second topic (an IMU between the joint states: every joint series empty)
    were refused, "empty value; expected a number", although the docs say they are left out. They are;
    the torques are those of the export without them, and an empty cell in a row of the robot's topic
    is still an error at its line."""
    import csv

    t_ns, t, Q, V, A, E = motion(n=60)
    plain = write_plotjuggler_csv(tmp_path / "plain.csv", {"/joint_states": messages(ARM.q_names, t_ns, Q, V, E)})
    rows = list(csv.reader(open(plain, newline="")))
    head, body = rows[0] + ["/imu/data/header/stamp", "/imu/data/linear_acceleration/z"], [r + ["", ""] for r in rows[1:]]
    for r in rows[1:40:3]:
        t_imu = float(r[0]) + 0.0004
        body.append([f"{t_imu:.6f}"] + [""] * (len(rows[0]) - 1) + [f"{t_imu:.9f}", "9.81"])
    body.sort(key=lambda r: float(r[0]))
    with_imu = tmp_path / "with_imu.csv"
    with open(with_imu, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([head] + body)
    got, want = read_recording(ARM, with_imu), read_recording(ARM, plain)
    assert np.array_equal(got.trajectory.data, want.trajectory.data)
    assert np.array_equal(got.trajectory.names, want.trajectory.names)
    i = head.index("/joint_states/elbow/velocity")
    k = next(n for n, r in enumerate(body) if r[1] and n > 10)
    body[k][i] = ""
    with open(with_imu, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([head] + body)
    with pytest.raises(DynError, match=rf":{k + 2}: column '/joint_states/elbow/velocity': empty value"):
        read_recording(ARM, with_imu)
