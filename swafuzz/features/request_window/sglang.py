"""The ``sglang`` target's V4.1 write path (0.5.21+): SGLang's own request window, layout, tail
layout and resolver in place of the engine model's (:mod:`features.request_window.engine`).
Real: ``window_layout`` (torch branch), ``RequestWindow`` (``reset``, ``activate`` with its
workspace refusal, ``activate_idle``, ``buffer``'s once-per-layer history copy, ``commit``) on
swafuzz buffers, ``late_layer_tail_layout``, the ``LateLayerTail`` / ``DSV4Metadata`` records,
the resolver ``get_swa_out_cache_loc`` through ``store_cache`` (no mapping under a window, W8)
and ``_activate_request_window`` after every eager metadata init. Modelled: the Triton copy /
commit kernels (row copies, addendum §2.2), the store kernel, ``make_core_attn_metadata``
(CUDA; ``window_layout`` gets its arguments), the fold, the tail's enter / exit (plain swaps)
and ``forward``'s IDLE guard on the commit. Per release: ``sglang_facts.json`` beside this
file; the paths built on it are their features' sglang seams."""

from __future__ import annotations

import functools
import inspect
import os
from types import SimpleNamespace

import torch

from swafuzz.features.request_window.engine import WindowPath
from swafuzz.features.request_window.window import WinStepObs, tensor_bytes
from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.targets.hooks import PartSlot
from swafuzz.targets.kv_pool import DTYPES
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang import features
from swafuzz.targets.sglang.engine import build_real_pool
from swafuzz.targets.sglang.real import ADAPTER, VERSION, RealBackend, bare_backend, real_batch

if features.WINDOW_MISSING:  # pragma: no cover - depends on the installed release
    raise TargetUnavailable(
        f"target sglang: sglang {VERSION} (adapter {ADAPTER}) has no request window, encoder "
        "replay or late-layer tail as this adapter drives them (first in 0.5.21, addendum §0; "
        f"lacks {'; '.join(features.WINDOW_MISSING)}); Cases with pool.request_window or "
        "pool.late_layer_start need a release that has them")

from sglang.srt.mem_cache import dsv41_request_window as _rw  # noqa: E402

_amk = features.tail_mod
_backend_mod = features.backend_mod


def _rows(t: torch.Tensor, width: int) -> torch.Tensor:
    return t.view(-1, width)


def _copy_packed_rows(src, dst, src_loc, dst_loc, *, page_size, layout=None):
    """Modelled ``copy_packed_rows`` (Triton): row ``dst_loc[k]`` of ``dst`` <- row
    ``src_loc[k]`` of ``src`` (both ``[pages, P, width]``)."""
    w = src.shape[-1]
    _rows(dst, w)[dst_loc.long()] = _rows(src, w)[src_loc.long()]


def _commit_packed_rows(workspace, state, tags, rows_layout, *, page_size, capacity,
                        layout=None):
    """Modelled ``commit_packed_rows`` (Triton), addendum §2.2: each commit-masked row's
    workspace row ``write_loc`` goes to ring row ``req * capacity + pos % capacity``; its tag
    becomes ``pos``."""
    m = rows_layout.commit_mask
    dst = rows_layout.req[m] * capacity + rows_layout.pos[m] % capacity
    w = workspace.shape[-1]
    _rows(state, w)[dst] = _rows(workspace, w)[rows_layout.write_loc[m].long()]
    tags[dst] = rows_layout.pos[m]


def _copy_packed_tokens(src, dst, src_loc, dst_loc, *, page_size, layout=None):
    """Modelled ``copy_packed_tokens`` (0.5.21, 0.5.22: a V4 byte-layout copy of a data row and
    a scale row per token, used by ``buffer`` for the history and by ``commit``): on swafuzz's
    ``[pages, P, width]`` buffers, row ``dst_loc[k]`` <- row ``src_loc[k]``."""
    if src_loc.numel():
        _copy_packed_rows(src, dst, src_loc, dst_loc, page_size=page_size)


# the module's own names for the CUDA-only kernels (the seam 0.5.12's allocator uses too):
# 0.5.23 copy_packed_rows / commit_packed_rows; 0.5.21 .. 0.5.22 copy_packed_tokens
if features.WINDOW_COPY == "copy_packed_rows":
    _rw.copy_packed_rows = _copy_packed_rows
    _rw.commit_packed_rows = _commit_packed_rows
else:
    _rw.copy_packed_tokens = _copy_packed_tokens

# The release's history length is the constant 128 (``window_layout``'s default, which
# ``activate_idle`` relies on); the module's ``window_layout`` defaults it to the running
# Case's ``HISTORY["window"]`` (set before the release's code runs); the rest is the release's.
real_window_layout = _rw.window_layout
#: ``window_layout`` takes the ring's ``zero_row`` (required from 0.5.23; earlier releases keep
#: it on the window and use it in ``buffer``)
_LAYOUT_ZERO_ROW = "zero_row" in inspect.signature(real_window_layout).parameters
HISTORY = {"window": 128}


@functools.wraps(real_window_layout)  # its signature stays the release's (inspect follows it)
def _scaled_window_layout(req, pos, **kw):
    kw.setdefault("window", HISTORY["window"])
    return real_window_layout(req, pos, **kw)


_rw.window_layout = _scaled_window_layout


class _Pool(SimpleNamespace):
    """What ``RequestWindow`` reads of a pool its factory makes: ``kv_buffer``, ``size``,
    ``kv_layout``."""


class SGLangWindowPath(WindowPath):
    """:class:`features.request_window.engine.WindowPath` with SGLang 0.5.23's window, layouts and
    resolver; prefill graphs, window verify / DP-padded EXTEND and DECODE graphs come from the part
    slots ``prefill_graph_runner``, ``window_verify`` and ``window_graph_runner``."""

    prefill_runner_cls = PartSlot("sglang", "prefill_graph_runner", optional=True)
    dspark_cls = PartSlot("sglang", "window_verify")
    graph_runner_cls = PartSlot("sglang", "window_graph_runner", optional=True)

    def __init__(self, engine):
        if not features.FOLD and any(st.replay for st in engine.case.steps):
            raise TargetUnavailable(
                f"target sglang: sglang {VERSION} replays encoder SWA in a forward of its own "
                "(run_encoder_swa_replay), not folded into the extend (fold_encoder_swa_replay, "
                "0.5.23): a Case with extend replay describes the 0.5.23 fold")
        super().__init__(engine)
        pool = engine.target_pool
        if self.on and engine.executor.graphs and any(
                st.exec == "graph" and st.op == "verify" for st in engine.case.steps):
            raise TargetUnavailable(
                "target sglang: DSpark verify graphs under a request window (early metadata) "
                "are not driven on the sglang adapter; run them on unified, or with --executor "
                "eager")
        if self.on:
            self.real_pool = build_real_pool(pool)  # no mapping: a CUDA window has none (W8)
            self.real_pool.request_window = self.window
            self.real_pool.set_swa_key_buffer_radix_fused = self._store_tap
        else:
            self.real_pool = pool.real  # the target pool's, with M registered; its store tap
            # goes to the pool's sink, which store() points here
        self.shim = bare_backend(self.real_pool)
        self._log: list = []

    # -- real pieces -----------------------------------------------------------------------------
    def make_window(self):
        c = self.cfg
        dtype, width, P = DTYPES[c.row_dtype], c.row_width, self.P

        made = []
        # 0.5.21 / 0.5.22 commit unmasked rows to ``sink_row`` = zero_row + 1, in the ring's
        # last page when it holds two rows or more: at page size 1 the ring (and tag table)
        # gets one extra row, as a wider page would.
        sink_pad = 1 if P == 1 and features.WINDOW_COPY == "copy_packed_tokens" else 0

        def factory(rows: int, layers: int) -> _Pool:
            bufs = []
            ring = not made  # the first pool made is the ring: its last page holds the zero row
            n = rows + (sink_pad if ring else 0)
            for _ in range(layers):
                t = torch.full((n, width * dtype.itemsize), POISON_BYTE, dtype=torch.uint8,
                               device=self.device)
                if ring:
                    t[rows - P:] = 0
                bufs.append(t.view(dtype).view(n // P, P, width))
            made.append(rows)
            return _Pool(kv_buffer=bufs, size=rows, kv_layout=None)

        w = _rw.RequestWindow(factory, num_slots=c.window_slots + 1, layers=c.layers,
                              page_size=P, capacity=c.request_window,
                              workspace_rows=(c.window_slots + 1) * self.W + c.window_chunk)
        if sink_pad:
            w.tags = torch.cat([w.tags, w.tags.new_full((w.tags.shape[0], sink_pad), -1)], 1)
        return w

    def reset_slot(self, slot):
        self.window.reset(torch.tensor([slot], dtype=torch.int64, device=self.device))

    def layout(self, req, pos, floor, groups):
        kw = {"zero_row": self.window.zero_row} if _LAYOUT_ZERO_ROW else {}
        return real_window_layout(req, pos, window=self.W, capacity=self.window.capacity,
                                   floor=floor, num_groups=groups, **kw)

    def tail(self, per_req, seq_after):
        idx, lens, floor = _amk.late_layer_tail_layout(
            extend_lens_cpu=list(per_req), seq_lens_cpu=list(seq_after), tail_len=self.W,
            device=self.device)
        return idx.long(), list(lens), floor.long()

    def init_metadata(self, fb, req, floor, groups, per_req) -> None:
        """The engine model's metadata as the release's records (``DSV4Metadata``, the tail's
        ``LateLayerTail``)."""
        super().init_metadata(fb, req, floor, groups, per_req)
        if self.skip_init(fb.forward_mode):
            return
        self.forward_metadata = _backend_mod.DSV4Metadata(
            core_attn_metadata=self.forward_metadata.core_attn_metadata, indexer_metadata=None)
        tm = self.tail_metadata
        if tm is not None:
            t = tm.late_layer_tail
            real = _backend_mod.LateLayerTail(
                token_indices=t.token_indices, positions=fb.positions[t.token_indices],
                extend_seq_lens=torch.tensor(t.tail_lens), extend_seq_lens_cpu=list(t.tail_lens),
                swa_out_cache_loc=t.swa_out_cache_loc)
            self.tail_metadata = _backend_mod.DSV4Metadata(
                core_attn_metadata=tm.core_attn_metadata, indexer_metadata=None,
                late_layer_tail=real)
        if self.on and hasattr(RealBackend, "_activate_request_window"):
            # 0.5.23's init_forward_metadata ends with _activate_request_window (the
            # metadata's layout becomes the window's; prepared dropped); 0.5.21 / 0.5.22 have
            # no such step (the resolver's W branch activates)
            self.shim.forward_metadata = self.forward_metadata
            RealBackend._activate_request_window(self.shim)

    def resolve(self, fb):
        self.shim.forward_metadata = self.forward_metadata
        HISTORY["window"] = self.W
        return RealBackend.get_swa_out_cache_loc(self.shim, real_batch(fb))

    def translate(self, loc):
        return self.real_pool.translate_loc_from_full_to_swa(loc).to(torch.int32)

    # -- store through the release's store_cache ------------------------------------------------
    def _store_tap(self, layer_id, swa_loc, cache_k):
        """The pool's ``set_swa_key_buffer_radix_fused`` (a CUDA JIT store): swafuzz's store at
        the locations SGLang resolved, into the buffer the release's ``get_swa_raw_buffer``
        picks (the workspace under a window)."""
        if self.on:
            cache = type(self.real_pool).get_swa_raw_buffer(self.real_pool, layer_id)
        else:
            cache = self.e.target_pool.layer_cache(layer_id)
        self._log.append(swa_loc)
        self.e.impl.store(cache, swa_loc, cache_k)

    #: the release's own invariant level while its window code runs: STRICT, so
    #: ``RequestWindow.buffer``'s ``dsv41.swa_history_present`` check (addendum §5 W5: every
    #: valid history row's tag equals its position at use) raises on CPU instead of staying off
    INVARIANT_LEVEL = "2"

    def store(self, layer, fb, rows):
        old = os.environ.get("SGLANG_INVARIANT_CHECK")
        os.environ["SGLANG_INVARIANT_CHECK"] = self.INVARIANT_LEVEL
        try:
            return self._store(layer, fb, rows)
        finally:
            if old is None:
                del os.environ["SGLANG_INVARIANT_CHECK"]
            else:
                os.environ["SGLANG_INVARIANT_CHECK"] = old

    def _store(self, layer, fb, rows):
        self.shim.forward_metadata = self.forward_metadata
        HISTORY["window"] = self.W
        self._log = []
        pool = self.e.target_pool
        if not self.on:
            pool.sink_fn = lambda local, loc, k: self._store_tap(pool.start_layer + local, loc, k)
        try:
            RealBackend.store_cache(self.shim, layer, rows, real_batch(fb))
        finally:
            pool.sink_fn = None
        return self._log[-1]

    def commit(self, layer, fb):
        """``DeepseekV4AttnBackend.forward``'s guard (modelled: ``forward`` runs attention),
        then the release's ``RequestWindow.commit``."""
        if self.on and not fb.forward_mode.is_idle():
            self.window.commit(self.real_pool._swa_local_layer_id(layer))

    def history_tags(self, layer):
        """The release's ``RequestWindow.tags`` (the layer's window-local id) at the rows the active
        layout's history copy read: 0.5.23's ``WindowLayout.history_src``, 0.5.21 / 0.5.22's
        ``RequestWindow._history_src(layout)``."""
        w = self.window
        src = getattr(w.layout, "history_src", None)
        if src is None:
            src = w._history_src(w.layout)
        return w.tags[self.real_pool._swa_local_layer_id(layer)][src.long()].tolist()

    def workspace_bytes(self) -> bytes:
        return tensor_bytes(self.window.workspace.kv_buffer[0])

    def ring_bytes(self) -> list[bytes]:
        return [tensor_bytes(b) for b in self.window.state.kv_buffer]

    def step_obs(self, i: int):
        """The ring and tags as the Case's window holds them (``rows + P`` rows). 0.5.21 / 0.5.22
        (``copy_packed_tokens``) commit every unmasked row to ``sink_row`` (zero_row + 1), a zero-page
        row no read path uses: it is reported as before any commit (zeros, tag -1) and the adapter's
        extra row at page size 1 cut off; ``zero_row`` is reported as it is."""
        if not self.on or features.WINDOW_COPY != "copy_packed_tokens":
            return super().step_obs(i)
        w = self.window
        n, sink = w.rows + self.P, w.sink_row
        tags = w.tags[:, :n].clone()
        ring = []
        for b in w.state.kv_buffer:
            flat = b.reshape(-1, b.shape[-1])[:n].clone()
            if sink < n:
                flat[sink] = 0
            ring.append(tensor_bytes(flat))
        if sink < n:
            tags[:, sink] = -1
        return WinStepObs(i, tags.tolist(), ring)
