"""The Observation: what a target did while running a Case. Plain data (ints, strings, bytes).

* ``forwards``: a :class:`ForwardObs` per forward, in execution order (multi-step draft decode:
  one per writing step, ``num_steps - 1``); its ``stores``: a :class:`StoreObs` per layer of the
  written pool, the write locations exactly as handed to the store kernel (values, dtype name).
* ``steps``: a :class:`StepObs` after every step: all of ``M`` (sentinel included), both
  allocators' free page lists, every SWA layer's bytes (``[swa_slots * row_bytes]``, dummy page
  included) and its redzone bytes.
* ``error``: set when the target raised or crashed (the run stops there): ``{"step", "type",
  "message", "where"}`` (:func:`error_record`), ``where`` = ``{"module", "function", "line"}`` of
  the innermost frame outside the libraries called, or None.
* ``channels`` (here and on StepObs): feature name -> that feature's own data, filled by its
  target side and read by its checks via :meth:`channel`; the core never touches them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: top-level packages the code under test calls (and the standard library): an error's location
#: is the innermost frame outside them - the code under test's own line (SGLang's, a plugin's,
#: swafuzz's engine), not ``torch/_tensor.py`` or ``functools``
LIBRARIES = frozenset({"torch", "triton", "numpy", "hypothesis", "sgl_kernel", "flashinfer",
                       "deep_gemm", "tilelang", "cutlass", "builtins"})


def error_location(exc: BaseException) -> dict[str, Any] | None:
    """``{"module", "function", "line"}`` of the innermost frame of ``exc``'s traceback that is
    in the code under test (not in :data:`LIBRARIES` or the standard library), or None."""
    where = None
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__") or ""
        top = module.split(".")[0]
        if top and top not in LIBRARIES and top not in sys.stdlib_module_names:
            where = {"module": module, "function": tb.tb_frame.f_code.co_name,
                     "line": tb.tb_lineno}
        tb = tb.tb_next
    return where


def error_record(step: int, exc: BaseException) -> dict[str, Any]:
    """``Observation.error`` for ``exc`` raised at step ``step``: its type, message and raising
    location (:func:`error_location`)."""
    return {"step": step, "type": type(exc).__name__, "message": str(exc),
            "where": error_location(exc)}


def read_channel(channels: dict[str, Any], name: str, empty: Callable[[], Any] | None) -> Any:
    """Channel ``name`` of ``channels``; absent: ``empty()`` (not stored), or None."""
    if name in channels:
        return channels[name]
    return empty() if empty is not None else None


@dataclass
class StoreObs:
    layer: int
    loc_dtype: str  # "int32", "int64", ...
    locs: list[int]  # resolved SWA write locations, one per K row
    rows: int  # K rows handed to the store (first dim of the rows tensor)


@dataclass
class ForwardObs:
    step: int
    fwd: int
    pool: str  # "target" | "draft"
    mode: str  # ForwardMode name of the batch as the backend saw it (after DP rewrites)
    exec: str  # "eager" | "graph" (how it actually ran)
    n_real: int
    rows: int  # rows of the forward as run (bucket rows under a graph)
    stores: list[StoreObs] = field(default_factory=list)
    # Host values baked at capture for this bucket: "rows", "swa_out_cache_loc" (buggy targets
    # only); empty when eager. Diagnostic only, no check reads it (capture_freeze replays instead).
    baked: dict[str, list[int]] = field(default_factory=dict)
    # What the forward's preparation built, read before the stores (graph: after the replay's
    # out-graph prep), keys as :meth:`targets.backend.DSV4Backend.prepared`; empty when none ran
    # (an eager MTP IDLE forward) or a path records none. Judged by ``prepared`` (checks.prep).
    prepared: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class RedzoneObs:
    canary: bytes  # the pattern the target filled both redzones with
    before: bytes  # bytes just before the buffer, as observed
    after: bytes  # bytes just after the buffer, as observed
    pads: bytes = b""  # every page's pad bytes, page order (pools with padded page strides)


@dataclass
class StepObs:
    step: int
    mapping: list[int]
    free_full_pages: list[int]
    free_swa_pages: list[int]
    pools: dict[str, list[bytes]]  # "target"/"draft" -> per layer buffer bytes
    redzones: dict[str, list[RedzoneObs]]
    draft_mapping_is_target: bool = True  # draft pool's mapping is the allocator's tensor
    # rid -> (full slot per position, SWA frontier); None: not exposed (table rules skipped)
    requests: dict[int, tuple[list[int], int]] | None = None
    # ``allocation = "observed"``: this step's tokens as [full slot, SWA slot]; else None
    alloc: list[list[int]] | None = None
    channels: dict[str, Any] = field(default_factory=dict)  # per feature (module docstring)

    def channel(self, name: str, empty: Callable[[], Any] | None = None) -> Any:
        """Feature ``name``'s data after this step; absent: ``empty()`` (not stored), or None."""
        return read_channel(self.channels, name, empty)


@dataclass
class Observation:
    target: str
    impl: str
    executor: str
    forwards: list[ForwardObs] = field(default_factory=list)
    steps: list[StepObs] = field(default_factory=list)
    error: dict | None = None  # error_record(): {"step", "type", "message", "where"}
    graph_use: dict | None = None  # {"replays", "captures"}: the harness's, from its executor
    target_version: str | None = None  # what the target ran, e.g. "sglang 0.5.23"; None: ours
    channels: dict[str, Any] = field(default_factory=dict)  # per feature (module docstring)

    def channel(self, name: str, empty: Callable[[], Any] | None = None) -> Any:
        """Feature ``name``'s data; absent: ``empty()`` (not stored), or None."""
        return read_channel(self.channels, name, empty)

    def record_error(self, step: int, exc: BaseException) -> None:
        """The target raised ``exc`` at step ``step``: :func:`error_record` into ``error``."""
        self.error = error_record(step, exc)


def store_obs(log: list) -> list[StoreObs]:
    """The :class:`StoreObs` of a backend's store log (``targets.backend.StoreRecord``: layer,
    the loc tensor, rows), reading the logged loc tensors (outside any capture)."""
    return [StoreObs(layer=r.layer, loc_dtype=str(r.loc.dtype).removeprefix("torch."),
                     locs=r.loc.tolist(), rows=r.rows) for r in log]
