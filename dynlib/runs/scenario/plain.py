"""A robot path's scenario without pydantic: what `dyn simulate ROBOT` and `dyn energy-check ROBOT` run.

A robot path (.urdf, .xacro) loads as the scenario ``{dyn: 1, robot: PATH}`` with the
command's options as overrides. Validating that with the schema (`schema.Scenario`)
imports pydantic and builds every block's validator: about a fifth of a short run's
start-up. `scenario(data)` gives the same scenario as plain objects, with the same
attributes and defaults as the schema's (tests/runs/test_scenario.py compares them
field by field), when every value in `data` is one it is sure of: a key a command sets,
of the type and within the bounds the schema asks. Anything else gives None, and the
schema validates `data` (and names what is wrong, as for a file). So a value is never
accepted here that the schema refuses, and the messages stay the schema's.

`Resolved`: the properties a validated scenario has beyond its keys (its file, paths
resolved against it, the step count, the output path, the robot model, errors at a key),
shared by `schema.Scenario` and `Plain`.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path
from typing import Any, Optional

from ...errors import ScenarioError
from .messages import Where, as_path

MAX_COUNT = 2 ** 53  # as schema.MAX_COUNT
COLUMNS = ("q", "qd", "qdd", "tau", "energy", "contact", "limits")  # schema.Output.columns' names
INTEGRATORS = ("rk4", "semi-implicit", "euler")


class Resolved:
    """The properties of a loaded scenario (`schema.Scenario` and `Plain`): `_where` and `_model` are
    set by `load.load_scenario`."""

    @property
    def source(self) -> Optional[str]:
        """The scenario file (None: built from a robot path)."""
        return self._where.source

    @property
    def folder(self) -> Path:
        return Path(self.source).parent if self.source else Path(".")

    def resolve(self, path) -> Path:
        """A path from the scenario, relative to the scenario's folder."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.folder / p

    @property
    def input_files(self) -> tuple:
        """The files a run of this scenario reads, resolved: the scenario, its robot and its
        control's table (control.file, control.target.file, control.gain). No output may be one of them."""
        c = self.control
        tables = (getattr(c, "file", None), getattr(getattr(c, "target", None), "file", None),
                  getattr(c, "gain", None))
        return ((self.source,) if self.source else ()) + tuple(
            str(self.resolve(f)) for f in (self.robot, *tables) if isinstance(f, str))

    @property
    def n_steps(self) -> int:
        if self.steps is not None:
            return int(self.steps)
        duration = 1.0 if self.duration is None else self.duration
        return max(1, int(round(duration / self.dt)))

    @property
    def output_path(self) -> Optional[str]:
        """Where the trajectory goes: a path, or None for standard output."""
        p = self.output.path
        if p is None or p == "-":
            return None
        return str(self.resolve(p))

    @property
    def model(self):
        """The robot as the scenario sets it up (floating base, gravity, friction overrides, armature)."""
        if self._model is None:
            raise ScenarioError("this scenario was not loaded with dynlib.runs.scenario.load_scenario, "
                                "which builds its robot model")
        return self._model

    def error(self, key, message) -> ScenarioError:
        """A ScenarioError at `key` (a key path string or tuple), with file and line when known."""
        return self._where.error(as_path(key), message)


# ------------------------------------------------------------------ the blocks a command sets

@dataclasses.dataclass
class ZeroControl:
    type: str = "zero"


@dataclasses.dataclass
class ConstantControl:
    type: str
    tau: Any


@dataclasses.dataclass
class CsvControl:
    type: str
    file: str


@dataclasses.dataclass
class Initial:
    q: Any = dataclasses.field(default_factory=dict)
    qd: Any = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Limits:
    position: bool = True
    effort: bool = True


@dataclasses.dataclass
class Output:
    path: Optional[str] = None
    every: int = 1
    columns: list = dataclasses.field(default_factory=lambda: ["q", "qd", "qdd", "tau"])


@dataclasses.dataclass
class Plain(Resolved):
    """`schema.Scenario`'s keys with its defaults, for a robot path (see the module docstring)."""

    dyn: int
    robot: str
    floating_base: bool = False
    lock: dict = dataclasses.field(default_factory=dict)
    gravity: Optional[tuple] = None
    dt: float = 1e-3
    duration: Optional[float] = None
    steps: Optional[int] = None
    integrator: str = "rk4"
    initial: Initial = dataclasses.field(default_factory=Initial)
    control: Any = dataclasses.field(default_factory=ZeroControl)
    joint_friction: Any = "from-urdf"
    armature: dict = dataclasses.field(default_factory=dict)
    friction_smoothing: float = 1e-3
    friction_integration: str = "implicit"
    limits: Limits = dataclasses.field(default_factory=Limits)
    external_wrenches: list = dataclasses.field(default_factory=list)
    contacts: Any = None
    output: Output = dataclasses.field(default_factory=Output)
    max_state: float = 1e6
    sweep: Any = None
    _where: Where = dataclasses.field(default_factory=Where, repr=False, compare=False)
    _model: Any = dataclasses.field(default=None, repr=False, compare=False)
    _tables: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
    _given: frozenset = dataclasses.field(default=frozenset(), repr=False, compare=False)

    @property
    def model_fields_set(self) -> set:
        """The keys given (pydantic's name): dyn, robot and the top-level keys of the overrides."""
        return set(self._given)

    def model_copy(self, *, update=None):
        """A copy with the keys of `update` replaced (pydantic's `model_copy`, unvalidated as there)."""
        new = copy.copy(self)
        for k, v in (update or {}).items():
            setattr(new, k, v)
        new._given = self._given | frozenset(update or ())
        return new


# ------------------------------------------------------------------ the values it is sure of

def _number(x, *, positive=False, non_negative=False) -> bool:
    return (type(x) is float and math.isfinite(x) and (not positive or x > 0)
            and (not non_negative or x >= 0))


def _count(x, top=None) -> bool:
    return type(x) is int and x > 0 and (top is None or x <= top)


def _values(x) -> bool:
    """{name: number} or [numbers] (schema.Values)."""
    if isinstance(x, dict):
        return all(type(k) is str and _number(v) for k, v in x.items())
    return type(x) is list and all(_number(v) for v in x)


def _control(c):
    if not isinstance(c, dict) or set(c) - {"type", "tau", "file"}:
        return None
    kind = c.get("type")
    if kind == "zero" and set(c) == {"type"}:
        return ZeroControl()
    if kind == "constant" and set(c) <= {"type", "tau"} and _values(c.get("tau", {})):
        tau = c.get("tau", {})
        return ConstantControl("constant", dict(tau) if isinstance(tau, dict) else list(tau))
    if kind == "csv" and set(c) == {"type", "file"} and type(c["file"]) is str:
        return CsvControl("csv", c["file"])
    return None


def _block(value, cls, checks):
    """`cls(**value)` when `value` is a mapping of keys of `checks` that each pass, else None."""
    if not isinstance(value, dict) or not all(k in checks and checks[k](v) for k, v in value.items()):
        return None
    return cls(**{k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
                  for k, v in value.items()})


_INITIAL = {"q": _values, "qd": _values}
_LIMITS = {"position": lambda x: type(x) is bool, "effort": lambda x: type(x) is bool}
_OUTPUT = {"path": lambda x: type(x) is str, "every": lambda x: _count(x, MAX_COUNT),
           "columns": lambda x: type(x) is list and all(type(c) is str and c in COLUMNS for c in x)}
_SCALARS = {
    "dyn": lambda x: type(x) is int and x == 1,
    "robot": lambda x: type(x) is str,
    "floating_base": lambda x: type(x) is bool,
    "dt": lambda x: _number(x, positive=True),
    "duration": lambda x: _number(x, positive=True),
    "steps": _count,
    "integrator": lambda x: type(x) is str and x in INTEGRATORS,
    "joint_friction": lambda x: type(x) is str and x in ("from-urdf", "none"),
}


def scenario(data) -> Optional[Plain]:
    """The `Plain` scenario of `data` (a robot path's mapping with the overrides applied), or None when
    a key or value is not one of those this module is sure of (then the schema validates `data`)."""
    fields = {}
    for key, value in data.items():
        if key in _SCALARS:
            if not _SCALARS[key](value):
                return None
            fields[key] = value
        elif key == "gravity":
            if type(value) is not list or len(value) != 3 or not all(_number(x) for x in value):
                return None
            fields[key] = tuple(value)
        elif key == "lock":
            if not isinstance(value, dict) or not all(
                    type(j) is str and (_number(x) or (type(x) is list and all(_number(y) for y in x)))
                    for j, x in value.items()):
                return None
            fields[key] = {j: (list(x) if type(x) is list else x) for j, x in value.items()}
        elif key == "armature":
            if not isinstance(value, dict) or not all(type(j) is str and _number(x, non_negative=True)
                                                      for j, x in value.items()):
                return None
            fields[key] = dict(value)
        elif key in ("initial", "limits", "output"):
            cls, checks = {"initial": (Initial, _INITIAL), "limits": (Limits, _LIMITS),
                           "output": (Output, _OUTPUT)}[key]
            fields[key] = _block(value, cls, checks)
        elif key == "control":
            fields[key] = _control(value)
        else:
            return None
        if fields[key] is None:
            return None
    if "dyn" not in fields or "robot" not in fields:
        return None
    return Plain(**fields, _given=frozenset(fields))
