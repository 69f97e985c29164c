"""The server-level hop table of the ``sglang`` target (imports no SGLang).

Each hop of a scheduling step, in order, with what runs: ``real`` (the release's code),
``modelled`` (swafuzz's stand-in, with the reason), ``absent`` (the release has no such hop) or
``refused`` (the pipeline refuses Cases that need it), per release shape (:data:`OLDER_SHAPE`).
Printed by ``swafuzz list --target sglang`` beside the component table.
"""

from __future__ import annotations

import textwrap

from swafuzz import features as registry

#: (hop, 0.5.23, why)
HOPS: tuple[tuple[str, str, str], ...] = (
    ("server arguments installed", "real",
     "the release's ServerArgs built from the Case's config and installed as the process's "
     "runtime context (RuntimeContext.set_server_args: its config bags); the resolution "
     "pipeline (resolve_once) is not run, it reads a checkpoint's config"),
    ("argument validation", "modelled",
     "swafuzz.server.run.release_refusal: the seam for the release's own ServerArgs checks "
     "(built by helper srvargs); without it every config the Case validator accepts runs"),
    ("batch choice (Scheduler.get_next_batch_to_run, PrefillAdder)", "modelled",
     "needs a server process (ZMQ, tokenizer, model worker): swafuzz.server.timeline chooses "
     "the batch and the adder's chunks (a prompt truncated to the chunked_prefill_size tokens "
     "left, continued first in the next prefill; extend_end set as the adder sets it); the "
     "adder's budget admits the longest head of the offered requests whose tokens, a page "
     "each on top, fit the release allocator's free full and SWA tokens (an observed choice "
     "the oracle follows; none while nothing runs: out of scope)"),
    ("decode capacity gate and retraction (check_decode_mem, retract_decode)", "real",
     "before every DECODE; the requests the release retracts (an observed choice the oracle "
     "checks and follows) go back to waiting and are prefilled again, prompt and generated "
     "tokens, through the release's Req; one that keeps nothing: no DECODE that step, as the "
     "scheduler's update_running_batch; a retraction that aborts: out of scope"),
    ("Req, init_next_round_input", "real", "the release's Req with its prefix match against "
     "the tree cache"),
    ("tree cache (radix cache disabled)", "real",
     "UnifiedRadixCache(disable=True) with FULL and SWA components, as the release's "
     "registry builds it for --disable-radix-cache on a hybrid SWA model"),
    ("ScheduleBatch.init_new, prepare_for_extend, merge_batch, filter_batch, "
     "prepare_for_decode", "real",
     "the release's scheduler batch, its alloc_for_extend / alloc_for_decode (SWA eviction "
     "maybe_evict_swa included) through the release's SWATokenToKVPoolAllocator, "
     "ReqToTokenPool and SamplingBatchInfo"),
    ("chunked prefill: checkpoint_kv_cache, resume, filter_batch", "real",
     "as the scheduler does after each partial chunk: the stash (checkpoint_kv_cache), the "
     "next chunk's init_next_round_input, the chunked request kept out of the running batch"),
    ("request release (release_kv_cache)", "real",
     "the release's free path through the tree cache when a request finishes or aborts"),
    ("ForwardBatch.init_new", "real",
     "the release's ForwardBatch with its KVLocPlan bound by the release's KVIndexTranslator "
     "over the DSV4 pool; a model-runner stand-in holds exactly the attributes it reads"),
    ("model-runner dispatch (ModelRunner.forward, _forward_raw, EagerRunner.execute)", "real",
     "every forward (pipeline/dispatch.py): the release's ModelRunner.forward on an instance "
     "built without its constructor, _forward_raw's graph decision (the CPU device's mode "
     "check: DECODE only), the decode graph runner's execute (load_batch, then the replay "
     "seam) or _prepare_eager_forward_batch and the release's EagerRunner (its constructor, "
     "warm-up off): _execute_decode / _execute_extend / _execute_idle with load_batch through "
     "its eager buffer registry; a data-parallel attention rank without a batch runs the "
     "release's idle batch (init_new with no requests, prepare_for_idle) through it, padded or not, and "
     "_execute_idle's metadata reset. Modelled: the model (the stub's stores), the backend's "
     "init_forward_metadata (the engine's: the release's asserts page_size % 128 == 0) and "
     "the graph replay; a padded batch is padded here by the release's _pad_inputs_to_size to "
     "the sync ranks' counts (their mode relabel taken from them). Not with the request "
     "window on (its hop stores through the window's own path)"),
    ("MLP sync, data-parallel / attention-TP padding", "real",
     "for attention TP 2 (tp_size 2, moe_dense_tp_size 1, no DP attention: both ranks hold "
     "the batch): per forward the release's token-count gather over gloo, "
     "prepare_mlp_sync_batch (ceil_align to attn_tp_size) and _pad_inputs_to_size on 2 "
     "processes (the hook sglang.server_pad over DPSync, one per process), rank 0's "
     "padded out_cache_loc / positions / seq_lens handed to the store; one rank (tp_size 1): "
     "no padding, as the release; data-parallel attention with 2 ranks (tp_size 2): one "
     "pipeline per rank in this process (its own scheduler state, pools, tree cache, window), "
     "every step's rank batches (IDLE where a rank has none) padded together on the 2 "
     "processes holding the Case's arguments and environment (hook sglang.server_ranks), "
     "each rank's own padded batch handed to its store (a DECODE the release relabels EXTEND "
     "as that EXTEND)"),
    ("graph runner can-run decision (DecodeCudaGraphRunner.can_run_graph)", "real",
     "the release's method on a runner built without its constructor (which captures on a "
     "GPU), holding the attributes it reads for a one-rank, non-speculative decode server"),
    ("graph runner replay preparation (DecodeCudaGraphRunner.load_batch)", "real",
     "for every DECODE the can-run decision replays (pipeline/graph.py): the release's "
     "load_batch on the deciding runner, holding buffers made by the release's "
     "DecodeInputBuffers.create and build_decode_registry on the engine's device: the bucket "
     "(_pad_to_bucket), the registry's fill_from with its padding policies, the replay view "
     "(build_replay_fb_view); the bucket's padded rows of out_cache_loc / seq_lens / "
     "positions / req_pool_indices go to the oracle (graph_fill) and are the batch the "
     "replay stores from. Modelled: the buffers are private to the runner (the constructor's "
     "share_buffers into the process-wide pool is not run)"),
    ("attention backend replay metadata prep (init_forward_metadata_out_graph)", "real",
     "called by load_batch on the replay view: the DECODE bucket's Raw decode metadata (the "
     "live locations padded with 0 to the bucket, the padded lengths and request rows) "
     "copied into the bucket's captured one, which the release's capture-time prep "
     "(in_capture=True, once per captured size at start-up) made; on a DeepseekV4AttnBackend "
     "built without its constructor over the engine's DSV4 pool (graph state by its "
     "init_cuda_graph_state). That metadata goes to the oracle (graph_fill)"),
    ("attention backend in-graph metadata (init_forward_metadata_in_graph)", "real",
     "after each fill, on the host (a GPU runs it inside the replay) over the captured batch "
     "(the buffers' bucket rows): the Raw -> full upgrade make_forward_metadata_from_raw_decode "
     "(make_core_attn_metadata's torch page-table and causal SWA index builders over the "
     "release's req_to_token and mapping) and the SWA write-location stamp; its write locations "
     "and read indices go to the oracle (graph_fill). Modelled: the FlashMLA plan "
     "(_create_flashmla_metadata asks the flash_mla CUDA extension: None here); the stores "
     "still resolve through the harness's metadata and the release's stamp on it (below)"),
    ("graph capture and replay (graph.replay)", "modelled",
     "capture and replay need a GPU: the component engine's decode graph runner captures and "
     "replays on the harness's executor (tape on CPU: recorded device work only), its static "
     "buffers loaded with the release's filled rows unchanged; inside it the harness's "
     "metadata and the release's in-graph stamp on it (init_forward_metadata_in_graph)"),
    ("attention backend eager metadata init (init_forward_metadata)", "modelled",
     "the release's _build_forward_metadata asserts page_size % 128 == 0 before building "
     "anything (AssertionError for the Cases' pages 1, 2, 4) and then builds FlashMLA plans "
     "(CUDA): the component engine's model (as the component table)"),
    ("per-layer store (store_cache, resolver, pool translation)", "real",
     "DeepseekV4AttnBackend.store_cache with its resolver and the DSV4 pool's translation, "
     "fed by the ForwardBatch the release built; the stub model does no arithmetic and "
     "stores deterministic rows per layer"),
    ("store kernel, SWA buffers", "modelled",
     "swafuzz's redzoned buffers and store (the release's CUDA JIT store needs a GPU)"),
    ("speculative decoding: decode reserve (eagle_prepare_for_decode)", "real",
     "EAGLE, topk 1, num_draft_tokens = steps + 1, one rank, eager or with decode graphs "
     "(others refused by field name; DeepSeek-V4.1 refuses EAGLE: the release's checks run as "
     "DeepSeek-V4): "
     "per DECODE the release's spec-v2 reserve (get_alloc_reserve_per_decode, "
     "page_aligned_decode_alloc_lens, alloc_for_spec_decode with its Triton "
     "assign_req_to_token_pool in the interpreter, kv_allocated_len). The interpreter's scalar "
     "__index__ is given .item() for the run (numpy 2.4 refuses int() of a one-element "
     "array); the kernels are unchanged"),
    ("speculative decoding: draft (prepare_for_draft, DRAFT decode forwards)", "real",
     "the release's prepare_for_draft: its Triton assign_draft_cache_locs_contiguous gathers "
     "the draft-write locations, the KVIndexTranslator plans the iteration's window (KVLocPlan) "
     "that verify and draft extend write; the stub draft model's steps - 1 decode forwards "
     "store each step's column (per_step_draft_out_cache_loc) through the engine's "
     "multi-step backend. Modelled: the draft tokens (the Case's stub ids: the draft model's "
     "logits and top-k need its weights) and the tree build (topk 1: a chain)"),
    ("speculative decoding: verify prep (eagle_prepare_for_verify, TARGET_VERIFY)", "real",
     "an EagleVerifyInput with the draft tokens and the draft's plan (prepared_out_cache_loc) "
     "handed to the release's eagle_prepare_for_verify: ForwardBatch.init_new in TARGET_VERIFY "
     "over the planned window; the stub model stores every target layer through store_cache"),
    ("speculative decoding: accept (eagle_sample, _resolve_spec_v2_tokens)", "real",
     "eagle_sample is modelled (no logits): the Case's per-verify accept lengths; the "
     "release's _resolve_spec_v2_tokens commits them (kv_committed_len); seq_lens = verify "
     "seq_lens + accept_lens as run_eagle_verify's unfused path and the scheduler's "
     "non-overlap tail (modelled: those two lines, inline in larger methods)"),
    ("speculative decoding: draft extend prep (prepare_for_draft_extend)", "real",
     "an EagleDraftExtendInput handed to the release's prepare_for_draft_extend "
     "(DRAFT_EXTEND_V2 over the verify window, ForwardBatch.init_new for a draft-runner "
     "stand-in); the stub draft model stores its layer through store_cache. The draft extend "
     "after prefill (_draft_extend_for_prefill) and the draft input carried between "
     "iterations (hidden states, top-k) are not driven: no draft model"),
    ("PD disaggregation: decode-side takeover (DecodePreallocQueue._pre_alloc)", "real",
     "tests/server/test_server_takeover.py (pipeline/disagg.py: _pre_alloc on a run's "
     "allocator after live requests) and, as a server kind, the opt-in decode-side kind "
     "(disaggregation_mode decode; the decode side's own rows below): the release's prealloc "
     "queue, its fake receiver, a modelled KV transfer, the PREBUILT batch, the decodes"),
    ("data-parallel prefill-graph vote and decode->extend conversion "
     "(_local_prefill_cuda_graph_vote, maybe_convert_decode_to_extend, "
     "convert_decode_to_extend)", "real",
     "with cuda_graph_backend_prefill breakable (0.5.22, 0.5.23): "
     "each DPSync rank votes with the release's PrefillCudaGraphRunner.can_replay_locally "
     "(built without its constructor from the published captured token counts), the gather "
     "min-reduces the votes and pads MAX_LEN to the bucket; a DECODE rank beside an "
     "extending peer runs the release's conversion on its own ScheduleBatch, whose "
     "ForwardBatch.init_new (extend and prefix lengths, positions) the oracle judges "
     "before the ranks' padded rows go to the store"),
)


#: hops of a deployment's SWA route the server level does not drive yet (hop, status, why);
#: ``swafuzz run --level server --coverage`` shows them never called (docs/COVERAGE.md)
NOT_DRIVEN: tuple[tuple[str, str, str], ...] = (
    ("prefill graph replay (PrefillCudaGraphRunner.can_run_graph / execute) and attention TP "
     "inside a data-parallel rank (4 TP ranks over 2 data-parallel ranks)", "not driven",
     "the replay captures CUDA graphs (no CPU path): the ranks vote on the release's runner "
     "and a converted batch runs the eager extend; 4 TP ranks over 2 data-parallel ranks "
     "are refused (config.tp_size): "
     "the DPSync ranks start 4 gloo processes, but the per-rank pipeline and the oracle hold "
     "one attention-TP rank per data-parallel rank"),
    ("disaggregated decode's KV transfer engine (Mooncake / NIXL / Mori send and receive, "
     "the transfer queue's pop_transferred over metadata buffers)", "not driven",
     "the transfer needs a prefill server and a transfer engine (RDMA); the decode side runs "
     "with the release's fake receiver and the transfer's writes modelled (the decode "
     "side's own rows)"),
)


#: the same hops on a release of the global-server-args shape (0.5.12; which shape a release has
#: is detected, :mod:`.seams`): hop -> (real / modelled / absent, why); a hop not named here is
#: as on 0.5.23
OLDER_SHAPE: dict[str, tuple[str, str]] = {
    "server arguments installed": (
        "real", "the release's ServerArgs installed by its set_global_server_args_for_scheduler; "
        "the Case's cuda_graph_bs_decode is handed over as its cuda_graph_bs; the V4.1 "
        "bounded-replay flags are absent: a Case that sets one is refused naming it"),
    "tree cache (radix cache disabled)": (
        "real", "SWAChunkCache, or SWARadixCache(disable=True) without chunked prefill: the "
        "classes are the release's, the choice follows its Scheduler.init_cache_with_memory_pool "
        "rule (the scheduler is not built)"),
    "ScheduleBatch.init_new, prepare_for_extend, merge_batch, filter_batch, "
    "prepare_for_decode": (
        "real", "as on 0.5.23; the sampled tokens handed to prepare_for_decode in the batch's "
        "output_ids as its scheduler does; SWA eviction every max(page, window x "
        "SGLANG_SWA_EVICTION_INTERVAL_MULTIPLIER) decodes, keeping a page more than the window "
        "(the Case's SGLANG_SWA_EVICTION_INTERVAL is not read by this release); where the "
        "release's support_triton says yes on a CPU (no platform check), its Triton "
        "write_req_to_token_pool_triton is replaced by its own torch branch (modelled: the "
        "Triton interpreter cannot load pointers from a uint64 tensor)"),
    "chunked prefill: checkpoint_kv_cache, resume, filter_batch": (
        "real", "no checkpoint_kv_cache: the scheduler's stash_chunked_request "
        "(maybe_cache_unfinished_req with chunked=True); the adder's truncation of fill_ids and "
        "extend length (modelled, as on 0.5.23)"),
    "model-runner dispatch (ModelRunner.forward, _forward_raw, EagerRunner.execute)": (
        "modelled", "this release's ModelRunner.forward_decode / forward_extend / forward_idle "
        "are not driven: the pipeline hands each batch to the component engine directly"),
    "ForwardBatch.init_new": (
        "real", "from the batch's get_model_worker_batch (ModelWorkerBatch); KVLocPlan and "
        "KVIndexTranslator absent: the release translates out_cache_loc to SWA slots through "
        "the allocator's translate_loc_from_full_to_swa; positions by its compute_position_torch "
        "(the Triton twin: as above); its expert-parallel world size asked of a one-rank group "
        "stand-in (modelled: no process group in this process)"),
    "MLP sync, data-parallel / attention-TP padding": (
        "refused", "the padding hop drives the release's MLP-sync bring-up from its runtime "
        "context, which this release lacks: a Case with attention TP above 1 is refused by the "
        "target's argument check, naming it (the release's padding itself runs beside the "
        "pipeline in the data-parallel feature's tests, where its shape allows)"),
    "graph runner can-run decision (DecodeCudaGraphRunner.can_run_graph)": (
        "real", "CudaGraphRunner.can_run on a runner built without its constructor"),
    "graph runner replay preparation (DecodeCudaGraphRunner.load_batch)": (
        "real", "CudaGraphRunner.replay_prepare on the deciding runner, its buffers made by its "
        "DecodeInputBuffers.create: the bucket (bisect over capture_bs), "
        "populate_from_forward_batch (on padding it zeroes out_cache_loc and fills seq_lens; "
        "positions and req_pool_indices keep the previous replay's rows: not checked, the "
        "spec does not fix them); no buffer registry, no replay view"),
    "attention backend replay metadata prep (init_forward_metadata_out_graph)": (
        "real", "init_forward_metadata_replay_cuda_graph (the forward batch handed over "
        "through _replay_forward_batch), copying into the metadata the release's "
        "init_forward_metadata_capture_cuda_graph made per captured size at start-up"),
    "attention backend in-graph metadata (init_forward_metadata_in_graph)": (
        "modelled", "not run on the host: this release's upgrade builds the c4 indexer and "
        "c4 / c128 compressor metadata unconditionally (init_forward_metadata_indexer, "
        "create_paged_compressor_data) for compressed layers this harness does not build, and "
        "its in-graph init stamps no SWA write location (its store translates out_cache_loc)"),
    "attention backend eager metadata init (init_forward_metadata)": (
        "modelled", "its init_forward_metadata asserts swa_page_size % SWA_WINDOW == 0 and "
        "page_size % 128 == 0 first (AssertionError for the Cases' pages): the engine's model"),
}

_NO_SPEC_V2 = ("refused", "no spec-v2 EAGLE worker (sglang.srt.speculative."
               "eagle_worker_common): a Case with a speculative_algorithm is refused by the "
               "target's argument check, naming the field")
OLDER_SHAPE.update({hop: _NO_SPEC_V2 for hop, _s, _w in HOPS
                    if hop.startswith("speculative decoding:")})

def server_mutant_sources() -> dict[str, str]:
    """Every server mutant (the features' ``mutant(level="server")``), name -> source."""
    # by name, as the records reach code: the mutant registry registers targets (which import
    # this module through the sglang target)
    return {n: m.source for n, m in registry.load("swafuzz.targets.mutants:load_server")().items()}


def hop_text() -> str:
    """The hop table as text: per hop its answer on 0.5.23 and name, then why (wrapped)."""
    lines = ["server-level pipeline (swafuzz run --target sglang --level server), per "
             "scheduling step; columns: 0.5.23 and 0.5.22 (runtime-context shape), 0.5.12 "
             "(global-server-args shape; its reason where it differs):"]
    older = dict(OLDER_SHAPE)
    hops = list(HOPS) + list(NOT_DRIVEN)
    for extra_rows, extra_older in registry.hooks("sglang.server_hops"):
        hops += extra_rows
        older.update(extra_older)
    for hop, status, why in hops:
        old, old_why = older.get(hop, (status, ""))
        lines.append(f"  {status:<9} {old:<9} {hop}")
        lines += textwrap.wrap(why, 100, initial_indent=" " * 22, subsequent_indent=" " * 22)
        lines += textwrap.wrap(old_why, 100, initial_indent=" " * 20 + "0.5.12: ",
                               subsequent_indent=" " * 28)
    lines += ["server mutants (swafuzz run --level server --server-mutant NAME):"]
    lines += [f"  {n}: {src}" for n, src in server_mutant_sources().items()]
    return "\n".join(lines)
