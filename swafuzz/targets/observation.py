"""The Observation: what a target did while running a Case. Plain data (ints, strings, bytes).

Shapes
------
* ``Observation.forwards``: one :class:`ForwardObs` per forward of the Case, in execution order
  (step index, then forward index within the step; multi-step draft decode has one forward per
  speculative step that writes, i.e. ``num_steps - 1``).
* ``ForwardObs.stores``: one :class:`StoreObs` per layer of the written pool, in layer order; the
  resolved write locations exactly as handed to the store kernel (values and dtype name).
* ``Observation.steps``: one :class:`StepObs` after every step: the mapping ``M`` (all of it, the
  sentinel included), the free page lists of both allocators, the bytes of every SWA layer buffer
  (``[swa_slots * row_bytes]`` each, dummy page included) and the redzone bytes around each.
* ``Observation.error``: set when the target raised (e.g. a ContractError) or crashed; the run
  stops at that step.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    # Host values baked at graph capture for this forward's bucket, by name. Known names:
    # "rows" -> [rows of the captured bucket]; "swa_out_cache_loc" -> a translation baked on the
    # host (only buggy targets have it). Empty for eager forwards. Diagnostic only: no check
    # reads it (a target's report about itself is not evidence; capture_freeze replays instead).
    baked: dict[str, list[int]] = field(default_factory=dict)


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
    # The engine's own request table: rid -> (full slot per position, SWA eviction frontier).
    # None when a target does not expose it (the invariants check then skips the table rules).
    requests: dict[int, tuple[list[int], int]] | None = None
    # Targets whose allocator chooses pages itself (``allocation = "observed"``): every token
    # this step allocated, in the contract's order, as [full slot, SWA slot]; None otherwise.
    alloc: list[list[int]] | None = None
    # Per-request SWA ring (``pool.swa_ring > 0``): the engine's exposed ring state
    # {"slots": {rid: request slot}, "free_slots": [...], "available": int,
    #  "swa_available": int, "swa_paged_available": int, "swa_paged_size": int}; else None.
    ring: dict | None = None


@dataclass
class Observation:
    target: str
    impl: str
    executor: str
    forwards: list[ForwardObs] = field(default_factory=list)
    steps: list[StepObs] = field(default_factory=list)
    error: dict | None = None  # {"step": i, "type": name, "message": text}
    # Filled by the harness from the executor it handed the target, never by the target:
    # {"replays": n, "captures": n} (graph executors count every capture/replay call).
    graph_use: dict | None = None
    target_version: str | None = None  # what the target ran, e.g. "sglang 0.5.23"; None: ours
    # The request window / late-layer tail path (issue 12, features.request_window.engine): its forwards
    # (``WinFwdObs``: per layer the store locations and the workspace bytes) and, after every
    # step, the window's tags and ring bytes (``WinStepObs``). Empty for Cases without it.
    window_forwards: list = field(default_factory=list)
    window_steps: list = field(default_factory=list)


def store_obs(log: list) -> list[StoreObs]:
    """The :class:`StoreObs` of a backend's store log (``targets.backend.StoreRecord``: layer,
    the loc tensor, rows), reading the logged loc tensors (outside any capture)."""
    return [StoreObs(layer=r.layer, loc_dtype=str(r.loc.dtype).removeprefix("torch."),
                     locs=r.loc.tolist(), rows=r.rows) for r in log]
