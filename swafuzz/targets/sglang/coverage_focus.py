"""The SGLang functions on the SWA path (imports no SGLang): what ``swafuzz run --coverage``
reports on by name for the ``sglang`` target (``coverage.json``'s ``focus``, the head of
``coverage.md``; the ``coverage_focus`` hook of :mod:`swafuzz.targets.sglang.target`).

Patterns ``module:qualname``, the qualname an ``fnmatch`` glob over coverage.py's function
names (``Class.method``); a release counts the functions it has that match (0.5.12 keeps the
SWA allocator in ``swa_memory_pool`` and the graph runner in ``cuda_graph_runner``, 0.5.23 in
``allocator.swa`` and ``runner.decode_cuda_graph_runner``); a pattern no function of the
release matches is listed as absent there. The list is the route a token's KV location takes
from the scheduler's batch to the SWA pool: the SWA pools and their allocator (allocation,
free, the full->SWA mapping), the request-to-token table, the translation (translator, plan),
the tree cache's SWA component and the release/free helpers, the scheduler batch's
preparation, ``ForwardBatch.init_new`` and the decode graph runner's replay preparation; less
the functions named ``!glob`` (host offload, sessions, other models' buffers, debugging), which
no SWA deployment's batch route reaches. Disaggregation (``*transfer*``, ``alloc_extend_swa_tail``)
and the per-request ring stay in: they are on the route of the deployments that use them.
"""

from __future__ import annotations

_MC = "sglang.srt.mem_cache."
_SB = "sglang.srt.managers.schedule_batch:ScheduleBatch."

FOCUS: tuple[str, ...] = (
    # the SWA pools, their allocator and the full->SWA mapping
    _MC + "swa_memory_pool:SWAKVPool.*",
    _MC + "swa_memory_pool:SWATokenToKVPoolAllocator.*",  # <= 0.5.1x: the allocator here
    _MC + "allocator.swa:SWATokenToKVPoolAllocator.*",  # 0.5.2x: its own module
    _MC + "base_swa_memory_pool:BaseSWAKVPool.*",
    _MC + "memory_pool:ReqToTokenPool.*",
    # the translation of full locations into the window's
    _MC + "kv_index_translator:KVIndexTranslator.*",
    _MC + "kv_loc_plan:*",
    # allocation and release around the tree cache
    _MC + "common:alloc_*", _MC + "allocation:alloc_*",  # 0.5.2x: allocation.py
    _MC + "allocation:_alloc_extend_*", _MC + "common:free_*", _MC + "common:release_kv_cache",
    _MC + "common:match_kv_cache", _MC + "common:checkpoint_kv_cache",
    _MC + "common:evict_from_tree_cache", _MC + "common:_evict_until_allocatable",
    _MC + "common:_release_overallocated_kv_indices",
    # the tree cache's SWA component (0.5.23: unified_cache.components.swa; 0.5.12:
    # unified_cache_components.swa_component) and the SWA radix cache of older releases
    _MC + "unified_cache.components.swa:*", _MC + "unified_cache_components.swa_component:*",
    _MC + "swa_radix_cache:SWARadixCache.*",
    # the scheduler batch
    "sglang.srt.managers.schedule_batch:Req.init_next_round_input",
    _SB + "init_new", _SB + "prepare_for_extend", _SB + "prepare_for_decode",
    _SB + "prepare_for_idle", _SB + "retract_decode", _SB + "check_decode_mem",
    _SB + "filter_batch", _SB + "merge_batch", _SB + "get_model_worker_batch",
    _SB + "convert_decode_to_extend",
    # the forward batch and the decode graph runner's replay preparation
    "sglang.srt.model_executor.forward_batch_info:ForwardBatch.init_new",
    "sglang.srt.model_executor.runner.decode_cuda_graph_runner:DecodeCudaGraphRunner."
    "can_run_graph",
    "sglang.srt.model_executor.runner.decode_cuda_graph_runner:DecodeCudaGraphRunner.load_batch",
    "sglang.srt.model_executor.runner.base_cuda_graph_runner:BaseCudaGraphRunner._pad_to_bucket",
    "sglang.srt.model_executor.cuda_graph_runner:CudaGraphRunner.can_run",  # 0.5.1x
    "sglang.srt.model_executor.cuda_graph_runner:CudaGraphRunner.replay_prepare",
    # off the route in every release: host offload (hierarchical cache, CPU copies, prefetch,
    # storage, external linkers), sessions, other models' buffers (MLA, indexer keys, scales)
    # and debugging; by the function's own name
    "!*cpu_copy*", "!*hicache*", "!*host*", "!*prefetch*", "!*storage*", "!*linker*",
    "!*session*", "!*mla*", "!*index_k*", "!*scale_buf*", "!debug_print",
)
