"""One server-level run, step by step, through the release's own batch pipeline (imports
SGLang; hops and what stays modelled: :mod:`.hops`).

Per forward of the plan (:mod:`swafuzz.server.timeline`): EXTEND builds ``Req`` objects, matches
the tree cache, builds a ``ScheduleBatch`` (``init_new``, ``prepare_for_extend``) and
``merge_batch``-es it; DECODE runs ``prepare_for_decode``. Then ``ForwardBatch.init_new`` and the
stub model (per layer one ``store_cache`` of deterministic rows); leaving requests are freed
(``release_kv_cache``, ``filter_batch``). Every allocation is logged as it returns.
"""

from __future__ import annotations

import traceback

import torch

from swafuzz import features as registry
from swafuzz.machinery import HarnessError
from swafuzz.server.case import MAX_STEPS, ServerCase
from swafuzz.server.observation import ForwardRec, ServerObs
from swafuzz.server.timeline import Forward, Release, Retract, Timeline, output_id, prompt_ids
from swafuzz.targets.forward_mode import ForwardBatch as HarnessBatch
from swafuzz.targets.forward_mode import ForwardMode as HarnessMode
from swafuzz.targets.sglang.environ import environ
from swafuzz.targets.sglang.pipeline import dispatch, graph, seams
from swafuzz.targets.sglang.pipeline.mutants import patched
from swafuzz.targets.sglang.pipeline.raised import finalizer_asserts, where
from swafuzz.targets.sglang.pipeline.setup import Server
from swafuzz.targets.sglang.real import TARGET_VERSION

from sglang.srt.managers.schedule_batch import (  # isort: skip
    FINISH_ABORT,
    FINISH_LENGTH,
    Req,
    ScheduleBatch,
)
from sglang.srt.model_executor.forward_batch_info import ForwardBatch  # isort: skip
from sglang.srt.sampling.sampling_params import SamplingParams  # isort: skip
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm  # isort: skip

ALLOC_METHODS = ("alloc", "alloc_extend", "alloc_decode")
EVICTION_ENV = "SGLANG_SWA_EVICTION_INTERVAL"


class OutOfScope(Exception):
    """A step the server would not run as planned (a refused decode, an EXTEND beyond the free
    tokens): the run stops and the Case is out of scope, not a finding."""


class AllocTap:
    """Logs every token the release's allocator hands out as ``[full, swa]`` (the SWA slot read
    from the allocator's mapping right after the call)."""

    def __init__(self, allocator):
        self.allocator = allocator
        self.log: list[list[int]] = []
        for name in ALLOC_METHODS:
            real = getattr(allocator, name, None)
            if real is not None:
                setattr(allocator, name, self._tapped(real))

    def _tapped(self, real):
        def call(*args, **kwargs):
            out = real(*args, **kwargs)
            if out is not None:
                m = self.allocator.full_to_swa_index_mapping
                full = out.to(torch.int64)
                self.log += [[int(f), int(s)] for f, s in zip(full.tolist(),
                                                               m[full].tolist())]
            return out
        return call

    def take(self) -> list[list[int]]:
        log, self.log = self.log, []
        return log


def layer_stores(fo, layers: int) -> list[list[int]]:
    """Per layer of the pool, the locations forward ``fo``'s stores wrote (in store order)."""
    out: list[list[int]] = [[] for _ in range(layers)]
    for st in fo.stores:
        out[st.layer] += st.locs
    return out


def make_req(case: ServerCase, rid: int) -> Req:
    sp = SamplingParams(max_new_tokens=case.requests[rid].max_new_tokens)
    sp.normalize(None)
    return Req(str(rid), "", seams.token_ids(prompt_ids(case, rid)), sp, vocab_size=32000)


class Pipeline:
    #: the ScheduleBatch's speculative algorithm (:mod:`.spec` drives EAGLE)
    spec_algorithm = SpeculativeAlgorithm.NONE

    def __init__(self, case: ServerCase, impl: str = "torch", executor=None):
        self.case = case
        self.srv = Server(case, impl, executor)
        self.tap = AllocTap(self.srv.allocator)
        self.reqs: dict[int, Req] = {}
        self.running: ScheduleBatch | None = None
        self.fill = graph.GraphFill(self.srv) if self.srv.graph_runner else None
        #: the request-window hop (encoder replay): the release's window path per forward
        self.window = (registry.hook("sglang.server_window")(self)
                       if case.config.enable_encoder_swa_bounded_replay else None)
        #: the release's model-runner dispatch (runtime-context shape; graphs on the executor;
        #: not under a request window, whose hop stores through the window's own path)
        self.dispatch = (dispatch.Dispatch(self.srv, self.fill) if dispatch.DRIVEN and (
            self.fill is None or self.srv.engine.executor.graphs) and self.window is None
            else None)

    # -- scheduling steps ----------------------------------------------------------------------
    def extend(self, fwd: Forward) -> ScheduleBatch:
        s = self.srv
        new = []
        for rid, (start, n) in zip(fwd.rids, fwd.spans):
            req = self.request(rid, start)
            seams.chunk_end(req, start + n)  # the adder's (possibly truncated) chunk
            new.append(req)
        batch = ScheduleBatch.init_new(new, s.req_to_token_pool, s.allocator, s.tree_cache,
                                       s.model_runner.model_config, False,
                                       self.spec_algorithm)
        batch.prepare_for_extend()
        if self.window is not None:  # the worker's encoder-replay step (window slot resets)
            self.window.before_forward(batch)
        return batch

    def request(self, rid: int, start: int) -> Req:
        """The ``Req`` an EXTEND computes from token ``start`` on: new (matched against the tree
        cache), or the chunked request's next chunk / a retracted one."""
        if rid in self.reqs:
            req = self.reqs[rid]
            req.init_next_round_input()
            if seams.prefix_len(req) != start:
                raise RuntimeError(f"request {rid}: chunk resumes at {seams.prefix_len(req)}, "
                                   f"the plan at {start}")
            return req
        req = self.reqs[rid] = make_req(self.case, rid)
        req.init_next_round_input(self.srv.tree_cache)
        return req

    def decode(self) -> ScheduleBatch:
        b = self.running
        sampled = torch.tensor([r.output_ids[-1] for r in b.reqs], dtype=torch.int64,
                               device=b.device)
        b.input_ids = sampled
        seams.hand_sampled(b, sampled)
        b.prepare_for_decode()
        return b

    def after_forward(self, fwd: Forward, batch: ScheduleBatch) -> None:
        chunked = []
        for rid, (start, n) in zip(fwd.rids, fwd.spans):
            req = self.reqs[rid]
            fill = len(req.origin_input_ids) + len(req.output_ids)  # prompt (+ retracted outputs)
            if fwd.mode == "EXTEND" and start + n < fill:
                seams.stash_chunk(req, self.srv.tree_cache)  # the scheduler's stash
                chunked.append(req)
                continue
            req.output_ids.append(output_id(rid, len(req.output_ids)))  # the stub sampler
        if fwd.mode == "EXTEND":
            if chunked:  # the chunked request stays out of the running batch
                seams.filter_out(batch, chunked)
            if batch.is_empty():
                return
            if self.running is None or self.running.is_empty():
                self.running = batch
            else:
                self.running.merge_batch(batch)

    def release(self, ev: Release) -> None:
        for rid in ev.rids:
            req = self.reqs.pop(rid)
            req.finished_reason = (FINISH_ABORT() if rid in ev.aborted
                                   else FINISH_LENGTH(len(req.output_ids)))
            seams.release(req, self.srv.tree_cache)
        if self.running is not None:
            self.running.filter_batch()

    # -- the forward ---------------------------------------------------------------------------
    def forward(self, fwd: Forward, batch: ScheduleBatch) -> ForwardRec:
        fb = self.forward_batch(batch)
        return self.store(fwd, fb, self.pad(fb))

    def forward_batch(self, batch: ScheduleBatch) -> ForwardBatch:
        if self.dispatch is not None:  # the worker's input resolution before its forward
            dispatch.resolve_inputs(batch)
        return seams.forward_batch(batch, self.srv.model_runner)

    def pad(self, fb: ForwardBatch) -> dict | None:
        """The attention-TP ranks' padding of ``fb`` (every attention-TP rank holds this
        batch), or None with one attention-TP rank."""
        if self.case.config.attn_tp_size() == 1:
            return None
        return registry.hook("sglang.server_pad")(
            self.case.config, fb.forward_mode.name, fb.seq_lens.tolist(),
            list(fb.extend_seq_lens_cpu or ()), fb.out_cache_loc.tolist())

    def store(self, fwd: Forward, fb: ForwardBatch, p: dict | None) -> ForwardRec:
        """The stub model's stores of ``fb`` after the release's padding ``p`` (None: none;
        its ``mode`` / ``extend_seq_lens``, where given, the padded batch's: a DECODE the MLP
        sync relabels EXTEND)."""
        s = self.srv
        loc, seq, pos = fb.out_cache_loc, fb.seq_lens, fb.positions
        bs, mode = fb.batch_size, fb.forward_mode.name
        per = (list(fb.extend_seq_lens_cpu) if fb.forward_mode.is_extend()
               else [1] * fb.batch_size)
        if p is not None:
            loc, seq, pos = (torch.tensor(p[k], dtype=torch.int64)
                             for k in ("out_cache_loc", "seq_lens", "positions"))
            bs = p["batch_size"]
            if p.get("mode", mode) != mode:  # relabelled: one extend row per request
                mode, per = p["mode"], list(p["extend_seq_lens"])
        hfb = HarnessBatch(HarnessMode[mode], bs, loc.to(torch.int64),
                           seq.to(torch.int64), pos.to(torch.int64))
        eng = s.engine
        n = hfb.out_cache_loc.numel()
        win = None
        filled: dict = {}
        if self.window is not None:  # stores through the release's request window
            win = self.window.forward(fwd.index, mode, fb.req_pool_indices.tolist(), per,
                                      hfb.out_cache_loc.tolist(), hfb.positions.tolist())
            per_layer, exec_ = win.pop("stores"), "eager"
        elif self.dispatch is not None:  # the release's ModelRunner.forward (:mod:`.dispatch`)
            fo, filled, self.obs.dispatch[fwd.index] = self.dispatch.forward(
                fwd.index, dispatch.padded(fb, p), n)
            per_layer, exec_ = layer_stores(fo, eng.target_pool.num_layers), fo.exec
        else:
            if self.can_run_graph(fb):  # the release's decision and buffer fill (:mod:`.graph`);
                filled, gfb = self.fill.replay_batch(fb)  # the replay: the engine's runner
                fo = eng.graph_forward(fwd.index, "target", "decode", gfb, n,
                                       hfb.forward_mode.name)[0]
            else:
                fo = eng.eager_forward(fwd.index, "target", eng.target_backend, hfb, n)
            per_layer, exec_ = layer_stores(fo, eng.target_pool.num_layers), fo.exec
        W = self.case.model.sliding_window
        table = s.req_to_token_pool.req_to_token
        window_rows = [table[int(i), max(0, int(n) - W):int(n)].tolist()
                       for i, n in zip(fb.req_pool_indices.tolist(), fb.seq_lens.tolist())]
        return ForwardRec(index=fwd.index, mode=mode, alloc=self.tap.take(),
                          stores=per_layer, exec=exec_,
                          mapping=s.allocator.full_to_swa_index_mapping.tolist(),
                          positions=hfb.positions.tolist(), seq_lens=hfb.seq_lens.tolist(),
                          window_rows=window_rows, graph=filled, window=win,
                          free=self.free_tokens())

    def free_tokens(self) -> list[int]:
        """The release allocator's free ``[full, SWA]`` tokens now."""
        a = self.srv.allocator
        return [int(a.full_available_size()), int(a.swa_available_size())]

    def can_run_graph(self, fb: ForwardBatch) -> bool:
        """A graph-capable mode, a decode graph runner and its decision (:func:`.seams.graph_runner`);
        an executor without graphs runs every forward eagerly."""
        r = self.srv.graph_runner
        if r is None or not fb.forward_mode.is_cuda_graph():
            return False
        return bool(r(fb)) and bool(self.srv.engine.executor.graphs)

    def retract(self, t: int, running: tuple[int, ...]):
        """The scheduler before a DECODE: the release's capacity gate, and when it refuses,
        its ``retract_decode``: ``(requests sent back, requests kept in the batch's order)``."""
        b = self.running
        if b.check_decode_mem():
            return (), ()
        retracted, _, aborted = seams.retract(b, self.srv.server_args)
        if aborted:
            raise OutOfScope(f"retract_decode aborted {[r.rid for r in aborted]} (out of memory "
                             "even after retracting): not driven")
        back = tuple(int(r.rid) for r in retracted)
        kept = tuple(int(r.rid) for r in b.reqs)  # the release reorders its running batch
        self.obs.retractions[t] = [list(back), list(kept)]
        return back, kept

    def fits(self, prefill) -> bool:
        """The adder's budget (modelled): a prefill's tokens, a page per request on top, within
        the release allocator's free full and SWA tokens."""
        rids, spans = prefill
        s = self.srv
        need = sum(n for _, n in spans) + len(rids) * self.case.config.page_size
        return min(s.allocator.full_available_size(), s.allocator.swa_available_size()) >= need

    def admit(self, t: int, prefill) -> int:
        """How many of the offered requests the adder admits: the longest head that fits; none
        with nothing running: it waits forever (out of scope)."""
        rids, spans = prefill
        k = len(rids)
        while k and not self.fits((rids[:k], spans[:k])):
            k -= 1
        if k == 0 and not self.srv_running():
            raise OutOfScope(f"step {t}: nothing runs and no waiting request fits the free "
                             "tokens (the adder would wait forever)")
        if k < len(rids):
            self.obs.admissions[t] = k
        return k

    def srv_running(self) -> bool:
        return self.running is not None and not self.running.is_empty()

    def start(self) -> Timeline:
        self.obs = ServerObs(target_version=TARGET_VERSION)
        self.obs.free = {"before": self.free_tokens()}
        self.tl = Timeline(self.case, self.retract, self.admit)
        return self.tl

    def leave(self, t: int) -> None:
        """Step ``t``'s leaving requests, released by the release."""
        for ev in self.tl.leave(t):
            self.release(ev)
            self.obs.release_free[t] = self.free_tokens()
            stray = self.tap.take()
            if stray:
                raise RuntimeError(f"releasing requests {list(ev.rids)} allocated "
                                   f"{len(stray)} tokens {stray[:4]}")

    def batches(self, t: int) -> list[tuple[Forward, ScheduleBatch]]:
        """Step ``t``'s forward (at most one) with the release's batch for it."""
        out = []
        for ev in self.tl.schedule(t):
            if isinstance(ev, Retract):
                continue  # done by the release inside retract(), before the DECODE
            out.append((ev, self.extend(ev) if ev.mode == "EXTEND" else self.decode()))
        return out

    def failed(self, e: BaseException) -> None:
        """Record why the run stopped (out of scope, or any failure)."""
        if isinstance(e, OutOfScope):
            self.obs.out_of_scope = str(e)
        else:
            tb = traceback.extract_tb(e.__traceback__)[-1]
            self.obs.error = f"{type(e).__name__}: {e} (at {where(tb.filename)}:{tb.lineno})"

    def finish(self) -> ServerObs:
        pool = self.srv.engine.target_pool
        self.obs.pools = [pool.layer_bytes(k) for k in range(pool.num_layers)]
        self.obs.free.setdefault("after", self.free_tokens())
        return self.obs

    def run(self) -> ServerObs:
        tl = self.start()
        try:
            for t in range(MAX_STEPS + MAX_STEPS):
                if tl.done():
                    break
                self.leave(t)
                for ev, batch in self.batches(t):
                    self.obs.forwards.append(self.forward(ev, batch))
                    self.after_forward(ev, batch)
        except (HarnessError, MemoryError):  # the harness's machinery: exit 3, not a finding
            raise
        except Exception as e:  # noqa: BLE001 - the observation records any failure
            self.failed(e)
        return self.finish()


def run_server_case(case: ServerCase, impl: str = "torch", mutant: str | None = None,
                    executor=None) -> ServerObs:
    """Run ``case`` through the release's pipeline (with server mutant ``mutant``'s patch of
    the release's code, :mod:`.mutants`; ``executor``: the harness's executor, whose graphs a
    decode the release's graph runner accepts replays); the observation of what it did. An
    assertion of the release that fails inside a finalizer (:mod:`.raised`) is the run's error
    when nothing else failed first."""
    with finalizer_asserts() as caught:
        obs = _run(case, impl, mutant, executor)
    if caught and obs.error is None and obs.out_of_scope is None:
        obs.error = caught[0]  # the release's own invariant, fired where it cannot raise
    return obs


def _run(case: ServerCase, impl: str, mutant: str | None, executor) -> ServerObs:
    with patched(mutant), eviction_interval(case.model.swa_eviction_interval), \
            environ(case.config.env_dict()), seams.cpu_platform():
        if case.config.enable_dp_attention:  # one pipeline per attention-DP rank
            return registry.hook("sglang.server_ranks")(case, impl, executor, Pipeline)
        if case.config.disaggregation_mode == "decode":  # prompts taken over from a prefill
            return registry.slot("sglang", "server_takeover")(case, impl, executor, Pipeline)
        if not case.config.disable_radix_cache:  # the tree cache shares prefixes
            return registry.slot("sglang", "server_tree")(case, impl, executor, Pipeline)
        return Pipeline(case, impl, executor).run()


def eviction_interval(n: int):
    """The server's SGLANG_SWA_EVICTION_INTERVAL for the run (the release reads it per
    eviction), restored after."""
    return environ({EVICTION_ENV: str(n)})
