"""Scenario kind ``padded_pages``: pools whose page stride has a pad (the pads are canaries).
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Case
from swafuzz.scenarios.strategies import paged_kind


def _page_pad(draw, case: Case) -> Case:
    pad = draw(st.sampled_from((2, 8, 6, 64, 30)))
    return dataclasses.replace(case, pool=dataclasses.replace(case.pool, page_pad_bytes=pad))


def padded_pages_cases():
    """Pools whose page stride is padded past ``P * row_bytes`` (``page_pad_bytes``, as the real
    DSV4 pool pads its pages, spec §4.6), the pads checked as canaries, under decode, verify,
    draft-extend, eviction and churn. Shrinks towards P = 1, one graph decode, a 2-byte pad."""
    return paged_kind("padded_pages", [A.decode, A.verify, A.draft_extend, A.evict, A.churn],
                      spec=True, finish=_page_pad)
