"""Scenario kinds of encoder SWA bounded replay on a request-window pool: ``encoder_replay`` (the
replay folded into extends), ``replay_tail`` (the fold with a late-layer tail) and
``replay_separate`` (the replay as a separate EXTEND forward, ``pool.separate_replay``).
Admissions are of even length so a replay has rows to replay."""

from __future__ import annotations

from swafuzz.features.request_window.kinds import (
    admit_even,
    decode,
    extend_replay,
    finish,
    window_kind,
)
from swafuzz.features.request_window.tail_prefix.kinds import prefix_kind


def encoder_replay_cases():
    """Encoder SWA bounded replay folded into extends on a request-window pool. Shrinks towards
    one even admit and one replaying extend."""
    return window_kind("encoder_replay", True, False,
                       [extend_replay, extend_replay, decode, admit_even, finish],
                       first=admit_even)


def replay_tail_cases():
    """Encoder replay with a late-layer tail on a request-window pool. Shrinks towards one even
    admit and one replaying extend."""
    return window_kind("replay_tail", True, True,
                       [extend_replay, extend_replay, decode, admit_even, finish],
                       first=admit_even)


def replay_separate_cases():
    """Encoder replay as a separate EXTEND forward (``pool.separate_replay = 1``), with or
    without a tail, among prefix hits (the tail_prefix kinds' episode). Shrinks towards one
    admit and one extend."""
    return prefix_kind("replay_separate", True)
