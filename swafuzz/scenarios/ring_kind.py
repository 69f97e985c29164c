"""The ``ring`` scenario kind: Cases with a per-request SWA ring (``pool.swa_ring``, addendum
§2.1; semantics in ``features/ring/SEMANTICS.md``, "Per-request SWA ring").

Pools: page size 1, 4, 16 or 64 (shrinks to 1); window ``1..2P+2``; ring ``R = max(window, P)
+ extra`` (extra shrinks to 0), rounded up to a page multiple half the time (the DSpark draft
ring ``ceil((window + draft)/P)*P``); 1..6 request slots (shrinks to 1). Steps: admissions
longer than the window (the ``-1`` window rule), decode (graph buckets shrinking inside one
bucket), target verify, draft-extend, IDLE, DP-padded decode / verify / draft-extend and the DP
rewrite to EXTEND (eager padding after metadata init: the resolver's length check misses),
eviction (a no-op on the ring), churn (request slots reused). Shrinks towards one request in
one slot, one graph decode.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from swafuzz.scenarios.case import Case, PoolConfig
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.strategies import (
    _act_churn,
    _act_decode,
    _act_decode_shrinking,
    _act_dp,
    _act_dp_draft_extend,
    _act_dp_rewrite,
    _act_dp_verify,
    _act_draft_extend,
    _act_evict,
    _act_idle,
    _act_verify,
    _admit_some,
    _episode,
    graph_configs,
)

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


def _act_admit_long(draw, pl: Planner) -> None:
    """Admit a request longer than the window (its oldest rows are skipped: ``-1``)."""
    w = pl.pool.window
    pl.admit(draw(st.integers(w + 1, w + 2 * pl.pool.swa_ring + 1)))


def ring_strategy() -> st.SearchStrategy[Case]:
    acts = [_act_decode, _act_decode_shrinking, _act_verify, _act_draft_extend, _act_idle,
            _act_dp, _act_dp_verify, _act_dp_draft_extend, _act_dp_rewrite, _act_evict,
            _act_churn, _act_admit_long]

    @st.composite
    def strategy(draw) -> Case:
        pool = draw(ring_pool_configs())
        graph = draw(graph_configs(spec=True))
        pl = RingPlanner(pool, graph)
        _admit_some(draw, pl)
        _episode(draw, pl, acts, 12)
        seed = draw(st.integers(0, 2**32 - 1))
        return Case(pool=pl.pool, graph=pl.graph, steps=tuple(pl.steps), payload_seed=seed,
                    kind="ring")

    return strategy()
