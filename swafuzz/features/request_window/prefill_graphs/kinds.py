"""Scenario kind ``prefill_graphs``: ``admit`` / ``extend`` through breakable prefill graphs
under a request window (issue 12; the "Prefill graphs under a request window" section of
``features/request_window/prefill_graphs/SEMANTICS.md``).

A request-window pool (no tail; one or two layers) with ``graph.prefill_buckets`` drawn from a
few token-bucket ladders (``(4,)``, ``(2, 4, 8)``, ``(4, 8, 16)``, ``(8, 16, 32, 64)``,
``(1, 2, 4, 8, 16, 32, 64)``) and ``window_chunk`` at least the largest bucket (so every
bucket's layout ``min(S + 1, T) * W + T`` fits the workspace and every graph step is feasible;
eager extends larger than the chunk may still be refused, A7). Steps: admits (any length up to
``3 * W + 2``, even ones so encoder replay is possible), multi-request extends with and without
folded encoder replay rows, mostly with ``exec: "graph"`` (a batch above every bucket, or with
more than twice its rows of padding, runs eagerly), eager decodes, finishes that recycle
slots. The same buckets are replayed many times with different live batches (the in-place
refresh, W7) and most batches are padded (padding rows must not commit, W3/W6).

Shrinks towards page size 1, window 1, one layer, one slot, the first bucket ladder, one admit
and one step; each step's ``exec`` shrinks towards ``"graph"`` (the drawn index 0).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from swafuzz.features.request_window.kinds import (
    WindowPlanner,
    admit,
    decode,
    extend,
    finish,
    window_kind,
)
from swafuzz.scenarios.case import GraphConfig
from swafuzz.scenarios.episode import action, has_live

LADDERS = ((4,), (2, 4, 8), (4, 8, 16), (8, 16, 32, 64), (1, 2, 4, 8, 16, 32, 64))


def _graph_last(draw, pl: WindowPlanner, before: int) -> None:
    """Give the step just planned (if any) ``exec: "graph"`` three times in four."""
    if len(pl.steps) > before and pl.steps[-1].op in ("admit", "extend"):
        ex = draw(st.sampled_from(("graph", "graph", "graph", "eager")))
        pl.steps[-1] = replace(pl.steps[-1], exec=ex)


@action()
def admit_g(draw, pl: WindowPlanner) -> None:
    """An admit (even half of the time), mostly through a prefill graph."""
    n = len(pl.steps)
    admit.apply(draw, pl, even=draw(st.booleans()))
    _graph_last(draw, pl, n)


@action(has_live)
def extend_g(draw, pl: WindowPlanner) -> None:
    """An extend with encoder replay of some requests, mostly through a prefill graph."""
    n = len(pl.steps)
    extend.apply(draw, pl, replay=True)
    _graph_last(draw, pl, n)


def _ladder(draw, pool):
    ladder = draw(st.sampled_from(LADDERS))
    pool = replace(pool, window_chunk=max(pool.window_chunk, max(ladder)))
    return pool, GraphConfig(buckets=(1,), prefill_buckets=ladder)


def prefill_graph_cases():
    """See the module docstring."""
    return window_kind("prefill_graphs", True, False,
                       [extend_g, extend_g, extend_g, admit_g, decode, finish], first=admit_g,
                       max_steps=10, graph=_ladder)
