"""Scenario kind ``prefill_graphs``: ``admit`` / ``extend`` through breakable prefill graphs under a
request window (``SEMANTICS.md`` beside this file). A window pool (no tail; one or two layers)
with ``graph.prefill_buckets`` from :data:`LADDERS` and ``window_chunk`` at least the largest
bucket (every bucket's layout fits; eager extends past the chunk may still be refused, A7).
Steps: admits (even half of the time, so replay is possible), multi-request extends with and
without folded replay rows, mostly ``exec: "graph"`` (above every bucket, or padded more than
2x: eager), eager decodes, finishes. Buckets are replayed with many live batches (the in-place
refresh, W7), most of them padded (padding must not commit, W3/W6). Shrinks towards page size
1, window 1, one layer, one slot, the first ladder, one admit and one step, ``exec`` towards
``"graph"``."""

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
