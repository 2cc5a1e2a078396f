"""Outputs: checked before the work, written whole or not at all, never onto an input (SPEC §4).

Two calls serve every command:

- `check_outputs(outputs, inputs)`, before the work starts: each output has the
  extension of its kind (`KINDS`: ``.json`` report, ``.png``/``.svg``/``.pdf``
  figure, ``.csv``/``.parquet`` trajectory, ``.html`` page, ``.urdf`` robot,
  ``.json`` schema, ``.md`` reference page), is
  not a folder, lies in a folder that exists and can be written (a file is
  created there and removed), is not one of the command's inputs (same file:
  same device and inode, or the same resolved path; symlinks and hard links
  included) and is not given twice. A 1M-step simulation no longer runs for 16 s
  before it finds that ``/proc/nope/out.csv`` cannot be written.
- `atomic_output(path)`, at the end: yields the path to write to.

What `atomic_output` does depends on what `path` is:

- a regular file or a new path (the usual case): a hidden temporary file in
  the output's folder, renamed onto the output's name when the block ends
  without an exception; an existing file keeps its permissions and owner
  (a 0600 file stays 0600). On any exception, the temporary file is removed and
  the existing file is left untouched; an `OSError` becomes an `InputError`
  naming the file. With ``durable=True`` (sweeps) the file and then its folder
  are fsync'ed, so a file that is there after a crash is whole.
- a character device (``/dev/null``), a FIFO, or standard output under another
  name (``/dev/stdout``, ``/dev/fd/N``): written in place, streamed; renaming a
  file onto ``/dev/null`` would replace the device, and onto a FIFO would
  leave its reader waiting forever.
- a block device or a socket: an `InputError` (dyn does not write onto them).

Symlinks (the rule of ``sed -i``, ``rsync`` and the kernel's ``protected_symlinks``):
the folder part of the path is resolved once, when the write starts, and the
last component is never followed. An output that is a symlink (made by the user,
or planted while dyn computed) is replaced by the new file: the link goes, its
target is untouched (a link ``r.json -> robot.urdf`` no longer replaces the
URDF). The rename is made in the folder opened when the write started, after
checking that the folder's path still leads to it (device and inode). Only the
kind of the link's target is looked at: a link to a character device or a FIFO
(``out.csv -> /dev/null``) is written in place through it, as the device itself
is, and a link to a folder, a block device or a socket is refused. A symlink
owned by another user in a sticky folder (``/tmp``) that that user does not own
either is refused before the work: dyn neither follows nor replaces it.

Temporary files are named ``.<name>.<8 hex digits>.tmp<suffix>`` (the name
shortened when the whole would exceed the file system's name length, so a
valid 244-byte name can be written). A run killed by SIGKILL (or a power cut)
leaves its temporary file behind: the next write into that folder removes the
files of this naming that belong to the same user and have not been modified
for `STALE_AFTER` seconds; nothing else is ever removed.
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import time
from pathlib import Path

from ..errors import InputError

# the extensions each kind of output may have
KINDS = {
    "trajectory": (".csv", ".parquet"),
    "report": (".json",),
    "figure": (".png", ".svg", ".pdf"),
    "page": (".html",),
    "urdf": (".urdf",),
    "schema": (".json",),
    "reference": (".md",),
    "linearization": (".json", ".npz"),
}
_KIND_WORDS = {"trajectory": "a trajectory", "report": "a report", "figure": "a figure", "page": "a page",
               "urdf": "a robot file", "schema": "a JSON Schema", "reference": "a Markdown page",
               "linearization": "a linearization"}
STDOUT = "-"
# names that are the process's own streams, whatever they point to (written in place)
_STREAM_NAMES = ("/dev/stdout", "/dev/stderr")
_STREAM_PREFIXES = ("/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")
STALE_AFTER = 15 * 60  # s without a change after which a temporary file of dyn's naming is stale
_TEMP = re.compile(r"\..+\.[0-9a-f]{8}\.tmp(\.[^./]{1,16})?")
_TOKEN = 8  # hex digits of the random part of a temporary file's name
_cleaned = set()  # folders whose stale temporary files this process has removed


# ------------------------------------------------------------------ what a path is

def in_place(path) -> bool:
    """Whether `path` is written in place (streamed) rather than replaced by a rename:
    a character device, a FIFO, or one of the process's streams by another name."""
    text = os.fspath(path)
    if text in _STREAM_NAMES or text.startswith(_STREAM_PREFIXES):
        return True
    try:
        mode = os.stat(text).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _refuse_special(path, label=None):
    """InputError for a block device or a socket (neither replaced nor written)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    what = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else None
    if what:
        raise InputError(f"{_named(path, label)}: is {what}; dyn writes files, character devices "
                         "(such as /dev/null) and FIFOs")


def _refuse_foreign_link(path, label=None):
    """InputError for a symlink owned by another user in a sticky folder (``/tmp``) not owned by that
    user either: the links the kernel's ``protected_symlinks`` will not follow."""
    try:
        link = os.lstat(path)
        if not stat.S_ISLNK(link.st_mode) or link.st_uid == os.geteuid():
            return
        folder = os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return
    if folder.st_mode & stat.S_ISVTX and link.st_uid != folder.st_uid:
        raise InputError(f"{_named(path, label)}: is a symlink owned by another user (uid {link.st_uid}) in a "
                         "shared folder (sticky, like /tmp); dyn neither follows nor replaces it; choose another "
                         "file name")


def _named(path, label):
    return f"{label} {path}" if label else str(path)


def _name_max(folder) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


def _identity(path) -> set:
    """What names the file `path`: its resolved path, and its device and inode when it exists (two
    paths name the same file when their identities meet)."""
    out = {os.path.realpath(path)}
    with contextlib.suppress(OSError):
        st = os.stat(path)
        out.add((st.st_dev, st.st_ino))
    return out


# ------------------------------------------------------------------ before the work

def check_outputs(outputs, inputs=()) -> None:
    """Check a command's outputs before its work starts; raise `InputError` on the first problem.

    outputs: ``(path, kind, label)`` triples: `kind` one of `KINDS` (the allowed
    extensions) or ``"folder"`` (a folder that may not exist yet, e.g. a sweep's
    OUTDIR); `label` the option that gave it (``"-o/--output"``), named in the
    message. A path of None or ``'-'`` (standard output) is skipped.
    inputs: paths the command reads (None, ``'-'`` and missing files skipped);
    no output may be one of them.
    """
    seen = {}  # what names each output so far -> (path, label); each path resolved once (many inputs)
    inputs = [os.fspath(p) for p in inputs if p is not None and os.fspath(p) != STDOUT]
    sources = {}
    for source in inputs:
        if os.path.exists(source):
            for key in _identity(source):
                sources.setdefault(key, source)
    for path, kind, label in outputs:
        if path is None or os.fspath(path) == STDOUT:
            continue
        path = os.fspath(path)
        if kind == "folder":
            _check_folder(path, label)
        else:
            _check_file(path, kind, label)
        names = _identity(path)
        other = next((seen[key] for key in names if key in seen), None)
        if other is not None:
            raise InputError(f"{label} {path}: is also the output of {other[1]}; give each output "
                             "its own file")
        source = next((sources[key] for key in names if key in sources), None)
        if source is not None:
            raise InputError(f"{label} {path}: is an input of this command ({source}); "
                             f"writing it would destroy the input; choose another "
                             f"{'folder' if kind == 'folder' else 'file name'}")
        seen.update(dict.fromkeys(names, (path, label)))


# the suffixes a recording's name ends in, left out of its stem (a ROS 2 bag folder has none)
_RECORDING_SUFFIXES = (".csv", ".parquet", ".bag", ".mcap", ".db3", ".txt")
# the suffixes of a robot's or a scenario's name, left out of its stem (dyn energy-check ROBOT1 ROBOT2 …)
ROBOT_SUFFIXES = (".urdf.xacro", ".xacro", ".urdf", ".yaml", ".yml")


def batch_outputs(sources, target, default_suffix=".csv", *, suffixes=None, label="-o/--output") -> tuple:
    """The output file of each of several inputs (``dyn inverse ROBOT REC1 REC2 … -o DIR/``):
    ``(outputs, folder)``. `target` is a folder (an existing one, or a path ending in '/') and each
    output is ``FOLDER/<stem><default_suffix>``, or a name holding ``{stem}`` (``out/{stem}.parquet``);
    `folder` is the folder the outputs go to (made by the caller when it does not exist yet, after
    `check_outputs` of it as a ``"folder"``). The stem of ``walk.bag`` and of the ROS 2 bag folder
    ``walk/`` is ``walk`` (`stem_of`; `suffixes`: the ones it leaves out, default a recording's; `ROBOT_SUFFIXES`
    for robots and scenarios). `label`: the option that gave `target`, named in the errors. InputError, before
    any work: standard input among several inputs, no
    `target`, a target that is neither, two inputs that would write one file."""
    sources = [os.fspath(s) for s in sources]
    if STDOUT in sources:
        raise InputError("'-' (standard input) can be read only alone, not among several inputs" if len(sources) > 1
                         else "'-' (standard input) has no name to make an output name of in a folder: give -o a "
                         "file name", key="TRAJ")
    option = label.split("/")[0]  # -o, --report
    example = ".parquet" if default_suffix == ".csv" else default_suffix  # a trajectory's other format
    if target is None or os.fspath(target) == STDOUT:
        raise InputError(f"{len(sources)} inputs need an output folder: {option} DIR/ writes DIR/<name>{default_suffix} "
                         f"for each (or {option} 'DIR/{{stem}}{example}')", key=label)
    target = os.fspath(target)
    if "{stem}" in target:
        names = [target.replace("{stem}", stem_of(s, suffixes)) for s in sources]
        folder = os.path.dirname(names[0]) or "."
    elif target.endswith(os.sep) or os.path.isdir(target):
        folder = target
        names = [os.path.join(target, stem_of(s, suffixes) + default_suffix) for s in sources]
    else:
        raise InputError(f"{target}: {len(sources)} inputs are written into a folder: give {option} DIR/ (ending in "
                         f"'/', made when missing) or a name with {{stem}}, such as {option} 'out/{{stem}}{example}'",
                         key=label)
    seen = {}
    for source, name in zip(sources, names):
        if name in seen:
            raise InputError(f"{seen[name]} and {source} would both be written to {name}; give each input its "
                             "own name, or write them in two runs", key=label)
        seen[name] = source
    return names, folder


def stem_of(source, suffixes=None) -> str:
    """The name of a recording without its folder and its recording suffix ('runs/walk.bag' → 'walk'), or
    of a file without the first of `suffixes` it ends in ('robots/arm6.urdf.xacro' → 'arm6')."""
    name = os.path.basename(os.path.normpath(os.fspath(source)))
    for suffix in suffixes or _RECORDING_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return name


def _check_file(path, kind, label):
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}")
    p = Path(path)
    if path.endswith(os.sep) or p.name in ("", ".", "..") or p.is_dir():
        raise InputError(f"{label} {path}: is a folder; expected {_KIND_WORDS[kind]} file name "
                         f"({', '.join(KINDS[kind])})")
    _refuse_foreign_link(path, label)
    _refuse_special(path, label)
    if in_place(path):
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise InputError(f"{label} {path}: cannot be written (permission denied)")
        return
    suffix = p.suffix.lower()
    if suffix not in KINDS[kind]:
        got = f"'{p.suffix}'" if p.suffix else "no extension"
        raise InputError(f"{label} {path}: {_KIND_WORDS[kind]} must end in {' or '.join(KINDS[kind])} "
                         f"(got {got})")
    real = Path(os.path.realpath(p.parent)) / p.name  # the folder resolved, the name itself not followed
    folder = real.parent
    if not folder.is_dir():
        shown = Path(path).parent if Path(path).parent != Path("") else Path(".")
        raise InputError(f"{label} {path}: folder '{shown}' does not exist")
    _check_name_length(real, label, path)
    _probe(folder, label, path)


def _check_folder(path, label):
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{label} {path}: exists and is not a folder; expected a folder")
    top = Path(os.path.realpath(path))
    while not top.exists():  # the first folder that exists: the new ones are made there
        if top.parent == top:
            break
        top = top.parent
    if not top.is_dir():
        raise InputError(f"{label} {path}: '{top}' is not a folder, so the folder cannot be made")
    _probe(top, label, path)


def _check_name_length(real, label, path):
    limit = _name_max(real.parent)
    size = len(os.fsencode(real.name))
    if size > limit:
        raise InputError(f"{label} {path}: the file name is {size} bytes long, more than the {limit} "
                         "this file system allows")


def _probe(folder, label, path):
    """Create (and remove) a file of dyn's temporary naming in `folder`: it can be written."""
    made = []  # removed however the probe ends (a SIGTERM between its creation and removal left it)
    try:
        _create_temporary(folder, "probe", made)
    except OSError as exc:
        raise InputError(f"{label} {path}: cannot write in '{folder}': {reason(exc)}") from None
    finally:
        for tmp in made:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def memory_shortfall(need) -> str | None:
    """None when `need` bytes fit in the memory this process may have (or the system does not say);
    else ``"<need> GB, more than <what>"`` for the caller's message. The one check, before the arrays
    are made, of a table too large to make (a long run, a high resampling rate, a long excitation), so
    that it is a one-line input error instead of a MemoryError. What the process may have is the least
    of: this machine's physical memory; the address space left under ``ulimit -v`` (RLIMIT_AS, less
    what the process maps already); what its control group has left (cgroup v2 ``memory.max``, v1
    ``memory.limit_in_bytes``, less its current use, at every level up to the root)."""
    for available, what in sorted(_memory_limits(), key=lambda limit: limit[0]):
        if need > available:
            return f"{need / 1e9:.3g} GB, more than {what}"
    return None


_PROC = Path("/proc/self")
_CGROUP = Path("/sys/fs/cgroup")
_NO_LIMIT = 1 << 62  # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1


def _memory_limits():
    """(bytes available, what to call it) of each limit the process is under."""
    found = []
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        found.append((memory, f"this machine's {memory / 1e9:.3g} GB"))
    except (AttributeError, ValueError, OSError):
        pass
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        mapped = _status_bytes("VmSize")
        found.append((max(soft - mapped, 0), f"the {max(soft - mapped, 0) / 1e9:.3g} GB of address space this "
                      f"process has left under its limit of {soft / 1e9:.3g} GB (ulimit -v)"))
    found += _cgroup_limits()
    return found


def _status_bytes(field) -> int:
    try:
        for line in (_PROC / "status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _cgroup_limits():
    """(bytes left, what) of the memory limits of the process's control group and its ancestors."""
    try:
        lines = (_PROC / "cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # v2: one hierarchy
            base, files = _CGROUP, ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):  # v1: the memory controller's own hierarchy
            base, files = _CGROUP / "memory", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        parts = [p for p in path.strip().split("/") if p]
        for depth in range(len(parts), -1, -1):
            folder = base.joinpath(*parts[:depth])
            limit, used = _read_int(folder / files[0]), _read_int(folder / files[1])
            if limit is not None and limit < _NO_LIMIT:
                left = max(limit - (used or 0), 0)
                found.append((left, f"the {left / 1e9:.3g} GB its control group has left of its limit of "
                              f"{limit / 1e9:.3g} GB ({folder / files[0]})"))
    return found


def _read_int(path):
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # v2 writes "max" for no limit


# ------------------------------------------------------------------ writing

@contextlib.contextmanager
def atomic_output(path, *, durable=False):
    """Yield the path to write `path` through (see the module docstring).

    Regular files and new paths: a temporary file in the output's folder (resolved
    once), renamed onto the output's name at the end (a symlink there is replaced,
    not followed; mode and owner of an existing file kept; ``durable``: file and
    folder fsync'ed). Character devices, FIFOs (also through a symlink) and the
    process's streams: `path` itself, written in place. On any exception, the
    temporary file is removed and an existing file is left untouched; an
    `OSError` (other than a broken pipe) becomes an `InputError` naming `path`.
    """
    _refuse_foreign_link(path)
    _refuse_special(path)
    if in_place(path):
        try:
            yield Path(path)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            raise InputError(f"{path}: cannot write: {reason(exc)}") from exc
        return
    target = Path(path)
    if target.name in ("", ".", "..") or target.is_dir():
        raise InputError(f"{path}: is a folder, expected an output file name")
    folder = Path(os.path.realpath(target.parent))  # resolved once; the name itself is never followed
    if not folder.is_dir():
        raise InputError(f"{path}: folder '{target.parent}' does not exist")
    _check_name_length(folder / target.name, None, path)
    remove_stale_temporaries(folder)
    try:
        old = os.lstat(folder / target.name)
    except OSError:
        old = None
    try:
        folder_fd = _open_folder(folder)
    except OSError as exc:
        raise InputError(f"{path}: cannot write in '{folder}': {reason(exc)}") from None
    made = []  # the temporary file, recorded before it exists: a Ctrl-C at any point finds it
    try:
        tmp = _create_temporary(folder, target.name, made)
    except BaseException as exc:
        _close(folder_fd)
        for name in made:
            with contextlib.suppress(OSError):
                os.unlink(name)
        if isinstance(exc, OSError):
            raise InputError(f"{path}: cannot write in '{folder}': {reason(exc)}") from None
        raise
    try:
        yield tmp
        if old is not None and stat.S_ISREG(old.st_mode):
            _keep_mode_and_owner(tmp, old)
        if durable:
            _fsync(tmp)
        _rename_in_folder(folder_fd, folder, tmp.name, target.name, path)
        if durable:
            _fsync(folder)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise InputError(f"{path}: cannot write: {reason(exc)}") from exc
        raise
    finally:
        _close(folder_fd)


def _close(fd):
    if fd is not None:
        os.close(fd)


def _open_folder(folder):
    """A file descriptor of `folder`, to rename in (O_PATH where it cannot be read, only written); None
    where the system renames by path only (Windows)."""
    if os.replace not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):
        return None
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except PermissionError:
        return os.open(folder, getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)


def _rename_in_folder(folder_fd, folder, tmp_name, name, path):
    """Rename `tmp_name` onto `name` in the folder opened as `folder_fd` (a symlink at `name` is
    replaced, never followed), once `folder`'s path still leads to that folder."""
    if folder_fd is None:
        os.replace(Path(folder) / tmp_name, Path(folder) / name)
        return
    here, opened = os.stat(folder), os.fstat(folder_fd)
    if (here.st_dev, here.st_ino) != (opened.st_dev, opened.st_ino):
        raise InputError(f"{path}: the folder '{folder}' was moved or replaced while dyn wrote into it")
    os.replace(tmp_name, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


def reason(exc: OSError) -> str:
    """The system's own words for an `OSError` ("No space left on device"), without a
    library's wrapping of them (pyarrow's "Error writing bytes to file. Detail: ...")."""
    if exc.errno and exc.errno in errno.errorcode:
        return os.strerror(exc.errno)
    return exc.strerror or str(exc) or type(exc).__name__


def _create_temporary(folder, name, made=None) -> Path:
    """A new, empty, hidden file ``.<name>.<token>.tmp<suffix>`` in `folder` (O_EXCL: never
    reused), with the permissions an ``open(path, 'w')`` would give (0o666 through the umask).
    `made`: a list the path is appended to just before the file is created, so that a caller
    interrupted (Ctrl-C, SIGTERM) between the creation and the return can remove it."""
    made = [] if made is None else made
    suffix = Path(name).suffix if len(Path(name).suffix) <= 17 else ""
    limit = _name_max(folder)
    stem = name
    while True:
        tmp = f".{stem}.{secrets.token_hex(_TOKEN // 2)}.tmp{suffix}"
        if len(os.fsencode(tmp)) <= limit or not stem:
            break
        stem = stem[:-1]  # a long name: shortened in the temporary file's name only
    while True:
        path = Path(folder) / tmp
        made.append(path)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return path
        except FileExistsError:  # another's file: not ours to remove
            made.remove(path)
            tmp = f".{stem}.{secrets.token_hex(_TOKEN // 2)}.tmp{suffix}"


def _keep_mode_and_owner(tmp, old):
    os.chmod(tmp, stat.S_IMODE(old.st_mode))
    if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):  # only root (or the owner, for the group) may
            os.chown(tmp, old.st_uid, old.st_gid)


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # file systems without fsync on folders
            raise
    finally:
        os.close(fd)


def is_temporary(name) -> bool:
    """Whether a file name has the naming of dyn's temporary files."""
    return bool(_TEMP.fullmatch(name))


def remove_stale_temporaries(folder, *, older_than=STALE_AFTER, force=False) -> list:
    """Remove the temporary files of dyn's naming in `folder` that this user owns and that have
    not changed for `older_than` seconds (left by a run killed with SIGKILL). Once per folder
    and process unless `force`. Returns the names removed."""
    key = os.path.realpath(folder)
    if key in _cleaned and not force:
        return []
    _cleaned.add(key)
    removed = []
    now = time.time()
    try:
        entries = os.scandir(folder)
    except OSError:
        return removed
    with entries:
        for entry in entries:
            if not entry.name.startswith(".") or not is_temporary(entry.name):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if (stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
                        and now - st.st_mtime > older_than):
                    os.unlink(entry.path)
                    removed.append(entry.name)
            except OSError:
                continue
    return removed
