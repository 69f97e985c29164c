"""The single door every device launch of a non-aten kernel goes through.

Triton and CUDA C++ kernels are opaque to torch's dispatcher, so the ``tape`` executor
(``harness/executors``) cannot see them through a ``TorchDispatchMode``; every launch wrapper in
``kernels/`` calls :func:`launch` instead. Without a recorder the launch just runs (after its
value checks); a recorder (:func:`recording`) records it with the tensors it touches during a
tape capture (running it with dispatch modes off) and re-runs it on replay.

``validate`` is the host-side value contract (a device->host sync): skipped while capturing
(illegal in a CUDA capture, meaningless on synthetic data); the tape re-runs it before each
replayed launch, since the CPU interpreter has no bounds checks (a clear error, not a segfault).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator, Protocol

import torch


class LaunchRecorder(Protocol):
    def on_launch(self, name: str, fn: Callable[..., Any], args: tuple,
                  validate: Callable[[], None] | None) -> None: ...


_recorder: contextvars.ContextVar[LaunchRecorder | None] = contextvars.ContextVar(
    "swafuzz_launch_recorder", default=None)


def launch(name: str, fn: Callable[..., Any], args: tuple,
           validate: Callable[[], None] | None = None) -> None:
    """Run ``fn(*args)`` as one device launch named ``name``, after ``validate`` (raising
    :class:`kernels.contracts.ContractError` on bad values) unless a graph is being captured."""
    rec = _recorder.get()
    if rec is not None:
        rec.on_launch(name, fn, args, validate)
        return
    if validate is not None and not cuda_capturing():
        validate()
    fn(*args)


def cuda_capturing() -> bool:
    """True while a real ``torch.cuda.CUDAGraph`` capture is under way on the current stream."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def capturing() -> bool:
    """True inside any capture: a tape recording or a real CUDA graph capture."""
    return _recorder.get() is not None or cuda_capturing()


@contextlib.contextmanager
def recording(recorder: LaunchRecorder) -> Iterator[LaunchRecorder]:
    """Route every :func:`launch` in this context to ``recorder``."""
    token = _recorder.set(recorder)
    try:
        yield recorder
    finally:
        _recorder.reset(token)
