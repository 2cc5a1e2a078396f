"""What a kernel's compile leaves out: the runtime's bookkeeping where there is no runtime, the C entry.

The runtime's bookkeeping. numba lowers each variable that lives across blocks to a stack slot, and
keeps references counted there: before a slot is written, its old value is loaded (to drop its
reference), and when the variable dies the slot is loaded (same) and then zero-filled (so that no
reference is dropped twice). A kernel compiled without the runtime (`dynlib._numba.decorators.kernel`,
``_nrt=False``) drops no reference: the loads are dead and the zero-fills are never read. They are
not free, though: a variable's slot holds its whole value, and a record of the model's arrays is a
struct of a few hundred fields, so each of those loads and stores is split field by field by LLVM's
SROA before it is found dead. The simulation loop, every stage inlined into it (`dynlib.sim.stages`),
had about 900 zero-fills and 450 dead loads of such records: LLVM's function passes took 5 s of its
first compile on them, for a function of about 1,100 instructions once optimised; without them, 1 s,
the same function. `compiler_class` is numba's compiler with the lowering of `Lower`, which writes a
slot without loading it first and lets a variable die without loading and zero-filling its slot, when
the target has no runtime (otherwise numba's own lowering runs). The code is numba's own otherwise:
same statements, same arithmetic, in the same order; only instructions that nothing uses are not
emitted.

The C entry. numba compiles each kernel that Python calls with two entries: the Python one
(``entry_point``: it unboxes the arguments) and a C one (``cfunc``, for ``ctypes`` and ``cfunc``
callers), which dyn never calls: compiled callers call the function itself, or its twin
(`dynlib._numba.callees`). `OPTIONS` leaves the C entry out (numba's ``no_cfunc_wrapper``): the
loop's was a third of its Python entry's code.

Numba's internals used (checked by `check`; `dynlib._numba.probes` falls back to numba's own
compiler and both entries when one is missing or changed): the lowering's ``storevar``, ``delvar``,
``_alloca_var``, ``getvar``, ``typeof``, ``_singly_assigned_vars``, ``_blk_local_varmap`` and
``_disable_sroa_like_opt``; the ``lowering_class`` of numba's ``NativeLowering`` pass; a pass
manager's ``passes`` list; the ``no_cfunc_wrapper`` option.
"""
import inspect

_MADE = []  # the compiler class, made once (compiler_class)

OPTIONS = {"no_cfunc_wrapper": True}
"""numba's options of a kernel's compile besides its compiler (`compiler_class`): no C entry."""


def check():
    """Raise when one of numba's internals that the lowering uses is missing or changed (see the module
    docstring); True otherwise."""
    from numba.core import compiler, compiler_machinery, lowering, typed_passes
    from numba.core.cpu import CPUTargetOptions

    for name in OPTIONS:
        if not hasattr(CPUTargetOptions, name):
            raise AttributeError(f"numba.core.cpu.CPUTargetOptions has no {name} option")
    for name, params in (("storevar", ["self", "value", "name", "argidx"]), ("delvar", ["self", "name"]),
                         ("_alloca_var", ["self", "name", "fetype"]), ("getvar", ["self", "name"]),
                         ("typeof", ["self", "varname"]), ("_find_singly_assigned_variable", ["self"])):
        found = list(inspect.signature(getattr(lowering.Lower, name)).parameters)
        if found != params:
            raise TypeError(f"numba.core.lowering.Lower.{name}{tuple(found)}: its signature changed")
    if not isinstance(inspect.getattr_static(lowering.Lower, "_disable_sroa_like_opt"), property):
        raise TypeError("numba.core.lowering.Lower._disable_sroa_like_opt is no longer a property")
    if not isinstance(inspect.getattr_static(typed_passes.NativeLowering, "lowering_class"), property):
        raise TypeError("numba.core.typed_passes.NativeLowering.lowering_class is no longer a property")
    if not isinstance(getattr(compiler_machinery.PassManager("probe"), "passes", None), list):
        raise AttributeError("numba.core.compiler_machinery.PassManager.passes is missing")
    if not callable(getattr(compiler.Compiler, "define_pipelines", None)):
        raise AttributeError("numba.core.compiler.Compiler.define_pipelines is missing")
    return True


def compiler_class():
    """numba's compiler, lowering with `Lower` (see the module docstring); made once."""
    if _MADE:
        return _MADE[0]
    from numba.core import compiler, compiler_machinery, lowering, typed_passes

    class Lower(lowering.Lower):
        """numba's lowering, without the runtime's loads and zero-fills of a variable's slot when the target
        has no runtime."""

        def _lean(self):
            return not self.context.enable_nrt and not self._disable_sroa_like_opt

        def storevar(self, value, name, argidx=None):
            if argidx is not None or not self._lean():
                return super().storevar(value, name, argidx)
            self._alloca_var(name, self.typeof(name))
            if name in self._singly_assigned_vars:
                self._blk_local_varmap[name] = value
                return None
            ptr = self.getvar(name)
            if value.type != ptr.type.pointee:
                raise AssertionError(f"storing {value.type} to a slot of {ptr.type.pointee} ('{name}')")
            self.builder.store(value, ptr)
            return None

        def delvar(self, name):
            if not self._lean():
                return super().delvar(name)
            if name not in self._blk_local_varmap:  # (deleted before its block defines it: not block-local)
                self._singly_assigned_vars.discard(name)
            self._alloca_var(name, self.typeof(name))
            return None

    @compiler_machinery.register_pass(mutates_CFG=True, analysis_only=False)
    class LeanLowering(typed_passes.NativeLowering):
        _name = "dyn_lean_lowering"

        @property
        def lowering_class(self):
            return Lower

    class LeanCompiler(compiler.Compiler):
        def define_pipelines(self):
            pipelines = super().define_pipelines()
            for pm in pipelines:
                pm.passes[:] = [(LeanLowering if p is typed_passes.NativeLowering else p, d) for p, d in pm.passes]
                pm.finalize()
            return pipelines

    _MADE.append(LeanCompiler)
    return LeanCompiler
