"""Rules of the V4.1 request window (``pool.request_window``;
``features/request_window/SEMANTICS.md``): a window needs request slots."""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
    if case.pool.request_window and not case.pool.window_slots:
        raise CaseError("pool.window_slots", "must be >= 1 when pool.request_window > 0 (got 0)")
