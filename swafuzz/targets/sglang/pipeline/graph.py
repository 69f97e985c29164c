"""The release's decode graph runner's replay preparation at server level (imports SGLang).

For a DECODE sent to a graph (:meth:`.steps.Pipeline.can_run_graph`) the release fills the
runner's static buffers from its ``ForwardBatch``: 0.5.22 / 0.5.23
``DecodeCudaGraphRunner.load_batch`` (``_pad_to_bucket``, ``fill_from``,
``build_replay_fb_view``, ``init_forward_metadata_out_graph``); 0.5.12
``CudaGraphRunner.replay_prepare`` (``populate_from_forward_batch``,
``init_forward_metadata_replay_cuda_graph``). The runner is the can-run decision's
(:func:`.seams.graph_runner`) with the buffers of ``DecodeInputBuffers.create`` (and
``build_decode_registry`` where present); its backend a constructor-less
``DeepseekV4AttnBackend`` over the engine's DSV4 pool, with ``init_cuda_graph_state`` and each
bucket's capture-time prep run once.

Bypassed: capture and ``graph.replay()``; the padded ``out_cache_loc`` / ``seq_lens`` /
``positions`` become the batch the component graph runner replays. Where the release stamps SWA
write locations in-graph (0.5.22, 0.5.23) that init runs on the host and its write locations and
read indices go to the oracle. Modelled: own buffers (no ``share_buffers``), FlashMLA plan None,
stores resolve through the harness's metadata; 0.5.12's in-graph upgrade is not run.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import torch

from swafuzz.targets.forward_mode import ForwardBatch as HarnessBatch
from swafuzz.targets.forward_mode import ForwardMode as HarnessMode
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang.metadata import NoC128MTP
from swafuzz.targets.sglang.pipeline import seams
from swafuzz.targets.sglang.real import (
    UNIFIED_RESOLVER,
    VERSION,
    RealBackend,
    backend_mod,
    bare_backend,
)

from sglang.srt.model_executor import forward_batch_info as fbi  # isort: skip

#: the runner's buffer dataclass, the runner class and its fill method, by the release's shape
if seams.DECODE_RUNNER_MOD is not None:
    from sglang.srt.model_executor.cuda_graph_buffer_registry import build_decode_registry
    from sglang.srt.model_executor.runner_utils.buffers import DecodeInputBuffers
    from sglang.srt.model_executor.runner_utils.deepep_adapter import (
        DeepEPCudaGraphRunnerAdapter,
    )
    RUNNER_CLS = seams.DECODE_RUNNER_MOD.DecodeCudaGraphRunner
    FILL = "load_batch"
else:
    try:
        from sglang.srt.model_executor.cuda_graph_runner import (
            CudaGraphRunner,
            DecodeInputBuffers,
        )
    except ImportError as e:  # 0.5.13: the buffers in cuda_graph_buffer_registry, another shape
        raise TargetUnavailable(
            f"target sglang --level server: sglang {VERSION} has the decode graph runner's "
            f"input buffers in neither shape the server level drives ({e}): "
            "runner_utils.buffers with runner.decode_cuda_graph_runner (0.5.14+) or "
            "cuda_graph_runner.DecodeInputBuffers (0.5.12)") from None
    build_decode_registry = DeepEPCudaGraphRunnerAdapter = None
    RUNNER_CLS = CudaGraphRunner
    FILL = "replay_prepare"

#: the release's Raw -> full upgrade runs on the host: it builds compressor metadata only for
#: the compressed layers present (``has_c4`` / ``has_c128``, 0.5.21+); 0.5.13 .. 0.5.20 build
#: them unconditionally (page size a multiple of 128 asserted): modelled there, as on 0.5.12
_UPGRADE = getattr(RealBackend, "make_forward_metadata_from_raw_decode", None)
UPGRADE_ON_HOST = UNIFIED_RESOLVER and _UPGRADE is not None and \
    "has_c4" in inspect.getsource(_UPGRADE)

#: the buffers the oracle reads, each sliced to the bucket's rows after a fill
SLOTS = ("out_cache_loc", "seq_lens", "positions", "req_pool_indices")


def _create_buffers(device, max_bs: int, fill_value: int):
    """The release's ``DecodeInputBuffers.create`` with the arguments its constructor passes for
    a one-rank, non-speculative decode server of this model stand-in (hidden size and vocabulary
    of one: the logits and embedding buffers are never read here)."""
    offered = dict(device=device, max_bs=max_bs, max_num_token=max_bs, hidden_size=1,
                   vocab_size=1, next_token_logits_buffer=torch.zeros(max_bs, 1, device=device),
                   dtype=torch.float32, is_encoder_decoder=False, require_mlp_tp_gather=False,
                   seq_len_fill_value=fill_value, encoder_len_fill_value=0,
                   num_tokens_per_bs=1, num_tokens_per_req=1, cache_loc_dtype=torch.int64,
                   enable_mamba_track=False, is_hybrid_swa=True)
    params = inspect.signature(DecodeInputBuffers.create).parameters
    # one rank: every parallel size and rank count the release asks for (pipeline, data) is 1
    offered.update({p: 1 for p in params if p not in offered and p.endswith(("_size", "_ranks"))})
    return DecodeInputBuffers.create(**{k: v for k, v in offered.items() if k in params})


def _release_backend(server, device):
    """The release's DSV4 backend built without its constructor, holding what its graph prep reads:
    one rank, no speculative decoding, no compressed layers, capture length of the full pool."""
    bk = bare_backend(server.engine.target_pool.real)
    bk.device = device
    bk.needs_cpu_seq_lens = False
    bk.is_draft_runner = False
    bk.mtp_enabled = False
    bk.speculative_num_draft_tokens = None
    bk.online_c128_mtp = NoC128MTP()
    bk.max_context_len = bk.MAX_SEQ_LEN_FOR_CAPTURE = server.case.model.full_tokens
    bk.cuda_int32_kwargs = {"dtype": torch.int32, "device": device}
    # what the in-graph upgrade reads: the release's request table, no compressed layers (the
    # model's index_topk is only recorded: compressed layers read it), one decode step
    bk.req_to_token = server.req_to_token_pool.req_to_token
    bk.page_size = server.case.config.page_size
    bk.swa_page_size = 128  # 0.5.18 .. 0.5.20's constructor sets it (make_core_attn_metadata
    # asserts it equals SWA_WINDOW); later releases read the pool's
    bk.low_ratios = bk.present_ratios = ()
    bk.has_c4 = bk.has_c128 = bk.trtllm_attn = False
    bk.index_topk = bk.c4_topk = 512  # c4_topk: its name in 0.5.18 .. 0.5.20
    bk.topk, bk.speculative_num_steps = 0, 1
    bk._early_verify_metadata_ids = set()
    bk.tail_forward_metadata = None
    return bk


def no_flashmla_plan():
    """The FlashMLA scheduling plan (``_create_flashmla_metadata``: the ``flash_mla`` CUDA
    extension's ``get_mla_metadata``) is None while the upgrade runs on the host (modelled:
    a read-side object of the attention kernel, which is not run)."""
    return seams.set_attr(backend_mod, "_create_flashmla_metadata", lambda: None)


class GraphFill:
    """The release's decode runner (the can-run decision's instance) with its buffers and
    backend; :meth:`fill` runs its replay preparation for one batch."""

    def __init__(self, server):
        r = self.runner = server.graph_runner.__self__
        dev = torch.device(str(server.engine.device))
        bk = self.backend = r.attn_backend = _release_backend(server, dev)
        bk.init_cuda_graph_state(r.max_bs, r.max_bs)
        r.seq_len_fill_value = bk.get_cuda_graph_seq_len_fill_value()
        r.capture_forward_mode = fbi.ForwardMode.DECODE
        r.buffers = _create_buffers(dev, r.max_bs, r.seq_len_fill_value)
        r.model_runner.hisparse_coordinator = None
        r.model_runner.lora_manager = None
        r.model_runner.is_draft_worker = False
        r.model_runner.server_args = server.server_args
        r.model_runner.device = str(dev)
        r.nsa_enable_prefill_cp = False
        r.require_gathered_buffer = False
        if build_decode_registry is not None:
            r.buffer_registry = build_decode_registry(
                device=dev, max_bs=r.max_bs, max_num_token=r.max_bs,
                seq_len_fill_value=r.seq_len_fill_value, cache_loc_dtype=torch.int64,
                enable_num_token_non_padded=fbi.enable_num_token_non_padded(),
                source=r.buffers)
            r.dllm_uses_input_embeds = False
            r.deepep_adapter = DeepEPCudaGraphRunnerAdapter()
            r._metadata_glue = None
            r.capture_hidden_mode = fbi.CaptureHiddenMode.NULL  # no hidden states returned
        for bs in reversed(r.capture_bs):  # the release captures the largest first
            self.capture_prep(bs)

    def capture_prep(self, bs: int) -> None:
        """The backend's capture-time out-graph prep for batch size ``bs`` (the graph capture
        itself is bypassed)."""
        b, bk = self.runner.buffers, self.backend
        mode = fbi.ForwardMode.DECODE
        if hasattr(bk, "init_forward_metadata_capture_cuda_graph"):  # 0.5.12
            bk.init_forward_metadata_capture_cuda_graph(
                bs, bs, b.req_pool_indices[:bs], b.seq_lens[:bs], None, mode, None)
            return
        view = SimpleNamespace(batch_size=bs, forward_mode=mode, req_pool_indices=b.req_pool_indices[:bs],
                               seq_lens=b.seq_lens[:bs], positions=b.positions[:bs],
                               seq_lens_cpu=b.seq_lens_cpu[:bs], spec_info=None)
        bk.init_forward_metadata_out_graph(view, in_capture=True)

    def fill(self, fb) -> dict:
        """The release's replay preparation of ``fb``: the bucket, the bucket's rows of the
        buffers, and the Raw decode metadata the backend's prep left (what the oracle reads)."""
        getattr(self.runner, FILL)(fb)
        return self.record(fb)

    def record(self, fb) -> dict:
        """What the runner's last replay preparation (of ``fb``) left: :meth:`fill`'s record."""
        r = self.runner
        bs = r.bs
        out = {"bucket": bs, "raw_bs": r.raw_bs}
        out.update({k: getattr(r.buffers, k)[:bs].tolist() for k in SLOTS})
        out["live_req_pool_indices"] = fb.req_pool_indices.tolist()
        md = self.backend.forward_metadata
        out["metadata"] = {k: getattr(md, k).tolist()
                           for k in ("out_cache_loc", "seq_lens", "req_pool_indices")}
        if UPGRADE_ON_HOST:
            out["in_graph"] = self.in_graph(bs)
        return out

    def in_graph(self, bs: int) -> dict:
        """The release's ``init_forward_metadata_in_graph`` (Raw upgrade, SWA stamp) on the
        captured batch (first ``bs`` rows), on the host: its SWA write locations, and per row
        its SWA read indices (newest first, read length many)."""
        b = self.runner.buffers
        view = SimpleNamespace(forward_mode=self.runner.capture_forward_mode, batch_size=bs,
                               out_cache_loc=b.out_cache_loc[:bs], positions=b.positions[:bs],
                               seq_lens=b.seq_lens[:bs], req_pool_indices=b.req_pool_indices[:bs],
                               spec_info=None)
        with no_flashmla_plan():
            RealBackend.init_forward_metadata_in_graph(self.backend, view)
        core = self.backend.forward_metadata.core_attn_metadata
        lens = core.swa_topk_lengths.tolist()
        return {"swa_out_cache_loc": core.swa_out_cache_loc.tolist(), "swa_topk_lengths": lens,
                "swa_page_indices": [row[:n] for row, n in
                                     zip(core.swa_page_indices.tolist(), lens)]}

    def replay_batch(self, fb) -> tuple[dict, HarnessBatch]:
        """Fill for ``fb``; the record and the padded batch the engine's graph runner replays
        (its rows are the release's buffers, so its own fill copies them unchanged)."""
        return self.replayed(fb, self.fill(fb))

    def replayed(self, fb, rec: dict | None = None) -> tuple[dict, HarnessBatch]:
        """:meth:`replay_batch` after the release's own preparation already ran (its
        ``execute`` calls ``load_batch``; :mod:`.dispatch`)."""
        rec = self.record(fb) if rec is None else rec
        bs, b = rec["bucket"], self.runner.buffers

        def rows(name):
            return getattr(b, name)[:bs].to(torch.int64).clone()

        return rec, HarnessBatch(HarnessMode.DECODE, bs, rows("out_cache_loc"), rows("seq_lens"),
                                 rows("positions"))


def _patched_fill(after, buffer: str = "out_cache_loc"):
    """The runner's replay preparation followed by ``after(runner, forward_batch, before)``
    (``before``: a copy of the ``buffer`` static buffer as the fill found it)."""
    real = getattr(RUNNER_CLS, FILL)

    def fill(self, forward_batch, *args, **kwargs):
        before = getattr(self.buffers, buffer).clone()
        out = real(self, forward_batch, *args, **kwargs)
        after(self, forward_batch, before)
        return out

    return seams.set_attr(RUNNER_CLS, FILL, fill)


def stale_out_cache_loc_tail():
    """Spec §9.5 (padded rows not steered to the dummy slot, PR #24743): the runner's replay
    preparation copies the live rows but leaves the ``out_cache_loc`` buffer's padded tail as
    the previous replay wrote it, so a batch padded to its bucket after a larger one writes its
    padded rows into the earlier batch's (live) slots."""

    def keep_tail(r, fb, before):
        n, end = fb.out_cache_loc.numel(), r.bs * getattr(r, "captured_req_width", 1)
        r.buffers.out_cache_loc[n:end] = before[n:end]  # a verify runner: width rows a request

    return _patched_fill(keep_tail)


def seq_lens_pad_zero():
    """Spec §5.1 (the static ``seq_lens`` buffer's padded rows hold the backend's fill value,
    1 for DSV4): the runner's replay preparation zeroes the padded rows' ``seq_lens``. No store
    reads them (the padded rows write the dummy slot): only the prepared buffers show it, and
    an attention kernel reading a zero-length row is the consequence upstream."""

    def zero(r, fb, before):
        r.buffers.seq_lens[fb.batch_size:r.bs] = 0

    return _patched_fill(zero)


def index_tails_kept(buffer: str):
    """Spec §5.1 ("older versions: req_pool_indices tail not reset"; the registry's
    ``PaddingPolicy.ZERO`` for ``req_pool_indices`` / ``positions``: padded rows must point at
    request row 0 so dummy attention reads land harmlessly): the runner's replay preparation
    copies the live rows but leaves ``buffer``'s padded tail as the previous replay wrote it,
    so a padded row names a live (or freed) request's row and its last position."""

    def keep_tail(r, fb, before):
        n = fb.batch_size
        getattr(r.buffers, buffer)[n:r.bs] = before[n:r.bs]

    return _patched_fill(keep_tail, buffer)


def req_pool_indices_tail_kept():
    return index_tails_kept("req_pool_indices")


def positions_tail_kept():
    return index_tails_kept("positions")
