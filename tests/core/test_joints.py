"""dynlib.core.joints: joint transforms and the joints' exponential maps, one joint at a time.

References built here, independently of the module: rotations from scipy
(`Rotation.from_quat`, `from_rotvec`), and the matrix exponential of the twist
(scipy.linalg.expm of the 4x4 matrix [[ω×, v], [0, 0]]) for what integrate and
difference mean (Pinocchio's q ⊕ v: the joint transform moves by exp of the
body-frame twist, XJ(q ⊕ v) = XJ(q) exp(v̂)):

- `quat_to_rot`, `axis_angle_to_rot`, `jcalc` for every joint type;
- integrate: XJ(q)⁻¹ XJ(q ⊕ v) = exp(S v) with the joint's motion subspace S
  (revolute: rotation about the axis, prismatic: translation along it, free-flyer:
  the whole twist, planar: (vx, vy, ωz)), also for tiny and large rotations
  where the kernels switch to series;
- difference: exp(S (q1 ⊖ q0)) = XJ(q0)⁻¹ XJ(q1), the shorter rotation, either
  quaternion sign; unit quaternions stay unit;
- the whole-model kernels against the per-joint ones on a hand-made layout.

The model-level identities (on random trees and the sample robots) are in
test_configuration.py and, against Pinocchio, test_pinocchio.py.
"""
import math

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

from dynlib.core import joints as J

SEEDS = range(6)
TOL = 1e-12


def hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def exp_twist(v):
    """exp of a body twist (linear, angular) as a 4x4 homogeneous matrix, by scipy's expm."""
    T = np.zeros((4, 4))
    T[:3, :3] = hat(v[3:])
    T[:3, 3] = v[:3]
    return expm(T)


def homogeneous(X):
    R, p = X
    H = np.eye(4)
    H[:3, :3] = np.reshape(R, (3, 3))
    H[:3, 3] = p
    return H


def close(a, b, tol=TOL):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.max(np.abs(a - b)) <= tol * max(1.0, np.max(np.abs(b)))


def unit(v):
    return v / np.linalg.norm(v)


def subspace(jtype, axis):
    """(6, nv) motion subspace, linear rows first (what urdf.py builds, written here again)."""
    if jtype == J.REVOLUTE:
        return np.r_[np.zeros(3), axis][:, None]
    if jtype == J.PRISMATIC:
        return np.r_[axis, np.zeros(3)][:, None]
    if jtype == J.FREEFLYER:
        return np.eye(6)
    S = np.zeros((6, 3))
    S[0, 0] = S[1, 1] = S[5, 2] = 1.0
    return S


def random_q(jtype, rng):
    if jtype == J.FREEFLYER:
        return np.r_[rng.uniform(-1, 1, 3), Rotation.random(random_state=rng).as_quat()]
    if jtype == J.PLANAR:
        return np.r_[rng.uniform(-1, 1, 2), rng.uniform(-np.pi, np.pi)]
    return rng.uniform(-3, 3, 1)


def jcalc(jtype, axis, q):
    return J.jcalc(jtype, np.array([axis]), 0, np.asarray(q, dtype=float), 0)


def integrate(jtype, q, v):
    """q ⊕ v for one joint, through the whole-model kernel with a one-joint layout."""
    out = np.full(J.NQ[jtype], np.nan)
    J.integrate_kernel(np.array([jtype]), np.zeros(1, np.int64), np.zeros(1, np.int64), np.asarray(q, float),
                       np.asarray(v, float), out)
    return out


def difference(jtype, q0, q1):
    out = np.full(J.NV[jtype], np.nan)
    J.difference_joint(jtype, np.asarray(q0, float), np.asarray(q1, float), 0, 0, out)
    return out


ALL = (J.REVOLUTE, J.PRISMATIC, J.FREEFLYER, J.PLANAR)
IDS = [J.NAMES[t] for t in ALL]


# -- rotations and joint transforms ----------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_quaternion_to_rotation_is_scipys(seed):
    rng = np.random.default_rng(seed)
    quat = Rotation.random(random_state=rng).as_quat()  # (x, y, z, w), scalar last as dyn's files
    R = np.reshape(J.quat_to_rot(*quat), (3, 3))
    assert close(R, Rotation.from_quat(quat).as_matrix())
    # a quaternion that is not unit is normalised first; -q is the same rotation
    assert close(np.reshape(J.quat_to_rot(*(3.7 * quat)), (3, 3)), R)
    assert close(np.reshape(J.quat_to_rot(*(-quat)), (3, 3)), R)
    assert close(R @ R.T, np.eye(3)) and np.linalg.det(R) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("theta", [0.0, 1e-9, 0.3, -2.0, math.pi, 7.5])
def test_axis_angle_rotation_is_scipys(theta):
    axis = unit(np.array([0.3, -0.5, 0.8]))
    R = np.reshape(J.axis_angle_to_rot(*axis, theta), (3, 3))
    assert close(R, Rotation.from_rotvec(theta * axis).as_matrix())


@pytest.mark.parametrize("seed", SEEDS)
def test_joint_transforms_of_every_type(seed):
    rng = np.random.default_rng(seed)
    axis = unit(rng.normal(size=3))
    th = rng.uniform(-3, 3)
    R, p = jcalc(J.REVOLUTE, axis, [th])
    assert close(np.reshape(R, (3, 3)), Rotation.from_rotvec(th * axis).as_matrix()) and close(p, np.zeros(3))
    R, p = jcalc(J.PRISMATIC, axis, [th])
    assert close(np.reshape(R, (3, 3)), np.eye(3)) and close(p, th * axis)
    q = random_q(J.FREEFLYER, rng)
    R, p = jcalc(J.FREEFLYER, axis, q)
    assert close(np.reshape(R, (3, 3)), Rotation.from_quat(q[3:]).as_matrix()) and close(p, q[:3])
    q = random_q(J.PLANAR, rng)
    R, p = jcalc(J.PLANAR, axis, q)  # in the joint frame's x-y plane (urdf turns <axis> into z)
    assert close(np.reshape(R, (3, 3)), Rotation.from_rotvec([0, 0, q[2]]).as_matrix())
    assert close(p, [q[0], q[1], 0.0])


def test_joint_transform_reads_its_own_coordinates_and_axis():
    """jcalc(jtype, jaxis, i, q, iq): joint i's axis, coordinates from iq in a longer q."""
    axes = np.array([[1.0, 0, 0], [0, 0, 1.0], [0, 1.0, 0]])
    q = np.array([9.0, 9.0, 0.4, 9.0])
    R, _ = J.jcalc(J.REVOLUTE, axes, 1, q, 2)
    assert close(np.reshape(R, (3, 3)), Rotation.from_rotvec([0, 0, 0.4]).as_matrix())


# -- integrate: the exponential of the joint's twist ---------------------------------------------

@pytest.mark.parametrize("jtype", ALL, ids=IDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_integrate_moves_the_joint_by_the_exponential_of_its_twist(jtype, seed):
    rng = np.random.default_rng(seed)
    axis = unit(rng.normal(size=3))
    q = random_q(jtype, rng)
    v = rng.normal(size=J.NV[jtype]) * 1.5
    q1 = integrate(jtype, q, v)
    moved = np.linalg.solve(homogeneous(jcalc(jtype, axis, q)), homogeneous(jcalc(jtype, axis, q1)))
    assert close(moved, exp_twist(subspace(jtype, axis) @ v), 1e-11)


def _small_rotation(jtype, angle, seed=7):
    """(q, v) with a random v whose rotation has the given angle (the rest of it order 1)."""
    rng = np.random.default_rng(seed)
    q = random_q(jtype, rng)
    v = rng.normal(size=J.NV[jtype])
    w = slice(3, 6) if jtype == J.FREEFLYER else slice(2, 3)
    v[w] *= angle / np.linalg.norm(v[w])
    return q, v


@pytest.mark.parametrize("jtype, angle", [(J.FREEFLYER, a) for a in (0.0, 1e-10, 1e-7, 1e-5, 1.5e-4, 1e-3, 0.1, 3.0, 6.0)]
                         + [(J.PLANAR, a) for a in (0.0, 1e-10, 1e-7, 1.5e-6, 1e-5, 1e-3, 0.1, 3.0, 6.0)])
def test_integrate_is_exact_across_the_small_angle_series(jtype, angle):
    """The free-flyer and planar exponentials switch to series for small rotations: exact on both sides."""
    q, v = _small_rotation(jtype, angle)
    q1 = integrate(jtype, q, v)
    axis = (0.0, 0.0, 1.0)  # not used by these two joints
    moved = np.linalg.solve(homogeneous(jcalc(jtype, axis, q)), homogeneous(jcalc(jtype, axis, q1)))
    assert close(moved, exp_twist(subspace(jtype, axis) @ v), 1e-12)


@pytest.mark.parametrize("jtype, angle", [(J.FREEFLYER, a) for a in (0.0, 1e-10, 1e-7, 5e-5, 1.5e-4, 1e-2, 0.1, 3.0)]
                         + [(J.PLANAR, a) for a in (0.0, 1e-10, 1e-7, 1.5e-6, 1e-3, 0.1, 3.0, 6.0)])
def test_difference_inverts_integrate_across_the_small_angle_series(jtype, angle):
    """(q ⊕ v) ⊖ q = v to round-off, for rotations below π (the free-flyer's is the shorter one)."""
    q, v = _small_rotation(jtype, angle)
    assert close(difference(jtype, q, integrate(jtype, q, v)), v, 1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_free_flyer_quaternions_stay_unit(seed):
    rng = np.random.default_rng(seed)
    q = random_q(J.FREEFLYER, rng)
    for _ in range(200):
        q = integrate(J.FREEFLYER, q, rng.normal(size=6))
        assert abs(np.linalg.norm(q[3:]) - 1.0) < 4 * np.finfo(float).eps


# -- difference: the logarithm ---------------------------------------------------------------------

@pytest.mark.parametrize("jtype", ALL, ids=IDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_difference_is_the_logarithm_of_the_relative_transform(jtype, seed):
    rng = np.random.default_rng(seed)
    axis = unit(rng.normal(size=3))
    q0, q1 = random_q(jtype, rng), random_q(jtype, rng)
    v = difference(jtype, q0, q1)
    relative = np.linalg.solve(homogeneous(jcalc(jtype, axis, q0)), homogeneous(jcalc(jtype, axis, q1)))
    assert close(exp_twist(subspace(jtype, axis) @ v), relative, 1e-10)
    if jtype == J.FREEFLYER:
        assert np.linalg.norm(v[3:]) <= math.pi + 1e-12  # the shorter rotation
    assert close(integrate(jtype, q0, v)[:3], q1[:3], 1e-10)


def test_free_flyer_difference_ignores_the_quaternion_sign_and_takes_the_shorter_way():
    rng = np.random.default_rng(11)
    q0 = random_q(J.FREEFLYER, rng)
    q1 = q0.copy()
    q1[3:] = (Rotation.from_quat(q0[3:]) * Rotation.from_rotvec([0, 0, 1.5 * math.pi])).as_quat()
    v = difference(J.FREEFLYER, q0, q1)
    assert close(v[3:], [0, 0, -0.5 * math.pi])  # 270 degrees one way is 90 the other
    flipped = q1.copy()
    flipped[3:] = -flipped[3:]
    assert close(difference(J.FREEFLYER, q0, flipped), v)


def test_difference_of_a_configuration_with_itself_is_zero():
    rng = np.random.default_rng(12)
    for jtype in ALL:
        q = random_q(jtype, rng)
        assert close(difference(jtype, q, q), np.zeros(J.NV[jtype]), 1e-15)


# -- whole-model kernels ----------------------------------------------------------------------------

def test_model_kernels_apply_each_joint_at_its_own_offsets():
    """A hand-made layout (planar, revolute, free-flyer, prismatic): the model kernels give,
    joint by joint, what the one-joint calls give."""
    rng = np.random.default_rng(13)
    jtype = np.array([J.PLANAR, J.REVOLUTE, J.FREEFLYER, J.PRISMATIC])
    idx_q = np.array([0, 3, 4, 11])
    idx_v = np.array([0, 3, 4, 10])
    q0 = np.concatenate([random_q(t, rng) for t in jtype])
    q1 = np.concatenate([random_q(t, rng) for t in jtype])
    v = rng.normal(size=11)
    out_q, out_v = np.full(12, np.nan), np.full(11, np.nan)
    J.integrate_kernel(jtype, idx_q, idx_v, q0, v, out_q)
    J.difference_kernel(jtype, idx_q, idx_v, q0, q1, out_v)
    for t, iq, iv in zip(jtype, idx_q, idx_v):
        sq, sv = slice(iq, iq + J.NQ[t]), slice(iv, iv + J.NV[t])
        assert np.array_equal(out_q[sq], integrate(t, q0[sq], v[sv]))
        assert np.array_equal(out_v[sv], difference(t, q0[sq], q1[sq]))
