"""Speculative decoding (EAGLE, top-k 1) at server level through the release's own spec-v2
code (imports SGLang; what stays modelled: :mod:`.hops`).

A DECODE of a speculative Case is one iteration of the release's EAGLE v2 worker:

* the scheduler's ``ScheduleBatch.prepare_for_decode``, which hands the iteration to the
  release's ``eagle_prepare_for_decode`` (SWA eviction, the per-decode KV reserve
  ``get_alloc_reserve_per_decode``, ``alloc_for_spec_decode`` writing ``req_to_token``,
  ``kv_allocated_len``);
* the verify: an ``EagleVerifyInput`` holding the timeline's draft tokens (the draft model's
  proposals are not computed: no weights) handed to the release's ``eagle_prepare_for_verify``,
  which assigns the verify window's ``out_cache_loc`` from ``req_to_token`` (its Triton helper in
  the interpreter) and builds the TARGET_VERIFY ``ForwardBatch.init_new``; the stub model
  stores every target layer through ``store_cache``;
* the accept: the Case's accept lengths stand in for ``eagle_sample``; the release's
  ``_resolve_spec_v2_tokens`` commits them (``kv_committed_len``), the scheduler's non-overlap
  tail sets ``seq_lens`` to the verify's ``seq_lens + accept_lens``;
* the draft extend after verify: the release's ``prepare_for_draft_extend`` with an
  ``EagleDraftExtendInput`` (DRAFT_EXTEND_V2 over the verify window) and ``ForwardBatch.init_new``
  for a draft model runner; the stub draft model stores its layer through ``store_cache``.

Per iteration a :class:`SpecRec` is appended to ``ServerObs.spec``; after the run the release
allocator's free full / SWA slots (``free``) let the oracle check that nothing leaked.
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Iterator

import torch

from swafuzz.server.observation import ForwardRec
from swafuzz.server.timeline import Forward, output_id
from swafuzz.targets.forward_mode import ForwardBatch as HarnessBatch
from swafuzz.targets.forward_mode import ForwardMode as HarnessMode
from swafuzz.targets.sglang.pipeline import seams, steps
from swafuzz.targets.sglang.pipeline.mutants import patched

try:  # the release's spec-v2 EAGLE code (0.5.22, 0.5.23)
    from sglang.srt.managers.scheduler_components.batch_result_processor import (
        SchedulerBatchResultProcessor,
    )
    from sglang.srt.speculative import eagle_worker_common
    from sglang.srt.speculative.eagle_info import EagleDraftExtendInput, EagleVerifyInput
    from sglang.srt.speculative.eagle_utils import eagle_prepare_for_verify
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
    SPEC_V2 = True
except ImportError:  # pragma: no cover - depends on the release (0.5.12: refused by argnames)
    SPEC_V2 = False
    SpeculativeAlgorithm = steps.SpeculativeAlgorithm


class _NoMetadata:
    """The draft runner's attention backend: its eager metadata init is the component
    engine's draft-extend backend's (run by the store), not this stand-in's."""

    verify_mask = None

    def init_forward_metadata(self, forward_batch) -> None:
        return None


class SpecPipeline(steps.Pipeline):
    spec_algorithm = SpeculativeAlgorithm.EAGLE

    def __init__(self, case, impl: str = "torch", executor=None):
        super().__init__(case, impl, executor)
        c = case.config
        self.num_draft = c.speculative_num_draft_tokens
        self.num_steps = c.speculative_num_steps
        self.topk = c.speculative_eagle_topk
        mr = self.srv.model_runner
        mr.spec_algorithm = self.spec_algorithm
        mr.decode_cuda_graph_runner = None
        mr.attn_backend = _NoMetadata()
        self.target_worker = SimpleNamespace(model_runner=mr)
        self.draft_runner = SimpleNamespace(**vars(mr))
        self.draft_runner.is_draft_worker = True
        self.draft_runner.attn_backend = _NoMetadata()
        self.fill = None  # decode graphs with speculative decoding: refused before the run

    # -- one speculative iteration --------------------------------------------------------------
    def forward(self, fwd: Forward, batch) -> ForwardRec:
        if fwd.mode != "DECODE":
            return super().forward(fwd, batch)
        return self.iteration(fwd, batch)

    def iteration(self, fwd: Forward, b) -> ForwardRec:
        s, N = self.srv, self.num_draft
        alloc = self.tap.take()  # prepare_for_decode's reserve (Pipeline.decode ran it)
        bs = len(b.reqs)
        pre = b.seq_lens.tolist()
        draft_tokens = torch.tensor([output_id(int(r.rid), len(r.output_ids) + k)
                                     for r in b.reqs for k in range(N)], dtype=torch.int64)
        positions = torch.tensor([p + k for p in pre for k in range(N)], dtype=torch.int64)
        vi = EagleVerifyInput(
            draft_token=draft_tokens, custom_mask=None, positions=positions,
            retrieve_index=None, retrieve_next_token=None, retrieve_next_sibling=None,
            retrieve_cum_len=None, spec_steps=self.num_steps, topk=self.topk,
            draft_token_num=N, capture_hidden_mode=None, seq_lens_sum=None, seq_lens_cpu=None)
        b.spec_info = vi
        vfb, _graph = eagle_prepare_for_verify(vi, s.req_to_token_pool, b, self.target_worker)
        verify = self.store(fwd, vfb, "target", HarnessMode.TARGET_VERIFY)
        accept = torch.tensor(fwd.accepts, dtype=torch.int64)
        new_seq_lens = b.seq_lens + accept  # run_eagle_verify's unfused commit
        de = EagleDraftExtendInput(hidden_states=None, num_correct_drafts=accept - 1,
                                   num_accept_tokens=accept, num_tokens_per_req=N,
                                   num_tokens_for_logprob_per_req=N)
        predict = draft_tokens.clone()
        dfb = eagle_worker_common.prepare_for_draft_extend(de, b, predict, N, self.draft_runner, None,
                                       return_hidden_states_before_norm=False,
                                       kv_loc_plan=vi.kv_loc_plan)
        draft = self.store(fwd, dfb, "draft", HarnessMode.DRAFT_EXTEND_V2)
        self.commit(b, fwd, accept, new_seq_lens)
        table = s.req_to_token_pool.req_to_token
        rec = ForwardRec(
            index=fwd.index, mode="DECODE", alloc=alloc, stores=verify["stores"],
            exec="eager", mapping=s.allocator.full_to_swa_index_mapping.tolist(),
            positions=verify["positions"], seq_lens=pre)
        self.obs.spec.append({
            "index": fwd.index, "bs": bs, "verify": verify, "draft_extend": draft,
            "committed": [int(r.kv.kv_committed_len) for r in b.reqs],
            "allocated": [int(r.kv.kv_allocated_len) for r in b.reqs],
            "seq_lens": b.seq_lens.tolist(),
            "rows": [table[int(i), :int(r.kv.kv_allocated_len)].tolist()
                     for i, r in zip(b.req_pool_indices.tolist(), b.reqs)]})
        return rec

    def store(self, fwd: Forward, fb, pool: str, mode: HarnessMode) -> dict:
        """The stub model's stores for the release's ForwardBatch ``fb`` (every layer of
        ``pool``), and what the batch held."""
        eng = self.srv.engine
        loc = fb.out_cache_loc.to(torch.int64)
        seq = fb.seq_lens.to(torch.int64)
        pos = fb.positions if fb.positions is not None else fb.spec_info.positions
        pos = pos.to(torch.int64)  # a verify's positions: its input's (the draft tree's)
        hfb = HarnessBatch(mode, fb.batch_size, loc, seq, pos)
        backend = eng.target_backend if pool == "target" else eng.draft_extend_backend
        fo = eng.eager_forward(fwd.index, pool, backend, hfb, loc.numel())
        layers = eng.target_pool.num_layers if pool == "target" else eng.draft_pool.num_layers
        per_layer: list[list[int]] = [[] for _ in range(layers)]
        for st in fo.stores:
            per_layer[st.layer] += st.locs
        return {"mode": fb.forward_mode.name, "out_cache_loc": loc.tolist(),
                "positions": pos.tolist(), "seq_lens": seq.tolist(), "stores": per_layer}

    def commit(self, b, fwd: Forward, accept: torch.Tensor, new_seq_lens) -> None:
        """The accept as the release books it: ``_resolve_spec_v2_tokens`` (kv_committed_len)
        over the result, then the scheduler's non-overlap tail (seq_lens, the draft input and
        verify tokens cleared)."""
        N = self.num_draft
        ids = torch.tensor([output_id(int(r.rid), len(r.output_ids) + k)
                            for r in b.reqs for k in range(N)], dtype=torch.int64)
        result = SimpleNamespace(
            next_token_ids=ids, accept_lens=accept.to(torch.int32), num_non_draft_tokens_per_req=1,
            block_accept_lens=None, cap_lens=None, speculative_num_draft_tokens=N,
            speculative_output_stride=None)
        proc = SimpleNamespace(
            metrics_reporter=SimpleNamespace(snapshot_spec_decode_metrics=lambda *a: None),
            model_worker=SimpleNamespace(on_verify_complete_cpu=lambda *a, **k: None),
            advance_grammar_fsm=lambda *a: None)
        tokens = SchedulerBatchResultProcessor._resolve_spec_v2_tokens(proc, result, b)
        for r, toks in zip(b.reqs, tokens):
            r.output_ids.extend(toks)  # the stub sampler's tokens: output_id(rid, k)
        b.seq_lens = new_seq_lens.to(b.seq_lens.dtype)
        if b.seq_lens_cpu is not None:
            b.seq_lens_cpu = b.seq_lens.to("cpu")
            b.seq_lens_sum = int(b.seq_lens_cpu.sum())
        b.input_ids = None
        b.spec_info = None
        b.forward_mode = b.forward_mode.DECODE

    def after_forward(self, fwd: Forward, batch) -> None:
        if fwd.mode != "DECODE":
            super().after_forward(fwd, batch)

    def decode(self):
        b = self.running
        b.input_ids = None
        b.prepare_for_decode()
        return b

    def run(self):
        s = self.srv
        free0 = (s.allocator.full_available_size(), s.allocator.swa_available_size())
        obs = super().run()
        obs.free = {"before": list(free0),
                    "after": [s.allocator.full_available_size(),
                              s.allocator.swa_available_size()]}
        return obs


def assign_rows(req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc,
                batch_size) -> None:
    """``req_to_token[r, start:end]`` = the next ``end - start`` of ``out_cache_loc``, per
    request in batch order: what the release's ``assign_req_to_token_pool`` Triton kernel
    writes (it stops the Triton interpreter: its loop bound converts a 1-element array to a
    Python int, which numpy 2.4 refuses), in torch."""
    k = 0
    starts, ends = start_offset.tolist(), end_offset.tolist()
    for b, r in enumerate(req_pool_indices.tolist()[:batch_size]):
        n = ends[b] - starts[b]
        req_to_token[r, starts[b]:ends[b]] = out_cache_loc[k:k + n].to(req_to_token.dtype)
        k += n


def window_locs(req_pool_indices, req_to_token, start_offset, batch_size, draft_token_num,
                device, **_):
    """Per request in batch order ``req_to_token[r, start:start + draft_token_num]``: what the
    release's ``assign_extend_cache_locs_uniform`` Triton kernel gathers (same interpreter
    refusal as :func:`assign_rows`; its CPU branch needs ``sgl_kernel``), in torch."""
    starts = start_offset.tolist()
    return torch.cat([req_to_token[r, starts[b]:starts[b] + draft_token_num].to(torch.int64)
                      for b, r in enumerate(req_pool_indices.tolist()[:batch_size])])


@contextlib.contextmanager
def kernels() -> Iterator[None]:
    """The release's Triton helpers the interpreter cannot run, replaced for the run
    (:func:`assign_rows`, :func:`window_locs`)."""
    from sglang.kernels.ops.speculative import cache_locs
    from sglang.srt.mem_cache import allocation
    from sglang.srt.speculative import eagle_utils
    real = (allocation.assign_req_to_token_pool_func,
            cache_locs.assign_extend_cache_locs_uniform_func)
    allocation.assign_req_to_token_pool_func = assign_rows
    cache_locs.assign_extend_cache_locs_uniform_func = window_locs
    eagle_utils._PREPARE_FOR_VERIFY_DEPS = None  # its import cache: re-resolved
    try:
        yield
    finally:
        (allocation.assign_req_to_token_pool_func,
         cache_locs.assign_extend_cache_locs_uniform_func) = real
        eagle_utils._PREPARE_FOR_VERIFY_DEPS = None


def run_case(case, impl: str = "torch", mutant: str | None = None, executor=None):
    """Run ``case`` through the release's pipeline: a speculative Case through
    :class:`SpecPipeline`, any other through :func:`.steps.run_server_case`."""
    if case.config.speculative_algorithm is None:
        return steps.run_server_case(case, impl, mutant, executor)
    with patched(mutant), steps.eviction_interval(case.model.swa_eviction_interval), \
            seams.cpu_platform(), kernels():
        return SpecPipeline(case, impl, executor).run()
