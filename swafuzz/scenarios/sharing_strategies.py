"""The sharing kinds' toolkit (``verify_reject``, ``prefix_share``): :func:`sharing_kind`, an
episode on a :class:`scenarios.sharing.SharingPlanner` whose trigger runs once first.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Case
from swafuzz.scenarios.episode import Action, EpisodeKind
from swafuzz.scenarios.sharing import SharingPlanner


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




