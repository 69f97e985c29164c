"""The release's model-runner dispatch at server level (issue 26 item 2; imports SGLang; the
runtime-context shape, 0.5.22 / 0.5.23).

Each forward of a server-level run goes through ``ModelRunner.forward`` -> ``_forward_raw`` of
the release: its graph decision (``decode_cuda_graph_runner.can_run_graph``, the mode check of a
CPU device), the decode graph runner's ``execute`` (``load_batch`` into the static buffers, then
``backend.replay``), else ``_prepare_eager_forward_batch`` and the release's ``EagerRunner``
(built by its own constructor, warm-up off) with ``execute``'s mode dispatch:
``_execute_decode`` / ``_execute_extend`` (``load_batch`` through the release's eager buffer
registry, ``attn_backend.init_forward_metadata``) and ``_execute_idle`` (a padded IDLE:
``load_batch`` and metadata init; an unpadded one: the backend's ``forward_metadata`` dropped).

What stays modelled, each a seam named here:

* :class:`StubModel` - the model: per layer one ``store_cache`` of deterministic rows through the
  component engine, from the batch the release's runner hands it (its loaded copy);
* :class:`BackendSeam` - ``attn_backend``: ``init_forward_metadata`` is the component engine's
  (the release's asserts ``page_size % 128 == 0`` first, then builds FlashMLA plans); it keeps
  the ``forward_metadata`` attribute the release's dispatch sets and drops, and remembers which
  forward's batch built it (what the oracle reads: ``metadata_of``);
* :class:`ReplaySeam` - the decode graph runner's graph backend: ``replay`` (CUDA graphs) runs the
  component engine's graph runner on the rows the release's ``load_batch`` left in its buffers.

The ModelRunner is made without its constructor (which loads a model and captures graphs); it
holds exactly what ``forward`` / ``_forward_raw`` / ``_prepare_eager_forward_batch`` and the
eager runner's constructor read (no LoRA, no hisparse, no elastic EP, no prefill graph runner,
one pipeline stage).
"""

from __future__ import annotations

import contextlib
import inspect
from types import SimpleNamespace

import torch

from swafuzz.targets.forward_mode import ForwardBatch as HarnessBatch
from swafuzz.targets.forward_mode import ForwardMode as HarnessMode

from sglang.srt.layers.logits_processor import LogitsProcessorOutput  # isort: skip
from sglang.srt.model_executor.model_runner import ModelRunner  # isort: skip
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm  # isort: skip

try:  # the runtime-context shape's eager runner (0.5.22, 0.5.23)
    from sglang.srt.model_executor.runner.eager_runner import EagerRunner
except ImportError:  # pragma: no cover - depends on the release
    EagerRunner = None

#: the release's runner entry per dispatched mode (what the record names)
ENTRIES = {"DECODE": "_execute_decode", "EXTEND": "_execute_extend", "IDLE": "_execute_idle"}


def harness_batch(fb) -> HarnessBatch:
    """The component engine's batch for the release's (loaded) ``fb``: int64 rows."""
    def i64(t):
        return (t if t is not None else torch.zeros(0)).to(torch.int64)
    return HarnessBatch(HarnessMode[fb.forward_mode.name], int(fb.batch_size),
                        i64(fb.out_cache_loc), i64(fb.seq_lens), i64(fb.positions))


class BackendSeam:
    """``model_runner.attn_backend``: the engine's metadata init for the release's batch; its
    ``forward_metadata`` is what the release's dispatch sets or drops."""

    def __init__(self, dispatch):
        self.dispatch = dispatch
        self.forward_metadata = None

    def init_forward_metadata(self, fb) -> None:
        d = self.dispatch
        eng = d.engine
        eng.target_backend.init_forward_metadata(harness_batch(fb))
        self.forward_metadata = SimpleNamespace(forward=d.marker, batch_size=int(fb.batch_size))

    def resolve_prefill_shared_read_ends(self, forward_batch, num_qo_tokens):
        return None  # no shared-read prefill (the release's default answer of its base class)

    def prepare_prefill_shared_read_snapshot(self, forward_batch, *, num_qo_tokens):
        return None  # 0.5.22's name of the same: its base class's no-op


class StubModel:
    """The model the release's runner calls: per layer one store of deterministic rows through
    the component engine, for the batch handed to ``forward``."""

    shared_experts_config = None

    def __init__(self, dispatch):
        self.dispatch = dispatch

    def forward(self, input_ids, positions, forward_batch, **kwargs):
        d = self.dispatch
        hfb = harness_batch(forward_batch)
        eng = d.engine
        d.handed = hfb
        d.obs = eng.eager_stores(d.current, 0, "target", eng.target_backend, hfb,
                                 d.n_real)
        return LogitsProcessorOutput(next_token_logits=torch.zeros(hfb.out_cache_loc.numel(), 1))


class ReplaySeam:
    """The decode graph runner's graph backend: the engine's graph replay of the release's
    loaded buffers (CUDA graph replay needs a GPU)."""

    def __init__(self, dispatch):
        self.dispatch = dispatch

    def replay_session(self):
        return contextlib.nullcontext()

    def replay(self, key, forward_batch):
        d = self.dispatch
        rec, gfb = d.fill.replayed(forward_batch)
        d.graph, d.handed = rec, gfb
        d.obs = d.engine.graph_forward(d.current, "target", "decode", gfb, d.n_real,
                                       "DECODE")[0]
        n = gfb.out_cache_loc.numel()
        return LogitsProcessorOutput(next_token_logits=torch.zeros(n, 1))


def _model_runner(server, dispatch) -> ModelRunner:
    """The release's ModelRunner without its constructor (module docstring)."""
    mr = object.__new__(ModelRunner)
    sa = server.server_args
    stand = server.model_runner
    mr.__dict__.update(
        server_args=sa, device=stand.device, is_draft_worker=False,
        spec_algorithm=SpeculativeAlgorithm.NONE, model_config=SimpleNamespace(
            **vars(stand.model_config), hf_config=SimpleNamespace()),
        # the eager buffers' batch capacity: a padded batch (a peer rank's count) may exceed
        # this rank's requests; the pool's tokens bound every batch
        max_running_requests=server.case.model.full_tokens,
        max_total_num_tokens=server.case.model.full_tokens,
        forward_pass_id=0, msprobe_debugger=None, canary_manager=None, enable_elastic_ep=False,
        eplb_manager=None, hisparse_coordinator=None, lora_manager=None,
        prefill_cuda_graph_runner=None, support_pp=False, is_generation=True,
        device_timer=None, req_to_token_pool=server.req_to_token_pool,
        pp_group=SimpleNamespace(is_last_rank=True), model=StubModel(dispatch),
        attn_backend=BackendSeam(dispatch), decode_cuda_graph_runner=None,
        attn_dcp_size=1)  # no decode context parallel (0.5.21's eager runner reads it)
    with _one_rank():
        mr.eager_runner = EagerRunner(mr, run_warmup=False)
    return mr


#: the rank names the eager runner's constructor reads (0.5.21: ``attn_tp_rank``)
RANK_NAMES = ("attn_tp_rank",)


def _one_rank():
    """The process's place in its attention-TP group where the release reads it and this
    one-process server never wrote it (0.5.21's runner constructor; a launcher publishes it from
    the rank bundle: rank 0 of a one-rank group here), else nothing."""
    try:
        from sglang.srt.runtime_context import get_parallel
    except ImportError:  # pragma: no cover - depends on the release
        return contextlib.nullcontext()
    unwritten = {}
    for name in RANK_NAMES:
        try:
            getattr(get_parallel(), name)
        except RuntimeError:  # "has not been written in this process"
            unwritten[name] = 0
        except (AttributeError, ValueError):
            continue
    return get_parallel().override(**unwritten) if unwritten else contextlib.nullcontext()


class Dispatch:
    """One server-level run's model runner: :meth:`forward` runs one forward through the
    release's ``ModelRunner.forward``."""

    def __init__(self, server, fill=None):
        self.engine = server.engine
        self.fill = fill
        self.runner = _model_runner(server, self)
        if fill is not None:  # the deciding runner, with the graph backend seam
            r = fill.runner
            r.backend = ReplaySeam(self)
            # as the constructor leaves them on a host without external events
            r.in_graph_metadata_prep_done, r.is_dllm = None, False
            r.device_module = torch.get_device_module(self.runner.device)
            r.model_runner.device_timer = None
            r.model_runner.model = self.runner.model
            self.runner.decode_cuda_graph_runner = r
        self.current = 0

    def forward(self, index: int, fb, n_real: int, marker=None):
        """Forward ``index`` of batch ``fb`` (the release's ForwardBatch, padded where a sync
        padded it): ``(engine ForwardObs, graph fill record or {}, dispatch record)``;
        ``marker``: how the record names this forward where metadata was built for it
        (default: ``index``)."""
        self.current, self.n_real = index, n_real
        self.marker = index if marker is None else marker
        self.obs, self.graph, self.handed = None, {}, None
        out = self.runner.forward(fb)
        if self.obs is None:
            raise RuntimeError(f"forward {index}: the release's runner never called the model")
        rec = {"entry": "graph" if out.can_run_graph else ENTRIES[self.handed.forward_mode.name],
               "mode": self.handed.forward_mode.name, "batch_size": int(self.handed.batch_size)}
        if not out.can_run_graph:  # the eager backend's metadata after the forward
            md = self.runner.attn_backend.forward_metadata
            rec["metadata_of"] = None if md is None else md.forward
        return self.obs, self.graph, rec


#: driven where the release's eager runner can be built without its warm-up (``run_warmup``:
#: 0.5.22, 0.5.23); 0.5.18's takes no such flag and 0.5.12 keeps its own
#: ModelRunner.forward_decode / forward_extend / forward_idle: not dispatched here
DRIVEN = EagerRunner is not None and "run_warmup" in inspect.signature(
    EagerRunner.__init__).parameters


def padded(fb, p: dict | None, fill_value: int = 1):
    """``fb`` padded as the MLP sync's padding ``p`` says (the release's padding ran on the
    DPSync ranks, :mod:`swafuzz.features.dp.sglang_server_pad`; None: not padded): the
    release's ``_pad_inputs_to_size`` to ``p``'s token count and batch size (``fill_value``:
    the DSV4 backend's CUDA seq-len fill value, 1, as the ranks answer it), then the ranks'
    own ``out_cache_loc`` / ``positions`` / ``seq_lens`` rows (what the deployed rank holds;
    a rank-side server mutant shows in them); a relabelled mode (a DECODE as one-token EXTENDs, an IDLE as a dummy
    EXTEND) takes the ranks' mode and extend lengths."""
    if p is None:
        return fb
    n, bs = len(p["out_cache_loc"]), int(p["batch_size"])
    pad_runner = SimpleNamespace(attn_backend=SimpleNamespace(
        get_cpu_graph_seq_len_fill_value=lambda: fill_value,
        get_cuda_graph_seq_len_fill_value=lambda: fill_value))
    if p.get("mode", fb.forward_mode.name) != fb.forward_mode.name:
        from sglang.srt.model_executor.forward_batch_info import ForwardMode
        ext = [int(x) for x in p["extend_seq_lens"]]
        seq = [int(x) for x in p["seq_lens"]]
        if fb.forward_mode.is_idle():  # the dummy request: the ranks' one sequence
            fb.seq_lens = torch.tensor(seq[:1], dtype=torch.int64)
            fb.seq_lens_cpu = fb.seq_lens.clone()
            fb.orig_seq_lens = fb.seq_lens.to(torch.int32)
            fb.seq_lens_sum = sum(seq[:1])
        fb.forward_mode = ForwardMode[p["mode"]]
        fb.extend_seq_lens = torch.tensor(ext, dtype=torch.int32)
        fb.extend_seq_lens_cpu = ext
        fb.extend_num_tokens = sum(ext)
        prefix = [s - e for s, e in zip(seq, ext)]
        fb.extend_prefix_lens = torch.tensor(prefix, dtype=torch.int64)
        fb.extend_prefix_lens_cpu = fb.extend_logprob_start_lens_cpu = prefix
        fb.extend_start_loc = torch.cumsum(fb.extend_seq_lens, 0, dtype=torch.int32) - \
            fb.extend_seq_lens
    fb.batch_size = bs  # as prepare_mlp_sync_batch sets it before padding
    fb._pad_inputs_to_size(pad_runner, n, bs)
    for k in ("out_cache_loc", "positions", "seq_lens"):  # the rows as the ranks padded them
        t = getattr(fb, k)
        rows = torch.tensor([int(x) for x in p[k]], dtype=t.dtype, device=t.device)
        if rows.shape != t.shape:
            raise RuntimeError(f"{k}: the ranks padded {tuple(rows.shape)} rows, the release's "
                               f"_pad_inputs_to_size here {tuple(t.shape)}")
        setattr(fb, k, rows)
    return fb


def resolve_inputs(batch) -> None:
    """The release's ``resolve_forward_inputs`` (the scheduler's, at forward entry) on a
    non-overlap, non-speculative batch: a prefill's staged ids become ``input_ids`` (a DECODE
    already holds its sampled ids: the future map, absent here, is not read)."""
    from sglang.srt.managers.overlap_utils import resolve_forward_inputs
    resolve_forward_inputs(batch, SimpleNamespace(spec_algo=SpeculativeAlgorithm.NONE))
