"""Mutant of the post-verify free of rejected draft tokens (feature ``verify_reject``; sglang
issue #27789, spec §2.3, §9.15); reached only by the ``verify_reject`` kind (verify with
``accept``)."""

from __future__ import annotations

from swafuzz.targets.allocator import SWAAllocator
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _RejectKeepsSWA(SWAAllocator):
    def free_rejected(self, full_slots):
        self.full_free.update({f // self.page_size for f in full_slots})


@mutant("verify_reject_keeps_swa", ("verify_reject",), "sglang issue #27789 (SWA pool leak "
        "with speculative decoding and page_size > 1 on DSV4); post-verify free of rejected "
        "draft tokens, sglang 0.5.12 EagleVerifyInput.verify; spec §2.3 free = full + free_swa, "
        "§9.15", expected=("invariants",))
class VerifyRejectKeepsSWA(UnifiedEngine):
    """The post-verify free of rejected draft slots releases their full pages but not their
    SWA pages; ``M`` still maps them."""

    allocator_cls = _RejectKeepsSWA
