"""How dyn's cached kernels are saved and loaded: numba's `FunctionCache` with dyn's locator.

`make_cache_class` builds, on numba's private cache classes (checked by `dynlib._numba.probes`):

- a locator (`_locator_class`) that puts every kernel in dyn's cache folder
  (`dynlib._numba.folder`), keyed by the hash of the kernels' sources (`dynlib._numba.sources`);
- an implementation (`_impl_class`) that writes every entry with a checksum and its format, and
  loads only what dyn wrote, once the symbols its code uses resolve (`dynlib._numba.symbols`),
  leaving the bitcode of its module for linking unparsed until it is used (`dynlib._numba.linking`);
- the cache (`_cache_class`) that turns failures into a compile in memory: a damaged cache file
  (truncated, corrupt) is discarded and its kernel compiled again, with one `CacheWarning`; a
  cache that cannot be written is left alone for the rest of the run, with one `CacheWarning`.
  Results are the same either way.
"""
import contextlib
import os
from pathlib import Path

from . import folder, sources, symbols

_FORMAT = "dyn-kernel-1"  # the layout of a cached entry (see Impl.reduce in _impl_class)
_SAVE_LOCK = "save.lock"  # in each cache subfolder: flock'ed while an entry is saved (see DynCache.save_overload)

stats = {"fast_loads": 0, "numba_loads": 0, "refreshes": 0, "discarded": 0, "saved": 0, "unsaved": 0}
"""Counts for this process: kernels loaded by dyn's loader and by numba's own, full
context refreshes done for a load, damaged entries discarded, compiled kernels saved
and not saved."""


before_compile = []
"""Callbacks for the first compile of this process (`dynlib._numba.events.on_first_compile`)."""


def compiling():
    """A kernel is about to be compiled (it is not in the cache): run the callbacks of `before_compile`."""
    while before_compile:
        before_compile.pop(0)()


class _Damaged(Exception):
    """A cache entry that cannot be what dyn wrote."""


def make_cache_class(caching, serialize, callee_library=None):
    """numba's FunctionCache (`caching`: numba.core.caching) with dyn's locator, a checksum on every entry
    (`serialize`: numba.core.serialize), dyn's loader, and failures to read or write turned into a compile in
    memory (see the module docstring). With `callee_library` (`dynlib._numba.callees.callee_library_class`),
    the cache of the kernels' twins for compiled callers: entries named ``callee.<module>.<function>-...``,
    loaded into that library (LLVM bitcode, no machine code)."""
    locator = _locator_class(caching)
    impl = _impl_class(caching, serialize, locator)
    if callee_library is not None:
        impl = _callee_impl_class(impl, callee_library)
    return _cache_class(caching, impl, locator)


def _locator_class(caching):
    class Locator(caching._CacheLocator):
        def __init__(self, py_func, py_file, place, package_dir):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._folder = place
            self._path = str(place / package_dir)

        @classmethod
        def from_function(cls, py_func, py_file):
            place, package_dir = folder.cache_folder(), folder.package_dir(py_file)
            if place is None or package_dir is None:
                return None
            return cls(py_func, py_file, place, package_dir)

        def ensure_cache_path(self):
            fresh = not self._folder.is_dir()
            super().ensure_cache_path()
            if fresh:
                folder.new_folder(self._folder)

        def get_cache_path(self):
            return self._path

        def get_source_stamp(self):
            return sources.sources_hash()  # the folder is already keyed by the kernels' sources

        def get_disambiguator(self):
            return str(self._lineno)

    return Locator


def _impl_class(caching, serialize, locator):
    import hashlib

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [locator]

        def reduce(self, cres):
            blob = serialize.dumps(super().reduce(cres))
            return _FORMAT, hashlib.blake2b(blob, digest_size=16).digest(), blob

        def rebuild(self, target_context, data):
            if not (isinstance(data, tuple) and len(data) == 3 and data[0] == _FORMAT):
                raise _Damaged("not an entry dyn wrote")
            _, digest, blob = data
            if hashlib.blake2b(blob, digest_size=16).digest() != digest:
                raise _Damaged("checksum mismatch")
            import pickle

            return self.rebuild_payload(target_context, pickle.loads(blob))

        def rebuild_payload(self, target_context, payload):
            if not symbols.symbols_ready(payload, target_context, stats):
                return None  # numba compiles it
            if self.entry_library is None:
                return super().rebuild(target_context, payload)
            codegen = target_context.codegen()
            codegen._library_class = self.entry_library  # (numba's compiler lock is held)
            try:
                return super().rebuild(target_context, payload)
            finally:
                del codegen._library_class

    Impl.entry_library = None  # `dynlib._numba.linking`'s library, set by dynlib._numba.probes when it can be used
    return Impl


def _callee_impl_class(impl, callee_library):
    class CalleeImpl(impl):
        def get_filename_base(self, fullname, abiflags):
            return super().get_filename_base("callee." + fullname, abiflags)

        def rebuild_payload(self, target_context, payload):
            """numba's rebuild, with the codegen making callee libraries (numba's compiler lock is held)."""
            codegen = target_context.codegen()
            codegen._library_class = callee_library
            try:
                return super(impl, self).rebuild(target_context, payload)  # numba's, past dyn's symbol check
            finally:
                del codegen._library_class

    return CalleeImpl


def _cache_class(caching, impl, locator):
    class DynCache(caching.FunctionCache):
        _impl_class = impl
        locator_class = locator
        fast_load = False  # dyn's loader in use (set by dynlib._numba.probes, which checks what it reaches)

        def __init__(self, py_func):
            super().__init__(py_func)
            self._dyn_name = f"{py_func.__module__}.{py_func.__qualname__}"
            self._dyn_folder = self._impl.locator._folder

        def load_overload(self, sig, target_context):
            return _load(self, super().load_overload, sig, target_context)

        def _discard(self, exc):
            stats["discarded"] += 1
            compiling()
            with contextlib.suppress(OSError):
                self.flush()  # an empty index: the damaged entry is forgotten, its file overwritten later
            folder.warn_once("damaged", f"discarded a damaged kernel cache entry of {self._dyn_name} in "
                                       f"{self.cache_path} ({type(exc).__name__}: {exc}); compiling it again")

        def save_overload(self, sig, data):
            """numba's save under a lock of the folder: numba reads the index, names a data file after the
            count of entries and writes both back, so two processes saving two signatures of one kernel at
            once could both take the name ``.0.nbc``, and the index kept could point one signature at the
            other's machine code (`_load` checks the signature of what it loads as well)."""
            if folder.unwritable:
                return
            try:
                self._impl.locator.ensure_cache_path()  # (a new folder is made, tagged and pruned there)
                with _locked(Path(self._cache_path) / _SAVE_LOCK):
                    super().save_overload(sig, data)
                stats["saved"] += 1
            except OSError as exc:  # read-only, full, gone
                stats["unsaved"] += 1
                folder.unwritable.append(exc)
                folder.warn_once("unwritable", f"cannot write the kernel cache in {self._dyn_folder} "
                                              f"({exc.strerror or exc}): the kernels are compiled in memory, and "
                                              "later runs compile them again (set DYN_CACHE_DIR to a writable folder)")
            except Exception as exc:  # noqa: BLE001 (a damaged index that could not be replaced when it was read)
                stats["unsaved"] += 1
                self._discard(exc)

    return DynCache


def _load(dyn_cache, numba_load, sig, target_context):
    """The compile result of `dyn_cache` (a DynCache) for `sig`, loaded by dyn's loader (or by `numba_load`,
    numba's own, when the probe found dyn's cannot be used), or None: then numba compiles it."""
    fast = dyn_cache.fast_load
    try:
        if fast:
            guard = getattr(dyn_cache, "_guard_against_spurious_io_errors", contextlib.nullcontext)
            with guard():
                cres = dyn_cache._load_overload(sig, target_context)
        else:
            cres = numba_load(sig, target_context)
    except OSError:  # unreadable: compile
        compiling()
        return None
    except Exception as exc:  # noqa: BLE001 (truncated or corrupt: whatever unpickling raises)
        dyn_cache._discard(exc)
        return None
    if cres is not None and not _same_args(cres, sig):  # (see save_overload)
        dyn_cache._discard(_Damaged(f"the entry for {sig} holds the code of {cres.signature.args}"))
        return None
    if cres is not None:
        stats["fast_loads" if fast else "numba_loads"] += 1
        folder.touch(dyn_cache._dyn_folder)
    else:
        compiling()
    return cres


def _same_args(cres, sig) -> bool:
    """Whether a loaded compile result is the code of the argument types `sig` (a tuple of
    numba types, or a signature) that it was loaded for."""
    from numba.core import sigutils

    try:
        args = sigutils.normalize_signature(sig)[0]
    except Exception:  # noqa: BLE001 (a form numba's loader took but this cannot read: numba's word stands)
        return True
    return tuple(cres.signature.args) == tuple(args)


@contextlib.contextmanager
def _locked(path):
    """An exclusive flock on `path` (made if needed) for the block; no lock where the system or the
    file system has none (the signature check on loading still holds)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
