"""dynlib.core.spatial against spatial algebra built independently here, with 6x6 numpy matrices.

The kernels' helpers work on tuples (linear part first); the references below are
the textbook matrices (RBDA ch. 2, reordered linear-first as in Pinocchio):

- the motion transform of a frame at (R, p) in its parent, X = [[R, [p]x R], [0, R]],
  and the force transform X* = X⁻ᵀ = [[R, 0], [[p]x R, R]];
- the cross products crm(v) = [[ω×, v×], [0, ω×]] and crf(v) = −crm(v)ᵀ;
- the spatial inertia of a body of mass m, centre of mass c and inertia I_c about it,
  whose rotational block about the origin is the parallel-axis theorem's
  I_c + m (|c|² 1 − c cᵀ).

Identities checked on random values: X X⁻¹ = identity for motions and forces, the
power vᵀf is frame independent, a transform acts as its matrix, composition is the
matrix product, v × v = 0, crf = −crmᵀ, the Jacobi identity, the inertia transform
X* I X⁻¹ (both the general and the rigid-body form) against numpy and the
parallel-axis theorem, kinetic energy ½ vᵀ I v frame independent, the inertia
variation crf(ν) I − I crm(ν) + crf(·) I ν against its matrices.
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from dynlib.core import spatial as S

TOL = 1e-12
SEEDS = range(8)


def hat(c):
    """[c]x, written here (not dynlib.core.spatial.skew)."""
    return np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])


def motion_matrix(R, p):
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[:3, 3:] = hat(p) @ R
    X[3:, 3:] = R
    return X


def force_matrix(R, p):
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, :3] = hat(p) @ R
    X[3:, 3:] = R
    return X


def crm(v):
    out = np.zeros((6, 6))
    out[:3, :3] = hat(v[3:])
    out[:3, 3:] = hat(v[:3])
    out[3:, 3:] = hat(v[3:])
    return out


def random_pose(rng):
    R = Rotation.random(random_state=rng).as_matrix()
    return R, rng.normal(size=3)


def as_pose(R, p):
    """The (R 9-tuple, p 3-tuple) pair the kernels take."""
    return tuple(float(x) for x in R.ravel()), tuple(float(x) for x in p)


def tup(x):
    """A tuple of floats (the kernels' 6-vectors and 3x3 matrices in row order)."""
    return tuple(float(v) for v in x)


t6 = tup


def random_body(rng):
    """(m, c, I_c): a solid box's inertia about its centre of mass, rotated (a valid body)."""
    m = rng.uniform(0.5, 5.0)
    a, b, c = rng.uniform(0.1, 1.0, 3)
    R = Rotation.random(random_state=rng).as_matrix()
    Ic = R @ np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * (m / 12) @ R.T
    return m, rng.normal(size=3), Ic


def close(a, b, tol=TOL):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.max(np.abs(a - b)) <= tol * max(1.0, np.max(np.abs(b)))


# -- transforms ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_transforms_act_as_their_matrices(seed):
    rng = np.random.default_rng(seed)
    R, p = random_pose(rng)
    X = as_pose(R, p)
    m, f = rng.normal(size=6), rng.normal(size=6)
    assert close(S.act_motion(X, t6(m)), motion_matrix(R, p) @ m)
    assert close(S.act_force(X, t6(f)), force_matrix(R, p) @ f)
    assert close(S.act_inv_motion(X, t6(m)), np.linalg.solve(motion_matrix(R, p), m))
    assert close(S.act_inv_force(X, t6(f)), np.linalg.solve(force_matrix(R, p), f))
    # X* is X^-T: the two were built separately above
    assert close(force_matrix(R, p), np.linalg.inv(motion_matrix(R, p)).T)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_transform_and_its_inverse_give_back_the_vector(seed):
    rng = np.random.default_rng(seed)
    X = as_pose(*random_pose(rng))
    m, f = t6(rng.normal(size=6)), t6(rng.normal(size=6))
    assert close(S.act_inv_motion(X, S.act_motion(X, m)), m)
    assert close(S.act_motion(X, S.act_inv_motion(X, m)), m)
    assert close(S.act_inv_force(X, S.act_force(X, f)), f)
    assert close(S.act_force(X, S.act_inv_force(X, f)), f)


@pytest.mark.parametrize("seed", SEEDS)
def test_power_does_not_depend_on_the_frame(seed):
    rng = np.random.default_rng(seed)
    X = as_pose(*random_pose(rng))
    m, f = t6(rng.normal(size=6)), t6(rng.normal(size=6))
    assert S.dot6(S.act_motion(X, m), S.act_force(X, f)) == pytest.approx(S.dot6(m, f), rel=TOL, abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_compose_is_the_product_of_homogeneous_matrices(seed):
    rng = np.random.default_rng(seed)
    (R1, p1), (R2, p2) = random_pose(rng), random_pose(rng)
    R, p = S.compose(as_pose(R1, p1), as_pose(R2, p2))
    H = lambda R, p: np.block([[R, p[:, None]], [np.zeros((1, 3)), np.ones((1, 1))]])  # noqa: E731
    assert close(H(np.reshape(R, (3, 3)), np.array(p)), H(R1, p1) @ H(R2, p2))
    # and acts as the product of the two actions
    m = t6(rng.normal(size=6))
    X12 = (R, p)
    assert close(S.act_motion(X12, m), S.act_motion(as_pose(R1, p1), S.act_motion(as_pose(R2, p2), m)))


def test_pose_and_store_pose_round_trip():
    rng = np.random.default_rng(0)
    Rs, ps = np.zeros((3, 3, 3)), np.zeros((3, 3))
    R, p = random_pose(rng)
    S.store_pose(Rs, ps, 1, as_pose(R, p))
    assert np.array_equal(Rs[1], R) and np.array_equal(ps[1], p)
    assert not Rs[0].any() and not Rs[2].any()
    Rt, pt = S.pose(Rs, ps, 1)
    assert np.array_equal(np.reshape(Rt, (3, 3)), R) and np.array_equal(pt, p)


# -- cross products -------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_cross_products_against_their_matrices(seed):
    rng = np.random.default_rng(seed)
    v, m, f = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    assert close(S.cross_motion(t6(v), t6(m)), crm(v) @ m)
    assert close(S.cross_force(t6(v), t6(f)), -crm(v).T @ f)
    assert close(S.cross_motion(t6(v), t6(v)), np.zeros(6))
    # (v x m) . f = -m . (v x* f): the force cross product is the dual
    assert S.dot6(S.cross_motion(t6(v), t6(m)), t6(f)) == pytest.approx(
        -S.dot6(t6(m), S.cross_force(t6(v), t6(f))), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_motion_cross_product_is_a_lie_bracket(seed):
    """Antisymmetry and the Jacobi identity of se(3)."""
    rng = np.random.default_rng(seed)
    a, b, c = (t6(rng.normal(size=6)) for _ in range(3))
    x = S.cross_motion
    assert close(x(a, b), -np.array(x(b, a)))
    jacobi = np.add(np.add(x(a, x(b, c)), x(b, x(c, a))), x(c, x(a, b)))
    assert close(jacobi, np.zeros(6), 1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_transforms_commute_with_cross_products(seed):
    """X (v x m) = (X v) x (X m): the adjoint is a Lie algebra morphism (and X* likewise)."""
    rng = np.random.default_rng(seed)
    X = as_pose(*random_pose(rng))
    v, m, f = (t6(rng.normal(size=6)) for _ in range(3))
    assert close(S.act_motion(X, S.cross_motion(v, m)), S.cross_motion(S.act_motion(X, v), S.act_motion(X, m)))
    assert close(S.act_force(X, S.cross_force(v, f)), S.cross_force(S.act_motion(X, v), S.act_force(X, f)))


# -- 6-vectors and 3x3 helpers ------------------------------------------------------------------

def test_vector_helpers_against_numpy():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=6), rng.normal(size=6)
    assert close(S.add6(t6(x), t6(y)), x + y)
    assert close(S.sub6(t6(x), t6(y)), x - y)
    assert close(S.scale6(t6(x), 2.5), 2.5 * x)
    assert S.dot6(t6(x), t6(y)) == pytest.approx(x @ y, rel=1e-14)
    assert np.array_equal(np.array([S.unit6(c) for c in range(6)]), np.eye(6))
    a = np.zeros((3, 6))
    S.store6(a, 1, t6(x))
    S.add_to6(a, 1, t6(y))
    assert close(a[1], x + y) and not a[0].any() and not a[2].any()
    assert S.vec6(a, 1) == tuple(a[1]) and S.tuple6(a[1]) == tuple(a[1])
    M = np.zeros((2, 6, 6))
    S.sub_outer6(M, 1, t6(x), t6(y))
    assert close(M[1], -np.outer(x, y)) and not M[0].any()


def test_joint_motion_is_the_subspace_times_the_joint_velocity():
    rng = np.random.default_rng(2)
    Sm = rng.normal(size=(9, 6))  # (nv, 6): DoFs 3, 4, 5 are one joint
    v = rng.normal(size=9)
    assert close(S.joint_motion(Sm, 3, 3, v), Sm[3:6].T @ v[3:6])


def test_matrix3_helpers_against_numpy():
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    p, x = rng.normal(size=3), rng.normal(size=3)
    tA, tB = tup(A.ravel()), tup(B.ravel())
    assert close(S.matmul3(tA, tB), (A @ B).ravel())
    assert close(S.matmul3_t(tA, tB), (A @ B.T).ravel())
    assert close(S.transpose3(tA), A.T.ravel())
    assert close(S.add3x3(tA, tB), (A + B).ravel())
    assert close(S.skew_times(tup(p), tA), (hat(p) @ A).ravel())
    assert close(S.matvec3(tA, *x), A @ x)
    assert close(S.matvec3_t(tA, *x), A.T @ x)
    upper = np.triu(A)
    assert close(S.symmetric3(tA), (upper + upper.T - np.diag(np.diag(A))).ravel())
    block = np.zeros((2, 6, 6))
    block[1, 3:, 0:3] = A
    assert S.mat3(block, 1, 3, 0) == tA
    S.add_to_mat3(block, 1, 3, 0, tB)
    assert close(block[1, 3:, 0:3], A + B) and not block[0].any()


# -- inertias -------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_spatial_inertia_is_the_parallel_axis_theorem(seed):
    rng = np.random.default_rng(seed)
    m, c, Ic = random_body(rng)
    I = S.spatial_inertia(m, c, Ic)
    assert close(I, I.T)
    assert close(I[:3, :3], m * np.eye(3))
    assert close(I[3:, 3:], Ic + m * (c @ c * np.eye(3) - np.outer(c, c)))
    # the momentum of a body translating with velocity u: h = (m u, m c x u)
    u = rng.normal(size=3)
    assert close(I @ np.r_[u, 0, 0, 0], np.r_[m * u, m * np.cross(c, u)])
    assert np.linalg.eigvalsh(I).min() > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_transform_inertia_moves_the_centre_of_mass(seed):
    """A body given in a child frame at (R, p), expressed in the parent: the same body
    with centre of mass R c + p and rotational inertia R I_c Rᵀ about it."""
    rng = np.random.default_rng(seed)
    m, c, Ic = random_body(rng)
    R, p = random_pose(rng)
    moved = S.transform_inertia(R, p, S.spatial_inertia(m, c, Ic))
    assert close(moved, S.spatial_inertia(m, R @ c + p, R @ Ic @ R.T))
    # kinetic energy is frame independent: v_child = X^-1 v_parent
    v = rng.normal(size=6)
    v_child = np.linalg.solve(motion_matrix(R, p), v)
    assert v @ moved @ v == pytest.approx(v_child @ S.spatial_inertia(m, c, Ic) @ v_child, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_act_inertia_against_the_force_transforms(seed):
    """X.act(I) = X* I X*ᵀ (out[j] += ...), for a general symmetric 6x6 inertia (articulated
    inertias are not rigid) and for a rigid body, where the closed form must agree."""
    rng = np.random.default_rng(seed)
    R, p = random_pose(rng)
    X = as_pose(R, p)
    Xf = force_matrix(R, p)
    A = rng.normal(size=(6, 6))
    general = A @ A.T
    rigid = S.spatial_inertia(*random_body(rng))
    for I in (general, rigid):
        store = np.zeros((2, 6, 6))
        store[1] = I
        out = np.zeros((3, 6, 6))
        out[2] = np.eye(6)  # accumulates into what is there
        S.act_inertia(X, store, 1, out, 2)
        assert close(out[2], Xf @ I @ Xf.T + np.eye(6))
        assert not out[0].any() and not out[1].any()
    store = np.zeros((1, 6, 6))
    store[0] = rigid
    general_form, rigid_form = np.zeros((1, 6, 6)), np.zeros((1, 6, 6))
    S.act_inertia(X, store, 0, general_form, 0)
    S.act_rigid_inertia(X, store, 0, rigid_form, 0)
    assert close(rigid_form[0], general_form[0])
    assert close(rigid_form[0], S.transform_inertia(R, p, rigid))


@pytest.mark.parametrize("seed", SEEDS)
def test_inertia_times_against_the_matrix_product(seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(6, 6))
    I = np.zeros((2, 6, 6))
    I[0] = A  # any 6x6
    I[1] = S.spatial_inertia(*random_body(rng))
    x = rng.normal(size=6)
    assert close(S.inertia_times(I, 0, t6(x)), A @ x)
    assert close(S.rigid_inertia_times(I, 1, t6(x)), I[1] @ x)
    assert close(S.inertia_transpose_times(I, 0, t6(x)), A.T @ x)


@pytest.mark.parametrize("seed", SEEDS)
def test_inertia_variation_is_its_matrix_formula(seed):
    """B = crf(ν) I - I crm(ν) + (x -> crf(x) h), h = I ν, column by column (the B of the RNEA derivatives, twice the
    Coriolis matrix's)."""
    rng = np.random.default_rng(seed)
    I = S.spatial_inertia(*random_body(rng))[None]
    nu = rng.normal(size=6)
    h = I[0] @ nu
    B = np.full((1, 6, 6), np.nan)
    S.inertia_variation(I, 0, t6(nu), t6(h), B)
    ref = -crm(nu).T @ I[0] - I[0] @ crm(nu) + np.column_stack([-crm(e).T @ h for e in np.eye(6)])
    assert close(B[0], ref)


def test_skew_is_the_cross_product():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=3), rng.normal(size=3)
    assert close(S.skew(a) @ b, np.cross(a, b))
    assert close(S.skew(a), hat(a))
