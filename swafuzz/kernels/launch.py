"""The single door every device launch of a non-aten kernel goes through.

Triton kernels and CUDA C++ twins are opaque to torch's dispatcher, so a CPU graph emulator (the
``tape`` executor in ``harness/executors``) cannot see them through a ``TorchDispatchMode``. Every
launch wrapper in ``kernels/`` therefore calls :func:`launch` instead of launching directly. With
no recorder installed the launch simply runs (after its host-side value checks). A recorder
(installed with :func:`recording`) takes over: during a tape "capture" it records the launch
together with the tensors it touches and runs it with torch dispatch modes disabled; on replay it
re-runs the recorded launches on the same tensors.

``validate`` is the host-side value contract of a launch (no negative location, every index
inside its buffer, ...). Such checks need a device->host sync, which is illegal inside a real CUDA
graph capture and meaningless there (capture data are synthetic), so they are skipped while
capturing. The tape recorder re-runs them before each replayed launch: on CPU the Triton
interpreter has no bounds checks, and a bad index must become a clear error, not a segfault.
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
    """Run ``fn(*args)`` as one device launch named ``name``.

    ``validate`` (optional) raises :class:`kernels.contracts.ContractError` on bad values; it is
    run before the launch unless a graph is being captured.
    """
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
