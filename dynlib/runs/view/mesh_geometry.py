"""A mesh file made ready for the page in Python: read with trimesh, repaired, decimated on request,
and lowered to the one object every meshcat viewer loads, a three.js BufferGeometry.

Why in Python: the viewer's own loaders failed on real robots' files (pybullet's Franka Panda
OBJs mix faces with and without texture coordinates, which its OBJ loader could not merge; parts
of UR5's Collada meshes lost their materials), and a failure showed only on the page. Here every
format trimesh reads (STL, OBJ with or without its MTL, Collada, glTF/GLB) becomes:

- positions (float32, in the file's units: the caller scales by ``<mesh scale>`` and a .dae's
  ``<unit meter>``), the parts of a file placed by its own scene graph (a .dae's nodes, a glTF's);
- normals made here (the files' are often missing or wrong): faces are grouped into smooth
  patches, meeting at edges bent less than CREASE_DEGREES, each patch with its own vertices and
  area-weighted normals, so flat faces stay flat and round ones round;
- the file's own colours per vertex (uint8 RGB; a texture sampled at the vertices' texture
  coordinates, else each material's colour), or none when the file has no colour of its own (STL,
  an OBJ without its MTL): the URDF's ``<material>`` colour or a neutral one is used then;
- indices (uint32).

`decimate` brings a mesh above `max_triangles` down to about that many (quadric decimation,
the `fast-simplification` package through trimesh), part by part in proportion, each new
vertex taking the colour of the nearest old one.
"""
from __future__ import annotations

import io
from typing import NamedTuple

import numpy as np

CREASE_DEGREES = 30.0


class Geometry(NamedTuple):
    """A mesh file's triangles, in the file's units (its parts placed and joined)."""

    vertices: np.ndarray       # (n, 3) float64
    faces: np.ndarray          # (m, 3) int64
    colors: np.ndarray | None  # (n, 3) uint8 the file's own colours; None: it has none
    parts: np.ndarray          # (m,) the part (a file's mesh or material group) of each face

    @property
    def triangles(self) -> int:
        return len(self.faces)


class Lowered(NamedTuple):
    """What the page's BufferGeometry holds."""

    positions: np.ndarray       # (k, 3) float32
    normals: np.ndarray         # (k, 3) float32
    colors: np.ndarray | None   # (k, 3) uint8
    index: np.ndarray           # (3m,) uint32


def read(data: bytes, fmt: str, resolver) -> Geometry:
    """The triangles of a mesh file's bytes (`fmt`: 'stl', 'obj', 'dae', 'gltf', 'glb'); `resolver`
    gives trimesh the files it names (an MTL, textures, a glTF's buffers). ValueError when it cannot be
    read or holds no triangle."""
    import trimesh

    try:
        loaded = trimesh.load(io.BytesIO(data), file_type=fmt, resolver=resolver, force="scene", process=False)
        meshes = [m for m in loaded.dump() if isinstance(m, trimesh.Trimesh)]
    except Exception as exc:  # noqa: BLE001 — every reader's own exception: the file is not a mesh it reads
        raise ValueError(f"cannot be read as {fmt.upper()} ({type(exc).__name__}: {exc})".replace("\n", " ")) from None
    vertices, faces, colors, parts, own, offset = [], [], [], [], False, 0
    for k, m in enumerate(meshes):
        v = np.asarray(m.vertices, dtype=float).reshape(-1, 3)
        f = np.asarray(m.faces, dtype=np.int64).reshape(-1, 3)
        f = f[((f >= 0) & (f < len(v))).all(axis=1)]
        f = f[np.isfinite(v[f]).all(axis=(1, 2))] if len(f) else f
        if not len(f):
            continue
        c = _colours(m, len(v))
        own |= c is not None
        vertices.append(v)
        faces.append(f + offset)
        colors.append(c)
        parts.append(np.full(len(f), k))
        offset += len(v)
    if not faces:
        raise ValueError(f"no triangle could be read from it (an empty or damaged {fmt.upper()} file)")
    V = np.vstack(vertices)
    V = np.where(np.isfinite(V), V, 0.0)  # vertices no face uses
    C = None
    if own:
        neutral = np.array([184, 184, 189], np.uint8)
        C = np.vstack([c if c is not None else np.tile(neutral, (len(v), 1)) for c, v in zip(colors, vertices)])
    return Geometry(V, np.vstack(faces), C, np.concatenate(parts))


def _colours(mesh, n):
    """(n, 3) uint8 the mesh's own vertex colours (its texture sampled, else its material's colour,
    else its colours), None when it has none."""
    visual = mesh.visual
    kind = getattr(visual, "kind", None)
    try:
        if kind == "texture":
            material = getattr(visual, "material", None)
            if getattr(visual, "uv", None) is not None and len(visual.uv) == n:
                rgba = visual.to_color().vertex_colors
            elif material is not None:
                rgba = np.tile(np.asarray(material.main_color, np.uint8), (n, 1))
            else:
                return None
        elif kind in ("vertex", "face"):
            rgba = visual.vertex_colors
        else:
            return None
        rgba = np.asarray(rgba, dtype=np.uint8).reshape(-1, 4)
        return rgba[:, :3].copy() if len(rgba) == n else None
    except Exception:  # noqa: BLE001 — a texture that cannot be sampled: the material's colour, or none
        material = getattr(visual, "material", None)
        main = getattr(material, "main_color", None)
        return None if main is None else np.tile(np.asarray(main, np.uint8)[:3], (n, 1))


def decimate(geometry: Geometry, max_triangles: int) -> Geometry:
    """About `max_triangles` triangles (each part its share, at least 4), colours from the nearest old
    vertex; the geometry itself when it has no more."""
    if max_triangles is None or geometry.triangles <= max_triangles:
        return geometry
    import trimesh
    from scipy.spatial import cKDTree

    V, F, C = geometry.vertices, geometry.faces, geometry.colors
    vertices, faces, colors, parts, offset = [], [], [], [], 0
    for k in np.unique(geometry.parts):
        f = F[geometry.parts == k]
        used, local = np.unique(f, return_inverse=True)
        mesh = trimesh.Trimesh(V[used], local.reshape(-1, 3), process=False)
        target = max(4, int(round(max_triangles * len(f) / len(F))))
        if len(f) > target:
            try:
                mesh = mesh.simplify_quadric_decimation(face_count=target)
            except Exception:  # noqa: BLE001 — a part the decimation cannot take is kept whole
                pass
        v, f2 = np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64)
        vertices.append(v)
        faces.append(f2 + offset)
        parts.append(np.full(len(f2), k))
        if C is not None:
            colors.append(C[used][cKDTree(V[used]).query(v)[1]])
        offset += len(v)
    return Geometry(np.vstack(vertices), np.vstack(faces), np.vstack(colors) if C is not None else None,
                    np.concatenate(parts))


def lower(geometry: Geometry) -> Lowered:
    """Positions, normals, colours and indices: vertices shared within smooth patches (see the module)."""
    V, F, C = geometry.vertices, geometry.faces, geometry.colors
    # one vertex per position and colour (an STL's triangles each bring their own three)
    key = np.ascontiguousarray(V if C is None else np.hstack([V, C.astype(float)])) + 0.0  # -0.0 as 0.0
    rows = key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).reshape(-1)  # a row as one value
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    F = inverse.reshape(-1)[F]
    V = V[first]
    C = None if C is None else C[first]
    cross = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])  # twice the area, along the normal
    patch = _patches(F, cross)
    # a vertex per (vertex, patch): faces of one patch share it, patches meeting at a crease do not
    corner = F.reshape(-1) * (patch.max() + 1) + np.repeat(patch, 3)
    unique, new = np.unique(corner, return_inverse=True)
    old = unique // (patch.max() + 1)
    normals = np.zeros((len(unique), 3))
    np.add.at(normals, new, np.repeat(cross, 3, axis=0))
    length = np.linalg.norm(normals, axis=1)
    normals = np.where(length[:, None] > 0, normals / np.where(length > 0, length, 1)[:, None], [0.0, 0.0, 1.0])
    return Lowered(V[old].astype(np.float32), normals.astype(np.float32),
                   None if C is None else C[old], new.astype(np.uint32))


def _patches(F, cross) -> np.ndarray:
    """(m,) the smooth patch of each face: faces sharing an edge (the same two vertices) whose normals
    differ by less than CREASE_DEGREES are in one patch."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m = len(F)
    edges = np.sort(np.stack([F[:, [0, 1]], F[:, [1, 2]], F[:, [2, 0]]], axis=1).reshape(-1, 2), axis=1)
    face = np.repeat(np.arange(m), 3)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    e, f = edges[order], face[order]
    same = (e[1:] == e[:-1]).all(axis=1)  # consecutive equal edges: two faces meeting there
    a, b = f[:-1][same], f[1:][same]
    unit = cross / np.maximum(np.linalg.norm(cross, axis=1), 1e-300)[:, None]
    smooth = np.einsum("ij,ij->i", unit[a], unit[b]) > np.cos(np.radians(CREASE_DEGREES))
    graph = coo_matrix((np.ones(int(smooth.sum())), (a[smooth], b[smooth])), shape=(m, m))
    return connected_components(graph, directed=False)[1]
