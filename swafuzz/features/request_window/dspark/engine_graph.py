"""The DSpark TARGET_VERIFY graph under a request window with early verify metadata (sglang
0.5.23 ``_install_early_verify_metadata``, addendum §4), for
:class:`features.request_window.dspark.engine.DSparkPath`: a graph ``verify`` whose batch equals
a bucket runs through :class:`VerifyGraphRunner` under a capturing executor. The verify
metadata (layout of the ``B * T`` rows, ``G = B``) is built on the host before the capture and
every replay and copied in place into the bucket's captured one (``WindowLayout.copy_``; a
non-None ``swa_out_cache_loc`` too). The graph runs no metadata init: stores resolve through the
path's resolver (W), history copy and commit read the captured layout. Capture state: ``B``
requests of slot 0 at positions ``1..T``. Buffers: per target layer K rows ``[max_bucket * T,
row_width]``, per bucket and layer a workspace snapshot, per bucket the captured metadata."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from swafuzz.features.request_window import window as rw
from swafuzz.features.request_window.window import LayoutTokens, WinFwdObs, tensor_bytes
from swafuzz.features.request_window.window_graphs.engine import commit_dense
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode


class VerifyGraphRunner:
    """The TARGET_VERIFY bucket runner of a request-window pool (module docstring)."""

    def __init__(self, path):
        self.path = path
        e = path.e
        self.executor = e.executor
        self.T = e.gcfg.num_draft_tokens
        self.buckets = tuple(e.gcfg.buckets)
        mx = max(self.buckets) * self.T
        win = path.window
        self.static_rows = [torch.zeros(mx, path.cfg.row_width, dtype=win.dtype,
                                        device=path.device) for _ in range(path.cfg.layers)]
        self.handles: dict[int, object] = {}
        self.captured: dict[int, SimpleNamespace] = {}
        self.snaps: dict[int, list[torch.Tensor]] = {}
        self.layout_token = LayoutTokens()
        self.locs: dict[int, torch.Tensor] = {}

    # -- out-graph: the early metadata ---------------------------------------------------------
    def install(self, B: int, req: list[int], pos: list[int], locs: list[int]) -> None:
        """``_install_early_verify_metadata``: the full metadata of the batch, built on the host;
        the first time it becomes the bucket's captured metadata, later it is copied into it."""
        p, dev = self.path, self.path.device
        fb = ForwardBatch(ForwardMode.TARGET_VERIFY, B, rw.i64(locs, dev), rw.i64([1] * B, dev),
                          rw.i64(pos, dev))
        lay = p.layout(rw.i64(req, dev), rw.i64(pos, dev), None, B)
        core = SimpleNamespace(request_window_layout=lay, swa_out_cache_loc=lay.write_loc)
        p.dspark().install_early_verify(fb, core)
        cap = self.captured.get(B)
        if cap is None:
            self.captured[B] = cap = core
        if cap is not core:
            self.copy_into(cap, core)
        p.forward_metadata = SimpleNamespace(core_attn_metadata=cap, late_layer_tail=None)
        p.window.activate(cap.request_window_layout)
        self.fb = fb

    @staticmethod
    def copy_into(cap, fresh) -> None:
        """``captured.copy_(metadata)``: the layout's tensors refreshed in place (equal size);
        ``swa_out_cache_loc`` assigned, then the captured tensor (if any) kept and refreshed."""
        a, b = cap.request_window_layout, fresh.request_window_layout
        if a.size != b.size:
            raise AssertionError(f"early verify metadata: layout size {b.size} != the captured "
                                 f"{a.size}")
        rw.copy_layout(a, b)
        held = cap.swa_out_cache_loc
        if held is not None and fresh.swa_out_cache_loc is not None:
            held.copy_(fresh.swa_out_cache_loc)

    # -- in-graph ------------------------------------------------------------------------------
    def run_once(self, B: int, warm: bool) -> None:
        """The captured forward: per layer the history copy, the store at the resolved rows,
        the commit (the warm-up, which runs for real before the capture, commits with the
        masked commit; the graph with the capture-safe dense one), a workspace snapshot."""
        p, win = self.path, self.path.window
        lay = p.forward_metadata.core_attn_metadata.request_window_layout
        n = B * self.T
        win.prepared = None  # host, at the warm-up and at the capture: copy every history
        for layer in range(p.cfg.layers):
            loc = p.resolve(self.fb)
            cache = win.buffer(layer)
            p.e.impl.store(cache, loc, self.static_rows[layer][:n])
            if warm:
                win.commit(layer)
            else:
                commit_dense(win, layer, lay)
            self.snaps[B][layer].copy_(win.workspace)
        self.locs[B] = loc  # the tensor the captured stores read

    def capture(self, B: int) -> None:
        T = self.T
        self.install(B, [0] * (B * T), [1 + j for _ in range(B) for j in range(T)],
                     [0] * (B * T))
        self.snaps[B] = [torch.empty_like(self.path.window.workspace)
                         for _ in range(self.path.cfg.layers)]
        calls = []

        def fn():
            calls.append(1)
            self.run_once(B, warm=len(calls) == 1)

        self.handles[B] = self.executor.capture(fn)

    def run(self, i: int, rows, locs: list[int]) -> WinFwdObs:
        """Capture the bucket on first use, install the batch's early metadata, load the K rows,
        replay."""
        B = len(rows) // self.T
        if B not in self.handles:
            self.capture(B)
        self.install(B, [r[0] for r in rows], [r[1] for r in rows], locs)
        e = self.path.e
        for layer, buf in enumerate(self.static_rows):
            buf[:B * self.T].copy_(e.rows_tensor(i, 0, "target", layer, B * self.T))
        self.executor.replay(self.handles[B])
        self.path.window.prepared = None  # the replay rewrote the workspace history (A5)
        lay = self.captured[B].request_window_layout
        return rw.graph_obs(i, ForwardMode.TARGET_VERIFY.name, self.locs[B], B * self.T,
                            self.path.cfg.layers, [tensor_bytes(s) for s in self.snaps[B]], B,
                            self.layout_token(lay), lay.size)
