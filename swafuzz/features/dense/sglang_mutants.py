"""The engines of the dense feature's release mutants (imports SGLang: loaded only when one is
built; registered in :mod:`swafuzz.features.dense.mutants`)."""

from __future__ import annotations

from swafuzz.targets.sglang.allocator import SGLangAllocator
from swafuzz.targets.sglang.engine import SGLangEngine


class _SegmentKeepsMapping(SGLangAllocator):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        real = self.real
        shipped = real.free_swa_segment

        def free_swa_segment(free_index, *, start_pos):
            """The shipped segment free, with the mapping entries it cleared put back."""
            m = real.full_to_swa_index_mapping
            idx = free_index.long()
            kept = m[idx].clone()
            shipped(free_index, start_pos=start_pos)
            m[idx] = kept

        real.free_swa_segment = free_swa_segment


class SegmentFreeKeepsMappingEngine(SGLangEngine):
    """The release's eviction path with the segment free that keeps ``M``."""

    allocator_cls = _SegmentKeepsMapping
