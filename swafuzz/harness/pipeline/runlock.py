"""One live campaign per run directory, and no process that outlives the campaign it works for.

:class:`RunLock`: the owning ``swafuzz run`` holds an exclusive ``flock`` on ``OUT/run.lock``
(which names its pid and host); a second run into it gets :class:`RunDirBusy` (exit 2 naming the
owner). The kernel drops the lock however the owner dies, so the file (never removed: that would
let two processes lock two files) does not block a resume. :func:`die_with_parent`: pool
processes and case-worker children call it first, so a kill -9 of the parent kills them too
(``PR_SET_PDEATHSIG`` on Linux, plus a thread watching the parent's pid).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import select
import signal
import socket
import threading
import time

LOCK_NAME = "run.lock"
_PR_SET_PDEATHSIG = 1


class RunDirBusy(RuntimeError):
    """The run directory is owned by a live ``swafuzz run``."""


class RunLock:
    """The exclusive lock of one run directory (see the module docstring)."""

    def __init__(self, out: str):
        self.path = os.path.join(out, LOCK_NAME)
        self.fd: int | None = None

    def acquire(self) -> RunLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.read(fd, 200).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunDirBusy(f"{os.path.dirname(self.path) or '.'} is in use by a live swafuzz "
                             f"run (pid {owner}); wait for it to end or stop it, then "
                             "--resume") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} on {socket.gethostname()}\n".encode())
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # drops the flock; the file stays (see the module docstring)
            self.fd = None


def die_with_parent(parent_pid: int, poll_s: float = 1.0) -> None:
    """End this process when ``parent_pid`` (the process that started it) dies."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watch thread below does it alone
        pass
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="swafuzz-parent-watch", daemon=True).start()


def die_with(pid: int, poll_s: float = 0.5) -> None:
    """End this process when ``pid`` (not its parent: the CLI, for a pool process that a
    forkserver forked) dies. Linux: a pidfd (immune to pid reuse); elsewhere ``kill(pid, 0)``
    polled every ``poll_s`` seconds. A forkserver does not end with the CLI while its children
    live (each holds the server's keep-alive pipe), so its children watch the CLI itself."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(1)

    def watch() -> None:
        while True:
            if fd is not None:
                if select.select([fd], [], [], None)[0]:  # readable: the process ended
                    os._exit(1)
            else:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    os._exit(1)
                except PermissionError:  # alive (someone else's process by now: pid reuse)
                    pass
                time.sleep(poll_s)

    threading.Thread(target=watch, name="swafuzz-run-watch", daemon=True).start()
