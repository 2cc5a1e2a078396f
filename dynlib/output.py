"""Atomic outputs: every file a command writes appears whole, or not at all (SPEC §4).

`atomic_output(path)` yields a hidden temporary file next to `path` and renames it
onto `path` when the block ends without an exception; on any exception the
temporary file is removed and an existing `path` is left untouched. Trajectories,
figures, reports and sweep summaries are all written through it.
"""
from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from .errors import InputError


@contextlib.contextmanager
def atomic_output(path):
    """Yield a temporary path next to `path`; on success rename it onto `path`.

    The temporary file is hidden (``.<name>.<random>.tmp<suffix>``, keeping the
    suffix so that writers that infer the format from it still work) and is
    created with the permissions an ordinary ``open(path, 'w')`` would give.
    On any exception it is removed and an existing `path` is left untouched.
    """
    target = Path(path)
    folder = target.parent
    if target.name in ("", ".", "..") or target.is_dir():
        raise InputError(f"{path}: is a folder, expected an output file name")
    if not folder.is_dir():
        raise InputError(f"{path}: folder '{folder}' does not exist")
    while True:
        tmp = folder / f".{target.name}.{secrets.token_hex(4)}.tmp{target.suffix}"
        try:
            # 0o666 through the umask, like open(path, "w"); O_EXCL: never reuse a name.
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(f"{path}: cannot write in '{folder}': {exc.strerror}") from None
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
        raise

