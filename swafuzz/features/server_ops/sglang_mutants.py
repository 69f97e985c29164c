"""The engines of the ``server_ops`` release mutants (imports SGLang: loaded only when one is
built; registered in :mod:`swafuzz.features.server_ops.mutants`)."""

from __future__ import annotations

import torch

from swafuzz.targets.sglang.allocator import SGLangAllocator
from swafuzz.targets.sglang.engine import SGLangEngine


class _ClearSeedsPageZero(SGLangAllocator):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        real = self.real
        shipped = real.clear

        def clear():
            """The shipped clear(), then page 0 put at the head of the SWA free list."""
            shipped()
            swa = real.swa_attn_allocator
            swa.free_pages = torch.cat([torch.zeros(1, dtype=swa.free_pages.dtype,
                                                    device=swa.free_pages.device),
                                        swa.free_pages])

        real.clear = clear


class ClearSeedsPageZeroEngine(SGLangEngine):
    """The release's flush with the clear() that frees page 0 on the SWA side."""

    allocator_cls = _ClearSeedsPageZero


class _SwaCapacityOverstated(SGLangAllocator):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        swa = self.real.swa_attn_allocator
        shipped = swa.available_size
        swa.available_size = lambda: shipped() + 1024 * swa.page_size


class SwaCapacityOverstatedEngine(SGLangEngine):
    """The release's allocator whose SWA side over-reports its free size."""

    allocator_cls = _SwaCapacityOverstated
