"""Scenario files (dynlib.runs.scenario): the samples run, validation errors name file, line,
key path and the closest valid names, overrides, relative paths."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import typeof

from dynlib._numba.events import _COUNTS_SHIPPED
from dynlib.sim.controllers import PD
from dynlib.errors import ScenarioError
from dynlib.runs.scenario import load_scenario, run, run_scenario
from dynlib.sim.simulate import simulate
from helpers import ROBOTS_DIR

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SAMPLES = sorted(SCENARIOS.glob("*.yaml"))

BASE = f"""\
dyn: 1
robot: {ROBOTS_DIR / 'arm6.urdf'}
dt: 0.001
steps: 100
initial:
  q: {{shoulder_lift: -0.5}}
control:
  type: pd
  kp: {{shoulder_pan: 100, shoulder_lift: 100}}
  kd: 5
  target: {{shoulder_lift: 0.0}}
external_wrenches:
  - {{frame: tool0, wrench: [0, 0, -10, 0, 0, 0], start: 0.01, stop: 0.02}}
output:
  columns: [q, qd, energy]
"""


def write(tmp_path, text, name="s.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(tmp_path, text, **kw) -> ScenarioError:
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        sc = load_scenario(path, **kw)
        run(sc)
    return info.value


def test_there_are_sample_scenarios():
    names = {p.stem for p in SAMPLES}
    assert {"arm6_fall", "arm6_pd", "arm6_gravity_compensation", "arm6_computed_torque", "arm6_push"} <= names


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_every_sample_scenario_runs(path):
    sc = load_scenario(path, {"steps": 200})
    r = run_scenario(sc)
    assert r.diverged is None and r.steps == 200
    assert sc.output_path is None  # samples write where -o says


def test_falling_arm_conserves_energy():
    r = run_scenario(load_scenario(SCENARIOS / "arm6_fall.yaml"))
    E = r.energy[:, 2]
    assert r.time[-1] == pytest.approx(3.0)
    assert np.abs(E - E[0]).max() < 1e-6 * np.abs(r.energy[:, 0]).max()
    assert np.abs(r.q[-1]).max() > 1.0  # it fell


def test_sample_pd_reaches_its_target_within_the_friction_dead_band():
    sc = load_scenario(SCENARIOS / "arm6_pd.yaml")
    r = run_scenario(sc)
    c = sc.control
    model = sc.model
    for name, target in c.target.items():
        k = model.q_names.index(name)
        assert abs(r.q[-1, k] - target) <= model.arrays.friction[k] / c.kp[name] + 2e-3


def test_sample_push_moves_the_arm_then_it_recovers():
    r = run_scenario(load_scenario(SCENARIOS / "arm6_push.yaml"))
    dev = np.abs(r.q - r.q[0]).max(axis=1)
    assert dev[r.time < 0.5].max() < 1e-9
    assert dev[(r.time > 0.55) & (r.time < 0.8)].max() > 0.01
    assert dev[-1] < 0.1 * dev.max()


def test_scenario_runs_what_simulate_runs(tmp_path):
    text = BASE.split("external_wrenches:")[0] + "output:\n  columns: [q, qd, energy]\n"
    sc = load_scenario(write(tmp_path, text))
    r = run_scenario(sc)
    q0 = sc.model.q_neutral.copy()
    q0[1] = -0.5
    direct = simulate(sc.model, q0, dt=1e-3, steps=100,
                      controller=PD(kp={"shoulder_pan": 100, "shoulder_lift": 100}, kd=5, target={"shoulder_lift": 0.0}))
    assert np.array_equal(r.q, direct.q) and np.array_equal(r.energy, direct.energy)


def test_one_loop_runs_the_scenario_with_and_without_the_energy(tmp_path, monkeypatch):
    """`dyn simulate` and `dyn sweep` ask whether the simulation loop is compiled: there is one, for a run
    without the energy as for one with it (the sweep's workers record it), whose arguments have the same
    types; an index that does not hold it is refused by both."""
    import importlib

    from dynlib._numba import cache
    from dynlib.runs.sweep.worker import loop_ready

    S = importlib.import_module("dynlib.sim.simulate")
    loop_is_cached = S.loop_is_cached
    text = BASE.replace("columns: [q, qd, energy]", "columns: [q, qd]")
    text = text.replace("steps: 100\n", "steps: 100\nintegrator: semi-implicit\n")  # (PD gains rk4 warns about)
    sc = load_scenario(write(tmp_path, text))
    asked, ran = [], []
    real = S._run
    monkeypatch.setattr(S, "_run", lambda *args: ran.append(args) or real(*args))
    run(sc)
    run(sc, energy=True)
    assert [a[-2].energy.shape[0] for a in ran] == [0, 101]
    assert loop_is_cached() and loop_ready()
    assert tuple(typeof(x) for x in ran[0]) == tuple(typeof(x) for x in ran[-1])
    # (the runs left the loop's index in the cache: the question reaches the index, here refused)
    monkeypatch.setattr(cache, "index_holds", lambda index, kernel: asked.append(index) or False)
    assert not loop_is_cached() and not loop_ready() and asked


# in a fresh interpreter: the first command, then the others with numba's compile events counted (JSON, last line)
FIRST_THEN_OTHERS = textwrap.dedent("""
    import json, sys
    from numba.core import event
    from cli.main import dyn

    def command(args):
        try:
            dyn(args, prog_name="dyn")
        except SystemExit as exc:
            assert not exc.code, (args, exc.code)

    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass

    event.register("numba:compile", Listener())
    commands = json.loads(sys.argv[1])
    command(commands[0])
    first = len(compiled)
    for args in commands[1:]:
        command(args)
    print(json.dumps({"first": first, "others": compiled[first:]}))
""")


@pytest.mark.slow  # (the first run compiles the loop: about 30 s of CPU)
def test_after_the_first_run_no_scenario_compiles_a_kernel_of_its_own(tmp_path):
    """The set-up of a run (M(q0) for rk4's friction estimate and the stiff-gains warning, the holding torque
    of a state feedback, the placements and contact points at q0) is computed by the one set-up kernel that
    every run calls (`dynlib.sim.contact.points.at_configuration`): after one run of a plain arm from an
    empty kernel cache, a PD, a soft-contact and a state-feedback scenario compile nothing; the first run's
    count of compiles is the one a fresh install's progress line shows as its total."""
    out = tmp_path / "out.csv"
    commands = [["simulate", SCENARIOS / "arm6_fall.yaml", "--steps", "5", "-o", out]]
    commands += [["simulate", SCENARIOS / f"{name}.yaml", "--steps", "5", "-o", out]
                 for name in ("arm6_pd", "contact_soft_ball", "cartpole_balance")]
    root = str(SCENARIOS.parent)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(DYN_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    p = subprocess.run([sys.executable, "-c", FIRST_THEN_OTHERS, json.dumps([list(map(str, c)) for c in commands])],
                       env=env, cwd=root, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr
    found = json.loads(p.stdout.strip().splitlines()[-1])
    assert found["others"] == []
    # the first run's count is the shipped total of a fresh install's progress line (`_numba.events`)
    assert abs(found["first"] - _COUNTS_SHIPPED["simulate"]) <= 0.1 * found["first"], found["first"]


def test_paths_are_relative_to_the_scenario_file(tmp_path):
    for folder in ("robots", "data", "sub"):
        (tmp_path / folder).mkdir()
    shutil.copy(ROBOTS_DIR / "pendulum.urdf", tmp_path / "robots" / "p.urdf")
    (tmp_path / "data" / "tau.csv").write_text("time,tau.hinge\n0,0\n0.05,1\n0.1,-1\n")
    text = ("dyn: 1\nrobot: ../robots/p.urdf\nsteps: 100\ndt: 0.001\n"
            "control: {type: csv, file: ../data/tau.csv}\noutput: {path: out.csv}\n")
    sc = load_scenario(write(tmp_path, text, name="sub/s.yaml"))
    r = run_scenario(sc)
    assert r.tau[50, 0] == pytest.approx(1.0) and r.tau[100, 0] == pytest.approx(-1.0)
    assert sc.output_path == str(tmp_path / "sub" / "out.csv")


def test_overrides_replace_fields_and_steps_replaces_duration(tmp_path):
    text = BASE.replace("steps: 100", "duration: 0.5")
    sc = load_scenario(write(tmp_path, text), {"steps": 20, "initial.q.elbow": 0.3, "dt": 0.002,
                                                 ("initial", "qd", "elbow"): 1.0})
    assert sc.n_steps == 20 and sc.duration is None and sc.dt == 0.002
    assert sc.initial.q == {"shoulder_lift": -0.5, "elbow": 0.3} and sc.initial.qd == {"elbow": 1.0}
    assert load_scenario(write(tmp_path, text)).n_steps == 500
    assert load_scenario(write(tmp_path, text), {"duration": 0.25}).n_steps == 250


def test_a_robot_path_is_a_scenario_with_every_default():
    sc = load_scenario(ROBOTS_DIR / "arm6.urdf", {"initial.q": [0.1] * 6, "steps": 10})
    assert sc.source is None and sc.integrator == "rk4" and sc.dt == 1e-3 and sc.n_steps == 10
    assert load_scenario(ROBOTS_DIR / "arm6.urdf").n_steps == 1000  # 1 s by default
    r = run_scenario(sc)
    assert np.array_equal(r.q[0], [0.1] * 6)


def test_joint_friction_overrides_by_joint(tmp_path):
    sc = load_scenario(write(tmp_path, BASE + "joint_friction: {elbow: {damping: 7}, wrist_3: {friction: 0}}\n"))
    a = sc.model.arrays
    assert a.damping[2] == 7 and a.friction[2] == 0.8 and a.friction[5] == 0 and a.damping[5] == 0.5
    assert np.all(load_scenario(write(tmp_path, BASE + "joint_friction: none\n")).model.arrays.damping == 0)


def test_joint_friction_none_is_applied_once_to_the_model(tmp_path):
    """`joint_friction: none` zeroes the model's damping and friction when the scenario is loaded (the one
    place): the run is simulate's without joint friction, on the robot as the URDF has it; the energy check
    sees no friction either."""
    from dynlib.runs.checks import has_nonconservative_forces

    text = BASE.split("control:")[0] + "joint_friction: none\noutput:\n  columns: [q, qd]\n"
    sc = load_scenario(write(tmp_path, text))
    a = sc.model.arrays
    assert not np.any(a.damping) and not np.any(a.friction)
    urdf = load_scenario(write(tmp_path, text.replace("joint_friction: none\n", ""), name="f.yaml"))
    assert np.any(urdf.model.arrays.damping) and has_nonconservative_forces(urdf)
    assert not has_nonconservative_forces(sc)
    direct = simulate(urdf.model, sc.model.q_neutral + np.eye(6)[1] * -0.5, dt=1e-3, steps=100, joint_friction=False)
    assert np.array_equal(run_scenario(sc).q, direct.q)


def test_free_flyer_initial_quaternion_is_normalised(tmp_path):
    text = f"dyn: 1\nrobot: {ROBOTS_DIR / 'quadruped.urdf'}\nfloating_base: true\nsteps: 2\ngravity: [0, 0, 0]\n" \
           "initial:\n  q: {root.z: 0.4, root.qz: 1.0, root.qw: 1.0}\n"
    r = run_scenario(load_scenario(write(tmp_path, text)))
    assert np.allclose(r.q[0, 2:7], [0.4, 0, 0, 2 ** -0.5, 2 ** -0.5])


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("change, line, key, message", [
    (("", "dtt: 3\n"), 16, "dtt", "unknown key 'dtt'; did you mean 'dt'?"),
    (("kd: 5", "kq: 5"), 10, "control.kq", "did you mean 'kp' or 'kd'?"),
    (("type: pd", "type: pdd"), 8, "control.type", "unknown controller type 'pdd'; did you mean 'pd'?"),
    (("kd: 5", "kd: fast"), 10, "control.kd", "expected a number, a mapping {name: number} or a list of numbers"),
    (("shoulder_pan: 100,", "shoulder_pan: x,"), 9, "control.kp.shoulder_pan", "expected a number, got 'x'"),
    (("shoulder_pan: 100,", "shoulder_pn: 100,"), 9, "control.kp.shoulder_pn", "did you mean 'shoulder_pan'"),
    (("q: {shoulder_lift: -0.5}", "q: {elbw: -0.5}"), 6, "initial.q.elbw", "no coordinate 'elbw'; did you mean 'elbow'?"),
    (("q: {shoulder_lift: -0.5}", "q: [1, 2]"), 6, "initial.q", "expected 6 values"),
    (("frame: tool0", "frame: tool"), 13, "external_wrenches[0].frame", "did you mean 'tool0'?"),
    (("frame: tool0", "frame: base_link"), 13, "external_wrenches[0].frame", "fixed to the world"),
    (("[0, 0, -10, 0, 0, 0]", "[0, 0, -10]"), 13, "external_wrenches[0].wrench", "expected 6 values, got 3"),
    (("stop: 0.02", "stop: 0.005"), 13, "external_wrenches[0]", "stop (0.005) must be after start (0.01)"),
    (("dt: 0.001", "dt: -1"), 3, "dt", "must be greater than 0"),
    (("", "integrator: rk5\n"), 16, "integrator", "did you mean 'rk4'?"),
    (("", "joint_friction: fromurdf\n"), 16, "joint_friction", "expected one of from-urdf, none or a mapping"),
    (("", "joint_friction: {elbw: {damping: 1}}\n"), 16, "joint_friction.elbw", "did you mean 'elbow'?"),
    (("[q, qd, energy]", "[q, qdot]"), 15, "output.columns[1]", "did you mean 'qd' or 'qdd'?"),
    (("", "dt: 0.1\n"), 16, "dt", "key 'dt' appears twice (first on line 3)"),
    (("", "duration: 1\n"), 16, "duration", "either 'duration' or 'steps'"),
    (("dyn: 1", "dyn: 2"), 1, "dyn", "this dyn reads 'dyn: 1'"),
    (("type: pd", "type: computed-torque"), 11, "control.target.shoulder_lift",
     "unknown key 'shoulder_lift'; valid names: 'file', 'sinusoids'"),
])
def test_validation_errors_name_file_line_key_and_closest_names(tmp_path, change, line, key, message):
    old, new = change
    text = BASE.replace(old, new) if old else BASE + new
    err = error_of(tmp_path, text)
    assert err.file == str(tmp_path / "s.yaml") and err.line == line and err.key == key
    assert message in err.message
    assert str(err).startswith(f"{tmp_path / 's.yaml'}:{line}: {key}: ")
    assert err.exit_code == 2


def test_computed_torque_target_needs_one_source(tmp_path):
    text = BASE.replace("type: pd", "type: computed-torque").replace("target: {shoulder_lift: 0.0}", "target: {}")
    err = error_of(tmp_path, text)
    assert (err.line, err.key) == (11, "control.target") and "exactly one of 'file' or 'sinusoids'" in err.message


def test_missing_files_and_bad_yaml_are_scenario_errors(tmp_path):
    err = error_of(tmp_path, BASE.replace(str(ROBOTS_DIR / "arm6.urdf"), "nope.urdf"))
    assert err.line == 2 and err.key == "robot" and "not found" in err.message
    err = error_of(tmp_path, BASE.replace("type: pd", "type: csv\n  file: missing.csv").replace("  kp:", "  #kp:")
                   .replace("  kd:", "  #kd:").replace("  target:", "  #target:"))
    assert err.key == "control.file" and "missing.csv" in err.message
    err = error_of(tmp_path, BASE + "  bad: [\n")
    assert err.line == 17 and "not valid YAML" in err.message
    assert "'dyn: 1'" in error_of(tmp_path, BASE.replace("dyn: 1\n", "")).message
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario(tmp_path / "absent.yaml")
    with pytest.raises(ScenarioError, match="expected a scenario"):
        load_scenario(tmp_path / "robot.sdf")


def test_csv_torque_columns_are_checked(tmp_path):
    (tmp_path / "tau.csv").write_text("time,tau.elbw\n0,1\n1,2\n")
    text = BASE.replace("type: pd", "type: csv\n  file: tau.csv").replace("  kp:", "  #kp:") \
        .replace("  kd:", "  #kd:").replace("  target:", "  #target:")
    err = error_of(tmp_path, text)
    assert err.key == "control.file" and "'tau.elbw'" in err.message and "did you mean 'elbow'" in err.message


def test_contacts_block_validates_and_runs(tmp_path):
    text = BASE + "contacts:\n  model: soft\n  stiffness: 1.0e5\n  points:\n    - {frame: tool0, offset: [0, 0, -0.02]}\n"
    sc = load_scenario(write(tmp_path, text))
    assert sc.contacts.model == "soft" and sc.contacts.points[0].frame == "tool0"
    r = run(sc)
    assert r.contact_names == ("tool0",) and r.contact_force.shape == (len(r), 1, 3)
    err = error_of(tmp_path, BASE + "contacts:\n  model: soft\n  points:\n    - {frame: tol0}\n")
    assert err.key == "contacts.points[0].frame" and "did you mean 'tool0'" in err.message
    err = error_of(tmp_path, BASE + "contacts:\n  model: sof\n  points: []\n")
    assert err.key == "contacts.model" and "did you mean 'soft'" in err.message


def test_sweep_block_is_kept_for_dyn_sweep(tmp_path):
    text = BASE + "sweep:\n  grid:\n    initial.q.shoulder_lift: [0.0, 0.5]\n  random: {count: 3, ranges: {dt: [0.0005, 0.002]}}\n"
    sc = load_scenario(write(tmp_path, text))
    assert sc.sweep.grid == {"initial.q.shoulder_lift": [0.0, 0.5]} and sc.sweep.random.count == 3
    assert run_scenario(sc).steps == 100  # simulate runs the base scenario


def test_override_errors_name_the_option_instead_of_a_line(tmp_path):
    path = write(tmp_path, BASE)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, {("initial", "q", "elbw"): 1.0}, origins={("initial", "q", "elbw"): "--q0"})
    assert str(info.value) == "--q0: robot 'arm6' has no coordinate 'elbw'; did you mean 'elbow'?"
    with pytest.raises(ScenarioError, match=r"^--dt: must be greater than 0"):
        load_scenario(path, {"dt": 0}, origins={"dt": "--dt"})


# ------------------------------------------------------------------ one runner

def test_every_command_runs_what_the_scenario_says(tmp_path):
    # contacts, an external wrench, a joint-friction override and gravity: dyn simulate, the energy
    # check and the sweep worker run the same simulation (the energy check used to drop the contacts)
    from dynlib.runs.checks import energy_check, energy_series
    from dynlib.runs.sweep.worker import Task, run_variant

    text = (BASE.replace("steps: 100", "steps: 60") + "gravity: [0, 0, -9.0]\n"
            "joint_friction: {elbow: {damping: 2}}\n"
            "contacts:\n  model: soft\n  stiffness: 1.0e4\n  damping: 10\n  friction: 0.2\n  slip_velocity: 0.1\n"
            "  ground: {height: 0.625}\n"
            "  points:\n    - {frame: tool0}\n")
    sc = load_scenario(write(tmp_path, text))
    r = run(sc, every=1)
    assert r.diverged is None and np.abs(r.contact_force).max() > 10  # the tool presses on the ground
    report = energy_check(sc)
    assert report.settings["contacts"] == "soft"
    np.testing.assert_array_equal(report.series["total"], energy_series(sc.model, r.q, r.v)[2])
    outcome = run_variant(Task("v0", "key", sc))
    names, data = r.table(sc.output.columns)
    assert outcome["status"] == "ok" and outcome["names"] == names
    np.testing.assert_array_equal(outcome["data"], data)


def test_a_table_is_read_once(tmp_path, monkeypatch):
    import dynlib.files.trajectory

    reads = []
    real = dynlib.files.trajectory.read_trajectory
    monkeypatch.setattr(dynlib.files.trajectory, "read_trajectory", lambda *a, **k: reads.append(a) or real(*a, **k))
    (tmp_path / "tau.csv").write_text("time,tau.elbow\n0,1\n0.05,2\n")
    text = BASE.replace("type: pd", "type: csv\n  file: tau.csv").replace("  kp:", "  #kp:") \
        .replace("  kd:", "  #kd:").replace("  target:", "  #target:")
    sc = load_scenario(write(tmp_path, text))
    r = run(sc)
    run(sc)
    assert len(reads) == 1 and r.tau[25, 2] == pytest.approx(1.5)
    (tmp_path / "target.csv").write_text("time,q.elbow\n0,0\n0.1,0.2\n")
    text = BASE.replace("type: pd", "type: computed-torque").replace("target: {shoulder_lift: 0.0}",
                                                                     "target: {file: target.csv}")
    run(load_scenario(write(tmp_path, text)))
    assert len(reads) == 2


def test_combinations_that_cannot_run_are_errors_at_load(tmp_path):
    contact = "contacts:\n  model: unilateral\n  points:\n    - {frame: tool0}\n"
    err = error_of(tmp_path, BASE + contact)
    assert (err.line, err.key) == (1, "integrator") and "set integrator to 'semi-implicit' (got 'rk4')" in err.message
    assert load_scenario(write(tmp_path, BASE + "integrator: semi-implicit\n" + contact)).contacts is not None
    err = error_of(tmp_path, BASE.replace("[q, qd, energy]", "[q, contact]"))
    assert (err.line, err.key) == (15, "output.columns") and "need a 'contacts:' block" in err.message


def test_armature_by_joint(tmp_path):
    sc = load_scenario(write(tmp_path, BASE + "armature: {elbow: 0.2, wrist_3: 0.01}\n"))
    assert np.array_equal(sc.model.arrays.armature, [0, 0, 0.2, 0, 0, 0.01])
    assert np.all(load_scenario(write(tmp_path, BASE)).model.arrays.armature == 0)
    err = error_of(tmp_path, BASE + "armature: {elbw: 0.1}\n")
    assert err.key == "armature.elbw" and "did you mean 'elbow'?" in err.message and err.line == 16
    assert error_of(tmp_path, BASE + "armature: {elbow: -1}\n").key == "armature.elbow"


@pytest.mark.parametrize("extra", ["", "control: {type: pd, kp: 20, kd: 1}\n"])
def test_energy_check_counts_the_armature(tmp_path, extra):
    """dyn energy-check with rotor inertias: free motion conserves the energy, and under a PD the
    work-energy balance (rnea's armature a against the kinetic energy's ½ armature v²) holds."""
    from dynlib.runs.checks import energy_check

    text = (f"dyn: 1\nrobot: {ROBOTS_DIR / 'arm6.urdf'}\nduration: 0.3\nintegrator: rk4\n"
            "joint_friction: none\ninitial:\n  qd: [1, -1, 1, 2, 2, 2]\n"
            "armature: {shoulder_pan: 0.3, elbow: 0.1, wrist_3: 0.02}\n" + extra)
    report = energy_check(load_scenario(write(tmp_path, text)), tolerance=1e-6)
    assert report.passed, report.as_dict()


@pytest.mark.parametrize("extra, key", [({"steps": 10 ** 14}, "steps"), ({"duration": 1e12, "dt": 1e-3}, "dt"),
                                        ({"steps": 2 ** 60}, "steps")])
def test_a_run_too_long_for_this_machine_is_an_error_at_its_key(tmp_path, extra, key):
    """`check_run_size` (no test before): the step count whose trajectory cannot fit, or that cannot run,
    is a ScenarioError at the key that set it, before anything is allocated."""
    text = BASE.split("external_wrenches:")[0] + "output:\n  columns: [q, qd]\n"
    text = text.replace("steps: 100\n", "" if "duration" in extra else "steps: 100\n")
    with pytest.raises(ScenarioError) as info:
        run(load_scenario(write(tmp_path, text), extra))
    err = info.value
    assert err.key == key and "the trajectory needs " in err.message and " GB" in err.message, err.message



FEEDBACK = f"""\
dyn: 1
robot: {ROBOTS_DIR / 'cartpole.urdf'}
dt: 0.01
steps: 300
integrator: semi-implicit
initial:
  q: {{pole: 0.1}}
control:
  type: state-feedback
  gain: gains/k.csv
"""
GAIN = "input,q.cart,q.pole,qd.cart,qd.pole\ncart,-0.95,-32.9,-2.34,-8.08\n"


def test_state_feedback_reads_its_gain_relative_to_the_scenario_and_balances(tmp_path, monkeypatch):
    (tmp_path / "gains").mkdir()
    (tmp_path / "gains" / "k.csv").write_text(GAIN)
    path = write(tmp_path, FEEDBACK)
    monkeypatch.chdir(ROBOTS_DIR)  # elsewhere: the gain is found next to the scenario
    sc = load_scenario(path)
    assert str(tmp_path / "gains" / "k.csv") in sc.input_files
    r = run(sc)
    K = np.array([[-0.95, -32.9, -2.34, -8.08]])
    assert np.allclose(r.tau[:, 0], -np.hstack([r.q, r.v]) @ K[0], rtol=1e-12, atol=1e-12)
    assert np.all(r.tau[:, 1] == 0.0)
    assert abs(r.q[-1, 1]) < 0.01  # upright again after 3 s
    # a target and a feed-forward by name: tau = tau0 - K [q - q*; v]
    r = run(load_scenario(path, {"control.target": {"q": {"cart": 0.5}}, "control.tau": {"cart": 0.25}}))
    dx = np.hstack([r.q - [0.5, 0.0], r.v])
    assert np.allclose(r.tau[:, 0], 0.25 - dx @ K[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("gain, change, key, message", [
    (None, {}, "control.gain", "k.csv: no such gain file"),
    ("input,q.cart,q.pol,qd.cart,qd.pole\ncart,1,2,3,4\n", {}, "control.gain",
     "k.csv:1: column 'q.pol' is not a state of robot 'cartpole'; did you mean 'q.pole'"),
    ("input,q.cart,q.pole,qd.cart,qd.pole\ncrt,1,2,3,4\n", {}, "control.gain",
     "k.csv:2: column 'input': input 'crt': robot 'cartpole' has no coordinate 'crt'; did you mean 'cart'"),
    ("input,q.cart,q.pole,qd.cart,qd.pole\ncart,1,inf,3,4\n", {}, "control.gain",
     "k.csv:2: column 'q.pole': 'inf' is not a finite number"),
    (GAIN, {"control.target": {"q": {"pol": 0.0}}}, "control.target.q.pol", "has no coordinate 'pol'"),
    (GAIN, {"control.tau": {"pole": 1.0}}, "control.tau.pole", "'pole' is not an input of the gain file (cart)"),
    (GAIN, {"control.kp": 1.0}, "control.kp", "unknown key 'kp'; valid names: 'type', 'gain'"),
])
def test_state_feedback_errors_name_the_scenario_key_and_the_gain_file_s_cell(tmp_path, gain, change, key, message):
    (tmp_path / "gains").mkdir()
    if gain is not None:
        (tmp_path / "gains" / "k.csv").write_text(gain)
    path = write(tmp_path, FEEDBACK)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, change)
    err = info.value
    assert err.key == key and message in err.message, str(err)
    assert "\n" not in str(err)


def test_a_bad_gain_file_is_exit_2_one_line_and_no_output(tmp_path):
    from helpers import invoke

    (tmp_path / "gains").mkdir()
    (tmp_path / "gains" / "k.csv").write_text("input,q.cart,q.pole,qd.cart\ncart,1,2,3\n")
    path = write(tmp_path, FEEDBACK)
    out = tmp_path / "out.csv"
    r = invoke("simulate", path, "-o", out)
    assert r.returncode == 2
    assert r.stderr.strip() == (f"dyn: error: {path}:10: control.gain: {tmp_path / 'gains' / 'k.csv'}:1: no column for "
                                "the state qd.pole of robot 'cartpole' (a gain file has one column per state name: "
                                "q.cart, q.pole, qd.cart, qd.pole)")
    assert not out.exists()


# ------------------------------------------------------------------ a robot path without the schema

# overrides as the commands give them (cli.common.Overrides): a robot path's scenario is then built
# by dynlib.runs.scenario.plain, without pydantic
PLAIN_OVERRIDES = [
    {},
    {"steps": 20, "dt": 2e-3, "integrator": "semi-implicit", "output.every": 3, "output.path": "/tmp/x.csv",
     "output.columns": ["q", "tau", "energy"]},
    {"duration": 0.05, ("initial", "q"): [0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, 0.1, -0.2, 0.3, 0.0, 0.0], ("initial", "qd", "elbow"): 0.5,
     "control": {"type": "constant", "tau": {"elbow": 1.5}}, "floating_base": True, "gravity": [0.0, 0.0, -1.62],
     ("lock", "wrist_3"): 0.2, "joint_friction": "none", "limits": {"position": False, "effort": False}},
    {("initial", "q", "elbow"): 0.3, "control": {"type": "constant", "tau": [0.1, 0.0, 0.0, 0.0, 0.0, 0.0]},
     ("armature", "elbow"): 0.01},
    {"control": {"type": "csv", "file": "TABLE"}},  # a table written by the test
]


def _fields(x):
    """A scenario or block as plain data: its keys (pydantic's model_dump, a dataclass's fields)."""
    import dataclasses

    if hasattr(x, "model_dump"):
        return x.model_dump()
    return {f.name: _fields(getattr(x, f.name)) for f in dataclasses.fields(x) if not f.name.startswith("_")} \
        if dataclasses.is_dataclass(x) else x


def _by_schema(monkeypatch, path, overrides):
    from dynlib.runs.scenario import plain

    with monkeypatch.context() as m:
        m.setattr(plain, "scenario", lambda data: None)
        return load_scenario(path, overrides)


@pytest.mark.parametrize("k", range(len(PLAIN_OVERRIDES)))
def test_a_robot_path_loads_without_the_schema_as_the_schema_would(monkeypatch, tmp_path, k):
    from dynlib.runs.scenario import Scenario, plain

    robot = str(ROBOTS_DIR / "arm6.urdf")
    overrides = PLAIN_OVERRIDES[k]
    if overrides.get("control", {}).get("file") == "TABLE":
        (tmp_path / "tau.csv").write_text("time,tau.elbow\n0,1\n1,2\n")
        overrides = {"control": {"type": "csv", "file": str(tmp_path / "tau.csv")}}
    sc, ref = load_scenario(robot, overrides), _by_schema(monkeypatch, robot, overrides)
    assert isinstance(sc, plain.Plain) and isinstance(ref, Scenario)
    for name in Scenario.model_fields:
        mine, theirs = getattr(sc, name), getattr(ref, name)
        assert _fields(mine) == _fields(theirs), name
        assert type(mine).__name__ == type(theirs).__name__ or isinstance(theirs, (int, float, str, dict, list, tuple)), name
        if isinstance(theirs, (int, float, str, tuple, list)):
            assert type(mine) is type(theirs), name
    for prop in ("source", "folder", "input_files", "n_steps", "output_path", "model_fields_set"):
        assert getattr(sc, prop) == getattr(ref, prop), prop
    assert sc.model.nq == ref.model.nq and sc.model.q_names == ref.model.q_names
    copied = sc.model_copy(update={"dt": 5e-4, "steps": 3, "duration": None})
    assert (copied.dt, copied.n_steps, copied.model) == (5e-4, 3, sc.model) and sc.dt != 5e-4
    assert copied.model_fields_set == ref.model_copy(update={"dt": 5e-4, "steps": 3, "duration": None}).model_fields_set


def test_the_plain_scenario_has_the_schema_defaults():
    from dynlib.runs.scenario import Scenario, plain

    sc, ref = plain.Plain(dyn=1, robot="r.urdf"), Scenario(dyn=1, robot="r.urdf")
    assert [f for f in Scenario.model_fields] == [f.name for f in __import__("dataclasses").fields(sc)
                                                  if not f.name.startswith("_")]
    for name in Scenario.model_fields:
        assert _fields(getattr(sc, name)) == _fields(getattr(ref, name)), name


@pytest.mark.parametrize("overrides, message", [
    ({"dt": float("nan")}, "must be a finite number"),
    ({"dt": float("inf")}, "must be a finite number"),
    ({"output.every": 2 ** 60}, "must be at most"),
    ({("initial", "q", "elbow"): float("nan")}, "must be a finite number"),
    ({"gravity": [0.0, 0.0, float("inf")]}, "must be a finite number"),
    ({("armature", "elbow"): -1.0}, "must be at least 0"),
    ({"control": {"type": "constant", "tau": [float("nan")] * 6}}, "must be a finite number"),
    ({"integrator": "rk5"}, "'rk5' is not valid"),
])
def test_a_value_the_plain_path_is_not_sure_of_is_the_schemas_to_refuse(overrides, message):
    from dynlib.runs.scenario import plain
    from dynlib.runs.scenario.load import _set
    from dynlib.runs.scenario.messages import as_path

    data = {"dyn": 1, "robot": "r.urdf"}
    for key, value in overrides.items():
        _set(data, as_path(key), value, None)
    assert plain.scenario(data) is None
    with pytest.raises(ScenarioError, match=message):
        load_scenario(str(ROBOTS_DIR / "arm6.urdf"), overrides)
