"""The eager executor: no graph at all; every replay re-runs the host code of the forward."""

from __future__ import annotations

from typing import Callable

from swafuzz.harness.executors.base import Executor


class EagerExecutor(Executor):
    """``capture`` runs ``fn`` once and returns it; ``replay`` calls it again."""

    name = "eager"
    graphs = False

    def capture(self, fn: Callable[[], None]) -> Callable[[], None]:
        if not callable(fn):
            raise TypeError(f"capture(fn): fn must be callable, got {type(fn).__name__}")
        fn()
        return fn

    def replay(self, handle: object) -> None:
        if not callable(handle):
            raise TypeError("replay(handle): handle must be the callable returned by "
                            f"EagerExecutor.capture, got {type(handle).__name__}")
        handle()
