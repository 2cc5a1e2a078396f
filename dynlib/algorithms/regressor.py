"""Joint-torque regressor: tau = Y(q, v, a) pi, linear in the inertial parameters.

Each body j has ten inertial parameters, in Pinocchio's order
(``Inertia.toDynamicParameters``, Atkeson, An and Hollerbach's)::

    pi_j = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)

with c the centre of mass and I the rotational inertia about the *body origin*,
both in the body frame. A body's net force is linear in them:
``f_j = I_j a_j + v_j x* I_j v_j = A(v_j, a_j) pi_j`` (a_j with gravity, as in
RNEA), and the torque of DoF k is ``tau_k = S_k . sum over the subtree of body(k)
of X*_{i<-j} f_j``. Moving the motion subspace into body j's frame instead of
the force into body i's, ``tau_k = (X_{j<-i} S_k)^T A_j pi_j``, so the entries
are ``Y[k, 10 j : 10 j + 10] = s^T A(v_j, a_j)`` with ``s = X_{j<-i} S_k`` for
every body j in the subtree of DoF k's body i, and zero elsewhere. For
``s = (s_l, s_a)``, ``w, v_l`` the body's angular and linear velocity,
``alpha, a_l`` its accelerations and ``b = a_l + w x v_l``::

    m:      s_l . b
    m c:    w x (w x s_l) - alpha x s_l + b x s_a
    I:      L(alpha)^T s_a - L(w)^T (w x s_a),  L(x)^T y = (x0 y0, x0 y1 + x1 y0,
            x1 y1, x0 y2 + x2 y0, x1 y2 + x2 y1, x2 y2)

Inputs q (nq,), v, a (nv,); output Y (nv, 10 nb); O(n d) with d the tree depth.
Pinocchio's ``computeJointTorqueRegressor`` (its bodies are dyn's: fixed joints
merged) gives the same matrix.

Friction (`friction_regressor`): per revolute or prismatic DoF, the columns of
dyn's joint friction (SPEC §2), ``damping v + friction tanh(v / eps)``, and an
optional constant offset: the motor torque is ``Y pi + F phi``.

Public: `regressor(model, q, v, a)`, `inertial_parameters(model)` (pi of the
model, (10 nb,)), `body_parameters(inertia)` (pi of one 6x6 spatial inertia),
`friction_regressor(model, v, terms, smoothing)`, `friction_dofs(model)`.
"""
import numpy as np

from .._numba.decorators import kernel
from ..core.spatial import act_inv_motion, compose, pose, vec6
from .._numba import parallel
from . import _args
from .kinematics import joint_placements, motion
from ..core import joints as J
from ..errors import InputError


IDENTITY = ((1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0))
FRICTION_TERMS = ("viscous", "coulomb", "offset")  # a term's code (`friction_column`) is its index


@kernel
def _store_row(Y, k, c0, s, vj, aj):
    """Y[k, c0:c0+10] = s^T A(v_j, a_j) (see the module docstring)."""
    sl0, sl1, sl2, sa0, sa1, sa2 = s
    vl0, vl1, vl2, w0, w1, w2 = vj
    al0, al1, al2, al3, al4, al5 = aj
    b0 = al0 + w1 * vl2 - w2 * vl1  # b = a_l + w x v_l
    b1 = al1 + w2 * vl0 - w0 * vl2
    b2 = al2 + w0 * vl1 - w1 * vl0
    Y[k, c0] = sl0 * b0 + sl1 * b1 + sl2 * b2
    u0 = w1 * sl2 - w2 * sl1  # u = w x s_l
    u1 = w2 * sl0 - w0 * sl2
    u2 = w0 * sl1 - w1 * sl0
    Y[k, c0 + 1] = (w1 * u2 - w2 * u1) - (al4 * sl2 - al5 * sl1) + (b1 * sa2 - b2 * sa1)
    Y[k, c0 + 2] = (w2 * u0 - w0 * u2) - (al5 * sl0 - al3 * sl2) + (b2 * sa0 - b0 * sa2)
    Y[k, c0 + 3] = (w0 * u1 - w1 * u0) - (al3 * sl1 - al4 * sl0) + (b0 * sa1 - b1 * sa0)
    r0 = w1 * sa2 - w2 * sa1  # r = w x s_a
    r1 = w2 * sa0 - w0 * sa2
    r2 = w0 * sa1 - w1 * sa0
    Y[k, c0 + 4] = al3 * sa0 - w0 * r0
    Y[k, c0 + 5] = al3 * sa1 + al4 * sa0 - (w0 * r1 + w1 * r0)
    Y[k, c0 + 6] = al4 * sa1 - w1 * r1
    Y[k, c0 + 7] = al3 * sa2 + al5 * sa0 - (w0 * r2 + w2 * r0)
    Y[k, c0 + 8] = al4 * sa2 + al5 * sa1 - (w1 * r2 + w2 * r1)
    Y[k, c0 + 9] = al5 * sa2 - w2 * r2


@kernel
def regressor_kernel(m, d, q, v, a, gravity, Y):
    nb = m.parent.shape[0]
    # pass 1: forward, joint placements, velocities and accelerations (the world's is (-g, 0))
    joint_placements(m, d, q)
    a_world = d.tmp6[3]
    for r in range(3):
        a_world[r] = -gravity[r]
        a_world[r + 3] = 0.0
    motion(m, d, v, a, a_world)
    for k in range(Y.shape[0]):
        for c in range(Y.shape[1]):
            Y[k, c] = 0.0
    # pass 2: for each body j, up its chain: the DoFs' subspaces in frame j against A(v_j, a_j)
    for j in range(nb):
        vj = vec6(d.v, j)
        aj = vec6(d.a, j)
        X = IDENTITY  # body j's pose in body i
        i = j
        while i >= 0:
            for k in range(m.idx_v[i], m.idx_v[i] + m.nvj[i]):
                _store_row(Y, k, 10 * j, act_inv_motion(X, vec6(m.S, k)), vj, aj)
            X = compose(pose(d.lR, d.lp, i), X)
            i = m.parent[i]


@kernel
def regressor_batch(m, d, Q, V, A, gravity, out):
    """Rows of Q, V, A through regressor_kernel."""
    for n in range(Q.shape[0]):
        regressor_kernel(m, d, Q[n], V[n if V.shape[0] > 1 else 0], A[n if A.shape[0] > 1 else 0], gravity, out[n])


def regressor(model, q, v, a):
    """The joint-torque regressor Y (nv, 10 nb) with rnea(q, v, a) = Y @ inertial_parameters(model)
    + armature * a (the rotors' inertia, `Model.with_armature`, belongs to no body: as in Pinocchio,
    it is not a column).

    Columns 10 j .. 10 j + 9 belong to body j (`model.joint_names[j]` moves it), in
    Pinocchio's order (m, m c, I about the body origin: xx, xy, yy, xz, yz, zz).
    Every argument may carry a leading batch dimension N: Y is then (N, nv, 10 nb).
    """
    (Q, V, A), batched, n = _args.vectors(model, q=(q, model.nq), v=(v, model.nv), a=(a, model.nv))
    out = np.empty((n, model.nv, 10 * model.nb))
    parallel.run(model, n, regressor_batch, (Q,), (V,), (A,), model.arrays.gravity, (out,))
    return out if batched else out[0]


def body_parameters(inertia):
    """The ten parameters of a 6x6 spatial inertia about the frame origin (numpy)."""
    I = np.asarray(inertia, dtype=float)
    return np.array([I[0, 0], I[5, 1], I[3, 2], I[4, 0],
                     I[3, 3], I[3, 4], I[4, 4], I[3, 5], I[4, 5], I[5, 5]])


def inertial_parameters(model):
    """pi (10 nb,): every body's ten parameters, in the regressor's column order."""
    return np.concatenate([body_parameters(I) for I in model.arrays.inertia]) if model.nb else np.zeros(0)


def friction_dofs(model):
    """The DoFs that carry URDF joint friction: those of revolute and prismatic joints, (k,) int."""
    a = model.arrays
    return np.array([a.idx_v[i] for i in range(model.nb) if a.jtype[i] in (J.REVOLUTE, J.PRISMATIC)],
                    dtype=np.int64)


@kernel
def friction_column(code, v, smoothing):
    """The friction regressor's column of term ``FRICTION_TERMS[code]`` at velocity v: v ('viscous'),
    tanh(v / smoothing) ('coulomb'), 1 ('offset'); the one home of the friction basis, whose coefficients
    (damping, friction) make the law `dynlib.sim.dynamics.joint_friction`. Compiled, on a number
    (identification's normal equations); on arrays through ``friction_column.py_func``."""
    if code == 0:
        return v
    if code == 1:
        return np.tanh(v / smoothing)
    return 1.0


def check_friction_terms(terms, smoothing):
    """InputError unless every term is one of FRICTION_TERMS and smoothing a positive number."""
    for t in terms:
        if t not in FRICTION_TERMS:
            raise InputError(f"friction terms must be among {', '.join(FRICTION_TERMS)}, got {t!r}")
    if not (np.isfinite(smoothing) and smoothing > 0):
        raise InputError(f"friction smoothing must be a positive number, got {smoothing!r}")


def friction_regressor(model, v, terms=("viscous", "coulomb"), smoothing=1e-3):
    """The friction columns F (nv, len(terms) k) for v (nv,), or (N, nv, len(terms) k) for v (N, nv).

    k = len(friction_dofs(model)); the columns are grouped by term, in the order given
    (each group one column per friction DoF, in DoF order): 'viscous' v, 'coulomb'
    tanh(v / smoothing), 'offset' 1. With phi the matching parameters (damping,
    friction, offset), the motor torque is Y pi + F phi (`friction_column`).
    """
    check_friction_terms(terms, smoothing)
    (V,), batched, n = _args.vectors(model, v=(v, model.nv))
    dofs = friction_dofs(model)
    k = dofs.size
    F = np.zeros((n, model.nv, len(terms) * k))
    rows = np.arange(k)
    for g, t in enumerate(terms):
        F[:, dofs, g * k + rows] = friction_column.py_func(FRICTION_TERMS.index(t), V[:, dofs], smoothing)
    return F if batched else F[0]
