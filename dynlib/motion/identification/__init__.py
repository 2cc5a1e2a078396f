"""Identification: inertial and friction parameters from recorded motion, written back as a URDF.

    import dynlib
    model = dynlib.load("robot.urdf")
    result = dynlib.identify(model, ["recording.csv"], derivatives="savgol")
    result.write_urdf("identified.urdf"); result.report()

The steps (each in its module):

1. `measurements.read_measurements`: q, v, a and the measured generalized forces of
   each recording (motor torques, plus Jᵀw of any contact wrench columns);
2. `estimate.LinearModel` / `estimate.Stack`: the regressor (`dynlib.regressor`)
   and friction columns of every sample, reduced per DoF to its normal
   equations in one compiled pass over the samples (on every core);
3. `estimate.base_parameters`: the identifiable combinations (QR with column
   pivoting on a sampled regressor);
4. `estimate.weighted_least_squares`: their values, standard deviations and the
   base regressor's condition number;
5. `estimate.regularised` and `estimate.physically_consistent` (the default):
   every body's parameters, fitted to the data, kept at the URDF's values where
   the data say nothing, and projected onto the physically consistent set
   (pseudo-inertias positive semidefinite, friction >= 0) by a semidefinite
   program;
6. `parameters.BodyLinks.split`: a body made of several URDF links (fixed joints
   merged) is written back on the link with the largest URDF mass — it takes the
   body's parameters minus the other links', which keep their URDF values; the
   consistency constraint of step 5 is on that link, so it is physically
   consistent by construction. With ``method="least-squares"`` (no constraint)
   a link can come out non-physical; `write_urdf` then refuses (a URDF reader
   would reject it) and names the link.
7. `urdf_text.edit`: the URDF's text with those links' ``<inertial>`` and the
   joints' ``<dynamics>`` replaced, every other byte unchanged.

Rotor inertias (``armature=True``: one more parameter per revolute or prismatic joint, >= 0
in the consistent estimate) are physics that every dyn command evaluates (M + diag(armature)):
they are written into the URDF as dyn's own attribute ``<dynamics … dyn:armature="…"/>``
(`dynlib.files.urdf.DYN_NAMESPACE`, ignored by other URDF readers), as are known rotor
inertias given to the model (``model.with_armature``), so that the file predicts what the
report says. Constant offsets (friction term 'offset') are not physics (a sensor's bias: no
simulation should apply them) and are identified and reported, not written:
the parameters written are refitted without them on the same
normal equations (`estimate.Stack.restricted`), and the errors reported for the URDF
(`Identification.report(written)`) are those of the file as dyn reads it back,
computed by `dynlib.motion.inverse.model_torques`, the function `dyn inverse` uses.
`Identification.check_fit` refuses a fit whose error or condition number says it
explains nothing (the command exits 1 and writes nothing).

Public: `identify`, `Identification` (with its `ParameterFit`, `OffsetFit`), `read_measurements`, `check_robot_file`;
`excite.excitation` (`dynlib.excitation`) makes the motion to record.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...errors import CheckFailed, DynError, InputError, TrajectoryError
from . import estimate as E
from . import parameters as P
from . import urdf_text
from .measurements import read_measurements

METHODS = ("consistent", "least-squares")


def check_robot_file(path) -> None:
    """A URDFError when identification could not write back into `path` (a .xacro)."""
    urdf_text.check_editable(path)


class ParameterFit(NamedTuple):
    """The estimate `identify` made: theta (the identified parameters), theta_star (the regularised
    least-squares estimate before the consistency projection), base (`estimate.Base`) and wls
    (`estimate.WLS`): the base parameters and their fit; method ('consistent' or 'least-squares')
    and status (the SDP solver's); prior_std and prior_sd (p,) (the prior's standard deviation of
    each parameter)."""

    theta: np.ndarray
    theta_star: np.ndarray
    base: object
    wls: object
    method: str
    status: str
    prior_std: float
    prior_sd: np.ndarray | None = None


class Identification:
    """The result of `identify`: parameters before and after, fit statistics, write-back.

    theta0, theta: the parameters (`estimate.LinearModel.names`) of the URDF and identified;
    theta_star, base, wls, method, status, prior_std, prior_sd: those of the `ParameterFit`;
    training, validation: the `measurements.Measurements` of each recording; links (`parameters.BodyLinks`).
    """

    def __init__(self, model, lm, links, fit: ParameterFit, training, validation, timings, warnings,
                 had_inertial=(), offsets=None):
        self.model, self.lm, self.links = model, lm, links
        self.theta, self.theta_star, self.base, self.wls = fit.theta, fit.theta_star, fit.base, fit.wls
        self.method, self.status = fit.method, fit.status
        self.training, self.validation = list(training), list(validation)  # Measurements
        self.timings, self.warnings, self.prior_std = timings, list(warnings), fit.prior_std
        self.prior_sd = fit.prior_sd  # (p,) the prior's standard deviation of each parameter
        self.had_inertial = frozenset(had_inertial)  # links with an <inertial> element in the URDF
        self.offsets = offsets  # the fit with constant offsets (an OffsetFit), when they were identified
        theta, method = fit.theta, fit.method
        self._links = {}
        for j in range(model.nb):
            split = links.split(j, theta[10 * j:10 * j + 10])
            c = links.carrier[j]
            if method == "consistent":  # the solver's last digits: the nearest consistent pi
                split[c] = P.project_consistent(split[c])
            self._links[c] = split[c]

    # -- parameters ----------------------------------------------------------
    @property
    def theta0(self):
        return self.lm.theta0

    def link_parameters(self, after=True) -> dict:
        """{link: pi (10,) in the link frame} of every link that carries a body's parameters."""
        if after:
            return dict(self._links)
        return {c: self.links.urdf[c].copy() for c in self.links.carrier}

    def joint_friction(self) -> dict:
        """{joint: (damping, friction, offset)} after identification (URDF values where not identified)."""
        a = self.model.arrays
        out = {}
        offsets = self.offsets.values() if self.offsets else {}
        for n, k in enumerate(self.lm.fdofs):
            vals = {"viscous": a.damping[k], "coulomb": a.friction[k], "offset": offsets.get(self.model.v_names[k], 0.0)}
            for t, s in self.lm.friction_slice.items():
                vals[t] = self.theta[s][n]
            out[self.model.v_names[k]] = (float(vals["viscous"]), float(vals["coulomb"]), float(vals["offset"]))
        return out

    def armature(self) -> dict:
        """{joint: rotor inertia} after identification (the model's where not identified) of the
        revolute and prismatic joints: what the URDF written holds as dyn:armature."""
        arm = self.lm.armatures(self.theta)
        return {self.model.v_names[k]: float(arm[k]) for k in self.lm.fdofs}

    def inconsistent_links(self) -> list:
        """(link, smallest eigenvalue of its pseudo-inertia) of the output links that are not physically consistent."""
        out = []
        for name, pi in self._links.items():
            ev = np.linalg.eigvalsh(P.pseudo_inertia(pi))
            if ev[0] < -1e-9 * max(abs(ev[-1]), 1e-12):
                out.append((name, float(ev[0])))
        return out

    # -- prediction ----------------------------------------------------------
    def predict(self, measurements, after=True, model=None):
        """The motor torques (N, nv) of the identified (or, after=False, the URDF's) parameters
        for a recording's `measurements.Measurements`; with `model` (the URDF written, as dyn reads
        it back: `write_urdf`'s return), that model's, as ``dyn inverse`` computes them
        (`dynlib.motion.inverse.model_torques`)."""
        if model is not None:
            from ..inverse import model_torques

            return model_torques(model, measurements.q, measurements.v, measurements.a,
                                 friction_smoothing=self.lm.smoothing)
        return self.lm.predict(self.theta if after else self.theta0, measurements.q, measurements.v, measurements.a)

    def _errors(self, which, after, model=None):
        recs = self.training if which == "training" else self.validation
        if not recs:
            raise InputError(f"no {which} recording")
        err = np.concatenate([self.predict(r, after, model if after else None) - r.tau for r in recs])
        meas = np.concatenate([r.tau for r in recs])
        return err, meas

    def offset_error(self, which="training"):
        """The relative rms error of the fit with offsets (`offsets`), which the URDF cannot hold."""
        recs = self.training if which == "training" else self.validation
        lm, theta = self.offsets.lm, self.offsets.theta
        err = np.concatenate([lm.predict(theta, r.q, r.v, r.a) - r.tau for r in recs])
        meas = np.concatenate([r.tau for r in recs])
        return float(math.sqrt(np.sum(err ** 2) / max(np.sum(meas ** 2), 1e-300)))

    def rms_errors(self, which="training", model=None):
        """[{joint, measured_rms, urdf, identified}] rms torque errors per DoF, or [] without data;
        identified: of `model` when given (see `predict`)."""
        recs = self.training if which == "training" else self.validation
        if not recs:
            return []
        before, meas = self._errors(which, False)
        after, _ = self._errors(which, True, model)
        rms = lambda x: np.sqrt(np.mean(x ** 2, axis=0))  # noqa: E731
        return [{"joint": name, "measured_rms": float(m), "urdf": float(b), "identified": float(a)}
                for name, m, b, a in zip(self.model.tau_names, rms(meas), rms(before), rms(after))]

    def relative_rms_error(self, which="training", after=True, model=None):
        """sqrt(sum of squared errors / sum of squared measured torques), all DoFs together; of
        `model` when given (see `predict`)."""
        err, meas = self._errors(which, after, model)
        return float(math.sqrt(np.sum(err ** 2) / max(np.sum(meas ** 2), 1e-300)))

    # -- output ----------------------------------------------------------------
    def urdf_bytes(self) -> bytes:
        """The model's URDF with the identified <inertial> and <dynamics> elements."""
        urdf_text.check_editable(self.model.source)
        bad = self.inconsistent_links()
        if bad:
            names = ", ".join(f"'{n}' (pseudo-inertia eigenvalue {ev:.3g})" for n, ev in bad)
            raise CheckFailed(f"link{'s' if len(bad) > 1 else ''} {names}: the {self.method} parameters are not "
                              "physically consistent, and no URDF reader would take them; the default "
                              "(physically consistent) estimation keeps every link physical")
        inertials = {}
        for name, pi in self._links.items():
            mass, com, I = P.to_link(pi)
            if name not in self.had_inertial and mass == 0.0 and not np.any(I):
                continue
            inertials[name] = (mass, com, I)
        dynamics = {}
        if any(t in self.lm.friction_slice for t in ("viscous", "coulomb")):
            dynamics = {j: (d, f) for j, (d, f, _) in self.joint_friction().items()}
        if self.lm.armature or np.any(self.model.arrays.armature):  # with the joints' damping and friction
            dynamics = {j: (d, f, self.armature()[j]) for j, (d, f, _) in self.joint_friction().items()}
        text = Path(self.model.source).read_bytes()
        return urdf_text.edit(text, inertials, dynamics, file=self.model.source)

    def write_urdf(self, path, atomic=True, display=None):
        """Write `urdf_bytes()` to `path` and check that dyn reads it back; through `atomic_output`
        unless `atomic` is False (the caller's own temporary file; `display`: the output's name for
        the user, which its errors name). Returns the model dyn reads from it, with this model's
        gravity (what ``dyn inverse`` with the same options evaluates; the file holds the armature,
        identified or given)."""
        import contextlib

        from ...files.trajectory import atomic_output
        from ...files.urdf import load

        data = self.urdf_bytes()
        with (atomic_output(path) if atomic else contextlib.nullcontext(path)) as tmp:
            Path(tmp).write_bytes(data)
            try:
                written = load(tmp, floating_base=self.model.floating_base, strict=False)  # as identify read it
            except DynError as exc:  # named as the user's output, not dyn's hidden temporary file
                if exc.file != str(tmp):
                    raise
                raise type(exc)(f"{exc.message} (in the URDF identified from the recordings: are the torques "
                                "in N m? nothing was written)", file=display or path, line=exc.line) from None
        written = written.with_gravity(self.model.arrays.gravity)
        arm = self.lm.armatures(self.theta)  # a root's rotor inertia has no URDF joint to hold it: given again
        return written.with_armature(arm) if not np.array_equal(written.arrays.armature, arm) else written

    def check_fit(self, max_error=0.2, max_condition=1e5):
        """A CheckFailed naming the cause and the fix when the fit should not be written: the base
        regressor's condition number on the data above `max_condition` (the motion does not excite
        the model), or the identified rms torque error on the training data above `max_error`.
        Still poses (derivatives 'zero') see only the gravity terms by design: no condition check."""
        cond = self.wls.condition
        static = all(r.derivatives == "zero" for r in self.training)
        if not static and not cond <= max_condition:
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.abs(self.wls.std) / np.abs(self.wls.beta)
            worst = [self.base.names[i].split(" ")[0] for i in np.argsort(-np.nan_to_num(rel, nan=np.inf))[:3]]
            raise CheckFailed(f"condition number {cond:.4g} of the base regressor on these data is above "
                              f"{max_condition:g}: the motion does not excite every identifiable parameter "
                              f"(least determined: {', '.join(worst)}); record a richer motion (dyn excite "
                              "writes one), or accept it with --max-condition")
        err = self.relative_rms_error("training")
        if err > max_error:
            how = sorted({r.derivatives for r in self.training})
            raise CheckFailed(f"{100 * err:.3g} % rms torque error identified on the training data, above "
                              f"{100 * max_error:g} %: the model does not explain the measured torques; check the "
                              f"torque columns (units, sign, joint order) and the derivatives ({', '.join(how)} "
                              "here: measured velocities, --derivatives given, or savgol of q), or accept it "
                              "with --max-error")

    def report(self, written=None) -> dict:
        """The report as plain data (what --report writes as JSON); the identified errors are those of
        `written` (the URDF written, `write_urdf`'s return) when given."""
        model, lm = self.model, self.lm

        def link_entry(pi):
            mass, com, I = P.to_link(pi)
            return {"mass": mass, "com": [float(x) for x in com],
                    "inertia": [float(I[0, 0]), float(I[0, 1]), float(I[0, 2]), float(I[1, 1]), float(I[1, 2]),
                                float(I[2, 2])]}

        links = []
        for j in range(model.nb):
            for name in self.links.links[j]:
                carrier = name == self.links.carrier[j]
                after = self._links[name] if carrier else self.links.urdf[name]
                links.append({"link": name, "body": model.joint_names[j],
                              "role": "identified" if carrier else f"held at its URDF values (merged into the body of "
                                                                    f"'{model.joint_names[j]}')",
                              "before": link_entry(self.links.urdf[name]), "after": link_entry(after),
                              "pseudo_inertia_min_eigenvalue": float(np.linalg.eigvalsh(P.pseudo_inertia(after))[0])})
        a = model.arrays
        joints = []
        for name, (d, f, off) in self.joint_friction().items():
            k = model.v_names.index(name)
            joints.append({"joint": name, "damping": {"before": float(a.damping[k]), "after": d},
                           "friction": {"before": float(a.friction[k]), "after": f}, "offset": off,
                           "armature": {"before": float(a.armature[k]), "after": self.armature()[name]}})
        B = self.base.B
        base = [{"name": n, "urdf": float(B[i] @ self.theta0), "least_squares": float(self.wls.beta[i]),
                 "std": _finite(self.wls.std[i]),
                 "relative_std": _finite(self.wls.std[i] / abs(self.wls.beta[i])) if self.wls.beta[i] else None,
                 "identified": float(B[i] @ self.theta)} for i, n in enumerate(self.base.names)]
        out = {
            "robot": model.name, "source": model.source, "floating_base": bool(model.has_floating_base),
            "method": "physically consistent" if self.method == "consistent" else "least squares",
            "friction_terms": list(self.offsets.lm.terms if self.offsets else lm.terms), "friction_smoothing": lm.smoothing, "prior_std": self.prior_std,
            # the rotor inertias in the URDF written (dyn:armature): identified, or known and held
            "armature": {j: x for j, x in self.armature().items() if x or lm.armature},
            "armature_identified": lm.armature,
            "recordings": [_info(r) for r in self.training],
            "validation_recordings": [_info(r) for r in self.validation],
            "samples": int(sum(len(r.time) for r in self.training)), "parameters": lm.p,
            "base_parameters_count": self.base.rank,
            "condition_number": _finite(self.wls.condition),
            "condition_number_scaled": _finite(self.wls.condition_scaled),
            "relative_rms_error": {"training": {"urdf": self.relative_rms_error("training", False),
                                                "identified": self.relative_rms_error("training", model=written)}},
            "rms_error": {"training": self.rms_errors("training", written)},
            "base_parameters": base, "links": links, "joints": joints,
            "solver": self.status, "seconds": {k: round(v, 4) for k, v in self.timings.items()},
            "warnings": self.warnings,
        }
        if self.validation:
            out["relative_rms_error"]["validation"] = {"urdf": self.relative_rms_error("validation", False),
                                                       "identified": self.relative_rms_error("validation",
                                                                                             model=written)}
            out["rms_error"]["validation"] = self.rms_errors("validation", written)
        if self.offsets:
            errors = {w: self.offset_error(w) for w in ("training", "validation") if getattr(self, w)}
            out["offsets"] = {"in_urdf": False, "values": self.offsets.values(), "relative_rms_error": errors,
                              "note": "constant offsets are a sensor's bias, not physics, and stay out of the URDF: "
                                      "the URDF written is refitted without them"}
        return out


def _info(r):
    return {"path": r.path, "samples": int(len(r.time)), "derivatives": r.derivatives, "contacts": list(r.contacts)}


def _finite(x):
    x = float(x)
    return x if math.isfinite(x) else None


def identify(model, recordings, *, validation=(), derivatives="auto", window=0.1, polyorder=4,
             friction=("viscous", "coulomb"), friction_smoothing=1e-3, method="consistent", prior_std=1.0,
             seed=0, torque_filter=None, armature=False, **reading) -> Identification:
    """Identify `model`'s inertial and friction parameters from `recordings` (paths or Trajectories).

    reading (columns, topic, time_unit, resample, joint_order, clock): how a recording is read, the keywords
    of `dynlib.files.recordings.read_recording` (dyn's CSV/Parquet, ROS bags, rostopic and PlotJuggler
    CSVs); derivatives, window, polyorder,
    torque_filter: how v and a are obtained and the torque filtered (`measurements.read_measurements`:
    'auto' takes measured velocities when the file has them). friction: the friction terms to
    identify, among 'viscous', 'coulomb', 'offset' (the others keep their URDF
    values); friction_smoothing: dyn's ε of tanh(v/ε). method: 'consistent' (the
    default: physically consistent, an SDP) or 'least-squares'. prior_std: the
    width of the prior at the URDF's values, relative to each parameter's scale
    (see `estimate`). validation: recordings to report the fit on, not used to fit.
    armature: True identifies the rotor inertia of every revolute and prismatic joint (the
    model's, e.g. ``model.with_armature(...)``, is the prior); False holds the model's.

    With 'offset' among the terms, the fit with the offsets is kept as `offsets` (an `OffsetFit`:
    their values and errors), and the parameters (what `write_urdf` writes) are refitted without
    them on the same data: a URDF cannot hold a constant offset, and parameters fitted together
    with offsets that are then dropped predict worse than parameters fitted without them.
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not (math.isfinite(prior_std) and prior_std > 0):
        raise InputError(f"prior_std must be a positive number, got {prior_std!r}")
    if isinstance(recordings, (str, Path)) or not hasattr(recordings, "__iter__"):
        recordings = [recordings]
    if isinstance(validation, (str, Path)) or not hasattr(validation, "__iter__"):
        validation = [validation]
    recordings, validation = list(recordings), list(validation)
    if not recordings:
        raise InputError("identification needs at least one recording")
    timings = {}
    t0 = time.perf_counter()
    lm = E.LinearModel(model, friction, friction_smoothing, armature)
    opts = dict(derivatives=derivatives, window=window, polyorder=polyorder, torque_filter=torque_filter, **reading)
    recs = [read_measurements(model, r, **opts) for r in recordings]
    vals = [read_measurements(model, r, **opts) for r in validation]
    timings["read"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    training = E.Stack(lm)
    for rec in recs:
        training.add(rec.q, rec.v, rec.a, rec.tau)
    timings["regressor"] = time.perf_counter() - t0
    inertials = urdf_text.read_inertials(model.source)
    links = P.body_links(model, inertials)
    how = dict(method=method, prior_std=prior_std, seed=seed)
    fit, warnings = _estimate(lm, training, recs, links, timings, **how)
    offsets = None
    if "offset" in lm.terms:
        offsets = OffsetFit(lm, fit.theta, tuple(model.v_names[k] for k in lm.fdofs))
        lm = E.LinearModel(model, tuple(t for t in lm.terms if t != "offset"), friction_smoothing, armature)
        fit, warnings = _estimate(lm, training.restricted(lm), recs, links, timings, **how)
    return Identification(model, lm, links, fit, recs, vals, timings, warnings, had_inertial=inertials,
                          offsets=offsets)


class OffsetFit(NamedTuple):
    """The fit with constant offsets (`identify` with 'offset' among the friction terms): its
    `LinearModel`, parameters theta and the joints of the offsets."""

    lm: object
    theta: np.ndarray
    joints: tuple

    def values(self):
        """{joint: offset} (N m or N), the measured torque's constant part the model does not have."""
        return {j: float(x) for j, x in zip(self.joints, self.theta[self.lm.friction_slice["offset"]])}


def _estimate(lm, training, recs, links, timings, *, method, prior_std, seed):
    """(ParameterFit, warnings) of the data in `training` (an `estimate.Stack` of `lm`)."""
    model = lm.model
    t0 = time.perf_counter()
    base = E.base_parameters(lm, seed=seed)
    unknowns = base.rank
    equations = training.rows * model.nv
    if equations <= unknowns:
        where = recs[0].path if len(recs) == 1 else f"{len(recs)} recordings"
        raise TrajectoryError(f"too short for identification: {training.rows} usable samples give {equations} "
                              f"equations for {unknowns} identifiable parameters; record at least "
                              f"{unknowns // max(model.nv, 1) + 1} samples (many more for a good fit)", file=where)
    for rec in recs:
        if not np.any(rec.tau):  # the parameters are fitted to measured torques: there are none
            raise TrajectoryError("every torque is zero: the torques were not recorded (a JointState whose "
                                  "effort is not published?); identification fits the parameters to measured "
                                  "torques", file=rec.path)
    if all(not np.ptp(rec.q, axis=0).any() and not np.any(rec.v) for rec in recs):
        # a robot at rest excites gravity only: the consistent estimate was infeasible, blamed on --friction
        raise TrajectoryError("the robot does not move: every joint position is the same in every sample; "
                              "identification needs motion (dyn excite writes one to run on the robot) or "
                              "several still poses (--derivatives zero)",
                              file=recs[0].path if len(recs) == 1 else f"{len(recs)} recordings")
    wls = E.weighted_least_squares(training, base)
    timings["base_parameters"] = timings.get("base_parameters", 0.0) + time.perf_counter() - t0

    t0 = time.perf_counter()
    S = E.prior_scales(lm, recs, prior_std)
    theta_star, M = E.regularised(training, wls.sigma, lm.theta0, S)
    status = "not run (least squares)"
    theta = theta_star
    if method == "consistent":
        theta, status = E.physically_consistent(lm, links, theta_star, M, S)
    timings["estimate"] = timings.get("estimate", 0.0) + time.perf_counter() - t0

    warnings = []
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(wls.std) / np.abs(wls.beta)
    poor = [base.names[i].split(" ")[0] for i in np.flatnonzero(~(rel <= 1.0))]
    if poor:
        warnings.append(f"{len(poor)} of {base.rank} base parameters have a standard deviation above 100 % "
                        f"(e.g. {', '.join(poor[:3])}): the motion hardly excites them, so they stay near the URDF's "
                        "values; a richer motion (dyn excite) identifies more")
    return ParameterFit(theta, theta_star, base, wls, method, status, prior_std, S), warnings
