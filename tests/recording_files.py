"""Recordings written as the robots' tools write them, for the reader's tests.

- ROS 1 ``.bag``, ROS 2 ``.db3`` (sqlite3) and ``.mcap``: `rosbags`' own writers, with
  ``sensor_msgs/msg/JointState`` serialized by its typestores (ROS 1 Noetic, ROS 2 Humble);
- ``rostopic echo -p`` (ROS 1, rostopic/__init__.py `_str_plot_fields` / `_str_plot`): a
  header ``%time,field.header.seq,field.header.stamp,field.header.frame_id,field.name0,…,
  field.position0,…,field.velocity0,…,field.effort0,…`` from the first message (an
  empty array has no columns), then per message ``%time`` (the bag's log time, ns, as
  with ``-b``), the stamp in ns (genpy's ``str`` of a Time), the frame id, the names and
  ``str`` of each double;
- PlotJuggler's CSV export (plugins/StatePublisherCSV `generateRangeCSV`; JointState series
  from its ROS parsers): ``__time`` then the series sorted by name
  (``<topic>/header/stamp`` in s, ROS 1 also ``<topic>/header/seq``,
  ``<topic>/<joint>/position|velocity|effort`` when the message's array is as long as
  its names), ``__time`` with 6 decimals, values with 9, an empty cell where a series
  has no sample at that time.

A message is `Msg(stamp_ns, names, position, velocity, effort, logtime_ns)`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

EPOCH_NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z


class Msg(NamedTuple):
    stamp: int                 # header.stamp, ns since the epoch
    names: list
    position: list
    velocity: list
    effort: list
    logtime: int               # when the bag logged it, ns


def messages(names, t_ns, Q, V=None, E=None, order=None, log_delay_ns=150_000):
    """One Msg per sample; `order` permutes the joints as the driver lists them."""
    order = list(range(len(names))) if order is None else list(order)
    out = []
    for k, stamp in enumerate(t_ns):
        out.append(Msg(int(stamp), [names[j] for j in order], [float(Q[k, j]) for j in order],
                       [] if V is None else [float(V[k, j]) for j in order],
                       [] if E is None else [float(E[k, j]) for j in order], int(stamp) + log_delay_ns))
    return out


# ------------------------------------------------------------------ bags

def _typestore(ros1):
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE)


def _joint_state(ts, m, seq, ros1):
    JS = ts.types["sensor_msgs/msg/JointState"]
    H = ts.types["std_msgs/msg/Header"]
    T = ts.types["builtin_interfaces/msg/Time"]
    stamp = T(sec=m.stamp // 10**9, nanosec=m.stamp % 10**9)
    header = H(seq=seq, stamp=stamp, frame_id="") if ros1 else H(stamp=stamp, frame_id="")
    arr = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    return JS(header=header, name=list(m.names), position=arr(m.position), velocity=arr(m.velocity),
              effort=arr(m.effort))


def write_bag(path, topics, kind):
    """A bag at `path` ('.bag' ROS 1; a ROS 2 folder for kind 'db3' or 'mcap') with
    {topic: [Msg]}; other topics can be any ('/chatter': strings)."""
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.rosbag2 import StoragePlugin, Writer as Writer2

    ros1 = kind == "bag"
    ts = _typestore(ros1)
    msgtype = "sensor_msgs/msg/JointState"
    if ros1:
        writer = Writer1(path)
    else:
        writer = Writer2(path, version=9,
                         storage_plugin=StoragePlugin.MCAP if kind == "mcap" else StoragePlugin.SQLITE3)
    with writer as w:
        events = []
        for topic, msgs in topics.items():
            if topic == "/chatter":
                conn = w.add_connection(topic, "std_msgs/msg/String", typestore=ts)
                S = ts.types["std_msgs/msg/String"]
                for k, (t, text) in enumerate(msgs):
                    raw = ts.serialize_ros1(S(data=text), "std_msgs/msg/String") if ros1 else \
                        ts.serialize_cdr(S(data=text), "std_msgs/msg/String")
                    events.append((t, conn, raw))
                continue
            conn = w.add_connection(topic, msgtype, typestore=ts)
            for k, m in enumerate(msgs):
                js = _joint_state(ts, m, k, ros1)
                raw = ts.serialize_ros1(js, msgtype) if ros1 else ts.serialize_cdr(js, msgtype)
                events.append((m.logtime, conn, raw))
        events.sort(key=lambda e: e[0])
        for t, conn, raw in events:
            w.write(conn, t, raw)
    return path


# ------------------------------------------------------------------ rostopic echo -p

def _plot_str(x) -> str:
    """rostopic's str() of a value (Python 3: repr of the double; genpy Time: its nanoseconds)."""
    return str(x)


def write_rostopic_csv(path, msgs, frame_id=""):
    """As ``rostopic echo -b run.bag -p /joint_states > path``."""
    m0 = msgs[0]
    head = ["%time", "field.header.seq", "field.header.stamp", "field.header.frame_id"]
    head += [f"field.name{i}" for i in range(len(m0.names))]
    for field in ("position", "velocity", "effort"):
        head += [f"field.{field}{i}" for i in range(len(getattr(m0, field)))]
    lines = [",".join(head)]
    for seq, m in enumerate(msgs):
        cells = [str(m.logtime), str(seq), str(m.stamp), frame_id] + list(m.names)
        for field in ("position", "velocity", "effort"):
            cells += [_plot_str(float(x)) for x in getattr(m, field)]
        lines.append(",".join(cells))
    with open(path, "w", newline="") as f:
        f.write("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------ PlotJuggler

def write_plotjuggler_csv(path, topics, use_header_stamp=True, ros1=False):
    """As PlotJuggler's CSV export of {topic: [Msg]} (every series, whole range)."""
    series = {}
    for topic, msgs in topics.items():
        for seq, m in enumerate(msgs):
            t = m.stamp * 1e-9 if use_header_stamp else m.logtime * 1e-9
            stamp = float(m.stamp // 10**9) + float(m.stamp % 10**9) * 1e-9
            series.setdefault(f"{topic}/header/stamp", []).append((t, stamp))
            if ros1:
                series.setdefault(f"{topic}/header/seq", []).append((t, float(seq)))
            for field in ("position", "velocity", "effort"):
                values = getattr(m, field)
                if len(values) == len(m.names):
                    for name, x in zip(m.names, values):
                        series.setdefault(f"{topic}/{name}/{field}", []).append((t, float(x)))
    names = sorted(series)
    index = {n: 0 for n in names}
    dts = [series[n][1][0] - series[n][0][0] for n in names if len(series[n]) > 1]
    eps = min(dts) * 0.5 if dts else 1e-9
    rows = ["__time," + ",".join(names)]
    while True:
        heads = [(series[n][index[n]][0], n) for n in names if index[n] < len(series[n])]
        if not heads:
            break
        t = min(h[0] for h in heads)
        cells = []
        for n in names:
            if index[n] < len(series[n]) and abs(series[n][index[n]][0] - t) <= eps:
                cells.append(f"{series[n][index[n]][1]:.9f}")
                index[n] += 1
            else:
                cells.append("")
        rows.append(f"{t:.6f}," + ",".join(cells))
    with open(path, "w", newline="") as f:
        f.write("\n".join(rows) + "\n")
    return path


# ------------------------------------------------------------------ a motion

def swing(n_joints, t, seed=0):
    """A smooth joint motion q(t) = c + A sin(ω t + φ) and its exact v, a."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(-1, 1, n_joints)
    A = rng.uniform(0.2, 0.6, n_joints)
    w = rng.uniform(1.5, 4.0, n_joints)
    phi = rng.uniform(0, 2 * math.pi, n_joints)
    arg = w * t[:, None] + phi
    return c + A * np.sin(arg), A * w * np.cos(arg), -A * w * w * np.sin(arg)
