"""The page: meshcat commands packed into one self-contained HTML file.

The scene and the motion are meshcat viewer commands (``set_object``,
``set_transform``, ``set_property``, ``set_animation``: plain dicts in the
format meshcat's Python package sends to its server), packed as MessagePack
the way meshcat packs them (numpy arrays as the typed-array extension types of
the viewer's msgpack-lite: 0x12 Uint8Array, 0x17 Float32Array), and given to
the viewer's own ``handle_command_bytearray`` in the page. No server, no
network: the viewer bundle (``main.min.js`` of the ``meshcat`` package) is
inlined in the page, and so are the commands, in one gzip stream in base64
(the browser's DecompressionStream inflates it).

Mesh arrays are often drawn more than once (left and right legs sharing a
mesh), and gzip does not see repeats further apart than 32 KB: a `Blob` (a
mesh's positions, normals, colours or indices) is stored once and the commands that hold it refer
to it. The stream is a sequence of records, little-endian::

    'B' u32 n, n bytes                      a blob (numbered from 0 in order)
    'C' u32 k, then k segments              a command's MessagePack bytes:
        0 u32 n, n bytes                    literal bytes
        1 u32 i                             the bytes of blob i
"""
from __future__ import annotations

import base64
import gzip
import html
import importlib.util
import json
import re
import struct
from pathlib import Path

import numpy as np

from ...errors import InputError

# msgpack-lite's extension types (meshcat.geometry.threejs_type)
INT8, UINT8, UINT16, UINT32, FLOAT32 = 0x11, 0x12, 0x14, 0x16, 0x17


class Blob:
    """Bytes or text stored once in the page (a mesh's arrays, drawn by several links): bytes are the
    typed array of extension type `code` (Uint8Array unless told)."""

    __slots__ = ("data", "text", "key", "code")

    def __init__(self, data, key=None, code=UINT8):
        self.text = isinstance(data, str)
        self.data = data.encode("utf-8") if self.text else bytes(data)
        self.key = key if key is not None else id(self)
        self.code = code


class Ext:
    """A MessagePack extension value (a typed array for the viewer)."""

    __slots__ = ("code", "data")

    def __init__(self, code, data):
        self.code, self.data = code, data


def float32(array) -> Ext:
    """A numpy array as a Float32Array (row-major order)."""
    return Ext(FLOAT32, np.ascontiguousarray(array, dtype="<f4").tobytes())


# ------------------------------------------------------------------- MessagePack

def _pack(obj, out: list, buf: bytearray):
    """Append MessagePack for `obj` to `buf`; a Blob closes the literal and becomes a reference."""
    if obj is None:
        buf.append(0xC0)
    elif obj is True or obj is False:
        buf.append(0xC3 if obj else 0xC2)
    elif isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        n = int(obj)
        if 0 <= n < 128:
            buf.append(n)
        elif -32 <= n < 0:
            buf.append(n & 0xFF)
        else:
            buf += b"\xd3" + struct.pack(">q", n)
    elif isinstance(obj, (float, np.floating)):
        buf += b"\xcb" + struct.pack(">d", float(obj))
    elif isinstance(obj, str):
        _header(buf, len(obj.encode("utf-8")), 0xA0, 32, b"\xd9", b"\xda", b"\xdb")
        buf += obj.encode("utf-8")
    elif isinstance(obj, Blob):
        if obj.text:
            _header(buf, len(obj.data), 0xA0, 32, b"\xd9", b"\xda", b"\xdb")
        else:
            _ext_header(buf, obj.code, len(obj.data))
        out.append(bytes(buf))
        out.append(obj)
        buf.clear()
    elif isinstance(obj, Ext):
        _ext_header(buf, obj.code, len(obj.data))
        buf += obj.data
    elif isinstance(obj, dict):
        _header(buf, len(obj), 0x80, 16, None, b"\xde", b"\xdf")
        for k, v in obj.items():
            _pack(str(k), out, buf)
            _pack(v, out, buf)
    elif isinstance(obj, (list, tuple)):
        _header(buf, len(obj), 0x90, 16, None, b"\xdc", b"\xdd")
        for v in obj:
            _pack(v, out, buf)
    elif isinstance(obj, np.ndarray):
        _pack(obj.tolist(), out, buf)
    else:
        raise TypeError(f"cannot pack {type(obj).__name__}")


def _header(buf, n, fix, fix_limit, h8, h16, h32):
    if n < fix_limit:
        buf.append(fix | n)
    elif h8 is not None and n < 256:
        buf += h8 + bytes([n])
    elif n < 65536:
        buf += h16 + struct.pack(">H", n)
    else:
        buf += h32 + struct.pack(">I", n)


def _ext_header(buf, code, n):
    if n < 256:
        buf += b"\xc7" + bytes([n, code])
    elif n < 65536:
        buf += b"\xc8" + struct.pack(">H", n) + bytes([code])
    else:
        buf += b"\xc9" + struct.pack(">I", n) + bytes([code])


def packb(obj) -> list:
    """MessagePack of `obj` as segments: bytes, and Blobs where blobs stand."""
    out, buf = [], bytearray()
    _pack(obj, out, buf)
    out.append(bytes(buf))
    return [s for s in out if not isinstance(s, bytes) or s]


def stream(commands) -> bytes:
    """The record stream of the module docstring (blobs first, each once; then the commands)."""
    blobs, index, packed = [], {}, []
    for cmd in commands:
        segments = packb(cmd)
        for s in segments:
            if isinstance(s, Blob) and s.key not in index:
                index[s.key] = len(blobs)
                blobs.append(s)
        packed.append(segments)
    out = bytearray()
    for b in blobs:
        out += b"B" + struct.pack("<I", len(b.data)) + b.data
    for segments in packed:
        out += b"C" + struct.pack("<I", len(segments))
        for s in segments:
            if isinstance(s, Blob):
                out += b"\x01" + struct.pack("<I", index[s.key])
            else:
                out += b"\x00" + struct.pack("<I", len(s)) + s
    return bytes(out)


# ------------------------------------------------------------------- the page

def viewer_bundle() -> tuple[str, str]:
    """(main.min.js, its licence notices) of the installed meshcat package, found without
    importing it (its __init__ imports zmq, tornado and IPython, which a page does not need)."""
    spec = importlib.util.find_spec("meshcat")
    if spec is None or not spec.origin:
        raise InputError("dyn view needs the 'meshcat' package (its viewer script goes into the page): "
                         "pip install meshcat")
    folder = Path(spec.origin).parent / "viewer"
    script = folder / "dist" / "main.min.js"
    if not script.is_file():
        raise InputError(f"the meshcat package has no viewer script at {script}: reinstall it (pip install meshcat)")
    notices = []
    for name in ("LICENSE", "dist/main.min.js.LICENSE.txt"):
        if (folder / name).is_file():
            notices.append((folder / name).read_text(errors="replace"))
    third = folder / "dist" / "main.min.js.THIRD_PARTY_LICENSES.json"
    if third.is_file():
        try:
            for entry in json.loads(third.read_text()):
                notices.append(f"{entry.get('name')} {entry.get('version')} ({entry.get('license')})\n"
                               f"{entry.get('licenseText') or ''}")
        except (ValueError, AttributeError):
            pass
    return script.read_text(), re.sub(r"-{2,}", "-", "\n\n".join(notices))  # no "-->" in the comment


LOADER = r"""
(async function () {
  "use strict";
  const viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
  window.viewer = viewer;
  const status = document.getElementById("dyn-status");
  try {
    const text = document.getElementById("dyn-scene").textContent.trim();
    const raw = atob(text);
    const packed = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) packed[i] = raw.charCodeAt(i);
    if (typeof DecompressionStream === "undefined") {
      throw new Error("this browser has no DecompressionStream; use a current Chrome, Firefox, Edge or Safari");
    }
    const inflated = new Response(new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip")));
    const data = new Uint8Array(await inflated.arrayBuffer());
    const view = new DataView(data.buffer);
    const blobs = [];
    let k = 0, failed = 0;
    while (k < data.length) {
      const tag = data[k];
      const n = view.getUint32(k + 1, true);
      k += 5;
      if (tag === 66) {  // 'B': a blob
        blobs.push(data.subarray(k, k + n));
        k += n;
      } else {  // 'C': a command in n segments
        const parts = [];
        let size = 0;
        for (let s = 0; s < n; s++) {
          const kind = data[k], m = view.getUint32(k + 1, true);
          k += 5;
          const part = kind === 0 ? data.subarray(k, k + m) : blobs[m];
          if (kind === 0) k += m;
          parts.push(part);
          size += part.length;
        }
        const bytes = new Uint8Array(size);
        let at = 0;
        for (const part of parts) { bytes.set(part, at); at += part.length; }
        try {
          viewer.handle_command_bytearray(bytes);
        } catch (e) {  // one object the viewer cannot load (a mesh it cannot parse): the rest still shows
          failed += 1;
          console.warn("dyn view: an object could not be loaded:", e);
        }
      }
    }
    if (failed) {
      status.textContent = `dyn view: ${failed} object(s) could not be loaded (the browser console says why)`;
      status.style.display = "block";
    }
    const target = JSON.parse(document.getElementById("dyn-camera-target").textContent);
    viewer.controls.target.set(target[0], target[2], -target[1]);  // world (x, y, z) in three.js's y-up axes
    viewer.controls.update();
    const animator = viewer.animator;
    function timeFromAddress() {
      const m = /(?:^|[#&])t=([0-9.eE+-]+)/.exec(window.location.hash);
      const t = m ? parseFloat(m[1]) : NaN;
      return isFinite(t) ? Math.max(0, t) : null;
    }
    function openAt(t) {  // paused at t seconds from the first sample
      if (animator.actions.length === 0) return;
      animator.pause();
      animator.seek(t);
      animator.display_progress(Math.min(t, animator.duration));
    }
    const t = timeFromAddress();
    if (t !== null) openAt(t);
    window.addEventListener("hashchange", () => { const t = timeFromAddress(); if (t !== null) openAt(t); });
    try {  // the controls closed (the picture whole), their Scene folder too when they are opened
      viewer.gui.close();
      if (viewer.gui.__folders && viewer.gui.__folders.Scene) viewer.gui.__folders.Scene.close();
    } catch (e) { /* the controls stay as they are */ }
    viewer.set_dirty();
    // textures decode after their objects are drawn: draw again once they may have arrived
    for (const ms of [250, 1000, 3000]) setTimeout(() => viewer.set_dirty(), ms);
    requestAnimationFrame(() => requestAnimationFrame(() => { document.body.dataset.dynReady = "1"; }));
  } catch (e) {
    status.textContent = "dyn view: the page could not be loaded: " + e.message;
    status.style.display = "block";
    throw e;
  }
})();
"""

STYLE = """
body { margin: 0; font-family: sans-serif; }
#meshcat-pane { width: 100vw; height: 100vh; overflow: hidden; }
#dyn-info { position: absolute; left: 8px; bottom: 8px; max-width: 46em; padding: 4px 8px;
  color: #fff; background: rgba(0, 0, 0, 0.45); font-size: 12px; line-height: 1.4; border-radius: 3px;
  pointer-events: none; }
#dyn-status { display: none; position: absolute; left: 8px; top: 8px; padding: 6px 10px;
  color: #fff; background: #a00; font-size: 14px; }
"""


def html_page(commands, *, title: str, info_lines=(), camera_target=(0.0, 0.0, 0.0)) -> bytes:
    """One HTML file: the viewer bundle, the commands, a loader, and a caption; the camera's
    orbit controls turn about `camera_target` (world coordinates)."""
    script, notices = viewer_bundle()
    payload = base64.b64encode(gzip.compress(stream(commands), compresslevel=6, mtime=0)).decode("ascii")
    info = "<br>".join(html.escape(line) for line in info_lines)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="dyn view">
<title>{html.escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<div id="meshcat-pane"></div>
<div id="dyn-info">{info}</div>
<div id="dyn-status"></div>
<!-- The viewer below is meshcat's (main.min.js of the meshcat Python package), with its notices:
{notices}
-->
<script>{script}</script>
<script id="dyn-camera-target" type="application/json">{json.dumps([float(x) for x in camera_target])}</script>
<script id="dyn-scene" type="application/octet-stream">
{payload}
</script>
<script>{LOADER}</script>
</body>
</html>
""".encode("utf-8")
