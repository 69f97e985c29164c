"""Validation of the prefill-graph fields of a Case (issue 12; the "Prefill graphs under a
request window" section of :mod:`scenarios.case`): ``graph.prefill_buckets`` and ``exec`` on
``admit`` / ``extend``. Called by :func:`scenarios.validate.parse_case` after the Case is built;
raises :class:`scenarios.case.CaseError` naming the dotted field and what is allowed."""

from __future__ import annotations

from swafuzz.scenarios.case import Case, CaseError

#: the ops that may carry ``exec: "graph"`` through a prefill graph
PREFILL_OPS = ("admit", "extend")


def parse_prefill_buckets(d: dict, int_list) -> tuple[int, ...]:
    """``graph.prefill_buckets``: token counts in [1, 2^16], strictly increasing (may be
    empty). ``int_list`` is :func:`scenarios.validate._int_list`."""
    buckets = int_list(d, "prefill_buckets", "graph", 1, 2**16)
    if any(b >= c for b, c in zip(buckets, buckets[1:])):
        raise CaseError("graph.prefill_buckets", f"must be strictly increasing (got "
                        f"{list(buckets)})")
    return buckets


def check_prefill_case(case: Case) -> None:
    """What a Case with ``exec: "graph"`` on ``admit`` / ``extend`` needs: a request window,
    no late-layer tail, no prefix hit on that admit."""
    for i, s in enumerate(case.steps):
        if s.op not in PREFILL_OPS or s.exec == "eager":
            continue
        path = f"steps[{i}].exec"
        if not case.pool.request_window:
            raise CaseError(path, f"\"graph\" on {s.op} needs pool.request_window > 0 (the "
                            "breakable prefill graph under a request window); allowed without "
                            "a window: eager")
        if case.pool.late_layer_start:
            raise CaseError(path, f"\"graph\" on {s.op} is not modelled with a late-layer tail "
                            "(pool.late_layer_start > 0); allowed: eager")
        if case.pool.separate_replay:
            raise CaseError(path, f"\"graph\" on {s.op} is not modelled with the separate "
                            "encoder-replay forward (pool.separate_replay = 1); allowed: eager")
        if s.prefix_rid is not None:
            raise CaseError(path, "\"graph\" on an admit with prefix_rid is not modelled; "
                            "allowed: eager")
