"""Scenario files (YAML, SPEC §6): validation and running.

`load_scenario(path, overrides)` reads a scenario `.yaml` (or a robot `.urdf` /
`.xacro`, which becomes a scenario with every default), applies `overrides`
(``{"dt": 0.002, "initial.q.elbow": 0.3}``: key paths, as `dyn sweep` and the
command line give them), and validates it in two passes:

1. the schema (pydantic models below, ``extra="forbid"``): unknown keys, wrong
   types, bad values;
2. against the robot: joint, coordinate and frame names, vector lengths, files
   (paths are relative to the scenario file), CSV columns.

Every problem is a `ScenarioError` naming the file, the line (from
``yaml.compose``), the key path (``control.kp.shoulder``) and, for names, the
closest valid ones. `run(scenario)` builds the controller, the friction and the
wrenches and calls `dynlib.simulate.simulate`.

``contacts`` runs the contact models of `dynlib.contact` (`run` checks the
points against the robot before simulating); ``sweep`` is used by ``dyn sweep``
only (`simulate` ignores it, as SPEC §6 says).
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from .errors import DynError, ScenarioError, closest

ROBOT_SUFFIXES = (".urdf", ".xacro")
SCENARIO_SUFFIXES = (".yaml", ".yml")
COLUMN_PARTS = ("q", "qd", "qdd", "tau", "energy", "contact")

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(gt=0)]
Vector3 = tuple[Finite, Finite, Finite]
ByName = dict[str, Finite]
Values = Union[ByName, list[Finite]]           # {name: number} or the whole vector
Gains = Union[NonNegativeFloat, dict[str, NonNegativeFloat], list[NonNegativeFloat]]


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------ controllers

class ZeroControl(_Block):
    type: Literal["zero"]


class ConstantControl(_Block):
    type: Literal["constant"]
    tau: Values = {}


class CsvControl(_Block):
    type: Literal["csv"]
    file: str  # time + tau.<name> columns; linear interpolation, held at the ends


class PDControl(_Block):
    type: Literal["pd"]
    kp: Gains
    kd: Gains = 0.0
    target: Values = {}
    gravity_compensation: bool = False


class GravityCompensationControl(_Block):
    type: Literal["gravity-compensation"]


class Sinusoid(_Block):
    amplitude: Finite = 0.0
    frequency: NonNegativeFloat = 0.0  # Hz
    phase: Finite = 0.0                # rad
    offset: Optional[Finite] = None    # default: the initial value


class Target(_Block):
    file: Optional[str] = None                     # time + q.<name> (+ qd.*, qdd.*) columns
    sinusoids: Optional[dict[str, Sinusoid]] = None

    @model_validator(mode="after")
    def _one_source(self):
        if (self.file is None) == (self.sinusoids is None):
            raise ValueError("give exactly one of 'file' or 'sinusoids'")
        return self


class ComputedTorqueControl(_Block):
    type: Literal["computed-torque"]
    kp: Gains
    kd: Gains
    target: Target


Control = Annotated[Union[ZeroControl, ConstantControl, CsvControl, PDControl, GravityCompensationControl,
                          ComputedTorqueControl], Field(discriminator="type")]
CONTROL_TYPES = ("zero", "constant", "csv", "pd", "gravity-compensation", "computed-torque")


# ------------------------------------------------------------------ the rest

class Initial(_Block):
    q: Values = {}   # by coordinate name (the rest at zero, the root at the identity), or all nq values
    qd: Values = {}  # by velocity name, or all nv values


class FrictionOverride(_Block):
    damping: Optional[NonNegativeFloat] = None
    friction: Optional[NonNegativeFloat] = None


class Wrench(_Block):
    frame: str
    wrench: tuple[Finite, Finite, Finite, Finite, Finite, Finite]  # fx fy fz tx ty tz, world axes, at the frame origin
    start: NonNegativeFloat = 0.0
    stop: Annotated[float, Field(gt=0)] = math.inf

    @model_validator(mode="after")
    def _window(self):
        if not self.stop > self.start:
            raise ValueError(f"stop ({self.stop}) must be after start ({self.start})")
        return self


class Ground(_Block):
    height: Finite = 0.0
    normal: Vector3 = (0.0, 0.0, 1.0)


class ContactPoint(_Block):
    frame: str
    offset: Vector3 = (0.0, 0.0, 0.0)
    name: Optional[str] = None  # the column name (default: the frame's)
    target: Optional[Vector3] = None  # bilateral: where the point is held (default: where it is at t = 0)


class Contacts(_Block):
    """SPEC §6 `contacts:` (dynlib.contact: the models and their parameters)."""

    model: Literal["soft", "bilateral", "unilateral", "relaxed"]
    ground: Ground = Ground()
    stiffness: Optional[PositiveFloat] = None
    damping: Optional[NonNegativeFloat] = None
    friction: Optional[NonNegativeFloat] = None
    time_constant: Optional[PositiveFloat] = None
    damping_ratio: Optional[PositiveFloat] = None
    slip_velocity: Optional[PositiveFloat] = None  # soft: regularisation of Coulomb friction (m/s)
    baumgarte_kp: Optional[NonNegativeFloat] = None  # bilateral: position gain (1/s²)
    baumgarte_kd: Optional[NonNegativeFloat] = None  # bilateral: velocity gain (1/s)
    tolerance: Optional[PositiveFloat] = None       # unilateral/relaxed: PGS relative tolerance
    max_iterations: Optional[PositiveInt] = None    # unilateral/relaxed: PGS sweep limit
    penetration_correction: Optional[Annotated[float, Field(ge=0, le=1)]] = None  # unilateral: β
    points: Union[Literal["from-collision"], list[ContactPoint]]


class Output(_Block):
    path: Optional[str] = None  # relative to the scenario; absent or '-': standard output
    every: PositiveInt = 1
    columns: list[Literal["q", "qd", "qdd", "tau", "energy", "contact"]] = ["q", "qd", "qdd", "tau"]


class SweepRandom(_Block):
    count: PositiveInt
    seed: int = 0
    ranges: dict[str, Union[tuple[Finite, Finite], tuple[Finite, Finite, Literal["uniform", "log"]]]]


class Sweep(_Block):
    """SPEC §6 `sweep:` (read by `dyn sweep`; `dyn simulate` runs the base scenario)."""

    grid: dict[str, list[Any]] = {}
    random: Optional[SweepRandom] = None


class Scenario(_Block):
    dyn: Literal[1]
    robot: str
    floating_base: bool = False
    gravity: Optional[Vector3] = None  # default: the model's, (0, 0, -9.81)
    dt: PositiveFloat = 1e-3
    duration: Optional[PositiveFloat] = None
    steps: Optional[PositiveInt] = None
    integrator: Literal["rk4", "semi-implicit", "euler"] = "rk4"
    initial: Initial = Initial()
    control: Control = ZeroControl(type="zero")
    joint_friction: Union[Literal["from-urdf", "none"], dict[str, FrictionOverride]] = "from-urdf"
    friction_smoothing: PositiveFloat = 1e-3
    friction_integration: Literal["implicit", "explicit"] = "implicit"
    external_wrenches: list[Wrench] = []
    contacts: Optional[Contacts] = None
    output: Output = Output()
    max_state: PositiveFloat = 1e6
    sweep: Optional[Sweep] = None

    _source: Optional[str] = PrivateAttr(None)   # the scenario file (None: built from a robot path)
    _lines: dict = PrivateAttr(default_factory=dict)
    _origins: dict = PrivateAttr(default_factory=dict)
    _model: Any = PrivateAttr(None)

    # -- resolved values ---------------------------------------------------
    @property
    def source(self) -> Optional[str]:
        return self._source

    @property
    def folder(self) -> Path:
        return Path(self._source).parent if self._source else Path(".")

    def resolve(self, path) -> Path:
        """A path from the scenario, relative to the scenario's folder."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.folder / p

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
        """The robot as the scenario sets it up (floating base, gravity, friction overrides)."""
        if self._model is None:
            self._model = _build_model(self)
        return self._model

    def error(self, key, message) -> ScenarioError:
        """A ScenarioError at `key` (a key path string or tuple), with file and line when known."""
        return _error(self, _as_path(key), message)


# ================================================================== loading

def load_scenario(path, overrides=None, *, origins=None) -> Scenario:
    """Read and validate a scenario (.yaml) or a robot (.urdf/.xacro, every default).

    `overrides`: {key path: value}, applied before validation (``"steps"`` drops
    ``duration`` and the reverse). `origins`: {key path: label} naming where an
    override came from (``{"initial.q": "--q0"}``), used instead of file:line in
    error messages about it.
    """
    path = str(path)
    suffix = "".join(Path(path).suffixes[-1:]).lower()
    if suffix in SCENARIO_SUFFIXES:
        data, lines = _read_yaml(path)
        source = path
    elif suffix in ROBOT_SUFFIXES or path == "-":
        data, lines, source = {"dyn": 1, "robot": path}, {}, None
    else:
        raise ScenarioError(f"{path}: expected a scenario (.yaml, .yml) or a robot (.urdf, .xacro)")
    origins = dict(origins or {})
    overrides = dict(overrides or {})
    for key, value in overrides.items():
        _set(data, _as_path(key), value, source)
    where = _Where(source, lines, {_as_path(k): v for k, v in origins.items()})
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as exc:
        raise _convert(exc, data, where) from None
    sc._source, sc._lines, sc._origins = where._source, where._lines, where._origins
    _check_against_robot(sc)
    return sc


@dataclasses.dataclass
class _Where:
    """Where the scenario's values come from: the file, its key lines, the overrides' labels."""

    _source: Optional[str]
    _lines: dict
    _origins: dict


def _read_yaml(path):
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"not valid YAML: {problem}", file=path, line=line) from None
    if data is None:
        raise ScenarioError("the scenario is empty; expected a mapping with at least 'dyn: 1' and 'robot:'",
                            file=path, line=1)
    if not isinstance(data, dict):
        raise ScenarioError(f"expected a mapping of keys (dyn, robot, dt, …), got a {type(data).__name__}",
                            file=path, line=1)
    lines = {}
    _index_lines(root, (), lines, path)
    return data, lines


def _index_lines(node, prefix, lines, path):
    """lines[key path] = 1-based line of the key (mappings) or item (sequences); duplicate keys are errors."""
    if isinstance(node, yaml.MappingNode):
        seen = {}
        for knode, vnode in node.value:
            key = knode.value
            if key in seen:
                raise ScenarioError(f"key '{key}' appears twice (first on line {seen[key]})", file=path,
                                    line=knode.start_mark.line + 1, key=_format(prefix + (key,)))
            seen[key] = knode.start_mark.line + 1
            lines[prefix + (key,)] = knode.start_mark.line + 1
            _index_lines(vnode, prefix + (key,), lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[prefix + (i,)] = item.start_mark.line + 1
            _index_lines(item, prefix + (i,), lines, path)


_KEY = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _as_path(key) -> tuple:
    """'external_wrenches[0].start' -> ('external_wrenches', 0, 'start'); tuples pass through."""
    if isinstance(key, tuple):
        return key
    return tuple(int(i) if i else name for name, i in _KEY.findall(str(key)))


def _format(path) -> str:
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def _set(data, path, value, source):
    """data[path] = value, creating mappings on the way; 'steps' and 'duration' exclude each other."""
    node = data
    for i, k in enumerate(path[:-1]):
        nxt = node.get(k) if isinstance(node, dict) else (node[k] if isinstance(node, list) and k < len(node) else None)
        if nxt is None:
            nxt = {}
            if isinstance(node, dict):
                node[k] = nxt
            else:
                raise ScenarioError(f"cannot set '{_format(path)}': '{_format(path[:i + 1])}' does not exist",
                                    file=source)
        if not isinstance(nxt, (dict, list)):
            raise ScenarioError(f"cannot set '{_format(path)}': '{_format(path[:i + 1])}' is not a mapping",
                                file=source)
        node = nxt
    last = path[-1]
    if isinstance(node, list):
        if not (isinstance(last, int) and last < len(node)):
            raise ScenarioError(f"cannot set '{_format(path)}': no such item", file=source)
        node[last] = value
        return
    node[last] = value
    if path == ("steps",):
        data.pop("duration", None)
    elif path == ("duration",):
        data.pop("steps", None)


# ------------------------------------------------------------- error messages

_TYPE_WORDS = {"float": "a number", "int": "a whole number", "str": "a text", "bool": "true or false",
               "dict": "a mapping", "list": "a list", "tuple": "a list", "Literal": "one of the names"}


def _member_word(tag: str) -> str:
    tag = tag.removeprefix("constrained-")
    if tag.startswith("dict"):
        return "a mapping {name: number}" if "float" in tag else "a mapping"
    if tag.startswith("list") or tag.startswith("tuple"):
        return "a list of numbers" if "float" in tag else "a list"
    for k, w in _TYPE_WORDS.items():
        if tag.startswith(k):
            return w
    return tag


def _data_path(loc, data):
    """Split a pydantic loc into the key path present in the data and the union tags skipped."""
    path, tags, node = [], [], data
    for i, k in enumerate(loc):
        if isinstance(node, dict) and k in node:
            path.append(k)
            node = node[k]
        elif isinstance(node, list) and isinstance(k, int) and k < len(node):
            path.append(k)
            node = node[k]
        elif i == len(loc) - 1 and isinstance(node, dict) and isinstance(k, str) and not _is_tag(k):
            path.append(k)  # a missing or unknown key
            node = None
        else:
            tags.append(k)
    return tuple(path), tags


def _is_tag(k) -> bool:
    return k in CONTROL_TYPES or bool(re.match(r"^(constrained-)?(float|int|str|bool|dict|list|tuple|literal|function)",
                                               str(k)))


def _model_at(path, data):
    """The schema class (a _Block subclass) that validates the mapping at `path`, or None."""
    tp, node = Scenario, data
    for k in path:
        tp = _pick(tp, node)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(k)
            if field is None:
                return None
            tp = field.annotation
        else:
            args = getattr(tp, "__args__", ())
            tp = args[-1] if args else None
        node = node.get(k) if isinstance(node, dict) else (node[k] if isinstance(node, list) else None)
    tp = _pick(tp, node)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _pick(tp, node):
    """Resolve Annotated/Optional/Union to the member that fits `node` (discriminator 'type')."""
    while getattr(tp, "__metadata__", None) is not None:  # Annotated
        tp = tp.__origin__
    args = getattr(tp, "__args__", None)
    if args and getattr(tp, "__origin__", None) is Union:
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if isinstance(node, dict) and models:
            for mdl in models:
                f = mdl.model_fields.get("type")
                if f is not None and node.get("type") in getattr(f.annotation, "__args__", ()):
                    return mdl
            return models[0]
        for a in args:
            origin = getattr(a, "__origin__", a)
            if isinstance(node, list) and origin in (list, tuple):
                return a
            if isinstance(node, dict) and origin is dict:
                return a
        return args[0]
    return tp


def _describe(err) -> str:
    t, ctx, inp = err["type"], err.get("ctx") or {}, err.get("input")
    got = "" if t == "missing" else f", got {inp!r}"
    if t in ("float_parsing", "float_type"):
        return f"expected a number{got}"
    if t in ("int_parsing", "int_type", "int_from_float"):
        return f"expected a whole number{got}"
    if t in ("bool_parsing", "bool_type"):
        return f"expected true or false{got}"
    if t == "string_type":
        return f"expected a text{got}"
    if t == "dict_type":
        return f"expected a mapping{got}"
    if t in ("list_type", "tuple_type"):
        return f"expected a list{got}"
    if t == "greater_than":
        return f"must be greater than {ctx.get('gt')}{got}"
    if t == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}{got}"
    if t == "finite_number":
        return f"must be a finite number{got}"
    if t in ("too_short", "too_long"):
        n = ctx.get("min_length") if t == "too_short" else ctx.get("max_length")
        return f"expected {n} values, got {ctx.get('actual_length')}"
    if t == "missing":
        return "this required key is missing"
    if t == "value_error":
        return str(ctx.get("error", err["msg"]))
    return err["msg"]


def _convert(exc: ValidationError, data, sc) -> ScenarioError:
    """The most specific pydantic error as one ScenarioError (key path, file:line, hint)."""
    errors = [(_data_path(e["loc"], data), e) for e in exc.errors()]
    depth = max(len(p) for (p, _), _ in errors)
    deepest = [(p, tags, e) for (p, tags), e in errors if len(p) == depth]
    path, tags, err = deepest[0]
    t = err["type"]
    if t == "extra_forbidden":
        mdl = _model_at(path[:-1], data)
        valid = list(mdl.model_fields) if mdl is not None else []
        return _error(sc, path, f"unknown key '{path[-1]}'; {closest(str(path[-1]), valid)}")
    if t == "union_tag_invalid":
        tag = err["ctx"]["tag"]
        return _error(sc, path + ("type",), f"unknown controller type '{tag}'; {closest(tag, CONTROL_TYPES)}")
    if t == "union_tag_not_found":
        return _error(sc, path, f"missing 'type' (one of {', '.join(CONTROL_TYPES)})")
    if t == "literal_error":
        expected = re.findall(r"'([^']*)'|(\d+)", err["ctx"]["expected"])
        names = [a or b for a, b in expected]
        got = err.get("input")
        hint = closest(str(got), names) if isinstance(got, str) else "expected " + " or ".join(names)
        if path == ("dyn",):
            return _error(sc, path, f"unknown schema version {got!r}; this dyn reads 'dyn: 1'")
        if len([1 for p, _, _ in deepest if p == path]) > 1:  # a literal inside a union (joint_friction)
            return _error(sc, path, _union_message(deepest, path))
        return _error(sc, path, f"{got!r} is not valid; {hint}")
    if t == "missing" and path == ("dyn",):
        return _error(sc, (), "the schema version is missing; start the file with 'dyn: 1'")
    if t == "missing" and isinstance(err["loc"][-1], int):  # a fixed-length list that is too short
        n = 1 + max(e["loc"][-1] for p, _, e in deepest if p == path and isinstance(e["loc"][-1], int))
        return _error(sc, path, f"expected {n} values, got {len(_get(data, path))}")
    same = [e for p, _, e in deepest if p == path]
    if len(same) > 1:
        return _error(sc, path, _union_message(deepest, path))
    return _error(sc, path, _describe(err))


def _union_message(deepest, path) -> str:
    words, got = [], None
    for p, tags, e in deepest:
        if p != path:
            continue
        got = e.get("input")
        tag = next((str(t) for t in reversed(tags) if _is_tag(t) and t not in CONTROL_TYPES), "")
        if tag.startswith("literal"):
            w = "one of " + ", ".join(re.findall(r"'([^']*)'", str(e.get("ctx", {}).get("expected", ""))))
        else:
            w = _member_word(tag) if tag else _describe(e)
        if w not in words:
            words.append(w)
    listing = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    return f"expected {listing}, got {got!r}"


def _error(sc, path, message) -> ScenarioError:
    path = tuple(path)
    for n in range(len(path), -1, -1):  # an override's label wins over the file
        label = sc._origins.get(path[:n]) if sc._origins else None
        if label:
            return ScenarioError(message, key=label)
    line = None
    for n in range(len(path), 0, -1):
        line = sc._lines.get(path[:n])
        if line is not None:
            break
    if line is None and sc._lines:
        line = 1
    return ScenarioError(message, file=sc._source, line=line if sc._source else None, key=_format(path) or None)


# ====================================================== checks against the robot

def _build_model(sc):
    from .urdf import load

    robot = sc.robot if sc._source is None else str(sc.resolve(sc.robot))
    if robot != "-" and not Path(robot).is_file():
        raise sc.error("robot", f"robot file '{robot}' not found")
    try:
        model = load(robot, floating_base=sc.floating_base)
    except DynError as exc:
        if sc._source is None:
            raise
        raise sc.error("robot", f"cannot load the robot: {exc}") from None
    if sc.gravity is not None:
        model = model.with_gravity(sc.gravity)
    if sc.joint_friction == "none":
        model = model.without_joint_friction()
    elif isinstance(sc.joint_friction, dict):
        damping, friction = model.arrays.damping.copy(), model.arrays.friction.copy()
        for joint, ov in sc.joint_friction.items():
            if joint not in model.joint_names:
                raise sc.error(("joint_friction", joint),
                               f"robot '{model.name}' has no moving joint '{joint}'; {closest(joint, model.joint_names)}")
            i = model.joint_names.index(joint)
            iv, n = int(model.arrays.idx_v[i]), int(model.arrays.nvj[i])
            if ov.damping is not None:
                damping[iv:iv + n] = ov.damping
            if ov.friction is not None:
                friction[iv:iv + n] = ov.friction
        model = dataclasses.replace(model, arrays=model.arrays._replace(damping=damping, friction=friction))
    return model


def _names_check(sc, key, given, names, what, model):
    if isinstance(given, dict):
        for name in given:
            if name not in names:
                raise sc.error(key + (name,), f"robot '{model.name}' has no {what} '{name}'; {closest(name, names)}")
    elif isinstance(given, list) and len(given) != len(names):
        raise sc.error(key, f"expected {len(names)} values ({_short(names)}), got {len(given)}")


def _short(names, n=8):
    names = list(names)
    return ", ".join(names) if len(names) <= n else ", ".join(names[:n]) + f", … ({len(names) - n} more)"


def _frame_check(sc, key, frame, model, *, moving=True):
    if frame not in model.frame_names:
        raise sc.error(key, f"robot '{model.name}' has no frame (link) '{frame}'; {closest(frame, model.frame_names)}")
    if moving and model.arrays.frame_body[model.frame_names.index(frame)] < 0:
        raise sc.error(key, f"frame '{frame}' is fixed to the world, so a wrench on it moves nothing; "
                            "choose a link of a moving body")


def _get(data, path):
    for k in path:
        data = data[k]
    return data


def _check_against_robot(sc):
    if sc.duration is not None and sc.steps is not None:
        raise sc.error("duration", "give either 'duration' or 'steps', not both")
    model = sc.model
    _names_check(sc, ("initial", "q"), sc.initial.q, model.q_names, "coordinate", model)
    _names_check(sc, ("initial", "qd"), sc.initial.qd, model.v_names, "velocity coordinate", model)
    c = sc.control
    for gain in ("kp", "kd"):
        if isinstance(getattr(c, gain, None), (dict, list)):
            _names_check(sc, ("control", gain), getattr(c, gain), model.v_names, "joint coordinate", model)
    if isinstance(c, ConstantControl):
        _names_check(sc, ("control", "tau"), c.tau, model.tau_names, "torque coordinate", model)
    if isinstance(c, PDControl):
        _names_check(sc, ("control", "target"), c.target, model.q_names, "coordinate", model)
    if isinstance(c, CsvControl):
        _torque_table(sc, model)
    if isinstance(c, ComputedTorqueControl):
        if c.target.sinusoids is not None:
            _names_check(sc, ("control", "target", "sinusoids"), c.target.sinusoids, model.q_names, "coordinate", model)
        else:
            _target_table(sc, model, _initial_q(sc, model))
        try:
            from .controllers import _euclidean

            _euclidean(model, "the computed-torque controller")
        except DynError as exc:
            raise sc.error(("control", "type"), exc.message) from None
    for i, w in enumerate(sc.external_wrenches):
        _frame_check(sc, ("external_wrenches", i, "frame"), w.frame, model)
    if sc.contacts is not None and not isinstance(sc.contacts.points, str):
        for i, p in enumerate(sc.contacts.points):
            _frame_check(sc, ("contacts", "points", i, "frame"), p.frame, model, moving=False)
    q0 = _initial_q(sc, model)
    if not np.all(np.abs(q0) <= sc.max_state):
        raise sc.error(("initial", "q"), f"an initial value exceeds max_state = {sc.max_state:g}")


def _read_table(sc, key, path):
    from .trajectory import check_increasing_time, read_trajectory

    p = sc.resolve(path)
    try:
        traj = read_trajectory(str(p))
        if not traj.has("time"):
            raise sc.error(key, f"'{p}' has no 'time' column")
        check_increasing_time(traj)
    except ScenarioError:
        raise
    except DynError as exc:
        raise sc.error(key, str(exc)) from None
    return p, traj


def _torque_table(sc, model):
    """(time (n,), tau (n, nv)) from control.file: tau.<name> columns, the rest zero."""
    key = ("control", "file")
    p, traj = _read_table(sc, key, sc.control.file)
    names = model.tau_names
    tau_cols = [n for n in traj.names if n.startswith("tau.")]
    if not tau_cols:
        raise sc.error(key, f"'{p}' has no tau.<joint> column; expected some of "
                            f"{_short(['tau.' + n for n in names])}")
    tau = np.zeros((len(traj), model.nv))
    for col in tau_cols:
        name = col[4:]
        if name not in names:
            raise sc.error(key, f"'{p}': column '{col}' names no torque coordinate of robot '{model.name}'; "
                                f"{closest(name, names)}")
        tau[:, names.index(name)] = traj.column(col)
    return traj.time, tau


def _target_table(sc, model, q0):
    """A TargetTable from control.target.file: q.<name> columns (the rest hold q0), optional qd./qdd."""
    from .controllers import TargetTable

    key = ("control", "target", "file")
    p, traj = _read_table(sc, key, sc.control.target.file)
    qcols = [n for n in traj.names if n.startswith("q.")]
    if not qcols:
        raise sc.error(key, f"'{p}' has no q.<joint> column; expected some of {_short(['q.' + n for n in model.q_names])}")
    Q = np.tile(q0, (len(traj), 1))
    for col in qcols:
        if col[2:] not in model.q_names:
            raise sc.error(key, f"'{p}': column '{col}' names no coordinate of robot '{model.name}'; "
                                f"{closest(col[2:], model.q_names)}")
        Q[:, model.q_names.index(col[2:])] = traj.column(col)
    # velocities and accelerations: the file's qd./qdd. columns where given, else derivatives of the samples
    t = traj.time
    V = np.gradient(Q, t, axis=0) if len(traj) > 1 else np.zeros_like(Q)
    for k, n in enumerate(model.v_names):
        if traj.has(f"qd.{n}"):
            V[:, k] = traj.column(f"qd.{n}")
    A = np.gradient(V, t, axis=0) if len(traj) > 1 else np.zeros_like(V)
    for k, n in enumerate(model.v_names):
        if traj.has(f"qdd.{n}"):
            A[:, k] = traj.column(f"qdd.{n}")
    return TargetTable(t, Q, V, A)


def _initial_q(sc, model):
    q = model.q_neutral.copy()
    if isinstance(sc.initial.q, list):
        q[:] = sc.initial.q
    else:
        for name, x in sc.initial.q.items():
            q[model.q_names.index(name)] = x
    # a free-flyer quaternion given in part is normalised; all zero is an error
    from .joints import FREEFLYER

    a = model.arrays
    for i in range(model.nb):
        if a.jtype[i] == FREEFLYER:
            iq = int(a.idx_q[i]) + 3
            n = float(np.linalg.norm(q[iq:iq + 4]))
            if not n > 0:
                raise sc.error(("initial", "q"), f"the quaternion of joint '{model.joint_names[i]}' is zero")
            q[iq:iq + 4] /= n
    return q


def _initial_v(sc, model):
    v = np.zeros(model.nv)
    if isinstance(sc.initial.qd, list):
        v[:] = sc.initial.qd
    else:
        for name, x in sc.initial.qd.items():
            v[model.v_names.index(name)] = x
    return v


# ================================================================== running

def initial_state(sc):
    """(q0, v0) of the scenario: named coordinates set, the rest at zero, the root at the identity."""
    model = sc.model
    return _initial_q(sc, model), _initial_v(sc, model)


def controller(sc):
    """The dynlib.controllers object of the scenario's `control:` block."""
    from . import controllers as C

    c, model = sc.control, sc.model
    if isinstance(c, ZeroControl):
        return C.Zero()
    if isinstance(c, ConstantControl):
        return C.Constant(c.tau)
    if isinstance(c, CsvControl):
        t, tau = _torque_table(sc, model)
        return C.TorqueTable(t, tau)
    if isinstance(c, PDControl):
        return C.PD(kp=c.kp, kd=c.kd, target=c.target, gravity_compensation=c.gravity_compensation)
    if isinstance(c, GravityCompensationControl):
        return C.GravityCompensation()
    q0 = _initial_q(sc, model)
    if c.target.file is not None:
        target = _target_table(sc, model, q0)
    else:
        s = c.target.sinusoids
        target = C.Sinusoids(amplitude={k: v.amplitude for k, v in s.items()},
                             frequency={k: v.frequency for k, v in s.items()},
                             phase={k: v.phase for k, v in s.items()},
                             offset={k: v.offset for k, v in s.items() if v.offset is not None})
    return C.ComputedTorque(kp=c.kp, kd=c.kd, target=target)


def check_run_size(sc, model, every=None):
    """A step count that cannot run (beyond 2**53) or whose kept rows cannot fit in this machine's
    memory is an error at the key that set it (steps, or dt for a duration), not an allocation failure."""
    steps, every = sc.n_steps, every or sc.output.every
    need = (steps // every + 1) * (1 + model.nq + 4 * model.nv + 3) * 8
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        memory = math.inf
    if steps > 2 ** 53 or need > memory:
        key = "steps" if sc.steps is not None else "dt"
        raise sc.error(key, f"{steps:.3g} steps ({steps // every + 1:.3g} rows kept) need {need / 1e9:.3g} GB "
                            f"for the trajectory, more than this machine's {memory / 1e9:.3g} GB; use fewer steps, "
                            "a larger dt or output.every")


def run(sc, *, progress=None):
    """Simulate the scenario: `dynlib.simulate.simulate` with everything it sets."""
    from .simulate import ExternalWrench, simulate

    if "contact" in sc.output.columns and sc.contacts is None:
        raise sc.error(("output", "columns"), "'contact' columns need a 'contacts:' block")
    model = sc.model
    check_run_size(sc, model)
    contacts = None
    if sc.contacts is not None:
        from .contact.points import ContactSpec, build_contact

        c = sc.contacts
        pts = c.points if isinstance(c.points, str) else [p.model_dump() for p in c.points]
        contacts = ContactSpec(c.model, pts, c.ground.height, tuple(c.ground.normal), c.stiffness, c.damping,
                               c.friction, c.slip_velocity, c.baumgarte_kp, c.baumgarte_kd, c.time_constant,
                               c.damping_ratio, c.tolerance, c.max_iterations, c.penetration_correction)
        try:
            build_contact(model, contacts, model.q_neutral)
        except DynError as exc:
            raise sc.error("contacts", exc.message) from None
    wrenches = [ExternalWrench(w.frame, tuple(w.wrench), w.start, w.stop) for w in sc.external_wrenches]
    try:
        q0, v0 = initial_state(sc)
        return simulate(model, q0, v0, dt=sc.dt, steps=sc.n_steps,
                        integrator=sc.integrator, controller=controller(sc), external_wrenches=wrenches,
                        joint_friction=sc.joint_friction != "none", friction_smoothing=sc.friction_smoothing,
                        friction_integration=sc.friction_integration, every=sc.output.every,
                        max_state=sc.max_state, energy="energy" in sc.output.columns, contacts=contacts,
                        progress=progress)
    except ScenarioError:
        raise
    except DynError as exc:
        if exc.exit_code != 2 or exc.file:
            raise
        raise sc.error("control", exc.message) from None
