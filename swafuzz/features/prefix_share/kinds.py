"""Scenario kind ``prefix_share``: radix-cache prefix hits sharing page-aligned leading pages of a
live request, refcounted finishes.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.episode import action
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.sharing import SharingPlanner
from swafuzz.scenarios.sharing_strategies import sharing_kind


def _can_lend(pl: SharingPlanner) -> bool:
    return any(pl.prefix_choices(r) for r in pl.live())


@action(_can_lend)
def prefix_admit(draw, pl: SharingPlanner) -> None:
    """A new request whose first n tokens are a live request's (radix-cache prefix hit)."""
    src = draw(st.sampled_from([r for r in pl.live() if pl.prefix_choices(r)]))
    n = draw(st.sampled_from(pl.prefix_choices(src)))
    pl.admit_prefix(src, n, n + draw(st.integers(1, 2 * pl.pool.page_size + 1)))


@action()
def first_prefix_admit(draw, pl: SharingPlanner) -> None:
    """A prefix admit, first admitting a source of at least one page if no live request can
    lend a prefix (so short Cases carry a hit)."""
    if not _can_lend(pl):
        p = pl.pool.page_size
        pl.admit(draw(st.integers(p, 2 * p + 1)))
    if _can_lend(pl):
        prefix_admit(draw, pl)


@action(lambda pl: len(pl.live()) > 1)
def finish(draw, pl: Planner) -> None:
    """Finish one of two or more live requests."""
    pl.finish(draw(st.sampled_from(pl.live())))


def prefix_share_cases():
    """Radix-cache prefix hits (``admit`` with ``prefix_rid`` / ``prefix_len``): requests
    sharing page-aligned leading pages with a live request, decoding and verifying on, evicting
    (shared pages skipped) and finishing in any order (a shared page is freed by its last
    holder; survivors' shared pages below their frontier give back their SWA pages then).
    Shrinks towards one request, one prefix admit of one page, one finish."""
    return sharing_kind("prefix_share", first_prefix_admit,
                        [prefix_admit, prefix_admit, A.decode, A.verify, A.evict, finish,
                         A.churn])
