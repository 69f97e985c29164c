"""The tape executor: CUDA-graph capture/replay semantics emulated on any device (CPU CI).

A real capture runs no device work; it records it, and each replay re-runs it on the same
memory, with every host value computed at capture (a list, a ``.tolist()`` translation, a
shape, a scalar argument) frozen in. The tape does the same on CPU:

* **capture** (``TapeExecutor.capture(fn)``): ``fn()`` runs once for real (warm-up), then again
  under a ``TorchDispatchMode`` and a :func:`kernels.launch.recording` recorder: aten ops are
  recorded with their tensor objects, non-aten launches (Triton, CUDA) by their
  ``kernels.launch`` wrapper (run with dispatch modes off, ``validate`` skipped). Per aten op,
  from its schema: view/alias ops and allocation-only ops (``empty``, ...) are not recorded
  (views alias their base; allocations keep what the last writer left, like graph-pool memory);
  in-place and ``out=`` ops replay as they are; functional ops replay and copy their result into
  the captured output (shape or dtype mismatch: :class:`TapeReplayError`).
* **capture undoes itself** (also when it raises): storage that existed before capture is
  snapshotted before its first recorded write and restored after; tensors created during
  capture are poisoned (NaN floats, ``0xA5A5A5A5``-like negative ints, ``0x5A`` uint8, ``True``
  bool) until a replay writes them.
* :class:`HostSyncInCapture` for what a real capture refuses: host syncs
  (``_local_scalar_dense``: ``item()``/``int()``/``bool()``; ``nonzero``, ``is_nonzero``,
  ``equal``, ``masked_select``, boolean-mask indexing, the ``unique`` family,
  ``repeat_interleave`` without ``output_size``, blocking cross-device copies with CUDA),
  device->host reads in the captured function (not in launches: ``tolist()``/``numpy()``/
  ``cpu()``) and host uploads (``torch.tensor``/``torch.as_tensor`` of host data). Allowed:
  ``.to("cpu")`` on CPU, ``torch.cuda.synchronize()``, ``data_ptr`` arithmetic.
* **replay** re-runs the recorded work in order on the same tensors (``torch.inference_mode``),
  each launch's ``validate`` first (the Triton interpreter has no bounds checks: a bad index is a
  ``ContractError``, not a segfault). Bit-exact: new input contents give new results, host
  values baked at capture stay stale.

Limits: no tensor subclasses or fake tensors; random ops use the generator's current state; no
nested captures; snapshots copy whole storages (the harness's pools are small).
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
    """The capture_freeze reference: graph semantics with nothing frozen at capture. ``capture``
    is the tape's; each ``replay`` captures the forward again on the live buffers and replays
    that, so a difference from ``tape``/``cudagraph`` is a value frozen at capture
    (``checks.cross.check_capture_freeze``; run only when a graph observation disagrees with the
    eager one)."""

    name = "tape_recapture"

    def capture(self, fn: Callable[[], None]) -> _Recaptured:
        return _Recaptured(fn, super().capture(fn))

    def replay(self, handle: object) -> None:
        if not isinstance(handle, _Recaptured):
            raise TypeError("replay(handle): handle must come from "
                            f"RecaptureTapeExecutor.capture, got {type(handle).__name__}")
        handle.tape = super().capture(handle.fn)
        super().replay(handle.tape)
