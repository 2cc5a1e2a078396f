"""The motion as the page plays it: keyframes at the display rate, body placements.

- `keyframe_times`: the instants drawn. A trajectory sampled more densely than
  the display rate (a 1 kHz simulation shown at 30 fps) is resampled at
  ``t0 + k/fps`` (and its last instant); a sparser one keeps its own samples.
  The viewer interpolates between keyframes (linearly, and by slerp for
  rotations), so playback is smooth either way and the page grows with the
  duration times the display rate, not with the number of samples.
- configurations at those instants come from `dynlib.algorithms.configuration.interpolate`,
  on the configuration manifold: ``q(t) = q_j ⊕ s·(q_{j+1} ⊖ q_j)``, s the fraction of the
  step (free-flyer rotations by the shortest arc).
- `body_placements`: each body's placement in the world at every keyframe, from
  dynlib.frame_placement of the body's own link frame (forward kinematics, batched).
- `quaternions`: rotation matrices to (x, y, z, w), signs chosen so that
  consecutive keyframes are on the same side (the viewer's slerp takes the short way).
"""
from __future__ import annotations

import numpy as np


def keyframe_times(t, fps: float) -> np.ndarray:
    """The instants drawn (see the module docstring); `t` increasing."""
    t = np.asarray(t, dtype=float)
    if t.size <= 1:
        return t.copy()
    duration = t[-1] - t[0]
    n = int(np.floor(duration * fps + 1e-9)) + 1
    if t.size <= n:
        return t.copy()
    times = t[0] + np.arange(n) / fps
    if t[-1] - times[-1] > 1e-9 * max(1.0, abs(t[-1])):
        times = np.append(times, t[-1])
    return times


def _pose(R, p) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def body_placements(model, Q) -> np.ndarray:
    """(nb, K, 4, 4): each body's frame in the world at each of the K configurations."""
    import dynlib

    a = model.arrays
    out = np.empty((model.nb, len(Q), 4, 4))
    for i, link in enumerate(model.body_links):
        f = model.frame_id(link)
        oMf = dynlib.frame_placement(model, Q, f).reshape(len(Q), 4, 4)
        out[i] = oMf @ np.linalg.inv(_pose(a.frame_R[f], a.frame_p[f]))
    return out


def link_in_body(model, link) -> tuple[int, np.ndarray]:
    """(body, 4x4 placement of the link frame in that body's frame); body -1: the world."""
    a = model.arrays
    f = model.frame_id(link)
    return int(a.frame_body[f]), _pose(a.frame_R[f], a.frame_p[f])


def quaternions(R) -> np.ndarray:
    """(K, 3, 3) rotations -> (K, 4) unit quaternions (x, y, z, w), sign-continuous in K."""
    R = np.asarray(R, dtype=float).reshape(-1, 3, 3)
    m00, m11, m22 = R[:, 0, 0], R[:, 1, 1], R[:, 2, 2]
    # Shepperd: from the largest of 4w², 4x², 4y², 4z², whose square root is well conditioned
    cand = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], axis=1)
    k = np.argmax(cand, axis=1)
    q = np.empty((len(R), 4))
    s = 2.0 * np.sqrt(np.maximum(cand[np.arange(len(R)), k], 1e-300))
    for case in range(4):
        sel = k == case
        if not sel.any():
            continue
        r, ss = R[sel], s[sel]
        if case == 0:
            w, x = ss / 4, (r[:, 2, 1] - r[:, 1, 2]) / ss
            y, z = (r[:, 0, 2] - r[:, 2, 0]) / ss, (r[:, 1, 0] - r[:, 0, 1]) / ss
        elif case == 1:
            x, w = ss / 4, (r[:, 2, 1] - r[:, 1, 2]) / ss
            y, z = (r[:, 0, 1] + r[:, 1, 0]) / ss, (r[:, 0, 2] + r[:, 2, 0]) / ss
        elif case == 2:
            y, w = ss / 4, (r[:, 0, 2] - r[:, 2, 0]) / ss
            x, z = (r[:, 0, 1] + r[:, 1, 0]) / ss, (r[:, 1, 2] + r[:, 2, 1]) / ss
        else:
            z, w = ss / 4, (r[:, 1, 0] - r[:, 0, 1]) / ss
            x, y = (r[:, 0, 2] + r[:, 2, 0]) / ss, (r[:, 1, 2] + r[:, 2, 1]) / ss
        q[sel] = np.stack([x, y, z, w], axis=1)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    if len(q) > 1:
        flip = np.sign(np.einsum("ij,ij->i", q[1:], q[:-1]))
        flip[flip == 0] = 1.0
        q[1:] *= np.cumprod(flip)[:, None]
    return q


def rotation_to(direction) -> np.ndarray:
    """(K, 3) directions -> (K, 3, 3) rotations taking the y axis onto them (three.js
    cylinders and cones point along y); zero vectors give the identity."""
    d = np.asarray(direction, dtype=float).reshape(-1, 3)
    n = np.linalg.norm(d, axis=1)
    out = np.repeat(np.eye(3)[None], len(d), axis=0)
    ok = n > 0
    u = np.zeros_like(d)
    u[ok] = d[ok] / n[ok, None]
    y = np.array([0.0, 1.0, 0.0])
    axis = np.cross(y, u)                       # sin(angle) times the unit rotation axis
    s = np.linalg.norm(axis, axis=1)
    c = u @ y                                   # cos(angle)
    turn = ok & (s < 1e-12)
    out[turn & (c < 0)] = np.diag([1.0, -1.0, -1.0])   # pointing down y: half a turn about x
    rot = ok & ~turn
    k = axis[rot] / s[rot, None]
    K = np.zeros((len(k), 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    K[:, 1, 0], K[:, 2, 0], K[:, 2, 1] = k[:, 2], -k[:, 1], k[:, 0]
    out[rot] = np.eye(3) + s[rot, None, None] * K + (1 - c[rot])[:, None, None] * (K @ K)   # Rodrigues
    return out
