"""Server mutants of the decode side of PD disaggregation: the release's own code with a bug put
back, patched while a ``server_pd_decode`` Case runs (the patches: :mod:`.sglang_server_mutants`,
which imports SGLang; this module does not). Each row's source names what it reverts.
"""

from __future__ import annotations

from swafuzz.targets.mutants import mutant

#: (name, patch in swafuzz.features.pd_decode.sglang_server_mutants, source)
_SERVER_MUTANTS = (
    ("server_pd_tail_short_by_a_page", "tail_short_by_a_page",
     "spec §9.15 (a window frontier inside the window leaves reads of SWA slot 0) in the "
     "release's DecodePreallocQueue._swa_tail_len (PR #28085's SWA tail pre-allocation): the "
     "window's start rounded up to a page, the tail a page short of the window"),
    ("server_pd_tail_prealloc_off", "tail_prealloc_off",
     "spec §2.3 (alloc_extend_swa_tail: the PD decode pre-allocation maps only the window's "
     "tail) and sgl-project/sglang PR #25805 (the head's mapping reset): the release's "
     "DecodePreallocQueue._uses_swa_tail_prealloc off, so the whole prompt gets SWA slots and "
     "the head keeps a mapping"),
    ("server_pd_swa_pages_untranslated", "swa_pages_untranslated",
     "spec §2.2 (the full->SWA translation) in the release's "
     "SWATokenToKVPoolAllocator.translate_swa_indices_for_transfer (the SWA state of a PD "
     "transfer goes through translate_loc_from_full_to_swa, sgl-project/sglang PR #36730): "
     "the window's full slots sent to the prefill as SWA pages untranslated"),
)
for _name, _patch, _source in _SERVER_MUTANTS:
    mutant(_name, level="server", kinds=("server_pd_decode",),
           patch=f"swafuzz.features.pd_decode.sglang_server_mutants:{_patch}", source=_source)
