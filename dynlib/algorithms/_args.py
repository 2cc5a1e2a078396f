"""Argument checking at the public boundary: shapes, finiteness, batch dimension.

Kernels assume valid input; every public wrapper passes its arguments through
here first, so a bad argument is an `InputError` naming it, never a crash in
compiled code. The one-call path (`dynlib._numba.one`) checks in compiled code
(`checked_q`), and takes the general path, which names the argument at fault, when
a check fails.
"""
import math

import numpy as np

from .._numba.decorators import kernel
from .._numba.one import checked_sum
from ..core.joints import FREEFLYER
from ..errors import InputError


def vectors(model, **named):
    """Check state arguments and give them as C-contiguous (N, n) float arrays.

    Each keyword is ``name=(array, size)``. All arrays must share the batch
    dimension (or have none). Returns ``(list_of_2d_arrays, batched, N)``.
    Written for the single call's sake: when every argument is a float64 vector
    of the right size with a finite sum (the common case), that is all that is
    checked; anything else takes the general path, which names the argument at fault.
    """
    out = []
    for x, size in named.values():
        if type(x) is not np.ndarray or x.dtype is not _F64 or x.shape != (size,) or not math.isfinite(sum(x.tolist())):
            break
        out.append(x.reshape(1, size))
    else:
        if model.quaternions:
            _check_quaternions(model, named, out)
        return out, False, 1
    out, batched, n_rows = [], None, None
    for name, (x, size) in named.items():
        if type(x) is np.ndarray and x.dtype is _F64:
            arr = x
        else:
            try:
                arr = np.asarray(x, dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError(f"{name} must be an array of numbers, got {type(x).__name__}") from None
        shape = arr.shape
        if shape == (size,):
            b, rows = False, 1
        elif len(shape) == 2 and shape[1] == size:
            b, rows = True, shape[0]
        elif len(shape) in (1, 2):
            raise InputError(f"{name} must have {size} entries for robot '{model.name}' "
                             f"(shape ({size},) or (N, {size})), got shape {np.shape(x)}")
        else:
            raise InputError(f"{name} must have shape ({size},) or (N, {size}), got {arr.shape}")
        if batched is None:
            batched, n_rows = b, rows
        elif b != batched or rows != n_rows:
            raise InputError(f"{name} has shape {np.shape(x)}, which does not match the other arguments' batch size {n_rows if batched else 'none'}")
        if not all_finite(arr):
            bad = np.argwhere(~np.isfinite(arr.reshape(rows, size)))[0]
            where = f"row {bad[0]}, " if b else ""
            raise InputError(f"{name} has a non-finite value at {where}index {bad[1]}")
        out.append(np.ascontiguousarray(arr if b else arr[None]))
    if model.quaternions:
        _check_quaternions(model, named, out, bool(batched))
    return out, bool(batched), n_rows


def _check_quaternions(model, named, out, batched=False):
    """InputError when a configuration (an argument of nq entries, which for a model with a
    free-flyer is no velocity's size) holds a free-flyer quaternion that cannot be
    normalised: zero, or a squared norm that under- or overflows (the kernels normalise
    it, and would give NaN or a wrong rotation without a word)."""
    for name, arr in zip(named, out):
        if arr.shape[1] != model.nq:
            continue
        for joint, c in model.quaternions:
            quat = arr[:, c:c + 4]
            n2 = np.einsum("ij,ij->i", quat, quat)
            bad = np.flatnonzero(~((n2 > 0.0) & (n2 < np.inf)))
            if bad.size:
                k = int(bad[0])
                norm = math.hypot(*quat[k].tolist())  # (scaled: no overflow)
                what = "is zero" if norm == 0.0 else f"has norm {norm:.3g}, which cannot be normalised"
                raise InputError(f"{name}[{c}:{c + 4}]{f' of row {k}' if batched else ''}, the quaternion "
                                 f"(x, y, z, w) of joint '{joint}', {what}; a rotation needs a nonzero quaternion")


_F64 = np.dtype(np.float64)


def all_finite(arr) -> bool:
    """Whether every entry of `arr` is finite. A sum is finite only when every term
    is, so the sum is the first test (a Python one for a short array, where numpy's
    call overhead would dominate) and the exact test runs only when it fails."""
    total = (sum(arr.tolist()) if arr.ndim == 1 else sum(arr.ravel().tolist())) if arr.size <= 64 else arr.sum()
    return math.isfinite(total) or bool(np.all(np.isfinite(arr)))


_NO_FORCES = {}  # nb -> zeros (1, nb, 6); the kernels only read f_ext


def no_forces(model):
    """Zero wrenches on every body, (1, nb, 6) (the kernels only read them)."""
    zeros = _NO_FORCES.get(model.nb)
    if zeros is None:
        zeros = _NO_FORCES[model.nb] = np.zeros((1, model.nb, 6))
    return zeros


def external_forces(model, f_ext, n_rows, batched):
    """f_ext as an (N or 1, nb, 6) array of body-frame wrenches (zeros when None)."""
    nb = model.nb
    if f_ext is None:
        return no_forces(model)
    arr = np.asarray(f_ext, dtype=np.float64)
    if arr.shape == (nb, 6):
        arr = arr.reshape(1, nb, 6)
    elif not (batched and arr.shape == (n_rows, nb, 6)):
        raise InputError(f"f_ext must have shape ({nb}, 6) (one wrench per body, body frame)"
                         f"{f' or ({n_rows}, {nb}, 6)' if batched else ''}, got {arr.shape}")
    if not all_finite(arr):
        raise InputError("f_ext has a non-finite value")
    return np.ascontiguousarray(arr)


REFERENCES = {"world": 0, "local": 1, "local_world_aligned": 2}


def reference(ref):
    try:
        return REFERENCES[ref]
    except KeyError:
        raise InputError(f"reference must be one of {', '.join(REFERENCES)}, got {ref!r}") from None


def frame_or_none(model, name_or_index):
    """The frame's index, or None when `name_or_index` gives no frame (for a one-call path, whose
    caller then takes its general path: that raises, after it has checked q)."""
    try:  # (a frame name, the usual: one dict look-up)
        return model._frame_index[name_or_index]
    except (KeyError, TypeError):
        try:
            return frame(model, name_or_index) if type(name_or_index) is not str else None
        except InputError:
            return None


def frame(model, frame):
    """A frame index from a name or an index."""
    if type(frame) is str:
        return model.frame_id(frame)
    if isinstance(frame, (int, np.integer)):
        if not 0 <= frame < model.nframes:
            raise InputError(f"frame index {frame} is out of range (robot '{model.name}' has {model.nframes} frames)")
        return int(frame)
    return model.frame_id(frame)


def one_value(model, data):
    """The value a one-call kernel loads from its buffer (`dynlib._numba.one.native`): ``(model.arrays, data,
    nq, zero wrenches (nb, 6))``, with `data` the buffer's workspace."""
    return model.arrays, data, model.nq, no_forces(model)[0]


@kernel
def checked_q(m, q, nq):
    """checked_sum(q, nq) of a configuration, or NaN also when a free-flyer's quaternion
    cannot be normalised (zero, or a squared norm that under- or overflows): the general
    path then names it (`vectors`)."""
    s = checked_sum(q, nq)
    if nq != m.S.shape[0] and np.isfinite(s):  # (nq == nv: no free-flyer)
        for i in range(m.jtype.shape[0]):
            if m.jtype[i] == FREEFLYER:
                c = m.idx_q[i] + 3
                n2 = q[c] * q[c] + q[c + 1] * q[c + 1] + q[c + 2] * q[c + 2] + q[c + 3] * q[c + 3]
                if not (n2 > 0.0 and n2 < np.inf):
                    return np.nan
    return s
