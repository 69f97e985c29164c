"""Ctrl-C / SIGTERM for the zoos: stop after the mutant that is running, keep the finished rows.

:class:`StopSignals` installs a handler for SIGINT and SIGTERM that records the signal and
raises :class:`KeyboardInterrupt`. That exception is lost where it lands in code Python runs
with exceptions swallowed (a gc callback, a finalizer: "Exception ignored in ..."), so the
recorded signal, not the exception, decides: :meth:`StopSignals.check` raises again at the
zoo's next safe point, and the swallowed interrupt prints no traceback.
"""

from __future__ import annotations

import signal
import sys


class StopSignals:
    """Context manager; ``stopped``: the signals received, in order (empty: none)."""

    def __init__(self) -> None:
        self.stopped: list[int] = []

    def _handler(self, signum, frame) -> None:
        self.stopped.append(signum)
        raise KeyboardInterrupt  # SIGTERM ends a zoo as Ctrl-C does: the partial matrix, 130

    def _unraisable(self, u) -> None:  # a KeyboardInterrupt lost after a stop is ours
        if not (self.stopped and isinstance(u.exc_value, KeyboardInterrupt)):
            self._old_hook(u)

    def check(self) -> None:
        """Raise KeyboardInterrupt if a stop was asked for (its own exception may be lost)."""
        if self.stopped:
            raise KeyboardInterrupt

    def asked(self, e: BaseException) -> bool:
        """Whether ``e`` ends the zoo as a stop: a KeyboardInterrupt, or any error but exit
        raised after a signal (a Ctrl-C inside Hypothesis's bookkeeping can surface as an
        internal assertion)."""
        return not isinstance(e, SystemExit) and (isinstance(e, KeyboardInterrupt)
                                                  or bool(self.stopped))

    def __enter__(self) -> StopSignals:
        self._old_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        self._old = {s: signal.signal(s, self._handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)
        sys.unraisablehook = self._old_hook
