"""A DSpark draft block's eager forward through the release's own model-runner order (runs inside a
``sglang_sync`` worker; ledger entry ``ring-a4-resolver-fallback-dp-eager``, issue 18 item 3).

Question: does a DP-padded eager draft forward reach the ring resolver
(``DeepseekV4AttnBackend.get_swa_out_cache_loc``) with ``out_cache_loc`` padded *after* its
metadata (its stamped ``swa_out_cache_loc``) was built on the unpadded batch? Per step, release
code throughout: the gather (``sglang_sync_batch.gather``) as DECODE (or IDLE); the block's
``ForwardBatch`` as ``DraftBlockProposer._run_forward`` builds it, ``_fill_dp_moe_sync_metadata``
scaling the counts to draft tokens; ``ModelRunner._forward_raw`` on a draft-runner stand-in with
no decode graph runner (``EagerRunner``); ``init_forward_metadata``, whose
``_build_forward_metadata`` stand-in (:func:`draft_backend`) answers the block's
``init_forward_metadata_prefill`` with the first stamp alone (``expand_prefill_casually``,
``padded_num_tokens = out_cache_loc.shape[0]``), then ``init_forward_metadata_in_graph``'s ring
restamp over ``bs * block`` rows; per layer the resolver on that metadata, ``M`` answering -1.

Recorded: the order of padding and metadata init, the lengths each saw, the mode the padding left,
the resolver's branch per layer. Only a coordinated step (``DPSpecPrefillCoordinationPlan``)
carries ``is_extend_in_batch``; a dense draft (``moe_draft=False``) gets no MLP-sync counts.
:data:`MUTANTS` each undo one guard: ``pad_after_metadata`` (the A4 premise),
``coordination_keeps_max_len`` (MAX_LEN for a coordinated step, relabelled EXTEND, stamps
nothing), ``scatter_verify`` (``use_input_scattered`` pads a block's tokens, so the restamp is
short). Modelled: page tables, compression, indexer and FlashMLA metadata, the draft model's
arithmetic, ``_move_to_device``'s pinned copy.
"""

from __future__ import annotations

import types

import torch

from swafuzz.features.dp.sglang_sync_batch import dsv4_backend, gather, patched, schedule_batch

#: ring rows per request slot of the draft pool stand-in (the stamp's modulus)
RING = 8
LAYERS = 2


SLOTS = 16


def _core(stamp):
    """The block's core attention metadata stand-in: what the in-graph restamp and the resolver
    read and write (no page tables, no low-ratio indexers)."""
    return types.SimpleNamespace(swa_out_cache_loc=stamp, low_ratios=(), swa_page_indices=None,
                                 swa_topk_lengths=None)


def _stamp_prefill(be, log):
    """Answers the block's ``init_forward_metadata_prefill`` with the ring stamp (module doc 4)."""
    from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4AttnBackend as B
    from sglang.srt.layers.attention.deepseek_v4_backend import DSV4Metadata

    def prefill(**kw):
        loc = kw["out_cache_loc"]
        casual, req = B.expand_prefill_casually(
            be, num_tokens=kw["num_tokens"], seq_lens=kw["seq_lens_cpu"],
            extend_seq_lens=kw["extend_seq_lens_cpu"], req_pool_indices=kw["req_pool_indices"],
            padded_num_tokens=loc.shape[0], seq_lens_tensor=kw["seq_lens"],
            extend_seq_lens_tensor=kw["extend_seq_lens"], extend_start_loc=kw["extend_start_loc"])
        stamp = B._dspark_swa_ring_out_cache_loc(be, seq_lens_casual=casual,
                                                  req_pool_indices_repeated=req)
        log.append({"event": "block_metadata", "out_cache_loc": len(loc),
                    "prefill_stamp": len(stamp), "block_rows": int(kw["num_tokens"])})
        return DSV4Metadata(core_attn_metadata=_core(stamp), indexer_metadata=None)
    return prefill


def draft_backend(runner, log):
    """The release's DeepSeek-V4 backend (no ``__init__``) as the draft's: fill value, its
    ``init_forward_metadata`` (in-graph ring restamp included) and the resolver;
    ``_build_forward_metadata`` is the stand-in: a DSpark block to
    ``init_forward_metadata_dspark_draft_block``, any other mode (a relabelled block) to the prefill
    metadata, which stamps nothing on a ring pool without a request window."""
    from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4AttnBackend as B
    from sglang.srt.layers.attention.deepseek_v4_backend import (
        DSV4Metadata,
        _get_logical_forward_mode,
    )

    be = dsv4_backend(runner)
    d = be.__dict__
    d.update(draft_metadata_glued=False, device="cpu", pre_kv_store_hook=None, is_dspark_draft=True,
             page_size=256, mtp_enabled=False, topk=0, speculative_num_steps=1,
             trtllm_attn=False, _early_verify_metadata_ids=set(),
             cuda_int32_kwargs={"device": "cpu", "dtype": torch.int32})
    d["token_to_kv_pool"] = types.SimpleNamespace(
        request_window=None, swa_req_ring_size=RING,
        swa_valid_from=torch.zeros(SLOTS, dtype=torch.int64),
        translate_loc_from_full_to_swa=lambda loc: torch.full_like(loc, -1))
    d["_move_to_device"] = lambda x: torch.tensor(x, dtype=torch.int32)
    d["init_forward_metadata_prefill"] = _stamp_prefill(be, log)

    def build(fb):
        if not _get_logical_forward_mode(fb).is_target_verify():
            log.append({"event": "block_metadata", "out_cache_loc": len(fb.out_cache_loc),
                        "prefill_stamp": None, "block_rows": None})
            return DSV4Metadata(core_attn_metadata=_core(None), indexer_metadata=None)
        return B.init_forward_metadata_dspark_draft_block(
            be, max_seq_len=int(fb.seq_lens_cpu.max()), req_pool_indices=fb.req_pool_indices,
            seq_lens=fb.seq_lens.to(torch.int32), seq_lens_cpu=fb.seq_lens_cpu,
            out_cache_loc=fb.out_cache_loc, block_size=int(fb.spec_info.draft_token_num))
    d["_build_forward_metadata"] = build

    def init_forward_metadata(fb):
        B.init_forward_metadata(be, fb)
        stamp = be.forward_metadata.core_attn_metadata.swa_out_cache_loc
        log.append({"event": "metadata", "out_cache_loc": len(fb.out_cache_loc),
                    "stamp": None if stamp is None else len(stamp)})
    d["init_forward_metadata"] = init_forward_metadata
    d["resolve_prefill_shared_read_ends"] = lambda fb, num_qo_tokens: None
    return be


class _StubModel:
    """The draft model: no arithmetic; per layer the release's resolver, recorded."""

    shared_experts_config = None

    def __init__(self, be, log):
        self.be, self.log = be, log

    def forward(self, input_ids, positions, fb, **kw):
        from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4AttnBackend as B
        for layer in range(LAYERS):
            loc = B.get_swa_out_cache_loc(self.be, fb)
            stamp = self.be.forward_metadata.core_attn_metadata.swa_out_cache_loc
            self.log.append({"event": "store", "layer": layer, "out_cache_loc": len(fb.out_cache_loc),
                             "branch": "stamp" if loc is stamp else "translate",
                             "swa_loc": [int(x) for x in loc.tolist()]})
        return types.SimpleNamespace(next_token_logits=torch.zeros(fb.out_cache_loc.shape[0], 1),
                                     hidden_states=None)


def draft_runner(runner, log):
    """The draft worker's model-runner stand-in around the release's ``EagerRunner``."""
    from sglang.srt.model_executor.cuda_graph_buffer_registry import build_eager_registry
    from sglang.srt.model_executor.model_runner import ModelRunner
    from sglang.srt.model_executor.runner.base_runner import BaseRunner
    from sglang.srt.model_executor.runner.eager_runner import EagerRunner
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    r = types.SimpleNamespace(**vars(runner))
    r.is_draft_worker, r.spec_algorithm = True, SpeculativeAlgorithm.DSPARK
    r.decode_cuda_graph_runner = r.prefill_cuda_graph_runner = None
    r.req_to_token_pool, r.device_timer, r.support_pp, r.is_generation = None, None, False, True
    r.pp_group = types.SimpleNamespace(is_last_rank=True)
    r.attn_backend = draft_backend(r, log)
    r.model = _StubModel(r.attn_backend, log)
    for name in ("attn_tp_sequence_sharded", "_prepare_eager_forward_batch", "_pp_kwargs",
                 "_extend_forward_kwargs", "_maybe_execute_deferred_mamba_cow_and_clear"):
        setattr(r, name, types.MethodType(getattr(ModelRunner, name), r))
    eager = object.__new__(EagerRunner)
    BaseRunner.__init__(eager, r)
    eager._eager_registry = build_eager_registry(
        device="cpu", max_bs=16, max_num_token=256, cache_loc_dtype=torch.int64,
        enable_mamba_track=False, is_encoder_decoder=False, encoder_len_fill_value=0,
        encoder_lens_dtype=torch.int64)
    r.eager_runner = eager
    return r


def block_batch(rank_in: dict, sb, qtn: int, dp_moe_sync: bool):
    """The draft block's ForwardBatch as the release's proposer builds it, then its DP counts."""
    from sglang.srt.model_executor.forward_batch_info import (
        CaptureHiddenMode,
        ForwardBatch,
        ForwardMode,
    )
    from sglang.srt.speculative.draft_worker_common import make_draft_block_spec_info
    from sglang.srt.speculative.dspark_components.dspark_draft import DraftBlockProposer
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    seq = list(rank_in["seq_lens"])
    loc = list(rank_in["out_cache_loc"])
    i64 = dict(dtype=torch.int64)
    spec = make_draft_block_spec_info(draft_token_num=qtn, device="cpu")
    fb = ForwardBatch(
        forward_mode=ForwardMode.TARGET_VERIFY, batch_size=len(seq),
        input_ids=torch.zeros(len(loc), **i64), req_pool_indices=torch.arange(1, len(seq) + 1, **i64),
        seq_lens=torch.tensor(seq, **i64), out_cache_loc=torch.tensor(loc, **i64),
        seq_lens_sum=sum(seq) + qtn * len(seq), seq_lens_cpu=torch.tensor(seq, **i64),
        positions=torch.tensor([s + j for s in seq for j in range(qtn)], **i64),
        spec_algorithm=SpeculativeAlgorithm.DSPARK, spec_info=spec,
        capture_hidden_mode=CaptureHiddenMode.NULL)
    for name, value in (("can_run_decode_cuda_graph", False), ("is_extend_in_batch", False),
                        ("dp_spec_prefill_coordination_applied", False),
                        ("global_num_tokens", None), ("global_num_tokens_for_logprob", None)):
        if not hasattr(sb, name):  # the scheduler batch's defaults (ScheduleBatch fields)
            setattr(sb, name, value)
    proposer = types.SimpleNamespace(_dp_moe_sync=dp_moe_sync, _num_token_non_padded=None,
                                     _draft_block_spec_info=spec,
                                     draft_model_runner=types.SimpleNamespace(device="cpu"))
    DraftBlockProposer._fill_dp_moe_sync_metadata(proposer, fb, sb)
    return fb


#: changes to the release a draft-block step may carry (each undoes one guard)
MUTANTS = {
    "pad_after_metadata": "the eager padding moved after the metadata init (the A4 premise)",
    "coordination_keeps_max_len": "prepare_mlp_sync_batch without its coordinated-step "
                                  "SUM_LEN rule (the batch's coordination flag cleared)",
    "scatter_verify": "AttnTpContext.use_input_scattered without its TARGET_VERIFY exclusion "
                      "(a draft block's tokens padded to a multiple of tp_size, its batch size "
                      "kept)",
}


def _scatter_verify(real):
    """Release mutant ``scatter_verify``: the release's rule, read as if the batch were EXTEND."""
    def use(self, fb):
        if not fb.forward_mode.is_target_verify():
            return real(self, fb)
        mode = fb.forward_mode
        fb.forward_mode = type(mode).EXTEND
        try:
            return real(self, fb)
        finally:
            fb.forward_mode = mode
    return use


def run_draft_block(rank_in: dict, runner, opts: dict) -> dict:
    """:func:`draft_block_step` under ``opts["force_scatter"]`` and the ``scatter_verify``
    mutant (``sglang_sync_batch.patched``; the mutant undone afterwards)."""
    from sglang.srt.layers.layer_boundary.adapters.attention import AttnTpContext
    real = AttnTpContext.use_input_scattered
    if opts.get("mutant") == "scatter_verify":
        AttnTpContext.use_input_scattered = _scatter_verify(real)
    try:
        with patched(runner, bool(opts.get("force_scatter")), None):
            return draft_block_step(rank_in, runner, opts)
    finally:
        AttnTpContext.use_input_scattered = real


def draft_block_step(rank_in: dict, runner, opts: dict) -> dict:
    """One DSpark draft block on a decode rank (module docstring); extend and idle ranks only gather.
    ``opts``: ``qtn`` (tokens per request), ``coordinate`` (``DPSpecPrefillCoordinationPlan`` for the
    draft phase, as when a peer prefills; the env switch set for the gather only), ``moe_draft``
    (default True: ``dp_moe_sync`` under DP attention; False: a dense draft, never MLP-sync padded),
    ``mutant`` (None or one of MUTANTS)."""
    from sglang.srt.environ import envs
    from sglang.srt.model_executor.model_runner import ModelRunner
    from sglang.srt.runtime_context import get_parallel
    from sglang.srt.speculative.dp_spec_prefill_coordination import DPSpecPrefillCoordinationPlan

    qtn, mutant = int(opts["qtn"]), opts.get("mutant")
    if mutant is not None and mutant not in MUTANTS:
        raise ValueError(f"draft-block mutant {mutant!r}: unknown")
    log: list[dict] = []
    coordinate = bool(opts.get("coordinate"))
    with envs.SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION.override(coordinate):
        sb = gather(schedule_batch(rank_in if rank_in["mode"] == "extend"
                                   else {**rank_in, "extend_lens": ()}), runner)
    if sb is None or not sb.forward_mode.is_decode():
        return {"ran": False, "gathered": getattr(sb, "global_num_tokens", None)}
    heterogeneous = None
    if coordinate:
        plan = DPSpecPrefillCoordinationPlan(*sb.dp_spec_prefill_coordination_metadata,
                                             draft_width=qtn, verify_width=qtn)
        heterogeneous = bool(plan.heterogeneous)
        plan.apply(sb, "draft", get_parallel().attn_dp_rank, local_only=False)
    dr = draft_runner(runner, log)
    dp_moe_sync = bool(opts.get("moe_draft", True)) and bool(get_parallel().attn_dp_enabled)
    fb = block_batch(rank_in, sb, qtn, dp_moe_sync)
    scaled = (None if fb.global_num_tokens_cpu is None
              else [int(x) for x in fb.global_num_tokens_cpu])
    preplanned = not fb.needs_forward_metadata_init()
    if mutant == "coordination_keeps_max_len":
        fb.dp_spec_prefill_coordination_applied = False
    pad = dr._prepare_eager_forward_batch

    def padding(batch):
        pad(batch)
        mode = getattr(batch, "dp_padding_mode", None)
        log.append({"event": "padding", "out_cache_loc": len(batch.out_cache_loc),
                    "mode": mode.name if mode else None, "forward_mode": batch.forward_mode.name})
    dr._prepare_eager_forward_batch = padding
    if mutant == "pad_after_metadata":
        init = dr.attn_backend.init_forward_metadata
        dr._prepare_eager_forward_batch = lambda batch: None

        def late(batch):
            init(batch)
            padding(batch)
        dr.attn_backend.__dict__["init_forward_metadata"] = late
    ModelRunner._forward_raw(dr, fb, None)
    gathered = None if sb.global_num_tokens is None else list(sb.global_num_tokens)
    return {"ran": True, "gathered": gathered, "scaled": scaled,
            "preplanned": preplanned, "heterogeneous": heterogeneous, "log": log}
