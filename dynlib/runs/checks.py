"""Model and integrator health checks (what `dyn energy-check` runs).

Each check is a number compared with a tolerance:

- ``energy_drift``: free motion (zero torque, no joint friction, no contacts):
  ``max_t |E(t) - E(0)| / max(|E(0)|, max_t T(t))``, the drift of the total
  energy relative to the run's energy scale (the kinetic-energy scale when E(0)
  is near zero). With torques, friction, external wrenches or contacts (a
  scenario), it becomes the work-energy imbalance: ``E(t) - E(0) - ∫ vᵀ(M a + h) dt``,
  the power of every non-conservative generalized force integrated with Simpson's
  rule on the simulation's own samples (fourth order, like RK4). The recorded
  acceleration is the one the contact forces produced, so their work is in the
  integral; with impulse contacts (unilateral, relaxed) each step's work is
  counted with the step's mean velocity (`drift_checks`). A run that diverged,
  or that left out the scenario's contacts, fails the check. A run in which a held
  position limit acted (`dynlib.sim.joint_limits`) is a work-energy balance too, with
  the limits' work: their torque over each step (the scheme's weighted torque of its
  evaluations, `limit_work_series`), as the impulse contacts'. A limit acts within a
  step or two, and rk4 is first order across that event, so what the balance leaves on
  the steps of an event is the integrator's error there: the check keeps it apart
  (`limit_steps`, series ``limit_events``), and a run that reaches a limit is no false
  alarm;
- ``limit_work`` (when a position limit acted): the largest net work of the limits'
  torque over the run (from the start), relative to the energy scale, which must
  not be positive beyond the tolerance: a limit takes energy, it never gives it;
- ``fd_id_roundtrip``: ``max |aba(q, v, rnea(q, v, a)) - a| / max(1, |a|)`` on
  random states;
- ``mass_matrix_symmetric``: ``max |M - Mᵀ| / max |M|`` on random configurations;
- ``mass_matrix_positive_definite``: ``min λ_min(M) / λ_max(M)`` (must be > 0);
- ``coriolis_skew``: ``max |N + Nᵀ| / max |Ṁ|`` with ``N = Ṁ - 2C``, Ṁ by
  central differences along v (so its tolerance is a finite-difference one);
- ``quaternion_norm`` (free-flyer models): ``max_t | |quat(t)| - 1 |``.

The run is `dynlib.runs.scenario.run`, the one `dyn simulate` makes, keeping every
step; `dyn energy-check ROBOT` loads the robot with zero torque and its URDF joint
friction (as `dyn simulate` runs it), so the friction's work is in the balance and a
first-order friction term shows (`--no-joint-friction`: free motion). A drift that falls
below the integrator's order is put down to what the scenario has (`order_causes`:
contacts, rk4's implicit friction terms, the tanh kink, stiff PD gains, switching
wrenches, a torque table), never to a contact the scenario does not have. On the sample contact scenarios, with the default tolerance 1e-6
(tests/runs/test_checks.py, `test_sample_contact_scenarios_with_the_default_tolerance`):
contact_bilateral_standing (1.1e-7) and contact_soft_quadruped (7e-11) pass;
contact_bilateral_welded (1.3e-5: the wrench's on/off steps), contact_soft_ball
(7e-2) and contact_soft_box (3e-2: the penalty force jumps when a point touches
down, which costs RK4 its order) fail, as do the unilateral and relaxed ones
(1e-4 to 4e-3: semi-implicit Euler is first order). Where measured (the balls,
the soft box, the welded and the unilateral quadruped), the imbalance shrinks
with dt; the plain drift E(t) - E(0) of a damped contact does not (it is the
energy the contact dissipates).

The step (`energy_check`): unless the scenario or the user sets dt, the check refines
it (halving) until energy_drift passes, and says which it used; a fixed dt that fails
is rerun at dt/2 and dt/4, which tells integration error (the drift falls with the
step: the note names the step that passes) from a model or force that does not
conserve energy (the drift stays, or the motion blows up at the same time at every
step).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InputError, ScenarioError


@dataclasses.dataclass
class Check:
    name: str
    value: float
    tolerance: float
    passed: bool
    detail: str = ""

    def as_dict(self):
        return {"name": self.name, "value": _json_float(self.value), "tolerance": self.tolerance, "passed": bool(self.passed)}


@dataclasses.dataclass
class Report:
    robot: str
    checks: list
    settings: dict
    series: dict = dataclasses.field(default_factory=dict)  # time, kinetic, potential, total (for the figure)
    notes: list = dataclasses.field(default_factory=list)   # the step chosen, or the cause of a drift failure

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def as_dict(self):
        return {"robot": self.robot, "passed": self.passed, "checks": [c.as_dict() for c in self.checks],
                "settings": self.settings, "notes": list(self.notes)}


def _json_float(x):
    x = float(x)
    return x if np.isfinite(x) else None


def _check(name, value, tolerance, larger_is_better=False):
    value = float(value)
    ok = bool(np.isfinite(value) and (value > tolerance if larger_is_better else value <= tolerance))
    return Check(name, value, tolerance, ok)


def random_states(model, count, seed):
    """`count` random (q, v, a) with joint values within limits (or ±π) and v, a in [-1, 1]."""
    from ..algorithms.configuration import random_configuration

    rng = np.random.default_rng(seed)
    Q = np.array([random_configuration(model, rng) for _ in range(count)]).reshape(count, model.nq)
    V = rng.uniform(-1, 1, (count, model.nv))
    A = rng.uniform(-1, 1, (count, model.nv))
    return Q, V, A


def model_checks(model, *, samples=20, seed=0):
    """The checks that need no simulation: FD∘ID, M symmetric and PD, Ṁ - 2C skew."""
    from ..algorithms.aba import aba
    from ..algorithms.configuration import integrate
    from ..algorithms.coriolis import coriolis_matrix
    from ..algorithms.crba import crba
    from ..algorithms.rnea import rnea

    Q, V, A = random_states(model, samples, seed)
    checks = []
    tau = rnea(model, Q, V, A)
    a_back = aba(model, Q, V, tau)
    checks.append(_check("fd_id_roundtrip", np.max(np.abs(a_back - A) / np.maximum(1.0, np.abs(A))), 1e-8))
    M = crba(model, Q)
    scale = np.maximum(np.abs(M).max(axis=(1, 2)), 1e-300)
    checks.append(_check("mass_matrix_symmetric", np.max(np.abs(M - M.transpose(0, 2, 1)).max(axis=(1, 2)) / scale), 1e-12))
    ev = np.linalg.eigvalsh(0.5 * (M + M.transpose(0, 2, 1)))
    checks.append(_check("mass_matrix_positive_definite", np.min(ev[:, 0] / ev[:, -1]), 0.0, larger_is_better=True))
    eps = 1e-6
    Mp = crba(model, integrate(model, Q, eps * V))
    Mm = crba(model, integrate(model, Q, -eps * V))
    Mdot = (Mp - Mm) / (2 * eps)
    N = Mdot - 2 * coriolis_matrix(model, Q, V)
    skew_err = np.abs(N + N.transpose(0, 2, 1)).max(axis=(1, 2)) / np.maximum(np.abs(Mdot).max(axis=(1, 2)), 1.0)
    checks.append(_check("coriolis_skew", np.max(skew_err), 1e-6))
    return checks


def energy_series(model, q, v):
    """Kinetic, potential and total energy along a trajectory (rows of q, v)."""
    from ..algorithms.energy import kinetic_energy, potential_energy

    T = kinetic_energy(model, q, v)
    U = potential_energy(model, q)
    return T, U, T + U


def simpson_cumulative(t, y):
    """∫_0^t y dt at every sample, exact for cubics on uniform steps (fourth order).

    Even samples: Simpson's rule on each double step. Odd samples: the integral
    over the last step of the parabola through three neighbouring samples
    (trapezoid where the steps are not uniform).
    """
    out = np.zeros_like(y)
    n = len(t)
    if n < 2:
        return out
    h = np.diff(t)
    uniform = n >= 3 and np.allclose(h, h[0], rtol=1e-9, atol=0.0)
    if not uniform:
        out[1:] = np.cumsum(0.5 * h * (y[1:] + y[:-1]))
        return out
    h = h[0]
    even = h / 3.0 * (y[:-2:2] + 4 * y[1:-1:2] + y[2::2])
    out[2::2] = np.cumsum(even)
    # odd samples: from the even sample before, the parabola through (i-1, i, i+1) (or (i-2, i-1, i) at the end)
    odd = np.arange(1, n, 2)
    nxt = odd + 1 < n
    i = odd[nxt]
    out[i] = out[i - 1] + h / 12.0 * (5 * y[i - 1] + 8 * y[i] - y[i + 1])
    i = odd[~nxt]
    out[i] = out[i - 1] + h / 12.0 * (-y[i - 2] + 8 * y[i - 1] + 5 * y[i])
    return out


def drift_checks(model, time, q, v, a, *, tolerance, work_energy=False, impulses=False, limit=None, limit_step=None):
    """energy_drift (or the work-energy imbalance) and quaternion_norm along a simulated run.

    impulses: the run stepped velocities with contact impulses (semi-implicit Euler, `a` =
    (v_{k+1} - v_k)/dt); the work of step k is then dt ½(v_k + v_{k+1})ᵀ(M a_k + h_k), the work of
    the impulse over the velocity jump (Simpson's rule on the samples would charge an impact the
    velocity before it times the impulse, twice the energy a plastic impact takes).
    limit: (N, nv) the position limits' torque of the rows (None: no limit acted), limit_step (N, nv) their
    torque over the step from each row (`dynlib.sim.simulate.SimulationResult.limit_step`; None: `limit`):
    the limits' work in the balance (`limit_work_series`), and the ``limit_work`` check.
    """
    from ..algorithms.rnea import rnea
    from ..core.joints import FREEFLYER

    T, U, E = energy_series(model, q, v)
    scale = max(abs(E[0]), float(np.max(T)), 1e-12)
    checks, series = [], {"time": time, "kinetic": T, "potential": U, "total": E}
    acted = limit is not None and bool(np.any(limit))
    if work_energy or acted:
        forces = rnea(model, q, v, a)  # M a + h = τ + friction + Jᵀf + limit: the generalized forces but gravity
        if acted:
            forces -= limit  # the limits' share: their own work, step by step (`limit_work_series`)
        if impulses:
            step = np.einsum("ij,ij->i", 0.5 * (v[:-1] + v[1:]), forces[:-1]) * np.diff(time)
            work = np.concatenate([[0.0], np.cumsum(step)])
        else:
            work = simpson_cumulative(time, np.einsum("ij,ij->i", v, forces))
        if acted:
            step_torque = limit if limit_step is None else limit_step
            taken = limit_work_series(time, v, step_torque)
            work = work + taken
            series["limit_work"] = taken
            checks.append(_check("limit_work", max(float(np.max(taken)), 0.0) / scale, tolerance))
            checks[-1].detail = "the largest net work of the position limits' torque (they must only take energy)"
        imbalance = E - E[0] - work
        if acted:
            imbalance, series["limit_events"] = limit_steps(imbalance, limit != 0 if limit_step is None else
                                                            (limit != 0) | (step_torque != 0))
        series["work"] = work
        series["drift"] = np.abs(imbalance) / scale
        checks.insert(0, _check("energy_drift", np.max(np.abs(imbalance)) / scale, tolerance))
        checks[0].detail = "work-energy imbalance"
    else:
        series["drift"] = np.abs(E - E[0]) / scale
        checks.append(_check("energy_drift", np.max(np.abs(E - E[0])) / scale, tolerance))
    m = model.arrays
    roots = [m.idx_q[i] for i in range(model.nb) if m.jtype[i] == FREEFLYER]
    if roots:
        err = max(float(np.max(np.abs(np.linalg.norm(q[:, iq + 3:iq + 7], axis=1) - 1.0))) for iq in roots)
        checks.append(_check("quaternion_norm", err, 1e-9))
    return checks, series


def limit_work_series(time, v, step):
    """The work of the position limits' torque from the first row to each (N,): over the step from row k,
    ``dt ½(v_k + v_k+1)ᵀ Λ_k`` with Λ_k = step[k] the scheme's weighted torque over that step (Σ_s b_s λ_s,
    `dynlib.sim.simulate.SimulationResult.limit_step`). A held limit acts within a step or two
    (`dynlib.sim.joint_limits`: its torque changes between rk4's substeps), faster than the rows can sample
    its power (Simpson's rule on the rows' torque: 2e-2 of the energy off on the kuka's fall, against 6e-5
    this way); this is the kinetic energy its share of the velocity change gives, exactly for a constant
    inertia (½(v + v+)ᵀ M (v+ − v) = ΔT), as the impulse contacts' work (`drift_checks`)."""
    w = np.einsum("ij,ij->i", 0.5 * (v[:-1] + v[1:]), step[:-1]) * np.diff(time)
    return np.concatenate([[0.0], np.cumsum(w)])


def limit_steps(imbalance, acted, pad=2):
    """(imbalance without the steps of a limit event, their imbalance summed (N,)): the steps within `pad` rows
    of a row where a position limit acted (`acted` (N, nv) bool). The limits' own work is in the balance
    (`limit_work_series`); what is left on those steps is the integrator's error across the event: the limit
    torque switches within a step, and rk4 is first order there (the kuka's 2 s fall from a random state:
    3e-4 of the energy at 1 ms, 1.5e-4 at 0.5 ms, 7e-5 at 0.25 ms), which the balance of the smooth motion
    (`energy_drift`) leaves out and the report keeps (series ``limit_events``)."""
    rows = np.any(acted, axis=1)
    near = np.convolve(rows.astype(float), np.ones(2 * pad + 1), mode="same") > 0
    step = np.diff(imbalance)
    at = near[:-1] | near[1:]
    cleaned = np.concatenate([[imbalance[0]], imbalance[0] + np.cumsum(np.where(at, 0.0, step))])
    events = np.concatenate([[0.0], np.cumsum(np.where(at, step, 0.0))])
    return cleaned, events


def validate_tolerance(tolerance):
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise InputError(f"--tolerance must be a positive number, got {tolerance}")


def has_nonconservative_forces(scenario) -> bool:
    """Torques, joint friction, external wrenches or contacts: then the drift check is a work-energy balance."""
    model = scenario.model
    friction = bool(np.any(model.arrays.damping) or np.any(model.arrays.friction))  # none: zeroed at load
    return ((scenario.control.type != "zero") or friction or bool(scenario.external_wrenches)
            or scenario.contacts is not None)


def random_state(model, seed):
    """(q0, v0): joint values within their limits (or ±π), a random root pose, velocities in [-1, 1]."""
    from ..algorithms.configuration import random_configuration

    rng = np.random.default_rng(seed)
    q0, v0 = random_configuration(model, rng), rng.uniform(-1.0, 1.0, model.nv)
    c = model.coupling  # mimic joints: each follower from its leader (dynlib.sim.mimic)
    return (q0, v0) if c is None else (c.expand_q(c.reduce_q(q0)), c.expand_v(c.reduce_v(v0)))


ORDER = {"rk4": 4, "semi-implicit": 1, "euler": 1}  # the order of each integrator's energy error
FINEST = 64  # the step is refined down to dt/64 at most: at most 127 runs' worth of steps in all
CONFIRM = 16  # a fixed step that fails: the step predicted to pass is run to confirm it when >= dt/16
FALLING = 0.5  # an observed order below this is drift that does not fall with the step


@dataclasses.dataclass
class _Attempt:
    """One run of the drift check at one step."""

    dt: float
    steps: int
    checks: list
    series: dict
    diverged_at: float | None = None  # the time at which the run diverged (None: it ran to the end)

    @property
    def drift(self) -> Check:
        return self.checks[0]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def as_dict(self, previous=None):
        order = observed_order(previous, self) if previous is not None else None
        return {"dt": self.dt, "steps": self.steps, "energy_drift": _json_float(self.drift.value),
                "passed": self.passed, "observed_order": None if order is None else _json_float(order),
                "diverged_at": self.diverged_at}


def diverge_together(runs) -> bool:
    """Every run diverged, and at the same time (within the coarsest step and 5 %): the blow-up is
    the motion's, not the integrator's. A step beyond the integrator's stability limit diverges
    after about as many steps at each step (sooner in time), or later at a smaller one."""
    if not runs or any(a.diverged_at is None for a in runs):
        return False
    t = [a.diverged_at for a in runs]
    return max(t) - min(t) <= max(a.dt for a in runs) + 0.05 * max(t)


def observed_order(coarse: _Attempt, fine: _Attempt):
    """log(drift ratio) / log(step ratio) between two runs: the order at which the drift falls
    (inf when the coarse run diverged and the fine one did not; nan when both diverged)."""
    a, b = coarse.drift.value, fine.drift.value
    if not np.isfinite(a):
        return float("inf") if np.isfinite(b) else float("nan")
    if not np.isfinite(b):
        return float("-inf")
    if b <= 0:
        return float("inf")
    return float(np.log(max(a, 1e-300) / b) / np.log(coarse.dt / fine.dt))


def _nice_step(dt):
    """The largest of 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k at or below dt."""
    k = np.floor(np.log10(dt))
    for m in (8, 6, 5, 4, 3, 2.5, 2, 1.5, 1.25, 1):
        if m * 10 ** k <= dt * (1 + 1e-12):
            return float(m * 10 ** k)
    return float(10 ** k)


def _g(x):
    """A drift, or a step, in words."""
    return f"{x:.3g}"


def _s(dt):
    return f"{dt:.4g}"


def energy_check(scenario, *, tolerance=1e-6, seed=0, random_initial=False, samples=20, progress=None,
                 choose_dt=None) -> Report:
    """Run every check on a scenario (a robot file loads as a scenario with every default).

    The run is the scenario's own (`dynlib.runs.scenario.run`: its controller, friction,
    wrenches and contacts), keeping every step, over the scenario's duration.
    random_initial: start from a seeded random state (`random_state`) instead of the
    scenario's initial state.

    The step. choose_dt (default: when the scenario does not set `dt` itself, neither
    in its file nor by an override such as ``--dt``): start at the scenario's dt and
    halve it while energy_drift fails, down to dt/`FINEST` at most, and use the
    coarsest step that passes. The refinement stops early when the drift does not fall
    with the step (an observed order below `FALLING`: not integration error), when two
    runs diverge at the same time (`diverge_together`: the motion blows up, whatever
    the step), or when the drift falls and the step it extrapolates to (at the order
    observed, at most the integrator's) is finer than dt/`FINEST`. A fixed step that fails is rerun at dt/2
    and dt/4 to tell integration error (the drift falls with the step, at the
    integrator's order `ORDER` or, past a force that is not smooth, below it; the report
    names the step at which it passes, confirmed by a run when within dt/`CONFIRM`)
    from drift that does not fall (the model, or forces the check cannot balance). The
    checks reported are those of the step used (the fixed one, or the one chosen);
    `settings` gives it, whether it was fixed (``dt_fixed``), every run
    (``refinement``: dt, steps, energy_drift, passed, observed order, diverged_at), the
    cause of a drift failure (``drift_cause``: ``integration_error``,
    ``not_integration_error`` or None) and ``passing_dt``; `Report.notes` says the same
    in words.
    """
    from .scenario import initial_state
    from .scenario.load import IMPULSE_MODELS

    validate_tolerance(tolerance)
    model = scenario.model
    q0, v0 = random_state(model, seed) if random_initial else initial_state(scenario)
    work_energy = has_nonconservative_forces(scenario)
    contacts = scenario.contacts.model if scenario.contacts is not None else None
    fixed = ("dt" in scenario.model_fields_set) if choose_dt is None else not choose_dt
    duration = scenario.n_steps * scenario.dt
    simulated = []

    def attempt(dt):
        sc = scenario if dt == scenario.dt else scenario.model_copy(
            update={"dt": dt, "steps": max(1, int(round(duration / dt))), "duration": None})
        result = _run(sc, q0, v0, progress)
        sim = contacts if result.contact_force is not None else None
        simulated.append(sim)
        if result.diverged is not None:
            checks, series = [Check("energy_drift", float("inf"), tolerance, False, result.diverged.message)], {}
        elif sim != contacts:  # a run that left the contacts out checked nothing about them
            checks, series = [Check("energy_drift", float("inf"), tolerance, False,
                                    f"the scenario's {contacts} contacts were not simulated")], {}
        else:
            checks, series = drift_checks(model, result.time, result.q, result.v, result.a, tolerance=tolerance,
                                          work_energy=work_energy, impulses=sim in IMPULSE_MODELS,
                                          limit=result.limit, limit_step=result.limit_step)
            solver = result.contact_solver
            if solver and solver["steps_not_converged"]:
                checks[0].detail += (f"; the contact solver stopped on its iteration limit at "
                                     f"{solver['steps_not_converged']} steps")
        return _Attempt(dt, sc.n_steps, checks, series, None if result.diverged is None else result.diverged.time)

    step = _StepSearch(scenario, attempt, tolerance, fixed, ORDER[scenario.integrator],
                       order_causes(scenario, q0, scenario.dt))
    used = step.run()
    checks = list(used.checks) + model_checks(model, samples=samples, seed=seed)
    settings = {
        "source": scenario.source or scenario.robot, "duration": used.steps * used.dt, "dt": used.dt,
        "steps": used.steps, "integrator": scenario.integrator, "tolerance": tolerance,
        "seed": seed if random_initial else None, "random_initial": bool(random_initial),
        "work_energy_balance": bool(work_energy) or "limit_work" in used.series,
        "contacts": simulated[step.attempts.index(used)],
        "floating_base": bool(model.has_floating_base),
        "gravity": [float(g) for g in model.arrays.gravity],
        "q0": [float(x) for x in q0], "v0": [float(x) for x in v0],
        "dt_fixed": bool(fixed),
        "refinement": [a.as_dict(step.attempts[i - 1] if i else None) for i, a in enumerate(step.attempts)],
        "drift_cause": step.cause, "passing_dt": step.passing_dt,
    }
    return Report(robot=model.name, checks=checks, settings=settings, series=used.series, notes=step.notes)


def order_causes(scenario, q0, dt) -> str:
    """In words, what in the scenario can make the drift fall below the integrator's order: its contacts,
    rk4's implicit friction terms (`dynlib.sim.simulate.friction_steps`: first order, or order 3), the tanh kink of
    Coulomb friction, stiff PD gains under rk4, switching wrenches or torque tables; "" when none."""
    from ..sim import controllers as C
    from ..sim.simulate import friction_steps
    from .scenario.run import controller

    model, m, causes = scenario.model, scenario.model.arrays, []
    damping, friction = np.asarray(m.damping, float), np.asarray(m.friction, float)
    eps = scenario.friction_smoothing
    if scenario.contacts is not None:
        causes.append(f"the {scenario.contacts.model} contacts (a point touching down or lifting off)")
    if scenario.integrator == "rk4":
        implicit = scenario.friction_integration == "implicit" and bool(np.any(damping) or np.any(friction))
        import warnings

        with warnings.catch_warnings():  # the run itself says it
            warnings.simplefilter("ignore")
            steps = friction_steps(model, q0, dt, "rk4", damping, friction, eps, implicit)
        for words, which in (("implicit friction", (steps > 0) & (friction != 0)),
                             ("Rosenbrock-W damping", (steps > 0) & (friction == 0))):
            if np.any(which):
                names = ", ".join(n for n, x in zip(model.v_names, which) if x)
                order = "first order" if words == "implicit friction" else "order 3"
                causes.append(f"rk4's {words} on {names} (stiff at dt = {dt:g} s: {order} in that term)")
        params = controller(scenario).params(model, q0, (damping, friction, eps))
        if isinstance(params, C.PDParams):
            from ..algorithms.crba import crba

            diag = np.diag(crba(model, q0))
            stiff = [n for k, n in enumerate(model.v_names) if diag[k] > 0 and (params.kp[k] > 0 or params.kd[k] > 0)
                     and not C._rk4_stable(float(params.kp[k]), float(params.kd[k]), float(diag[k]), dt)]
            if stiff:
                causes.append(f"the PD gains on {', '.join(stiff)} (stiff for rk4 at dt = {dt:g} s)")
    if np.any(friction):
        names = ", ".join(n for n, f in zip(model.v_names, friction) if f)
        causes.append(f"the Coulomb friction's tanh kink on {names} (friction_smoothing {eps:g})")
    if any(w.start > 0 or np.isfinite(w.stop) for w in scenario.external_wrenches):
        causes.append("external wrenches switching on or off")
    if scenario.control.type == "csv":
        causes.append("the torque table's steps")
    return "; ".join(causes)


def _run(sc, q0, v0, progress):
    from .scenario import run

    return run(sc, initial=(q0, v0), every=1, energy=False, progress=progress)


class _StepSearch:
    """The step of the drift check: chosen by refinement, or the user's, with the cause of a failure."""

    def __init__(self, scenario, attempt, tolerance, fixed, order, causes=""):
        self.scenario, self.attempt, self.tolerance, self.fixed, self.order = scenario, attempt, tolerance, fixed, order
        self.causes = causes  # what in the scenario may cost the integrator its order (`order_causes`)
        self.name = f"{scenario.integrator} (order {order})"
        self.attempts, self.notes = [], []
        self.cause, self.passing_dt = None, None

    def _try(self, dt):
        """The run at `dt`; None when it cannot run (a step count beyond this machine's memory)."""
        try:
            a = self.attempt(dt)
        except ScenarioError:
            if not self.attempts:
                raise
            return None
        self.attempts.append(a)
        return a

    @staticmethod
    def _history(runs):
        return ", ".join(f"{_g(a.drift.value) if np.isfinite(a.drift.value) else 'diverged'} at {_s(a.dt)} s"
                         for a in runs)

    def _predict(self, a, order):
        """The step at which the drift of `a` would fall to half the tolerance, at `order`."""
        return a.dt * (0.5 * self.tolerance / a.drift.value) ** (1.0 / order)

    def _trend(self, runs):
        """How the drift falls over the last three runs (a 4x span: one pair can be noise where forces
        switch, a contact touching down at another sample): ('flat' | 'slow' | 'order', observed order)."""
        if len(runs) < 2:
            return None, float("nan")
        order = observed_order(runs[-min(3, len(runs))], runs[-1])
        if not np.isfinite(runs[-1].drift.value) or not order >= FALLING:  # nan too
            return "flat", order
        return ("order" if order >= 0.75 * self.order else "slow"), order

    def _falls(self, trend, order, runs):
        """The words for a drift that falls with the step."""
        text = f"the drift falls with the step ({self._history(runs)})"
        if trend == "slow":
            text += f", at order {order:.2g}, below {self.name}'s: {self._slow_cause()}"
        return text

    def _slow_cause(self):
        if self.causes:
            return f"{self.causes} costs the integrator its order"
        return ("the scenario has no contact, friction, switching force or stiff gain that would cost it its order: "
                "the steps tried are not yet small enough for the integrator's asymptotic order")

    def _diverged(self, runs, span):
        """Every run diverged: the words, and the cause (the motion's blow-up or the integrator's)."""
        times = ", ".join(f"t = {a.diverged_at:.4g} s at {_s(a.dt)} s" for a in runs)
        if diverge_together(runs):
            self.cause = "not_integration_error"
            return (f"the run diverges at the same time at every step tried, {span} ({times}): a smaller step "
                    f"does not delay it, the motion itself blows up ({self.name})")
        self.cause = "integration_error"
        return (f"the run diverges at every step tried, {span}, at times that move with the step ({times}): "
                f"the step is beyond the stability limit of {self.name}")

    def run(self) -> _Attempt:
        first = self._try(self.scenario.dt)
        if first.drift.passed:
            self.passing_dt = first.dt
            if not self.fixed:
                self.notes.append(f"dt = {_s(first.dt)} s chosen: energy_drift passes at the scenario's step "
                                  f"with {self.name} (--dt fixes the step)")
            return first
        if "not simulated" in first.drift.detail:  # no other step changes that
            return first
        return self._diagnose_fixed(first) if self.fixed else self._refine(first)

    # -- the user's step ----------------------------------------------------------------
    def _diagnose_fixed(self, first):
        dt = first.dt
        runs = [first]
        for k in (2, 4):
            a = self._try(dt / k)
            if a is None:
                break
            runs.append(a)
        if len(runs) < 2:
            return first
        head = f"energy_drift fails at dt = {_s(dt)} s"
        if all(a.diverged_at is not None for a in runs):
            words = self._diverged(runs, "dt, dt/2 and dt/4" if len(runs) == 3 else "dt and dt/2")
            tail = (". The model, or a force of the scenario, makes the motion blow up (see the other checks)"
                    if self.cause == "not_integration_error" else
                    ". Give a much smaller --dt (without --dt energy-check chooses the step), or an integrator "
                    "with a larger stability region")
            self.notes.append(f"{head}, {'and not ' if self.cause == 'not_integration_error' else ''}because of "
                              f"the time step: {words}{tail}")
            return first
        trend, order = self._trend(runs)
        passing = next((a for a in runs[1:] if a.drift.passed), None)
        if passing is None and trend == "flat":
            self.cause = "not_integration_error"
            self.notes.append(
                f"{head}, and not because of the time step: the drift does not fall with a smaller step "
                f"({self._history(runs)}; {self.name}). The model, or a force of the scenario that the balance "
                "cannot account for, does not conserve energy (see the other checks)")
            return first
        self.cause = "integration_error"
        guess = None
        if passing is None:
            guess = _nice_step(self._predict(runs[-1], min(order, self.order)))
            confirm = self._try(guess) if guess >= dt / CONFIRM else None
            if confirm is not None and confirm.drift.passed:
                passing = confirm
        if passing is not None:
            self.passing_dt = passing.dt
            where = f"it passes at dt = {_s(passing.dt)} s ({_g(passing.drift.value)})"
        else:
            where = f"it would pass at about dt = {_s(guess)} s ({dt / guess:.3g} times the steps)"
        self.notes.append(
            f"{head} because of the time step: integration error of {self.name}; "
            f"{self._falls(trend, order, runs)}; {where}. Give a smaller --dt (without --dt energy-check "
            "chooses the step), or a higher-order integrator")
        return first

    # -- a step chosen by refinement -------------------------------------------------------
    def _refine(self, first):
        dt0, runs = first.dt, [first]
        while not runs[-1].drift.passed:
            trend, order = self._trend(runs)
            if trend == "flat" and np.isfinite(runs[-1].drift.value):
                break  # not integration error
            if diverge_together(runs[-2:]) and len(runs) >= 2:
                break  # the motion blows up, at whatever step
            if trend in ("order", "slow") and self._predict(runs[-1], min(order, self.order)) < dt0 / FINEST / 2:
                break  # integration error beyond the finest step tried, at the order observed
            if runs[-1].dt / 2 < dt0 / FINEST * (1 - 1e-9):
                break
            a = self._try(runs[-1].dt / 2)
            if a is None:
                break
            runs.append(a)
        last = runs[-1]
        history = self._history(runs)
        if last.drift.passed:
            self.passing_dt = last.dt
            trend, order = self._trend(runs)
            slow = (f" (falling at order {order:.2g}, below {self.name}'s: {self._slow_cause()})"
                    if trend == "slow" else "")
            self.notes.append(f"dt = {_s(last.dt)} s chosen: energy_drift {history} with {self.name}{slow}; the "
                              "coarsest step tried that passes (--dt fixes the step)")
            return last
        span = f"from {_s(dt0)} s to {_s(last.dt)} s"
        if all(a.diverged_at is not None for a in runs[-2:]) and len(runs) >= 2:
            words = self._diverged(runs[-2:] if diverge_together(runs[-2:]) else runs, span)
            self.notes.append(
                f"energy_drift fails, {'and not ' if self.cause == 'not_integration_error' else ''}because of the "
                f"time step: {words}"
                + (". The model, or a force of the scenario, makes the motion blow up (see the other checks)"
                   if self.cause == "not_integration_error" else
                   f", down to dt/{FINEST}. Give a much smaller --dt, or an integrator with a larger stability "
                   "region"))
            return first if self.cause == "not_integration_error" else last
        trend, order = self._trend(runs)
        if trend == "flat" or trend is None:
            self.cause = "not_integration_error"
            self.notes.append(
                f"energy_drift fails, and not because of the time step: the drift does not fall with a smaller "
                f"step ({history}); {self.name}. The model, or a force of the scenario that the balance cannot "
                "account for, does not conserve energy (see the other checks)")
            return first  # a smaller step changes nothing: the checks at the scenario's step
        self.cause = "integration_error"
        guess = _nice_step(self._predict(last, min(order, self.order)))
        self.notes.append(
            f"energy_drift fails because of the time step: integration error of {self.name}; "
            f"{self._falls(trend, order, runs)}; it would pass at about dt = {_s(guess)} s, finer than "
            f"energy-check tries (dt/{FINEST}). Give that --dt, or a higher-order integrator")
        return last
