"""The request window's rows of the server-level hop table (hook ``sglang.server_hops``; plain
data, printed by ``swafuzz list --target sglang``): ``(ROWS, OLDER)``, rows as
:data:`swafuzz.targets.sglang.pipeline.hops.HOPS` and the 0.5.12 column as its ``OLDER_SHAPE``.
0.5.22 (the same column as 0.5.23): no fold, its ``run_encoder_swa_replay`` resets the slots,
and no ``_activate_request_window`` (the resolver's W branch activates the layout).
"""

ROWS = (
    ("encoder replay: the worker's slot resets (fold_encoder_swa_replay)", "real",
     "with enable_encoder_swa_bounded_replay, before ForwardBatch.init_new of an EXTEND the "
     "release's own fold (run_encoder_swa_replay where the backend does not fold) over a "
     "worker stand-in holding the real RequestWindow: the slots of new and retracted requests "
     "(encoder_swa_reset from prepare_for_extend) are reset; a prefix hit (radix cache) that "
     "would fold rows: refused, the radix cache is not driven"),
    ("request window metadata (eager EXTEND / DECODE)", "modelled",
     "make_core_attn_metadata needs CUDA: the component adapter's window path calls the "
     "release's window_layout with the arguments the eager init passes (EXTEND: "
     "expand_prefill_casually with padded_num_tokens = out_cache_loc rows, num_groups = "
     "requests, no live rows; DECODE: one group per row, padding rows in slot 0), then the "
     "release's _activate_request_window; request slots are the release's req_pool_indices"),
    ("request window store and commit", "real",
     "per layer the release's resolver (get_swa_out_cache_loc, W branch) and store_cache into "
     "the workspace RequestWindow.buffer picks (its history copy and STRICT history "
     "invariant), then RequestWindow.commit; the copy / commit Triton kernels are modelled "
     "(CUDA-only; row copies with their contract). The allocator stays the SWA allocator "
     "(the release builds a full-only one under encoder replay; the window's stores never "
     "use the SWA half). Decode graphs with it: refused"),
    ("late-layer tail (enable_decoder_swa_bounded_replay)", "real",
     "with encoder replay on one rank: an EXTEND's layers from model.late_layer_start run the "
     "rows of the release's late_layer_tail_layout (its floor included) through their own "
     "window_layout, store and commit; enter / exit of the tail metadata are plain swaps "
     "(modelled, as at component level); the tail without encoder replay (paged SWA) or with "
     "attention TP > 1: refused"),
)

OLDER = {
    "encoder replay: the worker's slot resets (fold_encoder_swa_replay)": (
        "absent", "no V4.1 bounded-replay flags: a Case that sets one is refused naming it"),
    "request window metadata (eager EXTEND / DECODE)": ("absent", "as above"),
    "request window store and commit": ("absent", "as above"),
    "late-layer tail (enable_decoder_swa_bounded_replay)": ("absent", "as above"),
}

HOPS = (ROWS, OLDER)
