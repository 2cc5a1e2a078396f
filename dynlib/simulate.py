"""Forward-dynamics simulation: one compiled loop from an initial state, with a controller.

`simulate(model, q0, v0, dt=..., steps=...)` integrates the rigid-body dynamics
(`dynlib.integrators`: euler, semi-implicit, rk4) under a controller
(`dynlib.controllers`), joint friction (SPEC §2) and external wrenches, and
returns a `SimulationResult`: rows at t = 0, K dt, 2 K dt, … (``every = K``;
``steps // K + 1`` rows) of

- ``q`` (nq), ``v`` (nv): the state at that time;
- ``a`` (nv): the acceleration at that state, ``FD(q, v, tau + friction, f_ext)``
  (explicit, whatever the friction integration), so that inverse dynamics on the
  rows gives back ``tau`` (with contacts, plus the contact forces' ``Jᵀ f``);
- ``tau`` (nv): the controller's motor torque at that time (joint friction not included);
- ``energy`` (3): kinetic, potential, total (when asked);
- with ``contacts``: ``contact_force`` (nc, 3), the world force on each contact
  point (the ``contact.<name>.fx fy fz tx ty tz`` columns, torques zero: point
  contacts), and ``penetration`` (nc), the depth below the ground (> 0 inside).

Contact models (`dynlib.contact`): ``soft`` adds its forces to the body wrenches
of every right-hand side evaluation (any integrator); ``bilateral`` replaces the
ABA by the constrained dynamics (Schur complement of the KKT system) at every
stage; ``unilateral`` and ``relaxed`` step velocities with impulses (PGS) and
need the ``semi-implicit`` integrator, whose acceleration is then ``(v+ − v)/dt``
(`result.contact_solver` reports steps where PGS stopped on its iteration limit).

The whole time loop runs in `_run` (numba): per step, the controller, the
generalized forces (contact included) and the forward dynamics, the scheme's
stages, and a divergence check. Long runs are cut into chunks of about 1 % of the steps so
that a progress callback can report between them (nothing in Python per step).

Divergence: a non-finite acceleration or state, or a coordinate or velocity
beyond `max_state` in absolute value, stops the run; the rows up to the last
finite state are kept and `result.diverged` says at which step and time.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .compiled import jit
from . import controllers as C
from . import integrators as I
from .algorithms.aba import aba_kernel, check_dynamics
from .algorithms.crba import crba_kernel
from .algorithms.energy import kinetic_kernel, potential_after_placements
from .algorithms.kinematics import motion, placements
from .algorithms.rnea import rnea_kernel
from .contact import points as CP
from .contact.bilateral import bilateral_accel
from .contact.soft import soft_forces
from .contact.unilateral import impulse_accel
from .errors import InputError, NumericalError

_jit = jit()

# divergence reasons
NONFINITE_ACCELERATION = 1
NONFINITE_STATE = 2
BEYOND_MAX_STATE = 3
SINGULAR = 4
REASONS = {
    NONFINITE_ACCELERATION: "the acceleration is not finite (NaN or Inf)",
    NONFINITE_STATE: "the state is not finite (NaN or Inf)",
    BEYOND_MAX_STATE: "a coordinate or velocity exceeds max_state",
    SINGULAR: "the mass matrix plus the implicit friction term (or the contact Delassus matrix) is not "
              "positive definite",
}

CHUNKED_ABOVE = 20_000  # steps: below this, one compiled call (Ctrl-C waits for it)


@_jit
def _bad_state(q, v, max_state):
    """0 if (q, v) is finite and within max_state, else the reason code."""
    for x in q:
        if not math.isfinite(x):
            return NONFINITE_STATE
        if abs(x) > max_state:
            return BEYOND_MAX_STATE
    for x in v:
        if not math.isfinite(x):
            return NONFINITE_STATE
        if abs(x) > max_state:
            return BEYOND_MAX_STATE
    return 0


@_jit
def _finite(x):
    for y in x:
        if not math.isfinite(y):
            return False
    return True


@jit
def _run(m, d, c, fo, ct, w, scheme, dt, k0, k1, steps, every, max_state, want_energy,
         q, v, out_t, out_q, out_v, out_a, out_tau, out_e, out_f, out_p, row):
    """Steps k0 <= k < k1 (state k in q, v on entry; state k1 on exit), recording rows.

    At each k: the scheme's stages (stage 1 is the state k itself), a row when
    k % every == 0, then the step to k + 1 unless k == steps. Returns (rows written,
    step of divergence or -1, reason). The right-hand side is written out here, not
    in a function of its own: see `dynlib.integrators` (a call that takes the
    model and workspace costs as much as the ABA).
    """
    jtype, idx_q, idx_v, nvj = m.jtype, m.idx_q, m.idx_v, m.nvj
    tau, tau_total, fext = w.tau, w.tau_total, w.fext
    for k in range(k0, k1):
        t = k * dt
        for s in range(I.stages(scheme)):
            # the stage's state: (q, v) itself first, then q ⊕ c_s dt k_{s-1}, v + c_s dt a_{s-1}
            if s == 0:
                w.qs[:] = q
                w.vs[0, :] = v
                w.ks[0, :] = v
            else:
                I.stage_state(jtype, idx_q, idx_v, nvj, I.NODES[s] * dt, q, v, w.ks[s - 1], w.acc[s - 1],
                              w.xi, w.qs, w.vs[s])
            ts, qs, vs, a = t + I.NODES[s] * dt, w.qs, w.vs[s], w.acc[s]
            # 1. motor torque: open loop, or RNEA(q, v_r, a_r) + the controller's own terms
            if c.code < C.FEEDBACK:
                C.open_loop(c.code, c.tau, c.times, c.values, ts, tau)
            else:
                need = C.reference(c, jtype, idx_q, idx_v, ts, qs, vs)
                if need == C.RNEA_NONE:
                    tau[:] = 0.0
                elif need == C.RNEA_STATIC:
                    rnea_kernel(m, d, qs, d.zeros_v, d.zeros_v, c.fext0, m.gravity, tau)
                else:
                    rnea_kernel(m, d, qs, vs, c.wv[2], c.fext0, m.gravity, tau)
                C.feedback(c, fo.damping, fo.friction, fo.eps, jtype, idx_q, idx_v, qs, vs, tau)
            # 2. generalized forces, all here: joint friction, external wrenches, soft contact forces
            I.passive_forces(fo.damping, fo.friction, fo.eps, vs, tau, tau_total)
            if fo.wrench_body.shape[0] > 0 or ct.code == CP.SOFT:
                placements(m, d, qs)
                I.wrench_forces(d.oR, fo.wrench_body, fo.wrench_p, fo.wrench, fo.wrench_start, fo.wrench_stop,
                                ts, fext)
                if ct.code == CP.SOFT:
                    soft_forces(d.oR, d.op, m.S, m.parent, idx_v, nvj, ct.body, ct.p, ct.radius, ct.normal,
                                ct.height, ct.stiffness, ct.damping, ct.friction, ct.slip, vs,
                                ct.x, ct.pen, ct.force, ct.Jp, fext)
            # 3. forward dynamics; with implicit friction (M + dt B) a = tau_total - (h - J^T f_ext)
            if ct.code == CP.BILATERAL:  # with the points' equality constraints (dynlib.contact.bilateral)
                crba_kernel(m, d, qs, d.M)
                if fo.implicit_dt > 0.0:
                    I.add_friction_jacobian(d.M, fo.damping, fo.friction, fo.eps, fo.implicit_dt, vs)
                rnea_kernel(m, d, qs, vs, d.zeros_v, fext, m.gravity, d.h)
                placements(m, d, qs)
                motion(m, d, vs, d.zeros_v, ct.zero6)
                for j in range(a.shape[0]):
                    ct.tau_h[j] = tau_total[j] - d.h[j]
                if not bilateral_accel(d.oR, d.op, m.S, m.parent, idx_v, nvj, d.v, d.a, ct.body, ct.p, ct.radius,
                                       ct.normal, ct.height, ct.target, ct.gains[0], ct.gains[1], d.M, d.L,
                                       ct.tau_h, vs, ct.x, ct.pen, ct.force, ct.Jc, ct.Y, ct.D, ct.DL, ct.gam,
                                       ct.lam, ct.bias, a):
                    return row, (k if s == 0 else k + 1), SINGULAR
            elif ct.code >= CP.UNILATERAL:  # time stepping with contact impulses (dynlib.contact.unilateral)
                crba_kernel(m, d, qs, d.M)
                if fo.implicit_dt > 0.0:
                    I.add_friction_jacobian(d.M, fo.damping, fo.friction, fo.eps, fo.implicit_dt, vs)
                rnea_kernel(m, d, qs, vs, d.zeros_v, fext, m.gravity, d.h)
                placements(m, d, qs)
                for j in range(a.shape[0]):
                    ct.tau_h[j] = tau_total[j] - d.h[j]
                if not impulse_accel(d.oR, d.op, m.S, m.parent, idx_v, nvj, ct.body, ct.p, ct.radius, ct.frame,
                                     ct.height, ct.code == CP.RELAXED, ct.friction, ct.solver[2], ct.gains,
                                     ct.solver[0], int(ct.solver[1]), dt, d.M, d.L, ct.tau_h, vs, ct.x, ct.pen,
                                     ct.force, ct.Jp, ct.Jc, ct.Y, ct.D, ct.Rg, ct.wv, ct.vt, ct.active, ct.lam,
                                     ct.stats, a):
                    return row, (k if s == 0 else k + 1), SINGULAR
            elif fo.implicit_dt > 0.0:
                crba_kernel(m, d, qs, d.M)
                I.add_friction_jacobian(d.M, fo.damping, fo.friction, fo.eps, fo.implicit_dt, vs)
                rnea_kernel(m, d, qs, vs, d.zeros_v, fext, m.gravity, d.h)
                if not I.solve_spd(d.M, d.L, tau_total, d.h, a):
                    return row, (k if s == 0 else k + 1), SINGULAR
            else:
                aba_kernel(m, d, qs, vs, tau_total, fext, m.gravity, a)
            if s > 0:
                I.dexp_inv(jtype, idx_v, nvj, w.xi, vs, w.br[0], w.br[1], w.ks[s])
                continue
            # stage 1 is the state k itself: check it, record it
            if not _finite(a):
                return row, k, NONFINITE_ACCELERATION
            if k % every == 0:
                if fo.implicit_dt > 0.0 and ct.code <= CP.SOFT:
                    # the model's acceleration at this state, not the implicit stage's
                    aba_kernel(m, d, q, v, tau_total, fext, m.gravity, out_a[row])
                    if not _finite(out_a[row]):
                        return row, k, NONFINITE_ACCELERATION
                else:
                    out_a[row, :] = a
                out_t[row] = t
                out_q[row, :] = q
                out_v[row, :] = v
                out_tau[row, :] = tau
                out_f[row, :, :] = ct.force
                out_p[row, :] = ct.pen
                if want_energy:
                    T = kinetic_kernel(m, d, q, v)
                    U = potential_after_placements(m, d, m.gravity)  # placements done by kinetic_kernel
                    out_e[row, 0] = T
                    out_e[row, 1] = U
                    out_e[row, 2] = T + U
                row += 1
            if k == steps:
                return row, -1, 0
        I.advance(scheme, jtype, idx_q, idx_v, dt, q, v, w.ks, w.acc, w.xi, w.qn)
        bad = _bad_state(q, v, max_state)
        if bad:
            return row, k + 1, bad
    return row, -1, 0


# ------------------------------------------------------------------ Python side

@dataclasses.dataclass(frozen=True)
class ExternalWrench:
    """A wrench (fx, fy, fz, tx, ty, tz) on `frame`, world-aligned axes, at the frame's origin,
    applied for start <= t < stop."""

    frame: str
    wrench: tuple
    start: float = 0.0
    stop: float = math.inf


@dataclasses.dataclass(frozen=True)
class Divergence:
    """Where a simulation stopped: the first bad step, its time, and why."""

    step: int
    time: float
    reason: str

    @property
    def message(self) -> str:
        return (f"the simulation diverged at step {self.step} (t = {self.time:.6g} s): {self.reason}; "
                "the trajectory up to the last finite state was kept (a smaller dt, smaller gains, "
                "or another integrator may help)")


@dataclasses.dataclass
class SimulationResult:
    """Rows of a simulation (see the module docstring); `diverged` is None when it ran to the end."""

    model: object
    time: np.ndarray       # (N,)
    q: np.ndarray          # (N, nq)
    v: np.ndarray          # (N, nv)
    a: np.ndarray          # (N, nv)
    tau: np.ndarray        # (N, nv)
    energy: np.ndarray | None  # (N, 3) kinetic, potential, total; None when not computed
    diverged: Divergence | None
    q_final: np.ndarray    # (nq,) the final state (diverged: the state of the last row)
    v_final: np.ndarray    # (nv,)
    dt: float
    steps: int
    every: int
    integrator: str
    contact_names: tuple = ()            # (nc,) contact point names
    contact_force: np.ndarray | None = None  # (N, nc, 3) world force on each point (the wrench's torque is 0)
    penetration: np.ndarray | None = None    # (N, nc) depth below the ground (> 0 inside; < 0: the gap)
    contact_solver: dict | None = None      # unilateral/relaxed: PGS report (steps stopped on the limit, ...)

    def __len__(self) -> int:
        return self.time.shape[0]

    def columns(self, parts=("q", "qd", "qdd", "tau")) -> list:
        """The SPEC §5 column names of `parts` (any of q, qd, qdd, tau, energy, contact), time first.

        ``contact``: ``contact.<name>.fx fy fz tx ty tz`` (world-aligned, at the point) per
        contact point, then ``penetration.<name>`` per point."""
        from .columns import contact_columns, model_columns, penetration_columns

        parts = tuple(parts)
        if "energy" in parts and self.energy is None:
            raise InputError("energy columns were asked for, but the simulation ran with energy=False")
        if "contact" in parts and self.contact_force is None:
            raise InputError("contact columns were asked for, but the simulation ran without contacts")
        names = model_columns(self.model, [p for p in parts if p != "contact"])
        if "contact" in parts:
            names += contact_columns(self.contact_names) + penetration_columns(self.contact_names)
        return names

    def table(self, parts=("q", "qd", "qdd", "tau")) -> tuple:
        """(column names, (N, ncols) array) for `parts`, in the SPEC §5 order."""
        names = self.columns(parts)
        blocks = [self.time[:, None]]
        wanted = set(parts)
        for part, arr in (("q", self.q), ("qd", self.v), ("qdd", self.a), ("tau", self.tau), ("energy", self.energy)):
            if part in wanted:
                blocks.append(arr)
        if "contact" in wanted:
            n, nc = self.contact_force.shape[:2]
            blocks.append(np.concatenate([self.contact_force, np.zeros((n, nc, 3))], axis=2).reshape(n, 6 * nc))
            blocks.append(self.penetration)
        return names, np.hstack(blocks)

    def to_dataframe(self, parts=("q", "qd", "qdd", "tau", "energy")):
        import pandas as pd

        if self.energy is None:
            parts = tuple(p for p in parts if p != "energy")
        names, data = self.table(parts)
        return pd.DataFrame(data, columns=names)

    def write(self, path, parts=("q", "qd", "qdd", "tau"), *, source=None) -> None:
        """Write the rows to `path` (.csv, .parquet; None or '-': CSV on standard output), atomically."""
        from .trajectory import write_trajectory

        names, data = self.table(parts)
        write_trajectory(path, names, data, source=source)

    def error(self) -> NumericalError | None:
        """The NumericalError to raise for a diverged run (None otherwise)."""
        if self.diverged is None:
            return None
        return NumericalError(self.diverged.message, step=self.diverged.step, time=self.diverged.time)


def _state(model, x, n, what, default):
    if x is None:
        return np.array(default, dtype=float)
    arr = np.asarray(x, dtype=float).reshape(-1) if not np.isscalar(x) else None
    if arr is None or arr.shape != (n,):
        raise InputError(f"{what} must have {n} entries for robot '{model.name}', got {np.shape(x)}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what} has a non-finite value at index {int(np.flatnonzero(~np.isfinite(arr))[0])}")
    return arr.copy()


def _wrench_arrays(model, wrenches):
    n = len(wrenches)
    body = np.zeros(n, dtype=np.int64)
    p = np.zeros((n, 3))
    W = np.zeros((n, 6))
    start = np.zeros(n)
    stop = np.zeros(n)
    for k, ew in enumerate(wrenches):
        if isinstance(ew, dict):
            ew = ExternalWrench(**ew)
        if not isinstance(ew, ExternalWrench):
            raise InputError(f"external_wrenches[{k}] must be an ExternalWrench or a dict, got {type(ew).__name__}")
        fid = model.frame_id(ew.frame)
        b = int(model.arrays.frame_body[fid])
        if b < 0:
            raise InputError(f"external_wrenches[{k}]: frame '{ew.frame}' is fixed to the world; "
                             "a wrench on it moves nothing (choose a link of a moving body)")
        w = np.asarray(ew.wrench, dtype=float).reshape(-1)
        if w.shape != (6,) or not np.all(np.isfinite(w)):
            raise InputError(f"external_wrenches[{k}]: wrench must be six finite numbers (fx fy fz tx ty tz), "
                             f"got {ew.wrench!r}")
        if not (float(ew.stop) > float(ew.start)) or math.isnan(float(ew.start)):
            raise InputError(f"external_wrenches[{k}]: stop ({ew.stop}) must be after start ({ew.start})")
        body[k] = b
        p[k] = model.arrays.frame_p[fid]
        W[k] = w
        start[k] = float(ew.start)
        stop[k] = float(ew.stop)
    return body, p, W, start, stop


def simulate(model, q0=None, v0=None, *, dt, steps, integrator="rk4", controller=None, external_wrenches=(),
             joint_friction=True, friction_smoothing=1e-3, friction_integration="implicit", every=1,
             max_state=1e6, energy=True, contacts=None, progress=None) -> SimulationResult:
    """Integrate the forward dynamics of `model` for `steps` steps of `dt` from (q0, v0).

    q0 (nq,) defaults to the neutral configuration, v0 (nv,) to zero.
    integrator: "rk4" | "semi-implicit" | "euler". controller: a
    `dynlib.controllers.Controller` (default: zero torque). external_wrenches:
    `ExternalWrench` objects (or dicts with their fields). joint_friction: apply
    the model's damping/friction (SPEC §2) with tanh smoothing `friction_smoothing`;
    friction_integration: "implicit" (stable at any dt, the default) or "explicit"
    (textbook schemes; see `dynlib.integrators`). every: keep one row in `every`.
    energy: compute the energy columns. contacts: a `dynlib.contact.points.ContactSpec` (or a
    dict of its fields: model, points, ground, stiffness, ...), see `dynlib.contact`.
    progress: a callable progress(done, total) called between chunks of a long run.
    """
    check_dynamics(model)
    if model.nv == 0:
        raise InputError(f"robot '{model.name}' has no moving joint: there is nothing to simulate")
    if integrator not in I.SCHEMES:
        raise InputError(f"integrator must be one of {', '.join(I.SCHEMES)}, got {integrator!r}")
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0.0):
        raise InputError(f"dt must be a positive number of seconds, got {dt!r}")
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise InputError(f"steps must be a positive integer, got {steps!r}")
    steps = int(steps)
    if isinstance(every, bool) or int(every) != every or every < 1:
        raise InputError(f"every must be a positive integer, got {every!r}")
    every = int(every)
    max_state = float(max_state)
    if not max_state > 0:
        raise InputError(f"max_state must be positive, got {max_state!r}")
    if friction_integration not in ("implicit", "explicit"):
        raise InputError(f"friction_integration must be 'implicit' or 'explicit', got {friction_integration!r}")
    eps = float(friction_smoothing)
    if not (math.isfinite(eps) and eps > 0.0):
        raise InputError(f"friction_smoothing must be a positive velocity, got {friction_smoothing!r}")

    q = _state(model, q0, model.nq, "q0", model.q_neutral)
    v = _state(model, v0, model.nv, "v0", np.zeros(model.nv))
    if np.any(np.abs(q) > max_state) or np.any(np.abs(v) > max_state):
        raise InputError(f"the initial state exceeds max_state = {max_state:g}")
    m = model.arrays
    controller = C.as_controller(controller)
    ctrl = controller.arrays(model, q)
    if joint_friction:
        damping, friction = np.ascontiguousarray(m.damping, float), np.ascontiguousarray(m.friction, float)
    else:
        damping, friction = np.zeros(model.nv), np.zeros(model.nv)
    # computed torque cancels the joint friction stage by stage: nothing stiff is left to treat implicitly
    stiff = (friction_integration == "implicit" and (np.any(damping != 0) or np.any(friction != 0))
             and not isinstance(controller, C.ComputedTorque))
    fo = I.Forces(damping, friction, eps, dt if stiff else 0.0, *_wrench_arrays(model, tuple(external_wrenches)))
    w = I.make_work(model.nq, model.nv, model.nb)
    d = model.create_data()
    if contacts is None:
        ct, contact_names = CP.no_contact(model.nv), ()
    else:
        ct, contact_names = CP.build_contact(model, contacts, q)
        if ct.code >= CP.UNILATERAL and integrator != "semi-implicit":
            raise InputError(f"the {'unilateral' if ct.code == CP.UNILATERAL else 'relaxed'} contact model steps "
                             f"velocities with impulses (semi-implicit Euler): set integrator to 'semi-implicit' "
                             f"(got {integrator!r})")

    nrows = steps // every + 1
    out_t = np.zeros(nrows)
    out_q = np.zeros((nrows, model.nq))
    out_v = np.zeros((nrows, model.nv))
    out_a = np.zeros((nrows, model.nv))
    out_tau = np.zeros((nrows, model.nv))
    out_e = np.zeros((nrows if energy else 0, 3))
    out_f = np.zeros((nrows, len(contact_names), 3))
    out_p = np.zeros((nrows, len(contact_names)))
    scheme = I.SCHEMES[integrator]

    total = steps + 1  # states 0..steps
    chunk = total if (progress is None and total <= CHUNKED_ABOVE) else max(1, total // 100)
    row, k0, bad_step, reason, reported = 0, 0, -1, 0, 0
    q_last, v_last = q.copy(), v.copy()
    while k0 < total:
        k1 = min(total, k0 + chunk)
        row, bad_step, reason = _run(m, d, ctrl, fo, ct, w, scheme, dt, k0, k1, steps, every, max_state,
                                     bool(energy), q, v, out_t, out_q, out_v, out_a, out_tau, out_e, out_f, out_p,
                                     row)
        if bad_step >= 0:
            break
        q_last[:], v_last[:] = q, v
        k0 = k1
        if progress is not None and min(k0, steps) > reported:
            reported = min(k0, steps)
            progress(reported, steps)
    diverged = None
    if bad_step >= 0:
        diverged = Divergence(int(bad_step), bad_step * dt, REASONS.get(int(reason), "unknown"))
        if row:  # the last finite state that was recorded
            q_last, v_last = out_q[row - 1].copy(), out_v[row - 1].copy()
    return SimulationResult(
        model=model, time=out_t[:row], q=out_q[:row], v=out_v[:row], a=out_a[:row], tau=out_tau[:row],
        energy=out_e[:row] if energy else None, diverged=diverged, q_final=q_last, v_final=v_last,
        dt=dt, steps=steps, every=every, integrator=integrator, contact_names=contact_names,
        contact_force=out_f[:row] if contacts is not None else None,
        penetration=out_p[:row] if contacts is not None else None,
        contact_solver=None if ct.code < CP.UNILATERAL else {
            "steps_not_converged": int(ct.stats[0]), "max_sweeps": int(ct.stats[1]),
            "worst_change": float(ct.stats[2]), "tolerance": float(ct.solver[0]),
            "max_iterations": int(ct.solver[1])},
    )


def loop_is_cached() -> bool:
    """Whether numba's cache holds a compiled `_run` (the first run compiles it and says so)."""
    from pathlib import Path

    from .compiled import cache_folders

    for folder in (Path(__file__).parent / "__pycache__", *cache_folders()):
        if folder.is_dir() and next(iter(folder.rglob("simulate._run-*.nbi")), None) is not None:
            return True
    return False
