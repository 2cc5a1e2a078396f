"""Loading a scenario: the YAML (or a robot path), the overrides, and the two validation passes.

`load_scenario(path, overrides, origins=...)` reads the file and its key lines,
applies the overrides (key paths, as the command line and `dyn sweep` give
them), validates the schema (`dynlib.runs.scenario.schema`, errors in words by
`dynlib.runs.scenario.messages`), then checks the scenario against its robot: joint,
coordinate and frame names, vector lengths, the CSV tables' columns, the
combinations that cannot run. What these checks build is kept on the scenario
for `dynlib.runs.scenario.run`: the robot model (`Scenario.model`) and the tables
read (`table`), so that a file is read once.
"""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np

from ...core.model import massless_free_flyer_message
from ...errors import DynError, ScenarioError, closest
from ...files.columns import TIME, column, coordinate, coordinate_columns, part
from ...files.locks import LockError
from . import plain
from .messages import Where, as_path, convert, format_path, index_lines, short

ROBOT_SUFFIXES = (".urdf", ".xacro")
SCENARIO_SUFFIXES = (".yaml", ".yml")
IMPULSE_MODELS = ("unilateral", "relaxed")  # contact models that step velocities with impulses
# values that YAML aliases (*name) may add to a scenario beyond the file's own: far more than a
# scenario reuses, far less than a 'billion laughs' (nine anchors of nine aliases each: 9**9 values)
MAX_ALIAS_VALUES = 100_000


def load_scenario(path, overrides=None, *, origins=None, cache=None):
    """Read and validate a scenario (.yaml) or a robot (.urdf/.xacro, every default).

    `overrides`: {key path: value}, applied before validation (``"steps"`` drops
    ``duration`` and the reverse). `origins`: {key path: label} naming where an
    override came from (``{"initial.q": "--q0"}``), used instead of file:line in
    error messages about it. `cache`: a dict the caller keeps across calls on the same files
    (`dyn sweep` loads every variant of one scenario): the YAML is read and each robot loaded once.
    """
    path = str(path)
    suffix = "".join(Path(path).suffixes[-1:]).lower()
    if suffix in SCENARIO_SUFFIXES:
        if cache is None:
            data, lines = _read_yaml(path)
        else:
            if ("yaml", path) not in cache:
                cache[("yaml", path)] = _read_yaml(path)
            data, lines = cache[("yaml", path)]
            data = copy.deepcopy(data)  # the overrides change it
        source = path
    elif suffix in ROBOT_SUFFIXES or path == "-":
        data, lines, source = {"dyn": 1, "robot": path}, {}, None
    else:
        raise ScenarioError(f"{path}: expected a scenario (.yaml, .yml) or a robot (.urdf, .xacro)")
    return _validate(source, data, lines, overrides, origins, cache)


def _validate(source, data, lines, overrides, origins, cache):
    """The scenario of `data` with the overrides applied: a robot path's as `plain.Plain` when every value is
    one `plain` is sure of, else validated by the schema (`schema.Scenario`, pydantic)."""
    for key, value in dict(overrides or {}).items():
        _set(data, as_path(key), value, source)
    where = Where(source, lines, {as_path(k): v for k, v in dict(origins or {}).items()})
    sc = plain.scenario(data) if source is None else None
    if sc is None:
        from pydantic import ValidationError

        from .schema import CONTROL_TYPES, Scenario

        try:
            sc = Scenario.model_validate(data)
        except ValidationError as exc:
            raise convert(exc, data, where, root=Scenario, tags=CONTROL_TYPES) from None
    sc._where = where
    _check_against_robot(sc, cache)
    return sc


def _read_yaml(path):
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is not None:
            _check_aliases(root, path)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"not valid YAML: {problem}", file=path, line=line) from None
    if data is None:
        raise ScenarioError("the scenario is empty; expected a mapping with at least 'dyn: 1' and 'robot:'",
                            file=path, line=1)
    if not isinstance(data, dict):
        raise ScenarioError(f"expected a mapping of keys (dyn, robot, dt, …), got a {type(data).__name__}",
                            file=path, line=1)
    lines = {}
    index_lines(root, (), lines, path)
    return data, lines


def _check_aliases(root, path):
    """ScenarioError when YAML aliases make the document a cycle (an alias inside the node it names)
    or expand it by more than MAX_ALIAS_VALUES values (each alias counts the whole node it names).

    One depth-first pass over the composed nodes, each node sized once, so a 'billion laughs' is
    measured in the time its few lines take to read, and a cycle is found instead of a RecursionError.
    """
    size, state = {}, {}  # id(node) -> values it expands to; id(node) -> 1 on the current path, 2 sized
    refs, aliased = {}, {}  # id(node) -> edges to it; id(node) -> node for those reached through an alias
    stack = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        kids = _children(node)
        if leaving:
            size[id(node)] = 1 + sum(size[id(c)] for c in kids)
            state[id(node)] = 2
            continue
        if state.get(id(node)) == 2:
            continue
        state[id(node)] = 1
        stack.append((node, True))
        for child in kids:
            if state.get(id(child)) == 1:
                raise ScenarioError(f"a YAML alias names a node that contains it (the anchor at line "
                                    f"{child.start_mark.line + 1}); a scenario is a tree, write the value out",
                                    file=path, line=node.start_mark.line + 1)
            refs[id(child)] = refs.get(id(child), 0) + 1
            if refs[id(child)] > 1:
                aliased[id(child)] = child
            if state.get(id(child)) != 2:
                stack.append((child, False))
    added = size[id(root)] - len(size)
    if added > MAX_ALIAS_VALUES:
        biggest = max(aliased.values(), key=lambda n: size[id(n)])
        raise ScenarioError(f"YAML aliases expand the scenario by {added:.3g} values, more than the "
                            f"{MAX_ALIAS_VALUES} dyn reads (a 'billion laughs'?); the largest aliased node, "
                            f"{size[id(biggest)]:.3g} values, is the anchor at line {biggest.start_mark.line + 1}",
                            file=path, line=biggest.start_mark.line + 1)


def _children(node):
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return []


def _set(data, path, value, source):
    """data[path] = value, creating mappings on the way; 'steps' and 'duration' exclude each other."""
    node = data
    for i, k in enumerate(path[:-1]):
        nxt = node.get(k) if isinstance(node, dict) else (node[k] if isinstance(node, list) and k < len(node) else None)
        if nxt is None:
            nxt = {}
            if isinstance(node, dict):
                node[k] = nxt
            else:
                raise ScenarioError(f"cannot set '{format_path(path)}': '{format_path(path[:i + 1])}' does not exist",
                                    file=source)
        if not isinstance(nxt, (dict, list)):
            raise ScenarioError(f"cannot set '{format_path(path)}': '{format_path(path[:i + 1])}' is not a mapping",
                                file=source)
        node = nxt
    last = path[-1]
    if isinstance(node, list):
        if not (isinstance(last, int) and last < len(node)):
            raise ScenarioError(f"cannot set '{format_path(path)}': no such item", file=source)
        node[last] = value
        return
    node[last] = value
    if path == ("steps",):
        data.pop("duration", None)
    elif path == ("duration",):
        data.pop("steps", None)


# ====================================================== checks against the robot

def _build_model(sc, cache=None):
    from ...files.urdf import load

    robot = sc.robot if sc.source is None else str(sc.resolve(sc.robot))
    if robot != "-" and not Path(robot).is_file():
        raise sc.error("robot", f"robot file '{robot}' not found")
    key = ("robot", robot, sc.floating_base, tuple((j, str(v)) for j, v in sc.lock.items()))
    try:
        model = cache[key] if cache is not None and key in cache and robot != "-" else \
            load(robot, floating_base=sc.floating_base, lock=sc.lock)
    except LockError as exc:
        raise sc.error(("lock", exc.joint), exc.message) from None
    except DynError as exc:
        if sc.source is None:
            raise
        raise sc.error("robot", f"cannot load the robot: {exc}") from None
    if cache is not None:
        cache[key] = model
    if sc.gravity is not None:
        model = model.with_gravity(sc.gravity)
    if sc.joint_friction == "none":
        model = model.without_joint_friction()
    elif isinstance(sc.joint_friction, dict):
        damping, friction = model.arrays.damping.copy(), model.arrays.friction.copy()
        for joint, ov in sc.joint_friction.items():
            if joint not in model.joint_names:
                raise sc.error(("joint_friction", joint),
                               f"robot '{model.name}' has no moving joint '{joint}'; {closest(joint, model.joint_names)}")
            i = model.joint_names.index(joint)
            iv, n = int(model.arrays.idx_v[i]), int(model.arrays.nvj[i])
            if ov.damping is not None:
                damping[iv:iv + n] = ov.damping
            if ov.friction is not None:
                friction[iv:iv + n] = ov.friction
        model = dataclasses.replace(model, arrays=model.arrays._replace(damping=damping, friction=friction))
    for joint in sc.armature:
        if joint not in model.joint_names:
            raise sc.error(("armature", joint),
                           f"robot '{model.name}' has no moving joint '{joint}'; {closest(joint, model.joint_names)}")
    if sc.armature:
        model = model.with_armature(sc.armature, keep=True)  # the others: the URDF's dyn:armature
    return model


def _names_check(sc, key, given, names, what, model):
    if isinstance(given, dict):
        for name in given:
            if name not in names:
                raise sc.error(key + (name,), f"robot '{model.name}' has no {what} '{name}'; {closest(name, names)}")
    elif isinstance(given, list) and len(given) != len(names):
        raise sc.error(key, f"expected {len(names)} values ({short(names)}), got {len(given)}")


def _frame_check(sc, key, frame, model, *, moving=True):
    if frame not in model.frame_names:
        raise sc.error(key, f"robot '{model.name}' has no frame (link) '{frame}'; {closest(frame, model.frame_names)}")
    if moving and model.arrays.frame_body[model.frame_names.index(frame)] < 0:
        raise sc.error(key, f"frame '{frame}' is fixed to the world, so a wrench on it moves nothing; "
                            "choose a link of a moving body")


def _check_against_robot(sc, cache=None):
    if sc.duration is not None and sc.steps is not None:
        raise sc.error("duration", "give either 'duration' or 'steps', not both")
    sc._model = model = _build_model(sc, cache)
    for link, joint in model.massless_free_flyers:  # forward dynamics is undefined: refused before step 0
        raise sc.error("floating_base" if model.floating_base else "robot", massless_free_flyer_message(model, link, joint))
    _names_check(sc, ("initial", "q"), sc.initial.q, model.q_names, "coordinate", model)
    _names_check(sc, ("initial", "qd"), sc.initial.qd, model.v_names, "velocity coordinate", model)
    c = sc.control
    for gain in ("kp", "kd"):
        if isinstance(getattr(c, gain, None), (dict, list)):
            _names_check(sc, ("control", gain), getattr(c, gain), model.v_names, "joint coordinate", model)
    if c.type == "constant":
        _names_check(sc, ("control", "tau"), c.tau, model.tau_names, "torque coordinate", model)
    if c.type == "pd":
        _names_check(sc, ("control", "target"), c.target, model.q_names, "coordinate", model)
    if c.type == "csv":
        torque_table(sc)
    if c.type == "state-feedback":
        _state_feedback_check(sc, c, model)
    if c.type == "computed-torque":
        if c.target.sinusoids is not None:
            _names_check(sc, ("control", "target", "sinusoids"), c.target.sinusoids, model.q_names, "coordinate", model)
        else:
            target_table(sc)
        try:
            from ...sim.controllers import _euclidean

            _euclidean(model, "the computed-torque controller")
        except DynError as exc:
            raise sc.error(("control", "type"), exc.message) from None
    for i, w in enumerate(sc.external_wrenches):
        _frame_check(sc, ("external_wrenches", i, "frame"), w.frame, model)
    if sc.contacts is not None:
        from ...sim.contact import key_problem

        given = [k for k in sc.contacts.model_fields_set if getattr(sc.contacts, k) is not None]
        problem = key_problem(sc.contacts.model, sorted(given, key=list(type(sc.contacts).model_fields).index))
        if problem is not None:
            raise sc.error(("contacts", problem[0]), problem[1])
    if sc.contacts is not None and isinstance(sc.contacts.points, list):
        for i, p in enumerate(sc.contacts.points):
            _frame_check(sc, ("contacts", "points", i, "frame"), p.frame, model, moving=False)
            if p.offset_world is not None and "offset" in p.model_fields_set:
                raise sc.error(("contacts", "points", i, "offset_world"),
                               "give offset (the frame's axes) or offset_world (the world's), not both")
    elif sc.contacts is not None and not isinstance(sc.contacts.points, str):
        have = {c[0] for c in model.collisions}
        for i, link in enumerate(sc.contacts.points.from_collision):
            _frame_check(sc, ("contacts", "points", "from-collision", i), link, model, moving=False)
            if link not in have:
                raise sc.error(("contacts", "points", "from-collision", i),
                               f"link '{link}' has no <collision> geometry (from-collision takes its spheres and boxes)")
    if sc.contacts is not None and sc.contacts.model in IMPULSE_MODELS and sc.integrator != "semi-implicit":
        raise sc.error("integrator", f"the {sc.contacts.model} contact model steps velocities with impulses "
                                     f"(semi-implicit Euler): set integrator to 'semi-implicit' "
                                     f"(got {sc.integrator!r})")
    if "contact" in sc.output.columns and sc.contacts is None:
        raise sc.error(("output", "columns"), "'contact' columns need a 'contacts:' block")
    q0 = initial_q(sc)
    if not np.all(np.abs(q0) <= sc.max_state):
        raise sc.error(("initial", "q"), f"an initial value exceeds max_state = {sc.max_state:g}")


def _state_feedback_check(sc, c, model):
    """The gain file read (`gain_table`), the target's and the feed-forward's names; a feed-forward on a
    coordinate that is not one of the gain's inputs is refused (state feedback drives only its inputs)."""
    inputs, _ = gain_table(sc)
    _names_check(sc, ("control", "target", "q"), c.target.q, model.q_names, "coordinate", model)
    _names_check(sc, ("control", "target", "qd"), c.target.qd, model.v_names, "velocity coordinate", model)
    if c.tau is None:
        return
    _names_check(sc, ("control", "tau"), c.tau, model.tau_names, "torque coordinate", model)
    given = c.tau.items() if isinstance(c.tau, dict) else zip(model.tau_names, c.tau)
    for name, x in given:
        if x != 0 and model.v_names[model.tau_names.index(name)] not in inputs:
            raise sc.error(("control", "tau") + ((name,) if isinstance(c.tau, dict) else ()),
                           f"'{name}' is not an input of the gain file ({', '.join(inputs)}): state feedback "
                           "drives only its inputs")


# ------------------------------------------------------------------ tables (read once)

@dataclasses.dataclass(frozen=True)
class Table:
    """The columns of a CSV/Parquet table that a scenario uses (time first), as read once."""

    path: str
    names: tuple
    data: np.ndarray  # (rows, len(names))

    @property
    def time(self) -> np.ndarray:
        return self.data[:, 0]

    def has(self, name) -> bool:
        return name in self.names

    def column(self, name) -> np.ndarray:
        return self.data[:, self.names.index(name)]

    def __len__(self) -> int:
        return self.data.shape[0]


def read_table(sc, key, path, select) -> Table:
    """The table at `path` (relative to the scenario): its time column and the columns
    `select(path, names)` picks (it raises the errors about the names), read on first use and kept on
    the scenario. Errors about the file are at key path `key`; a bad cell names its row and column."""
    from ...files.trajectory import check_increasing_time, read_trajectory

    p = sc.resolve(path)
    kept = sc._tables.get((key, str(p)))
    if kept is not None:
        return kept
    try:
        traj = read_trajectory(str(p))
        if not traj.has(TIME):
            raise sc.error(key, f"'{p}' has no '{TIME}' column")
        check_increasing_time(traj)
    except ScenarioError:
        raise
    except DynError as exc:
        raise sc.error(key, str(exc)) from None
    names = [TIME] + list(select(p, traj.names))
    table = Table(str(p), tuple(names), np.column_stack([traj.column(n) for n in names]))
    sc._tables[(key, str(p))] = table
    return table


def gain_table(sc):
    """(inputs, K (len(inputs), 2 nv)) of control.gain (`dynlib.files.gains.read_gain`), read once and
    kept on the scenario; an error names the scenario's key, the gain file, its line and column."""
    from ...files.gains import read_gain

    key = ("control", "gain")
    p = sc.resolve(sc.control.gain)
    kept = sc._tables.get((key, str(p)))
    if kept is None:
        try:
            kept = sc._tables[(key, str(p))] = read_gain(str(p), sc.model)
        except DynError as exc:
            raise sc.error(key, str(exc)) from None
    return kept


def torque_table(sc):
    """(time (n,), tau (n, nv)) from control.file: tau.<name> columns, the rest zero."""
    key, model = ("control", "file"), sc.model
    names = model.tau_names

    def select(p, columns):
        return _part_columns(sc, key, p, columns, "tau", names, "torque coordinate")

    table = read_table(sc, key, sc.control.file, select)
    tau = np.zeros((len(table), model.nv))
    for col in table.names[1:]:
        tau[:, names.index(coordinate(col))] = table.column(col)
    return table.time.copy(), tau


def _part_columns(sc, key, p, columns, part_, names, what):
    """The `part_`.<name> columns of table `p`: an error at `key` when there are none, or when
    one names no coordinate of the robot (`what` says which kind)."""
    found = [n for n in columns if part(n) == part_]
    if not found:
        raise sc.error(key, f"'{p}' has no {part_}.<joint> column; expected some of "
                            f"{short(coordinate_columns(part_, names))}")
    for col in found:
        name = coordinate(col)
        if name not in names:
            raise sc.error(key, f"'{p}': column '{col}' names no {what} of robot '{sc.model.name}'; "
                                f"{closest(name, names)}")
    return found


def target_table(sc):
    """(time, Q, V, A) from control.target.file: q.<name> columns (the rest hold the initial q),
    qd./qdd. columns where given, else derivatives of the samples."""
    key, model = ("control", "target", "file"), sc.model

    def select(p, columns):
        qcols = _part_columns(sc, key, p, columns, "q", model.q_names, "coordinate")
        return qcols + [c for d in ("qd", "qdd") for c in coordinate_columns(d, model.v_names) if c in columns]

    table = read_table(sc, key, sc.control.target.file, select)
    Q = np.tile(initial_q(sc), (len(table), 1))
    for col in table.names[1:]:
        if part(col) == "q":
            Q[:, model.q_names.index(coordinate(col))] = table.column(col)
    # velocities and accelerations: the file's qd./qdd. columns where given, else derivatives of the samples
    t = table.time.copy()
    V = np.gradient(Q, t, axis=0) if len(table) > 1 else np.zeros_like(Q)
    for k, n in enumerate(model.v_names):
        if table.has(column("qd", n)):
            V[:, k] = table.column(column("qd", n))
    A = np.gradient(V, t, axis=0) if len(table) > 1 else np.zeros_like(V)
    for k, n in enumerate(model.v_names):
        if table.has(column("qdd", n)):
            A[:, k] = table.column(column("qdd", n))
    return t, Q, V, A


# ------------------------------------------------------------------ the initial state

def initial_q(sc):
    """The scenario's q0: named coordinates set, the rest at zero, the root at the identity."""
    model = sc.model
    q = model.q_neutral.copy()
    if isinstance(sc.initial.q, list):
        q[:] = sc.initial.q
    else:
        for name, x in sc.initial.q.items():
            q[model.q_names.index(name)] = x
        q = _followers_from_leaders(model, q, sc.initial.q, model.coupling and model.coupling.expand_q)
    # a free-flyer quaternion given in part is normalised; all zero is an error
    for joint, iq in model.quaternions:
        n = float(np.linalg.norm(q[iq:iq + 4]))
        if not n > 0:
            raise sc.error(("initial", "q"), f"the quaternion of joint '{joint}' is zero")
        q[iq:iq + 4] /= n
    return q


def _followers_from_leaders(model, x, named, expand):
    """x (q or v) with each mimic joint (`dynlib.sim.mimic`) that `named` leaves out set from its leader."""
    if expand is None:
        return x
    c, coupled = model.coupling, None
    for follower, *_ in model.mimic:
        if follower not in named:
            coupled = expand((c.reduce_q if x.shape[0] == model.nq else c.reduce_v)(x)) if coupled is None else coupled
            k = model.joint_id(follower)
            k = model.arrays.idx_q[k] if x.shape[0] == model.nq else model.arrays.idx_v[k]
            x[k] = coupled[k]
    return x


def initial_v(sc):
    """The scenario's v0: named velocity coordinates set, the rest at zero."""
    model = sc.model
    v = np.zeros(model.nv)
    if isinstance(sc.initial.qd, list):
        v[:] = sc.initial.qd
    else:
        for name, x in sc.initial.qd.items():
            v[model.v_names.index(name)] = x
        v = _followers_from_leaders(model, v, sc.initial.qd, model.coupling and model.coupling.expand_v)
    return v
