"""Planning a sweep: the variants of a scenario's `sweep:` block, each validated, each keyed.

`plan_sweep(path)` expands the block (`grid_points`, `random_points`) and loads
every variant with `load_scenario(path, overrides)`, the overrides being the
variant's key paths (`key_path`: dots split keys, except inside joint and
coordinate names). `variant_key` hashes what determines a variant's result.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from pathlib import Path
from typing import Any

from ...errors import ScenarioError
from ..scenario import as_path, load_scenario

HASH_SCHEME = 1                    # bump when the hashed content changes meaning
# never swept: they belong to the sweep itself
RESERVED = (("sweep",), ("output", "path"))
MAX_VARIANTS = 1_000_000           # each is validated, run and gets a file: more is a mistake


@dataclasses.dataclass(frozen=True)
class Variant:
    """One scenario of a sweep: `params` {key path: resolved value} applied to the base."""

    index: int
    name: str        # v000, v001, … (variant order)
    params: dict
    scenario: Any    # the validated dynlib.runs.scenario.Scenario
    key: str         # SHA-256 hex of the resolved variant (`variant_key`)

    def describe(self) -> str:
        """'initial.q.elbow = 0.5, dt = 0.002'"""
        return ", ".join(f"{k} = {cell(v)}" for k, v in self.params.items())


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    """The base scenario, the swept key paths (grid first, then random) and the variants."""

    source: str
    base: Any
    parameters: tuple
    variants: tuple
    shape: str       # "3 x 2 grid", "20 random", "3 x 2 grid x 20 random"

    def __len__(self) -> int:
        return len(self.variants)


def plan_sweep(path, progress=None) -> SweepPlan:
    """Read a scenario with a `sweep:` block and validate every variant (ScenarioError on bad input).
    `progress(done, total)` is called after each variant is validated."""
    path = str(path)
    base = load_scenario(path)
    if base.source is None:
        raise ScenarioError(f"{path}: dyn sweep needs a scenario (.yaml) with a 'sweep:' block, not a robot file")
    sw = base.sweep
    if sw is None:
        raise base.error((), "no 'sweep:' block: dyn sweep runs the variants of a scenario's sweep; add one, "
                             "e.g. 'sweep: {grid: {dt: [0.001, 0.002]}}'")
    if not sw.grid and sw.random is None:
        raise base.error(("sweep",), "the sweep is empty; give 'grid:' (key path: [values]), "
                                     "'random:' (count, seed, ranges) or both")
    for key, values in sw.grid.items():
        _check_key(base, ("sweep", "grid", key), key)
        if not values:
            raise base.error(("sweep", "grid", key), "no values; give a list of at least one")
    ranges = {}
    if sw.random is not None:
        if not sw.random.ranges:
            raise base.error(("sweep", "random", "ranges"), "no ranges; give {key path: [low, high]}")
        for key, r in sw.random.ranges.items():
            where = ("sweep", "random", "ranges", key)
            _check_key(base, where, key)
            if key in sw.grid:
                raise base.error(where, f"'{key}' is also in sweep.grid; sweep each key path in one place")
            try:
                ranges[key] = _range(r)
            except ValueError as exc:
                raise base.error(where, str(exc)) from None

    n = math.prod(len(v) for v in sw.grid.values()) * (sw.random.count if ranges else 1)
    if n > MAX_VARIANTS:
        key = ("sweep", "random", "count") if ranges and sw.random.count > MAX_VARIANTS else ("sweep",)
        raise base.error(key, f"{n:.3g} variants ({' x '.join(str(len(v)) for v in sw.grid.values()) or '1'}"
                              f"{f' x {sw.random.count}' if ranges else ''}), more than the {MAX_VARIANTS} a sweep "
                              "runs; split the sweep, or sweep fewer values")
    grid = grid_points(sw.grid)
    samples = random_points(ranges, sw.random.count, sw.random.seed) if ranges else [{}]
    points = [{**g, **s} for g in grid for s in samples]
    paths = {key: key_path(base, key) for key in (*sw.grid, *ranges)}
    labels = {paths[key]: base.error(("sweep", "grid", key), "").location for key in sw.grid}
    labels.update({paths[key]: base.error(("sweep", "random", "ranges", key), "").location for key in ranges})
    width = max(3, len(str(len(points) - 1)))
    hashes, variants, cache = {}, [], {}
    for i, point in enumerate(points):
        name = f"v{i:0{width}d}"

        def make():
            sc = _load_variant(path, base, name, point, paths, labels, cache)
            return Variant(i, name, _resolved_params(sc, point, paths), sc, variant_key(sc, hashes))

        if i == 1:  # the robot and files are loaded by now: what one more variant keeps
            variant, size = _kept_bytes(make)
            _check_plan_fits(base, n, size, sw)
        else:
            variant = make()
        variants.append(variant)
        if progress is not None:
            progress(i + 1, len(points))

    sizes = [str(len(v)) for v in sw.grid.values()]
    shape = " x ".join(sizes) + " grid" if sizes else ""
    if ranges:
        shape = (shape + " x " if shape else "") + f"{sw.random.count} random"
    return SweepPlan(path, base, tuple(sw.grid) + tuple(ranges), tuple(variants), shape)


# mappings keyed by joint or coordinate names, which may hold dots (root.x), and the robot's names
# they take: after these, a key path's next part is one name, then a field for the first two
_BY_NAME = {("control", "target", "sinusoids"): "q_names", ("joint_friction",): "joint_names",
            ("initial", "q"): "q_names", ("initial", "qd"): "v_names", ("control", "kp"): "v_names",
            ("control", "kd"): "v_names", ("control", "tau"): "tau_names", ("control", "target"): "q_names"}
_NAME_THEN_FIELD = (("control", "target", "sinusoids"), ("joint_friction",))


def key_path(base, key) -> tuple:
    """'initial.q.root.z' -> ('initial', 'q', 'root.z'): a sweep key as load_scenario's override path.

    Dots split keys, except in a joint or coordinate name: after a mapping keyed by
    names, the longest run of parts that names something of the base scenario's
    robot (else all the parts up to the field, so that a misspelt name is reported
    whole, with the closest ones).
    """
    parts = as_path(key)
    for prefix, attr in _BY_NAME.items():
        names = getattr(base.model, attr)
        n = len(prefix)
        rest = parts[n:]
        if parts[:n] != prefix or not rest or not all(isinstance(p, str) for p in rest):
            continue
        for k in range(len(rest), 0, -1):
            if ".".join(rest[:k]) in names:
                return prefix + (".".join(rest[:k]),) + rest[k:]
        k = len(rest) - 1 if prefix in _NAME_THEN_FIELD and len(rest) > 1 else len(rest)
        return prefix + (".".join(rest[:k]),) + rest[k:]
    return parts


def _check_key(base, where, key):
    path = as_path(key)
    if not path or any(path[:len(r)] == r for r in RESERVED):
        raise base.error(where, f"'{key}' cannot be swept (the sweep sets where outputs go); "
                                "sweep scenario keys such as dt, initial.q.<joint>, control.kp, gravity")


def _range(r):
    """(low, high, scale) from [low, high] or [low, high, 'uniform' | 'log']; ValueError when it is not one."""
    low, high, *rest = r
    scale = rest[0] if rest else "uniform"
    if scale not in ("uniform", "log"):
        raise ValueError(f"unknown scale {scale!r}; expected 'uniform' or 'log'")
    if not low <= high:
        raise ValueError(f"expected [low, high] with low <= high, got [{low}, {high}]")
    if scale == "log" and not low > 0:
        raise ValueError(f"a log-uniform range needs low > 0, got [{low}, {high}, log]")
    return float(low), float(high), scale


def grid_points(grid: dict) -> list:
    """[{key: value}, …]: the cartesian product of `grid`'s lists, the first key slowest."""
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def random_points(ranges: dict, count: int, seed: int) -> list:
    """`count` points {key: value}: uniform, or log-uniform for scale 'log', from numpy's default_rng(seed).

    `ranges`: {key: (low, high)} or {key: (low, high, 'uniform' | 'log')}. One
    (count, len(ranges)) block of uniforms, so a point's values depend on the
    seed, the point's index and the key's position.
    """
    import numpy as np

    keys = list(ranges)
    bounds = [_range(ranges[k]) for k in keys]
    u = np.random.default_rng(seed).random((count, len(keys)))
    points = []
    for row in u:
        point = {}
        for key, (low, high, scale), x in zip(keys, bounds, row):
            if scale == "log":
                point[key] = float(math.exp(math.log(low) + (math.log(high) - math.log(low)) * x))
            else:
                point[key] = float(low + (high - low) * x)
        points.append(point)
    return points


def _kept_bytes(make):
    """(make(), the bytes of Python memory it allocated and kept), traced by `tracemalloc`."""
    import tracemalloc

    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        return made, max(0, tracemalloc.get_traced_memory()[0] - before)
    finally:
        if not tracing:
            tracemalloc.stop()


def _check_plan_fits(base, n, size, sw):
    """A plan of `n` variants of `size` bytes each (every one a validated scenario, kept for the run)
    that cannot be held in memory is an error before the planning (10^6 variants of arm6: > 8 GB)."""
    from ...files.output import memory_shortfall  # here: not a source of the kernels' cache key

    over = memory_shortfall(int(n * size * 1.1))  # + the points and lists around them (10 % of a plan's growth)
    if over is not None:
        raise base.error(("sweep",), f"{n} variants ({' x '.join(str(len(v)) for v in sw.grid.values()) or '1'}"
                                     f"{f' x {sw.random.count}' if sw.random is not None else ''}) need about {over} "
                                     f"to plan ({size * 1.1 / 1e3:.3g} kB each, a validated scenario); split the sweep, or "
                                     "sweep fewer values")


def _load_variant(path, base, name, point, paths, labels, cache):
    """load_scenario with the point as overrides (the YAML read and each robot loaded once, `cache`);
    errors name the sweep entry (or the variant)."""
    try:
        return load_scenario(path, {paths[k]: v for k, v in point.items()}, origins=labels, cache=cache)
    except ScenarioError as exc:
        if any(str(exc).startswith(label) for label in labels.values()):
            raise
        desc = ", ".join(f"{k} = {cell(v)}" for k, v in point.items())
        where = f"{exc.key}: " if exc.key else ""
        raise base.error(("sweep",), f"variant {name} ({desc}): {where}{exc.message}") from None


def _resolved_params(sc, point, paths):
    """The swept values as the validated scenario holds them (1e-3 read as text by YAML becomes 0.001)."""
    dump = sc.model_dump()
    out = {}
    for key, given in point.items():
        node = dump
        try:
            for k in paths[key]:
                node = node[k]
        except (KeyError, IndexError, TypeError):
            node = given
        out[key] = list(node) if isinstance(node, tuple) else node
    return out


def variant_key(sc, file_hashes=None) -> str:
    """SHA-256 (hex) of what determines a variant's result (see the module docstring)."""
    data = sc.model_dump()
    data.pop("sweep", None)
    data["output"].pop("path", None)
    cache = {} if file_hashes is None else file_hashes
    data["robot"] = _file_hash(sc.resolve(sc.robot), cache)
    control = data["control"]
    if isinstance(control.get("file"), str):
        control["file"] = _file_hash(sc.resolve(control["file"]), cache)
    target = control.get("target")
    if isinstance(target, dict) and isinstance(target.get("file"), str):
        target["file"] = _file_hash(sc.resolve(target["file"]), cache)
    text = json.dumps({"dyn-sweep": HASH_SCHEME, "scenario": data}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _file_hash(path, cache):
    path = Path(path).resolve()
    if path not in cache:
        cache[path] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    return cache[path]

def cell(x) -> str:
    """A value as summary.csv and messages write it ('' for None and NaN, JSON for lists)."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return "" if math.isnan(x) else repr(x)
    if isinstance(x, (list, tuple, dict)):
        return json.dumps(x, separators=(", ", ": "))
    return str(x)
