"""The tape executor: CUDA-graph capture/replay semantics emulated on any device (CPU CI).

A real CUDA graph capture executes nothing: it records the device work of a forward, and every
replay re-runs that work on the same memory. Host code runs once, at capture: any value the host
computed then (a Python list, a ``.tolist()`` translation, a shape, a scalar argument) is frozen
into the graph. The tape reproduces exactly that on CPU:

* **capture** (``TapeExecutor.capture(fn)``): ``fn()`` first runs once for real (warm-up, as a
  serving engine does), then runs again under a ``TorchDispatchMode`` and a
  :func:`kernels.launch.recording` recorder. Every aten op is recorded with the tensor objects it
  was given; every non-aten launch (Triton, CUDA) is recorded by its ``kernels.launch`` wrapper
  and run with dispatch modes disabled (the Triton interpreter's own torch ops are not device
  work of the forward). The launch's ``validate`` is not run (capture data are synthetic).
* classification of an aten op, from its schema:
  - view / alias ops (a return with an alias annotation, no argument written: ``view``,
    ``slice``, ``select``, ``t``, ``expand``, ``as_strided``, ...) are not recorded: the captured
    view already aliases its base's storage;
  - in-place and ``out=`` ops (an argument annotated as written) are re-executed as they are;
  - functional ops are re-executed and their fresh result copied into the captured output
    (``captured.copy_(new)``; the shape and dtype must match, else :class:`TapeReplayError`);
  - allocation-only ops (``empty``, ``empty_like``, ``empty_strided``, ...) are not recorded:
    like graph-pool memory, their output keeps whatever the last writer left.
* **capture undoes itself**: before the first write by a recorded op or launch to storage that
  existed before capture, that whole storage is snapshotted, and restored after capture (a KV
  cache written at capture keeps its pre-capture bytes). Tensors created during capture are
  poisoned afterwards (NaN for floats, ``0xA5A5A5A5``-like negatives for signed integers, ``0x5A``
  for ``uint8``, ``True`` for bool) until a replay writes them. A capture that raises is undone too.
* **host syncs in capture raise** :class:`HostSyncInCapture`, as CUDA does ("operation not
  permitted when stream is capturing"): ``_local_scalar_dense`` (``item()``, ``int()``,
  ``bool()``), ``nonzero``, ``is_nonzero``, ``equal``, ``masked_select``, boolean-mask
  indexing, the ``unique`` family, ``repeat_interleave`` without ``output_size``, blocking
  device<->host copies, and ``Tensor.tolist()`` / ``Tensor.numpy()`` (they bypass the
  dispatcher on CPU, so they are patched on ``torch.Tensor`` for the duration of the capture and
  refused only inside the captured function, not inside launches).
* **replay** re-executes only the recorded work, in order, on the same tensors (under
  ``torch.inference_mode``), calling each launch's ``validate`` first: on CPU the Triton
  interpreter has no bounds checks, so a bad index becomes a ``ContractError``, not a segfault.
  Replays are bit-exact: new contents of the input buffers give new results; host values baked at
  capture stay stale.

* **uploads and host copies in capture raise** too: ``torch.tensor(host data)`` /
  ``torch.as_tensor(host data)`` (a synchronous host->device upload; its value would be baked
  into the graph) and ``Tensor.cpu()`` (a device->host copy; on CPU a no-op that would
  otherwise pass silently).

What a real capture refuses, and what the tape does with it:

==========================================  ==========================  =======================
inside the captured function                 real CUDA graph capture     tape
==========================================  ==========================  =======================
``item()``, ``nonzero``, bool masks,         error (sync)                HostSyncInCapture
``unique``, ``repeat_interleave`` w/o size
``tolist()``, ``numpy()``, ``cpu()``          error (D->H copy)           HostSyncInCapture
``torch.tensor(list)``, ``as_tensor(list)``  error (pageable upload)     HostSyncInCapture
blocking ``copy_``/``to`` between devices    error                       HostSyncInCapture (only
                                                                         when CUDA is involved)
``.to("cpu")`` on a CPU machine              (D->H copy)                 NOT refused: the CPU is
                                                                         the device here
``torch.cuda.synchronize()``, ``data_ptr``   error / host arithmetic     NOT refused
arithmetic
new allocations (``empty``)                  from the graph pool         kept, poisoned after
                                                                         capture
==========================================  ==========================  =======================

Limits: no tensor subclasses or fake tensors; random ops replay with the generator's current
state; nested tape captures are refused. Value contracts (``validate``) run again on every
replay, which a real graph never does: on CPU a bad location replayed from a graph is a
``ContractError`` (the interpreter has no bounds checks), on a GPU the same replay is an
out-of-bounds write (the redzones see it). Snapshots copy whole storages (cheap for the
harness's small pools).
"""


from __future__ import annotations

from typing import Callable

import torch

from swafuzz.harness.executors.base import Executor
from swafuzz.harness.executors.tape_record import (
    ACTIVE,
    HostSyncInCapture,
    Recorder,
    Tape,
    TapeReplayError,
    poison_value,
    refuse_host_reads,
)
from swafuzz.kernels import launch as _launch

__all__ = ["TapeExecutor", "RecaptureTapeExecutor", "Tape", "HostSyncInCapture",
           "TapeReplayError", "poison_value"]


class TapeExecutor(Executor):
    """Emulates CUDA-graph capture/replay by recording and re-executing device work."""

    name = "tape"
    graphs = True

    def capture(self, fn: Callable[[], None]) -> Tape:
        if not callable(fn):
            raise TypeError(f"capture(fn): fn must be callable, got {type(fn).__name__}")
        if ACTIVE.get():
            raise RuntimeError("tape capture: captures cannot be nested")
        fn()  # warm-up, for real
        rec = Recorder()
        active = ACTIVE.set(True)
        try:
            with refuse_host_reads(), rec, _launch.recording(rec):
                fn()
        except BaseException:
            rec.undo(poison=False)
            raise
        finally:
            ACTIVE.reset(active)
        rec.undo(poison=True)
        return Tape(rec.ops)

    def replay(self, handle: object) -> None:
        if not isinstance(handle, Tape):
            raise TypeError(
                f"replay(handle): handle must come from TapeExecutor.capture, "
                f"got {type(handle).__name__}"
            )
        with torch.inference_mode():
            for op in handle.ops:
                op.replay()
        handle.replays += 1


class _Recaptured:
    """Handle of :class:`RecaptureTapeExecutor`: the forward and its first (normal) capture."""

    __slots__ = ("fn", "tape")

    def __init__(self, fn: Callable[[], None], tape: Tape) -> None:
        self.fn, self.tape = fn, tape


class RecaptureTapeExecutor(TapeExecutor):
    """The capture_freeze reference: graph semantics with nothing frozen at capture.

    ``capture`` is the tape's (so capture-time side effects, e.g. warm-up writes from the
    synthetic capture state, happen exactly as under ``tape``); every ``replay`` first captures
    the forward again - warm-up on the live, already loaded static buffers and prepared
    metadata, then recording - and replays that fresh tape. Anything a target computed on the
    host when the graph was first captured is therefore recomputed from the live inputs here,
    so a difference between ``tape`` (or ``cudagraph``) and this executor is a value frozen at
    capture (``checks.cross.check_capture_freeze``). Used as a reference only: the harness
    runs it when a graph observation disagrees with the eager one.
    """

    name = "tape_recapture"

    def capture(self, fn: Callable[[], None]) -> _Recaptured:
        return _Recaptured(fn, super().capture(fn))

    def replay(self, handle: object) -> None:
        if not isinstance(handle, _Recaptured):
            raise TypeError(
                f"replay(handle): handle must come from RecaptureTapeExecutor.capture, "
                f"got {type(handle).__name__}"
            )
        handle.tape = super().capture(handle.fn)
        super().replay(handle.tape)
