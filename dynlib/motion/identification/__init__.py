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

Public: `identify`, `Identification` (with its `ParameterFit`), `read_measurements`, `check_robot_file`;
`excite.excitation` (`dynlib.excitation`) makes the motion to record.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...errors import CheckFailed, InputError, TrajectoryError
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
                 had_inertial=()):
        self.model, self.lm, self.links = model, lm, links
        self.theta, self.theta_star, self.base, self.wls = fit.theta, fit.theta_star, fit.base, fit.wls
        self.method, self.status = fit.method, fit.status
        self.training, self.validation = list(training), list(validation)  # Measurements
        self.timings, self.warnings, self.prior_std = timings, list(warnings), fit.prior_std
        self.prior_sd = fit.prior_sd  # (p,) the prior's standard deviation of each parameter
        self.had_inertial = frozenset(had_inertial)  # links with an <inertial> element in the URDF
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
        for n, k in enumerate(self.lm.fdofs):
            vals = {"viscous": a.damping[k], "coulomb": a.friction[k], "offset": 0.0}
            for t, s in self.lm.friction_slice.items():
                vals[t] = self.theta[s][n]
            out[self.model.v_names[k]] = (float(vals["viscous"]), float(vals["coulomb"]), float(vals["offset"]))
        return out

    def inconsistent_links(self) -> list:
        """(link, smallest eigenvalue of its pseudo-inertia) of the output links that are not physically consistent."""
        out = []
        for name, pi in self._links.items():
            ev = np.linalg.eigvalsh(P.pseudo_inertia(pi))
            if ev[0] < -1e-9 * max(abs(ev[-1]), 1e-12):
                out.append((name, float(ev[0])))
        return out

    # -- prediction ----------------------------------------------------------
    def predict(self, measurements, after=True):
        """The motor torques (N, nv) of the identified (or, after=False, the URDF's) parameters
        for a recording's `measurements.Measurements`."""
        return self.lm.predict(self.theta if after else self.theta0, measurements.q, measurements.v, measurements.a)

    def _errors(self, which, after):
        recs = self.training if which == "training" else self.validation
        if not recs:
            raise InputError(f"no {which} recording")
        err = np.concatenate([self.predict(r, after) - r.tau for r in recs])
        meas = np.concatenate([r.tau for r in recs])
        return err, meas

    def rms_errors(self, which="training"):
        """[{joint, measured_rms, urdf, identified}] rms torque errors per DoF, or [] without data."""
        recs = self.training if which == "training" else self.validation
        if not recs:
            return []
        before, meas = self._errors(which, False)
        after, _ = self._errors(which, True)
        rms = lambda x: np.sqrt(np.mean(x ** 2, axis=0))  # noqa: E731
        return [{"joint": name, "measured_rms": float(m), "urdf": float(b), "identified": float(a)}
                for name, m, b, a in zip(self.model.tau_names, rms(meas), rms(before), rms(after))]

    def relative_rms_error(self, which="training", after=True):
        """sqrt(sum of squared errors / sum of squared measured torques), all DoFs together."""
        err, meas = self._errors(which, after)
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
        text = Path(self.model.source).read_bytes()
        return urdf_text.edit(text, inertials, dynamics, file=self.model.source)

    def write_urdf(self, path, atomic=True) -> None:
        """Write `urdf_bytes()` to `path` and check that dyn reads it back; through `atomic_output`
        unless `atomic` is False (the caller's own temporary file)."""
        import contextlib

        from ...files.trajectory import atomic_output
        from ...files.urdf import load

        data = self.urdf_bytes()
        with (atomic_output(path) if atomic else contextlib.nullcontext(path)) as tmp:
            Path(tmp).write_bytes(data)
            load(tmp, floating_base=self.model.floating_base)

    def report(self) -> dict:
        """The report as plain data (what --report writes as JSON)."""
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
                           "friction": {"before": float(a.friction[k]), "after": f}, "offset": off})
        B = self.base.B
        base = [{"name": n, "urdf": float(B[i] @ self.theta0), "least_squares": float(self.wls.beta[i]),
                 "std": _finite(self.wls.std[i]),
                 "relative_std": _finite(self.wls.std[i] / abs(self.wls.beta[i])) if self.wls.beta[i] else None,
                 "identified": float(B[i] @ self.theta)} for i, n in enumerate(self.base.names)]
        out = {
            "robot": model.name, "source": model.source, "floating_base": bool(model.has_floating_base),
            "method": "physically consistent" if self.method == "consistent" else "least squares",
            "friction_terms": list(lm.terms), "friction_smoothing": lm.smoothing, "prior_std": self.prior_std,
            "armature": {model.v_names[k]: float(x) for k, x in enumerate(a.armature) if x},  # known, held
            "recordings": [_info(r) for r in self.training],
            "validation_recordings": [_info(r) for r in self.validation],
            "samples": int(sum(len(r.time) for r in self.training)), "parameters": lm.p,
            "base_parameters_count": self.base.rank,
            "condition_number": _finite(self.wls.condition),
            "condition_number_scaled": _finite(self.wls.condition_scaled),
            "relative_rms_error": {"training": {"urdf": self.relative_rms_error("training", False),
                                                "identified": self.relative_rms_error("training")}},
            "rms_error": {"training": self.rms_errors("training")},
            "base_parameters": base, "links": links, "joints": joints,
            "solver": self.status, "seconds": {k: round(v, 4) for k, v in self.timings.items()},
            "warnings": self.warnings,
        }
        if self.validation:
            out["relative_rms_error"]["validation"] = {"urdf": self.relative_rms_error("validation", False),
                                                       "identified": self.relative_rms_error("validation")}
            out["rms_error"]["validation"] = self.rms_errors("validation")
        return out


def _info(r):
    return {"path": r.path, "samples": int(len(r.time)), "derivatives": r.derivatives, "contacts": list(r.contacts)}


def _finite(x):
    x = float(x)
    return x if math.isfinite(x) else None


def identify(model, recordings, *, validation=(), derivatives="auto", window=0.1, polyorder=4, columns=None,
             friction=("viscous", "coulomb"), friction_smoothing=1e-3, method="consistent", prior_std=1.0,
             seed=0, topic=None, time_unit=None, resample=None) -> Identification:
    """Identify `model`'s inertial and friction parameters from `recordings` (paths or Trajectories).

    columns, topic, time_unit, resample: how a recording is read (`dynlib.files.recordings.read_recording`:
    dyn's CSV/Parquet, ROS bags, rostopic and PlotJuggler CSVs); derivatives, window, polyorder: how
    v and a are estimated (`dynlib.motion.derivatives.motion_from_trajectory`). friction: the friction terms to
    identify, among 'viscous', 'coulomb', 'offset' (the others keep their URDF
    values); friction_smoothing: dyn's ε of tanh(v/ε). method: 'consistent' (the
    default: physically consistent, an SDP) or 'least-squares'. prior_std: the
    width of the prior at the URDF's values, relative to each parameter's scale
    (see `estimate`). validation: recordings to report the fit on, not used to fit.
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
    lm = E.LinearModel(model, friction, friction_smoothing)
    opts = dict(derivatives=derivatives, window=window, polyorder=polyorder, columns=columns, topic=topic,
                time_unit=time_unit, resample=resample)
    recs = [read_measurements(model, r, **opts) for r in recordings]
    vals = [read_measurements(model, r, **opts) for r in validation]
    timings["read"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    training = E.Stack(lm)
    for rec in recs:
        training.add(rec.q, rec.v, rec.a, rec.tau)
    timings["regressor"] = time.perf_counter() - t0

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
    wls = E.weighted_least_squares(training, base)
    timings["base_parameters"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    S = E.prior_scales(lm, recs, prior_std)
    theta_star, M = E.regularised(training, wls.sigma, lm.theta0, S)
    inertials = urdf_text.read_inertials(model.source)
    links = P.body_links(model, inertials)
    status = "not run (least squares)"
    theta = theta_star
    if method == "consistent":
        theta, status = E.physically_consistent(lm, links, theta_star, M, S)
    timings["estimate"] = time.perf_counter() - t0

    warnings = []
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(wls.std) / np.abs(wls.beta)
    poor = [base.names[i].split(" ")[0] for i in np.flatnonzero(~(rel <= 1.0))]
    if poor:
        warnings.append(f"{len(poor)} of {base.rank} base parameters have a standard deviation above 100 % "
                        f"(e.g. {', '.join(poor[:3])}): the motion hardly excites them, so they stay near the URDF's "
                        "values; a richer motion (dyn excite) identifies more")
    fit = ParameterFit(theta, theta_star, base, wls, method, status, prior_std, S)
    return Identification(model, lm, links, fit, recs, vals, timings, warnings, had_inertial=inertials)
