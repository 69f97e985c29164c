"""A Case's own time, for the case worker's per-case limit (a ``timeout`` finding).

A Case that hangs in the code under test - a loop that never ends, a wait that is never
answered - is a finding; a Case that is merely slow because the machine is busy is not. Wall
time cannot tell them apart: under a load of 25 on 2 cores a 50 ms Case takes seconds, and a
run's worth of them can cross any fixed wall limit. So the limit counts the child's wall time
*less the time its main thread spent runnable but waiting for a CPU* (Linux
``/proc/PID/schedstat``, second field: ``run_delay`` in nanoseconds): a spinning or blocked
Case accumulates it, a starved one does not. Where the kernel gives no schedstat the clock is
the wall clock.
"""

from __future__ import annotations

import time
from typing import Callable


def waited_s(pid: int) -> float | None:
    """Seconds ``pid``'s main thread has spent runnable, waiting for a CPU (None: unknown)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


class CaseClock:
    """The time a Case has had since :meth:`__init__` (its start), waiting for a CPU not
    counted. ``read(pid)`` and ``now()``: :func:`waited_s` and ``time.monotonic`` (a test's
    stand-ins)."""

    def __init__(self, pid: int, read: Callable[[int], float | None] = waited_s,
                 now: Callable[[], float] = time.monotonic):
        self.pid, self.read, self.now = pid, read, now
        self.t0, self.w0 = now(), read(pid)

    def waited(self) -> float:
        """Seconds the Case waited for a CPU so far (0 where unknown; never past its wall)."""
        w = self.read(self.pid)
        if w is None or self.w0 is None:
            return 0.0
        return min(max(0.0, w - self.w0), self.now() - self.t0)

    def charged(self) -> float:
        """Seconds the Case has had: wall time less :meth:`waited`."""
        return self.now() - self.t0 - self.waited()
