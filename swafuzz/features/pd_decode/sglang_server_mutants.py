"""The decode side of PD disaggregation's server mutants as patches of the release's own code
(imports SGLang; the declarations and sources: :mod:`.server_mutants`). Each wraps the release's
function and puts one upstream bug back; nothing of it is copied."""

from __future__ import annotations

from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang.environ import set_attr

from sglang.srt.disaggregation import decode as disagg_decode  # isort: skip
from swafuzz.targets.sglang.features import SWATokenToKVPoolAllocator  # isort: skip


def swa_pages_untranslated():
    """``translate_swa_indices_for_transfer`` hands back the full slots it was given: the SWA
    pages the prefill writes the window's KV into are the full side's page numbers."""
    cls = SWATokenToKVPoolAllocator  # mem_cache.allocator.swa, or 0.5.12's swa_memory_pool
    if not hasattr(cls, "translate_swa_indices_for_transfer"):  # 0.5.19: the shared translation
        raise TargetUnavailable(
            "server mutant swa_pages_untranslated: this release's decode side translates the "
            "transfer's SWA pages through translate_loc_from_full_to_swa, shared with every "
            "store; the transfer's own translate_swa_indices_for_transfer is 0.5.20+")

    def translate_swa_indices_for_transfer(self, kv_indices):
        return kv_indices

    return set_attr(cls, "translate_swa_indices_for_transfer",
                    translate_swa_indices_for_transfer)


def tail_short_by_a_page():
    """Spec §9.15 (a window frontier inside the window leaves reads of SWA slot 0), in the
    release's ``DecodePreallocQueue._swa_tail_len``: the window's start rounded up to a page
    instead of down, so the SWA tail misses up to a page of the window's oldest tokens."""
    real = disagg_decode.DecodePreallocQueue._swa_tail_len

    def _swa_tail_len(self, seq_len: int) -> int:
        n = real(self, seq_len)
        ps = self.token_to_kv_pool_allocator.page_size
        return n - ps if n > ps else n

    return set_attr(disagg_decode.DecodePreallocQueue, "_swa_tail_len", _swa_tail_len)


def tail_prealloc_off():
    """``DecodePreallocQueue._uses_swa_tail_prealloc`` answers no: the whole prompt gets SWA
    slots (the release's fallback for allocators without ``alloc_extend_swa_tail``), the head
    keeps its SWA slots and mapping, and the pre-allocation takes the SWA pages the tail path
    exists to save."""
    return set_attr(disagg_decode.DecodePreallocQueue, "_uses_swa_tail_prealloc",
                    lambda self: False)
