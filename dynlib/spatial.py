"""6D spatial algebra, linear part first (Pinocchio's order), in numba.

A rigid transform is the pair ``(R, p)``: the pose of a child frame in its
parent, ``x_parent = R @ x_child + p`` (Pinocchio's ``SE3``, Featherstone's
``X`` from parent to child is its inverse action on motion vectors).
Motion vectors are ``(v, w)`` (linear, angular), force vectors ``(f, n)``.
A spatial inertia is the 6x6 matrix ``[[m 1, -m [c]x], [m [c]x, Ic - m [c]x[c]x]]``
about the frame origin (RBDA §2.13, reordered linear-first).

Every helper writes into an ``out`` argument: kernels call them inside loops
and must not allocate. ``out`` must not alias an input unless stated.
"""
import numpy as np
from numba import njit

_jit = njit(cache=True, inline="never")


@_jit
def cross3(a, b, out):
    """out = a x b (3-vectors, `out` may not alias)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@_jit
def act_motion(R, p, m, out):
    """out = X.act(m): a motion vector from the child frame to the parent frame."""
    w0 = R[0, 0] * m[3] + R[0, 1] * m[4] + R[0, 2] * m[5]
    w1 = R[1, 0] * m[3] + R[1, 1] * m[4] + R[1, 2] * m[5]
    w2 = R[2, 0] * m[3] + R[2, 1] * m[4] + R[2, 2] * m[5]
    v0 = R[0, 0] * m[0] + R[0, 1] * m[1] + R[0, 2] * m[2]
    v1 = R[1, 0] * m[0] + R[1, 1] * m[1] + R[1, 2] * m[2]
    v2 = R[2, 0] * m[0] + R[2, 1] * m[1] + R[2, 2] * m[2]
    out[0] = v0 + p[1] * w2 - p[2] * w1
    out[1] = v1 + p[2] * w0 - p[0] * w2
    out[2] = v2 + p[0] * w1 - p[1] * w0
    out[3] = w0
    out[4] = w1
    out[5] = w2


@_jit
def act_inv_motion(R, p, m, out):
    """out = X.actInv(m): a motion vector from the parent frame to the child frame."""
    u0 = m[0] - (p[1] * m[5] - p[2] * m[4])
    u1 = m[1] - (p[2] * m[3] - p[0] * m[5])
    u2 = m[2] - (p[0] * m[4] - p[1] * m[3])
    w0, w1, w2 = m[3], m[4], m[5]
    out[0] = R[0, 0] * u0 + R[1, 0] * u1 + R[2, 0] * u2
    out[1] = R[0, 1] * u0 + R[1, 1] * u1 + R[2, 1] * u2
    out[2] = R[0, 2] * u0 + R[1, 2] * u1 + R[2, 2] * u2
    out[3] = R[0, 0] * w0 + R[1, 0] * w1 + R[2, 0] * w2
    out[4] = R[0, 1] * w0 + R[1, 1] * w1 + R[2, 1] * w2
    out[5] = R[0, 2] * w0 + R[1, 2] * w1 + R[2, 2] * w2


@_jit
def act_force(R, p, f, out):
    """out = X.act(f): a force vector from the child frame to the parent frame."""
    f0 = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    f1 = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    f2 = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    n0 = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    n1 = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    n2 = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    out[0] = f0
    out[1] = f1
    out[2] = f2
    out[3] = n0 + p[1] * f2 - p[2] * f1
    out[4] = n1 + p[2] * f0 - p[0] * f2
    out[5] = n2 + p[0] * f1 - p[1] * f0


@_jit
def act_inv_force(R, p, f, out):
    """out = X.actInv(f): a force vector from the parent frame to the child frame."""
    n0 = f[3] - (p[1] * f[2] - p[2] * f[1])
    n1 = f[4] - (p[2] * f[0] - p[0] * f[2])
    n2 = f[5] - (p[0] * f[1] - p[1] * f[0])
    f0, f1, f2 = f[0], f[1], f[2]
    out[0] = R[0, 0] * f0 + R[1, 0] * f1 + R[2, 0] * f2
    out[1] = R[0, 1] * f0 + R[1, 1] * f1 + R[2, 1] * f2
    out[2] = R[0, 2] * f0 + R[1, 2] * f1 + R[2, 2] * f2
    out[3] = R[0, 0] * n0 + R[1, 0] * n1 + R[2, 0] * n2
    out[4] = R[0, 1] * n0 + R[1, 1] * n1 + R[2, 1] * n2
    out[5] = R[0, 2] * n0 + R[1, 2] * n1 + R[2, 2] * n2


@_jit
def cross_motion(v, m, out):
    """out = v x m (motion cross product): (w x mv + v x mw, w x mw)."""
    out[0] = v[4] * m[2] - v[5] * m[1] + v[1] * m[5] - v[2] * m[4]
    out[1] = v[5] * m[0] - v[3] * m[2] + v[2] * m[3] - v[0] * m[5]
    out[2] = v[3] * m[1] - v[4] * m[0] + v[0] * m[4] - v[1] * m[3]
    out[3] = v[4] * m[5] - v[5] * m[4]
    out[4] = v[5] * m[3] - v[3] * m[5]
    out[5] = v[3] * m[4] - v[4] * m[3]


@_jit
def cross_force(v, f, out):
    """out = v x* f (force cross product): (w x f, w x n + v x f)."""
    out[0] = v[4] * f[2] - v[5] * f[1]
    out[1] = v[5] * f[0] - v[3] * f[2]
    out[2] = v[3] * f[1] - v[4] * f[0]
    out[3] = v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1]
    out[4] = v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2]
    out[5] = v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0]


@_jit
def matvec6(A, x, out):
    """out = A @ x for a 6x6 matrix."""
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += A[r, k] * x[k]
        out[r] = s


@_jit
def compose(R1, p1, R2, p2, Rout, pout):
    """(Rout, pout) = (R1, p1) * (R2, p2); the outputs may not alias the inputs."""
    for r in range(3):
        for c in range(3):
            Rout[r, c] = R1[r, 0] * R2[0, c] + R1[r, 1] * R2[1, c] + R1[r, 2] * R2[2, c]
        pout[r] = R1[r, 0] * p2[0] + R1[r, 1] * p2[1] + R1[r, 2] * p2[2] + p1[r]


@_jit
def force_matrix(R, p, X):
    """X = the 6x6 matrix of X.act on force vectors: [[R, 0], [[p]x R, R]]."""
    for r in range(3):
        for c in range(3):
            X[r, c] = R[r, c]
            X[r, c + 3] = 0.0
            X[r + 3, c + 3] = R[r, c]
    for c in range(3):
        X[3, c] = p[1] * R[2, c] - p[2] * R[1, c]
        X[4, c] = p[2] * R[0, c] - p[0] * R[2, c]
        X[5, c] = p[0] * R[1, c] - p[1] * R[0, c]


@_jit
def act_inertia(R, p, I, X, T, out):
    """out += X.act(I) = Xf I Xf^T: a 6x6 (articulated) inertia from child to parent.

    `X` and `T` are 6x6 scratch buffers.
    """
    force_matrix(R, p, X)
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += X[r, k] * I[k, c]
            T[r, c] = s
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += T[r, k] * X[c, k]
            out[r, c] += s


def spatial_inertia(mass, com, I_com):
    """The 6x6 spatial inertia about the frame origin (plain numpy; model building)."""
    cx = skew(np.asarray(com, dtype=float))
    I = np.zeros((6, 6))
    I[:3, :3] = mass * np.eye(3)
    I[:3, 3:] = -mass * cx
    I[3:, :3] = mass * cx
    I[3:, 3:] = np.asarray(I_com, dtype=float) - mass * cx @ cx
    return I


def skew(c):
    """[c]x, the 3x3 cross-product matrix (numpy; model building)."""
    return np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])


def transform_inertia(R, p, I):
    """A spatial inertia given in a child frame, expressed in the parent frame (numpy)."""
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    X[3:, :3] = skew(p) @ R
    return X @ I @ X.T
