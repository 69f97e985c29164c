"""Parsing and structural rules of the late-layer-tail-under-graphs fields of a Case (issue 12):
``graph.tail_buckets``, ``graph.tail_capacity`` and ``Step.tail_exec``. The semantics are in
:mod:`scenarios.case` ("Late-layer tail under graphs"). Every error is a :class:`CaseError`
naming the dotted field and the allowed values. Feasibility (a tail larger than the capacity)
is the oracle's answer (``CaseInfeasible``), not a parse error.
"""

from __future__ import annotations

from typing import Any

from swafuzz.scenarios.case import TAIL_EXECS, CaseError

MAX_TAIL_ROWS = 2**16


def parse_tail_graph(d: dict) -> dict[str, Any]:
    """``graph.tail_buckets`` (strictly increasing ints 1..65536, default empty) and
    ``graph.tail_capacity`` (int 0..65536, default 0) as GraphConfig keyword arguments."""
    kw: dict[str, Any] = {}
    if "tail_buckets" in d:
        v = d["tail_buckets"]
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                          or not 1 <= x <= MAX_TAIL_ROWS for x in v):
            raise CaseError("graph.tail_buckets", f"must be a list of ints in 1..{MAX_TAIL_ROWS} "
                            f"(got {v!r})")
        if any(a >= b for a, b in zip(v, v[1:])):
            raise CaseError("graph.tail_buckets", f"must be strictly increasing (got {v})")
        kw["tail_buckets"] = tuple(v)
    if "tail_capacity" in d:
        v = d["tail_capacity"]
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_TAIL_ROWS:
            raise CaseError("graph.tail_capacity", f"must be an int in 0..{MAX_TAIL_ROWS} "
                            f"(got {v!r})")
        kw["tail_capacity"] = v
    return kw


def parse_tail_exec(obj: dict, path: str) -> str:
    v = obj["tail_exec"]
    if v not in TAIL_EXECS:
        raise CaseError(f"{path}.tail_exec", f"must be one of {', '.join(TAIL_EXECS)} "
                        f"(got {v!r})")
    return v


def parse_tail_ranks(obj: dict, path: str) -> tuple[int, ...]:
    """``rank_tokens`` of an ``extend`` (a DP rank replaying a tail graph): 1..7 other ranks'
    tail rows, each 0..65536."""
    v = obj["rank_tokens"]
    if not isinstance(v, list) or not 1 <= len(v) <= 7 or any(
            isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= MAX_TAIL_ROWS
            for x in v):
        raise CaseError(f"{path}.rank_tokens", f"must list 1..7 other DP ranks' tail rows "
                        f"(ints 0..{MAX_TAIL_ROWS}; got {v!r})")
    return tuple(v)


def check_tail_graph_case(case) -> None:
    """Structural rules: a ``tail_exec`` needs ``pool.late_layer_start > 0``; ``"bucket"`` needs
    ``graph.tail_buckets``; ``"prefill"`` is for ``extend`` on a paged pool (no request window)
    and needs ``graph.tail_capacity > 0``; on ``dp_decode`` only ``"bucket"``, with no rids (an
    IDLE rank), on a request-window pool; ``rank_tokens`` on ``extend`` only with ``"bucket"``."""
    pool, g = case.pool, case.graph
    for i, s in enumerate(case.steps):
        if (s.op == "extend" and s.rank_tokens and s.tail_exec != "bucket"
                and not pool.request_window):
            raise CaseError(f"steps[{i}].rank_tokens", "on extend only with tail_exec "
                            "\"bucket\" (DP ranks replaying the largest rank's tail bucket) or "
                            "under a request window (a DP-padded EXTEND)")
        if not s.tail_exec:
            continue
        path = f"steps[{i}].tail_exec"
        if not pool.late_layer_start:
            raise CaseError(path, "needs pool.late_layer_start > 0 (a late-layer tail)")
        if s.tail_exec == "bucket" and not g.tail_buckets:
            raise CaseError(path, "\"bucket\" needs graph.tail_buckets (the tail graphs' row "
                            "buckets)")
        if s.tail_exec == "prefill":
            if s.op != "extend":
                raise CaseError(path, f"\"prefill\" is for extend steps only (got {s.op}); "
                                "allowed here: bucket")
            if pool.request_window:
                raise CaseError(path, "\"prefill\" needs a paged pool (pool.request_window = 0; "
                                "a window's prefill-graph tail is not modelled); allowed: bucket")
            if not g.tail_capacity:
                raise CaseError(path, "\"prefill\" needs graph.tail_capacity > 0 (the "
                                "prefill-graph tail's location buffer)")
        if s.op == "dp_decode":
            if s.rids:
                raise CaseError(path, "on dp_decode only for an IDLE rank (rids empty)")
            if not pool.request_window:
                raise CaseError(path, "on dp_decode needs a request window "
                                "(pool.request_window > 0)")
