"""What the tape executor records (:mod:`swafuzz.harness.executors.tape`): the aten ops and
``kernels.launch`` launches of a capture, with the tensors they touch (:class:`Tape`); the
:class:`Recorder` dispatch mode that records them and undoes capture's effects; and the host-sync
rules that make a capture refuse what a CUDA graph capture would refuse (``.tolist()``,
``.item()``, host uploads: :class:`HostSyncInCapture`)."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes


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
_ALLOC_ONLY = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
               "aten::new_empty_strided"}
_INDEX_OPS = {"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_"}
_CAPTURE_MSG = "operation not permitted when stream is capturing"

# True while the user's captured function runs (not while our recorder or a launch runs).
_HOST_READS_REFUSED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "swafuzz_tape_host_reads_refused", default=False)
ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("swafuzz_tape_active", default=False)


def _sync_error(what: str) -> HostSyncInCapture:
    return HostSyncInCapture(
        f"{_CAPTURE_MSG}: {what} reads device values on the host during tape capture; "
        "a CUDA graph capture cannot do that (compute it before capture or keep it on the device)")


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
            len(args) < 4 or args[3] is None):
        raise _sync_error("aten::repeat_interleave without output_size (data-dependent shape)")
    if name in _INDEX_OPS and len(args) > 1 and any(
            isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in args[1]):
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
                    "produce the shape it produced at capture")
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


class Recorder(TorchDispatchMode):
    """Records aten ops (dispatch mode) and launches (``kernels.launch`` recorder)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # nothing under the tape is compiled: without torch's dynamo-disable wrap of
        # __torch_dispatch__, the first dispatch does not import torch._dynamo (~1.3 s CPU in
        # every process that records)
        return False

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
        "be frozen into the graph (build the tensor before capture and copy into it)")


@contextlib.contextmanager
def refuse_host_reads() -> Iterator[None]:
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
