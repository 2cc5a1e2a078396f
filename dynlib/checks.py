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
  or that left out the scenario's contacts, fails the check;
- ``fd_id_roundtrip``: ``max |aba(q, v, rnea(q, v, a)) - a| / max(1, |a|)`` on
  random states;
- ``mass_matrix_symmetric``: ``max |M - Mᵀ| / max |M|`` on random configurations;
- ``mass_matrix_positive_definite``: ``min λ_min(M) / λ_max(M)`` (must be > 0);
- ``coriolis_skew``: ``max |N + Nᵀ| / max |Ṁ|`` with ``N = Ṁ - 2C``, Ṁ by
  central differences along v (so its tolerance is a finite-difference one);
- ``quaternion_norm`` (free-flyer models): ``max_t | |quat(t)| - 1 |``.

The run is `dynlib.scenario.run`, the one `dyn simulate` makes, keeping every
step. On the sample contact scenarios, with the default tolerance 1e-6
(tests/test_checks.py, `test_sample_contact_scenarios_with_the_default_tolerance`):
contact_bilateral_standing (1.1e-7) and contact_soft_quadruped (7e-11) pass;
contact_bilateral_welded (1.3e-5: the wrench's on/off steps), contact_soft_ball
(7e-2) and contact_soft_box (3e-2: the penalty force jumps when a point touches
down, which costs RK4 its order) fail, as do the unilateral and relaxed ones
(1e-4 to 4e-3: semi-implicit Euler is first order). Where measured (the balls,
the soft box, the welded and the unilateral quadruped), the imbalance shrinks
with dt; the plain drift E(t) - E(0) of a damped contact does not (it is the
energy the contact dissipates).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .errors import InputError


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

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def as_dict(self):
        return {"robot": self.robot, "passed": self.passed, "checks": [c.as_dict() for c in self.checks],
                "settings": self.settings}


def _json_float(x):
    x = float(x)
    return x if np.isfinite(x) else None


def _check(name, value, tolerance, larger_is_better=False):
    value = float(value)
    ok = bool(np.isfinite(value) and (value > tolerance if larger_is_better else value <= tolerance))
    return Check(name, value, tolerance, ok)


def random_states(model, count, seed):
    """`count` random (q, v, a) with joint values within limits (or ±π) and v, a in [-1, 1]."""
    from .algorithms.configuration import random_configuration

    rng = np.random.default_rng(seed)
    Q = np.array([random_configuration(model, rng) for _ in range(count)]).reshape(count, model.nq)
    V = rng.uniform(-1, 1, (count, model.nv))
    A = rng.uniform(-1, 1, (count, model.nv))
    return Q, V, A


def model_checks(model, *, samples=20, seed=0):
    """The checks that need no simulation: FD∘ID, M symmetric and PD, Ṁ - 2C skew."""
    from .algorithms.aba import aba
    from .algorithms.configuration import integrate
    from .algorithms.coriolis import coriolis_matrix
    from .algorithms.crba import crba
    from .algorithms.rnea import rnea

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
    from .algorithms.energy import kinetic_energy, potential_energy

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


def drift_checks(model, time, q, v, a, *, tolerance, work_energy=False, impulses=False):
    """energy_drift (or the work-energy imbalance) and quaternion_norm along a simulated run.

    impulses: the run stepped velocities with contact impulses (semi-implicit Euler, `a` =
    (v_{k+1} - v_k)/dt); the work of step k is then dt ½(v_k + v_{k+1})ᵀ(M a_k + h_k), the work of
    the impulse over the velocity jump (Simpson's rule on the samples would charge an impact the
    velocity before it times the impulse, twice the energy a plastic impact takes).
    """
    from .algorithms.rnea import rnea
    from .joints import FREEFLYER

    T, U, E = energy_series(model, q, v)
    scale = max(abs(E[0]), float(np.max(T)), 1e-12)
    checks, series = [], {"time": time, "kinetic": T, "potential": U, "total": E}
    if work_energy:
        forces = rnea(model, q, v, a)  # M a + h = τ + friction + Jᵀf: the generalized forces but gravity
        if impulses:
            step = np.einsum("ij,ij->i", 0.5 * (v[:-1] + v[1:]), forces[:-1]) * np.diff(time)
            work = np.concatenate([[0.0], np.cumsum(step)])
        else:
            work = simpson_cumulative(time, np.einsum("ij,ij->i", v, forces))
        imbalance = E - E[0] - work
        series["work"] = work
        series["drift"] = np.abs(imbalance) / scale
        checks.append(_check("energy_drift", np.max(np.abs(imbalance)) / scale, tolerance))
        checks[-1].detail = "work-energy imbalance"
    else:
        series["drift"] = np.abs(E - E[0]) / scale
        checks.append(_check("energy_drift", np.max(np.abs(E - E[0])) / scale, tolerance))
    m = model.arrays
    roots = [m.idx_q[i] for i in range(model.nb) if m.jtype[i] == FREEFLYER]
    if roots:
        err = max(float(np.max(np.abs(np.linalg.norm(q[:, iq + 3:iq + 7], axis=1) - 1.0))) for iq in roots)
        checks.append(_check("quaternion_norm", err, 1e-9))
    return checks, series


def validate_tolerance(tolerance):
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise InputError(f"--tolerance must be a positive number, got {tolerance}")


def has_nonconservative_forces(scenario) -> bool:
    """Torques, joint friction, external wrenches or contacts: then the drift check is a work-energy balance."""
    from .scenario import ZeroControl

    model = scenario.model
    friction = scenario.joint_friction != "none" and bool(np.any(model.arrays.damping) or np.any(model.arrays.friction))
    return ((not isinstance(scenario.control, ZeroControl)) or friction or bool(scenario.external_wrenches)
            or scenario.contacts is not None)


def random_state(model, seed):
    """(q0, v0): joint values within their limits (or ±π), a random root pose, velocities in [-1, 1]."""
    from .algorithms.configuration import random_configuration

    rng = np.random.default_rng(seed)
    q0 = random_configuration(model, rng)
    return q0, rng.uniform(-1.0, 1.0, model.nv)


def energy_check(scenario, *, tolerance=1e-6, seed=0, random_initial=False, samples=20, progress=None) -> Report:
    """Run every check on a scenario (a robot file loads as a scenario with every default).

    The run is the scenario's own (`dynlib.scenario.run`: its controller, friction,
    wrenches and contacts), keeping every step. random_initial: start from a seeded
    random state (`random_state`) instead of the scenario's initial state.
    """
    from .scenario import initial_state, run
    from .scenario.load import IMPULSE_MODELS

    validate_tolerance(tolerance)
    model = scenario.model
    q0, v0 = random_state(model, seed) if random_initial else initial_state(scenario)
    work_energy = has_nonconservative_forces(scenario)
    result = run(scenario, initial=(q0, v0), every=1, energy=False, progress=progress)
    contacts = scenario.contacts.model if scenario.contacts is not None else None
    simulated = contacts if result.contact_force is not None else None
    series = {}
    if result.diverged is not None:
        checks = [Check("energy_drift", float("inf"), tolerance, False, result.diverged.message)]
    elif simulated != contacts:  # a run that left the contacts out checked nothing about them
        checks = [Check("energy_drift", float("inf"), tolerance, False,
                        f"the scenario's {contacts} contacts were not simulated")]
    else:
        checks, series = drift_checks(model, result.time, result.q, result.v, result.a, tolerance=tolerance,
                                      work_energy=work_energy, impulses=simulated in IMPULSE_MODELS)
        solver = result.contact_solver
        if solver and solver["steps_not_converged"]:
            checks[0].detail += (f"; the contact solver stopped on its iteration limit at "
                                 f"{solver['steps_not_converged']} steps")
    checks += model_checks(model, samples=samples, seed=seed)
    settings = {
        "source": scenario.source or scenario.robot, "duration": scenario.n_steps * scenario.dt, "dt": scenario.dt,
        "steps": scenario.n_steps, "integrator": scenario.integrator, "tolerance": tolerance,
        "seed": seed if random_initial else None, "random_initial": bool(random_initial),
        "work_energy_balance": bool(work_energy), "contacts": simulated,
        "floating_base": bool(model.has_floating_base),
        "gravity": [float(g) for g in model.arrays.gravity],
        "q0": [float(x) for x in q0], "v0": [float(x) for x in v0],
    }
    return Report(robot=model.name, checks=checks, settings=settings, series=series)
