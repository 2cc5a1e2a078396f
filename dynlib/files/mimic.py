"""Mimic joints: ``<mimic joint= multiplier= offset=>`` read as a coupling of the follower to its leader.

A follower's position is ``multiplier * q_leader + offset`` (its velocity and acceleration the multiplier
times the leader's), as in Pinocchio >= 3.4 (``buildModel(..., mimic=True)``) and MuJoCo's joint equality.
The reader checks each ``<mimic>`` here (`resolve`), before the tree is built:

- the leader must be a joint of the file (an unknown name, with the closest names, is an error at the
  ``<mimic>``'s line), and leader and follower one-DoF joints (revolute, continuous, prismatic);
- a chain ``a`` mimics ``b`` mimics ``c`` is resolved to ``c`` (multipliers multiplied, offsets carried);
  a cycle is an error at the line of the ``<mimic>`` where it closes;
- a fixed or locked follower has no coordinate left: its ``<mimic>`` is dropped (example-robot-data's
  TALOS grippers carry ``<mimic>`` on fixed joints);
- a follower of a fixed leader (held at 0) or of a locked one (held at its value) is locked in turn at
  ``multiplier * value + offset``: Pinocchio's buildReducedModel then takes both out.

The coupling itself (one coordinate for the pair, the follower's inertia reflected through the
multiplier) is `dynlib.core.mimic`.
"""
from __future__ import annotations

import numpy as np

from ..errors import URDFError, closest

_ONE_DOF = ("revolute", "continuous", "prismatic")


def resolve(rd, joints, lock) -> tuple:
    """(mimics, lock): mimics ((follower, leader, multiplier, offset), ...) in document order, each
    leader a moving joint that mimics none; `lock` ({joint: value}) with the followers of fixed or locked
    leaders added. `rd`: the reader (file name for errors); `joints`: its `_Joint` records."""
    by_name = {jt.name: jt for jt in joints}
    lock = dict(lock or {})
    direct = {}
    for jt in joints:
        if jt.mimic is None:
            continue
        target, _, _, line = jt.mimic
        if target not in by_name:
            raise URDFError(f"joint '{jt.name}' mimics joint '{target}', which is not defined; "
                            f"{closest(target, by_name)}", file=rd.file, line=line)
        if jt.type == "fixed" or jt.name in lock:
            continue
        if jt.type not in _ONE_DOF:
            raise URDFError(f"joint '{jt.name}': a {jt.type} joint cannot mimic another; <mimic> couples "
                            f"one-DoF joints (revolute, continuous, prismatic)", file=rd.file, line=line)
        if target == jt.name:
            raise URDFError(f"joint '{jt.name}' mimics itself", file=rd.file, line=line)
        if by_name[target].type not in _ONE_DOF + ("fixed",):
            raise URDFError(f"joint '{jt.name}' mimics the {by_name[target].type} joint '{target}'; <mimic> couples "
                            f"one-DoF joints (revolute, continuous, prismatic)", file=rd.file, line=line)
        direct[jt.name] = jt.mimic
    mimics = []
    for name in direct:
        leader, mult, offset = _root(rd, name, direct)
        held = _held(by_name[leader], lock)
        if held is None:
            mimics.append((name, leader, mult, offset))
            continue
        lock[name] = value = mult * held + offset
        jt = by_name[name]
        if jt.type != "continuous" and not jt.lower <= value <= jt.upper:
            from .locks import LockError
            raise LockError(leader, f"cannot hold joint '{leader}' at {held:g}: its mimic joint '{name}' would be "
                                    f"at {value:g}, outside its limits [{jt.lower:g}, {jt.upper:g}] ({rd.file}:{jt.line})")
    return tuple(mimics), lock


def _root(rd, name, direct) -> tuple:
    """(leader, multiplier, offset) of `name` followed through `direct` to a joint that mimics none."""
    seen = [name]
    mult, offset = 1.0, 0.0
    while name in direct:
        target, m, o, _ = direct[name]
        mult, offset = mult * m, mult * o + offset
        if target in seen:
            cycle = " -> ".join(seen[seen.index(target):] + [target])
            raise URDFError(f"mimic joints form a cycle: {cycle}", file=rd.file, line=direct[target][3])
        seen.append(target)
        name = target
    return name, mult, offset


def _held(jt, lock):
    """The value a fixed (0) or locked leader is held at; None for a moving one."""
    if jt.type == "fixed":
        return 0.0
    if jt.name in lock:
        try:
            return float(lock[jt.name])
        except (TypeError, ValueError):
            return None  # lock_transforms names the bad value
    return None


# -- recordings --------------------------------------------------------------------------------------

def couple_recording(model, traj):
    """(trajectory, notes): `traj` (a `dynlib.files.trajectory.Trajectory` by dyn's column names) with each
    follower's ``q.``, ``qd.`` and ``qdd.`` columns made from its leader's (``multiplier * leader +
    offset``, the derivatives ``multiplier *``): added when the recording has none (a JointState without
    the mimicking finger), replaced when it has them; a follower's qd or qdd without the leader's is
    dropped (both are then derived from q alike). A recorded follower position that disagrees with
    the coupling by more than 1 % of its range (of a turn, or of 1 m, without limits) is one warning
    naming the joint, the largest difference and its time. A follower whose leader is not recorded is
    left as it is (the leader's column is then missing, which the command reports)."""
    from .trajectory import Trajectory

    cols, drop, notes = {}, set(), []
    for follower, leader, mult, offset in model.mimic:
        if f"q.{leader}" not in traj:  # missing or text: the command names it
            continue
        for part in ("q", "qd", "qdd"):
            if f"{part}.{leader}" in traj:
                cols[f"{part}.{follower}"] = mult * traj.column(f"{part}.{leader}") + (offset if part == "q" else 0.0)
            elif traj.has(f"{part}.{follower}"):
                drop.add(f"{part}.{follower}")  # derived from the leader's, as the leader's is
        if f"q.{follower}" in traj:
            note = _disagreement(model, traj, follower, leader, cols[f"q.{follower}"])
            notes += [note] if note else []
    if not cols and not drop:
        return traj, ()
    kept = [j for j, c in enumerate(traj.names) if c not in drop]
    names = [traj.names[j] for j in kept] + [c for c in cols if c not in traj]
    data = np.empty((len(traj), len(names)), order="F")
    data[:, :len(kept)] = traj.data[:, kept]
    for c, x in cols.items():
        data[:, names.index(c)] = x
    unusable = {c: why for c, why in traj._unusable.items() if c not in cols and c not in drop}
    return Trajectory(names, data, traj.path, lines=traj._lines, unusable=unusable), tuple(notes)


def _disagreement(model, traj, follower, leader, coupled):
    """The warning when the recorded q.<follower> is off its coupling by more than 1 % of its range."""
    i = model.joint_id(follower)
    iq = int(model.arrays.idx_q[i])
    span = float(model.upper[iq] - model.lower[iq])
    if not np.isfinite(span) or span <= 0:  # no limits: a turn, or 1 m (1 % of it: 1 cm)
        span = 1.0 if model.joint_types[i] == "prismatic" else 2 * np.pi
    diff = np.abs(traj.column(f"q.{follower}") - coupled)
    diff = np.where(np.isfinite(diff), diff, 0.0)
    k = int(np.argmax(diff)) if len(diff) else 0
    if not len(diff) or diff[k] <= 0.01 * span:
        return None
    t = traj.column("time")[k] if traj.has("time") else k
    return (f"warning: {traj.path or 'the recording'}: q.{follower} is off its coupling to {leader} by up to "
            f"{diff[k]:.4g} (at time {t:g}), more than 1 % of its range: {follower} is read from q.{leader}")
