"""Mutants of the server's own state changes (feature ``server_ops``; spec §2.3, §2.4 and the
scheduler's ``flush_cache``), reached only by the ``idle_flush`` and ``swa_short`` kinds."""

from __future__ import annotations

from swafuzz.targets.allocator import AllocationError, SWAAllocator
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant
from swafuzz.targets.sglang.zoo import SGLangMutant


class _FlushWhileRunning(SWAAllocator):
    def flush(self) -> bool:
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


# ----------------------------------------------------------------------------- the release's code
# (sglang target; the zoo runs them where SGLang is installed: --mutant NAME with the release's
# python). Their engines: swafuzz.features.server_ops.sglang_mutants, which imports the adapter.
@mutant("release_clear_seeds_page_zero", ("idle_flush",), "spec §2.3 (the paged allocator's "
        "clear() seeds free pages 1..num_pages: page 0 is the padded slot's), §2.4 rule 1",
        expected=("refusal", "invariants", "write_targets", "pool_bytes", "agreement", "error"))
class ReleaseClearSeedsPageZero(SGLangMutant):
    """The release's ``SWATokenToKVPoolAllocator.clear()`` (run by the scheduler's cache flush)
    leaves the SWA allocator's page 0 in its free list: the next admission may take the dummy
    page."""

    build = "swafuzz.features.server_ops.sglang_mutants:ClearSeedsPageZeroEngine"


@mutant("release_swa_capacity_overstated", ("swa_short",), "spec §2.3 (alloc / alloc_extend "
        "fail, returning None, when either side lacks the tokens or pages, before taking any)",
        expected=("error", "refusal", "invariants"))
class ReleaseSwaCapacityOverstated(SGLangMutant):
    """The release's SWA allocator over-reports its free size, so the capacity check of
    ``alloc`` / ``alloc_extend`` lets an admission through that the SWA side cannot hold: the
    full side's slots are taken, then the SWA side's allocation fails mid-step."""

    build = "swafuzz.features.server_ops.sglang_mutants:SwaCapacityOverstatedEngine"
