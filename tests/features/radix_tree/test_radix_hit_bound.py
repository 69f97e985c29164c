"""The radix cache's hit bound (``features/radix_tree/hit_bound.py``, check ``prefix_hit``; plain
Python, no SGLang): what the tree owes a request that starts computing, from the Case alone: a
published key shared page by page, not where its live SWA is shorter than a window, nothing
after an observed eviction or a retraction or without observed evictions; each way of coming up
short is named. The release's side: ``tests/server/test_server_radix.py`` (its mutant
``server_radix_reprefill_cap_everywhere`` is killed by this check alone)."""

from __future__ import annotations

from swafuzz.features.radix_tree.hit_bound import HitBound
from swafuzz.server.timeline import Forward

SHARED = list(range(100, 112))  # a group prefix of 12 tokens


def _bound(page=1, window=4, evicts=(), prompts=(13, 14), new=(4, 4)):
    toks = {i: SHARED + [1000 * (i + 1) + k for k in range(20)] for i in range(len(prompts))}
    return HitBound(toks, dict(enumerate(prompts)), dict(enumerate(new)), page, window,
                    None if evicts is None else list(evicts))


def _first(b, start, index=1, rid=1):
    """Request 0 computed its prompt (forward 0, published after it), then ``rid`` starts at
    ``start`` (forward ``index``): the check's answer."""
    f0 = Forward(0, 0, "EXTEND", (0,), ((0, 13),))
    assert b.check(f0) is None
    b.after_extend(f0)
    return b.check(Forward(1, index, "EXTEND", (rid,), ((start, 14 - start),)))


def test_a_published_prefix_is_owed_page_by_page():
    assert _first(_bound(page=1), 12) is None  # the whole group prefix
    assert _first(_bound(page=4), 12) is None
    msg = _first(_bound(page=1), 11)
    assert msg and "covers 11 tokens; the tree holds its first 12" in msg
    assert "published by request 0 after forward 0" in msg and "lost share" in msg
    assert "covers 8 tokens; the tree holds its first 12" in _first(_bound(page=4), 8)


def test_more_than_owed_is_not_bounded_above():
    # prefix_reads judges what a longer hit hands over; this bound is a floor only
    assert _first(_bound(page=1), 13) is None


def test_no_debt_where_the_live_swa_is_shorter_than_a_window():
    """Request 0's key ends at floor_P(12) = 12; its SWA may be freed below floor_P(12 - K),
    K = max(W, P) rounded up to pages. Page 4, window 8: K = 8, frontier 4, 12 - 4 = 8 >= W:
    owed. Window 9: K = 12, frontier 0: owed from the first token. Page 8, window 5: key 8,
    frontier floor_8(12 - 8) = 0: owed 8."""
    assert "first 12" in _first(_bound(page=4, window=8), 0)
    assert "first 12" in _first(_bound(page=4, window=9), 0)
    assert "first 8" in _first(_bound(page=8, window=5), 0)
    # page 2, window 3: K = 4, frontier floor_2(12 - 4) = 8, 12 - 8 = 4 >= 3: owed 12
    assert "first 12" in _first(_bound(page=2, window=3), 0)
    # page 4, window 5: K = 8, frontier floor_4(4) = 4, 12 - 4 = 8 >= 5: owed; the shorter
    # match of 8 (8 - 4 = 4 < 5) would not be owed on its own
    assert "first 12" in _first(_bound(page=4, window=5), 8)


def test_the_frontier_keeps_a_window_rounded_up_to_whole_pages():
    """Page 4, window 5, request 0's prompt 15: its key is floor_4(14) = 12 tokens. Keeping
    max(W, P) = 5 unrounded (0.5.22's rule) would free below floor_4(14 - 5) = 8, leaving 4 live
    tokens behind the key's end (< W: nothing owed); rounded to 8, the frontier is
    floor_4(14 - 8) = 4 and the key's 12 tokens are owed (the mutant
    ``server_radix_frontier_unaligned`` is the other rule)."""
    b = _bound(page=4, window=5, prompts=(15, 14))
    f0 = Forward(0, 0, "EXTEND", (0,), ((0, 15),))
    assert b.check(f0) is None
    b.after_extend(f0)
    assert b.pub[0].frontier == 4 and len(b.pub[0].key) == 12
    msg = b.check(Forward(1, 1, "EXTEND", (1,), ((0, 14),)))
    assert msg and "the tree holds its first 12" in msg and "from position 4 at most" in msg


def test_observed_evictions_retractions_and_their_absence_lift_the_bound():
    assert _first(_bound(evicts=[1]), 0, index=2) is None  # evicted before forward 2
    assert _first(_bound(evicts=[2]), 0, index=2) is not None  # during it: after the match
    assert _first(_bound(evicts=None), 0) is None  # not observed
    b = _bound()
    b.retracted()
    assert _first(b, 0) is None


def test_a_request_finishing_at_its_extend_publishes_when_it_leaves():
    b = _bound(new=(1, 4))
    f0 = Forward(0, 0, "EXTEND", (0,), ((0, 13),))
    b.check(f0)
    b.after_extend(f0)
    assert b.check(Forward(1, 1, "EXTEND", (1,), ((0, 14),))) is None  # nothing published yet
    b = _bound(new=(1, 4), window=16)
    b.check(f0)
    b.after_extend(f0)
    b.leave(0, aborted=False)  # 13 + 1 tokens: key 13 tokens, all live (below one window)
    assert "first 12" in b.check(Forward(1, 1, "EXTEND", (1,), ((0, 14),)))
    b = _bound(new=(1, 4), window=4)
    b.check(f0)
    b.after_extend(f0)
    b.leave(0, aborted=False)  # its SWA may be live from floor(14 - 4) = 10 only: not owed
    assert b.check(Forward(1, 1, "EXTEND", (1,), ((0, 14),))) is None
    b = _bound(new=(1, 4), window=16)
    b.check(f0)
    b.after_extend(f0)
    b.leave(0, aborted=True)
    assert b.check(Forward(1, 1, "EXTEND", (1,), ((0, 14),))) is None


def test_only_a_request_s_first_extend_is_bounded():
    b = _bound()
    f0 = Forward(0, 0, "EXTEND", (0,), ((0, 13),))
    b.check(f0)
    b.after_extend(f0)
    assert b.check(Forward(1, 1, "EXTEND", (0,), ((13, 1),))) is None  # a later chunk of 0
    assert b.check(Forward(1, 1, "DECODE", (1,), ((0, 1),))) is None


def test_every_request_of_a_short_batch_is_judged_at_its_first_extend():
    """Two requests start together and both come up short: both are named, and both are then
    started (a later chunk of either is no first EXTEND; the walk once stopped at the first
    short request and judged the second's next chunk as its start)."""
    b = _bound(prompts=(13, 14, 14))
    f0 = Forward(0, 0, "EXTEND", (0,), ((0, 13),))
    b.check(f0)
    b.after_extend(f0)
    msg = b.check(Forward(1, 1, "EXTEND", (1, 2), ((0, 8), (0, 2))))
    assert "request 1's prefix-cache hit covers 0" in msg
    assert "request 2's prefix-cache hit covers 0" in msg
    assert b.check(Forward(2, 2, "EXTEND", (2,), ((2, 12),))) is None
