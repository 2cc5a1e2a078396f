"""Expanding a .xacro file: in a child process, with a time and a memory limit.

A xacro file is a program: its ``${...}`` expressions are Python (``${9**9**9}``
runs until it is stopped, ``${xacro.load_yaml('/etc/passwd')}`` reads any file
the user can read) and its ``<xacro:include>`` and ``$(find pkg)`` open other
files. Opening one runs it, as ROS's own ``xacro`` command does. `expand_xacro`
runs the expansion in a child Python process (this module's `_child`) that:

- ends with its parent (`dynlib.processes.die_with_parent`);
- runs in a session and process group of its own, killed whole (SIGKILL) when
  the child ends, at the time limit and when dyn is interrupted: a process
  that xacro code starts (``subprocess.Popen`` is reachable from ``${...}``)
  ends with the expansion, and dyn never waits for one holding its pipes. Not
  covered: a process that leaves the group itself (``setsid``), and what is
  left when dyn itself is killed with SIGKILL (the child then ends by
  ``die_with_parent``, but no code of dyn runs to end its group);
- has at most `TIME_LIMIT` seconds of CPU time and of wall-clock time
  (``DYN_XACRO_SECONDS``) and `MEMORY_LIMIT` bytes of address space
  (``DYN_XACRO_MEMORY_MB``), set with ``resource.setrlimit`` before xacro is
  imported; no core file;
- resolves ``$(find pkg)`` with `dynlib.files.packages` (no ROS needed).

Each way it can fail is one `URDFError` naming the file: xacro's own error
(its first line), the time limit, the memory limit, or a crash. The parent
gets the expanded URDF text; nothing of the xacro runs in dyn's own process,
and a sweep expands a xacro once, when it is planned: its workers get the
model, never the xacro.
"""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..errors import URDFError

TIME_LIMIT = 30.0               # s of CPU time, and of wall-clock time, for one expansion
MEMORY_LIMIT = 2 * 1024 ** 3    # bytes of address space of the child
_EXIT_ERROR, _EXIT_MEMORY = 2, 3


def limits() -> tuple:
    """(seconds, bytes): the limits, from DYN_XACRO_SECONDS and DYN_XACRO_MEMORY_MB when set."""
    seconds, memory = TIME_LIMIT, MEMORY_LIMIT
    for var, kind in (("DYN_XACRO_SECONDS", "seconds"), ("DYN_XACRO_MEMORY_MB", "megabytes")):
        text = os.environ.get(var)
        if not text:
            continue
        try:
            value = float(text)
            if not value > 0:
                raise ValueError
        except ValueError:
            raise URDFError(f"{var} must be a positive number of {kind}, got {text!r}") from None
        if kind == "seconds":
            seconds = value
        else:
            memory = int(value * 1024 ** 2)
    return seconds, memory


def expand_xacro(path, package_path=()) -> bytes:
    """The URDF text of the .xacro file `path`, expanded in a child process (see the module docstring)."""
    file = str(path)
    seconds, memory = limits()
    request = json.dumps({"path": os.path.abspath(file), "parent": os.getpid(), "seconds": seconds,
                          "memory": memory, "package_path": [str(p) for p in package_path]})
    here = str(Path(__file__).resolve().parents[2])  # the folder holding this dynlib (dynlib/files/xacro_expand.py)
    code = f"import sys; sys.path.insert(0, {here!r}); from dynlib.files.xacro_expand import _child; _child()"
    flags = ["-P"] if sys.version_info >= (3, 11) else []  # not the current folder on sys.path
    try:
        done = _run([sys.executable, *flags, "-c", code], request.encode(), seconds + 5)
    except subprocess.TimeoutExpired:
        raise URDFError(f"xacro did not finish expanding the file within {seconds:g} s and was stopped "
                        "(a .xacro is a program; DYN_XACRO_SECONDS sets the limit)", file=file) from None
    except OSError as exc:
        raise URDFError(f"cannot start the xacro expansion: {exc.strerror or exc}", file=file) from None
    if done.stderr:  # xacro's own warnings, as its command prints them
        with _quiet_errors():
            sys.stderr.write(done.stderr.decode("utf-8", "replace"))
    code = done.returncode
    if code == 0:
        return done.stdout
    if code == _EXIT_ERROR:
        message = _message(done.stdout) or "failed"
        raise URDFError(f"xacro could not expand the file: {message}", file=file)
    if code == _EXIT_MEMORY:
        raise URDFError(f"xacro ran out of memory expanding the file (limit {memory / 1024 ** 2:.0f} MB; "
                        "a .xacro is a program; DYN_XACRO_MEMORY_MB sets the limit)", file=file)
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        raise URDFError(f"xacro used more than {seconds:g} s of CPU time expanding the file and was stopped "
                        "(a .xacro is a program; DYN_XACRO_SECONDS sets the limit)", file=file)
    reason = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    raise URDFError(f"the xacro expansion crashed ({reason})", file=file)


def _run(argv, request: bytes, timeout: float) -> subprocess.CompletedProcess:
    """`argv` run with `request` on its standard input, in a session (and process group) of its own;
    its output once it has ended. The whole group is killed when the child ends, at the time-out
    (`subprocess.TimeoutExpired`) or on any exception (Ctrl-C, SIGTERM): a process that xacro code
    started ends with the expansion, and dyn does not wait for one that holds the pipes."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    chunks = {proc.stdout: [], proc.stderr: []}
    try:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(request)
            proc.stdin.close()
        _read_until_ended(proc, chunks, time.monotonic() + timeout)
        proc.wait()
    finally:
        _end_group(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
    return subprocess.CompletedProcess(argv, proc.returncode, b"".join(chunks[proc.stdout]),
                                       b"".join(chunks[proc.stderr]))


def _read_until_ended(proc, chunks, deadline):
    """Read the child's pipes into `chunks` until they close; once the child has ended, its group is
    killed (the pipes' other holders), and what still holds them a second later (a process that left
    the group) is not waited for."""
    ended = None
    with selectors.DefaultSelector() as selector:
        for stream in chunks:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if ended is None and proc.poll() is not None:
                ended = now
                _end_group(proc)
            if ended is None and now > deadline:
                raise subprocess.TimeoutExpired(proc.args, deadline)
            if ended is not None and now > ended + 1.0:
                return
            for key, _ in selector.select(0.1):
                data = os.read(key.fd, 1 << 16)
                if data:
                    chunks[key.fileobj].append(data)
                else:
                    selector.unregister(key.fileobj)


def _end_group(proc):
    """SIGKILL to the child's process group (the child and what it started that stayed in it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()


class _quiet_errors:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], (OSError, ValueError, AttributeError))


def _message(raw: bytes) -> str:
    try:
        text = json.loads(raw.decode("utf-8", "replace")).get("error", "")
    except (ValueError, AttributeError):
        return ""
    first = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return first if len(first) <= 300 else first[:300] + "…"


# ------------------------------------------------------------------ in the child

def _child():
    """Read the request on standard input, expand, write the URDF (or the error) on standard output."""
    import resource

    request = json.loads(sys.stdin.buffer.read())
    from ..processes import die_with_parent

    die_with_parent(int(request["parent"]))
    seconds = max(1, int(request["seconds"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (int(request["memory"]),) * 2)
    out = sys.stdout.buffer
    reserve = bytearray(1 << 20)  # released on MemoryError, so that the error can still be reported
    try:
        import xacro

        path = request["path"]
        _resolve_find(xacro, path, request.get("package_path", ()))
        from ..errors import shown  # xacro's comment names the file: a name that is not UTF-8 as \xNN

        text = shown(xacro.process_file(path).toxml()).encode()
    except BaseException as exc:  # xacro raises many types (and may call sys.exit): all are its errors
        del reserve
        if _out_of_memory(exc):  # xacro wraps an expression's MemoryError in its own (empty) message
            os._exit(_EXIT_MEMORY)
        message = str(exc) or type(exc).__name__
        out.write(json.dumps({"error": message}).encode())
        out.flush()
        os._exit(_EXIT_ERROR)
    out.write(text)
    out.flush()
    os._exit(0)


def _out_of_memory(exc) -> bool:
    """Whether `exc` is a MemoryError or was caused by one (xacro's XacroException keeps it as .exc)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, MemoryError):
            return True
        seen.add(id(exc))
        inner = getattr(exc, "exc", None)
        exc = inner if isinstance(inner, BaseException) else (exc.__cause__ or exc.__context__)
    return False


def _resolve_find(xacro, path, package_path):
    """$(find pkg) through dynlib.files.packages: --package-path, ROS_PACKAGE_PATH, AMENT_PREFIX_PATH, the
    folders above the file (xacro's own looks only in an installed ROS 2)."""
    import importlib

    try:
        args = importlib.import_module("xacro.substitution_args")
    except ImportError:
        return
    if not hasattr(args, "_eval_find"):
        return
    from .packages import find_package

    def find(pkg):
        return str(find_package(pkg, package_path=tuple(package_path), near=path))

    args._eval_find = find
