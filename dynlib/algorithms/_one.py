"""One call from Python: the model and a workspace unboxed once, not on every call.

numba's compiled entry of a kernel converts each array among its arguments from
Python to its native form (about 25 ns each), and `model.arrays` and a workspace
hold about 44 arrays: 1-1.5 us per call, as much as a 6-DoF RNEA. Here they are
converted once per model and thread: `native` stores ``(model.arrays, workspace,
nq, zero wrenches (nb, 6))`` as numba's native struct in a small int64 buffer
(its arrays' data pointers, shapes and strides; the buffer lives beside the
workspace, in the model, and the model holds every array it points to), and a
one-call kernel (`rnea.rnea_one`, `aba.aba_one`, `jacobians.jacobian_one`) reads
it back with `load`, so its entry converts one buffer and the call's own vectors.

The one-call kernels also check their vectors: sizes, a finite sum (a sum is
finite only when every term is), and that q's free-flyer quaternions can be normalised. They return a status, 0 when the result is
valid. On any other status, and whenever a vector is not a C-contiguous,
writeable float64 numpy vector in the machine's byte order (numba's fingerprint
of the vectors' types, one call in C, is compared with that of such vectors,
then the dtypes), the public wrapper takes its general path, which converts and
checks every argument and names the one at fault. A one-call kernel calls the
algorithm's own kernel: no algorithm is written twice.

Numba internals used: the ``entry_point`` of a compiled overload (as in
`dynlib.parallel`), ``numba._dispatcher.compute_fingerprint``, and an
``intrinsic`` that stores and loads a native value through a pointer.
"""
import numpy as np
from numba import typeof, types
from numba._dispatcher import compute_fingerprint
from numba.extending import intrinsic

from ..joints import FREEFLYER
from ..spatial import kernel
from . import _args

_F64 = np.dtype(np.float64)
_PLAIN = tuple(compute_fingerprint((np.empty(1),) * n) for n in range(4))
"""numba's fingerprint of n C-contiguous, writeable float64 vectors (byte order not included)."""


def call(model, one_kernel, vectors, rest):
    """``one_kernel(ty, buf, *vectors, *rest)`` with this thread's native model when the
    `vectors` are plain float64 vectors (see the module docstring); its status, or -1
    when they are not (then nothing ran)."""
    try:
        if compute_fingerprint(vectors) != _PLAIN[len(vectors)]:
            return -1
    except (ValueError, TypeError, NotImplementedError):  # a type numba fingerprints only in Python
        return -1
    for x in vectors:  # (numba's fingerprint does not tell a byte-swapped float64 from float64)
        if x.dtype is not _F64:
            return -1
    try:
        ty, buf, entries = model._local.native
        found = entries[one_kernel]
    except (AttributeError, KeyError):
        found, ty, buf = _first_call(model, one_kernel, (*vectors, *rest))
    return found(ty, buf, *vectors, *rest)


def _first_call(model, one_kernel, args):
    """The entry of `one_kernel` for `args` and this thread's native model, made here."""
    local = model._local
    try:
        ty, buf, entries = local.native
    except AttributeError:
        ty, buf = native(model)
        entries = {}
        local.native = ty, buf, entries
    sig = tuple(typeof(a) for a in (ty, buf, *args))
    found = one_kernel.overloads.get(sig)
    if found is None:
        one_kernel.compile(sig)
        found = one_kernel.overloads[sig]
    entries[one_kernel] = found.entry_point
    return found.entry_point, ty, buf


def native(model):
    """(numba type, int64 buffer) of ``(model.arrays, model.workspace, nq, zeros (nb, 6))``
    in native form, for the calling thread (whose workspace it points to)."""
    value = (model.arrays, model.workspace, model.nq, _args.no_forces(model)[0])
    ty = typeof(value)
    buf = np.zeros(-(-_size_of(ty) // 8), dtype=np.int64)
    _store_value(buf, value)
    return ty, buf


@intrinsic
def _sizeof(typingctx, tyref):
    target = tyref.instance_type

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, context.get_abi_sizeof(context.get_value_type(target)))
    return types.intp(tyref), codegen


@intrinsic
def _store(typingctx, buf, value):
    def codegen(context, builder, signature, args):
        data = context.make_array(buf)(context, builder, args[0]).data
        builder.store(args[1], builder.bitcast(data, context.get_value_type(value).as_pointer()))
        return context.get_dummy_value()
    return types.none(buf, value), codegen


@intrinsic
def load(typingctx, buf, tyref):
    """The value of type `tyref` stored in `buf` by `native` (in a kernel: ``m, d, nq, f0 = load(buf, ty)``)."""
    target = tyref.instance_type

    def codegen(context, builder, signature, args):
        data = context.make_array(buf)(context, builder, args[0]).data
        return builder.load(builder.bitcast(data, context.get_value_type(target).as_pointer()))
    return target(buf, tyref), codegen


@kernel
def _size_of(ty):
    return _sizeof(ty)


@kernel
def _store_value(buf, value):
    _store(buf, value)


@kernel
def checked_sum(x, n):
    """The sum of x's entries, or NaN when x has not n entries (the caller tests the sum of
    these sums with isfinite: finite only when every entry is, unless a sum of finite
    entries overflows, and then the general path decides)."""
    if x.shape[0] != n:
        return np.nan
    s = 0.0
    for i in range(n):
        s += x[i]
    return s


@kernel
def checked_q(m, q, nq):
    """checked_sum(q, nq) of a configuration, or NaN also when a free-flyer's quaternion
    cannot be normalised (zero, or a squared norm that under- or overflows): the general
    path then names it (`_args.vectors`)."""
    s = checked_sum(q, nq)
    if nq != m.S.shape[0] and np.isfinite(s):  # (nq == nv: no free-flyer)
        for i in range(m.jtype.shape[0]):
            if m.jtype[i] == FREEFLYER:
                c = m.idx_q[i] + 3
                n2 = q[c] * q[c] + q[c + 1] * q[c + 1] + q[c + 2] * q[c + 2] + q[c + 3] * q[c + 3]
                if not (n2 > 0.0 and n2 < np.inf):
                    return np.nan
    return s
