"""Speculative decoding's rows of the server-level hop table added this far (hook
``sglang.server_hops``; plain data, printed by ``swafuzz list --target sglang``): ``(ROWS,
OLDER)``, rows as :data:`swafuzz.targets.sglang.pipeline.hops.HOPS` and the 0.5.12 column as its
``OLDER_SHAPE``. The spec-v2 iteration's own rows (reserve, draft, verify prep, accept, draft
extend) are the core table's.
"""

ROWS = (
    ("speculative decoding: verify graph runner (DecodeCudaGraphRunner in TARGET_VERIFY: "
     "can_run_graph, load_batch)", "real",
     "with decode graphs (kind server_spec_graph, pipeline/spec_graph.py): the target's graph "
     "runner captured in TARGET_VERIFY mode (num_draft_tokens rows a request), installed as the "
     "model runner's decode_cuda_graph_runner, so the release's eagle_prepare_for_verify asks "
     "its can_run_graph and runs its load_batch: the bucket, the buffer registry's fill_from "
     "with its padding policies, the replay view, the DSV4 backend's TARGET_VERIFY "
     "init_forward_metadata_out_graph (Raw verify metadata; its capture-time prep once per "
     "size). The bucket's rows of out_cache_loc / positions / seq_lens / req_pool_indices go "
     "to the oracle (verify_graph) and are the batch the component engine's verify graph "
     "replays (tape / cudagraph executors). Modelled as for decode graphs: the runner and its "
     "backend without constructors (they capture on a GPU), capture and graph.replay()"),
    ("speculative decoding: the draft's graph runners (EAGLEDraftCudaGraphRunner, "
     "EAGLEDraftExtendCudaGraphRunner)", "not driven",
     "under decode graphs the target verify replays through the release's runner (above); "
     "the draft's steps - 1 decode forwards and its draft extend still run eager: their "
     "runners' replay preparation is not built at server level yet"),
    ("speculative decoding: draft tree (speculative_eagle_topk > 1)", "refused",
     "the release refuses it for DeepSeek-V4, whose SWA pool this level drives: its argument "
     "hook asserts EAGLE topk == 1, the DSV4 attention backend's constructor asserts MTP topk "
     "in (0, 1), and the spec-v2 worker's chain sampler asserts topk == 1; refused naming "
     "config.speculative_eagle_topk (the release's own message in tests/server/"
     "test_server_spec.py)"),
    ("speculative decoding on attention-DP ranks (prepare_mlp_sync_batch over TARGET_VERIFY / "
     "DRAFT_EXTEND_V2)", "refused",
     "the ranks' MLP sync runs on the DPSync worker processes, whose ServerArgs and model "
     "stand-in carry no speculative algorithm and whose rank inputs are IDLE / DECODE / EXTEND "
     "batches; a spec-v2 iteration's verify and draft-extend padding (num_tokens_per_req = "
     "num_draft_tokens, the spec DP coordination) needs those workers started with a "
     "speculative ServerArgs: not built; refused naming config.speculative_algorithm"),
    ("DSpark at server level (DSparkWorkerV2) and the per-request ring's window eviction "
     "(free_swa_segment's ring guard)", "not driven",
     "the ring allocator (SWATokenToKVPoolAllocator with kvcache.swa_req_ring_size) is built "
     "only for the DSpark draft's pool (uses_draft_swa_ring: encoder replay on a non-HIP "
     "build) or the HIP unified-KV pool (is_unified_kv_triton), and its rows are written only "
     "by DSpark's TargetHiddenKvInjector and draft block; DSparkWorkerV2's constructor needs "
     "the target worker's loaded model (lm_head, embed_tokens, "
     "set_dspark_target_hidden_projector), a draft checkpoint's config "
     "(parse_dflash_draft_config) and CUDA events / side streams (its verify-ready event, the "
     "deferred commit's streams), and its draft sampler's kernels are Triton on CUDA tensors. "
     "No CPU path: the ring and DSpark draft block run at component level (features ring, "
     "ring_draft), whose allocator evicts through free_swa (its own ring guard), not "
     "free_swa_segment"),
)

_NO_SPEC_V2 = ("refused", "no spec-v2 EAGLE worker: a Case with a speculative_algorithm is "
               "refused by the target's argument check, naming the field")
#: 0.5.12 has no spec-v2 worker; DSpark's row is as on 0.5.23 (not driven)
OLDER = {row[0]: _NO_SPEC_V2 for row in ROWS if row[0].startswith("speculative decoding")}

HOPS = (ROWS, OLDER)
