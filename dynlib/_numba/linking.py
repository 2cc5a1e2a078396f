"""A cached kernel's module for linking, parsed only when something links it.

numba caches a kernel as its machine code (an object file) and, beside it, the LLVM bitcode of its
*shared module*: the copy of its code that another compiled function links in when it calls the
kernel (``CodeLibrary._get_module_for_linking``). Loading an entry parses that bitcode at once
(``CPUCodeLibrary._unserialize``), only to list the names the code defines for numba's symbol
table (``JitEngine._load_defined_symbols``): for the simulation loop, 1.2 MB of bitcode and about
60 ms of every short `dyn simulate`, for a module nothing ever links in (a compiled caller links a
kernel's twin, `dynlib._numba.callees`, never its Python entry).

`entry_library_class` loads an entry as numba does (its object code handed to numba's object cache,
an empty final module added to the JIT), but takes the names the code defines from the object file
itself (`dynlib._numba.symbols.defined_symbols`: every named symbol of its symbol table, which holds
every function and global of the shared module, its ``.const.*`` strings among the local ones) and
keeps the bitcode unparsed: the shared module is parsed at its first use (a caller linking the
kernel, numba serialising the library again), and numba's own reading of its names is done too when
the code is asked for a name the object file did not list. An object file dyn cannot read (another
platform's format) is loaded by numba's own ``_unserialize``.

Numba's internals used (checked by `check`; `dynlib._numba.probes` keeps numba's loading when one
is missing): ``CPUCodeLibrary``'s ``_unserialize``, ``enable_object_caching``,
``_set_compiled_object``, ``_finalize_final_module``, ``_get_module_for_linking``,
``get_pointer_to_function`` and its ``_shared_module`` attribute (a plain attribute, the one that
``_unserialize`` sets and ``_get_module_for_linking`` reads); the codegen's ``_library_class``; the JIT engine's
``_defined_symbols`` set and ``_load_defined_symbols`` (checked where an entry is loaded: numba's
``_unserialize`` when they are not there).
"""
import inspect

from . import symbols

_LIBRARY = []  # the entry library class, made once (entry_library_class)


def check():
    """Raise when one of numba's internals that `entry_library_class` uses is missing or changed (see the
    module docstring); True otherwise."""
    from numba.core import codegen

    base = codegen.JITCPUCodegen._library_class
    for owner, names in ((base, ("_unserialize", "enable_object_caching", "_set_compiled_object",
                                 "_finalize_final_module", "_get_module_for_linking", "get_pointer_to_function")),
                         (codegen.JITCPUCodegen, ("_library_class",)),
                         (codegen.JitEngine, ("_load_defined_symbols", "is_symbol_defined"))):
        for name in names:
            if not hasattr(owner, name):
                raise AttributeError(f"{owner.__name__}.{name} is missing")
    if any("_shared_module" in vars(cls) for cls in base.__mro__):
        raise TypeError(f"{base.__name__}._shared_module is no longer a plain attribute")
    for method, names in ((base._unserialize, ("_shared_module", "_set_compiled_object", "_load_defined_symbols")),
                          (base._get_module_for_linking, ("_shared_module",))):
        missing = set(names) - set(method.__code__.co_names)
        if missing:
            raise TypeError(f"{method.__qualname__} no longer uses {', '.join(sorted(missing))}")
    params = list(inspect.signature(base._unserialize).parameters)
    if params != ["codegen", "state"]:
        raise TypeError(f"{base.__name__}._unserialize{tuple(params)}: its signature changed")
    return True


def entry_library_class():
    """numba's JIT code library, loading a cached entry without parsing its shared module (see the module
    docstring)."""
    if _LIBRARY:
        return _LIBRARY[0]
    from numba.core import codegen

    class EntryLibrary(codegen.JITCPUCodegen._library_class):
        """A cached entry whose shared module stays bitcode until it is used."""

        _dyn_bitcode = None  # the shared module's bitcode, not parsed yet
        _dyn_module = None

        @property
        def _shared_module(self):
            if self._dyn_bitcode is not None:
                import llvmlite.binding as ll

                self._dyn_module, self._dyn_bitcode = ll.parse_bitcode(self._dyn_bitcode), None
            return self._dyn_module

        @_shared_module.setter
        def _shared_module(self, module):
            self._dyn_module, self._dyn_bitcode = module, None

        @classmethod
        def _unserialize(cls, codegen_, state):
            name, kind, data = state
            engine = codegen_._engine
            defined = symbols.defined_symbols(data[0]) if kind == "object" else None
            if defined is None or not isinstance(getattr(engine, "_defined_symbols", None), set):
                return super()._unserialize(codegen_, state)  # numba's: the shared module parsed now
            self = cls(codegen_, name)  # (numba: codegen.create_library, its _library_class being cls here)
            self.enable_object_caching()
            self._set_compiled_object(data[0])
            self._dyn_bitcode = data[1]
            self._finalize_final_module()
            engine._defined_symbols |= defined
            return self

        def get_pointer_to_function(self, name):
            engine = self._codegen._engine
            if self._dyn_bitcode is not None and not engine.is_symbol_defined(name):
                engine._load_defined_symbols(self._shared_module)  # numba's reading of the names
            return super().get_pointer_to_function(name)

    _LIBRARY.append(EntryLibrary)
    return EntryLibrary
