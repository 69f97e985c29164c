"""Breakable prefill graphs under a request window (addendum §4, §5 W3/W6/W7; "Prefill graphs
under a request window" in ``SEMANTICS.md`` beside this file), for
:class:`features.request_window.engine.WindowPath`: an ``admit`` / ``extend`` with ``exec ==
"graph"`` (window, no tail) whose ``n`` rows fit a token bucket (smallest ``T >= n``, ``T <= 2 *
n``) runs through :class:`PrefillGraphRunner` under a capturing executor, else eagerly. 0.5.23's
pieces: :meth:`~PrefillGraphRunner.expand` (``expand_prefill_causally``: padding rows repeat the
last slot at position 0), :meth:`~PrefillGraphRunner.live_rows` (``request_window_live_rows``),
:meth:`~PrefillGraphRunner.build` (:func:`padded_layout`, ``num_groups = min(S + 1, T)``); per
target layer one captured :meth:`~PrefillGraphRunner.segment` (history copy, store) and an eager
:meth:`~PrefillGraphRunner.brk` (commit); a replay refreshes the bucket's layout object in place
(:meth:`~PrefillGraphRunner.refresh`, ``WindowLayout.copy_``, W7). Buffers: per target layer K
rows ``[max bucket, row_width]`` of the row dtype; per bucket the capture's layout object (one
request of slot 0, ``T`` tokens; :class:`LayoutT`, ``size = G * W + T``) and a handle per layer."""

from __future__ import annotations

import torch

from swafuzz.features.parts import EnginePart, SGLangPart, lazy
from swafuzz.features.request_window import window as rw
from swafuzz.features.request_window.window import LayoutT, LayoutTokens, WinFwdObs, build_layout
from swafuzz.targets.kv_pool import DTYPES

#: upstream ``_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR`` (0.5.23 ``prefill_cuda_graph_runner``):
#: a batch whose bucket is more than this many times its rows runs eagerly
MAX_PADDING_FACTOR = 2


def padded_layout(req: torch.Tensor, pos: torch.Tensor, floor: torch.Tensor, live: int | None,
                  groups: int, W: int, cap: int, zero_row: int) -> LayoutT:
    """``window_layout(req[:live], pos[:live], floor=floor[:live], num_groups=groups,
    padded_rows=T)`` (``T = req.numel()``): the layout of the live rows, then ``T - live``
    padding rows (:func:`features.request_window.window.with_padding`). ``live`` None: every
    row is live (no padding mask)."""
    if live is None or live >= req.numel():
        return build_layout(req, pos, floor, groups, W, cap, zero_row)
    return rw.with_padding(build_layout(req[:live], pos[:live], floor[:live], groups, W, cap,
                                     zero_row), req.numel() - live)


class PrefillGraphRunner:
    """The breakable prefill-graph runner of a request-window pool (module docstring)."""

    def __init__(self, path):
        self.path = path
        e = path.e
        self.executor = e.executor
        self.buckets = tuple(e.gcfg.prefill_buckets)
        cfg = path.cfg
        mx = max(self.buckets) if self.buckets else 0
        self.static_rows = [torch.zeros(mx, cfg.row_width, dtype=DTYPES[cfg.row_dtype],
                                        device=path.device) for _ in range(cfg.layers)]
        self.handles: dict[int, list] = {}
        self.layouts: dict[int, LayoutT] = {}
        self.layout_token = LayoutTokens()

    # -- decisions -------------------------------------------------------------------------------
    def bucket_for(self, n: int) -> int | None:
        """The token bucket of an ``n``-row batch, None when none fits or the padding is more
        than :data:`MAX_PADDING_FACTOR` times ``n`` (``can_replay_locally``)."""
        T = next((b for b in self.buckets if b >= n), None)
        if T is None or T > MAX_PADDING_FACTOR * n:
            return None
        return T

    def groups(self, T: int) -> int:
        """``num_groups = min(req_to_token rows, padded tokens)``; ``req_to_token`` has the
        ``S`` request slots plus the padding slot 0."""
        return min(self.path.cfg.window_slots + 1, T)

    def live_rows(self, n: int, T: int) -> int | None:
        """``request_window_live_rows``: the live row count of a graph layout."""
        return n

    def expand(self, rows: list[tuple[int, int, int]], T: int):
        """``(req, pos, floor)`` int64 ``[T]`` of the padded batch: padding rows repeat the last
        live row's slot (``req_pool_indices_repeated[-1:]``) with position 0 (seq fill 1) and
        floor 0 (``_pad_rows``)."""
        pad, dev = T - len(rows), self.path.device
        fill = (rows[-1][0], 0, 0)
        return tuple(rw.i64([r[k] for r in rows] + [fill[k]] * pad, dev) for k in range(3))

    def build(self, rows: list[tuple[int, int, int]], T: int):
        """The layout of a (capture or live) batch padded to bucket ``T``."""
        p = self.path
        req, pos, floor = self.expand(rows, T)
        return padded_layout(req, pos, floor, self.live_rows(len(rows), T), self.groups(T), p.W,
                             p.cap, p.window.zero_row)

    def refresh(self, held, fresh) -> None:
        """``WindowLayout.copy_``: every tensor of the bucket's layout object refreshed in place
        (sizes must match: the captured segments hold their addresses)."""
        assert held.size == fresh.size, (held.size, fresh.size)
        rw.copy_layout(held, fresh)

    def layout_for_replay(self, T: int, fresh):
        """The layout object the replay activates: the one the capture built (W7)."""
        held = self.layouts[T]
        self.refresh(held, fresh)
        return held

    # -- graph pieces ----------------------------------------------------------------------------
    def segment(self, T: int, layer: int) -> None:
        """Captured: the window's history copy for ``layer`` (the capture scope always copies:
        ``prepared`` is dropped first) and the store of the bucket's ``T`` K rows."""
        win = self.path.window
        win.prepared = None
        cache = win.buffer(layer)
        self.path.e.impl.store(cache, self.layouts[T].write_loc, self.static_rows[layer][:T])

    def brk(self, layer: int) -> None:
        """The eager break after a layer's segment: attention (not modelled), then
        ``DeepseekV4AttnBackend.forward``'s commit (EXTEND: no IDLE guard applies)."""
        self.path.window.commit(layer)

    def capture(self, T: int) -> None:
        lay = self.build([(0, p, 0) for p in range(T)], T)
        self.layouts[T] = lay
        self.path.window.activate(lay)
        handles = []
        for layer in range(self.path.cfg.layers):
            handles.append(self.executor.capture(lambda layer=layer: self.segment(T, layer)))
            self.brk(layer)
        self.handles[T] = handles

    # -- a step ----------------------------------------------------------------------------------
    def run(self, i: int, rows: list[tuple[int, int, int]]) -> WinFwdObs | None:
        """Run the forward of ``rows`` (``(slot, position, floor)``, batch order) through its
        bucket; None when no bucket takes it (the caller runs it eagerly)."""
        T = self.bucket_for(len(rows))
        if T is None:
            return None
        e, win = self.path.e, self.path.window
        for layer, buf in enumerate(self.static_rows):
            buf[:T].copy_(e.rows_tensor(i, 0, "target", layer, T))
        if T not in self.handles:
            self.capture(T)
        lay = self.layout_for_replay(T, self.build(rows, T))
        win.activate(lay)
        ws = []
        for layer in range(self.path.cfg.layers):
            self.executor.replay(self.handles[T][layer])
            self.brk(layer)
            ws.append(self.path.workspace_bytes())
        return rw.graph_obs(i, "EXTEND", self.layouts[T].write_loc, T, self.path.cfg.layers, ws,
                            T, self.layout_token(lay), lay.size)


class PrefillGraphsEngine(EnginePart):
    """The engine part: the window path's prefill-graph runner."""

    prefill_graph_runner = PrefillGraphRunner


class PrefillGraphsSGLang(SGLangPart):
    """The ``sglang`` part: the release's prefill-graph runner under a window."""

    prefill_graph_runner = lazy("swafuzz.features.request_window.prefill_graphs.sglang:SGLangPrefillRunner")
