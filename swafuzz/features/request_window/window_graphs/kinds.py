"""Scenario kind ``window_graphs``: DECODE graphs under a request window (no tail; one or two
layers: one SWA layer reaches addendum §6 A5) with captured buckets (a strictly increasing
subset of 1, 2, 4; ``window_chunk`` raised so the largest bucket's layout ``B * W + B`` fits,
so graph steps are always feasible). Steps: admits (slots tracked), decodes of 1..4 requests
mostly through the graph (padded to the bucket; above every bucket: eager), IDLEs of 1..3 rows
eager or through the graph, graph decode / eager IDLE n / graph decode of the same size / eager
IDLE n (A5), idle DP ranks and DP ranks with 1..3 requests padded by the others' token counts
(MAX_LEN padding rows of slot 0), eager or through the graph, finishes; ``topk`` 0 or 1.
Shrinks towards page size 1, window 1, one layer, one slot, buckets (1,), one admit and one
step."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from swafuzz.features.request_window.kinds import WindowPlanner, admit, finish, window_kind
from swafuzz.scenarios.case import GraphConfig, Step
from swafuzz.scenarios.episode import action, has_live


@action(has_live)
def decode_g(draw, pl: WindowPlanner) -> None:
    """A decode of 1..4 live requests, mostly through the DECODE graph."""
    live = pl.live()
    k = draw(st.integers(1, min(4, len(live))))
    ex = draw(st.sampled_from(("graph", "graph", "eager")))
    pl.forward_extend("decode", list(draw(st.permutations(live))[:k]), 1, ex)


@action()
def idle_g(draw, pl: WindowPlanner) -> None:
    """An IDLE of 1..3 rows or an idle DP rank, eager or through the DECODE graph."""
    ex = draw(st.sampled_from(("eager", "graph")))
    if draw(st.integers(0, 3)):
        pl.steps.append(Step(op="idle", tokens=draw(st.integers(1, 3)), exec=ex))
    else:
        pl.steps.append(Step(op="dp_decode", rids=(), rank_tokens=(draw(st.integers(1, 3)),),
                             exec=ex))


@action(has_live)
def dp_decode_g(draw, pl: WindowPlanner) -> None:
    """A DP rank with 1..3 live requests; the other ranks' token counts (0..5) pad it (MAX_LEN
    padding rows of slot 0); eager or through the DECODE graph."""
    live = pl.live()
    k = draw(st.integers(1, min(3, len(live))))
    others = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    pl.forward_extend("dp_decode", list(draw(st.permutations(live))[:k]), 1,
                      draw(st.sampled_from(("eager", "graph"))), rank_tokens=others)


@action(has_live)
def idle_around_graph(draw, pl: WindowPlanner) -> None:
    """A graph decode, an eager IDLE of n rows, a graph decode of the same batch size (a
    replay of the bucket just captured or used), an eager IDLE of n rows again."""
    live = pl.live()
    k = draw(st.integers(1, min(4, len(live))))
    n = draw(st.integers(1, 3))
    for _ in range(2):
        pl.forward_extend("decode", list(draw(st.permutations(live))[:k]), 1, "graph")
        pl.steps.append(Step(op="idle", tokens=n, exec="eager"))


BUCKET_SUBSETS = ((1,), (1, 2), (2, 4), (1, 2, 4), (4,))


def _buckets(draw, pool):
    """Captured buckets, the workspace chunk raised so the largest bucket's layout fits."""
    buckets = draw(st.sampled_from(BUCKET_SUBSETS))
    S, W = pool.window_slots, pool.window
    need = max(buckets) * (W + 1) - (S + 1) * W
    pool = replace(pool, window_chunk=max(pool.window_chunk, need))
    return pool, GraphConfig(buckets=buckets, topk=draw(st.integers(0, 1)))


def window_graph_cases():
    """See the module docstring."""
    return window_kind("window_graphs", True, False,
                       [decode_g, decode_g, idle_g, idle_g, admit, finish, idle_around_graph,
                        dp_decode_g], max_steps=10, graph=_buckets)
