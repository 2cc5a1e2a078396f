"""What a scenario file may say (SPEC §6): the pydantic models, and the validated `Scenario`.

Every block is a model with ``extra="forbid"`` (an unknown key is an error);
the types and bounds here are the first validation pass. `Scenario` also
carries what loading found out (`dynlib.scenario.load`): the file it came from
and its key lines (for `Scenario.error`), the robot model as the scenario sets
it up (`Scenario.model`) and the tables it read, so that nothing is read twice
and a pickled scenario (a sweep's worker) needs no file.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ..errors import ScenarioError
from .messages import Where, as_path

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

    _where: Where = PrivateAttr(default_factory=Where)
    _model: Any = PrivateAttr(None)
    _tables: dict = PrivateAttr(default_factory=dict)  # (key path, file) -> the table read (dynlib.scenario.load)

    # -- resolved values ---------------------------------------------------
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
            raise ScenarioError("this scenario was not loaded with dynlib.scenario.load_scenario, "
                                "which builds its robot model")
        return self._model

    def error(self, key, message) -> ScenarioError:
        """A ScenarioError at `key` (a key path string or tuple), with file and line when known."""
        return self._where.error(as_path(key), message)
