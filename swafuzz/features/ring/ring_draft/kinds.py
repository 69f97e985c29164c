"""The ``ring_draft`` scenario kind: the DSpark draft block on a per-request SWA ring (issue 12;
op ``draft_block``, features/ring/ring_draft/SEMANTICS.md; addendum §2.1, §4).

Pools: :func:`features.ring.kinds.ring_pool_configs` with page size 2, 4, 16 or 64 (shrinking to
2; page size 1 is the ``ring`` kind's, whose 0.5.23 ``alloc`` writes ``M``, ledger
``ring-p1-alloc-writes-mapping``); window ``1..2P+2``; 1..6 request slots (shrinking to 1); draft
ring ``R = max(window + gamma, P) + extra`` (extra shrinks to 0), half the time rounded up to a
page multiple (``get_draft_swa_ring_size``). Graph: ``num_draft_tokens`` 2..5 (``gamma`` =
that - 1, shrinks to 2), no MTP topk. Steps: draft blocks (three of ten actions; eager, or a
TARGET_VERIFY graph when ``gamma < P``, shrinking to eager), decode, target verify, IDLE,
admissions longer than the ring, eviction (a no-op) and churn. Shrinks towards one request in
one slot with one draft block.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.features.ring.kinds import RingPlanner, ring_pool
from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.scenarios.episode import EpisodeKind, action, has_live

__all__ = ["ring_draft_strategy"]

RING_DRAFT_PAGE_SIZES = (2, 4, 16, 64)


@st.composite
def ring_draft_configs(draw) -> tuple[PoolConfig, GraphConfig]:
    """A ring pool sized for draft blocks and its graph config (see the module docstring)."""
    p = draw(st.sampled_from(RING_DRAFT_PAGE_SIZES))
    window = draw(st.integers(1, 2 * p + 2))
    ndt = draw(st.integers(2, 5))
    pool = ring_pool(draw, p, window, window + ndt - 1)
    graph = GraphConfig(buckets=draw(st.sampled_from(A.BUCKET_SETS)), num_draft_tokens=ndt)
    return pool, graph


@action(has_live)
def draft_block(draw, pl: RingPlanner) -> None:
    """A DSpark draft block over 1..max_bs live requests (no allocation); eager or graph (graph
    only when ``gamma < page_size``: padded requests' rows stay in page 0)."""
    rids = A.subset(draw, pl.live(), 1, pl.max_bs)
    gamma = pl.graph.num_draft_tokens - 1
    ex = A.exec_mode(draw) if gamma < pl.pool.page_size else "eager"
    pl.steps.append(Step(op="draft_block", rids=tuple(rids), exec=ex))


@action()
def admit_past_ring(draw, pl: RingPlanner) -> None:
    """Admit a request longer than the ring: its draft blocks wrap past the ring's end."""
    r = pl.pool.swa_ring
    pl.admit(draw(st.integers(r - 1, 2 * r + 1)))


def _ring_draft_planner(draw) -> RingPlanner:
    pool, graph = draw(ring_draft_configs())
    return RingPlanner(pool, graph)


def ring_draft_strategy() -> st.SearchStrategy[Case]:
    """The ``ring_draft`` kind (module docstring): one draft block first. Shrinks towards one
    request in one slot with one draft block."""
    acts = (draft_block, draft_block, draft_block, A.decode, A.decode_shrinking, A.verify,
            A.idle, A.evict, A.churn, admit_past_ring)
    return EpisodeKind("ring_draft", _ring_draft_planner, (A.admit_some, draft_block), acts, 12,
                       refill=A.admit_some).strategy()
