"""Mutants of DECODE graphs under a request window (feature ``window_graphs``; addendum §3 "I
(window)", §4, §5 W1/W3/W6/W7, §6 A5): one :class:`WindowGraphRunner` or ``WindowPath`` method
overridden (:mod:`features.request_window.mutants`); kind ``window_graphs``.

Outside the zoo: ``mutant:switch_idle_loc_process_memo`` (:class:`IdleLocProcessMemo`), a leak
between two engine instances that only the switch machine
(``tests/harness/test_switch_machine.py``) reaches, so it is registered as a target, not with
``@mutant``."""

from __future__ import annotations

import torch

from swafuzz.features.request_window.engine import WindowPath, path_with
from swafuzz.features.request_window.window_graphs.engine import WindowGraphRunner, graph_layout
from swafuzz.targets import register
from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import ForwardMode
from swafuzz.targets.mutants import mutant


class _PadRepeatsLast(WindowGraphRunner):
    def load_batch(self, mode, slots, seq):
        super().load_batch(mode, slots, seq)
        if mode != ForwardMode.IDLE and slots:
            self.static_req[len(slots):].fill_(slots[-1])


@mutant("window_graph_pad_repeats_last", ("window_graphs",), "addendum §4 decode bucket "
        "(padded rows: req 0, seq fill 1, padding policy ZERO) and §5 W3", expected=("window",))
class WindowGraphPadRepeatsLast(UnifiedEngine):
    """Padded rows of the decode bucket repeat the last real row's request slot instead of slot
    0 (padding policy ZERO): a padding row extends a real run and commits into its ring (W3)."""

    step_path_cls = path_with(WindowPath, graph_runner_cls=_PadRepeatsLast)


class _IdleKeepsBatch(WindowGraphRunner):
    def load_batch(self, mode, slots, seq):
        if mode == ForwardMode.IDLE:
            return
        super().load_batch(mode, slots, seq)


@mutant("window_graph_idle_keeps_batch", ("window_graphs",), "addendum §3 I (window): a DECODE "
        "graph replayed as IDLE runs with the out-graph IDLE substitution (req 0, pos 0); §5 W6",
        expected=("window",))
class WindowGraphIdleKeepsBatch(UnifiedEngine):
    """An IDLE replay of the DECODE graph keeps the previous replay's req / seq_lens instead of
    the out-graph IDLE substitution (the graph half of I (window) and W6)."""

    step_path_cls = path_with(WindowPath, graph_runner_cls=_IdleKeepsBatch)


class _LayoutRebuilt(WindowGraphRunner):
    def after_replay(self):
        super().after_replay()
        B = max(self.layouts)
        for b in self.layouts:
            if self.handles.get(b) is not None:
                B = b
        n = int((self.static_req != 0).sum()) or 1
        lay = graph_layout(self.static_req[:n].clone(), (self.static_seq[:n] - 1).clone(), n,
                           self.path.W, self.path.cap, self.path.window.zero_row)
        self.path.window.activate(lay)
        self._last_bucket = B
        self._rebuilt = lay

    def run(self, i, mode, slots, seq, n):
        obs = super().run(i, mode, slots, seq, n)
        lay = self._rebuilt
        obs.layout_id, obs.layout_size = self.layout_token(lay), lay.size
        return obs


@mutant("window_graph_layout_rebuilt", ("window_graphs",), "addendum §4 decode bucket (Raw "
        "metadata, layout materialised in-graph) and §5 W7 (persistent layout identity and size "
        "per graph key)", expected=("window_graph",))
class WindowGraphLayoutRebuilt(UnifiedEngine):
    """Every replay builds and activates a fresh layout object of the live batch out-graph (no
    bucket padding) while the captured graph keeps its own (the decode bucket's layout is
    materialised in-graph; W7)."""

    step_path_cls = path_with(WindowPath, graph_runner_cls=_LayoutRebuilt)


class _KeepsPrepared(WindowGraphRunner):
    def after_replay(self):
        """Upstream host bookkeeping: nothing (the window's ``prepared`` key survives)."""


@mutant("window_graph_replay_keeps_prepared", ("window_graphs",), "addendum §6 A5 (activate() "
        "returns early for the same layout object, keeping prepared) and §2.2 buffer()",
        expected=("window",))
class WindowGraphReplayKeepsPrepared(UnifiedEngine):
    """The host keeps the window's ``prepared`` key across a graph replay, so an eager IDLE re-
    activating the cached idle layout skips the history copy with one SWA layer (A5: re-
    activation of the same layout object)."""

    step_path_cls = path_with(WindowPath, graph_runner_cls=_KeepsPrepared)


class _DpPadDroppedPath(WindowPath):
    def dp_decode(self, i, s):
        al = self.e.allocator
        new = al.extend([(rid, 1) for rid in s.rids])
        rows = [(self.slot[rid], len(al.tokens[rid]) - 1, 0) for rid in s.rids]
        return self.forward(i, ForwardMode.DECODE, rows, [sl[0] for sl in new], len(rows), None)


@mutant("window_dp_pad_dropped", ("window_graphs",), "addendum §4 (DP) and §5 W1/W6: a DP "
        "decode rank's MLP-sync MAX_LEN padding (0.5.23 prepare_mlp_sync_batch, before the "
        "metadata init) is part of the window layout: slot-0 rows with their own workspace rows",
        expected=("window",))
class WindowDpPadDropped(UnifiedEngine):
    """An eager DP decode rank's MAX_LEN padding rows are left out of the window layout: the
    layout (one group per row) and the store cover the real rows only (W1, W6)."""

    step_path_cls = _DpPadDroppedPath


# switch-only (not in the zoo: no per-Case kind runs two engine instances) -------------------
#: process-wide memo shared by every engine instance of the mutant (the state that survives)
_IDLE_LOC_MEMO: dict[tuple[int, int], torch.Tensor] = {}


class _MemoBackend(DSV4Backend):
    def get_swa_out_cache_loc(self, fb):
        if fb.forward_mode.is_idle():
            key = (fb.out_cache_loc.shape[0], self.memo_window)
            if key not in _IDLE_LOC_MEMO:
                _IDLE_LOC_MEMO[key] = super().get_swa_out_cache_loc(fb).clone()
            return _IDLE_LOC_MEMO[key]
        return super().get_swa_out_cache_loc(fb)


class _MemoWindowPath(WindowPath):
    def resolve(self, fb):
        if self.on and fb.forward_mode.is_idle():
            loc = self.window.activate_idle(fb.out_cache_loc.numel())
            key = (fb.out_cache_loc.numel(), self.W)
            if key not in _IDLE_LOC_MEMO:
                _IDLE_LOC_MEMO[key] = loc.clone()
            return _IDLE_LOC_MEMO[key]
        return super().resolve(fb)


class IdleLocProcessMemo(UnifiedEngine):
    """Addendum §3 I (window): upstream caches the idle layout per ``RequestWindow`` keyed by
    the row count only; here the IDLE branch's locations (both halves of I: ``int32(M[loc])`` on
    a paged pool, the idle layout's ``write_loc`` under a window) are memoised per process,
    keyed by (rows, window): right within one pool family, but a V4.0 <-> V4.1 switch of engine
    instances hands one family's locations to the other."""

    mutant_name = "mutant:switch_idle_loc_process_memo"
    backend_cls = _MemoBackend
    step_path_cls = _MemoWindowPath

    def __init__(self, case, **kw):
        super().__init__(case, **kw)
        self.target_backend.memo_window = case.pool.window


register("mutant:switch_idle_loc_process_memo", IdleLocProcessMemo)
