"""Rules of the late-layer tail (``pool.late_layer_start``; ``features/request_window/late_tail/SEMANTICS.md``):
the first late layer is one of the target layers after the first."""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
    pool = case.pool
    if pool.late_layer_start and pool.late_layer_start >= pool.layers:
        raise CaseError("pool.late_layer_start", f"must be 0 (no tail) or in [1, layers - 1 = "
                        f"{pool.layers - 1}] (got {pool.late_layer_start})")


def step_path_ops(case) -> tuple[str, ...] | None:
    """Hook ``oracle.step_path_ops``: with a late-layer tail (paged pool) the tail path runs the
    EXTEND forwards; None without a tail."""
    return ("admit", "extend") if case.pool.late_layer_start else None
