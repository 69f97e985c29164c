"""Scenario kind ``tail_graphs``: the late-layer tail under graphs (addendum §2.4, §5 T1/T4, §6
A3/A9). A tail pool (two or three layers), paged first (shrinks towards it) or windowed, row
buckets the first 1..3 multiples of the window (upstream: of 128 rows), on a paged pool a
prefill-graph tail capacity of ``W..3W+2`` rows, ``topk`` 0 or 1. Steps: admits; extends of
1..3 requests whose tail runs through a row-bucket graph (above every bucket: eager), the
prefill-graph tail (paged, when it fits) or eagerly, a third of the row-bucket ones DP ranks
(``rank_tokens`` 0..3W+1 pick the shared bucket); pairs of prefill-graph extends, the first
with the larger tail; decodes; finishes; under a window, IDLE DP ranks replaying a peer's tail
bucket. Valid Cases only (reference: :mod:`features.request_window.tail_graphs.oracle`).
Shrinks towards a paged pool, page size 1, window 1, one bucket, one admit and one extend."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from swafuzz.features.request_window.kinds import WindowPlanner, admit, decode, finish, window_kind
from swafuzz.scenarios.case import GraphConfig, Step
from swafuzz.scenarios.episode import action

TAIL_EXEC_DRAWS = ("bucket", "bucket", "prefill", "")


def _tail_rows(pl: WindowPlanner, lengths: list[int]) -> int:
    return sum(min(pl.pool.window, n) for n in lengths)


def _extend_tail(draw, pl: WindowPlanner, te: str | None = None, big: bool | None = None,
                 kmax: int = 3) -> int:
    """An extend of 1..3 live requests; ``te`` (drawn when None) its tail_exec, "prefill" only
    on a paged pool with the tail within the capacity. Returns its tail rows (0: not added)."""
    live = pl.live()
    if not live:
        return 0
    k = draw(st.integers(1, min(kmax, len(live))))
    rids = list(draw(st.permutations(live))[:k])
    W = pl.pool.window
    if big is None:
        lo, hi = 1, 2 * W + 2
    else:  # a pair's first extend: whole tails; its second: shorter ones
        lo, hi = (W, 2 * W + 2) if big else (1, max(1, W - 1))
    lengths = [draw(st.integers(lo, hi)) for _ in rids]
    if te is None:
        te = draw(st.sampled_from(TAIL_EXEC_DRAWS))
    t = _tail_rows(pl, lengths)
    if te == "prefill" and (pl.pool.request_window or t > pl.graph.tail_capacity):
        te = "bucket"
    if not pl.extend_w(rids, lengths, []):
        return 0
    ranks = ()
    if te == "bucket" and draw(st.integers(0, 2)) == 2:  # DP: the other ranks' tail rows
        ranks = tuple(draw(st.lists(st.integers(0, 3 * W + 1), min_size=1, max_size=3)))
    pl.steps[-1] = replace(pl.steps[-1], tail_exec=te, rank_tokens=ranks)
    return t


@action()
def extend_tg(draw, pl: WindowPlanner) -> None:
    """An extend whose tail runs through a row-bucket graph, the prefill graph or eagerly."""
    _extend_tail(draw, pl)


@action()
def prefill_pair(draw, pl: WindowPlanner) -> None:
    """Two prefill-graph extends, the first with the larger tail (paged pools)."""
    if pl.pool.request_window:
        return _extend_tail(draw, pl, "bucket")
    kmax = max(1, min(3, pl.graph.tail_capacity // pl.pool.window))  # whole tails that fit
    if _extend_tail(draw, pl, "prefill", big=True, kmax=kmax):
        _extend_tail(draw, pl, "prefill", big=False)


@action()
def idle_rank(draw, pl: WindowPlanner) -> None:
    """Under a window: an IDLE DP rank replaying a peer's tail bucket."""
    if not pl.pool.request_window:
        return _extend_tail(draw, pl)
    peer = draw(st.integers(1, 3 * pl.pool.window + 1))
    pl.steps.append(Step(op="dp_decode", rids=(), rank_tokens=(peer,), exec="eager",
                         tail_exec="bucket"))


def _tail_graph_config(draw, pool):
    """Under a window: room for the extends' layouts (no workspace refusals: that is
    request_window's); row buckets, ``topk``, the prefill-graph tail capacity (paged)."""
    on = bool(pool.request_window)
    W = pool.window
    if on:
        pool = replace(pool, window_chunk=max(pool.window_chunk, 9 * W + 9))
    k = draw(st.integers(1, 3))
    graph = GraphConfig(buckets=(1,), topk=draw(st.integers(0, 1)),
                        tail_buckets=tuple(W * (j + 1) for j in range(k)),
                        tail_capacity=0 if on else draw(st.integers(W, 3 * W + 2)))
    return pool, graph


def tail_graph_cases():
    """See the module docstring."""
    return window_kind("tail_graphs", st.booleans(), True,
                       [extend_tg, extend_tg, prefill_pair, prefill_pair, idle_rank, decode,
                        admit, finish], graph=_tail_graph_config)
