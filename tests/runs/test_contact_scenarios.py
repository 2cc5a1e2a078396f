"""The contact scenarios in scenarios/ (contact_*.yaml, not contact_id_*) run and write contact columns;
contact blocks that do not fit the robot are one error at the `contacts` key."""
import dynlib
import numpy as np
import pytest

from dynlib.errors import ScenarioError
from dynlib.runs.scenario import load_scenario, run
from dynlib.files.trajectory import read_trajectory

from helpers import ROBOTS_DIR, invoke

SCENARIOS = sorted(p for p in (ROBOTS_DIR.parent / "scenarios").glob("contact_*.yaml")
                   if not p.name.startswith("contact_id_"))


def test_every_contact_model_has_scenarios():
    names = " ".join(p.name for p in SCENARIOS)
    for model in ("soft", "bilateral", "unilateral", "relaxed"):
        assert f"contact_{model}_" in names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_contact_scenario_runs_and_writes_contact_columns(path, tmp_path):
    sc = load_scenario(path, {"duration": 0.05, "output.path": str(tmp_path / "out.csv")})
    assert sc.contacts is not None and "contact" in sc.output.columns
    r = run(sc)
    assert r.diverged is None
    r.write(sc.output_path, sc.output.columns)
    table = read_trajectory(sc.output_path)
    names = list(table.names)
    assert np.array_equal(table.data[:, names.index(f"penetration.{r.contact_names[0]}")], r.penetration[:, 0])
    for n in r.contact_names:
        assert f"contact.{n}.fz" in names and f"penetration.{n}" in names


def test_points_from_collision_on_a_robot_without_collisions_is_an_error_at_contacts(tmp_path):
    sc = tmp_path / "c.yaml"
    sc.write_text(f"dyn: 1\nrobot: {ROBOTS_DIR / 'arm6.urdf'}\nsteps: 2\ncontacts:\n  model: soft\n"
                  "  points: from-collision\n")
    with pytest.raises(ScenarioError) as e:
        run(load_scenario(sc))
    assert e.value.key == "contacts" and "no sphere or box" in e.value.message


def test_an_error_simulate_finds_is_reported_at_the_key_of_the_argument_it_came_from():
    # simulate says which argument a bad value came from (InputError.argument); run maps it to the
    # scenario block, whichever module raised it: here the contacts check in dynlib.simulate itself
    sc = load_scenario(ROBOTS_DIR.parent / "scenarios" / "contact_relaxed_ball.yaml", {"duration": 0.01})
    with pytest.raises(ScenarioError) as e:
        run(sc.model_copy(update={"integrator": "rk4"}))  # past the check at load
    assert e.value.key == "contacts" and "set integrator to 'semi-implicit'" in e.value.message
    assert e.value.file is not None


@pytest.mark.parametrize("model, key, value", [
    ("soft", "time_constant", 0.01),        # relaxed's
    ("bilateral", "friction", 0.5),         # bilateral points are held: no friction
    ("unilateral", "stiffness", 1e4),       # rigid impulses
    ("relaxed", "slip_velocity", 0.01),     # soft's
    ("soft", "baumgarte_kp", 100.0),
])
def test_a_key_the_contact_model_does_not_use_is_an_error_at_its_line(tmp_path, model, key, value):
    """No key is silently ignored: the scenario names the key and its line (exit 2 from the CLI);
    the Python API says the same."""
    from dynlib.sim.contact import build
    from dynlib.errors import InputError, ScenarioError

    text = (f"dyn: 1\nrobot: {ROBOTS_DIR / 'ball.urdf'}\nfloating_base: true\nintegrator: semi-implicit\n"
            f"steps: 10\ninitial:\n  q: {{root.z: 0.5}}\ncontacts:\n  model: {model}\n  {key}: {value}\n"
            f"  points: from-collision\n")
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert f"s.yaml:10: contacts.{key}:" in str(err.value) and f"no parameter '{key}'" in str(err.value)
    r = invoke("simulate", path, "-o", tmp_path / "o.csv")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and f"contacts.{key}" in r.stderr
    assert not (tmp_path / "o.csv").exists()
    m = dynlib.load(ROBOTS_DIR / "ball.urdf", floating_base=True)
    with pytest.raises(InputError, match=f"contacts.{key}: the {model} model has no parameter"):
        build(m, {"model": model, key: value, "points": "from-collision"}, m.q_neutral)


def test_relaxed_takes_one_form_of_its_spring(tmp_path):
    from dynlib.errors import ScenarioError

    path = tmp_path / "s.yaml"
    path.write_text(f"dyn: 1\nrobot: {ROBOTS_DIR / 'ball.urdf'}\nfloating_base: true\nintegrator: semi-implicit\n"
                    "contacts:\n  model: relaxed\n  time_constant: 0.01\n  stiffness_per_mass: 20000\n"
                    "  points: from-collision\n")
    with pytest.raises(ScenarioError, match="s.yaml:8: contacts.stiffness_per_mass: give either stiffness_per_mass/"
                                           "damping_per_mass"):
        load_scenario(path)


@pytest.mark.parametrize("key, new", [("stiffness", "stiffness_per_mass"), ("damping", "damping_per_mass")])
def test_relaxed_s_old_direct_form_keys_name_the_new_ones(tmp_path, key, new):
    """A key means one thing in one unit: soft's stiffness (N/m) and damping (N·s/m) are not relaxed's
    direct form (1/s², 1/s), whose keys were once the same: the old key is one line naming the new (exit 2)."""
    from dynlib.sim.contact import build
    from dynlib.errors import InputError, ScenarioError

    path = tmp_path / "s.yaml"
    path.write_text(f"dyn: 1\nrobot: {ROBOTS_DIR / 'ball.urdf'}\nfloating_base: true\nintegrator: semi-implicit\n"
                    f"contacts:\n  model: relaxed\n  {key}: 100\n  points: from-collision\n")
    with pytest.raises(ScenarioError, match=f"s.yaml:7: contacts.{key}: relaxed's direct form names it {new}"):
        load_scenario(path)
    r = invoke("simulate", path, "-o", tmp_path / "o.csv")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and new in r.stderr
    m = dynlib.load(ROBOTS_DIR / "ball.urdf", floating_base=True)
    with pytest.raises(InputError, match=f"contacts.{key}: relaxed's direct form names it {new}"):
        build(m, {"model": "relaxed", key: 100.0, "points": "from-collision"}, m.q_neutral)


@pytest.mark.parametrize("control", ["{type: gravity-compensation, kd: 1}", "{type: pd, kp: 1, kd: 1, ki: 2}",
                                     "{type: constant, tau: [0, 0, 0, 0, 0, 0], kp: 3}"])
def test_a_controller_key_its_type_does_not_use_is_an_error(tmp_path, control):
    from dynlib.errors import ScenarioError

    path = tmp_path / "s.yaml"
    path.write_text(f"dyn: 1\nrobot: {ROBOTS_DIR / 'arm6.urdf'}\ncontrol: {control}\n")
    with pytest.raises(ScenarioError, match="s.yaml:3: control"):
        load_scenario(path)


def test_a_scenario_picks_collision_links_and_world_offsets(tmp_path):
    """`points: {from-collision: [links]}` and `offset_world` from a file: the quadruped on its
    four foot spheres stands as on every collision shape (the trunk's corners never touch), and
    mistakes are errors at their key's line."""
    def scenario(points):
        path = tmp_path / "s.yaml"
        path.write_text(f"dyn: 1\nrobot: {ROBOTS_DIR / 'quadruped.urdf'}\nfloating_base: true\n"
                        f"integrator: semi-implicit\nsteps: 300\ninitial:\n  q: {{root.z: 0.45}}\n"
                        f"contacts:\n  model: unilateral\n  points: {points}\n")
        return load_scenario(path)

    feet = run(scenario("{from-collision: [lf_foot, rf_foot, lh_foot, rh_foot]}"))
    every = run(scenario("from-collision"))
    assert sorted(feet.contact_names) == ["lf_foot", "lh_foot", "rf_foot", "rh_foot"]  # the URDF's order
    assert np.abs(feet.q - every.q).max() < 1e-9
    with pytest.raises(ScenarioError, match=r"s.yaml:10: contacts.points.from-collision\[1\]: .*'lf_fot'"):
        scenario("{from-collision: [rf_foot, lf_fot]}")
    with pytest.raises(ScenarioError, match="s.yaml:10: .*offset_world: give offset"):
        scenario("[{frame: lf_foot, offset: [0, 0, -0.02], offset_world: [0, 0, -0.02]}]")
    r = run(scenario("[{frame: lf_foot, offset_world: [0, 0, -0.02]}, {frame: rf_foot}, {frame: lh_foot}, "
                     "{frame: rh_foot}]"))
    assert r.diverged is None
