"""Scenario kind ``remap``: mapping re-registration between decode forwards, with the planner
action that draws a ``remap`` step (the ``episode`` and ``spec_remap`` kinds draw it too) and
the rule of the stateful episode machine.
"""

from __future__ import annotations

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Step
from swafuzz.scenarios.episode import action
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.strategies import paged_kind


@action()
def remap(draw, pl: Planner) -> None:
    """HiCache load-back / commit: the mapping rewritten and re-registered between forwards
    (spec §2.8, PR #25889); graphs captured before it must keep reading the live mapping."""
    pl.steps.append(Step(op="remap"))


def remap_cases():
    """Mapping re-registration between forwards (HiCache load-back / commit, spec §2.8, PR
    #25889) among decode forwards on the same captured graphs, with eviction and churn: graphs
    captured before a remap must keep translating through the live mapping. Shrinks towards
    one graph decode, one remap, one graph decode."""
    return paged_kind("remap", [A.decode, remap, A.decode, A.evict, A.churn])


def remap_rule(machine) -> None:
    """A remap between the machine's forwards."""
    if machine.pl is not None:
        machine.pl.steps.append(Step(op="remap"))
        machine.emit()


#: the rule ``remap`` adds to :class:`scenarios.episode_machine.EpisodeMachine`
EPISODE_RULES = {"remap": remap_rule}
