"""Numba's internals that dyn reaches, each checked once (at the first kernel) with a fallback.

- dyn's cache (`dynlib._numba.entries`) is numba's `FunctionCache` with a locator of dyn's
  own, set on each dispatcher (``dispatcher._cache``); fallback: numba's own cache pointed at
  dyn's folder (``numba.core.config.CACHE_DIR``), or numba's own cache where numba puts it;
- its loader calls numba's ``Cache._load_overload`` and resolves symbols itself
  (`dynlib._numba.symbols`); fallback: numba's own loading, with its full refresh;
- a loaded kernel's module for linking is parsed only when something links it, its names read from
  its object code (`dynlib._numba.linking`); fallback: numba's ``_unserialize``, which parses it;
- `dynlib._numba.decorators.jit` (nrt=False) passes numba's private ``_nrt`` option;
  fallback: every kernel has the runtime;
- a kernel called from compiled code is compiled by its twin (`dynlib._numba.callees`), cached
  by dyn's cache; fallback: numba compiles it as it compiles a kernel called from Python;
- a kernel without the runtime is lowered without the runtime's loads and zero-fills
  (`dynlib._numba.lean`); fallback: numba's own lowering (a slower first compile).

When one is missing or its signature changed, dyn uses numba's public behaviour for that part
instead: a slower start-up, the same results. `boundary()` says which parts are in use; the
one-call path (`dynlib._numba.one`) and the threads' fingerprint (`dynlib._numba.parallel`)
probe their own reaches where they are used.
"""
from functools import lru_cache

from . import entries, folder, linking


def boundary() -> dict:
    """Which of numba's internals dyn uses (each checked once, at the first kernel):

    - ``cache``: "dyn" (dyn's cache locator), "numba" (numba's own cache, pointed at
      the same folder) or "numba-default" (numba's own cache where numba puts it);
    - ``fast_load``: dyn's loader (False: numba's own loading, with its full refresh);
    - ``linking``: a cached kernel's module for linking parsed only when used (`dynlib._numba.linking`;
      False: parsed as it is loaded, as numba does);
    - ``nrt_option``: numba's ``_nrt`` option (False: every kernel has the runtime);
    - ``callees``: kernels called from compiled code compiled as callees (`dynlib._numba.callees`);
    - ``lean``: kernels without the runtime lowered without its bookkeeping (`dynlib._numba.lean`);
    - ``notes``: why a part fell back.
    """
    b = checked()
    return {"cache": b.cache, "fast_load": b.fast_load, "linking": b.linking, "nrt_option": b.nrt_option,
            "callees": bool(b.callee_cache_class), "lean": b.lean, "notes": list(b.notes)}


class _Boundary:
    def __init__(self):
        self.notes = []
        self.cache_class = self._check(self._cache_class)
        self.cache = "dyn" if self.cache_class else self._numba_cache()
        self.fast_load = self.cache == "dyn" and self._check(self._fast_load)
        if self.cache_class:
            self.cache_class.fast_load = self.fast_load
        self.linking = bool(self.cache_class) and self._check(self._linking)
        if self.linking:
            self.cache_class._impl_class.entry_library = linking.entry_library_class()
        self.nrt_option = self._check(self._nrt_option)
        self.callee_cache_class = self.cache_class and self._check(self._callee_cache_class)
        self.lean = self.nrt_option and self._check(self._lean)

    def _check(self, probe):
        try:
            return probe()
        except Exception as exc:  # a numba that changed: use its public behaviour
            self.notes.append(f"{probe.__name__.strip('_')}: {type(exc).__name__}: {exc}")
            return False

    @staticmethod
    def _cache_class():
        from numba import njit
        from numba.core import caching, serialize

        for owner, name in ((caching, "_CacheLocator"), (caching, "FunctionCache"), (caching, "CacheImpl"),
                            (caching, "CompileResultCacheImpl"), (caching, "NullCache"), (serialize, "dumps")):
            if not hasattr(owner, name):
                raise AttributeError(f"{owner.__name__}.{name} is missing")
        if not isinstance(vars(caching.CacheImpl).get("_locator_classes"), list):
            raise AttributeError("numba.core.caching.CacheImpl._locator_classes is missing")
        cls = entries.make_cache_class(caching, serialize)

        def probe():
            pass

        if not isinstance(getattr(njit(probe), "_cache", None), caching.NullCache):
            raise AttributeError("a dispatcher has no _cache")
        if folder.cache_folder() is not None and not isinstance(cls(probe)._impl.locator, cls.locator_class):
            raise TypeError("numba chose another cache locator (NUMBA_CACHE_LOCATOR_CLASSES?)")
        return cls

    @staticmethod
    def _callee_cache_class():
        from numba.core import caching, serialize

        from . import callees

        callees.check()
        if not callable(getattr(caching.CacheImpl, "get_filename_base", None)):
            raise AttributeError("numba.core.caching.CacheImpl.get_filename_base is missing")
        return entries.make_cache_class(caching, serialize, callees.callee_library_class())

    @staticmethod
    def _linking():
        return linking.check()

    @staticmethod
    def _lean():
        from . import lean

        return lean.check()

    @staticmethod
    def _numba_cache():
        from numba.core import config

        return "numba" if hasattr(config, "CACHE_DIR") else "numba-default"

    @staticmethod
    def _fast_load():
        import inspect

        from numba.core.caching import Cache
        from numba.core.runtime import rtsys

        params = list(inspect.signature(Cache._load_overload).parameters)
        if params != ["self", "sig", "target_context"]:
            raise TypeError(f"Cache._load_overload{tuple(params)}: its signature changed")
        import llvmlite.binding as ll

        for owner, name in ((rtsys, "initialize"), (ll, "address_of_symbol")):
            if not callable(getattr(owner, name, None)):
                raise AttributeError(f"{name} is missing")
        return True

    @staticmethod
    def _nrt_option():
        from numba.core.cpu import CPUTargetOptions

        if not hasattr(CPUTargetOptions, "_nrt"):
            raise AttributeError("numba.core.cpu.CPUTargetOptions has no _nrt option")
        return True


@lru_cache(maxsize=None)
def checked():
    """The parts of numba's internals in use (`_Boundary`), checked at the first call."""
    return _Boundary()

