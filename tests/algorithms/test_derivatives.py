"""dynlib.algorithms.derivatives: the analytical derivatives of RNEA and ABA.

Oracle: Pinocchio's computeRNEADerivatives / computeABADerivatives on every example-robot-data
robot of tests/test_pinocchio.py and its random trees (fixed and free-flyer base; with external
wrenches, and with armature), to 1e-9 relative (not the planar joints: Pinocchio reads a URDF planar
joint otherwise, its rnea differs too; the central differences cover them). Identities on the identity-test models
(`model` fixture: sample robots, random trees with continuous, prismatic and planar joints,
fixed and floating): the fourth-order central differences of rnea and aba on the manifold
(q ⊕ h e_l by dynlib.integrate), dtau_da = crba, dqdd_dtau = crba^-1, dqdd_d(q, v) =
-M^-1 dtau_d(q, v) at qdd = aba. Then the batch dimension and the argument checks.
"""
import functools

import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.errors import InputError, ModelError
from helpers import SQRT_EPS, PinMap, assert_close, erd_path, few, random_state, random_tree, sample, seeds

TOL = 1e-10
ORACLE_TOL = 1e-9
FD_STEP = 1e-3  # fourth-order stencil: truncation ~h^4, round-off ~eps/h


# ------------------------------------------------------------------ Pinocchio

def _oracle_cases():
    from tests.test_pinocchio import ERD, TREES

    return [pytest.param((kind, name, floating), id=f"{name}-{'floating' if floating else 'fixed'}")
            for kind, names in (("erd", ERD), ("tree", TREES)) for name in names for floating in (False, True)]


@functools.lru_cache(maxsize=None)
def _pin_robot(kind, name, floating):
    """(model, Pinocchio model, PinMap, states [(q, v, a, f_ext)]) of one robot."""
    pin = pytest.importorskip("pinocchio")
    if kind == "erd":
        from tests.test_pinocchio import ERD

        path = erd_path(ERD[name])
        model = dynlib.load(path, floating_base=floating)
    else:
        from tests.test_pinocchio import TREES

        model = random_tree(*TREES[name], floating_base=floating)
        path = model.source
    try:
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
        P = PinMap(model, pm)
    except (KeyError, ValueError, RuntimeError) as exc:
        pytest.skip(f"Pinocchio reads {name} otherwise: {exc}")
    rng = np.random.default_rng(sum(map(ord, name)))
    states = [(*random_state(model, rng), rng.uniform(-5, 5, (model.nb, 6))) for _ in range(2)]
    return model, pm, P, states


@pytest.fixture(scope="module", params=_oracle_cases())
def pin_robot(request):
    return _pin_robot(*request.param)


def _sym(M):
    """Pinocchio fills the upper triangle of M and M^-1 only."""
    M = np.asarray(M)
    return np.triu(M) + np.triu(M, 1).T


def _compare(ours, theirs, P, what, symmetric_last):
    for k, (x, y) in enumerate(zip(ours, theirs)):
        y = _sym(y) if (symmetric_last and k == 2) else np.asarray(y)
        assert_close(x, P.mat(y), ORACLE_TOL, f"{what}[{k}]")


@pytest.mark.oracle
def test_rnea_derivatives_equal_pinocchio(pin_robot):
    import pinocchio as pin

    model, pm, P, states = pin_robot
    pd = pm.createData()
    for q, v, a, f in states:
        qp, vp, ap = P.q(q), P.v(v), P.v(a)
        _compare(dynlib.rnea_derivatives(model, q, v, a), pin.computeRNEADerivatives(pm, pd, qp, vp, ap), P,
                 "rnea_derivatives", True)
        _compare(dynlib.rnea_derivatives(model, q, v, a, f),
                 pin.computeRNEADerivatives(pm, pd, qp, vp, ap, P.fext(f)), P, "rnea_derivatives f_ext", True)


@pytest.mark.oracle
def test_aba_derivatives_equal_pinocchio(pin_robot):
    import pinocchio as pin

    model, pm, P, states = pin_robot
    pd = pm.createData()
    for q, v, _, f in states:
        tau = dynlib.rnea(model, q, v, np.zeros(model.nv)) + np.linspace(-3, 3, model.nv)
        qp, vp, taup = P.q(q), P.v(v), P.v(tau)
        _compare(dynlib.aba_derivatives(model, q, v, tau), pin.computeABADerivatives(pm, pd, qp, vp, taup), P,
                 "aba_derivatives", True)
        _compare(dynlib.aba_derivatives(model, q, v, tau, f),
                 pin.computeABADerivatives(pm, pd, qp, vp, taup, P.fext(f)), P, "aba_derivatives f_ext", True)


@pytest.mark.oracle
def test_derivatives_with_armature_equal_pinocchio(pin_robot):
    import pinocchio as pin

    model, pm, P, states = pin_robot
    arm = np.linspace(0.01, 0.2, model.nv)
    m = model.with_armature(arm)
    pm = pm.copy()
    pm.armature = P.v(arm)
    pd = pm.createData()
    q, v, a, f = states[0]
    qp, vp = P.q(q), P.v(v)
    _compare(dynlib.rnea_derivatives(m, q, v, a, f), pin.computeRNEADerivatives(pm, pd, qp, vp, P.v(a), P.fext(f)),
             P, "rnea_derivatives armature", True)
    _compare(dynlib.aba_derivatives(m, q, v, 3 * a, f),
             pin.computeABADerivatives(pm, pd, qp, vp, P.v(3 * a), P.fext(f)), P, "aba_derivatives armature", True)


# ------------------------------------------------------------------ central differences on the manifold

def _central(model, fn, q, x, k):
    """The fourth-order central difference of fn(q', x') (batched) along each coordinate: k = 0 moves q
    on the manifold (q ⊕ h e_l), k = 1 moves x (a vector). Returns (nv, nv) with column l."""
    nv, h = model.nv, FD_STEP
    steps = np.array([2 * h, h, -h, -2 * h])
    E = np.repeat(np.eye(nv), 4, axis=0) * np.tile(steps, nv)[:, None]  # (4 nv, nv)
    if k == 0:
        Q, X = dynlib.integrate(model, np.tile(q, (4 * nv, 1)), E), np.tile(x, (4 * nv, 1))
    else:
        Q, X = np.tile(q, (4 * nv, 1)), x + E
    y = fn(Q, X).reshape(nv, 4, -1)
    return ((8 * (y[:, 1] - y[:, 2]) - (y[:, 0] - y[:, 3])) / (12 * h)).T


@few(4)
@given(seed=seeds())
def test_rnea_derivatives_equal_central_differences(model, seed):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    f = rng.uniform(-5, 5, (model.nb, 6))
    dq, dv, da = dynlib.rnea_derivatives(model, q, v, a, f)
    assert_close(dq, _central(model, lambda Q, V: dynlib.rnea(model, Q, V, np.tile(a, (len(Q), 1)), f), q, v, 0),
                 SQRT_EPS, "dtau_dq (FD)")
    assert_close(dv, _central(model, lambda Q, V: dynlib.rnea(model, Q, V, np.tile(a, (len(Q), 1)), f), q, v, 1),
                 SQRT_EPS, "dtau_dv (FD)")
    assert_close(da, _central(model, lambda Q, A: dynlib.rnea(model, Q, np.tile(v, (len(Q), 1)), A, f), q, a, 1),
                 SQRT_EPS, "dtau_da (FD)")


@few(4)
@given(seed=seeds())
def test_aba_derivatives_equal_central_differences(model, seed):
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    tau = dynlib.gravity_torques(model, q) + rng.uniform(-2, 2, model.nv)
    f = rng.uniform(-5, 5, (model.nb, 6))
    dq, dv, dtau = dynlib.aba_derivatives(model, q, v, tau, f)
    fwd = lambda Q, V: dynlib.aba(model, Q, V, np.tile(tau, (len(Q), 1)), f)  # noqa: E731
    assert_close(dq, _central(model, fwd, q, v, 0), SQRT_EPS, "dqdd_dq (FD)")
    assert_close(dv, _central(model, fwd, q, v, 1), SQRT_EPS, "dqdd_dv (FD)")
    assert_close(dtau, _central(model, lambda Q, T: dynlib.aba(model, Q, np.tile(v, (len(Q), 1)), T, f), q, tau, 1),
                 SQRT_EPS, "dqdd_dtau (FD)")


# ------------------------------------------------------------------ identities

@few(3)
@given(seed=seeds())
def test_dtau_da_is_the_mass_matrix_and_dqdd_dtau_its_inverse(model, seed):
    rng = np.random.default_rng(seed)
    m = model.with_armature(rng.uniform(0.01, 0.2, model.nv))
    q, v, a = random_state(m, rng)
    M = dynlib.crba(m, q)
    assert_close(dynlib.rnea_derivatives(m, q, v, a)[2], M, TOL, "dtau_da = M (armature)")
    assert_close(dynlib.aba_derivatives(m, q, v, a)[2] @ M, np.eye(m.nv), 1e-9, "dqdd_dtau M = 1 (armature)")


@few(3)
@given(seed=seeds())
def test_aba_derivatives_are_minus_inverse_mass_times_rnea_derivatives(model, seed):
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    tau = rng.uniform(-5, 5, model.nv)
    f = rng.uniform(-5, 5, (model.nb, 6))
    qdd = dynlib.aba(model, q, v, tau, f)
    dq, dv, M = dynlib.rnea_derivatives(model, q, v, qdd, f)
    ddq, ddv, Minv = dynlib.aba_derivatives(model, q, v, tau, f)
    scale = max(1.0, float(np.abs(Minv).max()))
    assert_close(M @ ddq / scale, -dq / scale, TOL, "M dqdd_dq = -dtau_dq")
    assert_close(M @ ddv / scale, -dv / scale, TOL, "M dqdd_dv = -dtau_dv")


def test_external_wrenches_enter_only_dtau_dq():
    model = sample("quadruped", True)
    rng = np.random.default_rng(3)
    q, v, a = random_state(model, rng)
    f = rng.uniform(-5, 5, (model.nb, 6))
    plain, forced = dynlib.rnea_derivatives(model, q, v, a), dynlib.rnea_derivatives(model, q, v, a, f)
    assert np.abs(plain[0] - forced[0]).max() > 1e-3
    assert_close(forced[1], plain[1], TOL, "dtau_dv without f_ext")
    assert_close(forced[2], plain[2], TOL, "dtau_da without f_ext")


def test_gravity_enters_dtau_dq_of_a_still_pendulum():
    """A pendulum held still at angle q: tau = m g l sin q (its sample's closed form aside), so
    dtau_dq = d g(q)/dq, the derivative of gravity_torques; zero without gravity."""
    model = sample("pendulum")
    q = np.array([0.7])
    z = np.zeros(1)
    h = 1e-6
    expected = (dynlib.gravity_torques(model, q + h) - dynlib.gravity_torques(model, q - h)) / (2 * h)
    assert_close(dynlib.rnea_derivatives(model, q, z, z)[0][:, 0], expected, 1e-7, "d g / dq")
    assert abs(expected[0]) > 0.1
    assert_close(dynlib.rnea_derivatives(model.with_gravity([0, 0, 0]), q, z, z)[0], np.zeros((1, 1)), TOL,
                 "no gravity")


# ------------------------------------------------------------------ batches and arguments

def test_batch_equals_single_calls():
    model = sample("quadruped", True)
    rng = np.random.default_rng(5)
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, A = (np.array(x) for x in zip(*states))
    F = rng.uniform(-5, 5, (3, model.nb, 6))
    for fn in (dynlib.rnea_derivatives, dynlib.aba_derivatives):
        batch = fn(model, Q, V, A, F)
        assert [b.shape for b in batch] == [(3, model.nv, model.nv)] * 3
        for n in range(3):
            for k, single in enumerate(fn(model, Q[n], V[n], A[n], F[n])):
                np.testing.assert_array_equal(batch[k][n], single)
        # the one-call path (no f_ext) and the general path (zero wrenches) agree
        for one, general in zip(fn(model, Q[0], V[0], A[0]), fn(model, Q[0], V[0], A[0], np.zeros((model.nb, 6)))):
            np.testing.assert_array_equal(one, general)


def test_results_are_fresh_arrays():
    model = sample("arm6")
    q, v, a = random_state(model, np.random.default_rng(1))
    first = dynlib.rnea_derivatives(model, q, v, a)
    kept = [x.copy() for x in first]
    dynlib.rnea_derivatives(model, q + 0.5, v, a)
    for x, y in zip(first, kept):
        np.testing.assert_array_equal(x, y)


def test_bad_arguments_are_named():
    model = sample("arm6")
    z = np.zeros(6)
    for fn in (dynlib.rnea_derivatives, dynlib.aba_derivatives):
        with pytest.raises(InputError, match=r"^q must have 6 entries"):
            fn(model, np.zeros(5), z, z)
        with pytest.raises(InputError, match=r"^v has a non-finite value at index 2"):
            fn(model, z, np.array([0, 0, np.nan, 0, 0, 0]), z)
        with pytest.raises(InputError, match=r"^f_ext must have shape \(6, 6\)"):
            fn(model, z, z, z, np.zeros((5, 6)))


def test_massless_subtree_has_no_forward_dynamics_derivatives(tmp_path):
    """aba's ModelError (a singular M), and the inverse dynamics' derivatives still defined."""
    from tests.algorithms.test_aba import MASSLESS

    path = tmp_path / "massless.urdf"
    path.write_text(MASSLESS)
    model = dynlib.load(path)
    z = np.zeros(model.nv)
    with pytest.raises(ModelError, match="finger_joint"):
        dynlib.aba_derivatives(model, z, z, z)
    assert np.isfinite(dynlib.rnea_derivatives(model, z, z, z)[0]).all()
