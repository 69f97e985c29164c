"""Scenario kind ``late_tail``: a late-layer tail (``pool.late_layer_start``) on a paged pool two
times in three, a request-window pool else, under extends, decodes, admits, finishes and
evictions (the actions of :mod:`features.request_window.kinds`)."""

from __future__ import annotations

from swafuzz.features.request_window.kinds import (
    PAGED_OR_WINDOW,
    admit,
    decode,
    evict,
    extend,
    finish,
    window_kind,
)


def late_tail_cases():
    """Late-layer tail on a paged or a request-window pool. Shrinks towards a paged pool, one
    admit and one step."""
    return window_kind("late_tail", PAGED_OR_WINDOW, True,
                       [extend, extend, decode, admit, finish, evict])
