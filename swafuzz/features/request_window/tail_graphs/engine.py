"""The late-layer tail under graphs (addendum §2.4, §3 T, §4, §5 T1/T4, §6 A3/A9; "Late-layer tail
under graphs" in ``SEMANTICS.md`` beside this file): :class:`TailGraphPath` is
:class:`features.request_window.engine.WindowPath` plus the steps with ``tail_exec``. 0.5.23's
``DecoderReplayTail`` row-bucket graphs (:class:`TailBucketRunner`): the bucket from the largest
DP rank's rows, per late layer a static K buffer of the largest bucket's rows, the store an eager
break (host-side under every executor) fed the real rows (A3); an IDLE DP rank replays the peer's
bucket with no store and no commit (A9). 0.5.22's prefill-graph tail (paged pools): an int64
full- and an int32 SWA-location buffer of ``graph.tail_capacity`` rows refilled in place (real
rows, then zeros), the late layers' stores one captured block under graph executors, the batch's
non-padded count ``real_rows_count`` inside the tail. T4: after the exit, ``WinFwdObs.tail_graph``
(a dict) records ``exec``, ``bucket`` (None: eager fallback or prefill), ``capacity`` (prefill)
and what a store would resolve now (``probe_locs`` / ``probe_dtype`` / ``probe_count``)."""

from __future__ import annotations

import torch

from swafuzz.features.parts import EnginePart, SGLangPart, lazy
from swafuzz.features.request_window import window as rw
from swafuzz.features.request_window.engine import WindowPath
from swafuzz.features.request_window.rules import uses_window_path
from swafuzz.features.request_window.window import WinFwdObs
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.observation import StoreObs


class TailBucketRunner:
    """Row-bucket graphs of the late layers (module docstring)."""

    def __init__(self, path):
        self.path = path
        cfg = path.cfg
        self.buckets = tuple(path.e.gcfg.tail_buckets)
        mx = max(self.buckets) if self.buckets else 0
        dtype = path.e.target_pool.row_dtype
        self.static_rows = {layer: torch.zeros(mx, cfg.row_width, dtype=dtype, device=path.device)
                            for layer in range(path.L, cfg.layers)}
        self.captured: set[int] = set()

    def bucket_rows(self, n: int) -> int | None:
        """The smallest bucket >= ``n`` (None: no rows, or above every bucket)."""
        if n <= 0:
            return None
        return next((b for b in self.buckets if b >= n), None)

    def bucket_from(self, own: int, peers: int) -> int:
        """The row count the bucket is chosen from: under DP attention every rank replays the
        bucket of the largest rank's tail rows (upstream ``bucket_from = max(dp_rows)``)."""
        return max(own, peers)

    def ready(self, T: int) -> None:
        """First use of bucket ``T`` captures it and every larger bucket (upstream: largest
        first, so smaller buckets reuse the pool); capture writes nothing observable."""
        self.captured.update(b for b in self.buckets if b >= T)

    def k_rows(self, layer: int, live: torch.Tensor, T: int) -> torch.Tensor:
        """The store break's K rows: the live rows copied into the bucket's static buffer, then
        sliced to the real rows (``global_num_token_non_padded_cpu``), A3."""
        static = self.static_rows[layer]
        n = live.shape[0]
        static[:n].copy_(live)
        return static[:n]

    def commit_allowed(self, fb: ForwardBatch, idle_rank: bool) -> bool:
        """Whether a late layer of the graph commits: never for an IDLE rank, whose batch the
        graph relabels EXTEND (A9; the rank keeps its IDLE flag)."""
        return not idle_rank


class TailGraphPath(WindowPath):
    """:class:`features.request_window.engine.WindowPath` with the tail under graphs (module docstring)."""

    tail_runner_cls = TailBucketRunner

    def __init__(self, engine):
        super().__init__(engine)
        g = engine.gcfg
        self._tail_exec = ""
        self._idle_from = 0
        self.tail_graph = self.tail_runner_cls(self) if g.tail_buckets else None
        self.cap_rows = g.tail_capacity
        if self.cap_rows:
            self.cap_full = torch.zeros(self.cap_rows, dtype=torch.int64, device=self.device)
            self.cap_swa = torch.zeros(self.cap_rows, dtype=torch.int32, device=self.device)
        self._pg = None  # the prefill graph's captured late-layer block (graph executors)

    def handles(self, s) -> bool:
        return super().handles(s) or (s.op == "dp_decode" and bool(s.tail_exec))

    def run(self, i: int, s) -> list[WinFwdObs]:
        self._tail_exec = s.tail_exec
        # DP: the other ranks' tail rows (the largest rank's bucket is every rank's)
        self._idle_from = max(s.rank_tokens) if s.rank_tokens else 0
        try:
            return super().run(i, s)
        finally:
            self._tail_exec = ""

    # -- enter / exit with the batch's counts (T4) ---------------------------------------------
    def enter_graph_tail(self, fb: ForwardBatch):
        saved = (self.enter_tail(), fb.num_non_padded)
        real = getattr(self.tail_metadata.late_layer_tail, "real_rows_count", None)
        if real is not None:
            fb.num_non_padded = real
        return saved

    def exit_graph_tail(self, saved, fb: ForwardBatch) -> None:
        md, count = saved
        self.exit_tail(md)
        fb.num_non_padded = count

    def probe(self, fb: ForwardBatch) -> torch.Tensor:
        """What a store would resolve now, without touching the window's active layout."""
        win = self.window
        keep = (win.layout, win.prepared) if win is not None else None
        try:
            return self.resolve(fb).clone()
        finally:
            if win is not None:
                win.layout, win.prepared = keep

    # -- prefill-graph tail ----------------------------------------------------------------------
    def fill_capacity(self, fb: ForwardBatch) -> None:
        """Refill the persistent buffers for this forward's tail: real rows first, zeros after."""
        idx = self.tail_metadata.late_layer_tail.token_indices
        n = idx.numel()
        if n > self.cap_rows:
            raise AssertionError(f"prefill-graph tail: {n} tail rows above the capacity "
                                 f"{self.cap_rows}")
        self.cap_full[:n].copy_(fb.out_cache_loc[idx])
        self.zero_capacity_tail(n)
        self.cap_swa.copy_(self.translate(self.cap_full))
        self.set_capacity_tail(n)

    def zero_capacity_tail(self, n: int) -> None:
        self.cap_full[n:].zero_()

    def set_capacity_tail(self, n: int) -> None:
        """The tail metadata now carries the whole int32 buffer and ``real_rows_count``."""
        tail = self.tail_metadata.late_layer_tail
        tail.swa_out_cache_loc = self.cap_swa
        tail.real_rows_count = n

    def prefill_graph_block(self, fb: ForwardBatch, ks: dict) -> dict:
        """The late layers' stores inside the prefill graph (graph executors): captured once
        (capture state: both buffers zero, every row to the dummy slot), replayed per forward
        after its K rows are copied into the block's static rows. The captured stores read the
        tensors the resolver returned at capture (the persistent buffer). Returns the location
        tensor each late layer's store reads."""
        self._pg_fb = fb
        if self._pg is None:
            self._pg_rows = {layer: torch.zeros_like(k) for layer, k in ks.items()}
            self._pg_locs: dict = {}
            keep = self.cap_full.clone(), self.cap_swa.clone()
            self.cap_full.zero_()
            self.cap_swa.zero_()

            def body():
                for layer in sorted(self._pg_rows):
                    self._pg_locs[layer] = self.store(layer, self._pg_fb, self._pg_rows[layer])

            self._pg = self.e.executor.capture(body)
            self.cap_full.copy_(keep[0])
            self.cap_swa.copy_(keep[1])
        for layer, k in ks.items():
            self._pg_rows[layer].copy_(k)
        self.e.executor.replay(self._pg)
        return self._pg_locs

    # -- forward -----------------------------------------------------------------------------------
    def forward(self, i: int, mode: ForwardMode, rows, locs: list[int], groups: int,
                per_req: list[int] | None, fwd: int = 0, replay: list[bool] | None = None,
                low_ratio: bool = True) -> WinFwdObs:
        te = self._tail_exec
        if not te:
            return super().forward(i, mode, rows, locs, groups, per_req, fwd=fwd, replay=replay,
                                   low_ratio=low_ratio)
        fb, comp = self.batch(mode, rows, locs, groups, per_req, replay, low_ratio)
        fb.num_non_padded = len(rows)
        idle_rank = mode.is_idle()
        tm = self.tail_metadata
        T = None
        if idle_rank:
            T = self.tail_graph.bucket_rows(self._idle_from)
            late_from = self.L if T is not None else None
        else:
            late_from = self.L if tm is not None else None
            n_tail = tm.late_layer_tail.token_indices.numel() if tm is not None else 0
            if te == "bucket" and tm is not None:
                rows_from = self.tail_graph.bucket_from(n_tail, self._idle_from)
                T = self.tail_graph.bucket_rows(rows_from)
            if te == "prefill" and tm is not None:
                self.fill_capacity(fb)
        if T is not None:
            self.tail_graph.ready(T)
        stores, ws, saved = [], [], None
        for layer in range(self.cfg.layers):
            late = late_from is not None and layer >= late_from
            if late and idle_rank:  # the peer's bucket, no rows of its own: no store
                if self.tail_graph.commit_allowed(fb.view(forward_mode=ForwardMode.EXTEND),
                                                  idle_rank):
                    self.window.commit(layer)
                stores.append(StoreObs(layer=layer, loc_dtype="int32", locs=[], rows=0))
                if self.on:
                    ws.append(self.workspace_bytes())
                continue
            if late and saved is None:
                saved = self.enter_graph_tail(fb)
            if late and te == "prefill" and self.e.executor.graphs:  # the captured block
                ks = {lay: self.e.rows_tensor(i, fwd, "target", lay, self.cap_rows)
                      for lay in range(layer, self.cfg.layers)}
                for lay, loc in sorted(self.prefill_graph_block(fb, ks).items()):
                    stores.append(rw.store_obs(lay, loc, self.cap_rows))
                break
            if not late:
                n = len(rows)
            elif te == "prefill":
                n = self.cap_rows
            else:
                n = n_tail
            k = self.e.rows_tensor(i, fwd, "target", layer, n)
            if late and T is not None:
                k = self.tail_graph.k_rows(layer, k, T)
            loc = self.store(layer, fb, k)
            self.commit(layer, fb)
            stores.append(rw.store_obs(layer, loc, k.shape[0]))
            if self.on:
                ws.append(self.workspace_bytes())
        obs = WinFwdObs(i, fwd, mode.name, stores, ws, comp=comp)
        info = {"exec": te, "bucket": T, "capacity": self.cap_rows if te == "prefill" else 0}
        if saved is not None:
            self.exit_graph_tail(saved, fb)
            p = self.probe(fb)
            info.update(probe_locs=p.tolist(), probe_dtype=rw.dtype_name(p),
                        probe_count=fb.num_non_padded)
        obs.tail_graph = info
        return obs


class TailGraphsEngine(EnginePart):
    """The engine part: the window / tail step path of a Case with a window or a tail."""

    step_path = TailGraphPath
    uses_step_path = staticmethod(uses_window_path)


class TailGraphsSGLang(SGLangPart):
    """The ``sglang`` part: the release's step path (a function returning the class)."""

    step_path = lazy("swafuzz.features.request_window.tail_graphs.sglang:window_path_class")
