"""Server mutants of speculative decoding: patches of the release's spec-v2 code (``--level server
--server-mutant NAME``), declared here without SGLang, patched in
:mod:`swafuzz.features.spec_decode.sglang_server_mutants`; only ``server_spec`` Cases run them.
"""

from __future__ import annotations

from swafuzz.targets.mutants import mutant

_SPEC = "swafuzz.features.spec_decode.sglang_server_mutants"
_SPEC_MUTANTS = (
    ("server_spec_draft_one_ahead", "draft_locs_one_ahead",
     "spec §9.3 family (shifted draft write targets), in the release's prepare_for_draft "
     "(assign_draft_cache_locs_contiguous from seq_lens + 1)"),
    ("server_spec_draft_steps_unpermuted", "per_step_locs_unpermuted",
     "spec §9.3 family (draft write targets), in the release's per_step_draft_out_cache_loc "
     "(the per-step slices of the multi-step draft buffer, shared with the DSV4 backend) "
     "without its steps-major permute"),
    ("server_spec_verify_stale", "verify_keeps_previous_loc",
     "spec §9.3 (equal-length stale cache), in the release's eagle_prepare_for_verify"),
    ("server_spec_accept_frees", "accept_frees_rejected",
     "spec §9 (a slot freed twice): the v1 EAGLE accept's free of the rejected draft slots, in "
     "the release's spec-v2 _resolve_spec_v2_tokens, whose reserve still holds them"),
    ("server_spec_free_short", "overalloc_free_short",
     "spec v2 over-allocation free (PR #22373's path), in the release's "
     "mem_cache.common._release_overallocated_kv_indices: the reserved tail freed one slot "
     "short"),
    ("server_spec_commit_extra", "commit_one_more",
     "spec §9.3 family (committed length ahead of the accepted KV), in the release's "
     "_resolve_spec_v2_tokens"),
    ("server_spec_draft_dummy", "draft_extend_rejected_to_dummy",
     "spec §9 (draft tokens written to the dummy slot), in the release's "
     "prepare_for_draft_extend"),
    ("server_spec_reserve_single", "reserve_single",
     "the spec-v2 double-buffered decode reserve halved, in the release's "
     "eagle_prepare_for_decode (get_alloc_reserve_per_decode)"),
)
for _name, _attr, _source in _SPEC_MUTANTS:
    mutant(_name, level="server", kinds=("server_spec",), patch=f"{_SPEC}:{_attr}",
           source=_source)
