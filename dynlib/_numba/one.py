"""One call from Python: a model and a workspace unboxed once, not on every call.

numba's compiled entry of a kernel converts each array among its arguments from
Python to its native form (about 25 ns each), and a model's arrays and a workspace
hold about 44 arrays: 1-1.5 us per call, as much as a 6-DoF RNEA. Here they are
converted once per model: `native` stores a value (the algorithms' is
``(model.arrays, workspace, nq, zero wrenches (nb, 6))``, `dynlib.algorithms._args.one_value`)
as numba's native struct in a small int64 buffer (its arrays' data pointers, shapes and
strides), after a lock word, and a one-call kernel (`rnea.rnea_one`, `aba.aba_one`, ...)
reads it back with `load`, so its entry converts one buffer and the call's own vectors.

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
path's kernels were compiled for), sizes and a finite sum (`checked_sum`: finite
only when every entry is). It returns a status, 0 when the result is valid. On any
other status, and for any other input, the public wrapper takes its general path,
which converts and checks every argument and names the one at fault. A one-call
kernel runs the algorithm's own kernel (`inlined`): no algorithm is written twice.

The wrappers are written once: `one_call` puts the one-call path in front of a wrapper's
general path, from one template (`_TEMPLATE`), with the wrapper's own names in it (a
Python function call less than calling a helper: 10% of a 1 us call)::

    @one_call(rnea_one, "q v a", shape="(model.nv,)", value=_args.one_value, when="f_ext is None")
    def rnea(model, q, v, a, f_ext=None):
        ...  # the general path: batches, f_ext, other inputs, and every error named

Numba internals used: the ``entry_point`` of a compiled overload (as in
`dynlib._numba.parallel`) and ``intrinsic``s that store and load a native value through
a pointer, take and give back the lock word, and view an array as C-contiguous. They are
probed once (`available`: a small kernel stores, loads and checks a value through them);
when the probe fails, or a one-call kernel does not compile, every call takes its general
path (numba's public entry, which converts every argument): slower, the same results.
"""
import ast
import functools
import inspect
import linecache
import math
import textwrap

import numpy as np
from llvmlite import ir
from numba import typeof, types
from numba.extending import intrinsic

from .decorators import inline_kernel, kernel

ARRAY, F64 = np.ndarray, np.dtype(np.float64)
"""A plain vector: ``type(x) is ARRAY and x.dtype is F64 and x.ndim == 1`` (see the module docstring)."""
empty = np.empty  # (the wrappers' one global look-up for it, not two)
VECTOR = types.Array(types.float64, 1, "A")
"""The type a one-call kernel's entry is compiled for, for each vector it is given."""
BUSY = 3
"""A one-call kernel's status when another thread holds the buffer's lock (nothing ran)."""
NOT_RUN = 1
"""The status of a one-call kernel that did not run (the general path then runs)."""
notes = []
"""Why the one-call path is off, when it is (see `available`)."""


def inlined(algorithm_kernel):
    """The function of `algorithm_kernel` (a `kernel`) compiled again as an `inline_kernel`, for a one-call
    kernel: LLVM inlines its code there, so that the model's and workspace's arrays are not passed to it
    one by one (a compiled call passes each array as its 7 fields: with ~44 arrays, 100-250 ns per call).
    The same source, the same arithmetic, the same results."""
    return inline_kernel(algorithm_kernel.py_func)


# ---------------------------------------------------------------- the wrappers, written once

_TEMPLATE = """\
def make(ONE, GENERAL, VALUE, ARRAY, F64, empty, BUSY, first_call, on_own_buffer):
    def {name}({params}):
{prelude}        if {when}{plain}:
            try:
                entry, ty, buf, shape = model._one[ONE]
            except KeyError:
                entry, ty, buf, shape = first_call(model, ONE, {shape}, {n}, {ints}, VALUE)
            out = empty(shape)
            status = entry(ty, buf, {args}, out)
            if status == BUSY:
                status = on_own_buffer(model, ONE, {n}, ({args}, out), VALUE)
            if status == 0:
                return {result}
        return GENERAL({params})
    return {name}
"""

_SCALAR_TEMPLATE = _TEMPLATE.replace("""            out = empty(shape)
            status = entry(ty, buf, {args}, out)
            if status == BUSY:
                status = on_own_buffer(model, ONE, {n}, ({args}, out), VALUE)
            if status == 0:
                return {result}
""", """            value = entry(ty, buf, {args})
            if value == value:
                return value
            if copysign(1.0, value) < 0.0:  # (-NaN: BUSY)
                value = on_own_buffer(model, ONE, {n}, ({args},), VALUE)
                if value == value:
                    return value
""").replace("first_call, on_own_buffer):", "first_call, on_own_buffer, copysign):")
"""The template of a scalar quantity (`one_call`'s shape None): its one-call kernel returns the number, NaN
when it did not run (the general path then runs) and -NaN when another thread holds the buffer (`SCALAR_BUSY`),
so that no result array is made and read (about a fifth of a call as cheap as an energy)."""
SCALAR_BUSY = -np.nan
"""A scalar one-call kernel's result when another thread holds the buffer (nothing ran)."""


def one_call(one_kernel, vectors, shape, value, *, args=None, ints="", when="", prelude="", result="out"):
    """A decorator: the wrapper `general(model, ...)` (its general path) with the one-call path of
    `one_kernel` in front, made from `_TEMPLATE` in the wrapper's module (its globals). The strings are
    Python in the wrapper's names: `vectors` the arguments that must be plain vectors ("q v"), `shape` the
    result's (evaluated at the first call of a model), `args` the vectors the kernel is given (default:
    `vectors`), `ints` the integers after them, `when` a further condition, `prelude` statements run
    first, `result` what is returned of the result ``out``. `value(model, data)`: the value the
    buffer holds (`native`). The wrapper's parameters are passed on to `general` by position.
    `shape` None: a scalar quantity, whose kernel returns it (`_SCALAR_TEMPLATE`; no `result`)."""
    def decorate(general):
        names = vectors.split()
        params = list(inspect.signature(general).parameters)
        kernel_args = args or ", ".join(names)
        plain = (f"type({') is type('.join(names)}) is ARRAY and {'.dtype is '.join(names)}.dtype is F64 "
                 f"and {'.ndim == '.join(names)}.ndim == 1")
        source = (_TEMPLATE if shape is not None else _SCALAR_TEMPLATE).format(
            name=general.__name__, params=", ".join(params), plain=plain, shape=shape,
            n=len(ast.parse(f"({kernel_args},)", mode="eval").body.elts),
            args=", ".join(x for x in (kernel_args, ints) if x), ints=f"({ints},)" if ints else "()",
            when=f"({when}) and " if when else "", result=result,
            prelude=textwrap.indent(textwrap.dedent(prelude).strip() + "\n", " " * 8) if prelude else "")
        filename = f"<one_call {general.__module__}.{general.__name__}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        scope = {}
        exec(compile(source, filename, "exec"), general.__globals__, scope)  # noqa: S102 (our own template)
        fast = scope["make"](one_kernel, general, value, ARRAY, F64, empty, BUSY, first_call, on_own_buffer,
                             *((math.copysign,) if shape is None else ()))
        fast.__defaults__, fast.__kwdefaults__ = general.__defaults__, general.__kwdefaults__
        return functools.update_wrapper(fast, general)

    return decorate


def first_call(model, one_kernel, shape, n_vectors, ints, value):
    """(entry, ty, buf, shape) of `one_kernel` on the model's shared buffer, for `n_vectors` vectors,
    the `ints` and a result of `shape`: made here and kept in ``model._one`` (the buffer's own
    workspace with it), where the wrapper finds it on the next calls. When the one-call path is off
    (`available`) or the kernel does not compile, an entry that runs nothing (`_not_run`)."""
    entries = model._one
    try:
        if not available():
            raise RuntimeError("the one-call path is off")
        ty, buf, _ = entries.get("one") or entries.setdefault("one", native(value(model, model.create_data())))
        entry = _entry(one_kernel, ty, buf, n_vectors, (*ints, np.empty(shape)) if shape is not None else ints)
    except Exception as exc:  # noqa: BLE001 (numba's internals changed: the general path, numba's public entry)
        if available():
            notes.append(f"{getattr(one_kernel, '__name__', one_kernel)}: {type(exc).__name__}: {exc}")
        ty = buf = None
        entry = _not_run if shape is not None else _nan
    found = entries[one_kernel] = (entry, ty, buf, shape)
    return found


def _not_run(*args):
    return NOT_RUN


def _nan(*args):  # (a scalar's kernel that did not run)
    return np.nan


def on_own_buffer(model, one_kernel, n_vectors, args, value):
    """The status of ``one_kernel(ty, buf, *args)`` (`n_vectors` vectors first) on the calling thread's
    own buffer, which points to its `model.workspace` (when another thread holds the shared one)."""
    local = model._local
    try:
        ty, buf, _, entries = local.native
    except AttributeError:
        local.native = *native(value(model, model.workspace)), {}
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


# ---------------------------------------------------------------- the probe


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether the one-call path works with this numba (checked once): a small one-call kernel stores
    a value holding an array and an int, loads it back, takes and gives back the lock word, and reads
    a vector through its compiled entry. False (with a note in `notes`) when any of that fails."""
    try:
        x = np.arange(1.0, 4.0)
        ty, buf, _ = native((x, 7))
        out = np.zeros(1)
        status = _entry(_probe_kernel, ty, buf, 1, (out,))(ty, buf, x[::-1].copy(), out)
        if status != 0 or out[0] != 6.0 + 7.0 + 6.0 or buf[0] != 0:
            raise ValueError(f"the probe kernel returned {status} and {out[0]}, lock word {buf[0]}")
        return True
    except Exception as exc:  # noqa: BLE001 (numba's internals changed: the general path)
        notes.append(f"one-call path: {type(exc).__name__}: {exc}")
        return False


@kernel
def _probe_kernel(ty, buf, x, out):
    if not acquire(buf):
        return BUSY
    a, n = load(buf, ty)
    if acquire(buf):  # (taken: a second take must fail)
        return 2
    out[0] = checked_sum(a, 3) + n + checked_sum(contiguous(x), 3)
    release(buf)
    return 0


# ---------------------------------------------------------------- native values in an int64 buffer


def native(value):
    """(numba type, int64 buffer, value): the buffer holds a lock word (free) and then `value` (a tuple)
    in native form; it points into the value's arrays, which whoever keeps the buffer must keep too."""
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


def _size_of(ty):
    """The bytes of numba's native form of a value of type `ty` (as compiled code lays it out), computed by
    numba's CPU target without compiling anything."""
    from numba.core.registry import cpu_target

    context = cpu_target.target_context
    return context.get_abi_sizeof(context.get_value_type(ty))


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
