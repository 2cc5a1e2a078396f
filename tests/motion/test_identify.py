"""dynlib.motion.identification: identification round trips, base parameters, write-back, excitation.

The round trips simulate a robot whose every link and joint differs from its URDF
(`perturbed_urdf`: masses ±30 %, centres of mass ±3 cm, inertias rotated and
rescaled, damping and Coulomb friction changed), track a motion with computed
torque, add noise, identify from the nominal URDF, and predict the torques of a
motion the identification never saw. Physical consistency of every output link
is checked with Pinocchio's pseudo-inertia. The URDF's text outside the replaced
elements must be byte-for-byte the input's.
"""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from lxml import etree

import dynlib
from dynlib.sim.controllers import ComputedTorque, TargetTable, TorqueTable
from dynlib.errors import CheckFailed, InputError, TrajectoryError, URDFError
from dynlib.motion.identification import estimate as E
from dynlib.motion.identification import parameters as P
from dynlib.motion.identification import urdf_text
from dynlib.motion.identification.excite import excitation
from dynlib.motion.inverse import joint_friction_torques
from dynlib.files.trajectory import Trajectory, column_names
from dynlib.files.urdf import rpy_to_rot
from helpers import ROBOTS_DIR, assert_close

ARM7 = ROBOTS_DIR / "arm7.urdf"


# -- a robot that is not its URDF --------------------------------------------------------------

def perturbed_urdf(src, dst, seed=0, mass=0.3, com=0.03, inertia=0.3, friction=0.5, scale_links=None):
    """Write `src` with every link's inertial and every joint's friction changed (see the module docstring).

    Each link with mass: mass x U(1 - mass, 1 + mass), centre of mass + U(±com) per axis,
    inertia rotated by up to 0.3 rad, rescaled by U(1 ± inertia) and given a point-mass
    term (so it stays physical); damping and friction x U(1 ± friction) + 0.05.
    `scale_links` {link: factor} multiplies those links' mass and inertia instead.
    """
    rng = np.random.default_rng(seed)
    tree = etree.parse(str(src))
    for link in tree.getroot().iter("link"):
        inert = link.find("inertial")
        if inert is None or float(inert.find("mass").get("value")) == 0.0:
            continue
        o = inert.find("origin")
        xyz = np.array([float(x) for x in o.get("xyz", "0 0 0").split()]) if o is not None else np.zeros(3)
        rpy = np.array([float(x) for x in o.get("rpy", "0 0 0").split()]) if o is not None else np.zeros(3)
        R = rpy_to_rot(*rpy)
        m = float(inert.find("mass").get("value"))
        ie = inert.find("inertia")
        keys = (("ixx", "ixy", "ixz"), ("ixy", "iyy", "iyz"), ("ixz", "iyz", "izz"))
        I = R @ np.array([[float(ie.get(k, 0)) for k in row] for row in keys]) @ R.T
        if scale_links is not None:
            if link.get("name") not in scale_links:
                continue
            s = scale_links[link.get("name")]
            m2, c2, I2 = m * s, xyz, I * s
        else:
            m2 = m * (1 + rng.uniform(-mass, mass))
            c2 = xyz + rng.uniform(-com, com, 3)
            ax = rng.normal(size=3)
            ax /= np.linalg.norm(ax)
            K = np.array([[0, -ax[2], ax[1]], [ax[2], 0, -ax[0]], [-ax[1], ax[0], 0]])
            th = rng.uniform(-0.3, 0.3)
            Rs = np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K
            d = rng.uniform(-0.05, 0.05, 3)
            I2 = (m2 / m) * (1 + rng.uniform(-inertia, inertia)) * Rs @ I @ Rs.T + 0.2 * m2 * (d @ d * np.eye(3) - np.outer(d, d))
        if o is None:
            o = etree.SubElement(inert, "origin")
        o.set("xyz", " ".join(repr(float(x)) for x in c2))
        o.set("rpy", "0 0 0")
        inert.find("mass").set("value", repr(float(m2)))
        for k, (r, c) in {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2), "izz": (2, 2)}.items():
            ie.set(k, repr(float(I2[r, c])))
    if scale_links is None:
        for j in tree.getroot().iter("joint"):
            if j.get("type") in ("revolute", "continuous", "prismatic"):
                dyn = j.find("dynamics")
                if dyn is None:
                    dyn = etree.SubElement(j, "dynamics")
                for key in ("damping", "friction"):
                    dyn.set(key, repr(float(dyn.get(key, 0)) * (1 + rng.uniform(-friction, friction)) + 0.05))
    tree.write(str(dst))
    return dst


def _trajectory(model, res, tau, q=None):
    names = column_names(model.q_names, model.v_names, ("q", "qd", "qdd", "tau"), model.tau_names)
    return Trajectory(names, np.hstack([res.time[:, None], res.q if q is None else q, res.v, res.a, tau]))


def tracked(true_model, ex, seed):
    """`true_model` tracking the excitation `ex` by computed torque (its own model: exact tracking), 1 kHz."""
    target = TargetTable(ex.time, ex.q, ex.v, ex.a)
    return dynlib.simulate(true_model, ex.q[0], ex.v[0], dt=1e-3, steps=len(ex.time) - 1,
                           controller=ComputedTorque(kp=100.0, kd=20.0, target=target), energy=False)


def noisy(tau, level, rng):
    return tau + level * np.sqrt(np.mean(tau ** 2, axis=0)) * rng.normal(size=tau.shape)


def relative_rms(pred, ref):
    return float(np.sqrt(np.sum((pred - ref) ** 2) / np.sum(ref ** 2)))


def assert_physical(path):
    """Every body of the URDF at `path`, read by Pinocchio, has a positive semidefinite pseudo-inertia."""
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(path))
    for j in range(1, pm.njoints):
        J = pin.PseudoInertia.FromInertia(pm.inertias[j]).toMatrix()
        ev = np.linalg.eigvalsh(J)
        assert ev[0] >= -1e-12 * max(ev[-1], 1.0), f"{pm.names[j]}: pseudo-inertia eigenvalues {ev}"
    return pm


def link_pseudo_inertias_ok(path):
    """Every link's own <inertial> (not only the merged bodies) is physically consistent."""
    for name, (m, c, I) in urdf_text.read_inertials(path).items():
        ev = np.linalg.eigvalsh(P.pseudo_inertia(P.from_link(m, c, I)))
        assert ev[0] >= -1e-12 * max(ev[-1], 1.0), f"link {name}: pseudo-inertia eigenvalues {ev}"


@functools.lru_cache(maxsize=None)
def arm7_case(tmpdir):
    """(nominal, true model, true path, training simulation, validation simulation) for arm7."""
    from pathlib import Path

    true_path = perturbed_urdf(ARM7, Path(tmpdir) / "arm7_true.urdf", seed=1)
    nominal, true = dynlib.load(ARM7), dynlib.load(true_path)
    train_motion = excitation(nominal, 20.0, 4, iterations=15, seed=0)
    val_motion = excitation(nominal, 10.0, 3, iterations=0, seed=7)  # another motion, never seen
    return nominal, true, true_path, tracked(true, train_motion, 0), tracked(true, val_motion, 1)


@pytest.fixture(scope="module")
def arm7(tmp_path_factory):
    return arm7_case(str(tmp_path_factory.mktemp("arm7")))


def _check_every_link_and_joint_differs(nominal, true):
    a0, a1 = nominal.arrays, true.arrays
    moving = a0.inertia[:, 0, 0] > 0
    assert np.all(np.abs(a1.inertia[moving, 0, 0] / a0.inertia[moving, 0, 0] - 1) > 1e-3)
    assert np.all(a1.damping != a0.damping) and np.all(a1.friction != a0.friction)


# -- the round trips ---------------------------------------------------------------------------

@pytest.mark.slow
def test_round_trip_with_given_derivatives_predicts_an_unseen_motion_within_1_percent(arm7, tmp_path):
    nominal, true, _, train, val = arm7
    _check_every_link_and_joint_differs(nominal, true)
    rng = np.random.default_rng(0)
    recording = _trajectory(nominal, train, noisy(train.tau, 0.01, rng))
    result = dynlib.identify(nominal, [recording], derivatives="given")
    out = tmp_path / "identified.urdf"
    result.write_urdf(out)
    identified = dynlib.load(out)
    # the unseen motion, its true torques, against the identified URDF's inverse dynamics (dyn's own reader)
    pred = dynlib.rnea(identified, val.q, val.v, val.a) + joint_friction_torques(identified, val.v)
    urdf_pred = dynlib.rnea(nominal, val.q, val.v, val.a) + joint_friction_torques(nominal, val.v)
    err, before = relative_rms(pred, val.tau), relative_rms(urdf_pred, val.tau)
    assert before > 0.05, before  # the URDF is far off
    assert err < 0.01, err
    # the same through the result's own prediction
    measured = dynlib.motion.identification.read_measurements(nominal, _trajectory(nominal, val, val.tau),
                                                              derivatives="given")
    assert_close(result.predict(measured),
                 pred, 1e-9, "prediction = identified URDF's rnea")
    assert_physical(out)
    link_pseudo_inertias_ok(out)
    # the noise level comes back as each joint's residual standard deviation
    injected = 0.01 * np.sqrt(np.mean(train.tau ** 2, axis=0))
    assert np.all(np.abs(result.wls.sigma / injected - 1) < 0.05), result.wls.sigma / injected


@pytest.mark.slow
def test_round_trip_from_noisy_positions_with_savgol_within_4_percent(arm7, tmp_path):
    nominal, _, _, train, val = arm7
    rng = np.random.default_rng(1)
    q = train.q + rng.normal(scale=1e-4, size=train.q.shape)  # 0.1 mrad of encoder noise
    names = column_names(nominal.q_names, nominal.v_names, ("q", "tau"))
    recording = Trajectory(names, np.hstack([train.time[:, None], q, noisy(train.tau, 0.01, rng)]))
    result = dynlib.identify(nominal, [recording], derivatives="savgol", window=0.1)
    out = tmp_path / "identified.urdf"
    result.write_urdf(out)
    identified = dynlib.load(out)
    pred = dynlib.rnea(identified, val.q, val.v, val.a) + joint_friction_torques(identified, val.v)
    assert relative_rms(pred, val.tau) < 0.04
    assert_physical(out)
    link_pseudo_inertias_ok(out)


@pytest.mark.slow
def test_floating_base_in_flight_with_wrench_free_root(tmp_path):
    """A quadruped in free fall moving its legs: the root rows carry no wrench."""
    nominal = dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True)
    true = dynlib.load(perturbed_urdf(ROBOTS_DIR / "quadruped.urdf", tmp_path / "true.urdf", seed=4),
                       floating_base=True)

    def flight(seed, seconds):
        rng = np.random.default_rng(seed)
        t = np.arange(0, seconds, 0.01)
        tau = np.zeros((t.size, nominal.nv))
        for k in range(6, nominal.nv):
            for h in (1, 2, 3):
                tau[:, k] += rng.uniform(-3, 3) / h * np.sin(2 * np.pi * h * 0.7 * t + rng.uniform(0, 6.3))
        return dynlib.simulate(true, dt=1e-3, steps=int(seconds * 1000), controller=TorqueTable(t, tau),
                               energy=False, limits=False)  # the motor torques alone move it

    train, val = flight(0, 4.0), flight(1, 2.0)
    rng = np.random.default_rng(2)
    tau = train.tau.copy()
    tau[:, 6:] = noisy(tau[:, 6:], 0.01, rng)
    result = dynlib.identify(nominal, [_trajectory(nominal, train, tau)], validation=[_trajectory(nominal, val, val.tau)])
    assert np.all(train.tau[:, :6] == 0)
    assert result.relative_rms_error("validation", after=False) > 0.05
    assert result.relative_rms_error("validation") < 0.01
    out = tmp_path / "identified.urdf"
    result.write_urdf(out)
    link_pseudo_inertias_ok(out)


@pytest.mark.slow
def test_contact_wrench_columns_enter_the_root_equations(tmp_path):
    """A floating quadruped pushed at a foot by a known wrench (world axes, at the frame: contact-id's
    convention): with the wrench in contact.<foot>.* the fit is exact, without it the root rows are wrong."""
    nominal = dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True)
    foot = "lf_foot"
    wrench = (3.0, -2.0, 60.0, 0.5, 0.2, -0.3)
    rng = np.random.default_rng(3)
    t = np.arange(0, 3.0, 0.01)
    tau = np.zeros((t.size, nominal.nv))
    for k in range(6, nominal.nv):
        tau[:, k] = rng.uniform(-3, 3) * np.sin(2 * np.pi * 0.8 * t + rng.uniform(0, 6.3))
    res = dynlib.simulate(nominal, dt=1e-3, steps=3000, controller=TorqueTable(t, tau), energy=False,
                          external_wrenches=[dynlib.ExternalWrench(foot, wrench)], limits=False)
    names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "qdd", "tau"), nominal.tau_names)
    base = np.hstack([res.time[:, None], res.q, res.v, res.a, res.tau])
    with_contact = Trajectory(names + [f"contact.{foot}.{c}" for c in ("fx", "fy", "fz", "tx", "ty", "tz")],
                              np.hstack([base, np.tile(wrench, (len(res.time), 1))]))
    good = dynlib.identify(nominal, [with_contact], validation=[with_contact], friction=())
    assert good.relative_rms_error("validation") < 1e-6
    assert good.relative_rms_error("validation", after=False) < 1e-6  # the URDF is the truth here
    bad = dynlib.identify(nominal, [Trajectory(names, base)], friction=())
    assert bad.relative_rms_error("training") > 0.01


# -- merged bodies -----------------------------------------------------------------------------

def test_merged_links_split_rule_heaviest_takes_the_rest():
    """arm7's link4 and link4_cover (fixed) form one body: link4 (the heavier) carries it."""
    model = dynlib.load(ARM7)
    links = P.body_links(model, urdf_text.read_inertials(ARM7))
    j = model.joint_names.index("joint4")
    assert set(links.links[j]) == {"link4", "link4_cover"} and links.carrier[j] == "link4"
    body = E.inertial_parameters(model)[10 * j:10 * j + 10]
    split = links.split(j, body)
    assert np.array_equal(split["link4_cover"], links.urdf["link4_cover"])
    assert_close(split["link4"], links.urdf["link4"], 1e-12, "split of the URDF's own body gives its links")
    # the flange (massless, fixed to link7) stays as it was
    j7 = model.joint_names.index("joint7")
    assert links.carrier[j7] == "link7" and not np.any(links.urdf["flange"])


@pytest.mark.slow
def test_a_held_link_that_contradicts_the_data_leaves_the_carrier_physical(tmp_path):
    """The nominal URDF's link4_cover claims 2 kg and a large inertia; the real cover is the 0.3 kg plate
    and the real link4 is lighter than the URDF's. link4 (2.5 kg, still the heavier) takes the body's
    parameters minus the cover's URDF ones: by least squares that is not physical (nothing is written,
    CheckFailed names it); the default estimate constrains link4's pseudo-inertia, keeps the cover at
    its URDF values and still fits the data."""
    text = ARM7.read_bytes()
    start = text.index(b'<link name="link4_cover">')
    end = text.index(b"</link>", start)
    cover = (text[start:end].replace(b'<mass value="0.3"/>', b'<mass value="2"/>')
             .replace(b'ixx="0.00026" ixy="0" ixz="0" iyy="0.0005725" iyz="0" izz="0.0008125"',
                      b'ixx="0.05" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.05"'))
    heavy = tmp_path / "heavy_cover.urdf"
    heavy.write_bytes(text[:start] + cover + text[end:])
    nominal = dynlib.load(heavy)
    true = dynlib.load(perturbed_urdf(ARM7, tmp_path / "light.urdf", scale_links={"link4": 0.3}))
    sim = tracked(true, excitation(nominal, 10.0, 3, iterations=0, seed=2), 0)
    rec = _trajectory(nominal, sim, sim.tau)
    ls = dynlib.identify(nominal, [rec], method="least-squares")
    assert "link4" in dict(ls.inconsistent_links())
    with pytest.raises(CheckFailed, match="'link4'.*not physically consistent"):
        ls.write_urdf(tmp_path / "ls.urdf")
    assert not (tmp_path / "ls.urdf").exists()
    good = dynlib.identify(nominal, [rec])
    assert good.links.carrier[nominal.joint_names.index("joint4")] == "link4"
    assert good.inconsistent_links() == []
    assert good.relative_rms_error() < 0.01
    good.write_urdf(tmp_path / "ok.urdf")
    link_pseudo_inertias_ok(tmp_path / "ok.urdf")
    assert urdf_text.read_inertials(tmp_path / "ok.urdf")["link4_cover"][0] == 2.0  # held at its URDF value


# -- base parameters ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, floating", [("arm7", False), ("double_pendulum", False), ("planar3", False),
                                            ("quadruped", True)])
def test_base_parameters_reproduce_the_regressor(name, floating):
    """W theta = W_b (B theta) at fresh random states, and r is the rank of a larger fresh sample."""
    model = dynlib.load(ROBOTS_DIR / f"{name}.urdf", floating_base=floating)
    lm = E.LinearModel(model)
    base = E.base_parameters(lm, seed=0)
    rng = np.random.default_rng(99)
    n = 3 * lm.p
    Q = np.array([dynlib.random_configuration(model, rng) for _ in range(n)])
    V, A = rng.uniform(-2, 2, (2, n, model.nv))
    W = lm.columns(Q, V, A).reshape(-1, lm.p)
    theta = rng.normal(size=lm.p)
    assert_close(W[:, base.columns] @ (base.B @ theta), W @ theta, 1e-9, "W theta = W_b beta")
    norms = np.linalg.norm(W, axis=0)
    live = norms > 1e-10 * norms.max()  # not the round-off columns (a few 1e-15)
    sv = np.linalg.svd(W[:, live] / norms[live], compute_uv=False)
    assert base.rank == int(np.sum(sv > 1e-8 * sv[0]))
    assert base.rank < lm.p


def test_pendulum_base_parameters_are_the_textbook_ones():
    """A pendulum about y under gravity: tau = (I_yy) a + g (m c_x) cos-terms + friction: the inertial base
    parameters are I_yy about the axis and the first moment perpendicular to the axis, m c_x and m c_z."""
    model = dynlib.load(ROBOTS_DIR / "pendulum.urdf")
    lm = E.LinearModel(model, ())
    base = E.base_parameters(lm)
    axis = model.arrays.S[0, 3:]
    k = int(np.argmax(np.abs(axis)))
    idx = {0: (4, (2, 3)), 1: (6, (1, 3)), 2: (9, (1, 2))}[k]
    assert base.rank == 3
    assert sorted(base.columns) == sorted([idx[0], *idx[1]])


# -- estimation details ------------------------------------------------------------------------

def test_exact_data_give_the_true_base_parameters(tmp_path):
    """Noise-free torques of a perturbed arm6: the least-squares base parameters are the true ones."""
    src = ROBOTS_DIR / "arm6.urdf"
    nominal, true = dynlib.load(src), dynlib.load(perturbed_urdf(src, tmp_path / "t.urdf", seed=5))
    ex = excitation(nominal, 6.0, 3, iterations=0, seed=1)
    tau = dynlib.rnea(true, ex.q, ex.v, ex.a) + joint_friction_torques(true, ex.v)
    names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "qdd", "tau"))
    rec = Trajectory(names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau]))
    result = dynlib.identify(nominal, [rec], method="least-squares")
    lm_true = E.LinearModel(true)
    assert_close(result.wls.beta, result.base.B @ lm_true.theta0, 1e-6, "base parameters from exact data")
    assert result.relative_rms_error("training") < 1e-6


def test_a_known_armature_is_taken_out_of_the_torques_before_the_fit(tmp_path):
    """Torques of an arm6 with rotor inertia: identified with the model's armature, the base parameters
    are the true ones; without it, the rotors' torque is a misfit (the test can tell them apart)."""
    src = ROBOTS_DIR / "arm6.urdf"
    rotors = np.array([0.4, 0.3, 0.2, 0.05, 0.05, 0.02])
    nominal = dynlib.load(src)
    true = dynlib.load(perturbed_urdf(src, tmp_path / "t.urdf", seed=6)).with_armature(rotors)
    ex = excitation(nominal, 6.0, 3, iterations=0, seed=2)
    tau = dynlib.rnea(true, ex.q, ex.v, ex.a) + joint_friction_torques(true, ex.v)
    names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "qdd", "tau"))
    rec = Trajectory(names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau]))
    result = dynlib.identify(nominal.with_armature(rotors), [rec], method="least-squares")
    assert_close(result.wls.beta, result.base.B @ E.LinearModel(true).theta0, 1e-6, "base parameters")
    assert result.relative_rms_error("training") < 1e-6
    assert dynlib.identify(nominal, [rec], method="least-squares").relative_rms_error("training") > 1e-4


def test_unidentifiable_directions_stay_at_the_urdf():
    """For fixed base parameters the prior picks the parameters nearest the URDF: the change from the
    URDF, in prior units, has no component along the directions no motion can see (null(B S))."""
    nominal = dynlib.load(ROBOTS_DIR / "arm6.urdf")
    ex = excitation(nominal, 6.0, 3, iterations=0, seed=3)
    tau = dynlib.rnea(nominal, ex.q, ex.v, ex.a) * 1.1 + joint_friction_torques(nominal, ex.v)
    names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "qdd", "tau"))
    rec = Trajectory(names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau]))
    result = dynlib.identify(nominal, [rec], method="least-squares")
    S = result.prior_sd
    null = np.linalg.svd(result.base.B * S)[2][result.base.rank:]
    change = (result.theta - result.theta0) / S
    assert np.linalg.norm(change) > 0.01
    assert np.linalg.norm(null @ change) < 1e-3 * np.linalg.norm(change)  # round-off of a ~1e10:1 Hessian


def test_a_joint_that_never_moves_keeps_its_friction_and_has_no_standard_deviation():
    model = dynlib.load(ROBOTS_DIR / "arm6.urdf")
    ex = excitation(model, 6.0, 3, iterations=0)
    q, v, a = ex.q.copy(), ex.v.copy(), ex.a.copy()
    q[:, 5], v[:, 5], a[:, 5] = 0.3, 0.0, 0.0
    tau = 1.1 * dynlib.rnea(model, q, v, a) + 2.0 * joint_friction_torques(model, v)
    names = column_names(model.q_names, model.v_names, ("q", "qd", "qdd", "tau"))
    result = dynlib.identify(model, [Trajectory(names, np.hstack([ex.time[:, None], q, v, a, tau]))])
    report = result.report()
    unseen = [b["name"] for b in report["base_parameters"] if b["std"] is None]
    assert sorted(unseen) == ["wrist_3.damping", "wrist_3.friction"]
    assert result.joint_friction()["wrist_3"][:2] == pytest.approx((model.arrays.damping[5], model.arrays.friction[5]))
    assert result.joint_friction()["wrist_2"][:2] == pytest.approx((2 * model.arrays.damping[4],
                                                                   2 * model.arrays.friction[4]), rel=1e-6)
    assert report["condition_number"] is None  # the base regressor is singular on these data
    assert result.relative_rms_error() < 1e-6


def test_friction_terms_and_held_terms():
    model = dynlib.load(ARM7)
    lm = E.LinearModel(model, ("coulomb",))
    assert lm.held == ("viscous",) and lm.p == 10 * model.nb + model.nv
    v = np.full((2, model.nv), 0.5)
    assert_close(lm.held_friction(v), model.arrays.damping * v, 1e-15, "held viscous friction")
    with pytest.raises(InputError, match="friction terms"):
        E.LinearModel(model, ("stiction",))


# -- text-level write-back -----------------------------------------------------------------------

_REPLACED = re.compile(rb"<inertial>.*?</inertial>|<dynamics[^>]*/>", re.S)


def test_output_is_the_input_byte_for_byte_outside_the_replaced_elements(tmp_path):
    nominal = dynlib.load(ARM7)
    true = dynlib.load(perturbed_urdf(ARM7, tmp_path / "true.urdf", seed=6))
    ex = excitation(nominal, 6.0, 3, iterations=0, seed=5)
    tau = dynlib.rnea(true, ex.q, ex.v, ex.a) + joint_friction_torques(true, ex.v)
    names = column_names(nominal.q_names, nominal.v_names, ("q", "qd", "qdd", "tau"))
    result = dynlib.identify(nominal, [Trajectory(names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau]))])
    out = tmp_path / "identified.urdf"
    result.write_urdf(out)
    src, dst = ARM7.read_bytes(), out.read_bytes()
    assert src != dst
    assert _REPLACED.sub(b"", src) == _REPLACED.sub(b"", dst)
    # the held link (link4_cover) and the massless flange are untouched, element for element
    for link in (b"link4_cover", b"flange"):
        pattern = rb'<link name="' + link + rb'">.*?</link>'
        assert re.findall(pattern, src, re.S) == re.findall(pattern, dst, re.S)
    assert dst.count(b"<inertial>") == src.count(b"<inertial>")
    assert dst.count(b"<dynamics") == src.count(b"<dynamics")
    pin = pytest.importorskip("pinocchio")
    assert pin.buildModelFromUrdf(str(out)).nv == nominal.nv


def test_text_edit_handles_comments_missing_elements_and_self_closing_links(tmp_path):
    text = b"""<?xml version="1.0"?>
<!-- <link name="a"><inertial> in a comment </inertial></link> -->
<robot name="r">
  <link name="base"/>
  <link name="a">
    <visual><geometry><box size="1 1 1"/></geometry></visual>
  </link>
  <link name="b"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="a"/>
    <axis xyz="0 0 1"/>
  </joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 1 0"/>
    <dynamics damping="1" friction="2"/></joint>
</robot>
"""
    I = np.diag([0.1, 0.2, 0.25])
    out = urdf_text.edit(text, {"a": (2.0, np.array([0.0, 0.1, 0.0]), I), "b": (1.0, np.zeros(3), I)},
                         {"j1": (0.5, 0.25), "j2": (0.0, 1.5)})
    path = tmp_path / "r.urdf"
    path.write_bytes(out)
    model = dynlib.load(path)
    assert model.arrays.inertia[0, 0, 0] == 2.0 and model.arrays.inertia[1, 0, 0] == 1.0
    assert list(model.arrays.damping) == [0.5, 0.0] and list(model.arrays.friction) == [0.25, 1.5]
    assert out.startswith(text[:text.index(b'<link name="a">')])  # the comment and link base unchanged
    assert b'<link name="b">\n    <inertial>' in out
    inertial = urdf_text.read_inertials(path)["a"]
    assert_close(inertial[2], I, 1e-15, "inertia written back")
    # a file with Windows line ends keeps them in what is written
    crlf = urdf_text.edit(text.replace(b"\n", b"\r\n"), {"a": (2.0, np.zeros(3), I), "b": (1.0, np.zeros(3), I)},
                          {"j1": (0.5, 0.25)})
    assert crlf.count(b"\n") == crlf.count(b"\r\n") and crlf.replace(b"\r\n", b"\n").count(b"\r") == 0


def test_text_edit_writes_armature_as_dyns_attribute_with_its_namespace(tmp_path):
    """An armature is written as <dynamics dyn:armature>, the namespace declared once on <robot> (or the
    prefix a file already binds to it reused); a file binding dyn to another namespace is refused."""
    text = ROBOTS_DIR.joinpath("double_pendulum.urdf").read_bytes()
    model = dynlib.load(ROBOTS_DIR / "double_pendulum.urdf")
    j1, j2 = model.joint_names
    out = urdf_text.edit(text, {}, {j1: (0.5, 0.25, 0.125), j2: (0.0, 0.0, 0.0)})
    assert out.count(b'xmlns:dyn="urn:dyn:urdf"') == 1 and out.count(b"dyn:armature=") == 2
    path = tmp_path / "r.urdf"
    path.write_bytes(out)
    m = dynlib.load(path)
    assert m.arrays.armature.tolist() == [0.125, 0.0] and m.arrays.damping.tolist() == [0.5, 0.0]
    assert urdf_text.edit(out, {}, {j1: (0.5, 0.25, 0.5)}).count(b"xmlns:dyn=") == 1  # declared already
    mine = out.replace(b'xmlns:dyn="urn:dyn:urdf"', b'xmlns:d="urn:dyn:urdf"').replace(b"dyn:armature", b"d:armature")
    again = urdf_text.edit(mine, {}, {j1: (0.5, 0.25, 0.5)})
    assert b"xmlns:dyn" not in again and b'd:armature="0.5"' in again
    path.write_bytes(again)
    assert dynlib.load(path).arrays.armature.tolist() == [0.5, 0.0]
    other = out.replace(b'xmlns:dyn="urn:dyn:urdf"', b'xmlns:dyn="http://example.org/other"')
    with pytest.raises(URDFError, match="binds the prefix dyn to another namespace"):
        urdf_text.edit(other, {}, {j1: (0.5, 0.25, 0.5)})


def test_the_armature_is_a_parameter_column_of_its_dofs_acceleration():
    """LinearModel(armature=True): one more column per friction DoF, q̈_k in row k, named '<joint>.armature',
    its prior the model's armature; the predicted torque is rnea with that armature."""
    model = dynlib.load(ROBOTS_DIR / "arm7.urdf").with_armature(0.1)
    lm = E.LinearModel(model, ("viscous", "coulomb"), armature=True)
    assert lm.p == 10 * model.nb + 3 * model.nv and lm.names[-1] == "joint7.armature"
    assert np.all(lm.theta0[lm.armature_slice] == 0.1)
    rng = np.random.default_rng(0)
    q, v, a = rng.uniform(-1, 1, (3, 4, model.nv))
    W = lm.columns(q, v, a)
    np.testing.assert_array_equal(W[:, :, lm.armature_slice], a[:, :, None] * np.eye(model.nv)[None])
    theta = lm.theta0.copy()
    theta[lm.armature_slice] = 0.3
    np.testing.assert_allclose(np.einsum("nkp,p->nk", W, theta), lm.predict(theta, q, v, a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lm.predict(theta, q, v, a) - lm.predict(lm.theta0, q, v, a), 0.2 * a, atol=1e-12)


def test_xacro_robot_cannot_be_written_back():
    with pytest.raises(URDFError, match="expand it first"):
        urdf_text.check_editable(ROBOTS_DIR / "arm6.urdf.xacro")


# -- recordings ----------------------------------------------------------------------------------

def test_recording_errors():
    model = dynlib.load(ROBOTS_DIR / "arm6.urdf")
    t = np.arange(50) * 1e-3
    q = np.zeros((50, model.nq))
    names = column_names(model.q_names, model.v_names, ("q", "qd", "qdd"))
    bare = Trajectory(names, np.hstack([t[:, None], q, q, q]), path="bare.csv")
    with pytest.raises(TrajectoryError, match="has no measured torques"):
        dynlib.identify(model, [bare])
    some = Trajectory(names + ["tau.shoulder_pan", "effort.shoulder_lift"],
                      np.hstack([t[:, None], q, q, q, q[:, :2]]), path="some.csv")
    with pytest.raises(TrajectoryError, match="missing 'tau.elbow'"):
        dynlib.identify(model, [some])
    full = Trajectory(names + [f"tau.{n}" for n in model.v_names], np.hstack([t[:, None], q, q, q, q])[:3],
                      path="short.csv")
    with pytest.raises(TrajectoryError, match="too short"):
        dynlib.identify(model, [full])
    with pytest.raises(InputError, match="method"):
        dynlib.identify(model, [full], method="magic")


def test_effort_columns_are_read_as_torques():
    model = dynlib.load(ROBOTS_DIR / "double_pendulum.urdf")
    ex = excitation(model, 3.0, 2, iterations=0)
    tau = dynlib.rnea(model, ex.q, ex.v, ex.a) + joint_friction_torques(model, ex.v)
    names = column_names(model.q_names, model.v_names, ("q", "qd", "qdd")) + [f"effort.{n}" for n in model.v_names]
    rec = Trajectory(names, np.hstack([ex.time[:, None], ex.q, ex.v, ex.a, tau]))
    assert dynlib.identify(model, [rec]).relative_rms_error() < 1e-6


# -- excitation ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_excitation_respects_the_limits_and_improves_the_condition_number():
    model = dynlib.load(ROBOTS_DIR / "arm6.urdf")
    ex = excitation(model, 8.0, 3, iterations=15, margin=0.05, seed=4)
    assert ex.condition < 0.5 * ex.initial_condition
    assert np.all(ex.q >= model.lower) and np.all(ex.q <= model.upper)
    assert np.all(np.abs(ex.v) <= model.velocity_limit)
    tau = dynlib.rnea(model, ex.q, ex.v, ex.a) + joint_friction_torques(model, ex.v)
    assert np.all(np.abs(tau) <= model.effort)
    assert_close(ex.tau, tau, 1e-12, "excitation torques")
    # starts at rest, periodic, and a = dv/dt
    assert np.abs(ex.v[0]).max() < 1e-12 and np.abs(ex.a[0]).max() < 1e-9
    assert_close(ex.q[-1], ex.q[0], 1e-9, "periodic")
    assert_close(np.gradient(ex.v, ex.time, axis=0)[1:-1], ex.a[1:-1], 1e-3, "a = dv/dt")


def test_excitation_rejects_floating_bases_and_bad_arguments():
    with pytest.raises(InputError, match="fixed-base"):
        excitation(dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True), 1.0)
    model = dynlib.load(ROBOTS_DIR / "pendulum.urdf")
    for kw, msg in (({"duration": -1.0}, "duration"), ({"harmonics": 0}, "harmonics"),
                    ({"margin": 1.5}, "margin")):
        args = {"duration": 1.0, "harmonics": 2, **kw}
        with pytest.raises(InputError, match=msg):
            excitation(model, args.pop("duration"), args.pop("harmonics"), **args)
