"""Scenario kinds of DP attention: ``dp_padded`` (DP-padded DECODE) and ``dp_spec`` (re-padding and the
rewrite to EXTEND of speculative forwards), with the planner actions that draw DP steps (the
``episode`` and ``ring`` kinds draw them too) and the DP rule of the stateful episode machine.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.episode import Action, action, has_live
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.strategies import paged_kind


def others(draw, pl: Planner, width: int) -> tuple[int, ...]:
    """Other DP ranks' token counts: 1..7 ranks, each at most a full largest bucket of
    ``width``-row requests (so a graph step's padded batch still fits a bucket)."""
    return tuple(draw(st.lists(st.integers(0, pl.max_bs * width), min_size=1, max_size=7)))


# --------------------------------------------------------------------------- actions
@action()
def dp(draw, pl: Planner) -> None:
    """A DP decode padded to the other ranks' maximum (this rank may be empty: IDLE)."""
    rids = A.subset(draw, pl.live(), 0, pl.max_bs)
    ranks = draw(st.lists(st.integers(0, pl.max_bs), min_size=1, max_size=7))
    if not rids and max(ranks) == 0:
        ranks[0] = 1
    if not pl.can_extend(rids, 1):
        return
    pl.forward_extend("dp_decode", rids, 1, A.exec_mode(draw), rank_tokens=tuple(ranks))


def _dp_fields(draw, pl: Planner, width: int) -> dict:
    return {"rank_tokens": others(draw, pl, width), "dp_extend": draw(st.booleans())}


#: DP re-padding of a draft-extend batch, or its rewrite to EXTEND (spec §5.4, §6).
dp_draft_extend = Action("dp_draft_extend",
                         lambda draw, pl: A.plan_draft_extend(draw, pl, _dp_fields), has_live)


@action(has_live)
def dp_verify(draw, pl: Planner) -> None:
    """DP re-padding of a target-verify batch, or its rewrite to EXTEND (spec §5.4)."""
    rids = A.subset(draw, pl.live(), 1, pl.max_bs)
    ndt = pl.graph.num_draft_tokens
    pl.forward_extend("verify", rids, ndt, A.exec_mode(draw),
                      rank_tokens=others(draw, pl, ndt), dp_extend=draw(st.booleans()))


@action(has_live)
def dp_draft_decode(draw, pl: Planner) -> None:
    """DP re-padding of a multi-step draft batch (whole requests of topk*num_steps rows)."""
    rids = A.subset(draw, pl.live(), 1, pl.max_bs)
    w = pl.graph.topk * pl.graph.num_steps
    pl.forward_extend("draft_decode", rids, w, A.exec_mode(draw),
                      rank_tokens=others(draw, pl, w))


@action(has_live)
def dp_rewrite(draw, pl: Planner) -> None:
    """DP decode rewritten to EXTEND because another rank extends (spec §5.4 (3))."""
    rids = A.subset(draw, pl.live(), 1, pl.max_bs)
    pl.forward_extend("dp_decode", rids, 1, A.exec_mode(draw), rank_tokens=others(draw, pl, 1),
                      dp_extend=True)


# --------------------------------------------------------------------------- kinds
def dp_padded_cases():
    """DP attention: this rank's decode padded to the max over ranks (out_cache_loc rebound after
    metadata init); empty ranks run IDLE. Shrinks towards one request and one other rank."""
    return paged_kind("dp_padded", [dp, dp, A.decode])


def dp_spec_cases():
    """DP attention on speculative forwards (spec §5.4, §6): target-verify, draft-extend and
    multi-step draft batches padded to the other ranks' maximum (out_cache_loc rebound after
    metadata init, graph buckets over the padded batch), and batches rewritten to EXTEND
    because another rank extends. Shrinks towards one request, one other rank, no rewrite."""
    return paged_kind("dp_spec", [dp_verify, dp_draft_extend, dp_draft_decode,
                                  dp_rewrite, A.verify], multi_step=True)


# --------------------------------------------------------------------------- episode machine
def dp_decode(machine, data) -> None:
    """A DP decode (this rank may be empty) padded to the other ranks' maximum."""
    pl = machine.pl
    rids = machine.draw_rids(data, lo=0) if data.draw(st.booleans()) else []
    ranks = data.draw(st.lists(st.integers(0, pl.max_bs), min_size=1, max_size=7))
    if not rids and max(ranks) == 0:
        ranks[0] = 1
    if pl.forward_extend("dp_decode", rids, 1, machine.draw_exec(data), rank_tokens=tuple(ranks)):
        machine.emit()


#: the rules DP adds to :class:`scenarios.episode_machine.EpisodeMachine`
EPISODE_RULES = {"dp_decode": dp_decode}
