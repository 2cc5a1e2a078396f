"""The coupling of mimic joints: one coordinate for a leader and its followers.

A URDF ``<mimic joint= multiplier= offset=>`` (checked and resolved by `dynlib.files.mimic`: every
leader mimics none) makes the follower's position ``multiplier * q_leader + offset``. The model's
tree keeps every joint (Pinocchio's "extended" model); the coupled robot's coordinates are the
tree's without the followers (``q_r``, ``v_r``), and

    q = G_q(q_r) = expand_q(q_r)     each follower's entry  multiplier * q_leader + offset
    v = G v_r,  a = G a_r            G (nv, nv_r): one entry per row, 1 or the multiplier

so that the coupled robot's dynamics is the tree's projected (d'Alembert: the coupling does no work)::

    M_r = G^T M G,   h_r = G^T h,   tau_r = G^T tau = G^T rnea(q, G v_r, G a_r)

The follower's inertia enters its leader's diagonal through multiplier², its torque through the
multiplier. Pinocchio >= 3.4 (``buildModel(..., mimic=True)``) computes the same M_r and tau_r by its
mimic joints in rnea and crba (tests/core/test_mimic.py compares them); MuJoCo's joint equality holds
the same coupling as a constraint.
"""
from __future__ import annotations

import functools

import numpy as np


class Coupling:
    """The mimic coupling of a `Model` (``model.coupling``): reduced names and the maps between them."""

    def __init__(self, model):
        a = model.arrays
        follower = {}
        for name, leader, mult, offset in model.mimic:
            follower[model.joint_id(name)] = (model.joint_id(leader), float(mult), float(offset))
        keep_v = np.ones(model.nv, dtype=bool)
        keep_q = np.ones(model.nq, dtype=bool)
        for i in follower:
            keep_v[a.idx_v[i]] = keep_q[a.idx_q[i]] = False
        self.model = model
        self.followers = tuple(model.mimic)  # ((follower, leader, multiplier, offset), ...)
        self.v_index = np.flatnonzero(keep_v)  # (nv_r,) each reduced DoF's DoF in the tree
        self.q_index = np.flatnonzero(keep_q)  # (nq_r,) each reduced coordinate's in the tree
        reduced_v = np.cumsum(keep_v) - 1
        reduced_q = np.cumsum(keep_q) - 1
        self.q_source = reduced_q.copy()      # (nq,) the reduced coordinate each tree coordinate is read from
        self.q_scale = np.ones(model.nq)      # (nq,) q = q_scale * q_r[q_source] + q_offset
        self.q_offset = np.zeros(model.nq)
        self.G = np.zeros((model.nv, int(keep_v.sum())))  # (nv, nv_r) v = G v_r
        self.G[self.v_index, np.arange(self.G.shape[1])] = 1.0
        for i, (l, mult, offset) in follower.items():
            iq, lq, lv = a.idx_q[i], a.idx_q[l], a.idx_v[l]
            self.q_source[iq], self.q_scale[iq], self.q_offset[iq] = reduced_q[lq], mult, offset
            self.G[a.idx_v[i], reduced_v[lv]] = mult
        self.coupled = ~keep_q  # (nq,) True for a follower's coordinate

    # -- names ---------------------------------------------------------------
    @functools.cached_property
    def q_names(self) -> tuple:
        return tuple(self.model.q_names[k] for k in self.q_index)

    @functools.cached_property
    def v_names(self) -> tuple:
        return tuple(self.model.v_names[k] for k in self.v_index)

    @functools.cached_property
    def tau_names(self) -> tuple:
        return tuple(self.model.tau_names[k] for k in self.v_index)

    @property
    def nq(self) -> int:
        return len(self.q_index)

    @property
    def nv(self) -> int:
        return len(self.v_index)

    # -- maps (each takes a leading batch dimension) -------------------------
    def expand_q(self, q_r) -> np.ndarray:
        """The tree's q (..., nq) of the coupled robot's q_r (..., nq_r)."""
        q_r = np.asarray(q_r, dtype=float)
        return q_r[..., self.q_source] * self.q_scale + self.q_offset

    def expand_v(self, v_r) -> np.ndarray:
        """The tree's v, a (..., nv) of the coupled robot's v_r, a_r (..., nv_r): G v_r."""
        return np.asarray(v_r, dtype=float) @ self.G.T

    def reduce_q(self, q) -> np.ndarray:
        """The leaders' and free joints' coordinates of a tree q (..., nq): q_r (..., nq_r)."""
        return np.asarray(q, dtype=float)[..., self.q_index]

    def reduce_v(self, v) -> np.ndarray:
        """The leaders' and free joints' entries of a tree v (..., nv): v_r (..., nv_r)."""
        return np.asarray(v, dtype=float)[..., self.v_index]

    def project(self, tau) -> np.ndarray:
        """G^T tau (..., nv_r): generalized forces of the tree on the coupled robot's coordinates."""
        return np.asarray(tau, dtype=float) @ self.G

    def project_inertia(self, M) -> np.ndarray:
        """G^T M G (..., nv_r, nv_r)."""
        return self.G.T @ np.asarray(M, dtype=float) @ self.G

    def mismatch(self, q) -> np.ndarray:
        """(..., number of followers): each follower's coordinate in q minus the coupling's
        ``multiplier * q_leader + offset``."""
        q = np.asarray(q, dtype=float)
        return (q - self.expand_q(self.reduce_q(q)))[..., self.coupled]

    def describe(self) -> list:
        """One line per follower: ``follower = multiplier * leader + offset``."""
        out = []
        for name, leader, mult, offset in self.followers:
            rhs = f"{mult:g} * {leader}" + (f" {'+' if offset >= 0 else '-'} {abs(offset):g}" if offset else "")
            out.append(f"{name} = {rhs}")
        return out
