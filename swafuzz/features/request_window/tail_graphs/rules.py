"""Rules of the late-layer tail under graphs (issue 12; ``features/request_window/tail_graphs/SEMANTICS.md``,
"Late-layer tail under graphs"): ``graph.tail_buckets``, ``graph.tail_capacity`` and
``Step.tail_exec`` (their types and ranges are common rules, :mod:`scenarios.validate`). Every
error is a :class:`CaseError` naming the dotted field and the allowed values. Feasibility (a tail
larger than the capacity) is the oracle's answer (``CaseInfeasible``), not a rule.
"""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
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
