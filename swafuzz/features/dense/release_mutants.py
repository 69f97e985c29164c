"""Mutants of the dense feature in the release's own code (``sglang`` target; the zoo runs them
where SGLang is installed: ``python -m swafuzz zoo --mutant NAME`` with the release's python).
Their engines live in :mod:`swafuzz.features.dense.sglang_mutants`, which imports the adapter."""

from __future__ import annotations

from swafuzz.targets.mutants import mutant
from swafuzz.targets.sglang.zoo import SGLangMutant


@mutant("segment_free_keeps_mapping", ("decode", "target_verify"),
        "spec §2.5 (window eviction: free the SWA side of tokens[evicted:frontier] and unmap "
        "them), §9.15 (unmapped in-window positions / eviction frontier; the segment free "
        "path of PR #38519)", expected=("invariants",))
class SegmentFreeKeepsMapping(SGLangMutant):
    """The release's ``SWATokenToKVPoolAllocator.free_swa_segment`` (the allocator's free on the
    scheduler's sliding-window eviction, 0.5.22+) hands the SWA pages back but leaves
    ``M[full]`` pointing at them: the evicted positions alias pages the next allocation takes.
    Only the release's eviction path reaches it (0.5.12's eviction calls ``free_swa``)."""

    build = "swafuzz.features.dense.sglang_mutants:SegmentFreeKeepsMappingEngine"
    needs = "SEGMENT_EVICT"
