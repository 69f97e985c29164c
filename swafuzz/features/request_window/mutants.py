"""Mutants of the V4.1 request window (feature ``request_window``: the window workspace, its
layout, commit and resolver order; addendum §2.2, §3, §5 W1-W8, §6; kind ``request_window``).

Here and in every mutants module of the family, a mutant is a
:class:`targets.engine.UnifiedEngine` whose window path (``step_path_cls``: a
:class:`features.request_window.engine.WindowPath` subclass, or one made by
:func:`~features.request_window.engine.path_with` with one runner, verify or window class
swapped) overrides one method; the engine's docstring says the bug."""

from __future__ import annotations

import torch

from swafuzz.features.request_window.engine import WindowPath, path_with
from swafuzz.features.request_window.window import RequestWindowModel
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import ForwardMode
from swafuzz.targets.mutants import mutant


class _WindowBeforeIdlePath(WindowPath):
    def resolve(self, fb):
        if self.on:
            lay = self.forward_metadata.core_attn_metadata.request_window_layout
            self.window.activate(lay)
            return lay.write_loc
        return super().resolve(fb)


@mutant("window_before_idle", ("request_window",), "addendum §3 (resolver order of "
        "0.5.21-0.5.22: W before IDLE; 0.5.23 tests IDLE first) and §6 A2",
        expected=("window", "history", "contracts"))
class WindowBeforeIdle(UnifiedEngine):
    """The resolver's W branch before its IDLE test (the 0.5.21-0.5.22 order): an IDLE forward
    activates whatever layout the metadata holds, a stale one when MTP skipped the init."""

    step_path_cls = _WindowBeforeIdlePath


class _GrowingWindow(RequestWindowModel):
    def check_size(self, layout):
        if layout.size > self.ws_rows:
            old = self.rows_of(self.workspace)
            rows = -(-layout.size // self.P) * self.P
            new = torch.zeros(rows, old.shape[1], dtype=old.dtype, device=old.device)
            new[:old.shape[0]] = old
            self.ws_rows = rows
            self.workspace = new.view(rows // self.P, self.P, self.row_width)


@mutant("workspace_overflow_unchecked", ("request_window",), "addendum §2.2 (the workspace is "
        "sized once; activate raises when a later layout is larger) and §6 A7",
        expected=("window", "pool_bytes"))
class WorkspaceOverflowUnchecked(UnifiedEngine):
    """A layout larger than the workspace grows it instead of being refused: captured graphs
    would keep the old address."""

    step_path_cls = path_with(WindowPath, window_cls=_GrowingWindow)


class _CommitFirstPath(WindowPath):
    def layout(self, req, pos, floor, groups):
        lay = super().layout(req, pos, floor, groups)
        n = req.numel()
        idx = torch.arange(n, device=req.device)
        start = torch.ones(n, dtype=torch.bool, device=req.device)
        start[1:] = req[1:] != req[:-1]
        first = torch.cummax(torch.where(start, idx, 0), 0).values
        lay.commit_mask = (idx - first) < self.cap
        return lay


@mutant("commit_first_rows", ("request_window",), "addendum §2.2 (commit_mask = the last "
        "capacity rows of a run) and §5 W4", expected=("window",))
class CommitFirstRows(UnifiedEngine):
    """The commit mask takes the first min(cap, run) rows of a run instead of the last (W4)."""

    step_path_cls = _CommitFirstPath


class _IdleCommitsPath(WindowPath):
    def commit(self, layer, fb):
        if self.on:
            self.window.commit(layer)


@mutant("idle_commits", ("request_window",), "addendum §2.2 (commit skipped when IDLE), §5 W6 "
        "(eager IDLE commits nothing) and §6 A9", expected=("window",))
class IdleCommits(UnifiedEngine):
    """An IDLE forward commits its rows: the forward's IDLE guard around ``commit`` is lost (A9,
    an IDLE batch relabelled EXTEND), so the idle layout is committed into slot 0."""

    step_path_cls = _IdleCommitsPath


class _PagedFallbackPath(WindowPath):
    def resolve(self, fb):
        if self.on and fb.forward_mode == ForwardMode.DECODE:
            return self.e.target_pool.translate_loc_from_full_to_swa(
                fb.out_cache_loc).to(torch.int32)
        return super().resolve(fb)


@mutant("window_paged_fallback", ("request_window",), "addendum §3 (F under a window), §5 W8 "
        "(window => F unreachable) and §6 A4 (fallback under window/ring)",
        expected=("contracts", "window", "history"))
class WindowPagedFallback(UnifiedEngine):
    """A DECODE under a window falls through to F, the fresh translation ``M[out_cache_loc]``:
    paged SWA slot numbers are written into the workspace (W8: under a window F is unreachable)."""

    step_path_cls = _PagedFallbackPath
