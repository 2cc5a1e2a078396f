"""Sweeps (dynlib.runs.sweep): variants are the scenario with the swept key paths overridden, keyed by
a content hash; run on local processes they give one trajectory per variant and a summary; a
diverging or failing variant is recorded while the others finish; a rerun rewrites nothing and
resumes an interrupted sweep; a Dask LocalCluster writes the same bytes as local processes."""
import concurrent.futures
import csv
import json
import math
import re
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dynlib.errors import InputError, ScenarioError
from dynlib.runs.scenario import load_scenario
from dynlib.runs.sweep import (RECORDS, SUMMARY, SweepFailed, grid_points, key_path, max_contact_force, plan_sweep,
                          random_points, run_sweep, summary_columns, variant_key)
from dynlib.files.trajectory import read_trajectory
from helpers import ROBOTS_DIR

ARM6 = ROBOTS_DIR / "arm6.urdf"
LOCK = Path(RECORDS) / "lock"
PENDULUM = ROBOTS_DIR / "pendulum.urdf"

# the arm under PD control, 3 start postures x 2 step sizes
ARM6_GRID = f"""\
dyn: 1
robot: {ARM6}
duration: 0.2
initial:
  q: {{elbow: 0.5}}
control: {{type: pd, kp: 100, kd: 20, gravity_compensation: true}}
output: {{every: 5, columns: [q, qd, energy]}}
sweep:
  grid:
    initial.q.shoulder_lift: [-1.0, -0.5, 0.0]
    dt: [0.001, 0.002]
"""

# a stiff PD loop on a pendulum with rk4 (explicit gains): stable at dt = 1 ms, diverges at 50 ms
# (euler takes a PD's gains implicitly and would not diverge)
PENDULUM_DT = f"""\
dyn: 1
robot: {PENDULUM}
duration: 1.0
integrator: rk4
joint_friction: none
limits: {{position: false, effort: false}}  # the PD's 1e4 N·m/rad unsaturated: dt = 0.05 diverges
initial: {{q: [1.0]}}
control: {{type: pd, kp: 1.0e4, kd: 0}}
output: {{columns: [q, qd, energy]}}
sweep:
  grid:
    dt: [0.001, 0.05, 0.002]
"""


def write(folder, text, name="sweep.yaml"):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def summary(outdir):
    with open(outdir / SUMMARY, newline="") as f:
        return list(csv.DictReader(f))


def snapshot(folder):
    """Every file under `folder` (hidden ones too): (inode, mtime_ns, bytes); not the lock, which
    names the pid of the sweep that last held the folder."""
    return {p.relative_to(folder): (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file() and p.relative_to(folder) != LOCK}


@pytest.fixture(scope="module")
def arm6_sweep(tmp_path_factory):
    """The 3 x 2 arm6 grid run once on 2 local processes: (scenario path, plan, report, outdir)."""
    folder = tmp_path_factory.mktemp("arm6_sweep")
    path = write(folder, ARM6_GRID)
    plan = plan_sweep(path)
    report = run_sweep(plan, folder / "out", workers=2)
    return path, plan, report, folder / "out"


# ------------------------------------------------------------------ expanding the block

def test_grid_points_are_the_cartesian_product_first_key_slowest():
    pts = grid_points({"a": [1, 2, 3], "b": ["x", "y"]})
    assert pts == [{"a": a, "b": b} for a in (1, 2, 3) for b in ("x", "y")]


def test_random_points_are_seeded_and_uniform_or_log_uniform_in_their_ranges():
    ranges = {"dt": (0.001, 0.002), "control.kp": (1.0, 1.0e4, "log")}
    pts = random_points(ranges, 2000, seed=3)
    assert pts == random_points(ranges, 2000, seed=3) and pts != random_points(ranges, 2000, seed=4)
    dt = np.array([p["dt"] for p in pts])
    kp = np.array([p["control.kp"] for p in pts])
    assert dt.min() >= 0.001 and dt.max() <= 0.002 and kp.min() >= 1.0 and kp.max() <= 1.0e4
    # uniform: a quarter below the first quartile of the range; log-uniform: a quarter per decade
    assert np.mean(dt < 0.00125) == pytest.approx(0.25, abs=0.04)
    assert np.mean(kp < 10.0) == pytest.approx(0.25, abs=0.04)
    assert np.mean(kp < 1000.0) == pytest.approx(0.75, abs=0.04)


def test_variants_are_the_scenario_with_the_swept_key_paths_overridden(arm6_sweep):
    path, plan, _, _ = arm6_sweep
    assert plan.parameters == ("initial.q.shoulder_lift", "dt") and plan.shape == "3 x 2 grid"
    assert [v.name for v in plan.variants] == [f"v00{i}" for i in range(6)]
    expected = [{"initial.q.shoulder_lift": q, "dt": dt} for q in (-1.0, -0.5, 0.0) for dt in (0.001, 0.002)]
    assert [v.params for v in plan.variants] == expected
    for v, params in zip(plan.variants, expected):
        direct = load_scenario(path, params)
        assert v.scenario.model_dump() == direct.model_dump()
        assert v.scenario.initial.q == {"elbow": 0.5, "shoulder_lift": params["initial.q.shoulder_lift"]}
    assert len({v.key for v in plan.variants}) == 6


def test_grid_and_random_combine_as_a_product_with_the_same_samples_at_every_grid_point(tmp_path):
    text = ARM6_GRID.replace("    dt: [0.001, 0.002]\n", "  random: {count: 4, seed: 7, ranges: {dt: [0.0005, 0.002]}}\n")
    plan = plan_sweep(write(tmp_path, text))
    assert len(plan) == 12 and plan.parameters == ("initial.q.shoulder_lift", "dt")
    samples = [p["dt"] for p in random_points({"dt": (0.0005, 0.002)}, 4, 7)]
    assert [v.params["dt"] for v in plan.variants] == samples * 3
    assert [v.params["initial.q.shoulder_lift"] for v in plan.variants] == [-1.0] * 4 + [-0.5] * 4 + [0.0] * 4


def test_swept_values_are_reported_as_the_scenario_reads_them(tmp_path):
    # YAML reads 1e-3 (no dot) as text; the variant, its hash and the summary hold the number
    plan = plan_sweep(write(tmp_path, ARM6_GRID.replace("dt: [0.001, 0.002]", "dt: [1e-3, 2.0e-3]")))
    assert [v.params["dt"] for v in plan.variants[:2]] == [0.001, 0.002]


def test_key_paths_keep_dotted_coordinate_names_whole(tmp_path):
    base = load_scenario(ROBOTS_DIR / "quadruped.urdf", {"floating_base": True})
    assert key_path(base, "initial.q.root.z") == ("initial", "q", "root.z")
    assert key_path(base, "initial.qd.root.wx") == ("initial", "qd", "root.wx")
    assert key_path(base, "control.target.sinusoids.root.z.amplitude") == (
        "control", "target", "sinusoids", "root.z", "amplitude")
    assert key_path(base, "external_wrenches[0].start") == ("external_wrenches", 0, "start")
    text = f"""\
    dyn: 1
    robot: {ROBOTS_DIR / "quadruped.urdf"}
    floating_base: true
    steps: 10
    sweep:
      grid:
        initial.q.root.z: [0.3, 0.5]
    """
    plan = plan_sweep(write(tmp_path, text))
    assert [v.scenario.initial.q for v in plan.variants] == [{"root.z": 0.3}, {"root.z": 0.5}]
    with pytest.raises(ScenarioError, match=r"sweep\.grid\.initial\.q\.root\.zz: .*no coordinate 'root\.zz'; "
                                            r"did you mean 'root\.z'"):
        plan_sweep(write(tmp_path, text.replace("root.z:", "root.zz:")))


# ------------------------------------------------------------------ the variant hash

def test_the_hash_is_stable_and_ignores_where_files_are_and_the_sweep_block(tmp_path, arm6_sweep):
    path, plan, _, _ = arm6_sweep
    keys = [v.key for v in plan.variants]
    assert [v.key for v in plan_sweep(path).variants] == keys  # run to run
    # the scenario and its robot elsewhere, the robot by a relative path: same variants, same keys
    moved = tmp_path / "elsewhere"
    (moved / "robots").mkdir(parents=True)
    shutil.copy(ARM6, moved / "robots" / "arm6.urdf")
    write(moved, ARM6_GRID.replace(f"robot: {ARM6}", "robot: robots/arm6.urdf"))
    assert [v.key for v in plan_sweep(moved / "sweep.yaml").variants] == keys
    # one more grid value: the old variants keep their keys (so a rerun skips them)
    grown = write(tmp_path, ARM6_GRID.replace("[-1.0, -0.5, 0.0]", "[-1.0, -0.5, 0.0, 0.5]"), "grown.yaml")
    assert set(keys) < {v.key for v in plan_sweep(grown).variants}
    # output.path is the sweep's business, not the variant's
    v0 = plan.variants[0].scenario
    assert variant_key(v0.model_copy(update={"output": v0.output.model_copy(update={"path": "x.csv"})})) == keys[0]


def test_the_hash_changes_with_the_robot_file_content(tmp_path):
    robot = tmp_path / "arm6.urdf"
    shutil.copy(ARM6, robot)
    path = write(tmp_path, ARM6_GRID.replace(str(ARM6), str(robot)))
    before = [v.key for v in plan_sweep(path).variants]
    robot.write_text(robot.read_text().replace("<robot name=", "<!-- edited -->\n<robot name=", 1))
    after = [v.key for v in plan_sweep(path).variants]
    assert not set(before) & set(after)


# ------------------------------------------------------------------ bad sweep blocks

@pytest.mark.parametrize("block, line, key, words", [
    ("sweep:\n  grid:\n    initial.q.shouldr_lift: [0.0]\n", 2, "sweep.grid.initial.q.shouldr_lift",
     "no coordinate 'shouldr_lift'; did you mean 'shoulder_lift'"),
    ("sweep:\n  grid:\n    dtt: [0.001]\n", 2, "sweep.grid.dtt", "unknown key 'dtt'; did you mean 'dt'"),
    ("sweep:\n  random: {count: 2, ranges: {intergrator: [0, 1]}}\n", 1, "sweep.random.ranges.intergrator",
     "did you mean 'integrator'"),
    ("sweep:\n  grid:\n    dt: [0.001, -0.5]\n", 2, "sweep.grid.dt", "must be greater than 0"),
    ("sweep:\n  grid:\n    dt: []\n", 2, "sweep.grid.dt", "no values"),
    ("sweep: {}\n", 0, "sweep", "the sweep is empty"),
    ("sweep:\n  random: {count: 2, ranges: {}}\n", 1, "sweep.random.ranges", "no ranges"),
    ("sweep:\n  random: {count: 2, ranges: {dt: [0.002, 0.001]}}\n", 1, "sweep.random.ranges.dt", "low <= high"),
    ("sweep:\n  grid: {dt: [0.001]}\n  random: {count: 2, ranges: {dt: [0.001, 0.002]}}\n", 2,
     "sweep.random.ranges.dt", "also in sweep.grid"),
    ("sweep:\n  grid:\n    output.path: [a.csv]\n", 2, "sweep.grid.output.path", "cannot be swept"),
])
def test_a_bad_sweep_block_is_one_error_at_its_line(tmp_path, block, line, key, words):
    base = ARM6_GRID[:ARM6_GRID.index("sweep:")]
    path = write(tmp_path, base + block)
    with pytest.raises(ScenarioError) as info:
        plan_sweep(path)
    text = str(info.value)
    assert text.startswith(f"{path}:{base.count(chr(10)) + 1 + line}: {key}: "), text
    assert words in text and "\n" not in text


def test_a_scenario_without_a_sweep_block_or_a_robot_file_is_refused(tmp_path):
    path = write(tmp_path, ARM6_GRID[:ARM6_GRID.index("sweep:")])
    with pytest.raises(ScenarioError, match=r"sweep\.yaml:1: no 'sweep:' block"):
        plan_sweep(path)
    with pytest.raises(ScenarioError, match="needs a scenario"):
        plan_sweep(ARM6)


def test_a_variant_that_cannot_validate_names_the_variant(tmp_path):
    # sweeping a field of a block the base scenario does not have: the block is incomplete
    path = write(tmp_path, ARM6_GRID.replace("    dt: [0.001, 0.002]\n", "    contacts.stiffness: [1.0e4]\n"))
    with pytest.raises(ScenarioError) as info:
        plan_sweep(path)
    assert "variant v000 (initial.q.shoulder_lift = -1.0, contacts.stiffness = " in str(info.value)
    assert "contacts.model: this required key is missing" in str(info.value)


# ------------------------------------------------------------------ running

def test_a_3x2_grid_gives_6_trajectories_with_the_swept_initial_states_and_step_sizes(arm6_sweep):
    _, plan, report, out = arm6_sweep
    assert report.ok and report.ran == 6 and report.skipped == 0 and report.error() is None
    rows = summary(out)
    assert [r["variant"] for r in rows] == [v.name for v in plan.variants]
    assert len(list(out.glob("v*.csv"))) == 6
    for v, row in zip(plan.variants, rows):
        assert row["status"] == "ok" and row["path"] == f"{v.name}-{v.key[:16]}.csv" and row["hash"] == v.key[:16]
        traj = read_trajectory(out / row["path"])
        assert traj.column("q.shoulder_lift")[0] == v.params["initial.q.shoulder_lift"]
        assert traj.column("q.elbow")[0] == 0.5
        dt = v.params["dt"]
        assert np.diff(traj.time) == pytest.approx(5 * dt)  # output.every = 5
        assert traj.time[-1] == pytest.approx(0.2)
        assert float(row["initial.q.shoulder_lift"]) == v.params["initial.q.shoulder_lift"]
        assert float(row["dt"]) == dt
        # the metrics are those of the trajectory
        E = traj.column("energy.total")
        assert float(row["energy.final"]) == E[-1] and float(row["energy.initial"]) == E[0]
        assert float(row["energy.drift"]) == np.max(np.abs(E - E[0]))
        assert float(row["final.q.shoulder_lift"]) == traj.column("q.shoulder_lift")[-1]
        assert float(row["final.qd.elbow"]) == traj.column("qd.elbow")[-1]
        assert row["diverged.time"] == "" and row["contact.max_force"] == "" and row["message"] == ""


def test_the_summary_lists_variant_parameters_status_path_and_final_energy_first(arm6_sweep):
    _, plan, report, out = arm6_sweep
    with open(out / SUMMARY, newline="") as f:
        header = next(csv.reader(f))
    assert header[:6] == ["variant", "initial.q.shoulder_lift", "dt", "status", "path", "energy.final"]
    assert header[-2:] == ["hash", "message"]
    assert header == summary_columns(plan, [r for _, r in sorted(report.rows.items())])


def test_each_worker_process_runs_many_variants(arm6_sweep):
    # the kernels are loaded by the worker's initializer, once: 6 variants, 2 processes at most
    _, _, _, out = arm6_sweep
    workers = {json.loads(p.read_text())["worker"] for p in (out / RECORDS).glob("*.json")}
    assert 1 <= len(workers) <= 2


def test_a_diverging_variant_is_recorded_and_the_others_finish(tmp_path):
    plan = plan_sweep(write(tmp_path, PENDULUM_DT))
    report = run_sweep(plan, tmp_path / "out", workers=2)
    rows = summary(tmp_path / "out")
    assert [r["status"] for r in rows] == ["ok", "diverged", "ok"]
    assert not report.ok and report.count("diverged") == 1 and report.failures == 1
    bad = rows[1]
    assert float(bad["diverged.time"]) > 0 and "diverged at step" in bad["message"]
    # the finite part is written, as dyn simulate does
    traj = read_trajectory(tmp_path / "out" / bad["path"])
    assert traj.time[-1] < float(bad["diverged.time"]) and np.all(np.isfinite(traj.data))
    for r in (rows[0], rows[2]):
        assert read_trajectory(tmp_path / "out" / r["path"]).time[-1] == pytest.approx(1.0)
    err = report.error()
    assert isinstance(err, SweepFailed) and err.exit_code == 1
    assert "1 of 3 variants did not finish ok (1 diverged, 0 failed; first: v001 diverged)" in str(err)


def test_a_failing_variant_is_recorded_without_a_file_and_the_others_finish(tmp_path):
    # a pendulum whose bob has no <inertial>: it validates, but its mass matrix is singular
    massless = tmp_path / "massless.urdf"
    massless.write_text(re.sub(r"<inertial>.*?</inertial>", "", PENDULUM.read_text(), flags=re.S))
    text = PENDULUM_DT.replace("    dt: [0.001, 0.05, 0.002]\n", f"    robot: [{PENDULUM}, {massless}]\n")
    plan = plan_sweep(write(tmp_path, text))
    report = run_sweep(plan, tmp_path / "out", workers=2)
    rows = summary(tmp_path / "out")
    assert [r["status"] for r in rows] == ["ok", "failed"]
    assert rows[1]["path"] == "" and rows[1]["energy.final"] == "" and rows[1]["final.q.hinge"] == ""
    assert "massless.urdf: robot 'pendulum'" in rows[1]["message"] and "mass matrix is singular" in rows[1]["message"]
    assert len(list((tmp_path / "out").glob("v*.csv"))) == 1
    assert report.count("failed") == 1 and not report.ok


def test_a_rerun_rewrites_nothing(arm6_sweep):
    path, _, _, out = arm6_sweep
    before = snapshot(out)
    report = run_sweep(plan_sweep(path), out, workers=2)
    assert report.ran == 0 and report.skipped == 6 and report.ok
    assert snapshot(out) == before


def test_a_rerun_redoes_interrupted_and_failed_variants_only(tmp_path):
    path = write(tmp_path, PENDULUM_DT)
    out = tmp_path / "out"
    plan = plan_sweep(path)
    run_sweep(plan, out, workers=2)
    v0, v1, v2 = plan.variants
    # v0: killed before its record was written; v2: its trajectory lost; v1 (diverged) stays done
    (out / RECORDS / f"{v0.key}.json").unlink()
    (out / summary(out)[2]["path"]).unlink()
    kept = snapshot(out)[next(p for p in snapshot(out) if str(p).startswith("v001"))]
    report = run_sweep(plan, out, workers=2)
    assert report.ran == 2 and report.skipped == 1
    assert snapshot(out)[next(p for p in snapshot(out) if str(p).startswith("v001"))] == kept
    assert [r["status"] for r in summary(out)] == ["ok", "diverged", "ok"]
    # a failed variant is not done: mark v2 failed, it runs again
    rec = out / RECORDS / f"{v2.key}.json"
    rec.write_text(json.dumps({**json.loads(rec.read_text()), "status": "failed"}))
    assert run_sweep(plan, out, workers=1).ran == 1


def test_parquet_trajectories_and_the_same_numbers_as_csv(tmp_path, arm6_sweep):
    path, plan, _, csv_out = arm6_sweep
    report = run_sweep(plan, tmp_path / "pq", workers=2, fmt="parquet")
    assert report.ok and len(list((tmp_path / "pq").glob("v*.parquet"))) == 6
    for a, b in zip(summary(csv_out), summary(tmp_path / "pq")):
        assert b["path"].endswith(".parquet")
        assert np.array_equal(read_trajectory(csv_out / a["path"]).data, read_trajectory(tmp_path / "pq" / b["path"]).data)
        file = ("path", "bytes", "sha256")  # the file's name, size and hash differ by format
        assert {k: v for k, v in a.items() if k not in file} == {k: v for k, v in b.items() if k not in file}


def test_max_contact_force_is_the_largest_force_norm_over_frames_and_rows():
    names = ["time", "contact.lf.fx", "contact.lf.fy", "contact.lf.fz", "contact.lf.tx",
             "contact.rf.fx", "contact.rf.fy", "contact.rf.fz"]
    data = np.array([[0.0, 3.0, 4.0, 0.0, 100.0, 0.0, 0.0, 1.0],
                     [0.1, 0.0, 0.0, 2.0, 0.0, 6.0, 0.0, 8.0]])
    assert max_contact_force(names, data) == 10.0
    assert math.isnan(max_contact_force(["time", "q.a"], np.zeros((2, 2))))


# ------------------------------------------------------------------ on a Dask cluster

@pytest.mark.slow
def test_a_dask_local_cluster_writes_the_same_files_as_local_processes(tmp_path, arm6_sweep):
    distributed = pytest.importorskip("distributed")
    path, plan, _, local_out = arm6_sweep
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as cluster, \
            concurrent.futures.ThreadPoolExecutor(1) as pool:
        # bounded: leaving the block closes the cluster, which ends a sweep stuck on it
        report = pool.submit(run_sweep, plan, tmp_path / "dask", scheduler=cluster.scheduler_address).result(300)
    assert report.ok and report.ran == 6
    local, remote = snapshot(local_out), snapshot(tmp_path / "dask")
    visible = sorted(p for p in local if not str(p).startswith(RECORDS))
    assert visible == sorted(p for p in remote if not str(p).startswith(RECORDS))
    assert len(visible) == 7  # 6 trajectories and the summary
    for p in visible:
        assert local[p][2] == remote[p][2], p  # byte for byte
    workers = {json.loads(p.read_text())["worker"] for p in (tmp_path / "dask" / RECORDS).glob("*.json")}
    assert len(workers) <= 2


@pytest.mark.parametrize("given", ["new/out", "empty", "kept"])
def test_a_sweep_that_cannot_reach_its_scheduler_leaves_no_folder_behind(tmp_path, monkeypatch, given):
    # the folder (its manifest, lock and a header-only summary) was made before the backend
    # connected: an unreachable scheduler left it behind, though nothing ran. A folder this sweep made
    # goes, with the parents it made; an empty folder it was given is emptied; one holding an
    # earlier sweep keeps its trajectories and records (its summary is rewritten, as a resumed sweep's)
    pytest.importorskip("distributed")
    from dynlib.runs.sweep import backends

    monkeypatch.setattr(backends.Dask, "CONNECT_TIMEOUT", 0.5)
    plan = plan_sweep(write(tmp_path, ARM6_GRID))
    out = tmp_path / given
    if given == "empty":
        out.mkdir()
    if given == "kept":
        run_sweep(plan, out, workers=1)
    before = {k: v for k, v in snapshot(out).items() if k != Path(SUMMARY)} if given == "kept" else None
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        # a grid with one more value: the kept folder's variants are all in it (else it is another sweep's)
        run_sweep(plan_sweep(write(tmp_path, ARM6_GRID.replace("0.002]", "0.002, 0.003]"))), out,
                  scheduler="tcp://127.0.0.1:9")
    if given == "new/out":
        assert not (tmp_path / "new").exists()
    elif given == "empty":
        assert out.is_dir() and list(out.iterdir()) == []
    else:
        assert {k: v for k, v in snapshot(out).items() if k != Path(SUMMARY)} == before and (out / SUMMARY).is_file()
