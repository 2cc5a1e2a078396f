"""Running a validated scenario: the one place that turns a scenario into a `simulate` call.

`run(scenario)` builds the controller, the external wrenches and the contact
block once, from what loading checked and kept, and calls
`dynlib.sim.simulate.simulate` with every field the scenario sets. `dyn simulate`,
`dyn energy-check` and the `dyn sweep` worker all run scenarios through it; what
differs between them is an argument here (the initial state, the rows kept,
the energy columns), not a second copy of the call.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ...errors import InputError
from ...files.output import memory_shortfall
from .load import gain_table, initial_q, initial_v, target_table, torque_table

if TYPE_CHECKING:
    from .schema import Scenario

SCENARIO_KEYS = {"contacts": "contacts", "controller": "control", "external_wrenches": "external_wrenches"}
"""The scenario block behind each `simulate` argument that `run` builds (`InputError.argument`)."""


def initial_state(sc):
    """(q0, v0) of the scenario: named coordinates set, the rest at zero, the root at the identity."""
    return initial_q(sc), initial_v(sc)


def controller(sc):
    """The dynlib.sim.controllers object of the scenario's `control:` block (by its type: a block of
    `schema` or of `plain`)."""
    from ...sim import controllers as C

    c = sc.control
    if c.type == "zero":
        return C.Zero()
    if c.type == "constant":
        return C.Constant(c.tau)
    if c.type == "csv":
        return C.TorqueTable(*torque_table(sc))
    if c.type == "pd":
        return C.PD(kp=c.kp, kd=c.kd, target=c.target, gravity_compensation=c.gravity_compensation)
    if c.type == "gravity-compensation":
        return C.GravityCompensation()
    if c.type == "state-feedback":
        inputs, K = gain_table(sc)
        return C.StateFeedback(K, inputs, target={"q": c.target.q, "qd": c.target.qd}, tau=c.tau)
    if c.target.file is not None:
        target = C.TargetTable(*target_table(sc))
    else:
        s = c.target.sinusoids
        target = C.Sinusoids(amplitude={k: v.amplitude for k, v in s.items()},
                             frequency={k: v.frequency for k, v in s.items()},
                             phase={k: v.phase for k, v in s.items()},
                             offset={k: v.offset for k, v in s.items() if v.offset is not None})
    return C.ComputedTorque(kp=c.kp, kd=c.kd, target=target)


def external_wrenches(sc) -> list:
    """The scenario's `external_wrenches:` as `dynlib.sim.simulate.ExternalWrench` objects."""
    from ...sim.simulate import ExternalWrench

    return [ExternalWrench(w.frame, tuple(w.wrench), w.start, w.stop) for w in sc.external_wrenches]


def contacts(sc):
    """The `contacts:` block as `simulate(contacts=...)` takes it: a dict of the keys the scenario
    gives (model, points, ground, parameters by their scenario names), None without one; `simulate`
    builds the contact model from it with its own defaults."""
    return None if sc.contacts is None else sc.contacts.model_dump(exclude_none=True)


def run_bytes(sc, model, every=None, energy=None) -> int:
    """The bytes a run of `sc` allocates for its trajectory, as measured (tests/test_faults.py): the
    recorded rows (time, q, v, a, tau, the limit torques and their step weights when held, the energy when computed), then the
    written columns (`output.columns`) once: the column-major table `SimulationResult.table` builds, which
    the writer's Arrow table reads without a copy. What does not grow with the run (the interpreter, the kernels, the CSV
    writer's blocks in flight) is not counted, nor are contact forces (their points are known only
    to the run)."""
    steps, every = sc.n_steps, every or sc.output.every
    energy = ("energy" in sc.output.columns) if energy is None else bool(energy)
    recorded = 1 + model.nq + (5 if sc.limits.position else 3) * model.nv + (3 if energy else 0)  # + limit, limit_step
    width = {"q": model.nq, "qd": model.nv, "qdd": model.nv, "tau": model.nv, "energy": 3, "limits": model.nv}
    written = 1 + sum(width.get(part, 0) for part in sc.output.columns)
    return (steps // every + 1) * (recorded + written) * 8


def check_run_size(sc, model, every=None, energy=None):
    """A step count that cannot run (beyond 2**53) or whose trajectory cannot fit in this machine's
    memory (`run_bytes`) is an error at the key that set it (steps, or dt for a duration), not an
    allocation failure."""
    steps, every = sc.n_steps, every or sc.output.every
    need = run_bytes(sc, model, every, energy)
    over = memory_shortfall(need) or (None if steps <= 2 ** 53 else f"{need / 1e9:.3g} GB")
    if over:
        key = "steps" if sc.steps is not None else "dt"
        raise sc.error(key, f"{steps:.3g} steps ({steps // every + 1:.3g} rows kept): the trajectory needs {over}; "
                            "use fewer steps, a larger dt or output.every")


def run(sc: Scenario, *, initial=None, every=None, energy=None, progress=None):
    """Simulate the scenario: `dynlib.sim.simulate.simulate` with everything it sets.

    initial: (q0, v0) to start from instead of the scenario's `initial:` (energy-check's
    seeded random state). every: keep one row in `every` (default: output.every).
    energy: compute the energy columns (default: whether output.columns lists them).
    progress: progress(done, total) between chunks of a long run.

    An input error the simulation finds in an argument built from the scenario (a
    contact setup that does not fit the robot, a controller that does not) is a
    ScenarioError at the block behind that argument (`SCENARIO_KEYS`).
    Returns the `dynlib.sim.simulate.SimulationResult`.
    """
    from ...sim.simulate import simulate  # not at import: loading a scenario needs no numba

    model = sc.model
    every = sc.output.every if every is None else every
    check_run_size(sc, model, every, energy)
    q0, v0 = initial_state(sc) if initial is None else initial
    with _named(sc):
        return simulate(model, q0, v0, dt=sc.dt, steps=sc.n_steps, friction_smoothing=sc.friction_smoothing,
                        every=every, max_state=sc.max_state, progress=progress, **_stages(sc, energy))


def _stages(sc, energy):
    """`simulate`'s arguments that choose the pipeline's stages (controller, contacts, ...), from the scenario.
    The joint friction is the model's (`joint_friction: none` and the overrides are applied to it once, when
    the scenario is loaded)."""
    return dict(integrator=sc.integrator, controller=controller(sc), external_wrenches=external_wrenches(sc),
                friction_integration=sc.friction_integration,
                limits={"position": sc.limits.position, "effort": sc.limits.effort},
                energy=("energy" in sc.output.columns) if energy is None else bool(energy), contacts=contacts(sc))


@contextlib.contextmanager
def _named(sc):
    """An InputError about an argument built from the scenario, as a ScenarioError at its block."""
    try:
        yield
    except InputError as exc:
        key = SCENARIO_KEYS.get(exc.argument)
        if key is None or exc.file:
            raise
        raise sc.error(key, exc.message) from None


run_scenario = run  # the name dynlib exports
