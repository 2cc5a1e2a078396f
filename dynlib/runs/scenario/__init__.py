"""Scenario files (YAML, SPEC §6): what they may say, loading and validating them, running them.

    sc = load_scenario("scenarios/contact_soft_ball.yaml", {"dt": 5e-4})
    result = run(sc)                  # a dynlib.sim.simulate.SimulationResult

A robot `.urdf`/`.xacro` path loads as a scenario with every default. Every
command that runs a scenario (`dyn simulate`, `dyn energy-check`, the `dyn
sweep` worker) calls the same `run`, so everything a scenario says reaches each
of them. The package, in the order a key travels:

- `schema`: the pydantic models, one per block (``extra="forbid"``), with the
  types and bounds of every key;
- `messages`: key paths, the line of each key (from ``yaml.compose``), and a
  pydantic error as one line ``FILE:LINE: KEY: what is wrong`` with the closest
  valid names;
- `load`: `load_scenario(path, overrides, origins=...)`: read, apply the
  overrides (command-line options, a sweep's variant), validate the schema,
  then check against the robot (names, lengths, tables, combinations); the
  robot model and the tables read are kept on the `Scenario`;
- `run`: `run(scenario, ...)` builds the controller, the wrenches and the
  contact block once and calls `dynlib.sim.simulate.simulate`.

How one key travels, ``contacts.model: soft``: `schema.Contacts.model` accepts
one of soft, bilateral, unilateral, relaxed (``sof`` is ``FILE:LINE:
contacts.model: 'sof' is not valid; did you mean 'soft'?`` via
`messages.convert`); `load` checks the block against the robot (the points'
frames exist; unilateral and relaxed need the semi-implicit integrator);
`run.contacts` passes the block to `simulate(contacts=...)` as a dict of the
keys the file gives, by their scenario names; `simulate` builds the contact
model with its own defaults for the rest (an error there is reported at the
``contacts`` key) and its step runs that model's contact stage
(`dynlib.sim.contact`). ``sweep`` is read by `dyn sweep` only (`run` ignores it).

`dynlib.simulate` knows nothing of scenarios: it takes arrays, controller
objects and a contact dict.

A robot path with the commands' overrides loads without pydantic (`plain`: the
same keys and defaults as plain objects); the schema's names here are imported
when first asked for (`__getattr__`), so `dyn simulate ROBOT` imports neither
pydantic nor the schema.
"""
from .load import ROBOT_SUFFIXES, SCENARIO_SUFFIXES, load_scenario
from .messages import as_path, format_path
from .run import (check_run_size, contacts, controller, external_wrenches, initial_state, run,
                  run_scenario)

_SCHEMA = ("CONTROL_TYPES", "ComputedTorqueControl", "ConstantControl", "Contacts", "CsvControl",
           "GravityCompensationControl", "PDControl", "Scenario", "StateFeedbackControl", "ZeroControl")


def __getattr__(name):
    if name in _SCHEMA:
        from . import schema

        return getattr(schema, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["CONTROL_TYPES", "ComputedTorqueControl", "ConstantControl", "Contacts", "CsvControl",
           "GravityCompensationControl", "PDControl", "ROBOT_SUFFIXES", "SCENARIO_SUFFIXES", "Scenario",
           "StateFeedbackControl", "ZeroControl", "as_path", "check_run_size", "contacts", "controller",
           "external_wrenches", "format_path", "initial_state", "load_scenario", "run", "run_scenario"]
