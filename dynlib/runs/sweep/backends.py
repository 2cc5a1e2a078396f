"""Where the variants run: local spawned processes (`Local`) or a Dask cluster (`Dask`).

Both take the tasks, the scenario to warm the workers with, and a callback
`finished(task, outcome)` called in this (the client) process as each variant
ends; both run `dynlib.runs.sweep.worker.run_variant` on the pickled, validated scenario.
"""
from __future__ import annotations

import contextlib
import os

from ...errors import InputError
from .worker import init_worker, loop_ready, run_variant, warm


def _lost(message) -> dict:
    return {"status": "failed", "names": None, "data": None, "metrics": {}, "message": message,
            "seconds": float("nan"), "worker": ""}


class Local:
    """A pool of spawned processes (numba and fork do not mix), each warmed once, ≤ 2 tasks per worker queued."""

    def __init__(self, workers=None):
        n = _cores() if workers is None else int(workers)
        if n < 1:
            raise InputError(f"workers must be at least 1, got {workers!r}")
        self.workers = n

    def run(self, tasks, scenario, finished):
        """Run `tasks` in a pool of `workers`. A worker that dies (the out-of-memory killer's SIGKILL, a
        crash) breaks the pool and every task in it; those tasks are then run one by one, each alone in a
        pool of one, so that a worker that dies again is that task's: it is recorded as failed, saying how
        the worker ended, and the sweep goes on (it blamed every task queued with it, and a task killed
        at submission ended the sweep with an internal error)."""
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        if not loop_ready():  # compile once here; the workers then load the kernels from the cache
            warm(scenario)
        queue, suspects = list(reversed(tasks)), []
        while queue or suspects:
            if suspects:
                self._pool(ctx, scenario, 1, [suspects.pop()], finished, alone=True)
            else:
                suspects = list(reversed(self._pool(ctx, scenario, min(self.workers, len(queue)), queue, finished)))

    @staticmethod
    def _pool(ctx, scenario, n, queue, finished, alone=False):
        """Run the tasks of `queue` (popped from its end) in one pool of `n` processes until they are done
        (returns []) or a worker dies: returns the tasks that were in the pool then (`alone`: the one
        task is recorded as failed instead)."""
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        pool = ProcessPoolExecutor(n, mp_context=ctx, initializer=init_worker, initargs=(scenario, os.getpid()))
        running, lost, workers = {}, [], {}
        try:
            while (queue or running) and not lost:
                while queue and len(running) < 2 * n and not lost:
                    task = queue.pop()
                    try:
                        running[pool.submit(run_variant, task)] = task
                        workers.update(getattr(pool, "_processes", None) or {})  # the pool forgets them when it breaks
                    except BrokenProcessPool:  # a worker died since the last wait
                        lost.append(task)
                done, _ = wait(running, return_when=FIRST_COMPLETED) if running and not lost else (set(), None)
                for fut in done:
                    task = running.pop(fut)
                    try:
                        outcome = fut.result()
                    except BrokenProcessPool:
                        lost.append(task)
                        continue
                    finished(task, outcome)
            if lost:
                _terminate(pool)
                ends = _worker_ends(workers.values())
                for fut, task in running.items():  # done before the break: kept; else run again
                    if fut.done() and not fut.cancelled() and fut.exception() is None:
                        finished(task, fut.result())
                    else:
                        lost.append(task)
                if alone:
                    finished(lost[0], _lost(f"its worker process {ends or 'died'} while it ran (out of memory, or "
                                            "a crash); rerun the sweep to retry it"))
                    return []
                return lost
            return []
        except BaseException:
            _terminate(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _worker_ends(processes) -> str:
    """How a pool's dead worker ended: 'was killed by SIGKILL' (the out-of-memory killer's signal) or
    'exited with code N', or '' when unknown (the pool ends its other workers with SIGTERM)."""
    import signal

    codes = []
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.join(5)  # the pool saw its pipe close: it is ending, or ended
            codes.append(proc.exitcode)
    codes = [c for c in codes if c and c != -signal.SIGTERM] or [c for c in codes if c]
    if not codes:
        return ""
    code = -signal.SIGKILL if -signal.SIGKILL in codes else codes[0]
    if code > 0:
        return f"exited with code {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


def _cores() -> int:
    """The cores this process may run on (a container's CPU set), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _terminate(pool):
    """Stop a ProcessPoolExecutor now: cancel what is queued, end the worker processes it started."""
    if hasattr(pool, "terminate_workers"):  # Python 3.14
        pool.terminate_workers()
        return
    procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown() forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(5)


class Dask:
    """Tasks on a running Dask distributed cluster; results come back to this process, which writes them."""

    CONNECT_TIMEOUT = 10  # s, to reach the scheduler and to see a first worker

    def __init__(self, address):
        try:
            import distributed
        except ImportError:
            raise InputError("--scheduler needs Dask distributed: pip install 'dyn[dask]' "
                             "(or pip install 'dask[distributed]')") from None
        self.distributed = distributed
        self.address = address
        # a host:port address that does not parse is refused here: a Client that fails on it in its
        # constructor closes itself at exit, 20 s later, with a traceback
        from distributed.comm import get_address_host_port, parse_address

        try:
            if parse_address(address)[0] in ("tcp", "tls", "ws", "wss"):
                get_address_host_port(address)
        except ValueError as exc:
            raise InputError(f"cannot reach the Dask scheduler at {address}: {exc} "
                             "(expected tcp://HOST:PORT)") from None

    def run(self, tasks, scenario, finished):
        from ... import __version__

        d = self.distributed
        try:
            client = d.Client(self.address, timeout=self.CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        futures = {}
        try:
            try:
                client.wait_for_workers(1, timeout=self.CONNECT_TIMEOUT)
            except TimeoutError:
                raise InputError(f"the Dask scheduler at {self.address} has no workers; start some with "
                                 f"'dask worker {self.address} --nthreads 1 --nworkers N'") from None
            try:
                versions = client.run(warm, scenario)
            except Exception as exc:
                raise InputError(f"the Dask workers cannot run dyn ({type(exc).__name__}: {exc}); "
                                 "install the same dyn on every worker") from None
            other = {w: v for w, v in versions.items() if v != __version__}
            if other:
                raise InputError(f"Dask workers run another dyn version ({_short(other)}), this one is "
                                 f"{__version__}; the same variant must run the same code")
            for task in tasks:
                fut = client.submit(run_variant, task, pure=False, key=f"dyn-{task.name}-{task.key[:8]}-"
                                                                        f"{os.urandom(4).hex()}")
                futures[fut] = task
            for fut in d.as_completed(list(futures), loop=client.loop):
                task = futures.pop(fut)
                try:
                    outcome = fut.result()
                except Exception as exc:  # KilledWorker, a lost connection: the cluster failed, not the variant
                    outcome = _lost(f"the Dask cluster could not run it ({type(exc).__name__}: {exc}); "
                                    "rerun the sweep to retry it")
                finished(task, outcome)
                fut.release()
        finally:
            with contextlib.suppress(Exception):
                if futures:
                    client.cancel(list(futures))
            with contextlib.suppress(Exception):
                client.close()


def _short(mapping, n=3):
    items = [f"{k}: {v}" for k, v in list(mapping.items())[:n]]
    return ", ".join(items) + (f", … ({len(mapping) - n} more)" if len(mapping) > n else "")
