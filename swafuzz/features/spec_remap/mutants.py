"""Mutant of the mapping re-registration between speculative forwards (feature ``spec_remap``; spec
§2.1, §2.8, §9.16; sglang PR #25889): the re-registration after a HiCache load-back reaches the
target pool but not the draft's, which keeps translating through its old mapping.
"""

from __future__ import annotations

from swafuzz.targets.allocator import SWAAllocator
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _RebuildingAllocator(SWAAllocator):
    def rebuild_mapping(self):
        self.mapping = self.mapping.clone()
        return self.mapping


@mutant("remap_skips_draft_pool", ("spec_remap",),
        "spec §9.16 (draft/target mapping divergence), §2.1 (draft and target share M), §2.8 "
        "(re-registration after a HiCache load-back, sglang PR #25889)",
        expected=("write_targets", "pool_bytes", "invariants", "capture_freeze", "agreement"))
class RemapSkipsDraftPool(UnifiedEngine):
    """After a remap only the target pool is registered with the rebuilt mapping: the draft
    model's stores translate new tokens through the stale one."""

    allocator_cls = _RebuildingAllocator

    def mapping_consumers(self):
        return [self.target_pool]
