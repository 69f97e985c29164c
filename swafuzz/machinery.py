"""What swafuzz's own machinery raises, how long it waits for a process to start, and the fault
switch that makes it misbehave on purpose (issue 27). Standard library only: a starting child
imports this before torch, so its heartbeat covers the long imports.

* :class:`HarnessError`: raised by the harness's machinery (case workers, process groups, pipes,
  start-up limits, a worker killed from outside or out of memory), never by the code under
  test. The CLI maps it to exit 3 naming the cause; it is never a finding and nothing is
  written under ``findings/`` for it.
* Start-up: a starting process beats (:class:`Heartbeat`: a mark that changes while it makes
  progress - modules imported, a fault's ticks); the parent waits while it lives and its mark
  moves, and gives up (:class:`StartTimeout`) only after ``--start-timeout`` seconds
  (``SWAFUZZ_START_TIMEOUT``, default :data:`DEFAULT_START_TIMEOUT`) without progress.
* ``SWAFUZZ_FAULTS``: a comma list of :data:`FAULTS` (docs/RUNS.md); a bad entry is a usage
  error naming it and the allowed values (:func:`parse_faults`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any, Callable

START_TIMEOUT_ENV = "SWAFUZZ_START_TIMEOUT"
FAULTS_ENV = "SWAFUZZ_FAULTS"
#: seconds a start-up may go without progress before it is given up (``--start-timeout``)
DEFAULT_START_TIMEOUT = 1800.0
#: seconds between a starting process's beats
BEAT_S = 0.25

#: fault name -> its value's kind (None: takes no value) and what it does
FAULTS = {
    "slow-worker-start": ("SECONDS", "each case worker starts SECONDS later, beating meanwhile"),
    "stuck-worker-start": (None, "each case worker hangs at start-up without progress"),
    "slow-rank-start": ("SECONDS", "each process-group rank starts SECONDS later, beating"),
    "stuck-rank-start": (None, "each process-group rank hangs at start-up without progress"),
    "kill-worker": ("N", "a case worker is killed (SIGKILL) as its N-th Case arrives"),
}


class HarnessError(RuntimeError):
    """The harness's own machinery failed (the message names what); exit 3, never a finding."""


class StartTimeout(HarnessError):
    """A process did not start: no progress for the start-up limit."""


class FaultSpecError(ValueError):
    """A bad ``SWAFUZZ_FAULTS`` entry (the message names it and the allowed values)."""


def parse_faults(text: str | None) -> dict[str, float | int | None]:
    """``SWAFUZZ_FAULTS`` text -> {fault: value}: ``SECONDS`` a number >= 0, ``N`` an integer
    >= 1, no value for the others."""
    out: dict[str, float | int | None] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, eq, value = item.partition("=")
        allowed = ", ".join(f"{n}={k}" if k else n for n, (k, _) in FAULTS.items())
        if name not in FAULTS:
            raise FaultSpecError(f"{FAULTS_ENV}: {item!r} is not a fault; allowed: {allowed}")
        kind = FAULTS[name][0]
        if kind is None:
            if eq:
                raise FaultSpecError(f"{FAULTS_ENV}: {item!r}: {name} takes no value")
            out[name] = None
            continue
        try:
            v: float | int = int(value) if kind == "N" else float(value)
        except ValueError:
            v = -1
        if not (v >= 1 if kind == "N" else 0 <= v < float("inf")):
            want = "an integer >= 1" if kind == "N" else "a number of seconds >= 0"
            raise FaultSpecError(f"{FAULTS_ENV}: {item!r}: {name}={kind} needs {want}")
        out[name] = v
    return out


def faults() -> dict[str, float | int | None]:
    """This process's faults (its environment's ``SWAFUZZ_FAULTS``; the CLI checked it)."""
    return parse_faults(os.environ.get(FAULTS_ENV))


def start_timeout() -> float:
    """The start-up limit in seconds (``--start-timeout``, passed down as the environment)."""
    try:
        v = float(os.environ.get(START_TIMEOUT_ENV, DEFAULT_START_TIMEOUT))
    except ValueError:
        v = DEFAULT_START_TIMEOUT
    return v if v > 0 else DEFAULT_START_TIMEOUT


class Heartbeat:
    """A starting process's progress: :meth:`start` sends ``send(mark)`` every :data:`BEAT_S`
    seconds until :meth:`stop`; the mark (modules imported, ticks) changes while it makes
    progress. ``lock``: held around each send, so a reply and a beat never interleave."""

    def __init__(self, send: Callable[[Any], None]):
        self.send, self.ticks, self.lock = send, 0, threading.Lock()
        self._stop = threading.Event()

    def mark(self) -> list[int]:
        return [len(sys.modules), self.ticks]

    def start(self) -> Heartbeat:
        def beat() -> None:
            while not self._stop.wait(BEAT_S):
                with self.lock:
                    if self._stop.is_set():
                        return
                    self.send(self.mark())
        threading.Thread(target=beat, name="swafuzz-start-beat", daemon=True).start()
        return self

    def stop(self) -> None:
        with self.lock:
            self._stop.set()


def start_fault(which: str, hb: Heartbeat | None) -> None:
    """In a starting ``which`` (``worker`` or ``rank``): the start-up faults asked for. A slow
    start ticks ``hb`` (progress); a stuck one never returns and never ticks."""
    f = faults()
    if f"stuck-{which}-start" in f:
        while True:
            time.sleep(3600)
    secs = f.get(f"slow-{which}-start")
    if secs:
        end = time.monotonic() + float(secs)
        while time.monotonic() < end:
            time.sleep(min(BEAT_S, max(0.0, end - time.monotonic())))
            if hb is not None:
                hb.ticks += 1


def kill_fault(cases_seen: int) -> None:
    """In a case worker, as its ``cases_seen``-th Case arrives: ``kill-worker=N`` kills it."""
    n = faults().get("kill-worker")
    if n is not None and cases_seen >= int(n):
        os.kill(os.getpid(), signal.SIGKILL)


class StartWatch:
    """The parent's side of a start-up: :meth:`beat` with each mark received (or None when
    none came); raises :class:`StartTimeout` naming ``what`` once the mark has not moved for
    the limit."""

    def __init__(self, what: str, limit: float | None = None):
        self.what, self.limit = what, start_timeout() if limit is None else limit
        self.t0 = self.t_last = time.monotonic()
        self.last: Any = None

    def beat(self, mark: Any) -> None:
        now = time.monotonic()
        if mark is not None and mark != self.last:
            self.last, self.t_last = mark, now
        elif now - self.t_last > self.limit:
            raise StartTimeout(f"{self.what} did not start: no progress for {self.limit:g} s "
                               f"({now - self.t0:.0f} s since it was started; raise the limit "
                               "with --start-timeout SECONDS)")


def child_boot(reply_fd: int) -> tuple[Any, Heartbeat]:
    """First thing in a case-worker child, before its heavy imports: its reply pipe (a line
    buffered text file) and its started :class:`Heartbeat` (``{"starting": mark}`` lines), then
    the start-up faults asked for."""
    out = os.fdopen(reply_fd, "w", buffering=1)

    def send(mark: Any) -> None:
        try:
            out.write(json.dumps({"starting": mark}) + "\n")
            out.flush()
        except (BrokenPipeError, ValueError):  # the parent is gone
            os._exit(0)

    hb = Heartbeat(send).start()
    start_fault("worker", hb)
    return out, hb
