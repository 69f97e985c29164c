"""Speculative decoding (EAGLE, top-k 1) at server level through the release's spec-v2 code
(imports SGLang; what stays modelled: :mod:`.hops`). A speculative DECODE is one EAGLE v2
iteration:

* prepare: ``ScheduleBatch.prepare_for_decode`` -> ``eagle_prepare_for_decode`` (SWA eviction,
  ``get_alloc_reserve_per_decode``, ``alloc_for_spec_decode`` writing ``req_to_token`` and
  ``kv_allocated_len``);
* draft: ``prepare_for_draft`` (write locations gathered by ``assign_draft_cache_locs_contiguous``;
  with the target's ``KVIndexTranslator`` the window plan ``KVLocPlan`` that verify and draft
  extend then write), then ``steps - 1`` draft decodes, each storing its column
  (``per_step_draft_out_cache_loc``) through the multi-step backend; draft tokens are the
  timeline's (proposals need weights);
* verify: an ``EagleVerifyInput`` (those tokens, the draft's plan) -> ``eagle_prepare_for_verify``
  (TARGET_VERIFY ``ForwardBatch.init_new``); the stub model stores every layer via ``store_cache``;
* accept: the Case's accept lengths stand in for ``eagle_sample``; ``_resolve_spec_v2_tokens``
  commits them (``kv_committed_len``); ``seq_lens`` becomes the verify's ``seq_lens + accept_lens``;
* draft extend: ``prepare_for_draft_extend`` with an ``EagleDraftExtendInput`` (DRAFT_EXTEND_V2
  over the verify window), ``init_new`` for a draft runner; the stub draft stores its layer.

Each iteration appends a :class:`SpecRec` to ``ServerObs.spec``; after the run the release
allocator's free full / SWA slots (``free``) let the oracle check for leaks.
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
from swafuzz.targets.sglang.pipeline import seams, spec_graph, steps
from swafuzz.targets.sglang.pipeline.mutants import patched

try:  # the release's spec-v2 EAGLE code (0.5.22, 0.5.23)
    from sglang.srt.managers.scheduler_components.batch_result_processor import (
        SchedulerBatchResultProcessor,
    )
    from sglang.srt.speculative import eagle_utils, eagle_worker_common
    from sglang.srt.speculative.eagle_info import (
        EagleDraftExtendInput,
        EagleDraftInput,
        EagleVerifyInput,
    )
    from sglang.srt.speculative.eagle_utils import per_step_draft_out_cache_loc
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
        mr.attn_backend = _NoMetadata()
        self.target_worker = SimpleNamespace(model_runner=mr)
        self.draft_runner = SimpleNamespace(**vars(mr))
        self.draft_runner.is_draft_worker = True
        self.draft_runner.attn_backend = _NoMetadata()
        self.fill = None  # a DECODE is an iteration: no decode graph of its own
        #: with decode graphs, the target's TARGET_VERIFY graph runner (:mod:`.spec_graph`),
        #: which the release's verify prep asks and fills
        self.verify_fill = (spec_graph.VerifyFill(self.srv, self.spec_algorithm, self.num_draft,
                                                  self.num_steps)
                            if self.srv.graph_runner is not None else None)
        mr.decode_cuda_graph_runner = None if self.verify_fill is None else self.verify_fill.runner

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
        drafts, plan = self.draft(fwd, b, draft_tokens)
        vi = EagleVerifyInput(
            draft_token=draft_tokens, custom_mask=None, positions=positions,
            retrieve_index=None, retrieve_next_token=None, retrieve_next_sibling=None,
            retrieve_cum_len=None, spec_steps=self.num_steps, topk=self.topk,
            draft_token_num=N, capture_hidden_mode=None, seq_lens_sum=None, seq_lens_cpu=None)
        if plan is not None:  # verify and draft extend write the window the draft planned
            vi.kv_loc_plan, vi.prepared_out_cache_loc = plan, plan.write_virtual
        b.spec_info = vi
        vfb, on_graph = eagle_utils.eagle_prepare_for_verify(vi, s.req_to_token_pool, b,
                                                             self.target_worker)
        filled = self.verify_fill.record() if on_graph else None
        verify = self.spec_store(fwd, vfb, "target", HarnessMode.TARGET_VERIFY, filled)
        mapping = s.allocator.full_to_swa_index_mapping.tolist()  # what the verify reads
        accept = torch.tensor(fwd.accepts, dtype=torch.int64)
        new_seq_lens = b.seq_lens + accept  # run_eagle_verify's unfused commit
        de = EagleDraftExtendInput(hidden_states=None, num_correct_drafts=accept - 1,
                                   num_accept_tokens=accept, num_tokens_per_req=N,
                                   num_tokens_for_logprob_per_req=N)
        predict = draft_tokens.clone()
        dfb = eagle_worker_common.prepare_for_draft_extend(de, b, predict, N, self.draft_runner, None,
                                       return_hidden_states_before_norm=False,
                                       kv_loc_plan=vi.kv_loc_plan)
        draft = self.spec_store(fwd, dfb, "draft", HarnessMode.DRAFT_EXTEND_V2)
        self.commit(b, fwd, accept, new_seq_lens)
        table = s.req_to_token_pool.req_to_token
        rec = ForwardRec(
            index=fwd.index, mode="DECODE", alloc=alloc, stores=verify["stores"],
            exec="eager", mapping=mapping,
            positions=verify["positions"], seq_lens=pre)
        self.obs.spec.append({
            "index": fwd.index, "bs": bs, "draft": drafts, "verify": verify,
            "draft_extend": draft,
            "committed": [int(r.kv.kv_committed_len) for r in b.reqs],
            "allocated": [int(r.kv.kv_allocated_len) for r in b.reqs],
            "seq_lens": b.seq_lens.tolist(), "free": self.free_state(),
            "rows": [table[int(i), :int(r.kv.kv_allocated_len)].tolist()
                     for i, r in zip(b.req_pool_indices.tolist(), b.reqs)]})
        return rec

    def draft(self, fwd: Forward, b, draft_tokens: torch.Tensor):
        """The draft (module docstring): ``prepare_for_draft``, then ``steps - 1`` stub decode
        forwards through the multi-step backend. Returns per step what it stored, and the plan."""
        s, eng, bs = self.srv, self.srv.engine, len(b.reqs)
        first = draft_tokens.view(bs, self.num_draft)[:, :1]
        b.spec_info = EagleDraftInput(topk_p=torch.ones(bs, 1), topk_index=first,
                                      bonus_tokens=first.view(-1))
        fb, _graph, plan = eagle_worker_common.prepare_for_draft(
            b.spec_info, s.req_to_token_pool, b, None, self.draft_runner, self.topk,
            self.num_steps, target_translator=s.translator, num_draft_tokens=self.num_draft)
        loc = fb.out_cache_loc.to(torch.int64)
        seq = b.seq_lens.to(torch.int64)
        pos = torch.tensor([p + k for p in seq.tolist() for k in range(self.num_steps)],
                           dtype=torch.int64)
        hfb = HarnessBatch(HarnessMode.DECODE, bs, loc, seq, pos)
        ms = eng.multistep_backend
        ms.init_forward_metadata(hfb)
        per_step = per_step_draft_out_cache_loc(loc, bs, self.topk, self.num_steps)
        out = []
        for step in range(self.num_steps - 1):  # the last step samples, writes nothing
            fo = eng.eager_stores(fwd.index, step + 1, "draft", ms.backends[step],
                                  hfb.view(out_cache_loc=per_step[step]), bs)
            out.append({"out_cache_loc": per_step[step].tolist(),
                        "stores": [st.locs for st in fo.stores]})
        return out, plan

    def spec_store(self, fwd: Forward, fb, pool: str, mode: HarnessMode,
                   filled: dict | None = None) -> dict:
        """The stub model's stores for the release's ForwardBatch ``fb`` (every layer of
        ``pool``), and what the batch held; ``filled``: the verify graph runner's fill of it
        (:mod:`.spec_graph`; replayed when the executor captures graphs, else eager)."""
        eng = self.srv.engine
        loc = fb.out_cache_loc.to(torch.int64)
        seq = fb.seq_lens.to(torch.int64)
        pos = fb.positions if fb.positions is not None else fb.spec_info.positions
        pos = pos.to(torch.int64)  # a verify's positions: its input's (the draft tree's)
        hfb = HarnessBatch(mode, fb.batch_size, loc, seq, pos)
        if filled is not None and eng.executor.graphs:
            fo = eng.graph_forward(fwd.index, pool, "verify", self.verify_fill.replayed(filled),
                                   loc.numel(), mode.name)[0]
        else:
            backend = eng.target_backend if pool == "target" else eng.draft_extend_backend
            fo = eng.eager_forward(fwd.index, pool, backend, hfb, loc.numel())
        layers = eng.target_pool.num_layers if pool == "target" else eng.draft_pool.num_layers
        return {"mode": fb.forward_mode.name, "out_cache_loc": loc.tolist(),
                "positions": pos.tolist(), "seq_lens": seq.tolist(), "exec": fo.exec,
                "graph": filled, "stores": steps.layer_stores(fo, layers)}

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

    def free_state(self) -> dict:
        """The release allocator's free full / SWA tokens and, per sub-allocator, how many
        pages its free lists hold twice."""
        a = self.srv.allocator
        dups = []
        for sub in (a.full_attn_allocator, a.swa_attn_allocator):
            pages = free_pages(sub)
            dups.append(len(pages) - len(set(pages)))
        return {"full": a.full_available_size(), "swa": a.swa_available_size(), "dups": dups}

    def run(self):
        before = self.free_state()
        obs = super().run()
        after = self.free_state()
        obs.free = {"before": [before["full"], before["swa"]],
                    "after": [after["full"], after["swa"]], "dups": after["dups"]}
        return obs


def free_pages(sub) -> list[int]:
    """A release sub-allocator's free pages, its free list then its release list (both int64
    ``[pages]``): its own ``get_all_free_pages`` (0.5.20+), else those two lists read as that
    method reads them (0.5.18 / 0.5.19 have no such method)."""
    get = getattr(sub, "get_all_free_pages", None)
    if get is not None:
        got = get()
        return [] if got is None else got.tolist()
    return [p for part in (sub.free_pages, sub.release_pages) if part is not None
            for p in part.tolist()]


@contextlib.contextmanager
def kernels() -> Iterator[None]:
    """The release's Triton helpers here (``assign_req_to_token_pool``,
    ``assign_draft_cache_locs_contiguous``) under the interpreter: its scalar ``__index__``
    calls ``int()`` on a one-element array (refused by numpy 2.4); it takes ``.item()`` for the
    run. Kernels unchanged; without the interpreter nothing is patched."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - no Triton: nothing to patch
        yield
        return
    real = interpreter._patch_lang_tensor

    def patch(tensor, scope):
        real(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    with seams.set_attr(interpreter, "_patch_lang_tensor", patch):
        yield


def run_case(case, impl: str = "torch", mutant: str | None = None, executor=None):
    """Run ``case`` through the release's pipeline: a speculative Case through
    :class:`SpecPipeline`, any other through :func:`.steps.run_server_case`."""
    if case.config.speculative_algorithm is None:
        with kernels():  # 0.5.21's batch prep runs its Triton helpers in the interpreter too
            return steps.run_server_case(case, impl, mutant, executor)
    with patched(mutant), steps.eviction_interval(case.model.swa_eviction_interval), \
            seams.cpu_platform(), kernels():
        return SpecPipeline(case, impl, executor).run()
