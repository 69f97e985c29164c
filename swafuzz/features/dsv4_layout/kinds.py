"""Scenario kind ``dsv4_layout``: the real DSV4 SWA cache layout (bf16 ``[rows, 512]`` K rows
quantized into 584-byte tokens on padded pages).
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import PoolConfig
from swafuzz.scenarios.episode import EpisodeKind, action
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.strategies import paged_planner


@st.composite
def dsv4_pool_configs(draw) -> PoolConfig:
    """Layout-``"dsv4"`` pools (K rows bf16 [N, 512]); small, since every store quantizes 512
    values per row (and the sglang target interprets a Triton launch per row and tile). Shrink
    towards P = 1, 2 pages each side, window 1, one layer."""
    p = draw(st.sampled_from((1, 2, 4)))
    return PoolConfig(
        page_size=p,
        full_pages=draw(st.integers(2, 8)),
        swa_pages=draw(st.integers(2, 8)),
        window=draw(st.integers(1, 3 * p + 2)),
        layers=draw(st.integers(1, 2)),
        draft_layers=1,
        row_width=512,
        row_dtype="bfloat16",
        layout="dsv4",
    )


@action(name="admit_one_or_two")
def _admit_one_or_two(draw, pl: Planner) -> None:
    p = pl.pool.page_size
    for _ in range(draw(st.integers(1, 2))):
        if pl.admit(draw(st.integers(1, 2 * p + 1))) is None:
            break


def dsv4_layout_cases():
    """The real DSV4 SWA cache layout (``pool.layout = "dsv4"``, spec §4.6): bf16 K rows
    quantized into 584-byte tokens (fp8 nope, bf16 rope, UE8M0 scales) on pages padded to
    ``ceil(584*P/576)*576`` bytes, under decode, verify, draft-extend, eviction and churn. Few
    requests and steps (at most 6). Shrinks towards P = 1, one request, one graph decode."""
    return EpisodeKind("dsv4_layout", paged_planner(spec=True, pools=dsv4_pool_configs()),
                       (_admit_one_or_two,),
                       (A.decode, A.verify, A.draft_extend, A.evict, A.churn), 6,
                       refill=A.admit_some).strategy()
