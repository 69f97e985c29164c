"""The paged-pool kind toolkit: :func:`paged_planner` (pool and graph draw) and :func:`paged_kind`
(admit 1..max_bs requests, then an episode of :mod:`scenarios.actions`); the kinds live in
``swafuzz/features/<name>/kinds.py``.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Case
from swafuzz.scenarios.episode import Action, EpisodeKind
from swafuzz.scenarios.planner import Planner


def paged_planner(spec: bool = False, multi_step: bool = False, pools=None):
    """A planner draw: ``pools`` (default :func:`scenarios.actions.pool_configs`) and
    :func:`scenarios.actions.graph_configs`."""
    def planner(draw) -> Planner:
        pool = draw(pools if pools is not None else A.pool_configs())
        return Planner(pool, draw(A.graph_configs(spec=spec, multi_step=multi_step)))

    return planner


def paged_kind(kind: str, actions: list[Action], spec: bool = False, multi_step: bool = False,
               max_steps: int = 10, finish=None) -> st.SearchStrategy[Case]:
    """A paged-pool kind: admit 1..max_bs requests, then an episode of ``actions`` (nothing
    live: admit again)."""
    return EpisodeKind(kind, paged_planner(spec, multi_step), (A.admit_some,), tuple(actions),
                       max_steps, refill=A.admit_some, finish=finish).strategy()


def with_graph(**kw):
    return lambda draw, case: dataclasses.replace(case, graph=dataclasses.replace(case.graph,
                                                                                  **kw))
































