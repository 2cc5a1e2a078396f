"""Where a scenario's values are, and one-line messages about them.

- key paths: ``'external_wrenches[0].start'`` ⇄ ``('external_wrenches', 0, 'start')``
  (`as_path`, `format_path`), the names overrides, sweeps and messages use;
- `Where`: the scenario file, the line of every key (`index_lines`, from
  ``yaml.compose``) and the labels of command-line overrides; `Where.error`
  makes the `ScenarioError` at a key path (``FILE:LINE: KEY: message``, or
  ``--option: message`` for an override);
- `convert`: the most specific pydantic validation error as one such message,
  in words (``expected a number, got 'x'``) with the closest valid names.

Nothing here knows the schema: `convert` takes the root model and the
discriminator values of its unions (the controller types) as arguments.
yaml and pydantic are imported where they are used: a robot path's scenario
(`dynlib.runs.scenario.plain`) needs neither.
"""
from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Optional, Union

from ...errors import ScenarioError, closest

if TYPE_CHECKING:
    from pydantic import ValidationError

_KEY = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def as_path(key) -> tuple:
    """'external_wrenches[0].start' -> ('external_wrenches', 0, 'start'); tuples pass through."""
    if isinstance(key, tuple):
        return key
    return tuple(int(i) if i else name for name, i in _KEY.findall(str(key)))


def format_path(path) -> str:
    """('external_wrenches', 0, 'start') -> 'external_wrenches[0].start'."""
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def short(names, n=8) -> str:
    """'a, b, c' for a few names; the first `n` and how many more for a long list."""
    names = list(names)
    return ", ".join(names) if len(names) <= n else ", ".join(names[:n]) + f", … ({len(names) - n} more)"


def index_lines(node, prefix, lines, path):
    """lines[key path] = 1-based line of the key (mappings) or item (sequences); duplicate keys are errors."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        seen = {}
        for knode, vnode in node.value:
            key = knode.value
            if key in seen:
                raise ScenarioError(f"key '{key}' appears twice (first on line {seen[key]})", file=path,
                                    line=knode.start_mark.line + 1, key=format_path(prefix + (key,)))
            seen[key] = knode.start_mark.line + 1
            lines[prefix + (key,)] = knode.start_mark.line + 1
            index_lines(vnode, prefix + (key,), lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[prefix + (i,)] = item.start_mark.line + 1
            index_lines(item, prefix + (i,), lines, path)


@dataclasses.dataclass
class Where:
    """Where a scenario's values come from: its file (None: built from a robot path), the line of
    each key path, and {key path: label} for the values an option or a sweep set."""

    source: Optional[str] = None
    lines: dict = dataclasses.field(default_factory=dict)
    origins: dict = dataclasses.field(default_factory=dict)

    def error(self, path, message) -> ScenarioError:
        """The ScenarioError at key path `path`: an override's label wins over the file and line."""
        path = tuple(path)
        for n in range(len(path), -1, -1):
            label = self.origins.get(path[:n]) if self.origins else None
            if label:
                return ScenarioError(message, key=label)
        line = None
        for n in range(len(path), 0, -1):
            line = self.lines.get(path[:n])
            if line is not None:
                break
        if line is None and self.lines:
            line = 1
        return ScenarioError(message, file=self.source, line=line if self.source else None,
                             key=format_path(path) or None)


# ------------------------------------------------------------- pydantic errors in words

_TYPE_WORDS = {"float": "a number", "int": "a whole number", "str": "a text", "bool": "true or false",
               "dict": "a mapping", "list": "a list", "tuple": "a list", "Literal": "one of the names"}


def _member_word(tag: str) -> str:
    tag = tag.removeprefix("constrained-")
    if tag.startswith("dict"):
        return "a mapping {name: number}" if "float" in tag else "a mapping"
    if tag.startswith("list") or tag.startswith("tuple"):
        return "a list of numbers" if "float" in tag else "a list"
    for k, w in _TYPE_WORDS.items():
        if tag.startswith(k):
            return w
    return tag


def _is_tag(k, tags) -> bool:
    return k in tags or bool(re.match(r"^(constrained-)?(float|int|str|bool|dict|list|tuple|literal|function)", str(k)))


def _data_path(loc, data, tags):
    """Split a pydantic loc into the key path present in the data and the union tags skipped."""
    path, skipped, node = [], [], data
    for i, k in enumerate(loc):
        if isinstance(node, dict) and k in node:
            path.append(k)
            node = node[k]
        elif isinstance(node, list) and isinstance(k, int) and k < len(node):
            path.append(k)
            node = node[k]
        elif i == len(loc) - 1 and isinstance(node, dict) and isinstance(k, str) and not _is_tag(k, tags):
            path.append(k)  # a missing or unknown key
            node = None
        else:
            skipped.append(k)
    return tuple(path), skipped


def _model_at(root, path, data):
    """The model class (a BaseModel subclass) that validates the mapping at `path`, or None."""
    from pydantic import BaseModel

    tp, node = root, data
    for k in path:
        tp = _pick(tp, node)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(k)
            if field is None:
                return None
            tp = field.annotation
        else:
            args = getattr(tp, "__args__", ())
            tp = args[-1] if args else None
        node = node.get(k) if isinstance(node, dict) else (node[k] if isinstance(node, list) else None)
    tp = _pick(tp, node)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _pick(tp, node):
    """Resolve Annotated/Optional/Union to the member that fits `node` (discriminator 'type')."""
    from pydantic import BaseModel

    while getattr(tp, "__metadata__", None) is not None:  # Annotated
        tp = tp.__origin__
    args = getattr(tp, "__args__", None)
    if args and getattr(tp, "__origin__", None) is Union:
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if isinstance(node, dict) and models:
            for mdl in models:
                f = mdl.model_fields.get("type")
                if f is not None and node.get("type") in getattr(f.annotation, "__args__", ()):
                    return mdl
            return models[0]
        for a in args:
            origin = getattr(a, "__origin__", a)
            if isinstance(node, list) and origin in (list, tuple):
                return a
            if isinstance(node, dict) and origin is dict:
                return a
        return args[0]
    return tp


def _describe(err) -> str:
    t, ctx, inp = err["type"], err.get("ctx") or {}, err.get("input")
    got = "" if t == "missing" else f", got {inp!r}"
    if t in ("float_parsing", "float_type"):
        return f"expected a number{got}"
    if t in ("int_parsing", "int_type", "int_from_float"):
        return f"expected a whole number{got}"
    if t in ("bool_parsing", "bool_type"):
        return f"expected true or false{got}"
    if t == "string_type":
        return f"expected a text{got}"
    if t == "dict_type":
        return f"expected a mapping{got}"
    if t in ("list_type", "tuple_type"):
        return f"expected a list{got}"
    if t == "greater_than":
        return f"must be greater than {ctx.get('gt')}{got}"
    if t == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}{got}"
    if t == "less_than_equal":
        return f"must be at most {ctx.get('le')}{got}"
    if t == "finite_number":
        return f"must be a finite number{got}"
    if t in ("too_short", "too_long"):
        n = ctx.get("min_length") if t == "too_short" else ctx.get("max_length")
        return f"expected {n} values, got {ctx.get('actual_length')}"
    if t == "missing":
        return "this required key is missing"
    if t == "value_error":
        return str(ctx.get("error", err["msg"]))
    return err["msg"]


def _get(data, path):
    for k in path:
        data = data[k]
    return data


def convert(exc: ValidationError, data, where: Where, *, root, tags) -> ScenarioError:
    """The most specific error of `exc` (validating `data` as `root`) as one ScenarioError.

    `tags`: the discriminator values of the tagged union (the controller types),
    which pydantic puts in an error's location.
    """
    errors = [(_data_path(e["loc"], data, tags), e) for e in exc.errors()]
    depth = max(len(p) for (p, _), _ in errors)
    deepest = [(p, skipped, e) for (p, skipped), e in errors if len(p) == depth]
    path, skipped, err = deepest[0]
    t = err["type"]
    if t == "extra_forbidden":
        mdl = _model_at(root, path[:-1], data)
        valid = list(mdl.model_fields) if mdl is not None else []
        return where.error(path, f"unknown key '{path[-1]}'; {closest(str(path[-1]), valid)}")
    if t == "union_tag_invalid":
        tag = err["ctx"]["tag"]
        return where.error(path + ("type",), f"unknown controller type '{tag}'; {closest(tag, tags)}")
    if t == "union_tag_not_found":
        return where.error(path, f"missing 'type' (one of {', '.join(tags)})")
    if t == "literal_error":
        expected = re.findall(r"'([^']*)'|(\d+)", err["ctx"]["expected"])
        names = [a or b for a, b in expected]
        got = err.get("input")
        hint = closest(str(got), names) if isinstance(got, str) else "expected " + " or ".join(names)
        if path == ("dyn",):
            return where.error(path, f"unknown schema version {got!r}; this dyn reads 'dyn: 1'")
        if len([1 for p, _, _ in deepest if p == path]) > 1:  # a literal inside a union (joint_friction)
            return where.error(path, _union_message(deepest, path, tags))
        return where.error(path, f"{got!r} is not valid; {hint}")
    if t == "missing" and path == ("dyn",):
        return where.error((), "the schema version is missing; start the file with 'dyn: 1'")
    if t == "missing" and isinstance(err["loc"][-1], int):  # a fixed-length list that is too short
        n = 1 + max(e["loc"][-1] for p, _, e in deepest if p == path and isinstance(e["loc"][-1], int))
        return where.error(path, f"expected {n} values, got {len(_get(data, path))}")
    same = [e for p, _, e in deepest if p == path]
    if len(same) > 1:
        return where.error(path, _union_message(deepest, path, tags))
    return where.error(path, _describe(err))


def _union_message(deepest, path, tags) -> str:
    words, got = [], None
    for p, skipped, e in deepest:
        if p != path:
            continue
        got = e.get("input")
        tag = next((str(t) for t in reversed(skipped) if _is_tag(t, tags) and t not in tags), "")
        if tag.startswith("literal"):
            w = "one of " + ", ".join(re.findall(r"'([^']*)'", str(e.get("ctx", {}).get("expected", ""))))
        else:
            w = _member_word(tag) if tag else _describe(e)
        if w not in words:
            words.append(w)
    listing = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    return f"expected {listing}, got {got!r}"
