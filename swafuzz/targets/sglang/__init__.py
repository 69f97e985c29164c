"""The ``sglang`` target: SGLang's own allocator, DSV4 pool translation, store path, resolver and
in-graph metadata stamp, run under the harness in place of the engine model's twins.

This package is imported only when the target is requested (``targets.get_target("sglang")``),
so swafuzz works without SGLang installed. Importing :mod:`swafuzz.targets.sglang.engine`
imports SGLang; :func:`release` only reads the installed distribution's metadata.

Supported releases: the range :data:`SUPPORTED_RANGE` (0.5.12 .. 0.5.23, both ends included).
The adapter is chosen by feature, not by version pin: :mod:`swafuzz.targets.sglang.features`
inspects the imported release (module paths, attributes, signatures) and picks the adapter
family (0.5.12-style store-path ``cached_loc`` or the resolver ``get_swa_out_cache_loc`` of
0.5.13+) and each seam, and refuses what the release lacks with a
:class:`~swafuzz.targets.TargetUnavailable` naming the missing module or attribute.
:data:`VERIFIED` lists the releases whose adapter tests and campaigns were run; another release
inside the range runs with the same feature detection and the Observation names the nearest
verified release (``sglang 0.5.18 (adapter 0.5.20)``). A release outside the range (a newer
one, a checkout numbered otherwise) is refused naming the range (CLI exit 2), unless
``SWAFUZZ_SGLANG_ADAPTER`` names the verified release whose adapter label to use for it (an
explicit, recorded choice: the Observation then says ``sglang <version> (adapter <release>)``).
:func:`release_plan` prints, per release, what the adapter does there (``swafuzz list --target
sglang`` shows it under the table).

What runs real and what stays modelled, per release: :data:`TABLE` (printed by
``swafuzz list --target sglang``, :func:`swafuzz.targets.sglang.matrix.table_text`).
:func:`swafuzz.targets.sglang.engine.probe` imports the adapter and runs one tiny Case.

Which scenario kinds and features the target runs on which release is not listed here: each
feature record says it (``since["sglang"]``, :mod:`swafuzz.features`), and the registered
factory with its hooks (:mod:`swafuzz.targets.sglang.target`) answers ``supports`` from the
records and the installed release (``swafuzz list --features`` prints every release's answer).
"""

from __future__ import annotations

import importlib.metadata
import os
import re

from swafuzz.targets.protocol import TargetUnavailable

#: The releases the target accepts without ``SWAFUZZ_SGLANG_ADAPTER``: every version from the
#: first to the last, inclusive (compared numerically on the first three components).
SUPPORTED_RANGE = ("0.5.12", "0.5.23")
#: Releases verified (adapter tests and a campaign run in their environment), oldest first.
#: 0.5.12: the pool's layer-keyed cached translation (``cached_loc``) on the store path;
#: 0.5.16 .. 0.5.23: the resolver ``get_swa_out_cache_loc`` and the in-graph
#: ``swa_out_cache_loc`` stamp (0.5.20: ring; 0.5.21: request window and late-layer tail).
VERIFIED = ("0.5.12", "0.5.16", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
#: kept for callers that listed the adapters: the verified releases
SUPPORTED = VERIFIED
ADAPTER_ENV = "SWAFUZZ_SGLANG_ADAPTER"

#: (component, 0.5.12, 0.5.23, why). "real": SGLang's code executes; "modelled": swafuzz's
#: engine model runs it; "absent": the release has no such code on the SWA write path;
#: "refused" (per-release answers of :mod:`targets.sglang.matrix` only): the release has the
#: code but the adapter does not drive that release's form of it, so the kind is refused.
TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("ForwardMode", "real", "real",
     "the release's member of the same name is handed to its code (values differ)"),
    ("allocator (alloc, alloc_extend, alloc_decode, free, free_swa, free_full)", "real", "real",
     "SWATokenToKVPoolAllocator on CPU tensors, built around the DSV4 pool it registers M "
     "into. Page size > 1: 0.5.23 on CPU selects its own torch reference allocators "
     "(alloc_extend_naive / alloc_decode_naive); 0.5.12 has Triton kernels only, which fail "
     "in the interpreter, so its alloc_extend_naive replaces alloc_extend_kernel and decodes "
     "go through alloc_extend (0.5.12 has no naive alloc_decode); free_full is 0.5.23 only"),
    ("full->SWA mapping M", "real", "real",
     "the allocator's int64 tensor with its -1 sentinel; target and draft pools register it"),
    ("DSV4 pool: register_mapping, translation", "real", "real",
     "DeepSeekV4TokenToKVPool methods on an instance built without __init__ (the constructor "
     "needs server-global state and allocates compressed, indexer and state pools)"),
    ("DSV4 pool: layer-keyed cached_loc", "real", "absent",
     "0.5.12 set_swa_key_buffer_radix_fused: recomputed at the pool's start_layer"),
    ("backend store_cache", "real", "real",
     "DeepseekV4AttnBackend.store_cache on an instance built without __init__"),
    ("resolver get_swa_out_cache_loc", "absent", "real",
     "IDLE / request-window / late-layer-tail / cached / fresh-translation branches (J, I, W, "
     "T, C, F), all reached: the request-window and tail Cases (issue 12, "
     "features/request_window/sglang.py) drive I (activate_idle), W and T through the release's "
     "store_cache"),
    ("in-graph stamp (init_forward_metadata_in_graph)", "absent", "real",
     "stamps swa_out_cache_loc (multi-step per-step slice included) into the harness's "
     "metadata through a DSV4Metadata view with no compressed layers; 0.5.12's store reads "
     "out_cache_loc instead"),
    ("eager / out-graph metadata init, copy/assign (other modes)",
     "modelled", "modelled",
     "the real builders make page tables, compression/indexer metadata and FlashMLA plans that "
     "need CUDA, a req_to_token table and page sizes that are multiples of 128; the engine "
     "model runs them (spec §4.2-§4.4). 0.5.23's draft-extend prep is real (see the rows "
     "below); 0.5.12's draft-extend builder is its prefill builder, whose metadata carries no "
     "SWA write location (its store_cache translates forward_batch.out_cache_loc)"),
    ("graph runners, DP padding", "modelled", "modelled",
     "decode/verify, draft-extend and multi-step runners need a model runner; swafuzz's run "
     "under tape (CPU) or CUDA graphs"),
    ("SWA KV buffers", "modelled", "modelled",
     "swafuzz's redzoned buffers: opaque [pages+1, P, row] rows (pool layout \"rows\"), or, "
     "with pool layout \"dsv4\", the release's V4 page layout ([pages+1, ceil(584*P/576)*576] "
     "uint8: 576-byte fp8/bf16 data rows, then 8-byte UE8M0 scale groups, then canary pads), "
     "built by swafuzz with the pool's geometry (the release's constructor needs server state)"),
    ("request window: window_layout (torch branch), RequestWindow reset / activate / "
     "activate_idle / buffer / commit", "absent", "real",
     "0.5.12 has no request window (first in 0.5.21): Cases with pool.request_window are "
     "refused with TargetUnavailable. 0.5.23: the torch branch every CPU/HIP device takes, and "
     "the RequestWindow class on swafuzz buffers; its history length (the constant 128) is "
     "scaled to the Case's pool.window by defaulting window_layout's window argument"),
    ("request window kernels: build_window_layout, copy_packed_rows, commit_packed_rows",
     "absent", "modelled",
     "Triton, CUDA only (the CUDA branch of window_layout is not taken on CPU); copy and "
     "commit are replaced in the module's namespace by row copies with the contract of "
     "addendum §2.2 (commit: masked rows to req * capacity + pos % capacity, tags = pos)"),
    ("DECODE graphs under a request window (decode bucket: Raw metadata, in-graph layout one "
     "group per row, padded rows slot 0, IDLE replay commits slot 0, W7)", "absent", "real",
     "0.5.12 has no request window: kind window_graphs is refused there (first in 0.5.21). "
     "0.5.23 (features/window_graphs/sglang.py): the decode runner's buffer registry "
     "(build_decode_registry, fill_from: req / positions / locations ZERO, seq_lens FILL_SENTINEL "
     "1 = get_cuda_graph_seq_len_fill_value), build_replay_fb_view, "
     "init_forward_metadata_out_graph for the "
     "DECODE_OR_IDLE bucket at capture and before every replay (IDLE substitution, "
     "init_forward_metadata_decode -> DSV4RawDecodeMetadata, replay_cuda_graph_metadata_from, "
     "Raw copy_ into the captured metadata), and inside the captured function "
     "init_forward_metadata_in_graph -> make_forward_metadata_from_raw_decode -> "
     "make_core_attn_metadata (torch build_page_table_positions, window_layout with "
     "num_groups=None, torch branch), the resolver's W branch through store_cache, RequestWindow "
     "activate / buffer / commit, on_after_cuda_graph_warmup, model_capture_mode while "
     "capturing. Modelled: the runner (DecodeCudaGraphRunner needs a model runner: bucket "
     "choice, lazy capture on first use on a graph backend in its constructor state, the capture "
     "batch, zero live out_cache_loc), _create_flashmla_metadata (None: flash_mla is CUDA-only), "
     "a mask-free commit_packed_rows inside the graph, a zero req_to_token table. Eager forwards "
     "end with the release's _activate_request_window. Known: ledger "
     "window-a5-mtp-idle-after-graph-replay (A5 on the release's code)"),
    ("breakable prefill graphs under a request window (admit / extend exec graph: padded "
     "layout, live-row mask, in-place refresh, W7)", "absent", "real",
     "0.5.12 has none (0.5.21/0.5.22 reject prefill graphs with encoder replay; first in "
     "0.5.23): kind prefill_graphs is refused there. 0.5.23 (features/prefill_graphs/sglang.py): "
     "expand_prefill_causally (padding rows repeat the last request, seq 1), window_layout with "
     "num_groups = min(S + 1, T) and padded_rows = T over the live rows (torch branch), "
     "DSV4AttnMetadata.refresh_for_breakable_cuda_graph_replay_ -> WindowLayout.copy_ on the "
     "bucket's captured metadata (a stand-in record holding the layout), RequestWindow and the "
     "resolver's W branch through store_cache in the captured segments (model_capture_mode "
     "set while capturing). Modelled: the runner (PrefillCudaGraphRunner needs a model runner): "
     "capture batch, one captured segment per layer and the eager commit break, bucket choice, "
     "padding rows' floors"),
    ("late-layer tail: late_layer_tail_layout, LateLayerTail, DSV4Metadata.late_layer_tail",
     "absent", "real",
     "the release's layout function (per-request last min(W, n) rows, floors) and records; "
     "_build_late_layer_tail_metadata and enter/exit_late_layer_tail need a ForwardBatch with "
     "DP/CP state and are modelled (a swap of forward_metadata); 0.5.12 has no tail"),
    ("late-layer tail under graphs: enter/exit_late_layer_tail, prefill-graph LateLayerTail "
     "(capacity buffer, real_rows_count)", "absent", "real",
     "0.5.23 (features/tail_graphs/sglang.py): the release's enter_late_layer_tail / "
     "exit_late_layer_tail (forward_metadata swap, saved non-padded counts, real_rows_count) on "
     "the adapter's backend instance, its capacity-sized LateLayerTail record and resolver; "
     "0.5.12 has no tail (kind tail_graphs refused: first in 0.5.22)"),
    ("late-layer tail under graphs: DecoderReplayTail / RowBucketGraphRunner, prefill-graph "
     "buffer refill", "absent", "modelled",
     "CUDA only (_flatten_state asserts CUDA tensors, capture reads torch.cuda.mem_get_info, "
     "the store break needs a piecewise forward context): the bucket choice, static K rows, "
     "the store break's slice to the real rows and the IDLE rank's commit guard are the engine "
     "model's (features/tail_graphs/engine.py); the refill of the persistent buffers lives in "
     "_build_late_layer_tail_metadata(for_prefill_graph=True), which also needs "
     "init_forward_metadata_prefill (FlashMLA plans, a model runner): modelled"),
    ("encoder SWA replay fold (fold_encoder_swa_replay)", "absent", "modelled",
     "fold_encoder_swa_replay itself needs a ScheduleBatch and a model runner; its pieces run "
     "real on 0.5.23 (_reset_windows_and_collect_hits, _fold_batch: see the row 'encoder replay "
     "fold and separate forward' below), the engine model only calls them in order"),
    ("store kernel", "modelled", "modelled",
     "pool layout \"rows\": swafuzz's store writes the rows at exactly the locations SGLang's "
     "code hands its pool's store (SGLang's CUDA JIT store needs a GPU)"),
    ("store kernel, pool layout dsv4 (Triton V4 store)", "real", "real",
     "the release's Triton V4-layout store quantizes and scatters (targets/sglang/store.py): "
     "0.5.12 quant_to_nope_fp8_rope_bf16_pack_triton + SetKAndS.triton, 0.5.23 "
     "triton_fused_store_flashmla, at the locations SGLang's code passes; the CUDA JIT store "
     "(the NVIDIA default, eps 1e-4 instead of 1e-8) is not run. On CPU the Triton "
     "interpreter's fp32->fp8e4nv cast is replaced by a round-to-nearest-even one (the "
     "interpreter's own rounds ties away, loses carries and truncates subnormals)"),
    ("rejected draft tokens after verify (verify accept)", "real", "real",
     "the release's allocator free() of the rejected slots past the last accepted token's "
     "page, called as 0.5.12's EAGLE v1 EagleVerifyInput.verify does (chain drafts, "
     "align_evict_mask_to_page_size); which slots to free is modelled from the Case. 0.5.23 "
     "runs spec v2 only, which over-allocates and frees at request release instead: the same "
     "allocator calls, a schedule this harness does not model"),
    ("prefix sharing (admit prefix_rid / prefix_len)", "modelled", "modelled",
     "the radix tree's lock references are the adapter's page holders; the release's "
     "allocator allocates the new tokens (alloc_extend with the prefix as prefix_lens / "
     "last_loc, alloc at page size 1) and frees only pages no live request holds "
     "(free / free_swa / free_full); SWARadixCache itself is not built"),
    ("ring: allocator accounting (pool.swa_ring > 0)", "absent", "real",
     "0.5.12 has no per-request SWA ring (swa_req_ring_size is 0.5.20+): ring Cases are refused "
     "there (swafuzz run --scenario ring: exit 2; a ring Case: TargetUnavailable). 0.5.23: "
     "SWATokenToKVPoolAllocator in ring mode around a DSV4 pool with swa_req_ring_size = "
     "pool.swa_ring and a real ReqToTokenPool (slot 0 padding, tail-first slots): alloc / "
     "alloc_extend / alloc_decode, free_swa (no-op), free_full, available_size, "
     "swa_available_size (features/ring/sglang.py)"),
    ("ring: write rows (swa_ring_rows, -1 window rule)", "absent", "real",
     "TargetHiddenKvInjector._ring_inject_loc (swa_ring_rows inside) stamped as "
     "swa_out_cache_loc after the release's in-graph op; its per-row state slot and final "
     "position come from the harness's slot/length tables (modelled stand-ins for "
     "req_pool_indices / seq_lens); which forwards stamp is modelled (upstream: DSpark draft "
     "blocks and the target-hidden injection)"),
    ("ring: resolver under a ring", "absent", "real",
     "get_swa_out_cache_loc as shipped: C returns the stamped rows, a miss falls to F "
     "(translation through M, never written under a ring); the -1 skip of the fused norm-rope "
     "store is modelled (swafuzz's store)"),
    ("draft-extend metadata prep (out-graph bucket, eager)",
     "modelled", "real",
     "0.5.23 (targets/sglang/metadata.py): the release's init_forward_metadata_out_graph for the "
     "bucket (no locations at capture, IDLE substitution, 0-padding to the bucket's rows) and "
     "its init_forward_metadata_draft_extend with _fill_cuda_graph_swa_out_cache_loc (PR "
     "#34890: buffer refilled, tail zeroed) or the eager-miss translation; eager: the same "
     "builder, then the real in-graph stamp. Adapter seams: make_core_attn_metadata returns the "
     "harness's core metadata around the release's out_loc (page table and SWA page indices "
     "are read-side, not built), no c128 MTP state, the bucket's persistent metadata kept by "
     "the harness (same check/copy/assign rules). As driven here the release never stores "
     "through that buffer: capture hands the prep no locations and eager re-stamps"),
    ("multi-step draft per-step write targets", "modelled", "real",
     "0.5.23: sglang.srt.speculative.eagle_utils.per_step_draft_out_cache_loc gives the "
     "engine's per-step locations (the EAGLE worker's side, eager and graph) as it gives the "
     "backend's in-graph stamp; 0.5.12 has no such helper (its store translates whatever "
     "out_cache_loc the worker hands it): the model's layout"),
    ("target verify under a request window (rows, layout num_groups = bs, W resolver, "
     "commit)", "absent", "real",
     "0.5.23 (features/dspark/sglang.py): the backend's expand_extend_with_same_length gives "
     "the rows' slots and positions, window_layout (torch) the layout with num_groups = bs, "
     "the real resolver (W) and RequestWindow.commit the rest; kind dspark_verify, eager only. "
     "0.5.12 has no window: the kind is refused"),
    ("early verify metadata (_install_early_verify_metadata, DSpark target verify graph)",
     "absent", "modelled",
     "its full build (make_forward_metadata_from_raw_verify) runs CUDA metadata kernels and "
     "it is reached only from the target verify graph's out-graph prep (CUDA, DSpark, no DP "
     "attention): the adapter sets swa_out_cache_loc = None under the window, the value the "
     "installer leaves. The verify graph (kind dspark_verify_graph: early metadata built on "
     "the host and copied into the captured metadata before every replay) runs on unified "
     "only; a window Case with graph verify steps under a graph executor raises "
     "TargetUnavailable on sglang, and the kind is left out of sglang runs"),
    ("DP-padded EXTEND under a request window (MLP-sync MAX_LEN padding rows)", "absent",
     "real",
     "0.5.23: the eager EXTEND's expand_prefill_casually (torch) with padded_num_tokens, the "
     "floors through _pad_rows and window_layout with num_groups = requests and no "
     "padded_rows (no request_window_live_rows on the eager path); the padding itself "
     "(prepare_mlp_sync_batch) is modelled: full location 0, position 0. Kind "
     "window_dp_extend; as driven, the release joins the padding rows to the last real run "
     "(docs/notes/issue12-dspark.md)"),
    ("ring: DSpark draft block rows (draft_block)", "absent", "real",
     "0.5.23 (features/ring_draft/sglang.py): DeepseekV4AttnBackend._dspark_seq_lens_casual "
     "(build_block_seq_lens_causal, torch branch on CPU) and _dspark_swa_ring_out_cache_loc "
     "(swa_ring_rows) stamp the block's rows, read back through the release's store_cache and "
     "resolver (cached branch). Modelled: the per-request slots (upstream "
     "req_pool_indices.repeat_interleave(block_size); the harness's ring tables), the block's "
     "forward batch, and its graph runner (the model's TARGET_VERIFY runner on the draft "
     "model; the release's helpers run inside the tape-captured graph). 0.5.12: no ring, no "
     "DSpark. Not run with a ring in 0.5.23 and refused by the Case: multi-step draft decode "
     "(DSpark runs none) and the draft-extend SWA buffer (filled through M)"),
)


#: issue 12 (features/tail_prefix/sglang.py): prefix hits under a tail, replay, compressors
TABLE += (
    ("prefix hit under a late-layer tail: swa_reprefill_tail_tokens, _req_radix_key", "absent",
     "real",
     "0.5.23: UnifiedRadixCache.swa_reprefill_tail_tokens on a cache built without __init__ "
     "(SWA component with the Case's window, decoder SWA bounded replay iff the pool has a "
     "tail, no session lending a record) and mem_cache/common.py _req_radix_key, whose key "
     "limit caps the hit; the tree's page-aligned match of the capped key is modelled (the Case "
     "names the matched length). 0.5.12 has no tail (kind tail_prefix refused)"),
    ("encoder replay fold and separate forward: _reset_windows_and_collect_hits, _fold_batch, "
     "_build_replay_batch", "absent", "real",
     "0.5.23 srt/model_executor/encoder_swa_replay.py on a ScheduleBatch stand-in (the fields "
     "those functions read) and a req_to_token table from the allocator's tokens: the reset of "
     "the real RequestWindow, the folded out_cache_loc / row_floor / keep_rows, the separate "
     "forward's out_cache_loc = req_to_token[slot, P-r:P]; replay_len's constant 128 is scaled "
     "to pool.window; the separate forward's per-run floor (set inside make_core_attn_metadata, "
     "CUDA only) is modelled; fold_encoder_swa_replay / run_encoder_swa_replay themselves need "
     "a model runner. 0.5.12 has no encoder replay"),
    ("compressor write locations: _compressor_out_loc, c4 out loc", "absent", "real",
     "0.5.23 DeepseekV4AttnBackend._compressor_out_loc (static) and the c4 output of "
     "kernels/ops/attention/dsv4/metadata_kernel.py init_compression_metadata (Triton: the "
     "interpreter with TRITON_INTERPRET=1 or a GPU; otherwise the model's formula); whether the "
     "ratio-1/2 source compressors run (forward_low_ratio_sources) is a modelled flag"),
)
def version_key(v: str) -> tuple[int, int, int]:
    """``"0.5.21"`` -> ``(0, 5, 21)``: the first three numeric components of a version string
    (``0.5.21.post1``, ``0.5.22rc1``, ``0.5.23.dev3+g1234`` count as their release); raises
    ValueError when it has fewer than three."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", v.strip())
    if m is None:
        raise ValueError(f"not a release version: {v!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def in_range(v: str) -> bool:
    """Whether version ``v`` lies in :data:`SUPPORTED_RANGE` (unparseable: False)."""
    try:
        k = version_key(v)
    except ValueError:
        return False
    return version_key(SUPPORTED_RANGE[0]) <= k <= version_key(SUPPORTED_RANGE[1])


def nearest_verified(v: str) -> str:
    """The verified release closest to ``v`` (a verified release itself: ``v`` unchanged in
    its release form); a tie goes to the newer one. ``v`` must lie in the range."""
    k = version_key(v)
    for r in VERIFIED:
        if version_key(r) == k:
            return r

    def dist(r: str) -> tuple[int, int]:
        rk = version_key(r)
        d = abs((rk[0] - k[0]) * 10**6 + (rk[1] - k[1]) * 10**3 + (rk[2] - k[2]))
        return d, -VERIFIED.index(r)
    return min(VERIFIED, key=dist)


def installed_version() -> str | None:
    """The installed ``sglang`` distribution's version, or None (does not import sglang)."""
    try:
        return importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        return None


def release() -> tuple[str, str]:
    """``(installed version, adapter release)``: the adapter release is the installed one when
    it is verified, else the nearest verified release (inside :data:`SUPPORTED_RANGE`), else
    the one ``SWAFUZZ_SGLANG_ADAPTER`` names. Raises :class:`TargetUnavailable` naming the
    range when sglang is missing, or outside the range with no adapter named."""
    v = installed_version()
    rng = f"{SUPPORTED_RANGE[0]} .. {SUPPORTED_RANGE[1]}"
    verified = ", ".join(VERIFIED)
    if v is None:
        raise TargetUnavailable(
            "target sglang: the sglang package is not installed (supported releases: "
            f"{rng}; verified: {verified}); install one with scripts/upstream-env VERSION or "
            "`pip install swafuzz[sglang]`")
    if v in VERIFIED:
        return v, v
    forced = os.environ.get(ADAPTER_ENV)
    if forced:
        if forced not in VERIFIED:
            raise TargetUnavailable(
                f"{ADAPTER_ENV}={forced!r}: not a verified release; choose one of: {verified}")
        return v, forced
    if in_range(v):
        return v, nearest_verified(v)
    raise TargetUnavailable(
        f"target sglang: installed sglang {v} is outside the supported range {rng} (verified: "
        f"{verified}); set {ADAPTER_ENV} to a verified release to drive it with that "
        "release's adapter label (features are still detected)")
