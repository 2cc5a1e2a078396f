"""One call from Python: the model and a workspace unboxed once, not on every call.

numba's compiled entry of a kernel converts each array among its arguments from
Python to its native form (about 25 ns each), and `model.arrays` and a workspace
hold about 44 arrays: 1-1.5 us per call, as much as a 6-DoF RNEA. Here they are
converted once per model: `native` stores ``(model.arrays, workspace, nq, zero
wrenches (nb, 6))`` as numba's native struct in a small int64 buffer (its
arrays' data pointers, shapes and strides), after a lock word, and a one-call
kernel (`rnea.rnea_one`, `aba.aba_one`, `jacobians.jacobian_one`, `crba.crba_one`,
`kinematics.frame_placement_one`, `energy.kinetic_one`, `energy.potential_one`,
`coriolis.coriolis_one`; `gravity_torques` and `nonlinear_effects` call `rnea_one`
with `zeros`) reads it back with `load`, so its entry converts one buffer and the
call's own vectors.

Threads: the kernels run without the GIL. Each model has one shared buffer, with
a workspace of its own, kept with the kernels' entries in ``model._one`` (a dict
lookup, cheaper than a thread-local one); a one-call kernel first takes the
buffer's lock word (`acquire`, an atomic compare-and-swap) and gives it back
(`release`) when done. When another thread holds it the kernel returns `BUSY` at
once, and the wrapper runs it again on the calling thread's own buffer
(`on_own_buffer`), which points to that thread's `model.workspace` (made on first
need, kept in ``model._local``; no other thread takes its lock).

Only plain vectors reach a compiled entry: an entry converts whatever numpy array
it is given as the array type it was compiled for, and a 2-D array converted as a
1-D one writes past the struct. The public wrapper checks, in Python, that each
vector is a numpy ndarray (not a subclass) of float64 in the machine's byte order
(the dtype object itself) with one dimension; the entry is compiled for `VECTOR`,
a 1-D float64 array of any strides (a read-only one too: the kernel never writes
it). The kernel then checks what numba's fingerprint would have: unit strides
and alignment (`contiguous` gives the array as the C-contiguous one that the batch
path's kernels were compiled for), sizes, a finite sum (finite only when
every entry is), and that q's free-flyer quaternions can be normalised
(`checked_q`). It returns a status, 0 when the result is valid. On any other
status, and for any other input, the public wrapper takes its general path, which
converts and checks every argument and names the one at fault. A one-call kernel
runs the algorithm's own kernel (`inlined`): no algorithm is written twice.

The wrappers (`rnea.rnea`, `aba.aba`, `jacobians.frame_jacobian`) write the call
out, a Python function call less (10% of a 1 us call)::

    if <every vector x plain: type(x) is ARRAY and x.dtype is F64 and x.ndim == 1>:
        try:
            entry, ty, buf, shape = model._one[one_kernel]
        except KeyError:
            entry, ty, buf, shape = _one.first_call(model, one_kernel, shape, n_vectors, ints)
        out = empty(shape)
        status = entry(ty, buf, *vectors, *ints, out)
        if status == BUSY:
            status = _one.on_own_buffer(model, one_kernel, n_vectors, (*vectors, *ints, out))
        if status == 0:
            return out

The other wrappers check their vectors the same way and call `call`, the same
pattern as a function (0.3 us a call more than written out, measured on crba).

Numba internals used: the ``entry_point`` of a compiled overload (as in
`dynlib._numba.parallel`) and ``intrinsic``s that store and load a native value through
a pointer, take and give back the lock word, and view an array as C-contiguous.
"""
import numpy as np
from llvmlite import ir
from numba import typeof, types
from numba.extending import intrinsic

from .compiled import jit
from ..core.joints import FREEFLYER
from ..core.spatial import kernel
from ..algorithms import _args

ARRAY, F64 = np.ndarray, np.dtype(np.float64)
"""A plain vector: ``type(x) is ARRAY and x.dtype is F64 and x.ndim == 1`` (see the module docstring)."""
empty = np.empty  # (the wrappers' one global look-up for it, not two)
VECTOR = types.Array(types.float64, 1, "A")
"""The type a one-call kernel's entry is compiled for, for each vector it is given."""
BUSY = 3
"""A one-call kernel's status when another thread holds the buffer's lock (nothing ran)."""


def inlined(algorithm_kernel):
    """The function of `algorithm_kernel` (a `kernel`) compiled again with numba's ``inline="always"``,
    for a one-call kernel: numba inlines its code there, so that the model's and workspace's arrays
    are not passed to it one by one (a compiled call passes each array as its 7 fields: with ~44
    arrays, 100-250 ns per call). The same source, the same arithmetic, the same results."""
    return jit(nrt=False, error_model="numpy", nogil=True, inline="always")(algorithm_kernel.py_func)


def first_call(model, one_kernel, shape, n_vectors, ints):
    """(entry, ty, buf, shape) of `one_kernel` on the model's shared buffer, for `n_vectors` vectors,
    the `ints` and a result of `shape`: made here and kept in ``model._one`` (the buffer's own
    workspace with it), where the public wrapper finds it on the next calls."""
    entries = model._one
    ty, buf, _ = entries.get("one") or entries.setdefault("one", native(model, model.create_data()))
    found = entries[one_kernel] = (_entry(one_kernel, ty, buf, n_vectors, (*ints, np.empty(shape))), ty, buf, shape)
    return found


def call(model, one_kernel, shape, *args):
    """The pattern above as one function, for the wrappers other than those three (0.3 us a call
    more than written out, on crba): the result, a new array, of ``one_kernel(ty, buf, *args, out)``, or None
    when its status is not 0 (the caller then takes its general path). `args` are the vectors,
    which the caller has found plain, then the ints. `shape` is the result's, each entry an int or
    the name of one of the model's sizes (``("nv", "nv")``: a constant, read at the first call)."""
    try:
        entry, ty, buf, shape = model._one[one_kernel]
    except KeyError:
        n = _n_vectors(args)
        entry, ty, buf, shape = first_call(model, one_kernel, tuple(getattr(model, s) if type(s) is str else s
                                                                    for s in shape), n, args[n:])
    out = empty(shape)
    status = entry(ty, buf, *args, out)
    if status == BUSY:
        status = on_own_buffer(model, one_kernel, _n_vectors(args), (*args, out))
    if status == 0:
        return out
    return None


def _n_vectors(args):
    """How many of `args` are vectors (they come first, the ints after)."""
    n = 0
    while n < len(args) and type(args[n]) is ARRAY:
        n += 1
    return n


_ZEROS = {}  # n -> read-only zeros (n,)


def zeros(n):
    """A read-only vector of n zeros (the kernels only read it): the zero velocity and acceleration
    that `rnea.gravity_torques` and `rnea.nonlinear_effects` give `rnea.rnea_one`."""
    try:
        return _ZEROS[n]
    except KeyError:
        z = _ZEROS[n] = np.zeros(n)
        z.flags.writeable = False
        return z


def on_own_buffer(model, one_kernel, n_vectors, args):
    """The status of ``one_kernel(ty, buf, *args)`` (`n_vectors` vectors first) on the calling thread's
    own buffer, which points to its `model.workspace` (when another thread holds the shared one)."""
    local = model._local
    try:
        ty, buf, _, entries = local.native
    except AttributeError:
        local.native = *native(model, model.workspace), {}
        ty, buf, _, entries = local.native
    entry = entries.get(one_kernel)
    if entry is None:
        entry = entries[one_kernel] = _entry(one_kernel, ty, buf, n_vectors, args[n_vectors:])
    return entry(ty, buf, *args)


def _entry(one_kernel, ty, buf, n_vectors, rest):
    """The compiled entry of `one_kernel` for (ty, buf, `n_vectors` VECTORs, *rest)."""
    sig = (typeof(ty), typeof(buf), *(VECTOR,) * n_vectors, *(typeof(a) for a in rest))
    found = one_kernel.overloads.get(sig)
    if found is None:
        one_kernel.compile(sig)
        found = one_kernel.overloads[sig]
    return found.entry_point


def native(model, data):
    """(numba type, int64 buffer, value) of ``value = (model.arrays, data, nq, zeros (nb, 6))``:
    the buffer holds a lock word (free) and then the value in native form; it points into the
    value's arrays, which whoever keeps the buffer must keep too."""
    value = (model.arrays, data, model.nq, _args.no_forces(model)[0])
    ty = typeof(value)
    buf = np.zeros(1 + -(-_size_of(ty) // 8), dtype=np.int64)
    _store_value(buf, value)
    return ty, buf, value


def _value_pointer(context, builder, buf_type, buf, target):
    """Pointer to the value of numba type `target` stored after the lock word of the int64 array `buf`."""
    data = context.make_array(buf_type)(context, builder, buf).data
    return builder.bitcast(builder.gep(data, [ir.Constant(ir.IntType(64), 1)]),
                           context.get_value_type(target).as_pointer())


@intrinsic
def _sizeof(typingctx, tyref):
    target = tyref.instance_type

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, context.get_abi_sizeof(context.get_value_type(target)))
    return types.intp(tyref), codegen


@intrinsic
def _store(typingctx, buf, value):
    def codegen(context, builder, signature, args):
        builder.store(args[1], _value_pointer(context, builder, buf, args[0], value))
        return context.get_dummy_value()
    return types.none(buf, value), codegen


@intrinsic
def load(typingctx, buf, tyref):
    """The value of type `tyref` stored in `buf` by `native` (in a kernel: ``m, d, nq, f0 = load(buf, ty)``)."""
    target = tyref.instance_type

    def codegen(context, builder, signature, args):
        return builder.load(_value_pointer(context, builder, buf, args[0], target))
    return target(buf, tyref), codegen


@intrinsic
def acquire(typingctx, buf):
    """Take `buf`'s lock word (an atomic 0 -> 1): True, or False when another thread holds it."""
    def codegen(context, builder, signature, args):
        word = context.make_array(buf)(context, builder, args[0]).data
        zero, one = ir.Constant(ir.IntType(64), 0), ir.Constant(ir.IntType(64), 1)
        return builder.extract_value(builder.cmpxchg(word, zero, one, "acquire", "monotonic"), 1)
    return types.boolean(buf), codegen


@intrinsic
def release(typingctx, buf):
    """Give `buf`'s lock word back (taken by `acquire`)."""
    def codegen(context, builder, signature, args):
        word = context.make_array(buf)(context, builder, args[0]).data
        builder.store_atomic(ir.Constant(ir.IntType(64), 0), word, "release", 8)
        return context.get_dummy_value()
    return types.none(buf), codegen


@intrinsic
def contiguous(typingctx, x):
    """A 1-D array of any layout as the C-contiguous array type (the same struct): for a vector
    that `checked_sum` found of unit stride, so that it meets the batch path's kernels."""
    if not isinstance(x, types.Array) or x.ndim != 1:
        return None
    c = x.copy(layout="C", readonly=False)

    def codegen(context, builder, signature, args):
        return args[0]
    return c(x), codegen


@intrinsic
def _address(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.ptrtoint(context.make_array(x)(context, builder, args[0]).data, ir.IntType(64))
    return types.int64(x), codegen


@kernel
def _size_of(ty):
    return _sizeof(ty)


@kernel
def _store_value(buf, value):
    _store(buf, value)


@kernel
def checked_sum(x, n):
    """The sum of x's entries, or NaN when x has not n entries, one item apart and aligned (the
    caller tests the sum of these sums with isfinite: finite only when every entry is, unless a
    sum of finite entries overflows, and then the general path decides)."""
    if x.shape[0] != n or x.strides[0] != x.itemsize or _address(x) % x.itemsize != 0:
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
