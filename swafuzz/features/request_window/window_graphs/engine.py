"""DECODE graphs under a request window (addendum §3 "I (window)", §4 "Decode bucket", §5 W6, W7;
``SEMANTICS.md`` beside this file), for :class:`features.request_window.engine.WindowPath`: a
graph ``decode`` / ``idle`` / ``dp_decode`` whose batch fits a bucket runs through
:class:`WindowGraphRunner` under a capturing executor, else eagerly. The bucket's metadata is
Raw: the captured forward builds the layout from the static buffers, one group per row
(:func:`graph_layout`, tensor ops, no host sync); padded rows are slot 0 at position 0 and
commit only into slot 0; an IDLE replay substitutes every row so, and the captured commit has
no IDLE guard. Buffers: ``static_req`` int64 ``[max_bucket]`` (fill 0), ``static_seq`` int64
(fill 1), per target layer K rows ``[max_bucket, row_width]``, per bucket and layer an in-graph
workspace snapshot; a bucket's layout object is its capture's (W7); after every replay the host
drops the window's ``prepared`` key (A5)."""

from __future__ import annotations

import torch

from swafuzz.features.parts import EnginePart, SGLangPart, lazy
from swafuzz.features.request_window import window as rw
from swafuzz.features.request_window.window import LayoutT, LayoutTokens, WinFwdObs, tensor_bytes
from swafuzz.targets.forward_mode import ForwardMode
from swafuzz.targets.kv_pool import DTYPES


def run_bounds(req: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(run index, first row of the run, last row of the run) per row, int64, tensor ops only."""
    n = req.numel()
    idx = torch.arange(n, device=req.device)
    starts = torch.ones(n, dtype=torch.bool, device=req.device)
    starts[1:] = req[1:] != req[:-1]
    ends = torch.ones(n, dtype=torch.bool, device=req.device)
    ends[:-1] = starts[1:]
    run = torch.cumsum(starts.long(), 0) - 1
    first = torch.cummax(torch.where(starts, idx, torch.zeros_like(idx)), 0).values
    last = torch.flip(torch.cummin(torch.flip(torch.where(ends, idx, torch.full_like(idx, n - 1)),
                                              (0,)), 0).values, (0,))
    return run, first, last


def graph_layout(req: torch.Tensor, pos: torch.Tensor, groups: int, W: int, cap: int,
                 zero_row: int) -> LayoutT:
    """The layout of :func:`features.request_window.engine.build_layout` (floor 0) computed without a host sync:
    ``groups`` >= the number of runs (one group per row in the decode bucket)."""
    n = req.numel()
    dev = req.device
    idx = torch.arange(n, device=dev)
    run, first, last = run_bounds(req)
    first_pos = pos[first]
    g_req = torch.zeros(groups, dtype=torch.int64, device=dev).scatter(0, run, req)
    g_first = torch.zeros(groups, dtype=torch.int64, device=dev).scatter(0, run, first_pos)
    g_live = torch.zeros(groups, dtype=torch.bool, device=dev).scatter(
        0, run, torch.ones(n, dtype=torch.bool, device=dev))
    j = torch.arange(W, device=dev)
    hpos = torch.where(g_live[:, None], g_first[:, None] - W + j[None, :], -W + j[None, :])
    valid = g_live[:, None] & (hpos >= 0)
    src = torch.where(valid, g_req[:, None] * cap + hpos % cap, torch.full_like(hpos, zero_row))
    commit = (last - idx) < cap
    write_loc = (groups * W + idx).to(torch.int32)
    return LayoutT(req, pos, write_loc, src.flatten(), hpos.flatten(), valid.flatten(), commit,
                   groups * W + n)


def dense_commit(req, pos, write_loc, cap: int, ws, ring, tags) -> None:
    """The masked commit without a mask (capture-safe): row ``i`` of a run ending at row ``l``
    writes the bytes (``ws`` at ``write_loc``) and position of its run's committed row ``e = i +
    cap * ((l - i) // cap)`` to ring row ``req * cap + pos % cap`` (``e``'s: positions of a run
    are consecutive). Padded slot-0 rows share ring row 0 of slot 0 (which lands is open)."""
    _, _, last = run_bounds(req)
    idx = torch.arange(req.numel(), device=req.device)
    e = idx + cap * torch.div(last - idx, cap, rounding_mode="floor")
    dst = req * cap + pos % cap
    ring[dst] = ws[write_loc.long()[e]]
    tags[dst] = pos[e]


def commit_dense(win, layer: int, lay: LayoutT) -> None:
    """``RequestWindowModel.commit`` of ``lay`` in ``layer``, capture-safe (:func:`dense_commit`)."""
    ws = win.rows_of(win.buffer(layer))
    dense_commit(lay.req, lay.pos, lay.write_loc, win.cap, ws, win.rows_of(win.state[layer]),
                 win.tags[layer])


class WindowGraphRunner:
    """The decode-bucket runner of a request-window pool (module docstring)."""

    capture_mode = ForwardMode.DECODE

    def __init__(self, path):
        self.path = path
        e = path.e
        self.executor = e.executor
        self.buckets = tuple(e.gcfg.buckets)
        dev, cfg = path.device, path.cfg
        mx = max(self.buckets)
        self.static_req = torch.zeros(mx, dtype=torch.int64, device=dev)
        self.static_seq = torch.ones(mx, dtype=torch.int64, device=dev)
        self.static_rows = [torch.zeros(mx, cfg.row_width, dtype=DTYPES[cfg.row_dtype],
                                        device=dev) for _ in range(cfg.layers)]
        self.handles: dict[int, object] = {}
        self.layouts: dict[int, LayoutT] = {}
        self.snaps: dict[int, list[torch.Tensor]] = {}
        self.layout_token = LayoutTokens()

    def bucket_for(self, n: int) -> int | None:
        return next((b for b in self.buckets if b >= n), None)

    # -- in-graph ------------------------------------------------------------------------------
    def materialise(self, B: int) -> LayoutT:
        """Raw -> full metadata inside the graph: the layout of the static batch."""
        p, win = self.path, self.path.window
        req = self.static_req[:B]
        pos = self.static_seq[:B] - 1
        return graph_layout(req, pos, B, p.W, p.cap, win.zero_row)

    def run_once(self, B: int) -> None:
        win = self.path.window
        lay = self.materialise(B)
        self.layouts[B] = lay
        win.activate(lay)
        for layer in range(self.path.cfg.layers):
            cache = win.buffer(layer)
            self.path.e.impl.store(cache, lay.write_loc, self.static_rows[layer][:B])
            self.commit(layer, lay)
            self.snaps[B][layer].copy_(win.workspace)

    def commit(self, layer: int, lay: LayoutT) -> None:
        commit_dense(self.path.window, layer, lay)

    # -- out-graph -----------------------------------------------------------------------------
    def capture(self, B: int) -> None:
        self.load_capture_state()
        self.snaps[B] = [torch.empty_like(self.path.window.workspace)
                         for _ in range(self.path.cfg.layers)]
        self.handles[B] = self.executor.capture(lambda: self.run_once(B))

    def load_capture_state(self) -> None:
        self.static_req.zero_()
        self.static_seq.fill_(1)

    def load_batch(self, mode: ForwardMode, slots: list[int], seq: list[int]) -> None:
        """Padded rows: slot 0, seq fill 1 (padding policy ZERO). IDLE: the out-graph IDLE
        substitution leaves every row so."""
        WindowGraphRunner.load_capture_state(self)
        if mode == ForwardMode.IDLE:
            return
        n, dev = len(slots), self.static_req.device
        self.static_req[:n].copy_(rw.i64(slots, dev))
        self.static_seq[:n].copy_(rw.i64(seq, dev))

    def after_replay(self) -> None:
        """The replay rewrote the workspace's history rows: the host's ``prepared`` key no
        longer describes them (A5)."""
        self.path.window.prepared = None

    def run(self, i: int, mode: ForwardMode, slots: list[int], seq: list[int], n: int
            ) -> WinFwdObs:
        B = self.bucket_for(n)
        if B not in self.handles:
            self.capture(B)
        self.load_batch(mode, slots, seq)
        e = self.path.e
        for layer, buf in enumerate(self.static_rows):
            buf[:B].copy_(e.rows_tensor(i, 0, "target", layer, B))
        self.executor.replay(self.handles[B])
        self.after_replay()
        lay = self.layouts[B]
        return rw.graph_obs(i, mode.name, lay.write_loc, B, self.path.cfg.layers,
                            [tensor_bytes(s) for s in self.snaps[B]], B, self.layout_token(lay),
                            lay.size)


class WindowGraphsEngine(EnginePart):
    """The engine part: the window path's DECODE-graph runner."""

    window_graph_runner = WindowGraphRunner


class WindowGraphsSGLang(SGLangPart):
    """The ``sglang`` part: the release's DECODE-graph runner under a window."""

    window_graph_runner = lazy("swafuzz.features.request_window.window_graphs.sglang:SGLangWindowGraphRunner")
