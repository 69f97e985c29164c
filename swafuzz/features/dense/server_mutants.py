"""Server mutants of the core path at server level: patches of the release's own pipeline code
(``swafuzz run --level server --server-mutant NAME``, ``swafuzz zoo --level server``), declared
here (this module imports nothing of SGLang); the patches live in
:mod:`swafuzz.targets.sglang.pipeline.mutants` and :mod:`~swafuzz.targets.sglang.pipeline.graph`
(speculative decoding's: ``features/spec_decode/server_mutants.py``). Component-level Cases
never run these hops (the component engine builds no ScheduleBatch), so only server-level Cases
can kill them.
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
