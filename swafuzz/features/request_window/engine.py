"""The V4.1 write path of the engine model (request window, encoder replay fold, late-layer tail;
"Request window, encoder replay and late-layer tail" in ``SEMANTICS.md`` beside this file,
addendum §2.2-§2.4, §3). :class:`targets.engine.UnifiedEngine` hands every step
:meth:`WindowPath.handles` to :meth:`WindowPath.observe_run` and files
:meth:`WindowPath.observe_step` after every step, in the ``window`` / ``tail`` checks' channel
(:mod:`features.request_window.channel`). One decision per method (a mutant overrides one):
slots, the encoder-replay fold, metadata init (skipped by an eager IDLE with MTP, spec §4), the
resolver in 0.5.23's order (I, W, T, C, F), enter / exit of the tail, the per-layer store and
commit. Window and layouts: :mod:`features.request_window.window`; DECODE graphs, prefill graphs
and window verify plug in through part slots (``window_graph_runner``, ``prefill_graph_runner``,
``window_verify``)."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from swafuzz.features.parts import SGLangPart
from swafuzz.features.request_window import window as rw
from swafuzz.features.request_window.channel import CHANNEL, WindowChannel
from swafuzz.features.request_window.tail_prefix.engine import TailPrefixMixin
from swafuzz.features.request_window.window import LayoutT, WinFwdObs
from swafuzz.scenarios.case import Step
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.hooks import PartSlot
from swafuzz.targets.kv_pool import DTYPES

__all__ = ["WindowPath", "path_with"]


class WindowPath(TailPrefixMixin):
    """The engine's V4.1 path for one Case (module docstring; prefix hits, compressor
    locations and the separate replay forward: :mod:`features.tail_prefix.engine`)."""

    window_cls = rw.RequestWindowModel
    #: the Observation channel this path fills (:mod:`features.request_window.channel`)
    channel = CHANNEL

    def __init__(self, engine):
        self.e = engine
        cfg = engine.cfg
        self.cfg, self.P, self.W, self.L = cfg, cfg.page_size, cfg.window, cfg.late_layer_start
        self.on = cfg.request_window > 0
        self.topk = engine.gcfg.topk
        self.device = engine.device
        self.cap = -(-cfg.request_window // self.P) * self.P
        self.window = self.make_window() if self.on else None
        self.free_slots = set(range(1, cfg.window_slots + 1))
        self.slot: dict[int, int] = {}
        self.forward_metadata = None
        self.tail_metadata = None

    # -- construction --------------------------------------------------------------------------
    def make_window(self):
        c = self.cfg
        return self.window_cls(c.window_slots, self.cap, self.W, c.window_chunk, c.layers,
                               self.P, c.row_width, DTYPES[c.row_dtype], self.device)

    def handles(self, s: Step) -> bool:
        if self.on:
            return s.op in ("admit", "extend", "decode", "idle", "dp_decode", "verify")
        return s.op in ("admit", "extend")

    # -- steps ---------------------------------------------------------------------------------
    def run(self, i: int, s: Step) -> list[WinFwdObs]:
        self.cur_step = s  # read by prefill_step (an admit / extend with exec "graph")
        al = self.e.allocator
        if s.op == "admit" and s.prefix_rid is not None:
            return self.admit_prefix(i, s)
        if self.on and self.dspark_cls.claims(s):  # verify, DP-padded EXTEND (features.dspark.engine)
            return self.dspark().run(i, s)
        if s.op == "admit":
            if self.on and not self.free_slots:
                raise RuntimeError("no free request slot")
            slots = al.admit(s.rid, s.length)
            if self.on:
                sl = min(self.free_slots)
                self.free_slots.discard(sl)
                self.slot[s.rid] = sl
                self.reset_slot(sl)
            return self.extend_forward(i, [(s.rid, 0, slots)])
        if s.op == "extend":
            per = self.extend_per(s, reset=not self.cfg.separate_replay)
            if self.cfg.separate_replay and any(r for _, r, _ in per):
                return self.separate(i, per)
            return self.fold(i, per)
        if self.on and s.op in ("decode", "idle", "dp_decode"):
            g = self.graph_step(i, s)
            if g is not None:
                return [g]
        if s.op == "decode":
            new = al.extend([(rid, 1) for rid in s.rids])
            rows = [(self.slot[rid], len(al.tokens[rid]) - 1, 0) for rid in s.rids]
            locs = [sl[0] for sl in new]
            return [self.forward(i, ForwardMode.DECODE, rows, locs, len(s.rids), None)]
        if s.op == "dp_decode" and s.rids:
            return [self.dp_decode(i, s)]
        n = s.tokens if s.op == "idle" else max(s.rank_tokens)
        return [self.forward(i, ForwardMode.IDLE, [(0, 0, 0)] * n, [0] * n, 1, None)]

    def dp_decode(self, i: int, s: Step) -> WinFwdObs:
        """An eager DP decode rank with requests: MLP-sync MAX_LEN padding (before the metadata
        init) appends ``max(rank_tokens) - n`` rows of slot 0, seq fill 1 (position 0); the
        layout has one group per row and the padding rows commit into slot 0."""
        new = self.e.allocator.extend([(rid, 1) for rid in s.rids])
        al = self.e.allocator
        padded = max([len(s.rids), *s.rank_tokens])
        rows = [(self.slot[rid], len(al.tokens[rid]) - 1, 0) for rid in s.rids]
        locs = [sl[0] for sl in new]
        pad = padded - len(rows)
        return self.forward(i, ForwardMode.DECODE, rows + [(0, 0, 0)] * pad, locs + [0] * pad,
                            padded, None)

    #: the DECODE-graph runner under a window (slot ``window_graph_runner``:
    #: features.window_graphs.engine); None: graph steps eager
    graph_runner_cls = PartSlot("engine", "window_graph_runner", optional=True)

    def graph_step(self, i: int, s: Step) -> WinFwdObs | None:
        """A graph ``decode`` / ``idle`` / ``dp_decode`` through the window's DECODE-graph
        runner (None: it runs eagerly: eager executor, no bucket fits, or no runner)."""
        n = (len(s.rids) if s.op == "decode" else s.tokens if s.op == "idle"
             else max([len(s.rids), *s.rank_tokens]))
        if self.graph_runner_cls is None or not self.e.use_graph(s, n):
            return None
        if getattr(self, "graph", None) is None:
            self.graph = self.graph_runner_cls(self)
        if not s.rids:
            return self.graph.run(i, ForwardMode.IDLE, [], [], n)
        new = self.e.allocator.extend([(rid, 1) for rid in s.rids])
        del new
        al = self.e.allocator
        return self.graph.run(i, ForwardMode.DECODE, [self.slot[rid] for rid in s.rids],
                              [len(al.tokens[rid]) for rid in s.rids], n)

    #: window verify and DP-padded EXTENDs (slot ``window_verify``: features.dspark.engine)
    dspark_cls = PartSlot("engine", "window_verify")

    def dspark(self):
        """This path's :class:`features.dspark.engine.DSparkPath` (built on first use)."""
        if getattr(self, "_dspark", None) is None:
            self._dspark = self.dspark_cls(self)
        return self._dspark

    def reset_slot(self, slot: int) -> None:
        """A new slot or an encoder replay starts the slot's window: tags -> -1."""
        self.window.reset(slot)

    def fold(self, i: int, per: list[tuple[int, int, list[int]]]) -> list[WinFwdObs]:
        """0.5.23 fold of encoder replay: each replayed request's last ``r`` cached rows go in
        front of its new rows (full locations: its tokens there), floor ``Pq - r`` for all of
        its rows."""
        return self.extend_forward(i, per)

    def extend_per(self, s: Step, reset: bool = True) -> list[tuple[int, int, list[int]]]:
        """Allocate ``s``'s extend: per rid ``(rid, r, new slots)``, ``r`` its replayed rows
        (``min(Pq, W)`` if in ``s.replay``, else 0); ``reset``: a replay resets its slot."""
        al = self.e.allocator
        pre = {rid: len(al.tokens[rid]) for rid in s.rids}
        per = []
        for rid, slots in zip(s.rids, al.extend(list(zip(s.rids, s.lengths)))):
            r = min(pre[rid], self.W) if rid in s.replay else 0
            if r and reset:
                self.reset_slot(self.slot[rid])
            per.append((rid, r, slots))
        return per

    def extend_rows(self, per: list[tuple[int, int, list[int]]]):
        """An EXTEND over ``per``: rows ``(slot, position, floor)`` (each request's last ``r``
        cached rows, floor ``Pq - r``, then its new rows), full locations, rows per request and
        per-row replay flags."""
        al = self.e.allocator
        rows, locs, per_req, replay = [], [], [], []
        for rid, r, new in per:
            toks = al.tokens[rid]
            start = len(toks) - len(new) - r
            sl = self.slot.get(rid, 0)
            rows += [(sl, p, start if r else 0) for p in range(start, len(toks))]
            locs += toks[start:]
            per_req.append(len(toks) - start)
            replay += [True] * r + [False] * len(new)
        return rows, locs, per_req, replay

    def extend_forward(self, i: int, per: list[tuple[int, int, list[int]]]) -> list[WinFwdObs]:
        rows, locs, per_req, replay = self.extend_rows(per)
        g = self.prefill_step(i, rows)
        if g is not None:
            return [g]
        return [self.forward(i, ForwardMode.EXTEND, rows, locs, len(per), per_req,
                             replay=replay)]

    #: the breakable prefill-graph runner under a window (slot ``prefill_graph_runner``:
    #: features.prefill_graphs.engine); None: eager
    prefill_runner_cls = PartSlot("engine", "prefill_graph_runner", optional=True)

    def prefill_step(self, i: int, rows) -> WinFwdObs | None:
        """An ``admit`` / ``extend`` with ``exec == "graph"`` under a window (no tail) through
        the prefill graph (None: it runs eagerly: eager executor, no bucket, or no runner)."""
        s = getattr(self, "cur_step", None)
        if (self.prefill_runner_cls is None or s is None or s.exec != "graph" or not self.on
                or self.L or not self.e.executor.graphs):
            return None
        if getattr(self, "prefill", None) is None:
            self.prefill = self.prefill_runner_cls(self)
        return self.prefill.run(i, rows)

    # -- metadata ------------------------------------------------------------------------------
    def skip_init(self, mode: ForwardMode) -> bool:
        """Eager IDLE with MTP skips the metadata init (spec §4): the previous stays."""
        return self.topk > 0 and mode.is_idle()

    def layout(self, req, pos, floor, groups: int) -> LayoutT:
        return rw.build_layout(req, pos, floor, groups, self.W, self.cap, self.window.zero_row)

    def tail(self, per_req: list[int], seq_after: list[int]):
        return rw.tail_layout(per_req, seq_after, self.W, self.device)

    def init_metadata(self, fb: ForwardBatch, req, floor, groups: int, per_req) -> None:
        if self.skip_init(fb.forward_mode):
            return
        core = SimpleNamespace(request_window_layout=None, swa_out_cache_loc=None)
        if self.on:
            ds = self.dspark()  # DP padding rows (ds.pad) / verify: features.dspark.engine
            core.request_window_layout = (
                ds.pad_layout(req, fb.positions, floor, groups, ds.pad) if ds.pad
                else self.layout(req, fb.positions, floor, groups))
            core.swa_out_cache_loc = core.request_window_layout.write_loc
            ds.metadata(fb, core, req, floor, groups)
        self.forward_metadata = SimpleNamespace(core_attn_metadata=core, late_layer_tail=None)
        self.tail_metadata = None
        if self.L and per_req is not None and fb.forward_mode == ForwardMode.EXTEND:
            idx, lens, tfloor = self.tail(per_req, rw.seq_after(per_req, fb.positions))
            tcore = SimpleNamespace(request_window_layout=None, swa_out_cache_loc=None)
            if self.on:
                tcore.request_window_layout = self.layout(req[idx], fb.positions[idx], tfloor,
                                                          groups)
                loc = tcore.request_window_layout.write_loc
            else:
                loc = self.e.target_pool.translate_loc_from_full_to_swa(
                    fb.out_cache_loc[idx]).to(torch.int32)
            tail = SimpleNamespace(token_indices=idx, tail_lens=lens, swa_out_cache_loc=loc)
            self.tail_metadata = SimpleNamespace(core_attn_metadata=tcore, late_layer_tail=tail)

    def enter_tail(self):
        saved = self.forward_metadata
        self.forward_metadata = self.tail_metadata
        if self.on:
            self.window.activate(self.tail_metadata.core_attn_metadata.request_window_layout)
        return saved

    def exit_tail(self, saved) -> None:
        self.forward_metadata = saved

    # -- resolver (0.5.23 order: I, W, T, C, F) --------------------------------------------------
    def resolve(self, fb: ForwardBatch) -> torch.Tensor:
        if fb.forward_mode.is_idle():
            if self.on:
                return self.window.activate_idle(fb.out_cache_loc.numel())
            return self.translate(fb.out_cache_loc)
        md = self.forward_metadata
        if self.on:
            lay = md.core_attn_metadata.request_window_layout
            self.window.activate(lay)
            return lay.write_loc
        if md is not None and md.late_layer_tail is not None:
            return md.late_layer_tail.swa_out_cache_loc
        core = getattr(md, "core_attn_metadata", None)
        cached = core.swa_out_cache_loc if core is not None else None
        if cached is not None and cached.numel() == fb.out_cache_loc.numel():
            return cached
        return self.translate(fb.out_cache_loc)

    def translate(self, loc: torch.Tensor) -> torch.Tensor:
        if self.on:  # W8: under a window no mapping reaches the target pool's stores
            raise AssertionError("translate_loc_from_full_to_swa under a request window")
        return self.e.target_pool.translate_loc_from_full_to_swa(loc).to(torch.int32)

    # -- per layer -------------------------------------------------------------------------------
    def store(self, layer: int, fb: ForwardBatch, rows: torch.Tensor) -> torch.Tensor:
        loc = self.resolve(fb)
        cache = self.window.buffer(layer) if self.on else self.e.target_pool.layer_cache(layer)
        self.e.impl.store(cache, loc, rows)
        return loc

    def commit(self, layer: int, fb: ForwardBatch) -> None:
        if self.on and not fb.forward_mode.is_idle():
            self.window.commit(layer)

    def forward(self, i: int, mode: ForwardMode, rows, locs: list[int], groups: int,
                per_req: list[int] | None, fwd: int = 0, replay: list[bool] | None = None,
                low_ratio: bool = True) -> WinFwdObs:
        """``fwd``: the forward's index in its step (payload key); ``replay``: per row, a
        replay row folded into this EXTEND (compressor location 0); ``low_ratio``: the ratio-1/2
        source compressors run (False: a separate replay forward)."""
        fb, comp = self.batch(mode, rows, locs, groups, per_req, replay, low_ratio)
        stores, ws, htags = [], [], []
        late_from = self.L if (self.L and self.tail_metadata is not None) else None
        for layer in range(self.cfg.layers):
            late = late_from is not None and layer >= late_from
            saved = self.enter_tail() if late else None
            n = self.tail_metadata.late_layer_tail.token_indices.numel() if late else len(rows)
            k = self.e.rows_tensor(i, fwd, "target", layer, n)
            loc = self.store(layer, fb, k)
            if self.on:
                htags.append(self.history_tags(layer))
            self.commit(layer, fb)
            if late:
                self.exit_tail(saved)
            stores.append(rw.store_obs(layer, loc, k.shape[0]))
            if self.on:
                ws.append(self.workspace_bytes())
        return WinFwdObs(i, fwd, mode.name, stores, ws, comp=comp,
                         history_tags=htags if self.on else None)

    def batch(self, mode: ForwardMode, rows, locs: list[int], groups: int, per_req,
              replay: list[bool] | None, low_ratio: bool):
        """The forward batch of ``rows`` (``(slot, position, floor)``) at full locations ``locs``
        with its metadata initialised, and an EXTEND's compressor observation (else None)."""
        dev = self.device
        req, pos, floor = (rw.i64([r[k] for r in rows], dev) for k in range(3))
        fb = ForwardBatch(mode, groups, rw.i64(locs, dev), rw.i64([1] * groups, dev), pos)
        self.init_metadata(fb, req, floor, groups, per_req)
        return fb, (self.compressor_obs(fb, replay, low_ratio) if mode == ForwardMode.EXTEND
                    else None)

    # -- observation ---------------------------------------------------------------------------
    def history_tags(self, layer: int) -> list[int]:
        """The window's tags of ``layer`` at the history source rows of the active layout (the
        rows the history copy just read), as ints: what the target's ring says those rows hold
        at use (addendum §5 W5)."""
        w = self.window
        return w.tags[layer][w.layout.history_src.long()].tolist()

    def workspace_bytes(self) -> bytes:
        return rw.tensor_bytes(self.window.workspace)

    def ring_bytes(self) -> list[bytes]:
        return [rw.tensor_bytes(s) for s in self.window.state]

    def observe_run(self, obs, i: int, s: Step) -> None:
        """Run step ``i`` (:meth:`run`) and file its forwards in ``obs``'s channel."""
        fwds = self.run(i, s)
        obs.channels.setdefault(self.channel, WindowChannel()).forwards += fwds

    def observe_step(self, obs, i: int) -> None:
        """File the state after step ``i`` (:meth:`step_obs`) in ``obs``'s channel."""
        obs.channels.setdefault(self.channel, WindowChannel()).steps.append(self.step_obs(i))

    def step_obs(self, i: int) -> rw.WinStepObs:
        if not self.on:
            return rw.WinStepObs(i, None, None)
        return rw.WinStepObs(i, self.window.tags.tolist(), self.ring_bytes())

    def finish(self, rid: int) -> None:
        if rid in self.slot:
            self.free_slots.add(self.slot.pop(rid))


def path_with(base: type, **slots) -> type:
    """``base`` (a path or runner class) with ``slots`` set: a mutant's one changed piece."""
    return type(f"_Path{next(iter(slots.values())).__name__}", (base,), slots)


class RequestWindowSGLang(SGLangPart):
    """The ``sglang`` part: the attributes the window's release code reads on the pool."""

    @staticmethod
    def real_pool(pool_obj, config) -> None:
        """``request_window``: None on the harness's own pool object (the window path builds
        its own with the release's window, :mod:`features.request_window.sglang`)."""
        pool_obj.request_window = None
