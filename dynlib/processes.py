"""Child processes that end with the process that started them.

`die_with_parent(parent_pid)`, called first thing in a child (a sweep worker, a
xacro expansion): on Linux the kernel sends the child SIGKILL when its parent
ends, however it ends (``prctl(PR_SET_PDEATHSIG)``, through ctypes); elsewhere a
daemon thread checks once a second that the parent is still there and ends
the child otherwise. Either way a killed ``dyn sweep`` leaves no worker behind
holding memory and the caller's pipes (``dyn sweep … | tee log`` ends).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent_pid: int) -> str:
    """Make this process end when `parent_pid` ends; returns how ('prctl' or 'watchdog')."""
    how = "watchdog"
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0:
                how = "prctl"
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent ended before the signal was armed
        os._exit(1)
    if how == "watchdog":
        threading.Thread(target=_watch, args=(parent_pid,), daemon=True, name="dyn-parent-watchdog").start()
    return how


def _watch(parent_pid):
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(1)
