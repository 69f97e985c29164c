"""The paired full/SWA page allocator and the full->SWA mapping (spec §2.1, §2.3-§2.5).

The policy of ``features/dense/SEMANTICS.md``: both sides hand out the lowest free page (``1..
full_pages`` / ``1..swa_pages``; page 0 is the dummy), a request owns its pages, a token at
``p % P != 0`` continues the request's last page on both sides (``full % P == swa % P``),
``M[full] = swa``. State: ``mapping`` (``M``) int64 ``[full_pages*P + P + 1]`` on ``device``
(``M[f] == 0`` unmapped, ``M[-1] == -1`` sentinel), mutated only by torch ops on this one tensor
(pools hold a reference: ``register_mapping``); host-side free page sets, per request the full
slots ``tokens[rid]`` and the SWA eviction frontier ``evicted[rid]`` (a multiple of P).
:class:`RequestBook` (admission, frontier, rejected draft tokens) is shared with the ``sglang``
target. As upstream's ``alloc_extend``, the SWA slot continuing a partial page is the request's
last full location translated through ``M`` (``-1`` for a new request, via the sentinel).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from swafuzz.scenarios.case import PoolConfig
from swafuzz.targets.sharing import held_elsewhere, rejected_split


class AllocationError(RuntimeError):
    """A step needs more pages than are free (scenarios only generate steps that fit)."""


class RequestBook(ABC):
    """The Case contract's per-request bookkeeping every target allocator keeps: ordered full
    slots ``tokens[rid]``, SWA eviction frontiers ``evicted[rid]``, admission (with a
    radix-cache prefix), the window frontier and the rejected draft tokens of a verify."""

    page_size: int
    tokens: dict[int, list[int]]
    evicted: dict[int, int]

    @abstractmethod
    def extend(self, plan: list[tuple[int, int]]) -> list[list[int]]:
        """Append ``n`` tokens to request ``rid`` for each ``(rid, n)``; the new full slots."""

    def admit(self, rid: int, length: int, prefix_rid: int | None = None,
              prefix_len: int = 0) -> list[int]:
        """A new request of ``length`` tokens; returns the full slots allocated. ``prefix_rid``:
        its first ``prefix_len`` tokens (and frontier) are that request's (a prefix hit)."""
        if rid in self.tokens:
            raise AllocationError(f"admit: request {rid} already exists")
        self.tokens[rid], self.evicted[rid] = [], 0
        if prefix_rid is not None:
            self.tokens[rid] = self.tokens[prefix_rid][:prefix_len]
            self.evicted[rid] = min(self.evicted[prefix_rid], prefix_len)
        try:
            return self.extend([(rid, length - prefix_len)])[0]
        except AllocationError:
            del self.tokens[rid], self.evicted[rid]
            raise

    def advance_frontier(self, rid: int, window: int) -> list[int] | None:
        """Window eviction's bookkeeping: ``frontier = max(evicted, len - window)`` floored to
        a multiple of P. ``None`` when it did not advance; else it is recorded and the slots of
        ``tokens[evicted:frontier]`` to free are returned (without the pages another live
        request holds: a shared prefix)."""
        toks = self.tokens[rid]
        old = self.evicted[rid]
        frontier = max(old, len(toks) - window)
        frontier -= frontier % self.page_size
        if frontier <= old:
            return None
        shared = held_elsewhere(self.tokens, rid, self.page_size)
        self.evicted[rid] = frontier
        return [f for f in toks[old:frontier] if f // self.page_size not in shared]

    def drop_rejected(self, plan: list[tuple[int, int, int]], num_draft_tokens: int
                      ) -> list[int]:
        """After a verify, drop each ``(rid, length_before, accepted)``'s rejected draft tokens;
        returns the slots to free (past the last accepted token's page)."""
        freed: list[int] = []
        for rid, before, accepted in plan:
            keep, first = rejected_split(before, accepted, num_draft_tokens, self.page_size)
            toks = self.tokens[rid]
            freed += toks[first:]
            del toks[keep:]
        return freed

    def step_channels(self) -> dict:
        """What this allocator exposes after a step, per feature channel (feature name -> its
        data, :attr:`targets.observation.StepObs.channels`); the plain allocator: nothing."""
        return {}


class SWAAllocator(RequestBook):
    """Full + SWA paged allocators sharing the mapping ``M``."""

    def __init__(self, pool: PoolConfig, device: torch.device | str = "cpu"):
        self.pool = pool
        self.page_size = pool.page_size
        self.device = torch.device(device)
        self.mapping = torch.zeros(pool.mapping_len, dtype=torch.int64, device=self.device)
        self.mapping[-1] = -1
        self.full_free: set[int] = set(range(1, pool.full_pages + 1))
        # pages 1..swa_held_pages are held from the start by no request of the Case
        self.swa_free: set[int] = set(range(1 + pool.swa_held_pages, pool.swa_pages + 1))
        self.tokens: dict[int, list[int]] = {}
        self.evicted: dict[int, int] = {}

    # -- queries ------------------------------------------------------------------------------
    def free_full_pages(self) -> list[int]:
        return sorted(self.full_free)

    def free_swa_pages(self) -> list[int]:
        return sorted(self.swa_free)

    def translate_last_loc(self, rid: int) -> int:
        """``M[last_loc]`` of the request (``M[-1] = -1`` when it has no token yet)."""
        toks = self.tokens[rid]
        last = toks[-1] if toks else -1
        return int(self.mapping[last].item())

    def rebuild_mapping(self) -> torch.Tensor:
        """HiCache load-back / commit: ``M`` rewritten (here with the same contents) **in place**,
        so the tensor captured graphs read stays the live one; returns it for re-registration."""
        self.mapping.copy_(self.mapping.clone())
        return self.mapping

    # -- allocation ---------------------------------------------------------------------------
    def fresh_pages(self, plan: list[tuple[int, int]]) -> int:
        """How many fresh pages (per side) appending ``plan``'s tokens opens."""
        P = self.page_size
        lengths = {rid: len(self.tokens[rid]) for rid, _ in plan}
        pages = 0
        for rid, n in plan:
            start = lengths[rid]
            pages += sum(1 for p in range(start, start + n) if p % P == 0)
            lengths[rid] = start + n
        return pages

    def extend(self, plan: list[tuple[int, int]]) -> list[list[int]]:
        """Append ``n`` tokens to request ``rid`` for each ``(rid, n)`` in order (requests must
        exist, see :meth:`admit`). The pages the whole plan needs are checked first. Returns the
        new full slots of each plan entry; ``M`` gets one scatter for the whole plan."""
        P = self.page_size
        pages = self.fresh_pages(plan)
        if pages > len(self.full_free) or pages > len(self.swa_free):
            raise AllocationError(
                f"extend: the step needs {pages} fresh pages on each side but only "
                f"{len(self.full_free)} full / {len(self.swa_free)} SWA pages are free")
        out: list[list[int]] = []
        full_new: list[int] = []
        swa_new: list[int] = []
        for rid, n in plan:
            toks = self.tokens[rid]
            swa_last = self.translate_last_loc(rid) if toks and len(toks) % P else -1
            new: list[int] = []
            for _ in range(n):
                p = len(toks)
                if p % P:
                    full, swa = toks[-1] + 1, swa_last + 1
                else:
                    fp, sp = min(self.full_free), min(self.swa_free)
                    self.full_free.remove(fp)
                    self.swa_free.remove(sp)
                    full, swa = fp * P, sp * P
                toks.append(full)
                new.append(full)
                full_new.append(full)
                swa_new.append(swa)
                swa_last = swa
            out.append(new)
        if full_new:
            idx = torch.tensor(full_new, dtype=torch.int64, device=self.device)
            val = torch.tensor(swa_new, dtype=torch.int64, device=self.device)
            self.mapping[idx] = val
        return out

    def flush(self) -> bool:
        """``flush_cache`` (spec §2.3 ``clear()``): False while a request is live; else every page
        free again and ``M[:-1] = 0`` in place (the SWA buffers keep their bytes)."""
        if self.tokens:
            return False
        self.full_free = set(range(1, self.pool.full_pages + 1))
        self.swa_free = set(range(1, self.pool.swa_pages + 1))
        self.mapping[:-1] = 0
        return True

    # -- freeing ------------------------------------------------------------------------------
    def release_swa_pages(self, full_slots: list[int]) -> None:
        """Return the SWA pages ``{M[f] // P : M[f] > 0}`` to the free set (mapping untouched)."""
        if not full_slots:
            return
        idx = torch.tensor(full_slots, dtype=torch.int64, device=self.device)
        swa = self.mapping[idx]
        pages = torch.unique(swa[swa > 0] // self.page_size).tolist()
        self.swa_free.update(int(p) for p in pages)

    def unmap(self, full_slots: list[int]) -> None:
        """``M[f] = 0`` for every f."""
        if not full_slots:
            return
        idx = torch.tensor(full_slots, dtype=torch.int64, device=self.device)
        self.mapping[idx] = 0

    def free_swa(self, full_slots: list[int]) -> None:
        """``free_swa`` (spec §2.3): release the SWA pages of the mapped slots, then unmap."""
        self.release_swa_pages(full_slots)
        self.unmap(full_slots)

    def free_swa_out_of_window(self, full_slots: list[int]) -> None:
        """The eviction path's free (spec §2.5). Unified: :meth:`free_swa`."""
        self.free_swa(full_slots)

    def evict(self, rid: int, window: int) -> None:
        """Window eviction (:meth:`RequestBook.advance_frontier`): free the SWA side of the
        slots the frontier passed."""
        slots = self.advance_frontier(rid, window)
        if slots is not None:
            self.free_swa_out_of_window(slots)

    def free_rejected(self, full_slots: list[int]) -> None:
        """The post-verify free of rejected draft slots (whole pages): ``free_swa``, then the
        full pages go back."""
        self.free_swa(full_slots)
        self.full_free.update({f // self.page_size for f in full_slots})

    def reject(self, plan: list[tuple[int, int, int]], num_draft_tokens: int) -> None:
        """After a verify forward: free the rejected draft tokens past the page of the last
        accepted token (:meth:`RequestBook.drop_rejected`)."""
        freed = self.drop_rejected(plan, num_draft_tokens)
        if freed:
            self.free_rejected(freed)

    def pages_alone(self, rid: int, slots: list[int]) -> list[int]:
        """Pages of ``slots`` no other live request holds (sorted)."""
        shared = held_elsewhere(self.tokens, rid, self.page_size)
        return sorted({f // self.page_size for f in slots} - shared)

    def finish(self, rid: int) -> None:
        """``free_swa`` of every slot of the pages the request alone holds (reserved verify
        slots included), then release those full pages; then the deferred evictions of the
        other live requests (their tokens below the frontier on pages they now hold alone)."""
        P = self.page_size
        pages = self.pages_alone(rid, self.tokens[rid])
        self.tokens.pop(rid)
        self.evicted.pop(rid)
        self.free_swa([pg * P + o for pg in pages for o in range(P)])
        self.full_free.update(pages)
        for other, toks in self.tokens.items():
            alone = set(self.pages_alone(other, toks[:self.evicted[other]]))
            below = [f for f in toks[:self.evicted[other]] if f // P in alone]
            if below:
                self.free_swa(below)
