"""The `dyn` group: a lazy command table and the one place errors become exit codes.

Command modules are imported only when their command runs (or when help lists
them); they import dynlib inside their functions, so `dyn --help` loads neither
numba nor pandas. Exit codes: 0 done, 1 a check failed or a simulation
diverged, 2 bad usage or bad input, 3 an internal error; interrupted: 128 + the
signal's number (130 Ctrl-C, 129 SIGHUP, 143 SIGTERM).

Signals and standard streams, set up before a command runs:

- SIGTERM and SIGHUP are handled like Ctrl-C: they raise `Interrupted` (a
  KeyboardInterrupt) in the main thread, so temporary files are removed, sweep
  workers stopped and a sweep's summary written, then one line and exit 128 + N.
  Not at any bytecode: inside an import, numba's compiling, a thread or process
  starting or a finaliser the exception waits until the main thread is out of
  it (`_handle_signals`); a signal never goes unseen (`_raise_if_signalled`), and
  an interrupted `dyn` ends without waiting for idle threads (`_exit_now`).
- a standard stream that was closed when dyn started (``>&-``, ``<&-``) gets
  /dev/null on its file descriptor, so that no file dyn opens takes its
  number; writing to a closed standard output is then an error, and reading a
  closed standard input says it is closed.
- writing to standard output goes through `_Stdout`, so that a full device
  (``> /dev/full``) or a write error is one line naming standard output, exit 2.
"""
import contextlib
import importlib
import io
import os
import signal
import sys
import threading
import time

import click

# click >= 8.2 raises this for a group called without arguments (no_args_is_help); older
# versions print the help and exit 0 themselves
_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())

# name -> (module, function); order is the order of `dyn --help`
COMMANDS = {
    "info": ("cli.info", "info"),
    "simulate": ("cli.simulate", "simulate"),
    "inverse": ("cli.inverse", "inverse"),
    "contact-id": ("cli.contact_id", "contact_id"),
    "energy-check": ("cli.energy_check", "energy_check"),
    "sweep": ("cli.sweep", "sweep"),
    "plot": ("cli.plot", "plot"),
    "identify": ("cli.identify", "identify"),
    "excite": ("cli.excite", "excite"),
    "linearize": ("cli.linearize", "linearize"),
    "view": ("cli.view", "view"),
    "schema": ("cli.schema", "schema"),
}

_state = {"verbose": 0}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return [name for name in COMMANDS if self._find(name) is not None]

    def get_command(self, ctx, name):
        return self._find(name)

    @staticmethod
    def _find(name):
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name]
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            if exc.name == module:  # a command not built yet
                return None
            raise

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except Interrupted as exc:  # not a KeyboardInterrupt past here: click would print a blank line
            raise _Stopped(exc.signum) from None

    def main(self, args=None, prog_name=None, **kw):  # noqa: D102
        import dynlib.errors  # noqa: F401 (before the handlers: _main's first line is in its try)

        previous = _handle_signals()
        try:
            return self._main(args, prog_name, **kw)
        finally:  # called in-process (a test's CliRunner): the caller's handlers again
            _restore_signals(previous)

    def _main(self, args=None, prog_name=None, **kw):
        from dynlib.errors import DynError

        try:
            try:
                _guard_standard_streams()
                rv = super().main(args=args, prog_name=prog_name or "dyn", standalone_mode=False, **kw)
                sys.stdout.flush()  # a full or closed standard output is found here, not at exit
            except BaseException as exc:
                _raise_if_signalled(exc)
                raise
            _raise_if_signalled(None)
        except click.exceptions.Exit as exc:
            _flush_quietly()
            sys.exit(exc.exit_code)
        except SystemExit as exc:
            if isinstance(exc.__context__, BrokenPipeError):  # click's own exit 1 for a closed pipe
                _closed_pipe()
            raise
        except _NO_ARGS as exc:  # `dyn` or `dyn COMMAND` with nothing: its help, not an error
            click.echo(exc.format_message())
            _flush_quietly()
            sys.exit(0)
        except click.UsageError as exc:
            hint = f" (see 'dyn {exc.ctx.info_name if exc.ctx and exc.ctx.parent else ''} --help')".replace("  ", " ")
            _fail(f"{exc.format_message()}{hint}", 2)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except (click.Abort, KeyboardInterrupt, _Stopped) as exc:
            signum = getattr(exc, "signum", None) or getattr(exc.__cause__, "signum", None) or signal.SIGINT
            by = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
            _fail(f"interrupted{by}", 128 + signum)
        except DynError as exc:
            if _state["verbose"]:
                import traceback

                traceback.print_exc()
            _fail(str(exc), exc.exit_code)
        except StdoutError as exc:
            _discard_stdout()
            _fail(exc.strerror, 2)
        except BrokenPipeError:
            _closed_pipe()
        except Exception as exc:  # a bug in dyn: one line unless -v
            if _state["verbose"]:
                raise
            _fail(f"internal error ({type(exc).__name__}: {exc}); rerun with -v for the traceback "
                  "and please report it", 3)
        sys.exit(rv if isinstance(rv, int) else 0)


def _closed_pipe():
    """The reader of standard output left (``dyn info … | head -1``): exit 0, quietly, as `cat` does
    under a shell that ignores SIGPIPE. Click's answer to EPIPE is exit 1, the check-failed code."""
    _discard_stdout()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    sys.exit(0)


def _fail(message, code):
    _flush_quietly()
    try:
        click.echo(f"dyn: error: {message}", err=True)
    except OSError:  # standard error closed or full: the exit code still says it
        pass
    sys.exit(code)


# ------------------------------------------------------------------ signals

class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread like Ctrl-C's KeyboardInterrupt."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Stopped(Exception):
    """An `Interrupted` on its way out of the command (after every clean-up ran)."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# SIGTERM/SIGHUP received: its number (0: none), and whether the retry timer runs (see _handle_signals)
_signalled = {"signum": 0, "timer": False, "at": 0.0}

# Code that an exception must not cut in the middle, by the path of its source (and, for threading.py,
# the function): an import (a half-imported module breaks the clean-up's imports: exit 3), numba's and
# llvmlite's compiling and cache loading (LLVM objects half owned: segfaults at exit), a thread or
# process being started (a pool's worker never told to stop: a hang at exit; a spawned sweep worker
# reading half its start-up data: a traceback), a finaliser (`__del__`, weakref callbacks: Python
# ignores an exception there, and the signal was lost: exit 0).
_UNSAFE_FILES = ("<frozen importlib", f"{os.sep}numba{os.sep}", f"{os.sep}llvmlite{os.sep}",
                 f"{os.sep}multiprocessing{os.sep}", f"concurrent{os.sep}futures{os.sep}thread.py",
                 f"concurrent{os.sep}futures{os.sep}process.py", f"{os.sep}weakref.py")
_UNSAFE_THREADING = ("start", "_bootstrap", "_bootstrap_inner", "_after_fork", "_shutdown")
_UNSAFE_NAMES = ("__del__",)
_RETRY = 0.01  # s between looks at whether the main thread left unsafe code
_PATIENCE = 3.0  # s at most that a signal waits (a first run's compile of one kernel takes longer)


def _unsafe(frame) -> bool:
    """The main thread, at `frame` (a signal handler's), is in code that must not be cut (_UNSAFE_FILES)."""
    while frame is not None:
        code = frame.f_code
        name = code.co_filename
        if name.endswith(f"{os.sep}threading.py"):
            if code.co_name in _UNSAFE_THREADING:
                return True
        elif code.co_name in _UNSAFE_NAMES or any(part in name for part in _UNSAFE_FILES):
            return True
        frame = frame.f_back
    return False


def _handle_signals() -> dict:
    """Install the handler; returns the handlers it replaced, by signal. Off the main thread (dyn's
    `main` called from a worker thread, a Dask worker), where Python lets no thread set a handler:
    nothing, and the signals keep whatever the process's main thread chose.

    The handler records the signal, ignores further SIGTERM/SIGHUP (a second signal does not cut the
    clean-up short) and raises `Interrupted` where the main thread is, unless that is code that must
    not be cut (`_unsafe`): then a timer (SIGALRM, every 10 ms) looks again until the main thread has
    left it, for at most `_PATIENCE` seconds (the clean-up then copes: `_raise_if_signalled`, `run`).
    A signal whose exception something swallowed is still found when the command ends
    (`_raise_if_signalled`)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    _signalled.update(signum=0, timer=False)

    def handler(signum, frame):
        if signum != signal.SIGALRM:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            _signalled.update(signum=signum, at=time.monotonic())
        pending = _signalled["signum"]
        if not pending:
            return
        waited = time.monotonic() - _signalled["at"]
        if waited < _PATIENCE and _unsafe(frame) and signal.getsignal(signal.SIGALRM) is handler:
            if not _signalled["timer"]:
                _signalled["timer"] = True
                signal.setitimer(signal.ITIMER_REAL, _RETRY, _RETRY)
            return
        _stop_timer()
        raise Interrupted(pending)

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:  # not when the caller chose to ignore it (nohup)
            previous[sig] = signal.signal(sig, handler)
    if previous and signal.getsignal(signal.SIGALRM) is signal.SIG_DFL:  # not when the caller times with it
        previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, handler)
    return previous


def _stop_timer():
    if _signalled["timer"]:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _signalled["timer"] = False


def _restore_signals(previous):
    _stop_timer()
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _raise_if_signalled(exc):
    """A SIGTERM/SIGHUP was received: the command ends as interrupted, whatever it raised meanwhile
    (an error of its clean-up, an error the interruption caused) or if it ended without seeing it."""
    signum = _signalled["signum"]
    if not signum or isinstance(exc, (KeyboardInterrupt, _Stopped)):
        return
    _stop_timer()
    raise _Stopped(signum) from exc


# ------------------------------------------------------------------ standard streams

CLOSED_STREAMS = set()  # file descriptors (0, 1, 2) that were closed when dyn started


class StdoutError(OSError):
    """Standard output cannot be written (closed, full, an I/O error): exit 2 with one line."""


class _Stdout(io.RawIOBase):
    """File descriptor 1 with errors that name standard output. After the first error
    (or a broken pipe) writes are discarded, so that the flush at exit stays quiet."""

    def __init__(self, closed):
        super().__init__()
        self.closed_at_start = closed
        self.discard = False

    def writable(self):
        return True

    def fileno(self):
        return 1

    def isatty(self):
        return not self.closed_at_start and os.isatty(1)

    def write(self, data):
        if self.discard:
            return len(data)
        if self.closed_at_start:
            self.discard = True
            # no errno: the message is the whole reason (dynlib's writers pass it on as it is)
            raise StdoutError(None, "standard output is closed; give an output file with -o "
                                    "(or redirect it: > FILE)")
        try:
            return os.write(1, data)
        except BrokenPipeError:
            self.discard = True
            raise
        except OSError as exc:
            self.discard = True
            text = os.strerror(exc.errno) if exc.errno else str(exc)
            raise StdoutError(None, f"cannot write to standard output: {text}") from None


def _guard_standard_streams():
    """/dev/null on a closed standard file descriptor; standard output through `_Stdout`."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            CLOSED_STREAMS.add(fd)
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd itself
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if 0 in CLOSED_STREAMS:
        sys.stdin = None
    if 2 in CLOSED_STREAMS and sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    old = sys.stdout
    if old is not None and getattr(old, "fileno", None) is not None:
        try:
            if old.fileno() != 1:
                return  # already redirected (a test runner): leave it
        except (OSError, ValueError, io.UnsupportedOperation):
            return
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Stdout(1 in CLOSED_STREAMS)),
                                  encoding=getattr(old, "encoding", None) or "utf-8",
                                  errors=getattr(old, "errors", None) or "strict",
                                  line_buffering=bool(getattr(old, "line_buffering", False)))


def _discard_stdout():
    raw = getattr(getattr(sys.stdout, "buffer", None), "raw", None)
    if isinstance(raw, _Stdout):
        raw.discard = True


def _flush_quietly():
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        _discard_stdout()


def _print_version(ctx, _param, value):
    """--version: looked up only when asked (importlib.metadata costs ~15 ms of every start-up)."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("dyn")
    except PackageNotFoundError:
        found = "0+unknown"
    click.echo(f"dyn {found}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
@click.option("-v", "--verbose", count=True, help="More detail on standard error; tracebacks on errors.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on standard error (no warnings, no notices).")
@click.pass_context
def dyn(ctx, verbose, quiet):
    """Rigid-body dynamics of URDF robots.

    \b
    Examples:
      dyn info robots/arm6.urdf
      dyn simulate robots/arm6.urdf --steps 1000 -o traj.csv
      dyn inverse robots/arm6.urdf traj.csv -o tau.csv
    """
    _state["verbose"] = verbose
    ctx.obj = {"verbose": verbose, "quiet": quiet}
    _show_cache_warnings(quiet)


def _show_cache_warnings(quiet):
    """The kernel cache's warnings (dynlib._numba.folder.CacheWarning: a cache that cannot be
    written, a damaged cache file), rk4's stiff-gains warning (dynlib.sim.controllers.StiffGainsWarning)
    and a simulation's mimic joint started off its leader (dynlib.core.model.MimicStateWarning) as one `dyn: warning:` line each, rk4's first-order friction term (dynlib.sim.dynamics.ImplicitFrictionNote)
    as a `dyn: note:` line, none with -q."""
    import sys
    import warnings

    from dynlib._numba.folder import CacheWarning

    warnings.filterwarnings("ignore" if quiet else "always", category=CacheWarning)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        controllers = sys.modules.get("dynlib.sim.controllers")  # loaded by then when a run's gains warned
        stiff = controllers.StiffGainsWarning if controllers is not None else CacheWarning
        model = sys.modules.get("dynlib.core.model")  # and by a simulation of mimic joints
        mimic = model.MimicStateWarning if model is not None else CacheWarning
        dynamics = sys.modules.get("dynlib.sim.dynamics")
        if dynamics is not None and issubclass(category, dynamics.ImplicitFrictionNote):
            if not quiet:
                click.echo(f"dyn: note: {message}", err=True)
        elif issubclass(category, (CacheWarning, stiff, mimic)):
            if not quiet:
                click.echo(f"dyn: warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def run():
    """The `dyn` console script and ``python -m cli.main``: the group, then the interpreter's exit
    without the cyclic garbage collector's passes over what the command leaves (`gc.freeze`).

    At exit Python tears its modules down and collects, walking every object still alive;
    numba's and llvmlite's are many, and that walk took 0.2-0.3 s of every command that loads
    a kernel (a 10-step `dyn simulate`: 1.02 s, 0.82 s with the freeze; best of 7, 2026-11-26).
    The freeze leaves reference counting, `atexit` and `weakref.finalize` as they are (dyn's
    temporary files and workers are cleaned up by those and by context managers, which have run by
    then); only cycles left at exit are not collected, and the process's end frees them. Called
    in-process (a test's CliRunner, a library), `dyn` itself does not freeze.
    """
    import gc

    try:
        dyn()
    except SystemExit as exc:
        if _signalled["signum"] or exc.code == 128 + signal.SIGINT:
            _exit_now(exc.code)
        raise
    except KeyboardInterrupt as exc:  # a signal between the command's end and its handlers' restoring
        signum = getattr(exc, "signum", signal.SIGINT)
        with contextlib.suppress(Exception):
            click.echo(f"dyn: error: interrupted{'' if signum == signal.SIGINT else ' by ' + exc.args[0]}", err=True)
        _exit_now(128 + signum)
    finally:
        gc.freeze()


def _exit_now(code):
    """End an interrupted process now, its clean-up done and its line written: without waiting for
    threads that are not daemons (a read-ahead parsing a large file, a pool's idle workers) and
    without the interpreter's finalisation, during which threads still in native code (Arrow, numba)
    took the GIL of a dying interpreter ("Fatal Python error") or hung it."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 1)


if __name__ == "__main__":  # pragma: no cover
    run()
