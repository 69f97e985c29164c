"""The ``sglang`` target's allocator: SGLang's ``SWATokenToKVPoolAllocator`` with the Case
contract's request bookkeeping (imports SGLang; its role: :mod:`.engine`'s module docstring).
"""

from __future__ import annotations

import torch

from swafuzz.scenarios.case import PoolConfig
from swafuzz.targets.allocator import AllocationError, RequestBook
from swafuzz.targets.kv_pool import SWAKVPool
from swafuzz.targets.sglang import eviction, features
from swafuzz.targets.sglang.real import SWATokenToKVPoolAllocator
from swafuzz.targets.sharing import held_elsewhere


def _free_page_ids(alloc) -> list[int]:
    """Every page id an SGLang token/paged allocator can still hand out (free list plus the
    released/staged pages it merges back on demand)."""
    parts = [alloc.free_pages]
    rel = getattr(alloc, "release_pages", None)
    if isinstance(rel, torch.Tensor):
        parts.append(rel)
    parts += list(getattr(alloc, "staged_pages", None) or [])
    return sorted(int(x) for t in parts for x in t.tolist())


class SGLangAllocator(RequestBook):
    """SGLang's ``SWATokenToKVPoolAllocator`` (registering its mapping into the target pool's
    DSV4 pool object) with the Case contract's request bookkeeping. ``admit`` with ``prefix_rid``:
    the adapter holds the radix tree's lock reference; ``alloc_extend`` gets ``prefix_lens =
    prefix_len`` and the prefix's last slot as ``last_loc`` (page size 1: ``alloc``)."""

    def __init__(self, pool: PoolConfig, device, kvcache: SWAKVPool):
        """``kvcache``: the target pool, an :class:`~swafuzz.targets.sglang.engine.SGLangPool`
        (its ``real`` is the DSV4 pool object the release's allocator registers into)."""
        self.pool = pool
        self.page_size = P = pool.page_size
        self.device = torch.device(device)
        self.real = SWATokenToKVPoolAllocator(
            size=pool.full_pages * P, size_swa=pool.swa_pages * P, page_size=P,
            dtype=torch.uint8, device=str(self.device), kvcache=kvcache.real, need_sort=True)
        if features.NAIVE_SWITCH and P > 1:
            for a in (self.real.full_attn_allocator, self.real.swa_attn_allocator):
                # the release's own switch: its torch reference allocator on CPU
                a.use_triton_kernels = False
        self.mapping = self.real.full_to_swa_index_mapping
        self.hold_low_swa_pages(pool.swa_held_pages)
        self.tokens: dict[int, list[int]] = {}
        self.evicted: dict[int, int] = {}
        self.alloc_log: list[list[int]] = []
        self.prefill = False  # an admission in progress (:meth:`admit`)
        # the release's request -> slot table, where its window eviction reads one
        self.rows = eviction.ReleaseRows(pool.full_pages + 1, pool.mapping_len, self.device) \
            if features.SEGMENT_EVICT else None

    def hold_low_swa_pages(self, n: int) -> None:
        """``pool.swa_held_pages``: SWA pages ``1..n`` held from the start by no request of the
        Case, taken through the release's own SWA allocator (its ``alloc`` of ``n * P`` slots
        hands out the lowest free pages of its sorted free list); refused when it hands out
        other pages. Never freed, never logged as the Case's allocation."""
        if n <= 0:
            return
        P = self.page_size
        got = self.real.swa_attn_allocator.alloc(n * P)
        want = list(range(P, (n + 1) * P))
        if got is None or sorted(int(x) for x in got.tolist()) != want:
            raise AllocationError(f"pool.swa_held_pages = {n}: the release's SWA allocator did "
                                  f"not hand out SWA pages 1..{n} (slots {P}..{(n + 1) * P - 1})")

    def rebuild_mapping(self) -> torch.Tensor:
        """The Case's ``remap`` (HiCache load-back / commit): the release's mapping rewritten in
        place, same contents (the engine re-registers it through ``register_mapping``)."""
        self.mapping.copy_(self.mapping.clone())
        return self.mapping

    def take_alloc_log(self) -> list[list[int]]:
        log, self.alloc_log = self.alloc_log, []
        return log

    def free_full_pages(self) -> list[int]:
        return _free_page_ids(self.real.full_attn_allocator)

    def free_swa_pages(self) -> list[int]:
        return _free_page_ids(self.real.swa_attn_allocator)

    def _t(self, v, cpu: bool = False) -> torch.Tensor:
        return torch.tensor(v, dtype=torch.int64, device="cpu" if cpu else self.device)

    def extend(self, plan: list[tuple[int, int]]) -> list[list[int]]:
        """Append ``n`` tokens to each ``(rid, n)`` through one SGLang allocation call:
        ``alloc`` (page size 1), ``alloc_decode`` (every n == 1; 0.5.23) or ``alloc_extend``."""
        if not any(n > 0 for _, n in plan):
            return [[] for _ in plan]
        P = self.page_size
        prefix = [len(self.tokens[rid]) for rid, _ in plan]
        seq = [p + n for p, (_, n) in zip(prefix, plan)]
        total = sum(n for _, n in plan)
        last = [self.tokens[rid][-1] if self.tokens[rid] else -1 for rid, _ in plan]
        if P == 1:
            out = self.real.alloc(total)
        elif all(n == 1 for _, n in plan) and features.NAIVE_SWITCH and not self.prefill:
            out = self.real.alloc_decode(self._t(seq), self._t(seq, cpu=True), self._t(last))
        else:
            out = self.real.alloc_extend(self._t(prefix), self._t(prefix, cpu=True), self._t(seq),
                                         self._t(seq, cpu=True), self._t(last), total)
        if out is None:
            raise AllocationError(f"extend: sglang's allocator refused {total} tokens "
                                  f"({self.real.full_available_size()} full / "
                                  f"{self.real.swa_available_size()} SWA slots free)")
        full = [int(x) for x in out.tolist()]
        if len(full) != total:
            raise AllocationError(f"extend: sglang's allocator returned {len(full)} slots for "
                                  f"{total} tokens")
        swa = self.mapping[out.to(torch.int64)].tolist()
        self.alloc_log += [[f, int(s)] for f, s in zip(full, swa)]
        res, k = [], 0
        for rid, n in plan:
            new = full[k:k + n]
            k += n
            self.tokens[rid] += new
            res.append(new)
        return res

    def admit(self, rid: int, length: int, prefix_rid: int | None = None,
              prefix_len: int = 0) -> list[int]:
        """Allocates as prefill does: ``alloc`` (page size 1) or ``alloc_extend``, never
        ``alloc_decode`` (even for one token), so a refusal comes before anything is taken."""
        self.prefill = True
        try:
            return super().admit(rid, length, prefix_rid, prefix_len)
        finally:
            self.prefill = False

    def evict(self, rid: int, window: int) -> None:
        """Window eviction of ``tokens[evicted:frontier]`` (contract frontier): through the
        release's scheduler eviction and segment free where it has them
        (:func:`.eviction.evict_segment`), else ``free_swa`` (0.5.12's ``_evict_swa``). A
        shared prefix stays: the radix tree owns it (``cache_protected_len``)."""
        if self.rows is not None:
            eviction.evict_segment(self, self.rows, rid, window)
            self.advance_frontier(rid, window)
            return
        slots = self.advance_frontier(rid, window)
        if slots:
            self.real.free_swa(self._t(slots))

    def flush(self) -> bool:
        """The cache flush the release's scheduler makes (:func:`.eviction.flush`): False
        (nothing changed) while a request is live."""
        return eviction.flush(self, self.rows)

    def reject(self, plan: list[tuple[int, int, int]], num_draft_tokens: int) -> None:
        """After a verify forward, the rejected draft tokens of each ``(rid, length_before,
        accepted)`` leave the request; those past the page of its last accepted token go back
        through one ``free`` call of the release's allocator (0.5.12's ``EagleVerifyInput.verify``
        frees ``out_cache_loc[evict_mask]`` the same way: full side, then ``free_swa``)."""
        freed = self.drop_rejected(plan, num_draft_tokens)
        if freed:
            self.real.free(self._t(freed))

    def _mapped(self, slots: list[int]) -> list[int]:
        if not slots:
            return []
        m = self.mapping[self._t(slots)].tolist()
        return [f for f, s in zip(slots, m) if s > 0]

    def finish(self, rid: int) -> None:
        """Frees the pages no other live request holds (a shared prefix stays with its other
        holders, as the radix tree's lock reference keeps it). 0.5.12: ``free`` (full side,
        then ``free_swa``, which skips unmapped slots). 0.5.23: ``free_swa`` of the
        still-mapped slots, then ``free_full`` of the tokens (its ``free`` insists every slot
        still has an SWA peer). Then the other requests' deferred evictions: ``free_swa``."""
        P = self.page_size
        shared = held_elsewhere(self.tokens, rid, P)
        toks = [f for f in self.tokens.pop(rid) if f // P not in shared]  # pages it alone holds
        self.evicted.pop(rid)
        if self.rows is not None:
            self.rows.release(rid)
        # every slot of those pages: the reserved verify slots after its last token included
        slots = sorted({f // P * P + o for f in toks for o in range(P)})
        if toks and not features.FREE_FULL:
            self.real.free(self._t(slots))
        elif toks:
            mapped = self._mapped(slots)
            if mapped:
                self.real.free_swa(self._t(mapped))
            self.real.free_full(self._t(toks))
        for other, otoks in self.tokens.items():  # deferred evictions of now unshared pages
            held = held_elsewhere(self.tokens, other, P)
            below = self._mapped([f for f in otoks[:self.evicted[other]] if f // P not in held])
            if below:
                self.real.free_swa(self._t(below))
