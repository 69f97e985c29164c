"""Prefill-graph oracle: ``admit`` / ``extend`` through a breakable prefill graph under a request
window, from the Case (plain Python; the section of ``SEMANTICS.md`` beside this file), on
:class:`features.request_window.oracle.WindowShadow`, whose graph lane runs such a step through
:func:`prefill_lane` (its eager lane as any window EXTEND). :func:`prefill_bucket`: a step's
token bucket (padding factor 2; a bucket whose layout overflows the workspace is infeasible);
:func:`expected_prefill_graph_use`: the captures and replays (one segment per target layer)."""

from __future__ import annotations

from swafuzz.features.request_window.oracle_layout import WinFwdExp, padded_layout
from swafuzz.oracles.errors import CaseInfeasible
from swafuzz.scenarios.case import Case, Step

__all__ = ["PADDING_FACTOR", "expected_prefill_graph_use", "prefill_bucket", "prefill_lane"]

#: a bucket more than this many times the batch's rows is not used (the batch runs eagerly)
PADDING_FACTOR = 2


def _bucket(buckets, n: int) -> int | None:
    for b in buckets:
        if b >= n:
            return b if b <= PADDING_FACTOR * n else None
    return None


def prefill_bucket(sh, i: int, s: Step, n: int) -> int | None:
    """The prefill-graph bucket of window step ``s`` with ``n`` forward rows (None: eager).
    ``sh``: the :class:`features.request_window.oracle.WindowShadow`."""
    if s.exec != "graph" or not sh.on or sh.L:
        return None
    T = _bucket(sh.case.graph.prefill_buckets, n)
    if T is None:
        return None
    G = min(sh.cfg.window_slots + 1, T)
    if G * sh.W + T > sh.WS:
        raise CaseInfeasible(i, f"prefill graph bucket {T} under a request window: its layout "
                                f"of {G * sh.W + T} rows (min(S + 1, T) = {G} groups) exceeds "
                                f"the workspace's {sh.WS} rows")
    return T


def prefill_lane(sh, i: int, rows: list[tuple[int, int, int]], T: int) -> None:
    """The graph lane of a prefill-graph forward of ``rows`` (``(slot, position, floor)``) in
    bucket ``T``: the capture's warm-up on first use (slot-0 tags of positions ``max(0, T -
    cap) .. T - 1``), then per layer the history rows, the ``T`` written rows and the commit of
    the live committed rows (padding rows never commit)."""
    if sh.exp.refused is not None:
        return
    G = min(sh.cfg.window_slots + 1, T)
    if T not in sh.captured["prefill"]:  # the capture batch's warm-up: slot 0, positions 0..T-1
        sh.captured["prefill"].add(T)
        for tags in sh.tags:
            for p in range(max(0, T - sh.cap), T):
                tags[p % sh.cap] = p
    lay = padded_layout(rows, T - len(rows), G, sh.W, sh.cap, sh.Z)
    locs, wsb = sh.run_layers(i, lay, list(rows) + [(0, 0, 0)] * (T - len(rows)), T)
    sh.exp.forwards.append(WinFwdExp(i, 0, "EXTEND", False, locs, [], [], wsb, list(lay.commit),
                                     list(lay.runs), T, lay.size))


def expected_prefill_graph_use(case: Case, graphs: bool) -> tuple[int, int]:
    """(replays, captures) of the prefill graphs: per target layer one captured segment, so one
    capture per layer and bucket and one replay per layer and graph step; (0, 0) without a graph
    executor, a window, or with a tail. Assumes a valid Case that ran to its end."""
    cfg = case.pool
    if not (graphs and cfg.request_window and not cfg.late_layer_start):
        return 0, 0
    length: dict[int, int] = {}
    replays, buckets = 0, set()
    for s in case.steps:
        n = 0
        if s.op == "admit":
            length[s.rid] = n = s.length
        elif s.op == "extend":
            for rid, k in zip(s.rids, s.lengths):
                n += k + (min(length[rid], cfg.window) if rid in s.replay else 0)
                length[rid] += k
        elif s.op in ("decode", "dp_decode"):
            for rid in s.rids:
                length[rid] += 1
            continue
        elif s.op == "finish":
            length.pop(s.rid, None)
            continue
        else:
            continue
        T = _bucket(case.graph.prefill_buckets, n) if s.exec == "graph" else None
        if T is not None:
            replays += 1
            buckets.add(T)
    return replays * cfg.layers, len(buckets) * cfg.layers
