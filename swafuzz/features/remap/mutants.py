"""Mutant of the mapping rebuild after a HiCache load-back (feature ``remap``; spec §2.8, §4.2,
sglang PR #25889); reached only by the ``remap`` kind (the only kind with a ``remap`` step)."""

from __future__ import annotations

from swafuzz.targets.allocator import SWAAllocator
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _NewTensorRemapAllocator(SWAAllocator):
    def rebuild_mapping(self):
        self.mapping = self.mapping.clone()
        return self.mapping


@mutant("remap_new_tensor", ("remap",), "spec §2.8 (register_mapping after a HiCache "
        "load-back / commit, sglang PR #25889), §4.2 (graphs read the captured tensors)",
        expected=("capture_freeze", "write_targets", "pool_bytes", "agreement"))
class RemapNewTensor(UnifiedEngine):
    """HiCache load-back rebuilds ``M`` as a new tensor and re-registers the pools: graphs
    captured before keep reading the old one."""

    allocator_cls = _NewTensorRemapAllocator
