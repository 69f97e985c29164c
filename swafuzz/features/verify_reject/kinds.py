"""Scenario kind ``verify_reject``: verifies that accept only part of their draft tokens; the
rejected slots are freed after the forward and reused.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.episode import action, has_live
from swafuzz.scenarios.sharing import SharingPlanner
from swafuzz.scenarios.sharing_strategies import sharing_kind


@action(has_live)
def verify_reject(draw, pl: SharingPlanner) -> None:
    """A verify whose requests accept 1..num_draft_tokens draft tokens: the rejected tail is
    freed after the forward (EAGLE verify, sglang 0.5.12 ``EagleVerifyInput.verify``)."""
    rids = A.subset(draw, pl.live(), 1, pl.max_bs)
    ndt = pl.graph.num_draft_tokens
    accept = tuple(draw(st.integers(1, ndt)) for _ in rids)
    pl.verify_accept(rids, accept, A.exec_mode(draw))


def verify_reject_cases():
    """Target-verify forwards that accept only part of their draft tokens (``accept`` on
    ``verify``): the rejected slots past the last accepted token's page are freed after the
    forward (page size 1: all of them) and later decodes, verifies, draft-extends and admits
    reuse them; the reserved slots on that page are reused by the request's next extension.
    Shrinks towards one request, one draft token accepted of one, one graph verify."""
    return sharing_kind("verify_reject", verify_reject,
                        [verify_reject, verify_reject, A.decode, A.draft_extend, A.evict,
                         A.churn], wide_drafts=True)


def verify_reject_rule(machine, data) -> None:
    """A verify accepting 1..num_draft_tokens per request: the rejected tail is freed."""
    rids = machine.draw_rids(data)
    if rids:
        ndt = machine.pl.graph.num_draft_tokens
        accept = tuple(data.draw(st.integers(1, ndt)) for _ in rids)
        if machine.pl.verify_accept(rids, accept, machine.draw_exec(data)):
            machine.emit()


#: the rule rejected draft tokens add to :class:`scenarios.episode_machine.EpisodeMachine`
EPISODE_RULES = {"verify_reject": verify_reject_rule}
