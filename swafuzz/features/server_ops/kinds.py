"""Scenario kinds of the server's own state changes: ``idle_flush`` (a cache flush while idle,
then new admissions; a flush while requests run, refused) and ``swa_short`` (admissions that fit
the full pool but not the SWA pool, refused), with the planner actions that draw them.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Step
from swafuzz.scenarios.episode import EpisodeKind, action, has_live
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.strategies import paged_kind


@action()
def flush_idle(draw, pl: Planner) -> None:
    """Finish every live request, flush the cache (the server's flush_cache needs it idle),
    then admit new requests: they must allocate from the cleared pools."""
    for rid in pl.live():
        pl.finish(rid)
    pl.steps.append(Step(op="flush"))
    A.admit_some(draw, pl)


@action(has_live)
def flush_running(draw, pl: Planner) -> None:
    """A flush while requests run: refused, nothing changes."""
    pl.steps.append(Step(op="flush"))


def idle_flush_cases():
    """A cache flush while idle followed by new admissions, and flushes while requests run
    (refused), among decodes, evictions and churn. Shrinks towards one admission, one flush,
    one admission."""
    return paged_kind("idle_flush", [flush_idle, A.decode, flush_running, A.evict, A.churn])


@action()
def refused_admit(draw, pl: Planner) -> None:
    """An admission that fits the free full pages but not the free SWA pages (the allocator's
    alloc / alloc_extend refuses it, spec §2.3); nothing changes."""
    p = pl.pool.page_size
    lo, hi = pl.free_swa + 1, pl.free_full
    if lo > hi:
        return
    need = draw(st.integers(lo, hi))
    length = draw(st.integers((need - 1) * p + 1, need * p))
    pl.steps.append(Step(op="refused_admit", rid=pl.next_rid, length=length))
    pl.next_rid += 1


@st.composite
def short_pools(draw):
    """Pools whose SWA side has fewer pages than the full side (shrinks to one page fewer)."""
    pool = draw(A.pool_configs())
    gap = draw(st.integers(1, 8))
    return dataclasses.replace(pool, full_pages=pool.swa_pages + gap)


def swa_short_cases():
    """Admissions that fit the full pool but not the SWA pool, refused with the state unchanged,
    among admissions, decodes, evictions (which give SWA pages back first) and churn, on pools
    whose SWA side is the smaller. Shrinks towards one admission and one refused admission."""
    def planner(draw) -> Planner:
        return Planner(draw(short_pools()), draw(A.graph_configs()))
    return EpisodeKind("swa_short", planner, (A.admit_some,),
                       (refused_admit, A.decode, A.evict, refused_admit, A.churn, A.admit_some),
                       10, refill=A.admit_some).strategy()
