"""Executors: the same forward three ways (eager, tape, cudagraph); one interface.

``get_executor(name)`` builds one: ``"eager"`` (host code re-runs on every replay), ``"tape"``
(CUDA-graph semantics emulated by recording device work; runs on CPU), ``"cudagraph"`` (real
``torch.cuda.CUDAGraph``; needs a GPU) or ``"auto"`` (``cudagraph`` when CUDA is available, else
``tape``); ``"tape_recapture"`` is the capture_freeze reference (the tape, recapturing every
forward on its live inputs before replaying it). See :mod:`harness.executors.base` for the interface.
"""

from __future__ import annotations

import torch

from swafuzz.harness.executors.base import Executor
from swafuzz.harness.executors.cudagraph import CudaGraphExecutor
from swafuzz.harness.executors.eager import EagerExecutor
from swafuzz.harness.executors.tape import RecaptureTapeExecutor, TapeExecutor

EXECUTOR_NAMES = ("eager", "tape", "cudagraph", "auto", "tape_recapture")


def available_executors() -> list[str]:
    """Executor names usable on this machine (``cudagraph`` only with a CUDA device)."""
    return ["eager", "tape"] + ["cudagraph"] * torch.cuda.is_available()


def get_executor(name: str, device: torch.device | str | None = None) -> Executor:
    """Build the executor called ``name`` (one of :data:`EXECUTOR_NAMES`) on ``device`` (default
    ``cuda`` when available, else ``cpu``). ValueError for an unknown name, RuntimeError for
    ``cudagraph`` without a CUDA device."""
    if name == "auto":
        name = "cudagraph" if torch.cuda.is_available() else "tape"
    cls = {"eager": EagerExecutor, "tape": TapeExecutor, "tape_recapture": RecaptureTapeExecutor,
           "cudagraph": CudaGraphExecutor}.get(name)
    if cls is None:
        raise ValueError(f"get_executor(name={name!r}): unknown executor; allowed values are "
                         + ", ".join(repr(n) for n in EXECUTOR_NAMES))
    return cls(device)
