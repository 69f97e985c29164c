"""Server mutants of the core path and of speculative decoding at server level: patches of the
release's own pipeline code (``swafuzz run --level server --server-mutant NAME``, ``swafuzz zoo
--level server``), declared here (this module imports nothing of SGLang); the patches live in
:mod:`swafuzz.targets.sglang.pipeline.mutants`, :mod:`~swafuzz.targets.sglang.pipeline.graph`
and :mod:`~swafuzz.targets.sglang.pipeline.spec_mutants`. Component-level Cases never run these
hops (the component engine builds no ScheduleBatch), so only server-level Cases can kill them.
"""

from __future__ import annotations

from swafuzz.targets.mutants import mutant

_PIPE = "swafuzz.targets.sglang.pipeline"

mutant("server_decode_stale_loc", level="server", kinds=("server_decode",),
       patch=f"{_PIPE}.mutants:decode_stale_out_cache_loc",
       source="spec §9.3 (equal-length stale cache), in the release's "
              "ScheduleBatch.prepare_for_decode")
mutant("server_evict_in_window", level="server", kinds=("server_decode", "server_mixed"),
       patch=f"{_PIPE}.mutants:evict_frontier_one_ahead",
       source="spec §9.15 (eviction frontier), in the release's ScheduleBatch._evict_swa")
mutant("server_decode_leaks_slot", level="server", kinds=("server_decode",),
       patch=f"{_PIPE}.mutants:decode_leaks_a_slot",
       source="spec §9 (a slot leaked: allocated and never freed), in the release's decode "
              "allocation (alloc_for_decode, from ScheduleBatch.prepare_for_decode)")
mutant("server_swa_offset_rotated", level="server", kinds=("server_decode", "server_mixed"),
       patch=f"{_PIPE}.mutants:swa_offset_rotated",
       source="spec §4 (an SWA slot keeps its full slot's page offset), in the release's "
              "SWATokenToKVPoolAllocator.set_full_to_swa_mapping")
mutant("server_graph_stale_tail", level="server", kinds=("server_graph",),
       patch=f"{_PIPE}.graph:stale_out_cache_loc_tail",
       source="spec §9.5 (padded rows not steered to the dummy slot, PR #24743), in the "
              "release's decode graph runner's replay preparation (load_batch; 0.5.12 "
              "replay_prepare)")
mutant("server_graph_seq_lens_pad_zero", level="server", kinds=("server_graph",),
       patch=f"{_PIPE}.graph:seq_lens_pad_zero",
       source="spec §5.1 (padded rows' seq_lens hold the backend's fill value, 1 for DSV4), in "
              "the release's decode graph runner's replay preparation")
mutant("server_graph_largest_bucket_eager", level="server", kinds=("server_graph",),
       patch=f"{_PIPE}.mutants:graph_largest_bucket_eager",
       source="spec §5.1 (a DECODE runs the smallest captured bucket holding it), in the "
              "release's decode graph runner's can-run decision (can_run_graph; 0.5.12 "
              "can_run): off by one at the largest bucket")
mutant("server_retract_keeps_none", level="server", kinds=("server_decode", "server_mixed"),
       patch=f"{_PIPE}.mutants:retract_keeps_none",
       source="the release's ScheduleBatch.retract_decode without its guard 'Always keep at "
              "least one request' (a lone running request retracted: an empty batch), reached "
              "as under the scheduler's SGLANG_TEST_RETRACT mode (update_running_batch "
              "retracts before every DECODE)")

_SPEC = f"{_PIPE}.spec_mutants"
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
