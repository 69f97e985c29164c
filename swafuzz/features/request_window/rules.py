"""Rules of the V4.1 request window (``pool.request_window``;
``features/request_window/SEMANTICS.md``): a window needs request slots."""

from __future__ import annotations

from swafuzz.scenarios.schema import STEP_OPS, CaseError


def validate(case) -> None:
    if case.pool.request_window and not case.pool.window_slots:
        raise CaseError("pool.window_slots", "must be >= 1 when pool.request_window > 0 (got 0)")


def uses_window_path(case) -> bool:
    """Whether the Case runs on the request-window or late-layer tail path."""
    return case.pool.request_window > 0 or case.pool.late_layer_start > 0


def step_path_ops(case) -> tuple[str, ...] | None:
    """Hook ``oracle.step_path_ops``: under a request window the window path runs every target
    forward (verify's: features.dspark.oracle; the target ops features own included); None
    without a window."""
    if not case.pool.request_window:
        return None
    return ("admit", "extend", "decode", "idle", "verify",
            *(o for o, d in STEP_OPS.items() if d.pool == "target"))


def admit_in_graph(cfg) -> bool:
    """Slot ``OraclePart.graph_admit``: an admit may run in a graph (breakable prefill graphs) under
    a request window on a pool without a late-layer tail."""
    return bool(cfg.request_window) and not cfg.late_layer_start
