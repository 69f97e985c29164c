"""The tape executor: CUDA-graph capture/replay semantics emulated on any device (CPU CI).

A real CUDA graph capture executes nothing: it records the device work of a forward, and every
replay re-runs that work on the same memory. Host code runs once, at capture: any value the host
computed then (a Python list, a ``.tolist()`` translation, a shape, a scalar argument) is frozen
into the graph. The tape reproduces exactly that on CPU:

* **capture** (``TapeExecutor.capture(fn)``): ``fn()`` first runs once for real (warm-up, as a
  serving engine does), then runs again under a ``TorchDispatchMode`` and a
  :func:`kernels.launch.recording` recorder. Every aten op is recorded with the tensor objects it
  was given; every non-aten launch (Triton, CUDA) is recorded by its ``kernels.launch`` wrapper
  and run with dispatch modes disabled. The launch's ``validate`` is not run (capture data are
  synthetic).
* classification of an aten op, from its schema:
  - view / alias ops (a return with an alias annotation, no argument written) are not recorded:
    the captured view already aliases its base's storage;
  - in-place and ``out=`` ops (an argument annotated as written) are re-executed as they are;
  - functional ops are re-executed and their fresh result copied into the captured output
    (shape and dtype must match, else :class:`TapeReplayError`);
  - allocation-only ops (``empty``, ``empty_like``, ...) are not recorded: like graph-pool
    memory, their output keeps whatever the last writer left.
* **capture undoes itself**: before the first write by a recorded op or launch to storage that
  existed before capture, that whole storage is snapshotted, and restored after capture (a KV
  cache written at capture keeps its pre-capture bytes). Tensors created during capture are
  poisoned afterwards (NaN for floats, ``0xA5A5A5A5``-like negatives for signed integers, ``0x5A``
  for ``uint8``, ``True`` for bool) until a replay writes them. A capture that raises is undone too.
* **what a real capture refuses raises** :class:`HostSyncInCapture`: host syncs
  (``_local_scalar_dense``: ``item()``, ``int()``, ``bool()``; ``nonzero``, ``is_nonzero``,
  ``equal``, ``masked_select``, boolean-mask indexing, the ``unique`` family,
  ``repeat_interleave`` without ``output_size``, blocking copies between devices when CUDA is
  involved), device->host reads (``Tensor.tolist()`` / ``numpy()`` / ``cpu()``, patched on
  ``torch.Tensor`` during the capture and refused inside the captured function only, not inside
  launches) and host uploads (``torch.tensor`` / ``torch.as_tensor`` of host data). NOT refused:
  ``.to("cpu")`` on a CPU machine (the CPU is the device here), ``torch.cuda.synchronize()`` and
  ``data_ptr`` arithmetic.
* **replay** re-executes only the recorded work, in order, on the same tensors (under
  ``torch.inference_mode``), calling each launch's ``validate`` first: on CPU the Triton
  interpreter has no bounds checks, so a bad index becomes a ``ContractError``, not a segfault
  (on a GPU the same replay is an out-of-bounds write the redzones see). Replays are bit-exact:
  new contents of the input buffers give new results; host values baked at capture stay stale.

Limits: no tensor subclasses or fake tensors; random ops replay with the generator's current
state; nested tape captures are refused; snapshots copy whole storages (cheap for the harness's
small pools).
"""

from __future__ import annotations

from typing import Callable

import torch

from swafuzz.harness.executors.base import Executor
from swafuzz.harness.executors.tape_record import ACTIVE, Recorder, Tape, refuse_host_reads
from swafuzz.kernels import launch as _launch


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
            raise TypeError("replay(handle): handle must come from TapeExecutor.capture, "
                            f"got {type(handle).__name__}")
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

    ``capture`` is the tape's (capture-time side effects happen exactly as under ``tape``);
    every ``replay`` first captures the forward again on the live static buffers and metadata,
    then replays that fresh tape, so a difference between ``tape`` (or ``cudagraph``) and this
    executor is a value frozen at capture (``checks.cross.check_capture_freeze``). The harness
    runs it only when a graph observation disagrees with the eager one.
    """

    name = "tape_recapture"

    def capture(self, fn: Callable[[], None]) -> _Recaptured:
        return _Recaptured(fn, super().capture(fn))

    def replay(self, handle: object) -> None:
        if not isinstance(handle, _Recaptured):
            raise TypeError("replay(handle): handle must come from "
                            f"RecaptureTapeExecutor.capture, got {type(handle).__name__}")
        handle.tape = super().capture(handle.fn)
        super().replay(handle.tape)
