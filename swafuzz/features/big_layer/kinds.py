"""Scenario kind ``bigaddr``: layer buffers past 2^31 bytes with the Case's pages placed high.

One target and one draft layer just past 2^31 bytes: rows layout ``2051 pages * 256 rows * 4096
bytes`` (page 2048 starts at 2^31; uint8 or bf16), or DSV4 layout 57,361 pages of 64 tokens
(37,440-byte pages, page 57,358 holds byte 2^31; on ``sglang`` the release's Triton store). The
SWA pages below byte 2^31's are held (``pool.swa_held_pages``: all but the last 1..3), so the
first pages sit just below it and the next past it. Then decode, target verify, draft extend,
eviction and churn, eager and in graphs. Shrinks towards the rows layout, uint8, the first free
page at byte 2^31, one request of one token.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import PoolConfig
from swafuzz.scenarios.episode import EpisodeKind
from swafuzz.scenarios.planner import Planner

#: the rows layout's page size and row bytes (1 MiB pages); the DSV4 layout's page size
P, ROW_BYTES, DSV4_P = 256, 4096, 64


def geometry(layout: str, p: int, row_width: int, dtype: str) -> tuple[int, int]:
    """(the page holding byte 2^31 of a layer, swa_pages) for a pool of this geometry: the
    layer ends two pages past that page."""
    probe = PoolConfig(page_size=p, full_pages=1, swa_pages=1, window=1, row_width=row_width,
                       row_dtype=dtype, layout=layout)
    k0 = (1 << 31) // probe.page_stride_bytes
    return k0, k0 + 2


def big_planner(draw) -> Planner:
    layout = draw(st.sampled_from(("rows", "dsv4")))
    if layout == "dsv4":  # 512-wide bf16 K rows, 584-byte tokens, pages of 37440 bytes
        p, width, dtype = DSV4_P, 512, "bfloat16"
    else:
        p, dtype = P, draw(st.sampled_from(("uint8", "bfloat16")))
        width = ROW_BYTES if dtype == "uint8" else ROW_BYTES // 2
    k0, swa_pages = geometry(layout, p, width, dtype)
    pool = PoolConfig(
        page_size=p, full_pages=draw(st.integers(6, 10)), swa_pages=swa_pages,
        window=draw(st.integers(1, 3 * p + 2)), layers=1, draft_layers=1, row_width=width,
        row_dtype=dtype, layout=layout, swa_held_pages=k0 - draw(st.integers(1, 3)))
    return Planner(pool, draw(A.graph_configs(spec=True)))


def bigaddr_cases():
    """Layers past 2^31 bytes, the Case's SWA pages from ``held + 1`` up (module docstring)."""
    return EpisodeKind("bigaddr", big_planner, (A.admit_some,),
                       (A.decode, A.verify, A.draft_extend, A.evict, A.churn), 8,
                       refill=A.admit_some).strategy()
