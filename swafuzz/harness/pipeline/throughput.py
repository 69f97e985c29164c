"""Counting work for throughput figures: checked forward steps per Case."""

from __future__ import annotations

from swafuzz.scenarios.case import FORWARD_OPS


def forward_count(case) -> int:
    """Forwards a Case runs (each checked by every executor): one per forward op (the
    features' included, ``extend`` not counted), and ``num_steps - 1`` per multi-step
    ``draft_decode`` (the last speculative step writes nothing); evict / finish run none."""
    n = 0
    for s in case.steps:
        if s.op == "draft_decode":
            n += max(0, case.graph.num_steps - 1)
        elif s.op in FORWARD_OPS and s.op != "extend":
            n += 1
    return n
