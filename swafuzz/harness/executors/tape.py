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

import contextlib
import contextvars
from typing import Any, Callable, Iterator

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from swafuzz.harness.executors.base import Executor
from swafuzz.kernels import launch as _launch


class HostSyncInCapture(RuntimeError):
    """A device->host synchronization inside a (tape) graph capture, illegal on a real GPU."""


class TapeReplayError(RuntimeError):
    """A recorded op produced a result that does not fit its captured output on replay."""


_SYNC_OPS = {
    "aten::_local_scalar_dense": "Tensor.item()/int()/float()/bool()",
    "aten::nonzero": "nonzero (data-dependent shape)",
    "aten::is_nonzero": "bool(tensor)",
    "aten::equal": "torch.equal",
    "aten::masked_select": "masked_select (data-dependent shape)",
    "aten::_unique": "unique (data-dependent shape)",
    "aten::_unique2": "unique (data-dependent shape)",
    "aten::unique_dim": "unique (data-dependent shape)",
    "aten::unique_consecutive": "unique_consecutive (data-dependent shape)",
    "aten::unique_dim_consecutive": "unique_consecutive (data-dependent shape)",
}
_ALLOC_ONLY = {
    "aten::empty",
    "aten::empty_like",
    "aten::empty_strided",
    "aten::new_empty",
    "aten::new_empty_strided",
}
_INDEX_OPS = {"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_"}
_CAPTURE_MSG = "operation not permitted when stream is capturing"

# True while the user's captured function runs (not while our recorder or a launch runs).
_HOST_READS_REFUSED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "swafuzz_tape_host_reads_refused", default=False
)
_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("swafuzz_tape_active", default=False)


def _sync_error(what: str) -> HostSyncInCapture:
    return HostSyncInCapture(
        f"{_CAPTURE_MSG}: {what} reads device values on the host during tape capture; "
        "a CUDA graph capture cannot do that (compute it before capture or keep it on the device)"
    )


def _key(t: torch.Tensor) -> tuple | None:
    """Identity of the storage under ``t`` (None for empty storages)."""
    st = t.untyped_storage()
    if st.nbytes() == 0:
        return None
    return (st.device.type, st.device.index, st.data_ptr())


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [x for x in pytree.tree_leaves(tree) if isinstance(x, torch.Tensor)]


def poison_value(dtype: torch.dtype) -> bool | int | float:
    """The fill value marking a tensor of ``dtype`` as "produced during capture, never computed"."""
    if dtype == torch.bool:
        return True
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.uint8:
        return 0x5A
    info = torch.iinfo(dtype)
    for v in (-0x5A5A5A5B, -0x5A5B, -0x5B):
        if info.min <= v:
            return v
    return 0x5A  # other unsigned types


def _check_sync(name: str, args: tuple, kwargs: dict) -> None:
    if name in _SYNC_OPS:
        raise _sync_error(f"{name} ({_SYNC_OPS[name]})")
    if name == "aten::repeat_interleave" and kwargs.get("output_size") is None and (
        len(args) < 4 or args[3] is None
    ):
        raise _sync_error("aten::repeat_interleave without output_size (data-dependent shape)")
    if name in _INDEX_OPS and len(args) > 1 and any(
        isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in args[1]
    ):
        raise _sync_error(f"{name} with a boolean mask (data-dependent shape)")
    if name == "aten::_to_copy" and kwargs.get("device") is not None and args:
        src, dst = args[0].device.type, torch.device(kwargs["device"]).type
        if src != dst and "cuda" in (src, dst) and not kwargs.get("non_blocking", False):
            raise _sync_error(f"aten::_to_copy from {src} to {dst} (blocking copy)")
    if name == "aten::copy_" and len(args) >= 2 and isinstance(args[1], torch.Tensor):
        dst, src = args[0].device.type, args[1].device.type
        non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
        scalar = src == "cpu" and args[1].dim() == 0
        if src != dst and "cuda" in (src, dst) and not non_blocking and not scalar:
            raise _sync_error(f"aten::copy_ from {src} to {dst} (blocking copy)")


class _AtenOp:
    __slots__ = ("func", "args", "kwargs", "targets", "captured")

    def __init__(self, func, args, kwargs, targets: list[int], captured: list[torch.Tensor]):
        self.func, self.args, self.kwargs = func, args, kwargs
        self.targets, self.captured = targets, captured

    @property
    def name(self) -> str:
        return str(self.func)

    def replay(self) -> None:
        out = self.func(*self.args, **self.kwargs)
        if not self.targets:
            return
        leaves = pytree.tree_leaves(out)
        for i, dst in zip(self.targets, self.captured):
            src = leaves[i]
            if src.shape != dst.shape or src.dtype != dst.dtype:
                raise TapeReplayError(
                    f"tape replay of {self.func}: output {i} is {src.dtype}{list(src.shape)} but "
                    f"the captured output is {dst.dtype}{list(dst.shape)}; a replayed op must "
                    "produce the shape it produced at capture"
                )
            dst.copy_(src)


class _LaunchOp:
    __slots__ = ("name", "fn", "args", "validate")

    def __init__(self, name: str, fn: Callable[..., Any], args: tuple, validate) -> None:
        self.name, self.fn, self.args, self.validate = name, fn, args, validate

    def replay(self) -> None:
        if self.validate is not None:
            self.validate()
        self.fn(*self.args)


class Tape:
    """The handle of a tape capture: the recorded device work, in order."""

    def __init__(self, ops: list) -> None:
        self.ops = ops
        self.replays = 0

    @property
    def op_names(self) -> list[str]:
        """Names of the recorded ops (``aten.index.Tensor``) and launches (``launch:<name>``)."""
        return [o.name if isinstance(o, _AtenOp) else f"launch:{o.name}" for o in self.ops]

    def __repr__(self) -> str:
        n_launch = sum(isinstance(o, _LaunchOp) for o in self.ops)
        return f"Tape(aten_ops={len(self.ops) - n_launch}, launches={n_launch}, replays={self.replays})"


class _Recorder(TorchDispatchMode):
    """Records aten ops (dispatch mode) and launches (``kernels.launch`` recorder)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list = []
        self.new: dict[tuple, torch.Tensor] = {}  # storages created during capture -> a tensor
        self.old: set[tuple] = set()  # storages seen that existed before capture
        self.snaps: dict[tuple, tuple] = {}  # pre-capture storage -> (storage, saved copy)

    def _protect(self, t: torch.Tensor) -> None:
        """Snapshot the storage of ``t`` before its first write, unless created in capture."""
        k = _key(t)
        if k is None or k in self.new or k in self.snaps:
            return
        self.old.add(k)
        st = t.untyped_storage()
        self.snaps[k] = (st, st.clone())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        name = schema.name
        _check_sync(name, args, kwargs)
        written: list[torch.Tensor] = []
        for i, a in enumerate(schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                written += _tensors(args[i] if i < len(args) else kwargs.get(a.name))
        for t in written:
            self._protect(t)
        out = func(*args, **kwargs)
        if not written and any(r.alias_info is not None for r in schema.returns):
            return out  # a view: aliases its base, nothing to re-execute
        in_keys = {k for k in map(_key, _tensors((args, kwargs))) if k is not None}
        self.old.update(k for k in in_keys if k not in self.new)
        leaves = pytree.tree_leaves(out)
        targets, captured = [], []
        for i, leaf in enumerate(leaves):
            if not isinstance(leaf, torch.Tensor):
                continue
            k = _key(leaf)
            if k is None or k in in_keys or k in self.old or k in self.new:
                continue  # empty, or aliases existing storage (e.g. _unsafe_view of an input)
            self.new[k] = leaf
            targets.append(i)
            captured.append(leaf)
        if name in _ALLOC_ONLY:
            return out
        if not written and not targets and _tensors(leaves):
            return out  # every output aliases an input: a view in disguise
        self.ops.append(_AtenOp(func, args, kwargs, targets, captured))
        return out

    def on_launch(self, name: str, fn: Callable[..., Any], args: tuple, validate) -> None:
        token = _HOST_READS_REFUSED.set(False)
        try:
            with _disable_current_modes():
                for t in _tensors(args):  # which args a launch writes is unknown: save all
                    self._protect(t)
                fn(*args)
        finally:
            _HOST_READS_REFUSED.reset(token)
        self.ops.append(_LaunchOp(name, fn, args, validate))

    def undo(self, poison: bool) -> None:
        """Restore pre-capture storages; poison the tensors created during capture."""
        with torch.inference_mode():
            for st, saved in self.snaps.values():
                st.copy_(saved)
            if poison:
                for t in self.new.values():
                    t.fill_(poison_value(t.dtype))
        self.snaps.clear()


_HOST_METHODS = ("tolist", "numpy", "cpu")
_UPLOAD_FUNCS = ("tensor", "as_tensor")


def _upload_error(what: str) -> HostSyncInCapture:
    return HostSyncInCapture(
        f"{_CAPTURE_MSG}: {what} copies host data to the device during tape capture; a CUDA "
        "graph capture cannot (a synchronous upload from pageable memory), and the value would "
        "be frozen into the graph (build the tensor before capture and copy into it)"
    )


@contextlib.contextmanager
def _refuse_host_reads() -> Iterator[None]:
    """Make ``Tensor.tolist``/``numpy``/``cpu`` (device->host reads on a GPU) and
    ``torch.tensor``/``torch.as_tensor`` of host data (host->device uploads) raise inside the
    captured function: on CPU they bypass the dispatcher (or are no-ops), on a GPU a capture
    refuses them."""
    saved = {m: torch.Tensor.__dict__.get(m) for m in _HOST_METHODS}
    saved_funcs = {f: getattr(torch, f) for f in _UPLOAD_FUNCS}

    def guard(method: str):
        original = getattr(torch.Tensor, method)

        def guarded(self, *args, **kwargs):
            if _HOST_READS_REFUSED.get():
                raise _sync_error(f"Tensor.{method}()")
            return original(self, *args, **kwargs)

        return guarded

    def guard_upload(name: str):
        original = saved_funcs[name]

        def guarded(data, *args, **kwargs):
            if _HOST_READS_REFUSED.get() and not isinstance(data, torch.Tensor):
                raise _upload_error(f"torch.{name}({type(data).__name__})")
            return original(data, *args, **kwargs)

        return guarded

    for m in saved:
        setattr(torch.Tensor, m, guard(m))
    for f in saved_funcs:
        setattr(torch, f, guard_upload(f))
    token = _HOST_READS_REFUSED.set(True)
    try:
        yield
    finally:
        _HOST_READS_REFUSED.reset(token)
        for m, prev in saved.items():
            if prev is None:
                delattr(torch.Tensor, m)
            else:
                setattr(torch.Tensor, m, prev)
        for f, prev in saved_funcs.items():
            setattr(torch, f, prev)


class TapeExecutor(Executor):
    """Emulates CUDA-graph capture/replay by recording and re-executing device work."""

    name = "tape"
    graphs = True

    def capture(self, fn: Callable[[], None]) -> Tape:
        if not callable(fn):
            raise TypeError(f"capture(fn): fn must be callable, got {type(fn).__name__}")
        if _ACTIVE.get():
            raise RuntimeError("tape capture: captures cannot be nested")
        fn()  # warm-up, for real
        rec = _Recorder()
        active = _ACTIVE.set(True)
        try:
            with _refuse_host_reads(), rec, _launch.recording(rec):
                fn()
        except BaseException:
            rec.undo(poison=False)
            raise
        finally:
            _ACTIVE.reset(active)
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
    capture (``harness.cross_checks.check_capture_freeze``). Used as a reference only: the harness
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
