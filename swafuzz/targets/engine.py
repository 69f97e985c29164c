"""The unified engine: runs one Case and returns its Observation (docs/ARCHITECTURE.md).

:class:`UnifiedEngine` wires allocator, target and draft pools sharing ``M``, backends, runners
and DP, and executes every step per ``features/*/SEMANTICS.md``. Component classes are class
attributes (the seams: :mod:`swafuzz.targets.protocol`). Without ``executor.graphs`` every
forward is eager; else ``exec == "graph"`` steps go through the runners (a batch above every
bucket falls back to eager, as upstream's ``can_run``; ``ForwardObs.exec`` says how it ran).
"""

from __future__ import annotations

from functools import partial

import torch

from swafuzz import features, kernels
from swafuzz.scenarios.case import Case, Step
from swafuzz.scenarios.payload import k_rows_bytes
from swafuzz.targets.allocator import SWAAllocator
from swafuzz.targets.backend import DSV4Backend, MultiStepBackend, per_step_draft_out_cache_loc
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.hooks import PartSlot
from swafuzz.targets.kv_pool import SWAKVPool
from swafuzz.targets.model import SWAModel
from swafuzz.targets.observation import ForwardObs, Observation, RedzoneObs, StepObs, store_obs
from swafuzz.targets.runners import (
    CapturedBucket,
    DecodeGraphRunner,
    DraftExtendGraphRunner,
    GraphRunner,
    MultiStepDraftRunner,
)


class _NoGraphExecutor:
    """Stand-in when no executor is given: eager, on CUDA when available else CPU (as
    ``harness.executors.base.default_device``; targets never import harness)."""

    name = "eager"
    graphs = False

    def __init__(self) -> None:
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class UnifiedEngine:
    """The unified design (PR #27091) running one Case."""

    allocator_cls = SWAAllocator
    pool_cls = SWAKVPool
    backend_cls = DSV4Backend
    multistep_backend_cls = MultiStepBackend
    decode_runner_cls = DecodeGraphRunner
    draft_extend_runner_cls = DraftExtendGraphRunner
    multistep_runner_cls = MultiStepDraftRunner
    #: the multi-step draft's per-step write-target layout (the EAGLE worker's helper)
    per_step_loc = staticmethod(per_step_draft_out_cache_loc)
    #: the cross-rank batch padding (DP attention's, features/dp/engine.py): built per engine
    rank_pad_cls = PartSlot("engine", "rank_pad")
    #: "exact": the oracle predicts every allocation (lowest free); "observed": StepObs.alloc
    #: reports the target allocator's choices and the oracle validates them (``sglang``)
    allocation = "exact"
    #: feature slots: the step path / allocator of a Case a part's ``uses_step_path`` /
    #: ``uses_allocator`` claims, the ``draft_block`` step's backend mixin
    step_path_cls = PartSlot("engine", "step_path")
    own_allocator_cls = PartSlot("engine", "allocator")
    draft_block_mixin = PartSlot("engine", "draft_block_mixin")

    def __init__(self, case: Case, impl: str = "torch", executor=None, name: str = "unified"):
        self.case = case
        self.name = name
        self.cfg = case.pool
        self.gcfg = case.graph
        self.impl_name = impl
        self.impl = kernels.get_impl(impl)
        self.executor = executor if executor is not None else _NoGraphExecutor()
        self.device = torch.device(self.executor.device)
        cfg, g = self.cfg, self.gcfg
        self.own_allocator = any(p.uses_allocator(case) for p in features.parts("engine"))
        self.target_pool = self.pool_cls("target", cfg, cfg.layers, 0, self.impl, self.device)
        self.draft_pool = self.pool_cls("draft", cfg, cfg.draft_layers, cfg.layers, self.impl,
                                        self.device)
        self.allocator = self.make_allocator()  # after the pools: a real allocator needs one
        self.target_pool.register_mapping(self.allocator.mapping)
        self.draft_pool.register_mapping(self.allocator.mapping)  # shared, by identity
        self.target_model = SWAModel(self.target_pool)
        self.draft_model = SWAModel(self.draft_pool)
        raw = g.prep_in_graph  # SGLANG_PREP_IN_CUDA_GRAPH: Raw metadata, upgraded in-graph
        self.target_backend = self.backend_cls(self.target_pool, topk=g.topk, prep_in_graph=raw)
        self.draft_extend_backend = self.backend_cls(
            self.draft_pool, topk=g.topk, draft_extend_tokens_per_bs=g.num_draft_tokens,
            prep_in_graph=raw,
            swa_loc_buffer_rows=max((p.draft_extend_loc_rows(case) for p in
                                     features.parts("engine")), default=0))
        self.multistep_backend = self.multistep_backend_cls([
            self.backend_cls(self.draft_pool, topk=g.topk, num_steps=g.num_steps, step_id=s,
                             decode_tokens_per_bs=g.topk * g.num_steps, prep_in_graph=raw)
            for s in range(g.num_steps)
        ])
        self.rank_pad = self.rank_pad_cls(self.device)
        self._runners: dict[str, GraphRunner] = {}
        self.step_path = (self.step_path_cls(self) if any(
            p.uses_step_path(case) for p in features.parts("engine")) else None)
        if self.own_allocator:  # every backend resolves store rows from the allocator's tables
            for b in (self.target_backend, self.draft_extend_backend,
                      *self.multistep_backend.backends):
                b.row_tables = self.allocator.tables

    def make_allocator(self):
        """The allocator (after the pools); a Case's own allocator keeps the store-row ``tables``."""
        if self.own_allocator:
            return self.own_allocator_cls(self.cfg, self.device)
        return self.allocator_cls(self.cfg, self.device)

    # -- runners (built on first graph use) -----------------------------------------------------
    def runner(self, kind: str) -> GraphRunner:
        if kind not in self._runners:
            g, ex = self.gcfg, self.executor
            if kind == "decode":
                r = self.decode_runner_cls(self.target_model, self.target_backend, ex, g.buckets)
            elif kind == "verify":
                r = self.decode_runner_cls(self.target_model, self.target_backend, ex, g.buckets,
                                           tokens_per_req=g.num_draft_tokens,
                                           capture_mode=ForwardMode.TARGET_VERIFY)
            elif kind == "draft_extend":
                r = self.draft_extend_runner_cls(self.draft_model, self.draft_extend_backend, ex,
                                                 g.buckets, g.num_draft_tokens)
            else:
                r = self.multistep_runner_cls(self.draft_model, self.multistep_backend, ex,
                                              g.buckets, g.topk, g.num_steps)
            self._runners[kind] = r
        return self._runners[kind]

    def use_graph(self, step: Step, n: int) -> bool:
        return bool(self.executor.graphs) and step.exec == "graph" and \
            self.gcfg.bucket_for(n) is not None

    def can_run_graph(self, step: Step, fb: ForwardBatch, n: int) -> bool:
        """``can_run`` of a batch padded across ranks: as :meth:`use_graph`, and never for a
        batch rewritten to EXTEND because another rank extends (spec §5.4 (3))."""
        return fb.forward_mode != ForwardMode.EXTEND and self.use_graph(step, n)

    # -- payload ----------------------------------------------------------------------------------
    def rows_tensor(self, step: int, fwd: int, pool: str, layer: int, n: int) -> torch.Tensor:
        """``[n, row_width]`` K rows from :func:`scenarios.payload.rows_bytes`."""
        cfg = self.cfg
        dtype = self.target_pool.row_dtype
        if n == 0:
            return torch.zeros(0, cfg.row_width, dtype=dtype, device=self.device)
        data = k_rows_bytes(cfg.layout, self.case.payload_seed, step, fwd, pool, layer, n,
                            cfg.k_row_bytes)
        t = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype)
        return t.view(n, cfg.row_width).to(self.device)

    # -- batches ----------------------------------------------------------------------------------
    def batch(self, mode: ForwardMode, per_req: list[tuple[int, list[int]]]) -> ForwardBatch:
        """A batch whose request b writes the full slots ``per_req[b][1]`` (the tail of its
        tokens); seq_lens = request lengths, positions = the slots' token positions."""
        locs: list[int] = []
        pos: list[int] = []
        lens: list[int] = []
        for rid, slots in per_req:
            n = len(self.allocator.tokens[rid])
            lens.append(n)
            locs += slots
            pos += range(n - len(slots), n)
        dev = self.device

        def t(v):
            return torch.tensor(v, dtype=torch.int64, device=dev)

        return ForwardBatch(mode, len(per_req), t(locs), t(lens), t(pos))

    def idle_batch(self, tokens: int) -> ForwardBatch:
        z = torch.zeros(tokens, dtype=torch.int64, device=self.device)
        return ForwardBatch(ForwardMode.IDLE, tokens, z, torch.ones_like(z), z.clone())

    # -- forwards -------------------------------------------------------------------------------
    def eager_stores(self, i: int, fwd: int, pool: str, backend: DSV4Backend, fb: ForwardBatch,
                     n_real: int) -> ForwardObs:
        """Run the model's stores for ``fb`` (metadata already initialised)."""
        model = self.target_model if pool == "target" else self.draft_model
        rows = fb.out_cache_loc.numel()
        payload = [self.rows_tensor(i, fwd, pool, layer, rows) for layer in range(len(model.layers))]
        # what the eager init built (nothing when it returned early: MTP IDLE, spec §4.3)
        prepared = {} if backend.skip_eager_init(fb) else backend.prepared()
        backend.store_log = []
        model.forward(fb, backend, payload)
        return ForwardObs(step=i, fwd=fwd, pool=pool, mode=fb.forward_mode.name, exec="eager",
                          n_real=n_real, rows=rows, stores=store_obs(backend.store_log),
                          prepared=prepared)

    def eager_forward(self, i: int, pool: str, backend: DSV4Backend, fb: ForwardBatch,
                      n_real: int) -> ForwardObs:
        backend.init_forward_metadata(fb)
        return self.eager_stores(i, 0, pool, backend, fb, n_real)

    def graph_forward(self, i: int, pool: str, kind: str, fb: ForwardBatch, n_real: int,
                      mode: str) -> list[ForwardObs]:
        r = self.runner(kind)

        def rows_for(fwd: int, layer: int, n: int) -> torch.Tensor:
            return self.rows_tensor(i, fwd, pool, layer, n)

        cap: CapturedBucket = r.run(fb, rows_for)
        return [
            ForwardObs(step=i, fwd=f, pool=pool, mode=mode, exec="graph", n_real=n_real,
                       rows=cap.rows, stores=store_obs(cap.logs[f]), baked=dict(cap.baked),
                       prepared=cap.prepared[f] if f < len(cap.prepared) else {})
            for f in range(r.num_forwards)
        ]

    # -- steps ----------------------------------------------------------------------------------
    def step_admit(self, i: int, s: Step) -> list[ForwardObs]:
        if s.prefix_rid is not None:  # radix-cache prefix hit: only the new tokens are computed
            slots = self.allocator.admit(s.rid, s.length, s.prefix_rid, s.prefix_len)
        else:
            slots = self.allocator.admit(s.rid, s.length)
        fb = self.batch(ForwardMode.EXTEND, [(s.rid, slots)])
        return [self.eager_forward(i, "target", self.target_backend, fb, len(slots))]

    def _extend_and_forward(self, i: int, s: Step, mode: ForwardMode, per_req: int,
                            kind: str) -> list[ForwardObs]:
        new = self.allocator.extend([(rid, per_req) for rid in s.rids])
        fb = self.batch(mode, list(zip(s.rids, new)))
        n_real = fb.out_cache_loc.numel()
        if s.rank_tokens:
            return self.rank_pad.spec_forward(self, i, s, "target", kind, self.target_backend,
                                              fb, n_real, per_req, True)
        if self.use_graph(s, len(s.rids)):
            return self.graph_forward(i, "target", kind, fb, n_real, mode.name)
        return [self.eager_forward(i, "target", self.target_backend, fb, n_real)]

    def step_decode(self, i: int, s: Step) -> list[ForwardObs]:
        return self._extend_and_forward(i, s, ForwardMode.DECODE, 1, "decode")

    def step_verify(self, i: int, s: Step) -> list[ForwardObs]:
        before = [(rid, len(self.allocator.tokens[rid])) for rid in s.rids]
        out = self._extend_and_forward(i, s, ForwardMode.TARGET_VERIFY,
                                       self.gcfg.num_draft_tokens, "verify")
        if s.accept:  # after the forward: the rejected draft tokens are freed
            self.allocator.reject([(rid, n, a) for (rid, n), a in zip(before, s.accept)],
                                  self.gcfg.num_draft_tokens)
        return out

    def step_draft_extend(self, i: int, s: Step) -> list[ForwardObs]:
        per_req = [(rid, self.allocator.tokens[rid][-a:]) for rid, a in zip(s.rids, s.accept)]
        fb = self.batch(ForwardMode.DRAFT_EXTEND_V2, per_req)
        n_real = fb.out_cache_loc.numel()
        if s.rank_tokens:
            return self.rank_pad.spec_forward(self, i, s, "draft", "draft_extend",
                                              self.draft_extend_backend, fb, n_real,
                                              self.gcfg.num_draft_tokens, False)
        if self.use_graph(s, len(s.rids)):
            return self.graph_forward(i, "draft", "draft_extend", fb, n_real, fb.forward_mode.name)
        return [self.eager_forward(i, "draft", self.draft_extend_backend, fb, n_real)]

    def step_draft_decode(self, i: int, s: Step) -> list[ForwardObs]:
        g = self.gcfg
        new = self.allocator.extend([(rid, g.topk * g.num_steps) for rid in s.rids])
        fb = self.batch(ForwardMode.DECODE, list(zip(s.rids, new)))
        n_real = len(s.rids) * g.topk
        width = g.topk * g.num_steps
        bs = len(s.rids)
        if s.rank_tokens:  # padded to whole requests of topk*num_steps rows (spec §5.4)
            bs = self.rank_pad.multistep_batch_size(fb, s, width)
        if self.use_graph(s, bs):
            if s.rank_tokens:
                self.rank_pad.pad_inputs_to_size(fb, bs * width, bs)
            return self.graph_forward(i, "draft", "multistep", fb, n_real, "DECODE")
        ms = self.multistep_backend
        ms.init_forward_metadata(fb)  # on the unpadded batch
        if s.rank_tokens:
            self.rank_pad.pad_inputs_to_size(fb, bs * width, bs)
        per_step = self.per_step_loc(fb.out_cache_loc, bs, g.topk, g.num_steps)
        return [
            self.eager_stores(i, step, "draft", ms.backends[step],
                              fb.view(out_cache_loc=per_step[step]), n_real)
            for step in range(g.num_steps - 1)
        ]

    def step_idle(self, i: int, s: Step) -> list[ForwardObs]:
        fb = self.idle_batch(s.tokens)
        if self.use_graph(s, s.tokens):
            return self.graph_forward(i, "target", "decode", fb, 0, "IDLE")
        return [self.eager_forward(i, "target", self.target_backend, fb, 0)]

    def step_draft_block(self, i: int, s: Step) -> list[ForwardObs]:
        """The ``draft_block`` step: the feature's (slot ``EnginePart.draft_block``)."""
        return features.slot("engine", "draft_block")(self, i, s)

    def step_evict(self, i: int, s: Step) -> list[ForwardObs]:
        self.allocator.evict(s.rid, self.cfg.window)
        return []

    def mapping_consumers(self) -> list[SWAKVPool]:
        """The pools re-registered with a rebuilt mapping: both share ``M`` (spec §2.1)."""
        return [self.target_pool, self.draft_pool]

    def reregister_mapping(self) -> None:
        """The mapping rebuilt by the allocator and registered again with every consumer
        (spec §2.8: a HiCache load-back / commit)."""
        mapping = self.allocator.rebuild_mapping()
        for pool in self.mapping_consumers():
            pool.register_mapping(mapping)

    def step_fn(self, op: str):
        """The function running op ``op``: this engine's ``step_<op>`` method, else the
        feature's that owns the op (hook ``engine.step_ops``), called with the engine."""
        own = getattr(self, f"step_{op}", None)
        if own is not None:
            return own
        for ops in features.hooks("engine.step_ops"):
            if op in ops:
                return partial(ops[op], self)
        raise AttributeError(f"{type(self).__name__}: no step function for op {op!r}")

    def step_finish(self, i: int, s: Step) -> list[ForwardObs]:
        self.allocator.finish(s.rid)
        return []

    # -- observation ----------------------------------------------------------------------------
    def step_obs(self, i: int) -> StepObs:
        pools, redzones = {}, {}
        for name, pool in (("target", self.target_pool), ("draft", self.draft_pool)):
            pools[name] = [pool.layer_snapshot(k) for k in range(pool.num_layers)]
            redzones[name] = [RedzoneObs(*pool.redzone(k)) for k in range(pool.num_layers)]
        m = self.allocator.mapping
        return StepObs(
            step=i, mapping=m.tolist(), free_full_pages=self.allocator.free_full_pages(),
            free_swa_pages=self.allocator.free_swa_pages(), pools=pools, redzones=redzones,
            draft_mapping_is_target=self.draft_pool.mapping is m and self.target_pool.mapping is m,
            requests={rid: (list(toks), self.allocator.evicted[rid])
                      for rid, toks in self.allocator.tokens.items()},
            alloc=self.allocator.take_alloc_log() if self.allocation == "observed" else None,
            channels=self.allocator.step_channels())

    def new_observation(self) -> Observation:
        return Observation(target=self.name, impl=self.impl_name, executor=self.executor.name)

    def apply(self, obs: Observation, i: int, s: Step) -> bool:
        """Run step ``i`` and append what it did to ``obs``; False (with ``obs.error`` set) if
        the step raised. Stateful episodes call this one step at a time on one engine."""
        wp = self.step_path
        try:
            if wp is not None and wp.handles(s):
                wp.observe_run(obs, i, s)  # into the path's own channel
            else:
                obs.forwards += self.step_fn(s.op)(i, s)
                if wp is not None and s.op == "finish":
                    wp.finish(s.rid)
        except Exception as e:  # noqa: BLE001 - the Observation records any failure
            obs.record_error(i, e)
            return False
        obs.steps.append(self.step_obs(i))
        if wp is not None:
            wp.observe_step(obs, i)
        return True

    def run(self) -> Observation:
        obs = self.new_observation()
        for i, s in enumerate(self.case.steps):
            if not self.apply(obs, i, s):
                break
        return obs

