"""The executor interface: how a captured forward is run (see ``docs/ARCHITECTURE.md``).

A forward is a zero-argument callable ``fn`` reading and writing static (graph-stable) buffers.
``capture(fn)`` runs ``fn()`` once for real (warm-up), captures it and returns a handle;
``replay(handle)`` runs the captured work again on the buffers' current contents. ``eager``
re-runs the host code on every replay, ``cudagraph`` replays a real ``torch.cuda.CUDAGraph`` (host
code ran once, at capture), ``tape`` emulates the latter on any device.
"""

from __future__ import annotations

import abc
from typing import Callable

import torch


def default_device() -> torch.device:
    """``cuda`` when a CUDA device is usable here, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Executor(abc.ABC):
    """Runs a forward ``fn`` eagerly or as a captured graph. ``name``: ``"eager"``, ``"tape"``
    or ``"cudagraph"``; ``graphs``: False for ``eager`` (the driver then runs every step eagerly);
    ``device``: where the buffers of captured forwards should live."""

    name: str = ""
    graphs: bool = False

    def __init__(self, device: torch.device | str | None = None) -> None:
        self.device = torch.device(device) if device is not None else default_device()

    @abc.abstractmethod
    def capture(self, fn: Callable[[], None]) -> object:
        """Warm up (run ``fn()`` once for real), then capture ``fn``; return a replay handle."""

    @abc.abstractmethod
    def replay(self, handle: object) -> None:
        """Run the work captured in ``handle`` (from :meth:`capture` of this executor)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, device={str(self.device)!r})"


class CountingExecutor:
    """The executor the harness hands a target: delegates to ``inner`` and counts ``capture`` /
    ``replay`` calls, so graph use is measured, not reported by the target
    (``Observation.graph_use``)."""

    def __init__(self, inner: Executor) -> None:
        self._inner = inner
        self.captures = 0
        self.replays = 0

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def capture(self, fn: Callable[[], None]) -> object:
        handle = self._inner.capture(fn)
        self.captures += 1
        return handle

    def replay(self, handle: object) -> None:
        self._inner.replay(handle)
        self.replays += 1

    def counts(self) -> dict[str, int]:
        return {"captures": self.captures, "replays": self.replays}

    def __repr__(self) -> str:
        return f"CountingExecutor({self._inner!r}, captures={self.captures}, replays={self.replays})"
