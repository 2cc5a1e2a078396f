"""Work on every core: how many threads, and the rows of a batch in blocks.

`threads()` is the number of threads dyn uses: the ``DYN_THREADS`` environment
variable when set (``1`` runs everything in the calling thread), else the
cores this process may use. Batched kernels (`run`) and the CSV writer use it.

The kernels run without the GIL (``nogil``), so the public wrappers split a
large batch into one block of rows per thread; each thread works in its own
`model.workspace`. The rows are independent, so the result is bit-identical
whatever the number of threads. A batch is split only when every block gets at
least `MIN_BLOCK` rows: below that, handing work to another thread costs more
than it saves.

A block runs in the calling thread through the kernel's compiled entry for the
model (`entry`), not through numba's dispatcher: the dispatcher works out the
numba type of every argument on every call, and for the two NamedTuples
(`model.arrays`, the workspace: about 40 arrays) it does so in Python, about
6 us, several times the work of one RNEA on a 7-DoF arm. Their types are fixed
for a model, so the entry (numba's compiled wrapper for these argument types)
is looked up once per model, kernel and types of the other arguments (numba's
own fingerprint of them, one call in C) and kept with the model. The entry still
converts each of those ~44 arrays from Python on every call (about 1-1.5 us);
the one-call paths of `rnea`, `aba` and `frame_jacobian` avoid that too, with
the model and the workspace converted once per model and thread
(`dynlib._numba.one`).
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import InputError
from .decorators import compiled_entry

MIN_BLOCK = 1024
_pool = None
_pool_size = 0
_lock = threading.Lock()


def threads() -> int:
    """How many threads a batch may use (``DYN_THREADS``, else the usable cores)."""
    env = os.environ.get("DYN_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise InputError(f"DYN_THREADS must be a positive whole number, got {env!r}")
        return n
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def run(model, n_rows, kernel, *args, lead=()):
    """``kernel(*lead, model.arrays, data, *args)`` over the `n_rows` rows of a batch.

    An argument given as a 1-tuple ``(X,)`` is an array to cut along its first
    dimension, the rows (an X of one row applies to every row and is passed
    whole to every block); other arguments are passed as they are. (A tuple,
    not a wrapper class: this is on the path of every single call, where a
    wrapper's construction costs more than the rest of this function.)
    Returns ``(first row, kernel's result)`` of every block, in row order.
    """
    m = model.arrays
    k = 1 if n_rows < 2 * MIN_BLOCK else min(threads(), n_rows // MIN_BLOCK)
    if k == 1:  # (nothing else to decide)
        rest = [a[0] if type(a) is tuple else a for a in args]
        return [(0, entry(model, kernel, lead, rest)(*lead, m, model.workspace, *rest))]

    def block(start, stop):
        cut = [(a[0][start:stop] if a[0].shape[0] == n_rows else a[0]) if type(a) is tuple else a for a in args]
        return kernel(*lead, m, model.workspace, *cut)

    bounds = np.linspace(0, n_rows, k + 1).astype(int)
    pool = _executor(k - 1)
    rest = [pool.submit(block, bounds[i], bounds[i + 1]) for i in range(1, k)]
    first = block(bounds[0], bounds[1])  # the calling thread takes a block too
    return [(0, first)] + [(int(bounds[i]), f.result()) for i, f in zip(range(1, k), rest)]


def entry(model, kernel, lead, rest):
    """The callable that runs ``kernel(*lead, model.arrays, workspace, *rest)``: numba's
    compiled entry for these argument types when the kernel has one, else the kernel."""
    try:
        key = (kernel, _fingerprint((*lead, *rest)))
    except (ValueError, TypeError, NotImplementedError):  # an argument numba fingerprints only in Python
        return kernel
    entries = model.entries
    found = entries.get(key)
    if found is None:
        found = entries[key] = compiled_entry(kernel, (*lead, model.arrays, model.workspace, *rest))
    return found


def _choose_fingerprint(args):
    """A key of the arguments' types: numba's fingerprint of them (imported here: the CSV writer
    imports this module, and it needs no numba), or, with a numba whose fingerprint of a long tuple
    loses its first items (numba 0.60: past 40 bytes, two arrays of different layouts at the
    front gave one fingerprint, and a non-contiguous q ran the kernel compiled for a contiguous
    one), the tuple of their numba types, slower but exact."""
    global _fingerprint
    from numba import typeof

    if _fingerprint_is_exact():
        from numba._dispatcher import compute_fingerprint

        _fingerprint = compute_fingerprint
    else:
        def _fingerprint(args):
            return tuple(typeof(x) for x in args)
    return _fingerprint(args)


_fingerprint = _choose_fingerprint  # (replaced by the key chosen, at the first call)


def _fingerprint_is_exact():
    """The probe of numba's private ``compute_fingerprint``: there, and telling apart two arrays of
    different layouts at the front of a long tuple (False: the tuple of numba types, public)."""
    try:
        from numba._dispatcher import compute_fingerprint

        c, a, rest = np.zeros((1, 2)), np.zeros((1, 4))[:, ::2], (np.zeros(1),) * 8
        return compute_fingerprint((c, *rest)) != compute_fingerprint((a, *rest))
    except Exception:  # noqa: BLE001 (a numba without it: the public, slower key)
        return False


def _forget_pool():
    """In a forked child the pool's threads do not exist: start a new pool there."""
    global _pool, _pool_size, _lock
    _pool, _pool_size, _lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _executor(size):
    """One process-wide pool of worker threads (started as needed), replaced by a
    larger one when more are asked for; a replaced pool finishes what it has."""
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < size:
            _pool, _pool_size = ThreadPoolExecutor(size, thread_name_prefix="dyn-rows"), size
        return _pool
