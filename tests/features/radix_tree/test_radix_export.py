"""``swafuzz export``'s radix recipe (``features/radix_tree/export.py``, plain Python, no SGLang):
its frontier bound against a brute-force reading of the rule it states, and which findings it
answers for (a window that is not a whole number of pages, the radix cache on, a tree-side
signature). The stored export regenerates identically: ``tests/harness/test_export.py``; it fails
on 0.5.22 and passes on 0.5.23 / with its fix: ``tests/harness/test_export_upstream.py``."""

from __future__ import annotations

import pytest

from swafuzz.features.radix_tree.export import max_frontier, recipe
from swafuzz.server.case import parse


def _brute(pre_len: int, window: int, page: int) -> int:
    """The largest page-aligned frontier below which a window of live SWA still ends at the
    insert boundary page_floor(pre_len); 0 when there is none."""
    boundary = pre_len // page * page
    ok = [f for f in range(0, boundary + 1, page) if boundary - f >= window]
    return max(ok, default=0)


@pytest.mark.parametrize("page", [1, 2, 4, 8, 64])
@pytest.mark.parametrize("window", [1, 3, 4, 5, 8, 127, 128])
def test_the_bound_is_the_rule_it_states(window, page):
    for pre_len in range(0, 3 * (window + page) + 2):
        assert max_frontier(pre_len, window, page) == _brute(pre_len, window, page), pre_len


def test_upstream_s_measured_shape_is_short_by_one_page():
    """Window 127 over pages of 64 (sglang PR #34870's measurement) at a length where the older
    frontier (pre_len - max(W, P), page-floored) is a page too high."""
    pre_len = 64 * 16 + 127
    older = (pre_len - 127) // 64 * 64
    assert max_frontier(pre_len, 127, 64) == older - 64


def _case(window: int, page: int, radix: bool = True):
    return parse({"config": {"page_size": page, "disable_radix_cache": not radix},
                  "model": {"sliding_window": window, "swa_eviction_interval": 1},
                  "requests": [{"prompt_len": 2, "max_new_tokens": 9}]})


@pytest.mark.parametrize("window,page,radix,sig,answers", [
    (5, 4, True, "server:contracts", True),
    (5, 4, True, "server:tree_leak", True),
    (3, 2, True, "server:contracts", True),
    (8, 4, True, "server:contracts", False),   # whole pages
    (3, 4, True, "server:contracts", False),   # one page holds the window
    (5, 4, False, "server:contracts", False),  # no tree
    (5, 4, True, "server:window_ring", False),
])
def test_the_recipe_answers_for_its_findings_only(window, page, radix, sig, answers):
    r = recipe(_case(window, page, radix), {"signature": sig})
    assert (r is not None) == answers
    if r is not None:
        assert r.culprit.endswith(":free_swa_out_of_window_slots")
        want = {(5, 4): [0, 0, 0, 0, 0, 0, 0, 0, 0], (3, 2): [0, 0, 0, 0, 2, 2, 4, 4, 6]}
        assert f"PRE_LENS = {list(range(2, 11))}" in r.test_source
        assert f"EXPECTED_MAX_FRONTIER = {want[window, page]}" in r.test_source
        compile(r.test_source, r.test_name, "exec")
