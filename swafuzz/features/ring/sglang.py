"""The per-request SWA ring on the ``sglang`` target (sglang 0.5.23; 0.5.12 has none and refuses
ring Cases). Imports SGLang. Real vs modelled: :data:`targets.sglang.TABLE`.

* :class:`SGLangRingAllocator`: the release's ``SWATokenToKVPoolAllocator`` in ring mode around
  the DSV4 pool (``swa_req_ring_size`` = the Case's ring) and a real ``ReqToTokenPool`` of
  ``req_slots`` (padding slot 0, tail-first order; slots from ``alloc_rows`` / ``free_rows``): its
  alloc / free / available counters are the release's. The harness keeps the request bookkeeping
  and :class:`features.ring.engine.RingTables` (modelled).
* :func:`stamp_ring_rows`: the rows ``TargetHiddenKvInjector._ring_inject_loc`` stamps as
  ``swa_out_cache_loc`` (``swa_ring_rows`` plus the ``-1`` window rule), after the release's
  in-graph op (which stamps nothing under a ring). Modelled: the harness stamps every forward it
  builds metadata for (upstream: DSpark draft blocks and the target-hidden injection).
* The resolver ``get_swa_out_cache_loc`` is the release's: a stamp of the live length is returned
  (C); a miss (DP padding rebinding ``out_cache_loc``, a draft-extend graph) falls to translating
  through ``M`` (F), which the ring never writes (addendum §3, A4).
"""

from __future__ import annotations

import torch

from swafuzz.features.ring.channel import CHANNEL
from swafuzz.features.ring.engine import RingTables, slot_positions
from swafuzz.targets import TargetUnavailable
from swafuzz.targets.allocator import AllocationError
from swafuzz.targets.sglang import features
from swafuzz.targets.sglang.engine import SGLangAllocator
from swafuzz.targets.sglang.real import VERSION, SWATokenToKVPoolAllocator

if features.RING_MISSING:  # pragma: no cover - depends on the environment
    raise TargetUnavailable(f"target sglang: sglang {VERSION} has no per-request SWA ring "
                            f"(lacks {'; '.join(features.RING_MISSING)}; first in 0.5.20)")

from sglang.srt.mem_cache.memory_pool import ReqToTokenPool  # noqa: E402
from sglang.srt.speculative.dspark_components.dspark_kv_inject import (  # noqa: E402
    TargetHiddenKvInjector,
)

_INJECTOR = object.__new__(TargetHiddenKvInjector)  # _ring_inject_loc reads only its arguments


class SGLangRingAllocator(SGLangAllocator):
    """The release's ring-mode allocator and ``ReqToTokenPool`` (see the module docstring)."""

    def __init__(self, pool, device, kvcache):
        self.pool = pool
        self.page_size = P = pool.page_size
        self.device = torch.device(device)
        self.ring = pool.swa_ring
        real_pool = kvcache.real
        real_pool.swa_req_ring_size = pool.swa_ring
        real_pool.sliding_window = pool.window
        self.req_pool = ReqToTokenPool(size=pool.req_slots, max_context_len=pool.mapping_len,
                                       device=str(self.device), enable_memory_saver=False)
        self.real = SWATokenToKVPoolAllocator(
            size=pool.full_pages * P, size_swa=pool.swa_pages * P, page_size=P,
            dtype=torch.uint8, device=str(self.device), kvcache=real_pool, need_sort=True,
            req_to_token_pool=self.req_pool)
        if P > 1:
            for a in (self.real.full_attn_allocator, self.real.swa_attn_allocator):
                a.use_triton_kernels = False  # the release's torch reference on CPU
        self.mapping = self.real.full_to_swa_index_mapping
        self.tokens: dict[int, list[int]] = {}
        self.evicted: dict[int, int] = {}
        self.alloc_log: list[list[int]] = []
        self.req_slot: dict[int, int] = {}
        self.tables = RingTables(pool, self.device)
        self.prefill = False  # the base's admission flag (its constructor is not run)
        # the window eviction stays the allocator's free_swa under the ring (the release's
        # segment free is the paged SWA allocator's path, targets/sglang/eviction.py)
        self.rows = None

    def admit(self, rid: int, length: int) -> list[int]:
        if rid in self.tokens:
            raise AllocationError(f"admit: request {rid} already exists")
        rows = self.req_pool.alloc_rows(1)
        if rows is None:
            raise AllocationError(f"admit: ReqToTokenPool has no free slot for request {rid}")
        self.req_slot[rid] = int(rows[0])
        try:
            return super().admit(rid, length)
        except AllocationError:
            self.req_pool.free_rows([self.req_slot.pop(rid)])
            raise

    def extend(self, plan):
        out = super().extend(plan)
        fulls = [f for new in out for f in new]
        owners = [self.req_slot[rid] for (rid, _), new in zip(plan, out) for _ in new]
        dev = self.device
        if fulls:
            self.tables.slot_of_full[torch.tensor(fulls, dtype=torch.int64, device=dev)] = \
                torch.tensor(owners, dtype=torch.int64, device=dev)
        self._lengths()
        return out

    def _lengths(self) -> None:
        lens = [0] * self.tables.len_of_slot.numel()
        for rid, s in self.req_slot.items():
            lens[s] = len(self.tokens.get(rid, ()))
        self.tables.len_of_slot.copy_(torch.tensor(lens, dtype=torch.int64, device=self.device))

    def finish(self, rid: int) -> None:
        toks = list(self.tokens[rid])
        super().finish(rid)  # the release's free_swa (no-op under the ring), then free_full
        self.req_pool.free_rows([self.req_slot.pop(rid)])
        if toks:
            self.tables.slot_of_full[torch.tensor(toks, dtype=torch.int64,
                                                  device=self.device)] = 0
        self._lengths()

    def step_channels(self) -> dict:
        """The ring channel: :meth:`ring_state` (``StepObs.channels``)."""
        return {CHANNEL: self.ring_state()}

    def ring_state(self) -> dict:
        swa = self.real.swa_attn_allocator
        return {"slots": dict(self.req_slot), "free_slots": sorted(self.req_pool.free_slots),
                "available": int(self.real.available_size()),
                "swa_available": int(self.real.swa_available_size()),
                "swa_paged_available": int(swa.available_size()),
                "swa_paged_size": int(swa.size)}


def stamp_ring_rows(backend, md, fb) -> None:
    """``md.core_attn_metadata.swa_out_cache_loc`` = the release's ``_ring_inject_loc`` over the
    batch's rows: state slot and final position per row from the harness's tables, positions of
    padding rows (slot 0) taken as 0 (the padding policy ZERO)."""
    t = backend.row_tables
    slot, pos = slot_positions(t, fb.out_cache_loc, fb.positions)
    final = t.len_of_slot[slot] - 1
    md.core_attn_metadata.swa_out_cache_loc = TargetHiddenKvInjector._ring_inject_loc(
        _INJECTOR, pool=backend.pool.real, positions=pos, cache_loc_2d=None, commit_lens=None,
        state_slot=slot, final_pos=final)
