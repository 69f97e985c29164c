"""Tail-graph oracle: the late-layer tail under graphs, from the Case (plain Python; the paragraph
"Late-layer tail under graphs" of ``SEMANTICS.md`` beside this file). :class:`TailGraphShadow`
is :class:`features.request_window.oracle.WindowShadow` plus the steps with ``tail_exec``. Per
tail-graph forward (:class:`TailGraphExp`, in ``WindowExp.tail_graph``): the row ``bucket``
replayed (None: eager, or a prefill-graph tail), ``real_rows`` / ``capacity`` (a prefill-graph
tail's location buffer: real SWA slots, then zeros, T1) and ``probe_locs`` / ``probe_count``
(T4: after the tail the forward's own locations and row count; None for an IDLE rank). The
forwards' ``WinFwdExp`` follow: a prefill-graph tail's late layers take ``tail_capacity`` rows
(padding to the dummy page); an IDLE rank's late layers store and commit nothing."""

from __future__ import annotations

from dataclasses import dataclass

from swafuzz.features.parts import OraclePart
from swafuzz.features.request_window.late_tail.oracle import tail_rows
from swafuzz.features.request_window.oracle import WindowShadow
from swafuzz.features.request_window.oracle_layout import WinFwdExp, layout
from swafuzz.features.request_window.rules import uses_window_path
from swafuzz.oracles.errors import CaseInfeasible
from swafuzz.oracles.translation import translate as expected_translation

__all__ = ["TailGraphExp", "TailGraphShadow", "expected_tail_graph_use"]


def expected_tail_graph_use(case, graphs: bool) -> tuple[int, int]:
    """(replays, captures) of the prefill graph's late-layer block (features/request_window/tail_graphs/SEMANTICS.md): one
    replay per ``extend`` with ``tail_exec == "prefill"``, one capture in all, under a graph
    executor; (0, 0) otherwise. The row-bucket tail graphs capture nothing the executor runs
    (their stores are eager breaks). Assumes a valid Case."""
    if not graphs or case.pool.request_window or not case.graph.tail_capacity:
        return 0, 0
    n = sum(1 for s in case.steps if s.op == "extend" and s.tail_exec == "prefill")
    return n, 1 if n else 0


@dataclass
class TailGraphExp:
    step: int
    fwd: int
    exec: str  # "bucket" | "prefill"
    idle: bool  # an IDLE DP rank replaying a peer's tail bucket
    bucket: int | None
    real_rows: int
    capacity: int  # prefill: the location buffer's rows (0 otherwise)
    late_layers: list[int]
    probe_locs: list[int] | None
    probe_count: int | None


class TailGraphShadow(WindowShadow):
    """The window shadow with the tail under graphs (module docstring)."""

    def __init__(self, case):
        super().__init__(case)
        self.exp.tail_graph = []
        self._te, self._idle_from = "", 0
        g = case.graph
        self.tail_buckets, self.tail_capacity = tuple(g.tail_buckets), g.tail_capacity

    def _tail_bucket(self, n: int) -> int | None:
        if n <= 0:
            return None
        return next((b for b in self.tail_buckets if b >= n), None)

    def run_step(self, sh, i: int, s) -> bool:
        if s.tail_exec and not self.L:
            raise CaseInfeasible(i, "tail_exec needs pool.late_layer_start > 0")
        self._te = s.tail_exec
        self._idle_from = max(s.rank_tokens) if s.rank_tokens else 0  # DP peers' tail rows
        try:
            return super().run_step(sh, i, s)
        finally:
            self._te = ""

    def _late(self) -> list[int]:
        return list(range(self.L, self.cfg.layers))

    # ------------------------------------------------------------------ paged pools
    def paged(self, sh, i: int, locs: list[int], per_req: list[int], comp=None) -> None:
        te = self._te
        idx, _ = tail_rows(per_req, self.W)
        t = len(idx)
        if te != "prefill":
            super().paged(sh, i, locs, per_req, comp=comp)
        else:
            cap = self.tail_capacity
            if t > cap:
                raise CaseInfeasible(i, f"prefill-graph tail of {t} rows above graph.tail_capacity "
                                     f"= {cap}")
            full = expected_translation(sh.M, locs)
            tail = expected_translation(sh.M, [locs[k] for k in idx]) + [0] * (cap - t)
            # padding rows (slot 0) land in the dummy page
            out = self.store_paged(sh, i, full, tail)
            fwd = WinFwdExp(i, 0, "EXTEND", True, out, self._late(), tail_rows(per_req, self.W)[1],
                            None, tail_capacity=cap, comp=comp)
            self.exp.forwards.append(fwd)
        if te:
            self.exp.tail_graph.append(TailGraphExp(
                i, 0, te, False,
                self._tail_bucket(max(t, self._idle_from)) if te == "bucket" else None, t,
                self.tail_capacity if te == "prefill" else 0, self._late(),
                expected_translation(sh.M, locs), len(locs)))

    # ------------------------------------------------------------------ request window
    def forward_lane(self, i: int, mode: str, rows, groups: int, per_req, bucket=None,
                     fwd: int = 0, comp=None) -> None:
        te = self._te
        if not te or self.exp.refused is not None:
            return super().forward_lane(i, mode, rows, groups, per_req, bucket, fwd=fwd, comp=comp)
        if mode != "IDLE":
            super().forward_lane(i, mode, rows, groups, per_req, bucket, fwd=fwd, comp=comp)
            if self.exp.refused is not None or per_req is None:
                return
            idx, _ = tail_rows(per_req, self.W)
            full = layout(rows, groups, self.W, self.cap, self.Z)
            self.exp.tail_graph.append(TailGraphExp(
                i, fwd, te, False, self._tail_bucket(max(len(idx), self._idle_from)), len(idx), 0,
                self._late(),
                list(full.write_loc), len(rows)))
            return
        T = self._tail_bucket(self._idle_from)
        if T is None:  # no bucket fits: the late layers run the eager IDLE forward
            super().forward_lane(i, mode, rows, groups, per_req, bucket, fwd=fwd, comp=comp)
            if self.exp.refused is None:
                self.exp.tail_graph.append(TailGraphExp(i, 0, te, True, None, 0, 0, [], None,
                                                        None))
            return
        lay = layout(rows, groups, self.W, self.cap, self.Z)
        if self.refuse(i, lay, groups, len(rows)):
            return
        locs, wsb = [], []
        for layer in range(self.cfg.layers):
            if layer >= self.L:  # the peer's bucket with no rows of its own: nothing stored,
                locs.append([])  # nothing committed (A9)
            else:
                self.run_layer(layer, lay, rows, self.payload(i, 0, layer, len(rows)), False)
                locs.append(list(lay.write_loc))
            wsb.append(bytes(self.ws))
        self.exp.forwards.append(WinFwdExp(i, 0, mode, False, locs, self._late(), [], wsb,
                                           list(lay.commit), list(lay.runs), None, lay.size))
        self.exp.tail_graph.append(TailGraphExp(i, 0, te, True, T, 0, 0, self._late(), None,
                                                None))


def window_shadow(case) -> TailGraphShadow | None:
    """Hook ``oracle.step_path_shadow``: the request window / late-layer tail shadow of a Case
    (``WindowShadow`` plus tail graphs), None when the Case uses neither."""
    return TailGraphShadow(case) if uses_window_path(case) else None


class TailGraphsOracle(OraclePart):
    """The oracle part: the window / tail path's shadow."""

    step_path_shadow = staticmethod(window_shadow)
