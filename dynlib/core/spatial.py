"""6D spatial algebra, linear part first (Pinocchio's order), in numba.

Values, not buffers: inside the kernels a spatial vector is a 6-tuple of floats
(motion ``(v, w)``, linear then angular; force ``(f, n)``), a 3x3 matrix a
9-tuple in row order, and a rigid transform the pair ``X = (R, p)``: the pose of
a child frame in its parent, ``x_parent = R @ x_child + p`` (Pinocchio's
``SE3``; Featherstone's ``X`` from parent to child is its inverse action on
motion vectors). Tuples live in registers: no allocation, no reference counting,
and every helper is inlined, so ``v_i = act_inv_motion(X, v_parent) + vJ``
compiles to the dozen multiply-adds it reads as. The helpers are compiled once
each, as `kernel`s (`dynlib._numba.decorators`: no runtime, numpy's error model),
and LLVM inlines them into each kernel when it links the kernel's code, except the
few too large for that, on ABA's path with few call sites, which LLVM always inlines
(`inline_kernel`). (Inlining every helper in numba's IR, ``inline="always"``,
types every helper again at each call site: the first run compiled a third longer.)

Arrays are touched only at the edges, through an array and an index, never a
view (a view ``a[i]`` is an array struct built in compiled code, and a slice
assignment ``x[:] = y`` a generic copy loop):
`vec6` / `store6` / `add_to6` read and write row i of an (n, 6) array, `pose` /
`store_pose` a transform in (n, 3, 3) and (n, 3) arrays, and 6x6 inertias stay
in (n, 6, 6) arrays (`inertia_times`, `act_inertia`; `rigid_inertia_times` and
`act_rigid_inertia` read a rigid body's inertia as its ten numbers m, m c, Io).

A spatial inertia is the 6x6 matrix ``[[m 1, -m [c]x], [m [c]x, Ic - m [c]x[c]x]]``
about the frame origin (RBDA §2.13, reordered linear-first).
"""
import numpy as np

from .._numba.decorators import inline_kernel, kernel


ZERO6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


# -- 6-vectors ---------------------------------------------------------------

@kernel
def vec6(a, i):
    """Row i of an (n, 6) array, as a 6-tuple."""
    return (a[i, 0], a[i, 1], a[i, 2], a[i, 3], a[i, 4], a[i, 5])


@kernel
def tuple6(x):
    """A 1-D array of six floats, as a 6-tuple."""
    return (x[0], x[1], x[2], x[3], x[4], x[5])


@kernel
def store6(a, i, x):
    """a[i, :] = x."""
    for r in range(6):
        a[i, r] = x[r]


@kernel
def add_to6(a, i, x):
    """a[i, :] += x."""
    for r in range(6):
        a[i, r] += x[r]


@inline_kernel
def sub_outer6(a, i, x, y):
    """a[i] -= x y^T for an (n, 6, 6) array and two 6-tuples."""
    for r in range(6):
        for c in range(6):
            a[i, r, c] -= x[r] * y[c]


@kernel
def add6(x, y):
    return (x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5])


@kernel
def sub6(x, y):
    return (x[0] - y[0], x[1] - y[1], x[2] - y[2], x[3] - y[3], x[4] - y[4], x[5] - y[5])


@kernel
def scale6(x, s):
    return (x[0] * s, x[1] * s, x[2] * s, x[3] * s, x[4] * s, x[5] * s)


@kernel
def dot6(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@kernel
def unit6(c):
    """The c-th unit 6-vector."""
    return (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0,
            1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)


@inline_kernel
def joint_motion(S, k0, n, x):
    """S_i x_i = sum of x[k] S[k] over the n DoFs k0.. of one joint (a motion 6-tuple)."""
    out = ZERO6
    for k in range(k0, k0 + n):
        out = add6(out, scale6(vec6(S, k), x[k]))
    return out


@kernel
def cross_motion(v, m):
    """v x m (motion cross product): (w x mv + v x mw, w x mw)."""
    return (v[4] * m[2] - v[5] * m[1] + v[1] * m[5] - v[2] * m[4],
            v[5] * m[0] - v[3] * m[2] + v[2] * m[3] - v[0] * m[5],
            v[3] * m[1] - v[4] * m[0] + v[0] * m[4] - v[1] * m[3],
            v[4] * m[5] - v[5] * m[4],
            v[5] * m[3] - v[3] * m[5],
            v[3] * m[4] - v[4] * m[3])


@kernel
def cross_force(v, f):
    """v x* f (force cross product): (w x f, w x n + v x f)."""
    return (v[4] * f[2] - v[5] * f[1],
            v[5] * f[0] - v[3] * f[2],
            v[3] * f[1] - v[4] * f[0],
            v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1],
            v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2],
            v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0])


# -- 3x3 matrices (9-tuples, row order) ----------------------------------------

@kernel
def mat3(a, i, r0, c0):
    """The 3x3 block a[i, r0:r0+3, c0:c0+3] of an (n, k, k) array, as a 9-tuple."""
    return (a[i, r0, c0], a[i, r0, c0 + 1], a[i, r0, c0 + 2],
            a[i, r0 + 1, c0], a[i, r0 + 1, c0 + 1], a[i, r0 + 1, c0 + 2],
            a[i, r0 + 2, c0], a[i, r0 + 2, c0 + 1], a[i, r0 + 2, c0 + 2])


@kernel
def add_to_mat3(a, i, r0, c0, B):
    """a[i, r0:r0+3, c0:c0+3] += B."""
    for r in range(3):
        for c in range(3):
            a[i, r0 + r, c0 + c] += B[3 * r + c]


@kernel
def matmul3(A, B):
    """A B."""
    return (A[0] * B[0] + A[1] * B[3] + A[2] * B[6],
            A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[3] + A[5] * B[6],
            A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
            A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6],
            A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8])


@kernel
def matmul3_t(A, B):
    """A B^T."""
    return (A[0] * B[0] + A[1] * B[1] + A[2] * B[2],
            A[0] * B[3] + A[1] * B[4] + A[2] * B[5],
            A[0] * B[6] + A[1] * B[7] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[1] + A[5] * B[2],
            A[3] * B[3] + A[4] * B[4] + A[5] * B[5],
            A[3] * B[6] + A[4] * B[7] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[1] + A[8] * B[2],
            A[6] * B[3] + A[7] * B[4] + A[8] * B[5],
            A[6] * B[6] + A[7] * B[7] + A[8] * B[8])


@kernel
def symmetric3(A):
    """The symmetric matrix with A's upper triangle (the compiler then computes only that)."""
    return (A[0], A[1], A[2], A[1], A[4], A[5], A[2], A[5], A[8])


@kernel
def transpose3(A):
    return (A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8])


@kernel
def add3x3(A, B):
    return (A[0] + B[0], A[1] + B[1], A[2] + B[2], A[3] + B[3], A[4] + B[4],
            A[5] + B[5], A[6] + B[6], A[7] + B[7], A[8] + B[8])


@kernel
def skew_times(p, A):
    """[p]x A, column by column p x A[:, c]."""
    return (p[1] * A[6] - p[2] * A[3], p[1] * A[7] - p[2] * A[4], p[1] * A[8] - p[2] * A[5],
            p[2] * A[0] - p[0] * A[6], p[2] * A[1] - p[0] * A[7], p[2] * A[2] - p[0] * A[8],
            p[0] * A[3] - p[1] * A[0], p[0] * A[4] - p[1] * A[1], p[0] * A[5] - p[1] * A[2])


@kernel
def matvec3(R, x0, x1, x2):
    """R (x0, x1, x2), as three floats."""
    return (R[0] * x0 + R[1] * x1 + R[2] * x2,
            R[3] * x0 + R[4] * x1 + R[5] * x2,
            R[6] * x0 + R[7] * x1 + R[8] * x2)


@kernel
def matvec3_t(R, x0, x1, x2):
    """R^T (x0, x1, x2), as three floats."""
    return (R[0] * x0 + R[3] * x1 + R[6] * x2,
            R[1] * x0 + R[4] * x1 + R[7] * x2,
            R[2] * x0 + R[5] * x1 + R[8] * x2)


# -- transforms X = (R, p) ---------------------------------------------------------

@kernel
def pose(Rs, ps, i):
    """The transform (Rs[i], ps[i]) of (n, 3, 3) and (n, 3) arrays, as tuples."""
    return (mat3(Rs, i, 0, 0), (ps[i, 0], ps[i, 1], ps[i, 2]))


@kernel
def store_pose(Rs, ps, i, X):
    """(Rs[i], ps[i]) = X."""
    R, p = X
    for r in range(3):
        for c in range(3):
            Rs[i, r, c] = R[3 * r + c]
        ps[i, r] = p[r]


@kernel
def compose(X1, X2):
    """X1 * X2 = (R1 R2, R1 p2 + p1)."""
    R1, p1 = X1
    R2, p2 = X2
    t0, t1, t2 = matvec3(R1, p2[0], p2[1], p2[2])
    return (matmul3(R1, R2), (t0 + p1[0], t1 + p1[1], t2 + p1[2]))


@kernel
def act_motion(X, m):
    """X.act(m): a motion vector from the child frame to the parent frame."""
    R, p = X
    w0, w1, w2 = matvec3(R, m[3], m[4], m[5])
    v0, v1, v2 = matvec3(R, m[0], m[1], m[2])
    return (v0 + p[1] * w2 - p[2] * w1, v1 + p[2] * w0 - p[0] * w2, v2 + p[0] * w1 - p[1] * w0, w0, w1, w2)


@kernel
def act_inv_motion(X, m):
    """X.actInv(m): a motion vector from the parent frame to the child frame."""
    R, p = X
    u0 = m[0] - (p[1] * m[5] - p[2] * m[4])
    u1 = m[1] - (p[2] * m[3] - p[0] * m[5])
    u2 = m[2] - (p[0] * m[4] - p[1] * m[3])
    v0, v1, v2 = matvec3_t(R, u0, u1, u2)
    w0, w1, w2 = matvec3_t(R, m[3], m[4], m[5])
    return (v0, v1, v2, w0, w1, w2)


@kernel
def act_force(X, f):
    """X.act(f): a force vector from the child frame to the parent frame."""
    R, p = X
    f0, f1, f2 = matvec3(R, f[0], f[1], f[2])
    n0, n1, n2 = matvec3(R, f[3], f[4], f[5])
    return (f0, f1, f2, n0 + p[1] * f2 - p[2] * f1, n1 + p[2] * f0 - p[0] * f2, n2 + p[0] * f1 - p[1] * f0)


@kernel
def act_inv_force(X, f):
    """X.actInv(f): a force vector from the parent frame to the child frame."""
    R, p = X
    n0 = f[3] - (p[1] * f[2] - p[2] * f[1])
    n1 = f[4] - (p[2] * f[0] - p[0] * f[2])
    n2 = f[5] - (p[0] * f[1] - p[1] * f[0])
    f0, f1, f2 = matvec3_t(R, f[0], f[1], f[2])
    m0, m1, m2 = matvec3_t(R, n0, n1, n2)
    return (f0, f1, f2, m0, m1, m2)


# -- 6x6 inertias, in (n, 6, 6) arrays ------------------------------------------------

@inline_kernel
def inertia_times(I, i, x):
    """I[i] @ x for an (n, 6, 6) array of inertias and a 6-tuple x."""
    return (I[i, 0, 0] * x[0] + I[i, 0, 1] * x[1] + I[i, 0, 2] * x[2] + I[i, 0, 3] * x[3] + I[i, 0, 4] * x[4] + I[i, 0, 5] * x[5],
            I[i, 1, 0] * x[0] + I[i, 1, 1] * x[1] + I[i, 1, 2] * x[2] + I[i, 1, 3] * x[3] + I[i, 1, 4] * x[4] + I[i, 1, 5] * x[5],
            I[i, 2, 0] * x[0] + I[i, 2, 1] * x[1] + I[i, 2, 2] * x[2] + I[i, 2, 3] * x[3] + I[i, 2, 4] * x[4] + I[i, 2, 5] * x[5],
            I[i, 3, 0] * x[0] + I[i, 3, 1] * x[1] + I[i, 3, 2] * x[2] + I[i, 3, 3] * x[3] + I[i, 3, 4] * x[4] + I[i, 3, 5] * x[5],
            I[i, 4, 0] * x[0] + I[i, 4, 1] * x[1] + I[i, 4, 2] * x[2] + I[i, 4, 3] * x[3] + I[i, 4, 4] * x[4] + I[i, 4, 5] * x[5],
            I[i, 5, 0] * x[0] + I[i, 5, 1] * x[1] + I[i, 5, 2] * x[2] + I[i, 5, 3] * x[3] + I[i, 5, 4] * x[4] + I[i, 5, 5] * x[5])


@kernel
def inertia_transpose_times(I, i, x):
    """I[i]^T @ x for an (n, 6, 6) array and a 6-tuple x: `inertia_times` for a matrix that is not symmetric
    (the composite B of `dynlib.algorithms.derivatives`)."""
    return (I[i, 0, 0] * x[0] + I[i, 1, 0] * x[1] + I[i, 2, 0] * x[2] + I[i, 3, 0] * x[3] + I[i, 4, 0] * x[4] + I[i, 5, 0] * x[5],
            I[i, 0, 1] * x[0] + I[i, 1, 1] * x[1] + I[i, 2, 1] * x[2] + I[i, 3, 1] * x[3] + I[i, 4, 1] * x[4] + I[i, 5, 1] * x[5],
            I[i, 0, 2] * x[0] + I[i, 1, 2] * x[1] + I[i, 2, 2] * x[2] + I[i, 3, 2] * x[3] + I[i, 4, 2] * x[4] + I[i, 5, 2] * x[5],
            I[i, 0, 3] * x[0] + I[i, 1, 3] * x[1] + I[i, 2, 3] * x[2] + I[i, 3, 3] * x[3] + I[i, 4, 3] * x[4] + I[i, 5, 3] * x[5],
            I[i, 0, 4] * x[0] + I[i, 1, 4] * x[1] + I[i, 2, 4] * x[2] + I[i, 3, 4] * x[3] + I[i, 4, 4] * x[4] + I[i, 5, 4] * x[5],
            I[i, 0, 5] * x[0] + I[i, 1, 5] * x[1] + I[i, 2, 5] * x[2] + I[i, 3, 5] * x[3] + I[i, 4, 5] * x[4] + I[i, 5, 5] * x[5])


@kernel
def rigid_inertia_times(I, i, x):
    """I[i] @ x for a rigid-body spatial inertia I[i] = [[m 1, -[h]x], [[h]x, Io]]: (m v - h x w, h x v + Io w).

    Reads only m, h = m c and Io (13 numbers instead of 36).
    """
    m = I[i, 0, 0]
    h0, h1, h2 = I[i, 5, 1], I[i, 3, 2], I[i, 4, 0]
    n0, n1, n2 = matvec3(symmetric3(mat3(I, i, 3, 3)), x[3], x[4], x[5])
    return (m * x[0] - (h1 * x[5] - h2 * x[4]),
            m * x[1] - (h2 * x[3] - h0 * x[5]),
            m * x[2] - (h0 * x[4] - h1 * x[3]),
            n0 + h1 * x[2] - h2 * x[1],
            n1 + h2 * x[0] - h0 * x[2],
            n2 + h0 * x[1] - h1 * x[0])


@kernel
def inertia_variation(I, i, nu, h, B):
    """B[i] = (ν x*) I - I (ν x) + (x -> x x* h) for the symmetric 6x6 I = I[i], a motion ν and h = I ν:
    Pinocchio's ``Inertia::variation(ν)`` plus the force cross matrix of h, the derivative of the body force
    I α + ν x* I ν along ν (`dynlib.algorithms.derivatives`), and twice the B(I, ν) of the Coriolis matrix
    (`dynlib.algorithms.coriolis`). With A = I (ν x), (ν x*) I - I (ν x) = -(A + A^T); the last term is
    [[0, -[h_lin]x], [-[h_lin]x, -[h_ang]x]]."""
    vx, vy, vz, wx, wy, wz = nu
    for r in range(6):
        I0, I1, I2, I3, I4, I5 = I[i, r, 0], I[i, r, 1], I[i, r, 2], I[i, r, 3], I[i, r, 4], I[i, r, 5]
        B[i, r, 0] = wy * I2 - wz * I1
        B[i, r, 1] = wz * I0 - wx * I2
        B[i, r, 2] = wx * I1 - wy * I0
        B[i, r, 3] = vy * I2 - vz * I1 + wy * I5 - wz * I4
        B[i, r, 4] = vz * I0 - vx * I2 + wz * I3 - wx * I5
        B[i, r, 5] = vx * I1 - vy * I0 + wx * I4 - wy * I3
    for r in range(6):
        for c in range(r, 6):
            s = B[i, r, c] + B[i, c, r]
            B[i, r, c] = s
            B[i, c, r] = s
    for o in (0, 3):  # -[h_lin]x in the blocks (0, 3) and (3, 0), -[h_ang]x in (3, 3)
        B[i, o + 0, 4 - o] += h[2]
        B[i, o + 0, 5 - o] -= h[1]
        B[i, o + 1, 3 - o] -= h[2]
        B[i, o + 1, 5 - o] += h[0]
        B[i, o + 2, 3 - o] += h[1]
        B[i, o + 2, 4 - o] -= h[0]
    B[i, 3, 4] += h[5]
    B[i, 3, 5] -= h[4]
    B[i, 4, 3] -= h[5]
    B[i, 4, 5] += h[3]
    B[i, 5, 3] += h[4]
    B[i, 5, 4] -= h[3]


@inline_kernel
def act_inertia(X, I, i, out, j):
    """out[j] += X.act(I[i]) = Xf I Xf^T, a symmetric 6x6 (articulated) inertia from child to parent.

    With I = [[A, B], [B^T, C]] and Xf = [[R, 0], [[p]x R, R]], the rotated blocks
    A' = R A R^T, B' = R B R^T, C' = R C R^T give
    Xf I Xf^T = [[A', Y], [Y^T, C' + [p]x Y - B'^T [p]x]] with Y = B' - A' [p]x.
    Only the upper triangles of the symmetric blocks A, C, A', C' and Z are computed.
    """
    R, p = X
    A = symmetric3(matmul3_t(matmul3(R, symmetric3(mat3(I, i, 0, 0))), R))
    B = matmul3_t(matmul3(R, mat3(I, i, 0, 3)), R)
    C = symmetric3(matmul3_t(matmul3(R, symmetric3(mat3(I, i, 3, 3))), R))
    Y = add3x3(B, transpose3(skew_times(p, A)))  # A' [p]x = -([p]x A')^T, A' symmetric
    Z = symmetric3(add3x3(C, add3x3(skew_times(p, Y), transpose3(skew_times(p, B)))))  # -B'^T [p]x = ([p]x B')^T
    add_to_mat3(out, j, 0, 0, A)
    add_to_mat3(out, j, 0, 3, Y)
    add_to_mat3(out, j, 3, 0, transpose3(Y))
    add_to_mat3(out, j, 3, 3, Z)


@kernel
def act_rigid_inertia(X, I, i, out, j):
    """out[j] += X.act(I[i]) for a rigid-body spatial inertia I[i] = [[m 1, -[h]x], [[h]x, Io]].

    The closed form of `act_inertia` for that structure (h = m c, Io about the origin):
    ``h' = R h + m p`` and ``Io' = R Io R^T - [p]x[Rh]x - [Rh]x[p]x - m [p]x[p]x``, with
    ``[a]x[b]x = b a^T - (a.b) 1``. Reads only m, h and Io.
    """
    R, p = X
    m = I[i, 0, 0]
    Rh0, Rh1, Rh2 = matvec3(R, I[i, 5, 1], I[i, 3, 2], I[i, 4, 0])
    h0, h1, h2 = Rh0 + m * p[0], Rh1 + m * p[1], Rh2 + m * p[2]
    Io = matmul3_t(matmul3(R, mat3(I, i, 3, 3)), R)
    pRh = p[0] * Rh0 + p[1] * Rh1 + p[2] * Rh2
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    # -[p]x[Rh]x - [Rh]x[p]x - m [p]x[p]x = 2 (p.Rh) 1 - p Rh^T - Rh p^T + m (|p|^2 1 - p p^T)
    dg = 2.0 * pRh + m * pp
    Io = add3x3(Io, (dg - 2.0 * p[0] * Rh0 - m * p[0] * p[0], -p[0] * Rh1 - Rh0 * p[1] - m * p[0] * p[1],
                     -p[0] * Rh2 - Rh0 * p[2] - m * p[0] * p[2],
                     -p[1] * Rh0 - Rh1 * p[0] - m * p[1] * p[0], dg - 2.0 * p[1] * Rh1 - m * p[1] * p[1],
                     -p[1] * Rh2 - Rh1 * p[2] - m * p[1] * p[2],
                     -p[2] * Rh0 - Rh2 * p[0] - m * p[2] * p[0], -p[2] * Rh1 - Rh2 * p[1] - m * p[2] * p[1],
                     dg - 2.0 * p[2] * Rh2 - m * p[2] * p[2]))
    hx = (0.0, -h2, h1, h2, 0.0, -h0, -h1, h0, 0.0)
    for r in range(3):
        out[j, r, r] += m
    add_to_mat3(out, j, 0, 3, (0.0, h2, -h1, -h2, 0.0, h0, h1, -h0, 0.0))
    add_to_mat3(out, j, 3, 0, hx)
    add_to_mat3(out, j, 3, 3, Io)


# -- model building (plain numpy) ----------------------------------------------------

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
