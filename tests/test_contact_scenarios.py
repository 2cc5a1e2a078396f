"""The contact scenarios in scenarios/ (contact_*.yaml, not contact_id_*) run and write contact columns;
contact blocks that do not fit the robot are one error at the `contacts` key."""
import numpy as np
import pytest

from dynlib.errors import ScenarioError
from dynlib.scenario import load_scenario, run
from dynlib.trajectory import read_trajectory

from helpers import ROBOTS_DIR

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
