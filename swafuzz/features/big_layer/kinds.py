"""Scenario kind ``bigaddr``: layer buffers past 2^31 bytes with the Case's pages placed high.

Every Case has one target and one draft layer of ``2051 pages * 256 rows * 4096 bytes`` (2051
MiB each: page 2048 starts at byte 2^31 of the layer), with SWA pages ``1..held`` held from the
start (``pool.swa_held_pages``, held 2045..2047), so the Case's first SWA page is ``held + 1``
and its rows land on both sides of byte 2^31 without running half a million tokens first. Then
an episode of decode, target verify, draft extend (the draft layer), eviction and churn, as the
``padded_pages`` kind draws them, eager and in graphs. Shrinks towards ``held = 2047`` (every
page at or past 2^31), uint8 rows, one request of one token.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import PoolConfig
from swafuzz.scenarios.episode import EpisodeKind
from swafuzz.scenarios.planner import Planner

#: page size, SWA pages (plus the dummy page: 2051) and row bytes of every Case of the kind
P, SWA_PAGES, ROW_BYTES = 256, 2050, 4096
#: the held low pages (the first free page is held + 1; page 2048 starts at byte 2^31)
HELD = (2047, 2046, 2045)


def big_planner(draw) -> Planner:
    dtype = draw(st.sampled_from(("uint8", "bfloat16")))
    pool = PoolConfig(
        page_size=P, full_pages=draw(st.integers(6, 10)), swa_pages=SWA_PAGES,
        window=draw(st.integers(1, 3 * P + 2)), layers=1, draft_layers=1,
        row_width=ROW_BYTES if dtype == "uint8" else ROW_BYTES // 2, row_dtype=dtype,
        swa_held_pages=draw(st.sampled_from(HELD)))
    return Planner(pool, draw(A.graph_configs(spec=True)))


def bigaddr_cases():
    """Layers past 2^31 bytes, the Case's SWA pages from ``held + 1`` up (module docstring)."""
    return EpisodeKind("bigaddr", big_planner, (A.admit_some,),
                       (A.decode, A.verify, A.draft_extend, A.evict, A.churn), 8,
                       refill=A.admit_some).strategy()
