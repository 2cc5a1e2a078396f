"""Joint models: codes, joint transforms (jcalc) and configuration-space geometry.

Every joint's motion subspace ``S`` is constant in the child (body) frame, so the
kernels need only the joint transform from this module (RBDA Table 4.1; the
free-flyer and planar joints use body-frame velocities as Pinocchio does, so
``cJ = 0`` for every joint):

========== ==== ==== ====================================================
code        nq   nv   q / v
========== ==== ==== ====================================================
REVOLUTE     1    1   angle about ``axis`` (URDF revolute and continuous)
PRISMATIC    1    1   displacement along ``axis``
FREEFLYER    7    6   ``x y z qx qy qz qw`` / body-frame ``vx vy vz wx wy wz``
PLANAR       3    3   ``x y theta`` in the joint frame's x-y plane /
                      body-frame ``vx vy wz`` (the model building step turns
                      the URDF ``<axis>`` into the joint frame's z axis)
========== ==== ==== ====================================================

``integrate(q, v)`` is ``q ⊕ v`` (SE(3) / SE(2) exponential for the free-flyer /
planar joint, a sum otherwise) and ``difference(q0, q1)`` its inverse, the
``v`` with ``q0 ⊕ v = q1``; both match Pinocchio's definitions.
"""
import math

from .._numba.decorators import inline_kernel, kernel


REVOLUTE = 0
PRISMATIC = 1
FREEFLYER = 2
PLANAR = 3

NQ = (1, 1, 7, 3)
NV = (1, 1, 6, 3)
NAMES = ("revolute", "prismatic", "floating", "planar")


@kernel
def quat_to_rot(qx, qy, qz, qw):
    """The rotation (a 9-tuple, row order) of the quaternion (x, y, z, w), normalised here."""
    n = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    x, y, z, w = qx / n, qy / n, qz / n, qw / n
    return (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
            2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
            2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))


@kernel
def axis_angle_to_rot(x, y, z, theta):
    """exp(theta [ax]x) for a unit axis (x, y, z) (Rodrigues), a 9-tuple."""
    c = math.cos(theta)
    s = math.sin(theta)
    t = 1.0 - c
    return (c + x * x * t, x * y * t - z * s, x * z * t + y * s,
            y * x * t + z * s, c + y * y * t, y * z * t - x * s,
            z * x * t - y * s, z * y * t + x * s, c + z * z * t)


@inline_kernel
def jcalc(jtype, jaxis, i, q, iq):
    """XJ = (R, p), the joint transform (child in parent) of joint i (axis jaxis[i]) at q[iq:iq+nq]."""
    x, y, z = jaxis[i, 0], jaxis[i, 1], jaxis[i, 2]
    if jtype == REVOLUTE:
        return (axis_angle_to_rot(x, y, z, q[iq]), (0.0, 0.0, 0.0))
    if jtype == PRISMATIC:
        return ((1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (x * q[iq], y * q[iq], z * q[iq]))
    if jtype == FREEFLYER:
        return (quat_to_rot(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]), (q[iq], q[iq + 1], q[iq + 2]))
    c = math.cos(q[iq + 2])  # PLANAR
    s = math.sin(q[iq + 2])
    return ((c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0), (q[iq], q[iq + 1], 0.0))


@kernel
def _quat_mul(a, b):
    """a ⊗ b for quaternions (x, y, z, w) given as 4-tuples."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


@kernel
def _unit_quat(q, k):
    """The quaternion q[k:k+4], normalised, as a 4-tuple."""
    n = math.sqrt(q[k] ** 2 + q[k + 1] ** 2 + q[k + 2] ** 2 + q[k + 3] ** 2)
    return (q[k] / n, q[k + 1] / n, q[k + 2] / n, q[k + 3] / n)


@kernel
def _se3_V_coeffs(theta):
    """(a, b) with V = I + a [w]x + b [w]x^2, the SE(3) left Jacobian factor."""
    if theta < 1e-4:
        t2 = theta * theta
        return 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
    half = math.sin(0.5 * theta)
    return 2.0 * half * half / (theta * theta), (theta - math.sin(theta)) / (theta ** 3)  # 1 - cos θ = 2 sin²(θ/2)


@kernel
def _freeflyer_integrate(q, iq, v, iv, out):
    """out[iq:iq+7] = q ⊕ v on SE(3): M_out = M * exp6(v)."""
    R = quat_to_rot(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6])
    wx, wy, wz = v[iv + 3], v[iv + 4], v[iv + 5]
    vx, vy, vz = v[iv], v[iv + 1], v[iv + 2]
    theta = math.sqrt(wx * wx + wy * wy + wz * wz)
    a, b = _se3_V_coeffs(theta)
    # V v = v + a (w x v) + b (w x (w x v))
    c0 = wy * vz - wz * vy
    c1 = wz * vx - wx * vz
    c2 = wx * vy - wy * vx
    d0 = wy * c2 - wz * c1
    d1 = wz * c0 - wx * c2
    d2 = wx * c1 - wy * c0
    t0 = vx + a * c0 + b * d0
    t1 = vy + a * c1 + b * d1
    t2 = vz + a * c2 + b * d2
    for r in range(3):
        out[iq + r] = q[iq + r] + R[3 * r] * t0 + R[3 * r + 1] * t1 + R[3 * r + 2] * t2
    # rotation: q_out = q ⊗ exp(w/2), renormalised
    h = 0.5 * theta
    s = math.sin(h) / theta if theta > 1e-8 else 0.5 - theta * theta / 48.0
    e = (wx * s, wy * s, wz * s, math.cos(h))
    qa = (q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6])
    qn = _quat_mul(qa, e)
    n = math.sqrt(qn[0] ** 2 + qn[1] ** 2 + qn[2] ** 2 + qn[3] ** 2)
    for k in range(4):
        out[iq + 3 + k] = qn[k] / n


@kernel
def _freeflyer_difference(q0, q1, iq, iv, out):
    """out[iv:iv+6] = log6(M0^-1 M1), the body-frame twist taking q0 to q1 in unit time."""
    a = _unit_quat(q0, iq + 3)
    b = _unit_quat(q1, iq + 3)
    dq = _quat_mul((-a[0], -a[1], -a[2], a[3]), b)
    if dq[3] < 0.0:  # the shorter rotation
        dq = (-dq[0], -dq[1], -dq[2], -dq[3])
    sn = math.sqrt(dq[0] ** 2 + dq[1] ** 2 + dq[2] ** 2)
    theta = 2.0 * math.atan2(sn, dq[3])
    f = theta / sn if sn > 1e-12 else 2.0
    wx, wy, wz = dq[0] * f, dq[1] * f, dq[2] * f
    # translation of M0^-1 M1 in frame 0
    R0 = quat_to_rot(a[0], a[1], a[2], a[3])
    dp0 = q1[iq] - q0[iq]
    dp1 = q1[iq + 1] - q0[iq + 1]
    dp2 = q1[iq + 2] - q0[iq + 2]
    t0 = R0[0] * dp0 + R0[3] * dp1 + R0[6] * dp2
    t1 = R0[1] * dp0 + R0[4] * dp1 + R0[7] * dp2
    t2 = R0[2] * dp0 + R0[5] * dp1 + R0[8] * dp2
    # v = V^-1 t, V^-1 = I - 1/2 [w]x + c [w]x^2
    if theta < 1e-4:
        c = 1.0 / 12.0 + theta * theta / 720.0
    else:
        # 1 - (θ/2) cot(θ/2), the same as 1 - θ sin θ / (2 (1 - cos θ)) without the cancelling 1 - cos θ
        half = 0.5 * theta
        c = (1.0 - half * math.cos(half) / math.sin(half)) / (theta * theta)
    c0 = wy * t2 - wz * t1
    c1 = wz * t0 - wx * t2
    c2 = wx * t1 - wy * t0
    d0 = wy * c2 - wz * c1
    d1 = wz * c0 - wx * c2
    d2 = wx * c1 - wy * c0
    out[iv] = t0 - 0.5 * c0 + c * d0
    out[iv + 1] = t1 - 0.5 * c1 + c * d1
    out[iv + 2] = t2 - 0.5 * c2 + c * d2
    out[iv + 3] = wx
    out[iv + 4] = wy
    out[iv + 5] = wz


@kernel
def _se2_V(w):
    """(s, c) with V = [[s, -c], [c, s]], the SE(2) exponential's translation factor."""
    if abs(w) < 1e-6:
        return 1.0 - w * w / 6.0, 0.5 * w
    half = math.sin(0.5 * w)
    return math.sin(w) / w, 2.0 * half * half / w  # 1 - cos w = 2 sin²(w/2), which does not cancel


@kernel
def _planar_integrate(q, iq, v, iv, out):
    th = q[iq + 2]
    w = v[iv + 2]
    s, c = _se2_V(w)
    lx = s * v[iv] - c * v[iv + 1]
    ly = c * v[iv] + s * v[iv + 1]
    ct, st = math.cos(th), math.sin(th)
    out[iq] = q[iq] + ct * lx - st * ly
    out[iq + 1] = q[iq + 1] + st * lx + ct * ly
    out[iq + 2] = th + w


@kernel
def _planar_difference(q0, q1, iq, iv, out):
    th = q0[iq + 2]
    w = q1[iq + 2] - th
    ct, st = math.cos(th), math.sin(th)
    dx = q1[iq] - q0[iq]
    dy = q1[iq + 1] - q0[iq + 1]
    lx = ct * dx + st * dy
    ly = -st * dx + ct * dy
    s, c = _se2_V(w)
    det = s * s + c * c
    out[iv] = (s * lx + c * ly) / det
    out[iv + 1] = (-c * lx + s * ly) / det
    out[iv + 2] = w


@kernel
def integrate_kernel(jtype, idx_q, idx_v, q, v, out):
    """out = q ⊕ v for a whole model (v is already multiplied by dt)."""
    for i in range(jtype.shape[0]):
        iq = idx_q[i]
        iv = idx_v[i]
        t = jtype[i]
        if t == FREEFLYER:
            _freeflyer_integrate(q, iq, v, iv, out)
        elif t == PLANAR:
            _planar_integrate(q, iq, v, iv, out)
        else:
            out[iq] = q[iq] + v[iv]


@kernel
def difference_joint(t, q0, q1, iq, iv, out):
    """out[iv:iv + nv] = the v with q0 ⊕ v = q1 for one joint of type t (coordinates from iq)."""
    if t == FREEFLYER:
        _freeflyer_difference(q0, q1, iq, iv, out)
    elif t == PLANAR:
        _planar_difference(q0, q1, iq, iv, out)
    else:
        out[iv] = q1[iq] - q0[iq]


@kernel
def difference_kernel(jtype, idx_q, idx_v, q0, q1, out):
    """out = the v with q0 ⊕ v = q1, for a whole model."""
    for i in range(jtype.shape[0]):
        difference_joint(jtype[i], q0, q1, idx_q[i], idx_v[i], out)
