"""docs/: the scenario reference is generated from the schema (it cannot drift), and the JSON
Schema that `dyn schema` prints for editors agrees with what dyn itself accepts, checked by an
independent validator (jsonschema) on every sample scenario and on broken ones."""
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from dynlib.errors import ScenarioError
from dynlib.runs.scenario import load_scenario
from dynlib.runs.scenario.reference import json_schema, markdown
from dynlib.runs.scenario.schema import Scenario
from helpers import invoke

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))


class Yaml12(yaml.SafeLoader):
    """YAML 1.2 numbers, as an editor's language server reads them (PyYAML's 1.1 rules read
    2.0e4 as text; dyn's validation converts it, the schema would not)."""


Yaml12.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)$"),
                             list("-+0123456789."))


def test_the_reference_page_is_the_schema_s():
    page = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert page == markdown(), "docs/scenarios.md is stale: run `dyn schema --format markdown -o docs/scenarios.md`"


def test_every_key_of_the_schema_is_described_on_the_page():
    page = markdown()
    for key in Scenario.model_fields:
        assert f"| `{key}` |" in page, key
    for name in json_schema()["$defs"]:
        assert f"## {name}" in page


def test_dyn_schema_prints_the_json_schema(tmp_path):
    r = invoke("schema")
    assert r.returncode == 0, r.stderr
    printed = json.loads(r.stdout)
    jsonschema.Draft202012Validator.check_schema(printed)
    assert printed == json_schema()
    out = tmp_path / "s.json"
    r = invoke("schema", "-o", out)
    assert r.returncode == 0 and json.loads(out.read_text()) == printed


def test_dyn_schema_offers_every_controller_with_its_keys():
    from dynlib.runs.scenario import CONTROL_TYPES

    schema = json.loads(invoke("schema").stdout)
    mapping = schema["properties"]["control"]["discriminator"]["mapping"]
    assert set(mapping) == set(CONTROL_TYPES)
    feedback = schema["$defs"]["StateFeedbackControl"]
    assert mapping["state-feedback"] == "#/$defs/StateFeedbackControl"
    assert feedback["required"] == ["type", "gain"] and set(feedback["properties"]) == {"type", "gain", "target", "tau"}
    assert set(schema["$defs"]["OperatingPoint"]["properties"]) == {"q", "qd"}
    bad = {"dyn": 1, "robot": "r.urdf", "control": {"type": "state-feedback", "gain": "k.csv", "kp": 1}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_every_sample_scenario_is_valid_for_an_editor(path):
    data = yaml.load(path.read_text(), Loader=Yaml12)
    jsonschema.validate(data, json_schema(), cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("change, key", [
    ({"dtt": 0.001}, "dtt"),                                       # a typo at the top
    ({"integrator": "verlet"}, "integrator"),                      # not one of the choices
    ({"dt": -1}, "dt"),                                            # out of range
    ({"control": {"type": "pd", "kp": 1, "kdd": 2}}, "kdd"),       # a typo inside a controller
    ({"control": {"type": "pid", "kp": 1}}, "type"),               # an unknown controller
    ({"output": {"columns": ["q", "torque"]}}, "columns"),
])
def test_what_dyn_rejects_the_schema_rejects(tmp_path, change, key):
    base = yaml.safe_load((REPO / "scenarios" / "arm6_pd.yaml").read_text())
    base["robot"] = str(REPO / "robots" / "arm6.urdf")
    data = {**base, **change}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match=key):
        load_scenario(path)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, json_schema(), cls=jsonschema.Draft202012Validator)
