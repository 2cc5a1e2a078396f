"""Inertial parameters: the ten numbers of a rigid body, its pseudo-inertia, and the URDF links of a body.

A rigid body's parameters ``pi = (m, h, I)`` (h = m c, I the rotational inertia
about the frame origin; `dynlib.algorithms.regressor` has the order) and its
pseudo-inertia (Wensing, Kim and Slotine 2018)::

    J(pi) = [[Sigma, h], [h^T, m]],  Sigma = 1/2 tr(I) 1 - I  (= the integral of x x^T dm)

are linear in each other. A body is physically consistent (a mass density exists
that has these moments) exactly when J is positive semidefinite; this includes
m >= 0, I about the centre of mass positive semidefinite, and the triangle
inequality of its principal moments. Under a rigid motion x' = R x + p,
J' = T J T^T with T = [[R, p], [0, 1]].

A dyn body is every URDF link that fixed joints hold to the link of its moving
joint (`dynlib.files.urdf` merges them). `BodyLinks` lists, per body, its links, their
placements in the body frame and their URDF parameters; identification works
per body and writes back per link (`split`): the link with the largest URDF mass
(the first of them in the URDF tree on a tie) takes the body's identified
parameters minus the other links' URDF parameters, which stay as they were.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...algorithms.regressor import body_parameters
from ...core.spatial import spatial_inertia

# where the rotational inertia's entries sit in pi (xx, xy, yy, xz, yz, zz)
_I_INDEX = ((4, 5, 7), (5, 6, 8), (7, 8, 9))


def rotational_inertia(pi):
    """I (3, 3) about the frame origin from pi (10,)."""
    pi = np.asarray(pi, dtype=float)
    return pi[np.array(_I_INDEX)]


def from_inertia(m, h, I):
    """pi (10,) from the mass, the first moment h = m c and the inertia about the origin."""
    return np.array([m, h[0], h[1], h[2], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]], dtype=float)


def from_link(mass, com, I_com):
    """pi (10,) of a URDF <inertial>: mass, centre of mass and inertia about it (in the link frame)."""
    return body_parameters(spatial_inertia(mass, com, I_com))


def pseudo_inertia(pi):
    """J (4, 4) of pi (10,)."""
    pi = np.asarray(pi, dtype=float)
    I = rotational_inertia(pi)
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(I) * np.eye(3) - I
    J[:3, 3] = J[3, :3] = pi[1:4]
    J[3, 3] = pi[0]
    return J


def from_pseudo_inertia(J):
    """pi (10,) of a pseudo-inertia J (4, 4) (its symmetric part)."""
    J = 0.5 * (np.asarray(J, dtype=float) + np.asarray(J, dtype=float).T)
    S = J[:3, :3]
    return from_inertia(J[3, 3], J[:3, 3], np.trace(S) * np.eye(3) - S)


def pseudo_inertia_map():
    """D (16, 10): vec(J(pi)) = D pi, row-major vec."""
    D = np.zeros((16, 10))
    for c in range(10):
        e = np.zeros(10)
        e[c] = 1.0
        D[:, c] = pseudo_inertia(e).reshape(16)
    return D


def transform(pi, R, p):
    """pi of a body given in a frame at (R, p) (x_parent = R x + p), expressed in the parent frame."""
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return from_pseudo_inertia(T @ pseudo_inertia(pi) @ T.T)


def inverse_transform(pi, R, p):
    """pi given in the parent frame, expressed in the frame at (R, p)."""
    R = np.asarray(R, dtype=float)
    return transform(pi, R.T, -R.T @ np.asarray(p, dtype=float))


def to_link(pi):
    """(mass, com (3,), inertia about the com (3, 3)) of pi, as a URDF <inertial> holds them.

    Through the pseudo-inertia: Sigma_c = Sigma - h h^T / m, I_com = tr(Sigma_c) 1 - Sigma_c,
    so a J that is positive semidefinite gives an I_com that is too (and satisfies the
    triangle inequality). A massless pi gives its inertia about the origin, at the origin.
    """
    J = pseudo_inertia(pi)
    m = J[3, 3]
    if m <= 0.0:
        I = rotational_inertia(pi)
        return 0.0, np.zeros(3), 0.5 * (I + I.T)
    c = J[:3, 3] / m
    Sc = J[:3, :3] - np.outer(J[:3, 3], c)
    Sc = 0.5 * (Sc + Sc.T)
    return float(m), c, np.trace(Sc) * np.eye(3) - Sc


def project_consistent(pi):
    """pi with the negative eigenvalues of J(pi) set to zero (a round-off repair: the
    nearest consistent pi in the Frobenius norm of J)."""
    ev, U = np.linalg.eigh(pseudo_inertia(pi))
    return from_pseudo_inertia((U * np.maximum(ev, 0.0)) @ U.T)


class BodyLinks(NamedTuple):
    """The URDF links of each body of a model, with their own parameters.

    links[j]: names of body j's links (its moving joint's child link first, then the
    links fixed to it, in URDF tree order); placement[name]: (R, p) of the link frame
    in its body frame; urdf[name]: the link's own pi (10,) in its link frame (zeros
    without <inertial>); carrier[j]: the link that takes body j's identified
    parameters (the heaviest by URDF mass, the first on a tie).
    """

    links: tuple
    placement: dict
    urdf: dict
    carrier: tuple

    def others_in_body(self, j):
        """pi (10,) in body j's frame of its links other than the carrier (held at their URDF values)."""
        total = np.zeros(10)
        for name in self.links[j]:
            if name != self.carrier[j]:
                total += transform(self.urdf[name], *self.placement[name])
        return total

    def split(self, j, pi_body):
        """{link: pi in the link frame} for body j's identified parameters pi_body (body frame)."""
        out = {}
        for name in self.links[j]:
            out[name] = self.urdf[name].copy()
        carrier = self.carrier[j]
        out[carrier] = inverse_transform(pi_body - self.others_in_body(j), *self.placement[carrier])
        return out


def body_links(model, inertials) -> BodyLinks:
    """`BodyLinks` of `model`, with `inertials` {link: (mass, com, I_com)} read from its URDF."""
    a = model.arrays
    links = [[] for _ in range(model.nb)]
    placement, urdf = {}, {}
    for f, name in enumerate(model.frame_names):
        b = int(a.frame_body[f])
        mass, com, I = inertials.get(name, (0.0, np.zeros(3), np.zeros((3, 3))))
        urdf[name] = from_link(mass, com, I)
        if b >= 0:
            links[b].append(name)
            placement[name] = (a.frame_R[f].copy(), a.frame_p[f].copy())
    carrier = []
    for j in range(model.nb):
        names = links[j]
        first = model.body_links[j] if model.body_links[j] in names else names[0]
        ordered = [first] + [n for n in names if n != first]
        links[j] = ordered
        carrier.append(max(ordered, key=lambda n: (urdf[n][0], -ordered.index(n))))
    return BodyLinks(tuple(tuple(x) for x in links), placement, urdf, tuple(carrier))
