"""Rules of the encoder replay (``pool.separate_replay``;
``features/request_window/encoder_replay/SEMANTICS.md``): the separate replay forward needs a request window."""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
    if case.pool.separate_replay and not case.pool.request_window:
        raise CaseError("pool.separate_replay", "must be 0 (fold) without a request window; 1 "
                        "(separate replay forward) needs pool.request_window > 0")
