"""dynlib.motion.friction_cones: contact wrenches inside Coulomb friction cones.

On root rows of point contacts built here (feet at known positions around the root:
A = [[1, 1, …], [[p_1]x, [p_2]x, …]] for the forces, moments masked):

- `tangents` is an orthonormal basis around any normal;
- `in_cones` against hand-made forces (inside, on the edge, outside, pulling, masked);
- `friction_frame` against scipy's SLSQP solving the same convex program written
  out here, on rows whose unconstrained solution leaves the cones;
- `solve_friction` keeps rows already inside the cones bit for bit, and flags rows
  where no wrench in the cones meets the root equations, with their wrenches
  still in the cones.
"""
import numpy as np
import pytest
from scipy.optimize import minimize

from dynlib.motion.friction_cones import friction_frame, in_cones, solve_friction, tangents
from dynlib.motion.wrench_distribution import solve_frames

FEET = np.array([[0.3, 0.2, -0.5], [0.3, -0.2, -0.5], [-0.3, 0.2, -0.5], [-0.3, -0.2, -0.5]])
WEIGHT = np.tile([0.01, 0.01, 0.01, 1.0, 1.0, 1.0], len(FEET))


def hat(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def root_rows(feet=FEET):
    """A (6, 6k): a wrench (f, τ) at each foot, in world axes, seen at the root origin."""
    A = np.zeros((6, 6 * len(feet)))
    for c, p in enumerate(feet):
        A[:3, 6 * c:6 * c + 3] = np.eye(3)
        A[3:, 6 * c:6 * c + 3] = hat(p)
        A[3:, 6 * c + 3:6 * c + 6] = np.eye(3)
    return A


def point_mask(k=len(FEET)):
    return np.tile(np.r_[np.ones(3, bool), np.zeros(3, bool)], k)


@pytest.mark.parametrize("normal", [(0, 0, 1), (0, 0, -2.5), (1, 0, 0), (0.3, -0.4, 0.5)])
def test_tangents_are_an_orthonormal_basis_around_the_normal(normal):
    n, t1, t2 = tangents(normal)
    B = np.array([n, t1, t2])
    assert np.allclose(B @ B.T, np.eye(3), atol=1e-15)
    assert np.allclose(n, np.asarray(normal) / np.linalg.norm(normal))
    assert np.linalg.det(B) == pytest.approx(1.0)


def test_in_cones_on_hand_made_forces():
    mu = 0.5
    w = np.zeros((6, 2, 6))
    w[0, :, :3] = [[0.1, 0.2, 10.0], [0.0, 0.0, 1.0]]      # inside
    w[1, :, :3] = [[3.0, 4.0, 10.0], [0.0, 0.0, 1.0]]      # on the edge: |f_t| = 5 = mu f_n
    w[2, :, :3] = [[3.0, 4.1, 10.0], [0.0, 0.0, 1.0]]      # just outside
    w[3, :, :3] = [[0.0, 0.0, -1.0], [0.0, 0.0, 1.0]]      # pulling
    w[4, :, :3] = [[0.0, 0.0, 1.0], [5.0, 0.0, 1.0]]       # the second contact slides
    w[5, :, :3] = [[0.0, 0.0, 1.0], [5.0, 0.0, 1.0]]       # ... but it is not in contact
    active = np.ones((6, 2), dtype=bool)
    active[5, 1] = False
    assert list(in_cones(w, active, mu)) == [True, True, False, False, False, True]
    # another normal: the same forces rotated with it
    R = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # z -> y
    assert list(in_cones(w @ np.kron(np.eye(2), R).T, active, mu, normal=R @ [0, 0, 1])) == \
        [True, True, False, False, False, True]


def reference(A, b, weight, guess, mask, mu):
    """The same convex program, written out here and solved by SLSQP (point contacts: the
    unmasked entries are three forces per contact)."""
    on = np.flatnonzero(mask)
    a, W, g = A[:, on], weight[on], guess[on]
    E = np.eye(on.size)
    cons = [{"type": "eq", "fun": lambda x: a @ x - b, "jac": lambda x: a}]
    for c in range(on.size // 3):
        x_, y_, z_ = 3 * c, 3 * c + 1, 3 * c + 2
        # the cone as mu² f_n² - |f_t|² >= 0 with f_n >= 0: the same set, smooth at its apex
        cons.append({"type": "ineq", "fun": lambda x, x_=x_, y_=y_, z_=z_: (mu * x[z_]) ** 2 - x[x_] ** 2 - x[y_] ** 2,
                     "jac": lambda x, x_=x_, y_=y_, z_=z_: 2 * (mu * mu * x[z_] * E[z_] - x[x_] * E[x_] - x[y_] * E[y_])})
        cons.append({"type": "ineq", "fun": lambda x, z_=z_: x[z_], "jac": lambda x, z_=z_: E[z_]})
    x0 = np.tile([0.0, 0.0, b[2] / (on.size // 3)], on.size // 3)  # standing evenly
    res = minimize(lambda x: 0.5 * np.sum(W * (x - g) ** 2), x0, jac=lambda x: W * (x - g),
                   constraints=cons, method="SLSQP", options={"ftol": 1e-12, "maxiter": 1000})
    assert res.success, res.message
    w = np.zeros(mask.size)
    w[on] = res.x
    return w


@pytest.mark.parametrize("seed", [0, 1, 3, 4, 5])
def test_friction_frame_is_the_convex_programs_optimum(seed):
    """A body on four point feet pushed sideways (within μ overall) and twisted about the
    vertical: the least-norm split leaves the cones at some foot; the cone-constrained
    optimum agrees with an independent solver."""
    rng = np.random.default_rng(seed)
    A, mask, mu = root_rows(), point_mask(), 0.4
    fz, heading = rng.uniform(80, 120), rng.uniform(0, 2 * np.pi)
    push = 0.25 * fz * np.array([np.cos(heading), np.sin(heading), 0.0])
    twist = np.r_[rng.uniform(-2, 2, 2), rng.choice([-1, 1]) * rng.uniform(6, 9)]
    b = np.r_[push[:2], fz, np.cross(FEET[:, 2].mean() * np.array([0, 0, 1.0]), push) + twist]
    guess = np.zeros(A.shape[1])
    free = solve_frames(A[None], b[None], WEIGHT, guess[None], mask[None])[0]
    assert not in_cones(free.reshape(1, -1, 6), np.ones((1, 4), bool), mu)[0]
    w, status, _ = friction_frame(A, b, WEIGHT, guess, mask, mu)
    assert status == "Solved"
    assert np.abs(A @ w - b).max() < 1e-8 * np.abs(b).max()
    assert in_cones(w.reshape(1, -1, 6), np.ones((1, 4), bool), mu, tol=1e-7)[0]
    ref = reference(A, b, WEIGHT, guess, mask, mu)
    cost = lambda x: np.sum(WEIGHT * x ** 2)  # noqa: E731
    assert cost(w) == pytest.approx(cost(ref), rel=1e-8)
    assert np.abs(w - ref).max() < 1e-5 * np.abs(ref).max()


def test_solve_friction_keeps_rows_in_the_cones_and_flags_infeasible_ones():
    A, mask, mu = root_rows(), point_mask(), 0.5
    b = np.array([[0.0, 0.0, 100.0, 0.0, 0.0, 0.0],     # standing: the free split is in the cones
                  [30.0, -10.0, 100.0, 1.0, 2.0, 0.0],  # pushed: within mu, but not the free split
                  [0.0, 0.0, -50.0, 0.0, 0.0, 0.0],     # pulled down: the ground would have to pull
                  [80.0, 0.0, 100.0, 0.0, 0.0, 0.0]])   # pushed beyond mu: no split in the cones
    n = len(b)
    A = np.repeat(A[None], n, axis=0)
    masks = np.repeat(mask[None], n, axis=0)
    guess = np.zeros(masks.shape)
    free = solve_frames(A, b, WEIGHT, guess, masks)
    w, feasible, status = solve_friction(A, b, WEIGHT, guess, masks, mu, w0=free)
    assert np.array_equal(w[0], free[0]) and status[0] == "in cone"
    assert list(feasible) == [True, True, False, False]
    assert status[1] == "Solved" and "relaxed" in status[2] and "relaxed" in status[3]
    assert np.all(in_cones(w.reshape(n, -1, 6), np.ones((n, 4), bool), mu, tol=1e-6))
    residual = np.abs(np.einsum("nik,nk->ni", A, w) - b).max(axis=1)
    assert residual[1] < 1e-6 and residual[2] > 1.0 and residual[3] > 1.0
    # without w0 the free split is computed: the same answer
    again, _, _ = solve_friction(A, b, WEIGHT, guess, masks, mu)
    assert np.allclose(again, w, atol=1e-9)
