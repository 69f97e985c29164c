"""Scenario kind ``late_tail``: a late-layer tail (``pool.late_layer_start``) on a paged pool two
times in three, a request-window pool else, under extends, decodes, admits, finishes and
evictions (the actions of :mod:`features.request_window.kinds`)."""

from __future__ import annotations

from swafuzz.features.request_window import kinds as rw


def late_tail_cases():
    """Late-layer tail on a paged or a request-window pool. Shrinks towards a paged pool, one
    admit and one step."""
    return rw.window_kind("late_tail", rw.PAGED_OR_WINDOW, True,
                          [rw.extend, rw.extend, rw.decode, rw.admit, rw.finish, rw.evict])
