"""A kernel called from compiled code is compiled as a callee: no Python entry, no machine code of its own.

numba compiles each kernel that a compiled caller calls (the simulation loop calls about 90,
nested up to five deep) as a complete function of its own, as if Python were to call it: an
entry that converts every argument from Python (for a model's and a workspace's ~45 arrays, a
wrapper larger than most kernels), a C entry, its callees' code linked in and optimised again
(LLVM's module passes), and machine code. Its caller then links that code in, optimises the
whole again and makes machine code of it again: a first `dyn simulate` spent about 10 of its
35 s of CPU on entries and machine code that nothing ever ran.

So each kernel has a twin for its compiled callers (`attach`): the same function compiled without
the two entries (numba's ``no_cpython_wrapper`` and ``no_cfunc_wrapper`` options) into a code
library (`callee_library_class`) that is only ever linked into a caller: it is optimised as before
(numba's per-function and module passes, its own callees linked in), so the code its callers link
in, and the machine code they make of it, are the same as before; it makes no machine code of its
own. (Leaving the module passes to the caller alone saved 3 s more, but the loop's inlining then
changed: steps without contacts 5-10 % slower, with contacts 5-10 % faster.) The twin of an
`inline_kernel` (numba's ``forceinline``: LLVM inlines it into every caller) is the exception: its callers
optimise its code with theirs, so its own module is not optimised (`inlined_callee_library_class`), which
spared the stages of the simulation step, nested three deep, optimising the code under them at each level
again; its cache entries are named ``callee.inlined.<module>.<function>-...``.

A compiled caller types a call of a kernel by asking the kernel's dispatcher for a call template
and the compiled overload (``get_call_template``, ``get_overload``): `attach` points those two of
the kernel's dispatcher to its twin's. Python calls of the kernel are untouched: they compile
(and cache) the kernel with its entries as before. The twins are cached too, under their own
names (``callee.<module>.<function>-...`` in the cache folder), as LLVM bitcode: loading one makes
no machine code either.

Numba's internals used (checked once by `check`; `dynlib._numba.probes` falls back to numba's own
compile of every kernel, with its entries, when one is missing): ``CPUCodeLibrary``'s
``_optimize_final_module``, ``_finalize_final_module``, ``_finalize_dynamic_globals``,
``serialize_using_bitcode``, ``_unserialize`` and ``codegen``; the codegen's ``_library_class``;
``Compiler(typingctx, targetctx, library, ...)``; a dispatcher's ``get_call_template`` and
``get_overload``.
"""
import inspect

_LIBRARY = []  # the callee library class, made once (callee_library_class)


def check():
    """Raise when one of numba's internals that the twins use is missing or changed (see the module
    docstring); True otherwise."""
    from numba.core import codegen, compiler, dispatcher
    from numba.core.cpu import CPUTargetOptions

    for owner, names in ((CPUTargetOptions, ("no_cpython_wrapper", "no_cfunc_wrapper")),
                         (codegen.JITCodeLibrary, ("_optimize_final_module", "_finalize_final_module",
                                                   "_finalize_dynamic_globals", "serialize_using_bitcode",
                                                   "serialize_using_object_code", "_unserialize", "codegen",
                                                   "enable_object_caching")),
                         (codegen.JITCPUCodegen, ("_library_class", "set_env", "create_library")),
                         (dispatcher.Dispatcher, ("get_call_template", "get_overload"))):
        for name in names:
            if not hasattr(owner, name):
                raise AttributeError(f"{owner.__name__}.{name} is missing")
    params = list(inspect.signature(compiler.CompilerBase.__init__).parameters)
    if params[:4] != ["self", "typingctx", "targetctx", "library"]:
        raise TypeError(f"numba.core.compiler.CompilerBase{tuple(params)}: its signature changed")
    if not isinstance(inspect.getattr_static(codegen.CodeLibrary, "codegen"), property):
        raise TypeError("CodeLibrary.codegen is no longer a property")
    return True


def callee_library_class():
    """numba's JIT code library, for code that is only linked into callers (see the module docstring)."""
    if _LIBRARY:
        return _LIBRARY[0]
    from numba.core import codegen

    class CalleeLibrary(codegen.JITCPUCodegen._library_class):
        """Linked into its callers only: no machine code, no Python entry of its own."""

        def _finalize_final_module(self):
            self._finalize_dynamic_globals()  # (numba's cache refuses code with dynamic globals)
            self._finalized = True

        def serialize_using_object_code(self):
            return self.serialize_using_bitcode()  # there is no object code: the caller makes it

        @classmethod
        def _unserialize(cls, codegen_, state):
            name, kind, data = state
            if kind != "bitcode":
                raise ValueError(f"a callee library is cached as bitcode, not {kind!r}")
            import llvmlite.binding as ll

            self = cls(codegen_, name)
            self._final_module = ll.parse_bitcode(data)
            self._finalize_final_module()
            return self

        @property
        def codegen(self):
            return _NoEnvironment(self._codegen)

    class InlinedCalleeLibrary(CalleeLibrary):
        """The library of a kernel that LLVM inlines into its callers (numba's ``forceinline``): its callers
        optimise its code with theirs, so its module (its code and its callees') is not optimised alone."""

        def _optimize_final_module(self):
            pass

    _LIBRARY.append(CalleeLibrary)
    _LIBRARY.append(InlinedCalleeLibrary)
    return CalleeLibrary


def inlined_callee_library_class():
    """`callee_library_class` for a kernel compiled ``forceinline`` (see its InlinedCalleeLibrary)."""
    callee_library_class()
    return _LIBRARY[1]


class _NoEnvironment:
    """The codegen as a callee library's compile sees it: its environment (numba's ``set_env``, which
    writes the address of the function's Environment into the machine code) is not set, as there is no
    machine code of the library's own; a caller's copy of that code gets it from the caller's load."""

    def __init__(self, codegen):
        self._codegen = codegen

    def set_env(self, env_name, env):
        pass

    def __getattr__(self, name):
        return getattr(self._codegen, name)


def pipeline_class(base=None, inlined=False):
    """numba's compiler (or `base`, a subclass of it), compiling into a callee library (`callee_library_class`,
    or `inlined_callee_library_class` when `inlined`)."""
    from numba.core import compiler

    library_class = inlined_callee_library_class() if inlined else callee_library_class()

    class CalleePipeline(base or compiler.Compiler):
        def __init__(self, typingctx, targetctx, library, *args, **kw):
            if library is None:
                library = library_class(targetctx.codegen(), "callee")
                library.enable_object_caching()
            super().__init__(typingctx, targetctx, library, *args, **kw)

    return CalleePipeline


def attach(dispatcher, njit, f, options, cache_class):
    """Compile the calls of `dispatcher` (the kernel `f`, ``njit(**options)``) from compiled code with its
    twin (see the module docstring), cached by `cache_class` (None: not cached). The twin is made when a
    compiled caller first asks for it (`dispatcher.callee_twin()`): a run that loads its compiled code from
    the cache types no call and makes none (164 kernels: about 40 ms of every start-up)."""
    options = dict(options)
    base = options.pop("pipeline_class", None)
    options.pop("no_cfunc_wrapper", None)
    inlined = bool(options.get("forceinline"))
    made = []

    def twin():
        if not made:  # (numba's compiler lock is held: a compiled caller is being typed)
            made.append(njit(no_cpython_wrapper=True, no_cfunc_wrapper=True,
                             pipeline_class=pipeline_class(base, inlined), **options)(f))
            if cache_class is not None:
                try:
                    made[0]._cache = (_inlined_cache_class(cache_class) if inlined else cache_class)(f)
                except Exception:  # noqa: BLE001 (as the kernel's own cache: it then compiles in memory)
                    pass
        return made[0]

    dispatcher.get_call_template = _plain_types(lambda args, kws: twin().get_call_template(args, kws))
    dispatcher.get_overload = lambda sig: twin().get_overload(sig)
    dispatcher.callee_twin = twin


def _plain_types(get_call_template):
    """A twin's `get_call_template` with the literal types of constant arguments made plain (``Literal[int](3)`` to
    ``int64``): a compiled caller types a constant argument as its value, and numba compiled the twin once per
    constant (`dynlib.core.spatial.add_to_mat3` four times, for row and column offsets 0 and 3); Python calls
    never pass literal types. No dyn kernel needs a constant's value to type."""
    from numba.core import types

    def plain(args, kws):
        return get_call_template(tuple(types.unliteral(a) for a in args),
                                 {k: types.unliteral(v) for k, v in kws.items()})

    return plain


_INLINED_CACHE = {}  # the cache class of inlined twins, per cache class of twins (_inlined_cache_class)


def _inlined_cache_class(cache_class):
    """`cache_class` (of the twins) with its entries named ``callee.inlined.<module>.<function>-...``: the twin of a
    kernel compiled ``forceinline`` (`inlined_callee_library_class`) is other code than the twin of a plain
    kernel of the same function (`dynlib._numba.one` compiles a kernel's function as both)."""
    if cache_class not in _INLINED_CACHE:
        impl = cache_class._impl_class

        class InlinedImpl(impl):
            def get_filename_base(self, fullname, abiflags):
                return super().get_filename_base("inlined." + fullname, abiflags)

        _INLINED_CACHE[cache_class] = type("InlinedCache", (cache_class,), {"_impl_class": InlinedImpl})
    return _INLINED_CACHE[cache_class]
