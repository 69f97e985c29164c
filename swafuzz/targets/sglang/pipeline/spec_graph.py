"""Speculative decoding with decode graphs at server level: the target verify through the
release's own graph runner (imports SGLang; the runtime-context shape, 0.5.22 / 0.5.23).

A spec-v2 server with CUDA graphs hands each verify batch to its target's decode graph runner,
captured in TARGET_VERIFY mode with ``num_draft_tokens`` rows per request: the release's
``eagle_prepare_for_verify`` asks that runner's ``can_run_graph`` and, when it says yes, runs its
``load_batch`` (bucket, the buffer registry's ``fill_from`` with its padding policies, the replay
view, ``init_forward_metadata_out_graph`` of the DSV4 backend in its TARGET_VERIFY bucket: the
Raw verify metadata). :class:`VerifyFill` is that runner, made as :class:`.graph.GraphFill`
makes the decode one (no constructor: it captures on a GPU), its buffers the release's
``DecodeInputBuffers.create`` / ``build_decode_registry`` for ``max_bs * num_draft_tokens``
tokens, its backend the DSV4 backend with what its constructor sets for an EAGLE top-k 1
server (``extend_seq_lens_buffer`` / ``extend_start_loc_buffer``, ``mtp_enabled``).

Recorded per verify (``SpecRec["verify"]["graph"]``, None when the runner declined): the bucket,
the raw batch size, and the bucket's rows of ``out_cache_loc`` / ``positions`` (``bucket * N``)
and ``seq_lens`` / ``req_pool_indices`` (``bucket``). Modelled as for decode graphs: capture and
``graph.replay()``; the draft's own graph runners (``EAGLEDraftCudaGraphRunner``,
``EAGLEDraftExtendCudaGraphRunner``) are not driven: the draft decode and draft extend stay
eager (the hop table says why).
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import torch

from swafuzz.targets.forward_mode import ForwardBatch as HarnessBatch
from swafuzz.targets.forward_mode import ForwardMode as HarnessMode
from swafuzz.targets.sglang.pipeline import graph, seams

from sglang.srt.model_executor import forward_batch_info as fbi  # isort: skip

#: the buffers recorded per verify replay: (name, rows per request)
SLOTS = (("out_cache_loc", "token"), ("positions", "token"), ("seq_lens", "req"),
         ("req_pool_indices", "req"))


def _buffers(device, max_bs: int, width: int, fill_value: int):
    """The release's ``DecodeInputBuffers.create`` for a TARGET_VERIFY runner of ``width``
    tokens per request (one rank; logits / embedding buffers of width one, never read)."""
    from sglang.srt.model_executor.runner_utils.buffers import DecodeInputBuffers

    tokens = max_bs * width
    offered = dict(device=device, max_bs=max_bs, max_num_token=tokens, hidden_size=1,
                   vocab_size=1, next_token_logits_buffer=torch.zeros(tokens, 1, device=device),
                   dtype=torch.float32, is_encoder_decoder=False, require_mlp_tp_gather=False,
                   seq_len_fill_value=fill_value, encoder_len_fill_value=0,
                   num_tokens_per_bs=width, num_tokens_per_req=width,
                   cache_loc_dtype=torch.int64, enable_mamba_track=False, is_hybrid_swa=True)
    params = inspect.signature(DecodeInputBuffers.create).parameters
    offered.update({p: 1 for p in params if p not in offered and p.endswith(("_size", "_ranks"))})
    return DecodeInputBuffers.create(**{k: v for k, v in offered.items() if k in params})


class VerifyFill:
    """The target's TARGET_VERIFY graph runner (module docstring): ``runner`` is what the
    pipeline installs as its model runner's ``decode_cuda_graph_runner``."""

    def __init__(self, server, spec_algorithm, width: int, steps: int):
        buckets = server.case.config.cuda_graph_bs_decode
        r = self.runner = seams.graph_runner(tuple(buckets)).__self__
        self.width = width
        dev = torch.device(str(server.engine.device))
        r.captured_req_width = width
        r.model_runner.spec_algorithm = spec_algorithm
        bk = self.backend = r.attn_backend = graph._release_backend(server, dev)
        bk.speculative_num_draft_tokens, bk.speculative_num_steps = width, steps
        bk.topk, bk.mtp_enabled = 1, True  # the constructor's, for EAGLE top-k 1
        rows = bk.req_to_token.shape[0]
        bk.extend_seq_lens_buffer = torch.full((rows,), width, **bk.cuda_int32_kwargs)
        bk.extend_start_loc_buffer = torch.zeros(rows, **bk.cuda_int32_kwargs)
        bk.init_cuda_graph_state(r.max_bs, r.max_bs * width)
        r.seq_len_fill_value = bk.get_cuda_graph_seq_len_fill_value()
        r.capture_forward_mode = fbi.ForwardMode.TARGET_VERIFY
        r.buffers = _buffers(dev, r.max_bs, width, r.seq_len_fill_value)
        mr = r.model_runner
        mr.hisparse_coordinator = mr.lora_manager = None
        mr.is_draft_worker = False
        mr.server_args, mr.device = server.server_args, str(dev)
        r.nsa_enable_prefill_cp = r.require_gathered_buffer = False
        r.buffer_registry = graph.build_decode_registry(
            device=dev, max_bs=r.max_bs, max_num_token=r.max_bs * width,
            seq_len_fill_value=r.seq_len_fill_value, cache_loc_dtype=torch.int64,
            enable_num_token_non_padded=fbi.enable_num_token_non_padded(), source=r.buffers)
        r.dllm_uses_input_embeds = False
        r.deepep_adapter = graph.DeepEPCudaGraphRunnerAdapter()
        r._metadata_glue = None
        r.capture_hidden_mode = fbi.CaptureHiddenMode.FULL  # EAGLE's verify keeps hidden states
        for bs in reversed(r.capture_bs):  # the capture-time prep, largest first
            self.capture_prep(bs)

    def capture_prep(self, bs: int) -> None:
        b = self.runner.buffers
        view = SimpleNamespace(batch_size=bs, forward_mode=fbi.ForwardMode.TARGET_VERIFY,
                               req_pool_indices=b.req_pool_indices[:bs], seq_lens=b.seq_lens[:bs],
                               positions=b.positions[:bs * self.width],
                               seq_lens_cpu=b.seq_lens_cpu[:bs], spec_info=None)
        self.backend.init_forward_metadata_out_graph(view, in_capture=True)

    def record(self) -> dict:
        """What the runner's last ``load_batch`` left: bucket, raw batch size, buffer rows."""
        r = self.runner
        out = {"bucket": int(r.bs), "raw_bs": int(r.raw_bs)}
        for name, per in SLOTS:
            n = r.bs * (self.width if per == "token" else 1)
            out[name] = getattr(r.buffers, name)[:n].tolist()
        return out

    def replayed(self, rec: dict) -> HarnessBatch:
        """The padded batch the engine's verify graph replays (the release's filled rows)."""
        def t(name):
            return torch.tensor(rec[name], dtype=torch.int64)
        return HarnessBatch(HarnessMode.TARGET_VERIFY, rec["bucket"], t("out_cache_loc"),
                            t("seq_lens"), t("positions"))
