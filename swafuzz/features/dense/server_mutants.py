"""Server mutants of the core path: patches of the release's pipeline code (``--level server
--server-mutant NAME``, ``swafuzz zoo --level server``), declared here without SGLang, patched in
:mod:`swafuzz.targets.sglang.pipeline.mutants` / ``.graph``. Only server-level Cases reach these
hops (the component engine builds no ScheduleBatch).
"""

from __future__ import annotations

from swafuzz.targets.mutants import mutant

_D, _DM, _G = ("server_decode",), ("server_decode", "server_mixed"), ("server_graph",)
#: (name, kinds, patch in swafuzz.targets.sglang.pipeline, source)
_SERVER_MUTANTS = (
    ("server_decode_stale_loc", _D, "mutants:decode_stale_out_cache_loc",
     "spec §9.3 (equal-length stale cache), in the release's ScheduleBatch.prepare_for_decode"),
    ("server_evict_in_window", _DM, "mutants:evict_frontier_one_ahead",
     "spec §9.15 (eviction frontier), in the release's ScheduleBatch._evict_swa"),
    ("server_decode_leaks_slot", _D, "mutants:decode_leaks_a_slot",
     "spec §9 (a slot leaked: allocated and never freed), in the release's decode allocation "
     "(alloc_for_decode, from ScheduleBatch.prepare_for_decode)"),
    ("server_swa_offset_rotated", _DM, "mutants:swa_offset_rotated",
     "spec §4 (an SWA slot keeps its full slot's page offset), in the release's "
     "SWATokenToKVPoolAllocator.set_full_to_swa_mapping"),
    ("server_graph_stale_tail", _G, "graph:stale_out_cache_loc_tail",
     "spec §9.5 (padded rows not steered to the dummy slot, PR #24743), in the release's decode "
     "graph runner's replay preparation (load_batch; 0.5.12 replay_prepare)"),
    ("server_graph_seq_lens_pad_zero", _G, "graph:seq_lens_pad_zero",
     "spec §5.1 (padded rows' seq_lens hold the backend's fill value, 1 for DSV4), in the "
     "release's decode graph runner's replay preparation"),
    ("server_graph_req_rows_tail_kept", _G, "graph:req_pool_indices_tail_kept",
     "spec §5.1 ('older versions: req_pool_indices tail not reset'; the buffer registry's "
     "PaddingPolicy.ZERO), in the release's decode graph runner's replay preparation: padded "
     "rows keep the previous replay's request rows"),
    ("server_graph_positions_tail_kept", _G, "graph:positions_tail_kept",
     "spec §5.1 (padded rows at position 0; the buffer registry's PaddingPolicy.ZERO for "
     "positions), in the release's decode graph runner's replay preparation: padded rows keep "
     "the previous replay's positions"),
    ("server_req_rows_from_zero", _G, "mutants:req_rows_from_zero",
     "spec additions §2.1 (ReqToTokenPool's row 0 is the padding row padded graph rows name; "
     "free rows start at 1), in the release's ReqToTokenPool.__init__"),
    ("server_abort_mid_chunk_leaks", ("server_chunked",), "mutants:abort_mid_chunk_not_released",
     "PR #1858 (chunked prefill leak), PR #10871 (request row left allocated), issue #38981 "
     "(abort mid-prefill on the hybrid SWA cache's free path), in the release's "
     "release_kv_cache: a request aborted while its prompt is chunked is not released"),
    ("server_graph_largest_bucket_eager", _G, "mutants:graph_largest_bucket_eager",
     "spec §5.1 (a DECODE runs the smallest captured bucket holding it), in the release's decode "
     "graph runner's can-run decision (can_run_graph; 0.5.12 can_run): off by one at the "
     "largest bucket"),
    ("server_retract_keeps_none", _DM, "mutants:retract_keeps_none",
     "the release's ScheduleBatch.retract_decode without its guard 'Always keep at least one "
     "request' (a lone running request retracted: an empty batch), reached as under the "
     "scheduler's SGLANG_TEST_RETRACT mode (update_running_batch retracts before every DECODE)"),
)
for _name, _kinds, _patch, _source in _SERVER_MUTANTS:
    mutant(_name, level="server", kinds=_kinds, patch=f"swafuzz.targets.sglang.pipeline.{_patch}",
           source=_source)
