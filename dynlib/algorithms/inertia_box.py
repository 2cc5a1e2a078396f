"""What a body's inertial parameters look like: its equivalent inertia box, and the robot's centre of mass.

A body's mass m, centre of mass c and rotational inertia about it I_c come from its spatial
inertia about the body origin (``model.arrays.inertia``, linear first: ``[[m 1, -m [c]x],
[m [c]x, I_c - m [c]x [c]x]]``). Its principal moments I1 <= I2 <= I3 and principal axes are
the eigenvalues and eigenvectors of I_c. The equivalent inertia box is the uniform solid box
with that mass and those moments, centred at c with its edges along the principal axes
(a box of sides a, b, c has ``I1 = m/12 (b^2 + c^2)`` and so on), so::

    a = sqrt(6/m (I2 + I3 - I1)),  b = sqrt(6/m (I1 + I3 - I2)),  c = sqrt(6/m (I1 + I2 - I3))

Moments that break the triangle inequality (I3 > I1 + I2, which no body has) put a negative
number under the last root: that side is 0 and the box is flagged ``clamped``. A URDF box link
of sides (x, y, z) and mass m gives back its own box. A body is every link that fixed joints
hold together (`dynlib.files.urdf`), as identification estimates them (`dyn identify`).

`center_of_mass(model, q)`: the centre of mass of the moving bodies in the world,
``sum_i m_i oMi c_i / sum_i m_i`` (links fixed to the world do not count, as in Pinocchio's
``centerOfMass`` and `dynlib.potential_energy`: ``U = -M g . com``). O(n) per configuration.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import InputError


class InertiaBoxes(NamedTuple):
    """Per body (nb rows), in the body frame: the equivalent inertia box of each body."""

    mass: np.ndarray      # (nb,) kg
    com: np.ndarray       # (nb, 3) centre of mass, body frame (m)
    R: np.ndarray         # (nb, 3, 3) principal axes as columns (a rotation: det +1), body frame
    moments: np.ndarray   # (nb, 3) principal moments about the centre of mass, ascending (kg m^2)
    dims: np.ndarray      # (nb, 3) the box's sides along the principal axes (m); 0 for a massless body
    clamped: np.ndarray   # (nb,) bool: a side's square was negative (moments break the triangle inequality)


def body_inertial(inertia) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, centre of mass (3,), rotational inertia about it (3, 3)) of a 6x6 spatial inertia
    about the frame origin; a massless body gives its inertia about the origin, at the origin."""
    I = np.asarray(inertia, dtype=float)
    m = float(I[0, 0])
    if m <= 0.0:
        return 0.0, np.zeros(3), 0.5 * (I[3:, 3:] + I[3:, 3:].T)
    c = np.array([I[5, 1], I[3, 2], I[4, 0]]) / m  # from m [c]x, the lower-left block
    I_c = I[3:, 3:] - m * (c @ c * np.eye(3) - np.outer(c, c))
    return m, c, 0.5 * (I_c + I_c.T)


def principal_axes(I_com) -> tuple[np.ndarray, np.ndarray]:
    """(moments (3,) ascending, R (3, 3)): I_com = R diag(moments) R^T with R a rotation."""
    moments, R = np.linalg.eigh(0.5 * (np.asarray(I_com, float) + np.asarray(I_com, float).T))
    if np.linalg.det(R) < 0:
        R[:, 2] = -R[:, 2]
    return moments, R


def box_dimensions(mass, moments) -> tuple[np.ndarray, bool]:
    """(sides (3,), clamped): the uniform box of `mass` with principal `moments`, side k along axis k."""
    if mass <= 0.0:
        return np.zeros(3), False
    I1, I2, I3 = moments
    squares = 6.0 / mass * np.array([I2 + I3 - I1, I1 + I3 - I2, I1 + I2 - I3])
    tol = 1e-12 * 6.0 / mass * max(abs(I1) + abs(I2) + abs(I3), 1e-300)  # round-off of equal moments
    return np.sqrt(np.maximum(squares, 0.0)), bool(np.any(squares < -tol))


def inertia_boxes(model) -> InertiaBoxes:
    """The equivalent inertia box of each body of `model` (see the module docstring)."""
    nb = model.nb
    out = InertiaBoxes(np.zeros(nb), np.zeros((nb, 3)), np.tile(np.eye(3), (nb, 1, 1)), np.zeros((nb, 3)),
                       np.zeros((nb, 3)), np.zeros(nb, dtype=bool))
    for i in range(nb):
        m, c, I_c = body_inertial(model.arrays.inertia[i])
        moments, R = principal_axes(I_c)
        dims, clamped = box_dimensions(m, moments)
        out.mass[i], out.com[i], out.R[i], out.moments[i], out.dims[i], out.clamped[i] = m, c, R, moments, dims, clamped
    return out


def center_of_mass(model, q) -> np.ndarray:
    """The centre of mass of the moving bodies in the world: (3,) for q (nq,), (N, 3) for q (N, nq)."""
    from .kinematics import frame_placement

    a = model.arrays
    mass = a.inertia[:, 0, 0] if model.nb else np.zeros(0)
    if not mass.sum() > 0:
        raise InputError(f"robot '{model.name}': no moving body has mass, so it has no centre of mass")
    q = np.asarray(q, dtype=float)
    total = 0.0
    for i, link in enumerate(model.body_links):
        if mass[i] <= 0:
            continue
        f = model.frame_id(link)
        oMf = frame_placement(model, q, f)
        c_f = a.frame_R[f].T @ (body_inertial(a.inertia[i])[1] - a.frame_p[f])  # c in the link's frame
        total = total + mass[i] * (oMf[..., :3, :3] @ c_f + oMf[..., :3, 3])
    return total / mass.sum()
