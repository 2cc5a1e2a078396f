"""Writing identified parameters back into a URDF by editing its text.

The output is the input file with, for the links and joints given, the
``<inertial>`` element and the ``<dynamics>`` element replaced (or added when the
link or joint has none); every other byte — comments, formatting, attribute
order, meshes, ``<gazebo>`` blocks — is the input's. It is an edit of the text,
not a re-serialisation: a small scanner (`elements`) finds the byte span of
every element (skipping comments, CDATA, processing instructions and the
DOCTYPE), and the new elements are written with the indentation found there.
Numbers are written with ``repr`` (shortest round-trip), so the file reads back
to the same doubles.

A joint's rotor inertia, which URDF cannot state, is written as dyn's own attribute
``<dynamics … dyn:armature="…"/>``, with the namespace declared on ``<robot>``
(``xmlns:dyn="urn:dyn:urdf"``, `dynlib.files.urdf.DYN_NAMESPACE`): dyn reads it back, and
other URDF readers (urdfdom, Pinocchio) ignore an attribute they do not know.

A ``.xacro`` robot cannot be edited this way (its links come from macros):
`check_editable` says to expand it first.
"""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...errors import URDFError

_TOKEN = re.compile(
    rb"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE(?:[^\[>]|\[.*?\])*>"
    rb"|<(/?)([^\s/>!?]+)((?:[^>\"']|\"[^\"]*\"|'[^']*')*?)(/?)>", re.S)
_ATTR = re.compile(rb"""([^\s=]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


class Element(NamedTuple):
    tag: str
    attrs: dict
    start: int        # offset of '<' of the start tag
    end: int          # offset just after the element ('/>' or its end tag)
    content: int      # offset just after the start tag (== end for <x/>)
    close: int        # offset of '<' of the end tag (== end for <x/>)
    children: list


def elements(text: bytes, file=None) -> Element:
    """The element tree of an XML document's bytes, with byte spans; returns the root element."""
    root, stack = None, []
    for m in _TOKEN.finditer(text):
        closing, name, attrs, empty = m.group(1), m.group(2), m.group(3), m.group(4)
        if name is None:
            continue
        tag = name.decode("utf-8", "replace")
        if closing:
            if not stack or stack[-1][0] != tag:
                raise URDFError(f"unexpected </{tag}> while editing the text", file=file,
                                line=text.count(b"\n", 0, m.start()) + 1)
            t, a, s, c, kids = stack.pop()
            el = Element(t, a, s, m.end(), c, m.start(), kids)
            (stack[-1][4] if stack else []).append(el)
            if not stack:
                root = el
            continue
        values = {k.decode("utf-8", "replace"): html.unescape((v1 if v1 is not None else v2).decode("utf-8", "replace"))
                  for k, v1, v2 in _ATTR.findall(attrs)}
        if empty:
            el = Element(tag, values, m.start(), m.end(), m.end(), m.end(), [])
            if stack:
                stack[-1][4].append(el)
            elif root is None:
                root = el
        else:
            stack.append((tag, values, m.start(), m.end(), []))
    if root is None or stack:
        raise URDFError("could not find the <robot> element's extent while editing the text", file=file)
    return root


def check_editable(path) -> None:
    """A URDFError for a .xacro robot (its text is macros, not the links to edit)."""
    if Path(str(path)).suffix == ".xacro":
        raise URDFError("identification edits the URDF's text, and a .xacro holds macros: expand it first "
                        f"(xacro {path} > robot.urdf) and pass the .urdf", file=path)


def _f(x) -> str:
    x = float(x)
    return "0" if x == 0.0 else repr(x)


def _indent(text: bytes, offset: int) -> bytes:
    """The whitespace between the start of the line holding `offset` and `offset`."""
    line = text.rfind(b"\n", 0, offset) + 1
    lead = text[line:offset]
    return lead if not lead.strip() else b""


def _child_indent(text: bytes, el: Element, default_step=b"  ") -> bytes:
    """The indentation of el's first child, or el's own plus one step."""
    if el.children:
        return _indent(text, el.children[0].start)
    return _indent(text, el.start) + default_step


def inertial_text(mass, com, I, indent: bytes, step=b"  ", newline=b"\n") -> bytes:
    """An <inertial> element (from its '<' to its '>'); the origin at the centre of mass, link axes."""
    inner = indent + step
    return (b"<inertial>" + newline
            + inner + f'<origin xyz="{_f(com[0])} {_f(com[1])} {_f(com[2])}" rpy="0 0 0"/>'.encode() + newline
            + inner + f'<mass value="{_f(mass)}"/>'.encode() + newline
            + inner + (f'<inertia ixx="{_f(I[0, 0])}" ixy="{_f(I[0, 1])}" ixz="{_f(I[0, 2])}" '
                       f'iyy="{_f(I[1, 1])}" iyz="{_f(I[1, 2])}" izz="{_f(I[2, 2])}"/>').encode() + newline
            + indent + b"</inertial>")


def dynamics_text(damping, friction, armature=None, prefix="dyn") -> bytes:
    """A <dynamics> element; with `armature`, its ``dyn:armature`` (`prefix`: the namespace's in the file)."""
    rotor = "" if armature is None else f' {prefix}:armature="{_f(armature)}"'
    return f'<dynamics damping="{_f(damping)}" friction="{_f(friction)}"{rotor}/>'.encode()


def _namespace(text: bytes, root: Element, file=None):
    """(prefix bound to dyn's namespace on <robot>, the edit declaring it or None)."""
    from ...files.urdf import DYN_NAMESPACE

    for key, value in root.attrs.items():
        if key.startswith("xmlns:") and value == DYN_NAMESPACE:
            return key[6:], None
    if "xmlns:dyn" in root.attrs:
        raise URDFError(f'<robot xmlns:dyn="{root.attrs["xmlns:dyn"]}"> binds the prefix dyn to another namespace: '
                        f"the armature needs it for {DYN_NAMESPACE}", file=file)
    at = root.start + len(b"<") + len(root.tag.encode())
    return "dyn", (at, at, f' xmlns:dyn="{DYN_NAMESPACE}"'.encode())


def edit(text: bytes, inertials: dict, dynamics: dict, file=None) -> bytes:
    """`text` with the <inertial> of each link in `inertials` {name: (mass, com, I_com)} and the
    <dynamics> of each joint in `dynamics` {name: (damping, friction) or (damping, friction,
    armature)} replaced or added (an armature as ``dyn:armature``, its namespace declared)."""
    root = elements(text, file)
    nl = b"\r\n" if text.count(b"\r\n") * 2 > text.count(b"\n") else b"\n"  # the file's own line ends
    edits = []  # (start, end, new bytes), non-overlapping
    prefix = "dyn"
    if any(len(v) > 2 for v in dynamics.values()):
        prefix, declare = _namespace(text, root, file)
        if declare:
            edits.append(declare)
    seen = set()
    for el in root.children:
        name = el.attrs.get("name")
        if el.tag == "link" and name in inertials and name not in seen:
            seen.add(name)
            mass, com, I = inertials[name]
            old = next((c for c in el.children if c.tag == "inertial"), None)
            if old is not None:
                edits.append((old.start, old.end, inertial_text(mass, com, I, _indent(text, old.start), newline=nl)))
            elif el.close == el.end and el.content == el.end:  # <link name="x"/>
                inner = _indent(text, el.start) + b"  "
                new = (text[el.start:el.end - 2].rstrip() + b">" + nl + inner
                       + inertial_text(mass, com, I, inner, newline=nl) + nl + _indent(text, el.start) + b"</link>")
                edits.append((el.start, el.end, new))
            else:
                inner = _child_indent(text, el)
                edits.append(_insert(text, el, inertial_text(mass, com, I, inner, newline=nl), inner, nl))
        elif el.tag == "joint" and name in dynamics and name not in seen:
            seen.add(name)
            new = dynamics_text(*dynamics[name], prefix=prefix)
            old = next((c for c in el.children if c.tag == "dynamics"), None)
            if old is not None:
                edits.append((old.start, old.end, new))
            elif el.close == el.end and el.content == el.end:  # <joint .../>: nothing to hold dynamics
                continue
            else:
                edits.append(_insert(text, el, new, _child_indent(text, el), nl))
    out, pos = [], 0
    for start, end, new in sorted(edits):
        out += [text[pos:start], new]
        pos = end
    out.append(text[pos:])
    return b"".join(out)


def _insert(text: bytes, el: Element, new: bytes, indent: bytes, newline=b"\n"):
    """An edit putting `new` on its own line just before el's end tag."""
    close_indent = _indent(text, el.close)
    if close_indent or text[el.close - 1:el.close] == b"\n":
        line = text.rfind(b"\n", 0, el.close) + 1
        return (line, line, indent + new + newline)
    return (el.close, el.close, new)


def read_inertials(path) -> dict:
    """{link: (mass, com (3,), I_com (3, 3) in link axes)} of every link of a URDF with an <inertial>,
    read the way `dynlib.load` reads them."""
    from ...files.urdf import _Reader, _parse_document, _read_link

    rd = _Reader(str(path), strict=False)  # the prior: a published model's values, physical or not
    robot = _parse_document(Path(str(path)))
    out = {}
    for el in robot.iterchildren("link"):
        if el.find("inertial") is not None:
            lk = _read_link(rd, el)
            out[lk.name] = (lk.mass, np.array(lk.com, dtype=float), np.array(lk.I, dtype=float))
    return out
