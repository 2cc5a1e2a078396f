"""dyn's names for "compiled": the decorators of every dynlib kernel, each defined here once.

- `kernel`: an allocation-free kernel or helper, ``jit(nrt=False, error_model="numpy",
  nogil=True)``. ``_nrt=False`` (numba's switch for its runtime): it never allocates, so it
  needs none of numba's reference counting, which otherwise increfs and decrefs each of the
  ~45 arrays of ModelArrays, Data and the arguments on every kernel call, at entry and exit
  (numba cannot prune the pairs across a kernel's branches): about 1.3 us per call, twice the
  arithmetic of a 6-DoF RNEA. The caller owns the arrays for the whole call; compiled callers
  with reference counting (the simulation loop) call these kernels as usual.
  ``error_model="numpy"``: a division by zero (a singular mass matrix in ABA) gives Inf/NaN,
  which the wrappers and the simulation's divergence check report as a NumericalError,
  instead of a ZeroDivisionError escaping compiled code. ``nogil``: batches run on threads
  (`dynlib._numba.parallel`).
- `inline_kernel`: a `kernel` that LLVM always inlines into its callers (numba's ``forceinline``:
  LLVM's ``alwaysinline``): the stages of the simulation step (`dynlib.sim.stages`), so that no
  compiled call passes the arrays of their tuples one by one, and the few helpers too large for
  LLVM to inline by its own measure. numba types and lowers it once per signature, as any kernel;
  its twin for compiled callers (`dynlib._numba.callees`) leaves the optimisation of its code to
  them. (numba's own inlining, ``inline="always"``, copied and typed its IR again at each call
  site, and with the stages nested three deep, the loop's first compile took a fifth longer.)
  Where the twins are not available (`dynlib._numba.probes`), numba's inlining stands in.
- `allocating_kernel`: a kernel that allocates (numba's runtime on, numba's error model), the GIL
  released: ``jit(nogil=True)``.

``forceinline`` is set on all three, to False on the two others: numba passes a caller's value of
the option on to the kernels it compiles while compiling that caller, unless they set their own.

`jit` is the one maker under the three: ``numba.njit`` cached in dyn's cache folder
(`dynlib._numba.folder`, `dynlib._numba.entries`) and loaded without numba's compiler start-up
(`dynlib._numba.symbols`), each of numba's internals it reaches checked once (`dynlib._numba.probes`).
A `kernel` or `allocating_kernel` called from compiled code is compiled there by its twin
(`dynlib._numba.callees`): no Python entry and no machine code of its own, only its caller's. A
`kernel` is lowered without the loads and zero-fills that only numba's runtime needs, and without the C
entry that nothing calls (`dynlib._numba.lean`): the same code, a faster first compile.
"""
from . import callees, folder, lean, probes


def jit(fn=None, *, nrt=True, **options):
    """``numba.njit(cache=True, **options)``, as ``@jit``, ``@jit(...)`` or ``jit()(f)``,
    cached in dyn's cache folder and loaded without numba's compiler start-up
    (`dynlib._numba.folder`).

    nrt=False compiles without numba's runtime (``_nrt=False``: the kernel must not
    allocate), which spares the reference counting of every array argument; when
    numba no longer has that option, the kernel is compiled with the runtime.
    """

    def decorate(f):
        import inspect

        from numba import njit

        b = probes.checked()
        opts = dict(options)
        if not nrt and b.nrt_option:
            opts["_nrt"] = False
            if b.lean:
                opts.update(lean.OPTIONS, pipeline_class=lean.compiler_class())
        ours = b.cache_class and folder.package_dir(inspect.getfile(f)) is not None
        if opts.pop("inline", None) == "always" and not (ours and b.callee_cache_class):  # (see the docstring)
            opts["inline"] = "always"
        if ours:
            dispatcher = njit(**opts)(f)
            try:
                dispatcher._cache = b.cache_class(f)
                if b.callee_cache_class and opts.get("inline") != "always":  # (inlined: never compiled alone)
                    callees.attach(dispatcher, njit, f, opts, b.callee_cache_class)
                return dispatcher
            except Exception:  # no folder at all (no home directory), or a function numba cannot locate
                if folder.cache_folder() is None:
                    folder.warn_once("unwritable", "no folder for the kernel cache (no home directory and no "
                                                  "DYN_CACHE_DIR): the kernels are compiled in memory, in every run")
                    return dispatcher
        return _numba_cached(njit, f, opts)

    return decorate if fn is None else decorate(fn)


def _numba_cached(njit, f, opts):
    """numba's own cache (the fallback), pointed at dyn's cache folder while the dispatcher is made."""
    place = folder.cache_folder() if probes.checked().cache == "numba" else None
    if place is None:
        return njit(cache=True, **opts)(f)
    from numba.core import config

    saved = config.CACHE_DIR
    config.CACHE_DIR = str(place)
    try:
        return njit(cache=True, **opts)(f)
    except RuntimeError:  # numba found no writable place at all
        folder.warn_once("unwritable", f"cannot write the kernel cache in {place}: the kernels are compiled in "
                                      "memory, in every run (set DYN_CACHE_DIR to a writable folder)")
        return njit(**opts)(f)
    finally:
        config.CACHE_DIR = saved


kernel = jit(nrt=False, error_model="numpy", nogil=True, forceinline=False)
"""The decorator of an allocation-free kernel or helper (see the module docstring)."""

inline_kernel = jit(nrt=False, error_model="numpy", nogil=True, forceinline=True, inline="always")
"""A `kernel` that LLVM always inlines into its callers (see the module docstring)."""

allocating_kernel = jit(nogil=True, forceinline=False)
"""A kernel that allocates: numba's runtime and error model (see the module docstring)."""


def compiled_entry(kernel, args):
    """numba's wrapper of the overload of `kernel` for the types of `args` (compiled or
    loaded from the cache here when needed), or the kernel itself when it is not a plain
    numba dispatcher or the overload is not found (both work the same, one more slowly).

    Calling the wrapper skips the dispatcher's typing of the arguments at every call: the
    batches' chunks (`dynlib._numba.parallel`) and the simulation loop's chunks, whose nested
    records cost the dispatcher about 55 us a call (`dynlib.sim.simulate`)."""
    try:
        sig = tuple(kernel.typeof_pyval(a) for a in args)
        found = kernel.overloads.get(sig)
        if found is None:
            kernel.compile(sig)
            found = kernel.overloads.get(sig)
        return kernel if found is None else found.entry_point
    except Exception:  # noqa: BLE001 (not a numba dispatcher, or an argument numba cannot type: it raises when called)
        return kernel
