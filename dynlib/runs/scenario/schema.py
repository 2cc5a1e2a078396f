"""What a scenario file may say (SPEC §6): the pydantic models, and the validated `Scenario`.

Every block is a model with ``extra="forbid"`` (an unknown key is an error);
the types and bounds here are the first validation pass. `Scenario` also
carries what loading found out (`dynlib.runs.scenario.load`): the file it came from
and its key lines (for `Scenario.error`), the robot model as the scenario sets
it up (`Scenario.model`) and the tables it read, so that nothing is read twice
and a pickled scenario (a sweep's worker) needs no file.
"""
from __future__ import annotations

import ast
import inspect
import math
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from .messages import Where
from .plain import Resolved

COLUMN_PARTS = ("q", "qd", "qdd", "tau", "energy", "contact")

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(gt=0)]
MAX_COUNT = 2 ** 53  # counts the kernels take as 64-bit integers (and a float counts exactly)
Count = Annotated[int, Field(gt=0, le=MAX_COUNT)]
Vector3 = tuple[Finite, Finite, Finite]
ByName = dict[str, Finite]
Values = Union[ByName, list[Finite]]           # {name: number} or the whole vector
Gains = Union[NonNegativeFloat, dict[str, NonNegativeFloat], list[NonNegativeFloat]]


class _Block(BaseModel):
    # an unknown key is an error; the attribute docstrings below are the descriptions of
    # `dyn schema` and of docs/scenarios.md (generated from this file). They are read by
    # `_attribute_docstrings`, not by pydantic's use_attribute_docstrings: that one looks for
    # each class's source with inspect.getmodule, a walk over every loaded module (~0.1 s of
    # every `dyn simulate`). The validators are built at first use (defer_build), after the
    # descriptions are set.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs):
        super().__pydantic_init_subclass__(**kwargs)
        docs = _attribute_docstrings().get(cls.__name__, {})
        for name, field in cls.__pydantic_fields__.items():
            if field.description is None and name in docs:
                field.description = docs[name]


@lru_cache(maxsize=None)
def _attribute_docstrings() -> dict:
    """{class name: {field: docstring}} of the classes of this file: the string literal right
    after an annotated attribute, cleaned as `inspect.cleandoc` does (pydantic's rule)."""
    try:
        tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    except OSError:  # no source installed: no descriptions, as with pydantic's own reading
        return {}
    docs = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            attrs = docs[node.name] = {}
            for before, stmt in zip(node.body, node.body[1:]):
                if (isinstance(before, ast.AnnAssign) and isinstance(before.target, ast.Name)
                        and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                        and isinstance(stmt.value.value, str)):
                    attrs[before.target.id] = inspect.cleandoc(stmt.value.value)
    return docs


# ------------------------------------------------------------------ controllers

class ZeroControl(_Block):
    """No torque."""

    type: Literal["zero"]


class ConstantControl(_Block):
    """The same torque at every step."""

    type: Literal["constant"]
    tau: Values = {}
    """N·m or N: {coordinate: value} (the rest zero), or all nv values."""


class CsvControl(_Block):
    """Torques from a table, played open loop."""

    type: Literal["csv"]
    file: str
    """CSV or Parquet with time and tau.<name> columns, relative to the scenario; linearly
    interpolated, held at the ends."""


class PDControl(_Block):
    """tau = kp (target − q) − kd q̇ (+ g(q) with gravity_compensation)."""

    type: Literal["pd"]
    kp: Gains
    """Position gains: one number for every joint, {joint: gain}, or all nv values."""
    kd: Gains = 0.0
    """Velocity gains, as kp."""
    target: Values = {}
    """{coordinate: value} (the rest hold their initial value), or all nv values."""
    gravity_compensation: bool = False
    """Add the gravity torques g(q)."""


class GravityCompensationControl(_Block):
    """tau = g(q): the robot floats."""

    type: Literal["gravity-compensation"]


class Sinusoid(_Block):
    """offset + amplitude sin(2π frequency t + phase)."""

    amplitude: Finite = 0.0
    frequency: NonNegativeFloat = 0.0
    """Hz."""
    phase: Finite = 0.0
    """rad."""
    offset: Optional[Finite] = None
    """Default: the coordinate's initial value."""


class Target(_Block):
    """The motion computed-torque tracks: exactly one of file and sinusoids."""

    file: Optional[str] = None
    """CSV or Parquet with time and q.<name> (and qd.*, qdd.*) columns, relative to the scenario."""
    sinusoids: Optional[dict[str, Sinusoid]] = None
    """{coordinate: sinusoid}; the other coordinates hold their initial value."""

    @model_validator(mode="after")
    def _one_source(self):
        if (self.file is None) == (self.sinusoids is None):
            raise ValueError("give exactly one of 'file' or 'sinusoids'")
        return self


class ComputedTorqueControl(_Block):
    """tau = M(q)(q̈* + kd (q̇* − q̇) + kp (q* − q)) + h(q, q̇), tracking target."""

    type: Literal["computed-torque"]
    kp: Gains
    """Position gains (1/s²), as for pd."""
    kd: Gains
    """Velocity gains (1/s), as for pd."""
    target: Target
    """The motion to track."""


class OperatingPoint(_Block):
    """The state a state-feedback gain was designed about (dyn linearize's point)."""

    q: Values = {}
    """{coordinate: value} (the rest at zero, a free-flyer root at the identity), or all nq values;
    the names of dyn simulate's --q0."""
    qd: Values = {}
    """{velocity coordinate: value} (the rest zero), or all nv values."""


class StateFeedbackControl(_Block):
    """tau = tau0 − K [q ⊖ q*; q̇ − q̇*] on the gain's input coordinates (e.g. an LQR gain of dyn linearize's A, B)."""

    type: Literal["state-feedback"]
    gain: str
    """CSV, relative to the scenario: a header 'input,<state names>' as dyn linearize writes them (q.<coord>
    for the tangent coordinates, then qd.<coord>), one row per actuated coordinate (its name in the 'input'
    column); dynlib.write_gain writes it."""
    target: OperatingPoint = OperatingPoint()
    """The operating point q*, q̇* (default: q = 0, q̇ = 0); q ⊖ q* is in the tangent coordinates, as dyn
    linearize's state."""
    tau: Optional[Values] = None
    """The feed-forward tau0 on the inputs: {coordinate: value} (the rest zero), or all nv values (default:
    the torque holding the target, gravity compensation at q̇* = 0)."""


Control = Annotated[Union[ZeroControl, ConstantControl, CsvControl, PDControl, GravityCompensationControl,
                          ComputedTorqueControl, StateFeedbackControl], Field(discriminator="type")]
CONTROL_TYPES = ("zero", "constant", "csv", "pd", "gravity-compensation", "computed-torque", "state-feedback")


# ------------------------------------------------------------------ the rest

class Initial(_Block):
    """The state at t = 0."""

    q: Values = {}
    """{coordinate: value} (the rest at zero, a free-flyer root at the identity), or all nq values."""
    qd: Values = {}
    """{velocity coordinate: value} (the rest zero), or all nv values."""


class FrictionOverride(_Block):
    """One joint's friction, replacing its URDF <dynamics>."""

    damping: Optional[NonNegativeFloat] = None
    """N·m·s/rad (N·s/m for a prismatic joint); default: the URDF's."""
    friction: Optional[NonNegativeFloat] = None
    """Coulomb friction, N·m (N); default: the URDF's."""


class Limits(_Block):
    """The URDF's joint limits the simulation holds."""

    position: bool = True
    """Hold the revolute and prismatic joints' <limit lower upper> (a one-sided limit torque)."""
    effort: bool = True
    """Saturate every controller's motor torque at ±<limit effort>."""


class Wrench(_Block):
    """An external wrench on a frame over a time window."""

    frame: str
    """A link or frame name (dyn info lists them)."""
    wrench: tuple[Finite, Finite, Finite, Finite, Finite, Finite]
    """fx fy fz tx ty tz (N, N·m), world axes, at the frame's origin."""
    start: NonNegativeFloat = 0.0
    """s."""
    stop: Annotated[float, Field(gt=0)] = math.inf
    """s (default: never)."""

    @model_validator(mode="after")
    def _window(self):
        if not self.stop > self.start:
            raise ValueError(f"stop ({self.stop}) must be after start ({self.start})")
        return self


class Ground(_Block):
    """The ground plane: the points p with normal · p = height."""

    height: Finite = 0.0
    """m."""
    normal: Vector3 = (0.0, 0.0, 1.0)
    """Pointing out of the ground (normalised)."""


class ContactPoint(_Block):
    """A point of the robot that touches the ground."""

    frame: str
    """The link or frame that carries the point."""
    offset: Vector3 = (0.0, 0.0, 0.0)
    """m, in the frame's own (rotated) axes."""
    offset_world: Optional[Vector3] = None
    """m, in the world's axes at the initial configuration (instead of offset): e.g. straight
    down to a toe's sole whatever the frame's orientation."""
    name: Optional[str] = None
    """The column name (contact.<name>.*); default: the frame's."""
    target: Optional[Vector3] = None
    """bilateral: where the point is held, world (default: where it is at t = 0)."""


class FromCollision(_Block):
    """The collision geometry of some links only."""

    model_config = ConfigDict(extra="forbid", defer_build=True, populate_by_name=True)
    from_collision: list[str] = Field(alias="from-collision", min_length=1)
    """The links whose collision spheres and boxes touch the ground."""


class Contacts(_Block):
    """Ground contact (equations and defaults: the docstrings of dynlib/sim/contact/*.py). A key
    that the chosen model does not use is an error."""

    model: Literal["soft", "bilateral", "unilateral", "relaxed"]
    """soft: spring-damper; bilateral: points held in place; unilateral: impulses in the exact
    Coulomb cone; relaxed: unilateral with MuJoCo-style compliance. unilateral and relaxed need
    integrator: semi-implicit."""
    ground: Ground = Ground()
    """The plane (default: z = 0)."""
    stiffness: Optional[PositiveFloat] = None
    """soft: normal stiffness k, N/m (default 1e5)."""
    damping: Optional[NonNegativeFloat] = None
    """soft: normal damping b, N·s/m (default 1e3)."""
    friction: Optional[NonNegativeFloat] = None
    """soft, unilateral, relaxed: Coulomb friction coefficient μ (default 0.8)."""
    time_constant: Optional[PositiveFloat] = None
    """relaxed: the constraint's time constant, s (default 0.02; MuJoCo's solref[0])."""
    damping_ratio: Optional[PositiveFloat] = None
    """relaxed: the constraint's damping ratio (default 1; MuJoCo's solref[1])."""
    stiffness_per_mass: Optional[PositiveFloat] = None
    """relaxed: MuJoCo's direct form (its negative solref[0]), a stiffness per unit of effective
    mass, 1/s², instead of time_constant and damping_ratio."""
    damping_per_mass: Optional[NonNegativeFloat] = None
    """relaxed: MuJoCo's direct form (its negative solref[1]), a damping per unit of effective
    mass, 1/s."""
    slip_velocity: Optional[PositiveFloat] = None
    """soft: the regularisation of Coulomb friction, m/s (default 0.01)."""
    baumgarte_kp: Optional[NonNegativeFloat] = None
    """bilateral: Baumgarte position gain, 1/s² (default 1e4)."""
    baumgarte_kd: Optional[NonNegativeFloat] = None
    """bilateral: Baumgarte velocity gain, 1/s (default 200)."""
    tolerance: Optional[PositiveFloat] = None
    """unilateral, relaxed: the projected Gauss–Seidel's relative tolerance (default 1e-8)."""
    max_iterations: Optional[Count] = None
    """unilateral, relaxed: the projected Gauss–Seidel's sweep limit (default 200)."""
    penetration_correction: Optional[Annotated[float, Field(ge=0, le=1)]] = None
    """unilateral: the fraction β of the penetration corrected per step (default 0.2)."""
    points: Union[Literal["from-collision"], FromCollision, list[ContactPoint]]
    """A list of points; from-collision: the URDF's collision spheres (their lowest point) and
    boxes (their corners) on every moving link; or {from-collision: [link, ...]}: those links'."""


class Output(_Block):
    """What dyn simulate writes."""

    path: Optional[str] = None
    """.csv or .parquet, relative to the scenario; absent or '-': standard output (-o overrides)."""
    every: Count = 1
    """Keep one row in every."""
    columns: list[Literal["q", "qd", "qdd", "tau", "energy", "contact", "limits"]] = ["q", "qd", "qdd", "tau"]
    """The column groups written (contact: contact.<name>.* and penetration.<name>; limits: limit.<joint>, the
    position limits' torque)."""


class SweepRandom(_Block):
    """Random variants: count samples of the ranges."""

    count: Count
    """The number of variants."""
    seed: int = 0
    """The random generator's seed (the same seed gives the same variants)."""
    ranges: dict[str, Union[tuple[Finite, Finite], tuple[Finite, Finite, Literal["uniform", "log"]]]]
    """{key path: [low, high]} or [low, high, log]: uniform, or uniform in the logarithm."""


class Sweep(_Block):
    """Variants of this scenario, run by dyn sweep (dyn simulate runs the scenario as written)."""

    grid: dict[str, list[Any]] = {}
    """{key path: [values]}: every combination (e.g. control.kp.elbow: [100, 200])."""
    random: Optional[SweepRandom] = None
    """Random variants (with grid: every grid point for each sample)."""


class Scenario(_Block, Resolved):
    """A dyn scenario: a robot, its initial state, controller, wrenches, contacts and output."""

    dyn: Literal[1]
    """The format's version: 1."""
    robot: str
    """The URDF or xacro file, relative to the scenario."""
    floating_base: bool = False
    """Add a free-flyer root joint (named root) above the URDF's root link."""
    lock: dict[str, Union[Finite, list[Finite]]] = {}
    """{joint: value}: joints held at a value (rad or m; a planar or floating joint: the list of its
    coordinates), the robot built without them, as Pinocchio's buildReducedModel (e.g. fingers a
    recording leaves out). A value must be within the joint's URDF limits."""
    gravity: Optional[Vector3] = None
    """m/s² (default: (0, 0, -9.81))."""
    dt: PositiveFloat = 1e-3
    """The time step, s."""
    duration: Optional[PositiveFloat] = None
    """s (default 1; or give steps)."""
    steps: Optional[PositiveInt] = None
    """The number of steps (instead of duration)."""
    integrator: Literal["rk4", "semi-implicit", "euler"] = "rk4"
    """rk4, semi-implicit (symplectic Euler; needed by the impulse contact models) or euler."""
    initial: Initial = Initial()
    """The state at t = 0 (default: zero, a free-flyer root at the identity)."""
    control: Control = ZeroControl(type="zero")
    """The controller, chosen by its type."""
    joint_friction: Union[Literal["from-urdf", "none"], dict[str, FrictionOverride]] = "from-urdf"
    """The URDF's joint damping and Coulomb friction, none, or {joint: override}."""
    armature: dict[str, NonNegativeFloat] = {}
    """{joint: rotor inertia} added to the mass matrix's diagonal, kg·m² (kg for a prismatic joint), as
    MuJoCo's and Pinocchio's armature (default: the URDF's <dynamics dyn:armature>, else zero)."""
    friction_smoothing: PositiveFloat = 1e-3
    """ε of the Coulomb term friction · tanh(q̇ / ε), rad/s or m/s."""
    friction_integration: Literal["implicit", "explicit"] = "implicit"
    """Joint friction integrated implicitly (stable on light links) or explicitly."""
    limits: Limits = Limits()
    """The URDF's position limits held and effort limits enforced (each switchable; both on by default)."""
    external_wrenches: list[Wrench] = []
    """Wrenches applied on frames over time windows."""
    contacts: Optional[Contacts] = None
    """Ground contact (default: none)."""
    output: Output = Output()
    """The trajectory file and its columns."""
    max_state: PositiveFloat = 1e6
    """A run whose state exceeds this in absolute value has diverged."""
    sweep: Optional[Sweep] = None
    """The variants dyn sweep runs."""

    _where: Where = PrivateAttr(default_factory=Where)
    _model: Any = PrivateAttr(None)
    _tables: dict = PrivateAttr(default_factory=dict)  # (key path, file) -> the table read (dynlib.runs.scenario.load)
    # the resolved values (source, folder, resolve, input_files, n_steps, output_path, model, error): `Resolved`
