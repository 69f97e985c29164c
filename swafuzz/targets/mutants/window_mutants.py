"""Bug-zoo mutants of the V4.1 write path (issue 12; addendum §2.2-§2.4, §3, §5, §6).

Each is a :class:`targets.engine.UnifiedEngine` whose ``window_path_cls`` is a
:class:`targets.window.WindowPath` (or whose window class is a
:class:`targets.window.RequestWindowModel`) subclass overriding one method.

==  ==============================  =========================================  ================
#   name                            bug (source)                               kind (only)
==  ==============================  =========================================  ================
30  window_before_idle              resolver W branch before the IDLE test     request_window
                                    (0.5.21-0.5.22 order, addendum §3, A2)
31  workspace_overflow_unchecked    a layout larger than the workspace grows   request_window
                                    it instead of being refused (A7, §2.2)
32  commit_first_rows               commit mask = the first min(cap, run) rows request_window
                                    of a run instead of the last (W4, §2.2)
33  idle_commits                    an IDLE forward commits its rows (the      request_window
                                    forward's IDLE guard lost: A9, W6)
34  tail_first_rows                 late layers run each request's first       late_tail
                                    min(W, n) rows (T3, §2.4)
35  tail_len_unchecked              tail length min(W, n) not clamped to the   late_tail
                                    extend: W rows per request (A3, T1)
36  replay_rows_appended            the fold appends replay rows after the     encoder_replay
                                    whole extend: one request in two runs
                                    (A8, W3, §2.3)
37  replay_without_reset            encoder replay without ``reset(slot)``     encoder_replay
                                    first (E2, §2.3)
38  replay_rows_not_committed       replay rows excluded from the commit mask  encoder_replay
                                    (E1, §2.3)
39  window_paged_fallback           a DECODE under a window falls through to   request_window
                                    F, M[loc] (W8, A4, §3)
==  ==============================  =========================================  ================
"""

from __future__ import annotations

import torch

from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import ForwardMode
from swafuzz.targets.mutants import mutant
from swafuzz.targets.window import RequestWindowModel, WindowPath, tail_layout


# 30 -----------------------------------------------------------------------------------------
class _WindowBeforeIdlePath(WindowPath):
    def resolve(self, fb):
        """0.5.21-0.5.22 resolver order: W (and T) before any IDLE test: an IDLE forward
        activates whatever layout the metadata holds (a stale one when MTP skipped the init)."""
        if self.on:
            lay = self.forward_metadata.core_attn_metadata.request_window_layout
            self.window.activate(lay)
            return lay.write_loc
        return super().resolve(fb)


@mutant("window_before_idle", ("request_window",), "addendum §3 (resolver order of "
        "0.5.21-0.5.22: W before IDLE; 0.5.23 tests IDLE first) and §6 A2")
class WindowBeforeIdle(UnifiedEngine):
    window_path_cls = _WindowBeforeIdlePath


# 31 -----------------------------------------------------------------------------------------
class _GrowingWindow(RequestWindowModel):
    def check_size(self, layout):
        """A layout larger than the workspace reallocates it (rows kept) instead of refusing:
        captured graphs would keep the old address (A7)."""
        if layout.size > self.ws_rows:
            old = self.rows_of(self.workspace)
            rows = -(-layout.size // self.P) * self.P
            new = torch.zeros(rows, old.shape[1], dtype=old.dtype, device=old.device)
            new[:old.shape[0]] = old
            self.ws_rows = rows
            self.workspace = new.view(rows // self.P, self.P, self.row_width)


class _GrowingPath(WindowPath):
    window_cls = _GrowingWindow


@mutant("workspace_overflow_unchecked", ("request_window",), "addendum §2.2 (the workspace is "
        "sized once; activate raises when a later layout is larger) and §6 A7")
class WorkspaceOverflowUnchecked(UnifiedEngine):
    window_path_cls = _GrowingPath


# 32 -----------------------------------------------------------------------------------------
class _CommitFirstPath(WindowPath):
    def layout(self, req, pos, floor, groups):
        """Commit mask of the first min(cap, run) rows of each run instead of the last."""
        lay = super().layout(req, pos, floor, groups)
        n = req.numel()
        idx = torch.arange(n, device=req.device)
        start = torch.ones(n, dtype=torch.bool, device=req.device)
        start[1:] = req[1:] != req[:-1]
        first = torch.cummax(torch.where(start, idx, 0), 0).values
        lay.commit_mask = (idx - first) < self.cap
        return lay


@mutant("commit_first_rows", ("request_window",), "addendum §2.2 (commit_mask = the last "
        "capacity rows of a run) and §5 W4")
class CommitFirstRows(UnifiedEngine):
    window_path_cls = _CommitFirstPath


# 33 -----------------------------------------------------------------------------------------
class _IdleCommitsPath(WindowPath):
    def commit(self, layer, fb):
        """The forward's IDLE guard around ``commit`` is lost (A9: an IDLE batch relabelled
        EXTEND): an IDLE forward commits its idle layout into slot 0."""
        if self.on:
            self.window.commit(layer)


@mutant("idle_commits", ("request_window",), "addendum §2.2 (commit skipped when IDLE), §5 W6 "
        "(eager IDLE commits nothing) and §6 A9")
class IdleCommits(UnifiedEngine):
    window_path_cls = _IdleCommitsPath


# 34 -----------------------------------------------------------------------------------------
class _TailFirstRowsPath(WindowPath):
    def tail(self, per_req, seq_after):
        """Each request's first min(W, n) rows instead of its last."""
        idx, lens, floor = tail_layout(per_req, seq_after, self.W, self.device)
        first, start = [], 0
        for n in per_req:
            first += range(start, start + min(self.W, n))
            start += n
        return torch.tensor(first, dtype=torch.int64, device=self.device), lens, floor


@mutant("tail_first_rows", ("late_tail",), "addendum §2.4 (late layers run each request's "
        "last min(128, extend_len) rows, late_layer_tail_layout) and §5 T3")
class TailFirstRows(UnifiedEngine):
    window_path_cls = _TailFirstRowsPath


# 35 -----------------------------------------------------------------------------------------
class _TailLenUncheckedPath(WindowPath):
    def tail(self, per_req, seq_after):
        """Tail length W for every request, unclamped by its extend length (the rows before a
        short request's extend are taken from the previous request, or wrap)."""
        idx, start = [], 0
        for n in per_req:
            idx += range(start + n - self.W, start + n)
            start += n
        floors = [max(0, s - self.W) for s in seq_after for _ in range(self.W)]
        total = sum(per_req)
        return (torch.tensor(idx, dtype=torch.int64, device=self.device) % total,
                [self.W] * len(per_req),
                torch.tensor(floors, dtype=torch.int64, device=self.device))


@mutant("tail_len_unchecked", ("late_tail",), "addendum §6 A3 (unchecked tail length) and §5 "
        "T1 (len(tail loc) == sum of tail lens == min(128, extend_len) per request)")
class TailLenUnchecked(UnifiedEngine):
    window_path_cls = _TailLenUncheckedPath


# 36 -----------------------------------------------------------------------------------------
class _ReplayAppendedPath(WindowPath):
    def fold(self, i, per):
        """Replay rows appended after the whole extend (not in front of their request): a
        replayed request's rows form two runs."""
        if not any(r for _, r, _ in per):
            return super().fold(i, per)
        al = self.e.allocator
        rows, locs, per_req = [], [], []
        tail_rows, tail_locs = [], []
        for rid, r, new in per:
            toks = al.tokens[rid]
            n0 = len(toks) - len(new)
            floor = n0 - r if r else 0
            sl = self.slot.get(rid, 0)
            rows += [(sl, p, floor) for p in range(n0, len(toks))]
            locs += new
            tail_rows += [(sl, p, floor) for p in range(n0 - r, n0)]
            tail_locs += toks[n0 - r:n0]
            per_req.append(len(new))
        return [self.forward(i, ForwardMode.EXTEND, rows + tail_rows, locs + tail_locs,
                             len(per), None)]


@mutant("replay_rows_appended", ("encoder_replay",), "addendum §2.3 (0.5.23 fold: replay rows "
        "prepended per request) and §6 A8 / §5 W3 (one request must form one run)")
class ReplayRowsAppended(UnifiedEngine):
    window_path_cls = _ReplayAppendedPath


# 37 -----------------------------------------------------------------------------------------
class _NoResetWindow(RequestWindowModel):
    def reset(self, slot):
        """reset only forgets the prepared history; the slot's tags keep the old positions."""
        self.prepared = None


class _NoResetPath(WindowPath):
    window_cls = _NoResetWindow


@mutant("replay_without_reset", ("encoder_replay",), "addendum §2.3 (reset(slot) clears the "
        "slot's tags before a replay) and §5 E2")
class ReplayWithoutReset(UnifiedEngine):
    window_path_cls = _NoResetPath


# 38 -----------------------------------------------------------------------------------------
class _ReplayNotCommittedPath(WindowPath):
    def layout(self, req, pos, floor, groups):
        """The replay rows (prepended by the fold) are left out of the commit mask."""
        lay = super().layout(req, pos, floor, groups)
        if self.replaying and self.replay_rows.numel() == req.numel():
            lay.commit_mask = lay.commit_mask & ~self.replay_rows
        return lay

    replaying = False

    def fold(self, i, per):
        mask = []
        for _rid, r, new in per:
            mask += [True] * r + [False] * len(new)
        self.replay_rows = torch.tensor(mask, dtype=torch.bool, device=self.device)
        self.replaying = any(mask)
        try:
            return super().fold(i, per)
        finally:
            self.replaying = False


@mutant("replay_rows_not_committed", ("encoder_replay",), "addendum §2.3 (replay rows' SWA "
        "rows go through the window and are committed) and §5 E1")
class ReplayRowsNotCommitted(UnifiedEngine):
    window_path_cls = _ReplayNotCommittedPath


# 39 -----------------------------------------------------------------------------------------
class _PagedFallbackPath(WindowPath):
    def resolve(self, fb):
        """Under a window the W branch is taken only for EXTEND; a DECODE falls through to F,
        the fresh translation ``M[out_cache_loc]`` of a mapping the window pool still holds
        (paged SWA slots written into the workspace)."""
        if self.on and fb.forward_mode == ForwardMode.DECODE:
            return self.e.target_pool.translate_loc_from_full_to_swa(
                fb.out_cache_loc).to(torch.int32)
        return super().resolve(fb)


@mutant("window_paged_fallback", ("request_window",), "addendum §3 (F under a window), §5 W8 "
        "(window => F unreachable) and §6 A4 (fallback under window/ring)")
class WindowPagedFallback(UnifiedEngine):
    window_path_cls = _PagedFallbackPath
