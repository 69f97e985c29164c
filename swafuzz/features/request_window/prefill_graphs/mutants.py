"""Mutants of breakable prefill graphs under a request window (feature ``prefill_graphs``; addendum
§4, §5 W3/W6/W7): one :class:`PrefillGraphRunner` method overridden
(:mod:`features.request_window.mutants`); kind ``prefill_graphs``, the only one with ``exec:
"graph"`` on ``admit`` / ``extend``."""

from __future__ import annotations

from swafuzz.features.request_window.engine import WindowPath, path_with
from swafuzz.features.request_window.prefill_graphs.engine import PrefillGraphRunner
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant

KIND = ("prefill_graphs",)


class _PadRowsCommit(PrefillGraphRunner):
    def live_rows(self, n, T):
        return None


@mutant("prefill_graph_pad_rows_commit", KIND, "addendum §4 (prefill-graph layouts use "
        "request_window_live_rows so padding rows never commit; 0.5.23 "
        "init_forward_metadata_prefill) and §5 W3/W6", expected=("window",))
class PrefillGraphPadRowsCommit(UnifiedEngine):
    """The graph layout is built over all ``T`` padded rows (``request_window_live_rows`` not
    passed): padding rows repeat the last request's slot at position 0, extend its run and
    commit into its ring (tag 0), and shift its commit mask."""

    step_path_cls = path_with(WindowPath, prefill_runner_cls=_PadRowsCommit)


class _RefreshSkipped(PrefillGraphRunner):
    def refresh(self, held, fresh):
        """0.5.21/0.5.22 refresh: the request-window layout is not a refreshed field."""


@mutant("prefill_graph_refresh_skipped", KIND, "addendum §4 (0.5.23 "
        "refresh_for_breakable_cuda_graph_replay_ copies the layout in place; 0.5.21/0.5.22 "
        "ignore it) and §5 W7", expected=("window", "history"))
class PrefillGraphRefreshSkipped(UnifiedEngine):
    """The replay keeps the captured layout's contents: the held metadata's
    ``request_window_layout`` is not copied from the fresh one (0.5.21/0.5.22
    ``refresh_for_breakable_cuda_graph_replay_`` ignores the layout), so every replay commits
    the capture batch's slot-0 rows."""

    step_path_cls = path_with(WindowPath, prefill_runner_cls=_RefreshSkipped)


class _LayoutRebound(PrefillGraphRunner):
    def layout_for_replay(self, T, fresh):
        return fresh


@mutant("prefill_graph_layout_rebound", KIND, "addendum §4 (request_window_layout is a copy "
        "field: WindowLayout.copy_ refreshes in place because captured kernels read it by "
        "address) and §5 W7", expected=("window_graph",))
class PrefillGraphLayoutRebound(UnifiedEngine):
    """The replay activates the fresh layout object instead of refreshing the captured one in
    place (``copy_`` vs rebinding): the eager commit uses the live layout, the captured history
    copy the stale one."""

    step_path_cls = path_with(WindowPath, prefill_runner_cls=_LayoutRebound)
