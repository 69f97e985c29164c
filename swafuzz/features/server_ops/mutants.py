"""Mutants of the server's own state changes (feature ``server_ops``; spec §2.3, §2.4 and the
scheduler's ``flush_cache``), reached only by the ``idle_flush`` and ``swa_short`` kinds."""

from __future__ import annotations

from swafuzz.targets.allocator import AllocationError, SWAAllocator
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _FlushWhileRunning(SWAAllocator):
    def flush(self) -> bool:
        """Clears the allocator without the scheduler's idle test."""
        self.full_free = set(range(1, self.pool.full_pages + 1))
        self.swa_free = set(range(1, self.pool.swa_pages + 1))
        self.mapping[:-1] = 0
        return True


@mutant("flush_while_running", ("idle_flush",), "the scheduler's flush_cache refuses unless "
        "idle (is_fully_idle); spec §2.3 clear(): both allocators cleared, M[:-1] = 0",
        expected=("refusal", "invariants", "write_targets", "pool_bytes", "agreement"))
class FlushWhileRunning(UnifiedEngine):
    """The cache flush runs while requests are live: their pages go back to the free sets and
    their mapping is cleared under them."""

    allocator_cls = _FlushWhileRunning


class _FlushSeedsPageZero(SWAAllocator):
    def flush(self) -> bool:
        """clear() seeds the free pages from 0: the dummy page is handed out next."""
        ok = super().flush()
        if ok:
            self.full_free.add(0)
            self.swa_free.add(0)
        return ok


@mutant("flush_seeds_page_zero", ("idle_flush",), "spec §2.3 (the paged allocator's clear() "
        "seeds free pages 1..num_pages: page 0 is the padded slot's), §2.4 rule 1",
        expected=("refusal", "invariants", "write_targets", "pool_bytes", "agreement"))
class FlushSeedsPageZero(UnifiedEngine):
    """The flush's clear() puts page 0 into both free sets: the next admission takes the dummy
    page, where padded rows write."""

    allocator_cls = _FlushSeedsPageZero


class _RefusalTakesFullPages(SWAAllocator):
    def extend(self, plan):
        """Takes the full side's fresh pages before asking the SWA side (the shape of 0.5.23's
        alloc_decode: full side first, None when the SWA side fails): a refusal leaks them."""
        need = self.fresh_pages(plan)
        if need > len(self.swa_free) and need <= len(self.full_free):
            for _ in range(need):
                self.full_free.remove(min(self.full_free))
            raise AllocationError(f"extend: {need} fresh SWA pages needed, "
                                  f"{len(self.swa_free)} free")
        return super().extend(plan)


@mutant("refusal_takes_full_pages", ("swa_short",), "spec §2.3 (alloc / alloc_extend check "
        "both sides before taking any page; alloc_decode takes the full side first and returns "
        "None when the SWA side fails)", expected=("refusal", "invariants"))
class RefusalTakesFullPages(UnifiedEngine):
    """An admission the SWA side refuses still takes its full pages: they leak."""

    allocator_cls = _RefusalTakesFullPages
