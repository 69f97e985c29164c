"""The ``ring`` scenario kind: Cases with a per-request SWA ring (``pool.swa_ring``, addendum §2.1;
``features/ring/SEMANTICS.md``).

Pools: page size 1, 4, 16 or 64 (shrinks to 1); window ``1..2P+2``; ring ``R = max(window, P) +
extra`` (shrinks to 0), half the time rounded up to a page multiple; 1..6 request slots (shrinks
to 1). Steps: admissions longer than the window (the ``-1`` rule), decode, target verify,
draft-extend, IDLE, DP-padded decode / verify / draft-extend and the DP rewrite to EXTEND (the
resolver's length check misses), eviction (a no-op), churn. Shrinks towards one request in one
slot, one graph decode.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from swafuzz.features.dp import kinds as dp
from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Case, PoolConfig
from swafuzz.scenarios.episode import EpisodeKind, action
from swafuzz.scenarios.planner import Planner

RING_PAGE_SIZES = (1, 4, 16, 64)


@dataclass
class RingPlanner(Planner):
    """Capacity bookkeeping with a ring: SWA pages are never drawn from; at most ``req_slots``
    live requests."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.free_swa = 1 << 40  # the ring never pages SWA

    def admit(self, length: int) -> int | None:
        if len(self.reqs) >= self.pool.req_slots:
            return None
        return super().admit(length)


@st.composite
def ring_pool_configs(draw) -> PoolConfig:
    """Ring pools (see the module docstring for what each field shrinks towards)."""
    p = draw(st.sampled_from(RING_PAGE_SIZES))
    window = draw(st.integers(1, 2 * p + 2))
    return ring_pool(draw, p, window, window)


def ring_pool(draw, p: int, window: int, need: int) -> PoolConfig:
    """A ring pool of page size ``p`` and ``window`` whose ring holds at least ``max(need, p)``
    rows, plus up to ``p + 3`` more (rounded up to whole pages half of the time); the other
    fields shrink towards small pools, one layer, uint8 rows, one request slot."""
    ring = max(need, p) + draw(st.integers(0, p + 3))
    if draw(st.booleans()):
        ring = -(-ring // p) * p
    return PoolConfig(
        page_size=p,
        full_pages=draw(st.integers(4, 16)),
        swa_pages=draw(st.integers(1, 4)),
        window=window,
        layers=draw(st.integers(1, 2)),
        draft_layers=draw(st.integers(1, 2)),
        row_width=draw(st.sampled_from((1, 3, 8, 5))),
        row_dtype=draw(st.sampled_from(("uint8", "bfloat16"))),
        swa_ring=ring,
        req_slots=draw(st.integers(1, 6)),
    )


@action()
def admit_long(draw, pl: Planner) -> None:
    """Admit a request longer than the window (its oldest rows are skipped: ``-1``)."""
    w = pl.pool.window
    pl.admit(draw(st.integers(w + 1, w + 2 * pl.pool.swa_ring + 1)))


def _ring_planner(draw) -> RingPlanner:
    pool = draw(ring_pool_configs())
    return RingPlanner(pool, draw(A.graph_configs(spec=True)))


def ring_strategy() -> st.SearchStrategy[Case]:
    """The ``ring`` kind (module docstring). Shrinks towards one request in one slot, one graph
    decode."""
    acts = (A.decode, A.decode_shrinking, A.verify, A.draft_extend, A.idle, dp.dp, dp.dp_verify,
            dp.dp_draft_extend, dp.dp_rewrite, A.evict, A.churn, admit_long)
    return EpisodeKind("ring", _ring_planner, (A.admit_some,), acts, 12,
                       refill=A.admit_some).strategy()
