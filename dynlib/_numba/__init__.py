"""numba's room: the compiled-code boundary, the one folder of dynlib that imports numba or llvmlite.

- `decorators`: dyn's names for "compiled" (`kernel`, `inline_kernel`, `allocating_kernel`), which
  every kernel module above imports from here;
- `cache`: where the compiled kernels are kept (the folder, its pruning, `CacheWarning`);
- `sources`: the cache's key, the hash of every source that holds or feeds compiled code;
- `entries`: how a cached kernel is saved and loaded (numba's FunctionCache with dyn's locator);
- `callees`: a kernel called from compiled code compiled as a callee only (no entry, no machine code);
- `symbols`: cached object code loaded only once every symbol it uses resolves (an ELF reader);
- `linking`: a cached kernel's module for linking parsed only when something links it;
- `probes`: numba's internals that the cache reaches, each checked once, with its fallback;
- `events`: compile events for the command line (the first compile, a progress line);
- `one`: the one-call path (a model unboxed once, not on every call);
- `parallel`: batches on threads.
"""
