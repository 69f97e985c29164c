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

#: the target verify's graph runner (kind server_spec_graph): the release's DecodeCudaGraphRunner
#: in TARGET_VERIFY mode, patched as the decode one (swafuzz.targets.sglang.pipeline.graph)
_GRAPH = "swafuzz.targets.sglang.pipeline.graph"
_VERIFY_GRAPH_MUTANTS = (
    ("server_spec_verify_stale_tail", "stale_out_cache_loc_tail",
     "spec §9.5 (padded rows not steered to the dummy slot, PR #24743), in the release's target "
     "verify graph runner's load_batch (called by eagle_prepare_for_verify): a verify padded to "
     "its bucket keeps the previous replay's out_cache_loc in its padded rows"),
    ("server_spec_verify_seq_lens_pad_zero", "seq_lens_pad_zero",
     "spec §5.1 (padded rows' seq_lens hold the backend's fill value, 1 for DSV4), in the "
     "release's target verify graph runner's load_batch"),
    ("server_spec_verify_req_rows_tail_kept", "req_pool_indices_tail_kept",
     "spec §5.1 (the buffer registry's PaddingPolicy.ZERO for req_pool_indices), in the "
     "release's target verify graph runner's load_batch: padded rows keep the previous "
     "replay's request rows"),
)
for _name, _attr, _source in _VERIFY_GRAPH_MUTANTS:
    mutant(_name, level="server", kinds=("server_spec_graph",), patch=f"{_GRAPH}:{_attr}",
           source=_source)
