"""Mutant of shared radix-cache prefixes (feature ``prefix_share``: ``admit`` with a prefix of a
live request; spec §9.15, PR #38519 / #36637, issue #9123); reached only by the
``prefix_share`` kind."""

from __future__ import annotations

from swafuzz.targets.allocator import SWAAllocator
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _FinishFreesShared(SWAAllocator):
    def pages_alone(self, rid, slots):
        return sorted({f // self.page_size for f in slots})


@mutant("finish_frees_shared_prefix", ("prefix_share",), "spec §9.15 (over-free of slots "
        "another owner still holds: PR #38519, PR #36637) and sglang issue #9123 (SWA pages "
        "recycled under a live reader); radix-cache lock references (SWARadixCache "
        "inc_lock_ref / dec_lock_ref)", expected=("invariants",))
class FinishFreesSharedPrefix(UnifiedEngine):
    """Finish frees every page of the request, shared prefix pages another live request still
    holds included: a use after free of a radix-cache prefix."""

    allocator_cls = _FinishFreesShared
