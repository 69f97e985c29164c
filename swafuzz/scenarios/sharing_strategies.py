"""Scenario kinds ``verify_reject`` and ``prefix_share``: episodes on a
:class:`scenarios.sharing.SharingPlanner` (abstract pages with holders), whose trigger action
runs once before the episode so short Cases carry it.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Case
from swafuzz.scenarios.episode import Action, EpisodeKind, action, has_live
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.sharing import SharingPlanner


@action(has_live)
def verify_reject(draw, pl: SharingPlanner) -> None:
    """A verify whose requests accept 1..num_draft_tokens draft tokens: the rejected tail is
    freed after the forward (EAGLE verify, sglang 0.5.12 ``EagleVerifyInput.verify``)."""
    rids = A.subset(draw, pl.live(), 1, pl.max_bs)
    ndt = pl.graph.num_draft_tokens
    accept = tuple(draw(st.integers(1, ndt)) for _ in rids)
    pl.verify_reject(rids, accept, A.exec_mode(draw))


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


def sharing_kind(kind: str, first: Action, actions: list[Action], max_steps: int = 12,
                 wide_drafts: bool = False) -> st.SearchStrategy[Case]:
    """A kind on a :class:`SharingPlanner`: admit 1..max_bs requests, ``first`` once (the
    trigger), then the episode. ``wide_drafts``: 2..max(4, min(P + 3, 20)) draft tokens
    (shrinks to 2), so a rejected tail can free a whole page when P > 1."""
    def planner(draw) -> SharingPlanner:
        pool = draw(A.pool_configs())
        graph = draw(A.graph_configs(spec=True))
        if wide_drafts:
            hi = max(4, min(pool.page_size + 3, 20))
            graph = dataclasses.replace(graph, num_draft_tokens=draw(st.integers(2, hi)))
        return SharingPlanner(pool, graph)

    return EpisodeKind(kind, planner, (A.admit_some, first), tuple(actions), max_steps,
                       refill=A.admit_some).strategy()


def verify_reject_cases():
    """Target-verify forwards that accept only part of their draft tokens (``accept`` on
    ``verify``): the rejected slots past the last accepted token's page are freed after the
    forward (page size 1: all of them) and later decodes, verifies, draft-extends and admits
    reuse them; the reserved slots on that page are reused by the request's next extension.
    Shrinks towards one request, one draft token accepted of one, one graph verify."""
    return sharing_kind("verify_reject", verify_reject,
                        [verify_reject, verify_reject, A.decode, A.draft_extend, A.evict,
                         A.churn], wide_drafts=True)


def prefix_share_cases():
    """Radix-cache prefix hits (``admit`` with ``prefix_rid`` / ``prefix_len``): requests
    sharing page-aligned leading pages with a live request, decoding and verifying on, evicting
    (shared pages skipped) and finishing in any order (a shared page is freed by its last
    holder; survivors' shared pages below their frontier give back their SWA pages then).
    Shrinks towards one request, one prefix admit of one page, one finish."""
    return sharing_kind("prefix_share", first_prefix_admit,
                        [prefix_admit, prefix_admit, A.decode, A.verify, A.evict, finish,
                         A.churn])
