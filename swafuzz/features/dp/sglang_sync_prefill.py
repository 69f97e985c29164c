"""The prefill graph an attention-DP rank votes on, and the release's decode->extend conversion
after the vote (imports SGLang: runs only in a worker process of
:mod:`swafuzz.features.dp.sglang_sync`, and in the server-level pipeline for its own ranks).

The vote (``dp_attn._local_prefill_cuda_graph_vote``, min-reduced over the ranks by the gather)
asks the model runner's ``prefill_cuda_graph_runner``: it must be the release's
``PrefillCudaGraphRunner`` and its ``can_replay_locally`` decides. :func:`prefill_runner` builds
that runner without its constructor (which allocates the static buffers and captures CUDA
graphs), holding what the constructor derives from the published server arguments for a
breakable backend - the captured token counts (the release's ``get_prefill_num_tokens_to_capture``
over ``cuda_graph_config.prefill.bs``), their maximum, the context limits
(``max_context_size``, ``max_seq_len`` or the backend's default), the backend's batch vote
(``vote_prefill_cuda_graph``) - and the rest as the constructor leaves them for a breakable
backend with no LoRA, no CP capture and no multimodal model. One probe is answered as on the
CUDA server studied: ``has_mha_companion_layers`` False (the vote's check of it runs only off
CUDA). :func:`convert` is the release's ``SchedulerDPAttnAdapter.maybe_convert_decode_to_extend``
(the adapter's fields are not read by it).
"""

from __future__ import annotations

import importlib
import inspect


def prefill_runner(model_runner):
    """The release's ``PrefillCudaGraphRunner`` for a rank whose published prefill backend is
    breakable (module docstring), else None (the release builds none)."""
    from sglang.srt.model_executor.cuda_graph_config import Backend
    from sglang.srt.model_executor.runner import prefill_cuda_graph_runner as pcg
    from sglang.srt.runtime_context import get_exec
    cfg = get_exec().graph.cuda_graph_config.prefill
    if cfg.backend != Backend.BREAKABLE or not cfg.bs:
        return None
    r = object.__new__(pcg.PrefillCudaGraphRunner)
    caps = pcg.get_prefill_num_tokens_to_capture(cfg.bs)
    backend = model_runner.attn_backend
    max_seq_len = cfg.max_seq_len
    if max_seq_len is None:
        max_seq_len = getattr(backend, "prefill_cuda_graph_default_max_seq_len", None)
    r.__dict__.update(
        model_runner=model_runner, prefill_backend_name=cfg.backend, capture_num_tokens=caps,
        max_num_tokens=max(caps), max_context_size=cfg.max_context_size,
        max_seq_len=max_seq_len, enable_lora=False, _is_full_backend=False,
        _capture_req_slots=1, _capture_chunked_prefix=False, enable_cp_bcg_capture=False,
        _qwen_bcg_hc_sidechannel=False, _qwen_bcg_mtp_draft=False,
        prefer_eager_mixed_prefill=False, has_mha_companion_layers=False,
        _backend_vote_prefill_cuda_graph=getattr(backend, "vote_prefill_cuda_graph", None),
        _backend_can_run_prefill_cuda_graph=getattr(backend, "can_run_prefill_cuda_graph",
                                                    None))
    return r


def convert(batch):
    """The release's post-gather decode->extend conversion of ``batch`` (a ScheduleBatch, or
    the workers' stand-in with its own ``convert_decode_to_extend``); returns the batch."""
    from sglang.srt.managers.scheduler_components.dp_attn import SchedulerDPAttnAdapter
    return SchedulerDPAttnAdapter.maybe_convert_decode_to_extend(None, batch)


def refusal(config: dict, version: str) -> str | None:
    """The ``dp`` record's release refusal of a Case with the prefill graph, or None: the ranks'
    vote converts through the release's ``SchedulerDPAttnAdapter.maybe_convert_decode_to_extend``
    and the converted batch runs through its model-runner dispatch, the eager runner built
    without warm-up (``run_warmup``; both 0.5.22, 0.5.23)."""
    if config.get("cuda_graph_backend_prefill") is None:
        return None
    dp_attn = importlib.import_module("sglang.srt.managers.scheduler_components.dp_attn")
    ok = hasattr(getattr(dp_attn, "SchedulerDPAttnAdapter", None),
                 "maybe_convert_decode_to_extend")
    try:
        eager = importlib.import_module("sglang.srt.model_executor.runner.eager_runner")
        ok = ok and "run_warmup" in inspect.signature(eager.EagerRunner.__init__).parameters
        # the captured token counts of the prefill runner the ranks build (0.5.21 lacks it)
        pcg = importlib.import_module("sglang.srt.model_executor.runner.prefill_cuda_graph_runner")
        ok = ok and hasattr(pcg, "get_prefill_num_tokens_to_capture")
    except ImportError:
        ok = False
    if ok:
        return None
    return (f"config.cuda_graph_backend_prefill: sglang {version} has no "
            "SchedulerDPAttnAdapter.maybe_convert_decode_to_extend, no EagerRunner dispatch "
            "without warm-up or no prefill_cuda_graph_runner.get_prefill_num_tokens_to_capture; "
            "the DP ranks' prefill-graph vote and decode->extend conversion "
            "are driven on 0.5.22 and 0.5.23 only (allowed: null)")
