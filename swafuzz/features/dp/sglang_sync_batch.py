"""One rank's batch through the release's MLP-sync padding (imports SGLang: runs only in a worker
process of :mod:`swafuzz.features.dp.sglang_sync`). Per step, release code:

1. ``prepare_mlp_sync_batch_raw``: the rank's token count and votes gathered over the real gloo
   ``tp_group.cpu_group``, onto the scheduler batch;
2. the release's ``ForwardBatch`` and its ``init_mlp_sync_metadata``;
3. ``ModelRunner._prepare_eager_forward_batch`` on a model-runner stand-in
   (``prepare_mlp_sync_batch`` when counts are set, else ``prepare_attn_tp_scatter_input``);
4. ``post_forward_mlp_sync_batch``.

Stand-ins, plain-attribute objects: the scheduler batch (mode, counts, extend and logprob
lengths; no requests or pools), the model runner (no model; the release's
``attn_tp_sequence_sharded``), the attention backend (the release's DeepSeek-V4 class without
``__init__``: fill value, ``late_layer_num_tokens`` with bounded replay off,
``folds_encoder_swa_replay``), the logits output (``None`` fields).
"""

from __future__ import annotations

import contextlib
import types

import torch

from swafuzz.features.dp.sglang_sync_prefill import convert, prefill_runner


def _rel():
    """The release modules the hop runs."""
    from sglang.srt.managers.scheduler_components import dp_attn
    from sglang.srt.model_executor import forward_batch_info as fbi
    from sglang.srt.model_executor.model_runner import ModelRunner
    return types.SimpleNamespace(dp_attn=dp_attn, fbi=fbi, ModelRunner=ModelRunner)


def dsv4_backend(runner):
    """The release's DeepSeek-V4 attention backend, built without ``__init__``: the attributes
    the padding asks (fill value, late-layer rows, replay folding) are its own methods/values."""
    from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4AttnBackend
    be = object.__new__(DeepseekV4AttnBackend)
    be.__dict__["enable_decoder_swa_bounded_replay"] = False
    be.__dict__["model_runner"] = runner
    # Probe routed (listed in sglang_sync.PATCHED): on a CPU host the release asks the CPU graph
    # fill value; the CUDA server it stands for asks the CUDA one.
    be.__dict__["get_cpu_graph_seq_len_fill_value"] = be.get_cuda_graph_seq_len_fill_value
    return be


def model_runner(model_config):
    """A model-runner stand-in: what the padding reads from the runner, nothing else."""
    rel = _rel()
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
    r = types.SimpleNamespace(
        model_config=model_config, is_draft_worker=False, enable_elastic_ep=False,
        lora_manager=None, hisparse_coordinator=None, prefill_cuda_graph_runner=None,
        spec_algorithm=SpeculativeAlgorithm.NONE, device="cpu")
    r.attn_tp_sequence_sharded = types.MethodType(rel.ModelRunner.attn_tp_sequence_sharded, r)
    r.attn_backend = dsv4_backend(r)
    r.prefill_cuda_graph_runner = prefill_runner(r)  # None unless the prefill graph is breakable
    return r


def _positions(mode: str, seq_lens, extend_lens) -> list[int]:
    if mode == "decode":
        return [s - 1 for s in seq_lens]
    if mode == "extend":
        return [p for s, e in zip(seq_lens, extend_lens) for p in range(s - e, s)]
    return []


def schedule_batch(rank_in: dict):
    """The scheduler batch stand-in for ``prepare_mlp_sync_batch_raw`` (None for a rank with
    no batch: the release asks ``get_idle_batch`` for one when a peer has tokens)."""
    fm = _rel().fbi.ForwardMode
    mode = rank_in["mode"]
    if mode == "idle":
        return None
    seq, ext = list(rank_in["seq_lens"]), list(rank_in["extend_lens"])
    b = types.SimpleNamespace(
        forward_mode=fm.DECODE if mode == "decode" else fm.EXTEND, reqs=[],
        return_logprob=False, encoder_swa_reset=None, spec_info=None, input_embeds=None,
        replace_embeds=None, prefix_lens=[s - e for s, e in zip(seq, ext)],
        extend_lens=ext, extend_logprob_start_lens=[e - 1 for e in ext] if ext else [],
        extend_num_tokens=sum(ext), seq_lens_cpu=torch.tensor(seq, dtype=torch.int64),
        multimodal_inputs=None, has_grammar=False)
    b.batch_size = lambda: len(seq)
    b.converted = False

    def convert_decode_to_extend():  # the release's conversion, as the rank's batch sees it
        b.forward_mode, b.converted = fm.EXTEND, True
    b.convert_decode_to_extend = convert_decode_to_extend
    return b


def idle_batch():
    """An IDLE scheduler batch, as ``ScheduleBatch.prepare_for_idle`` leaves one."""
    b = types.SimpleNamespace(forward_mode=_rel().fbi.ForwardMode.IDLE, reqs=[],
                              spec_info=None, extend_num_tokens=0, return_logprob=False)
    b.batch_size = lambda: 0
    return b


def gather(sb, runner, cuda_graph: bool = False):
    """The release's scheduler gather: returns the batch to run (None: this step runs nothing).
    ``cuda_graph``: the ranks vote for the CUDA graphs as a server with them on does (default:
    ``--disable-cuda-graph``)."""
    rel = _rel()
    from sglang.srt.utils.common import require_mlp_sync, require_mlp_tp_gather
    if not require_mlp_sync():
        return sb
    return rel.dp_attn.prepare_mlp_sync_batch_raw(
        sb, model_runner=runner, get_idle_batch=idle_batch, disable_cuda_graph=not cuda_graph,
        require_mlp_tp_gather=require_mlp_tp_gather(), disable_overlap_schedule=True,
        offload_tags=set())


def forward_batch(rank_in: dict, sb):
    """The release's ``ForwardBatch`` for this rank, with the gathered counts."""
    rel = _rel()
    fm = rel.fbi.ForwardMode
    mode = rank_in["mode"] if sb is None or not sb.forward_mode.is_idle() else "idle"
    seq, ext = list(rank_in["seq_lens"]), list(rank_in["extend_lens"])
    if mode == "idle":
        seq, ext = [], []
    loc = list(rank_in["out_cache_loc"]) if mode != "idle" else []
    pos = _positions(mode, seq, ext)
    i64 = dict(dtype=torch.int64)
    kw = dict(
        forward_mode={"decode": fm.DECODE, "extend": fm.EXTEND, "idle": fm.IDLE}[mode],
        batch_size=len(seq), input_ids=torch.zeros(len(loc), **i64),
        req_pool_indices=torch.arange(len(seq), **i64), seq_lens=torch.tensor(seq, **i64),
        out_cache_loc=torch.tensor(loc, **i64), seq_lens_sum=sum(seq),
        positions=torch.tensor(pos, **i64), seq_lens_cpu=torch.tensor(seq, **i64),
        orig_seq_lens=torch.tensor(seq, dtype=torch.int32))
    if mode == "extend":
        e = torch.tensor(ext, dtype=torch.int32)
        kw.update(extend_num_tokens=sum(ext), extend_seq_lens=e,
                  extend_prefix_lens=torch.tensor([s - x for s, x in zip(seq, ext)], **i64),
                  extend_start_loc=torch.cumsum(e, 0) - e, extend_seq_lens_cpu=ext,
                  extend_prefix_lens_cpu=[s - x for s, x in zip(seq, ext)],
                  extend_logprob_start_lens_cpu=[x - 1 for x in ext])
    fb = rel.fbi.ForwardBatch(**kw)
    if sb is not None and getattr(sb, "global_num_tokens", None) is not None:
        for name in ("is_extend_in_batch", "can_run_dp_prefill_cuda_graph"):
            setattr(fb, name, getattr(sb, name))
        for name in ("global_num_tokens", "global_num_tokens_for_logprob",
                     "draft_global_num_tokens", "draft_global_num_tokens_for_logprob",
                     "can_run_decode_cuda_graph", "can_run_dp_draft_cuda_graph",
                     "dp_spec_prefill_coordination_applied"):
            if not hasattr(sb, name):
                setattr(sb, name, False if name.startswith(("can_", "dp_")) else None)
        fb.init_mlp_sync_metadata(sb, "cpu")
    return fb


def _ints(t) -> list[int] | None:
    return None if t is None else [int(x) for x in torch.as_tensor(t).reshape(-1).tolist()]


def snapshot(fb) -> dict:
    """The padded batch's fields the backend and the stores read."""
    mode = getattr(fb, "dp_padding_mode", None)
    orig = getattr(fb, "_original_forward_mode", None)
    return {
        "mode": fb.forward_mode.name, "original_mode": orig.name if orig else None,
        "batch_size": int(fb.batch_size), "out_cache_loc": _ints(fb.out_cache_loc),
        "positions": _ints(fb.positions), "seq_lens": _ints(fb.seq_lens),
        "extend_seq_lens": _ints(fb.extend_seq_lens),
        "extend_num_tokens": (None if fb.extend_num_tokens is None
                              else int(fb.extend_num_tokens)),
        "global_num_tokens": (None if fb.global_num_tokens_cpu is None
                              else [int(x) for x in fb.global_num_tokens_cpu]),
        "padding_mode": mode.name if mode is not None else None,
        "dp_buffer_len": getattr(fb, "global_dp_buffer_len", None),
    }


@contextlib.contextmanager
def patched(runner, force_scatter: bool, mutant: str | None):
    """The step's changes to the release, undone afterwards: ``force_scatter`` (the attention-TP
    context allows input scattering, as ``AttnTpContext.init_context`` leaves it for a model
    that permits it; ``sglang_sync.PATCHED``) and a release mutant (``sglang_sync.RELEASE_MUTANTS``:
    the release's own padding rule changed, for showing that a comparison can fail)."""
    from sglang.srt.layers.layer_boundary.adapters.attention import get_attn_tp_context
    fbi = _rel().fbi
    ctx, be = get_attn_tp_context(), runner.attn_backend
    saved = (ctx.allow_input_scattered, fbi.ceil_align, be.__dict__["get_cpu_graph_seq_len_fill_value"],
             fbi.ForwardBatch._pad_inputs_to_size)
    if force_scatter:
        ctx.allow_input_scattered = True
    if mutant == "no_attn_tp_align":
        fbi.ceil_align = lambda n, align: n
    elif mutant == "seq_lens_fill_0":
        be.__dict__["get_cpu_graph_seq_len_fill_value"] = lambda: 0
    elif mutant == "pad_live_loc":
        fbi.ForwardBatch._pad_inputs_to_size = _pad_with_live_loc(saved[3])
    elif mutant is not None:
        raise ValueError(f"release mutant {mutant!r}: unknown")
    try:
        yield
    finally:
        ctx.allow_input_scattered, fbi.ceil_align = saved[0], saved[1]
        be.__dict__["get_cpu_graph_seq_len_fill_value"] = saved[2]
        fbi.ForwardBatch._pad_inputs_to_size = saved[3]


def _pad_with_live_loc(real):
    """Release mutant ``pad_live_loc``: the release's padding, then the padded rows of
    ``out_cache_loc`` pointed at the batch's first (live) location instead of slot 0."""
    def pad(self, model_runner, num_tokens, bs):
        n = self.out_cache_loc.shape[0]
        real(self, model_runner, num_tokens, bs)
        if n and self.out_cache_loc.shape[0] > n:
            self.out_cache_loc[n:] = self.out_cache_loc[0]
    return pad


def run_rank(rank_in: dict, runner, opts: dict) -> dict:
    """One step on this rank: gather, ForwardBatch, eager padding, post-forward undo, with
    ``opts`` (``force_scatter``, ``mutant``: :func:`patched`; ``cuda_graph``: :func:`gather`);
    ``votes``: the gathered CUDA-graph votes (min over the ranks)."""
    with patched(runner, bool(opts.get("force_scatter")), opts.get("mutant")):
        return _run(rank_in, runner, bool(opts.get("cuda_graph")))


def _run(rank_in: dict, runner, cuda_graph: bool) -> dict:
    rel = _rel()
    sb = schedule_batch(rank_in)
    sb = gather(sb, runner, cuda_graph)
    if sb is None:
        return {"ran": False}
    votes = {"decode_graph": bool(getattr(sb, "can_run_decode_cuda_graph", False)),
             "prefill_graph": bool(getattr(sb, "can_run_dp_prefill_cuda_graph", False)),
             "extend_in_batch": bool(getattr(sb, "is_extend_in_batch", False))}
    if rank_in["mode"] == "decode":  # the scheduler's conversion after the gather
        convert(sb)
        votes["converted"] = bool(sb.converted)
        if sb.converted:  # the rank's batch is a one-token-per-request EXTEND from here
            rank_in = dict(rank_in, mode="extend", extend_lens=[1] * len(rank_in["seq_lens"]))
    fb = forward_batch(rank_in, sb)
    before = snapshot(fb)
    gathered = getattr(sb, "global_num_tokens", None)
    path = "mlp_sync" if fb.global_num_tokens_cpu is not None else "attn_tp_scatter"
    rel.ModelRunner._prepare_eager_forward_batch(runner, fb)
    padded = snapshot(fb)
    # the forward's logits stand-in: one row per padded row
    logits = types.SimpleNamespace(next_token_logits=torch.zeros(len(padded["out_cache_loc"]), 1),
                                   hidden_states=None, last_hidden_states=None)
    if fb.global_num_tokens_cpu is not None:
        fb.post_forward_mlp_sync_batch(logits)
    after = dict(snapshot(fb), logits_rows=int(logits.next_token_logits.shape[0]))
    return {"ran": True, "path": path, "gathered": gathered, "before": before,
            "padded": padded, "after_post": after, "votes": votes}
