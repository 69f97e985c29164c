"""Hypothesis strategy of decode-side PD Cases (kind ``server_pd_decode``).

Requests arrive staggered as prompts prefilled elsewhere (each with its first output token),
are taken over through the release's prealloc queue and decode; pools from tight (a later
request's pre-allocation reuses the pages of one that left: recycled pages) to roomy. Page sizes
1, 2, 4 and 8 against windows 1..6; prompts below, at and above the window. Shrinks towards few
requests, short prompts, page 1.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate


@st.composite
def pd_cases(draw) -> ServerCase:
    page = draw(st.sampled_from((1, 2, 4, 8)))
    window = draw(st.integers(1, 6))
    layers = draw(st.integers(1, 2))
    reqs = tuple(draw(st.lists(st.builds(
        Request, arrive_step=st.integers(0, 10), prompt_len=st.integers(1, 4 * window + 2 * page),
        max_new_tokens=st.integers(2, window + page + 3)), min_size=1, max_size=5)))

    def pages(n: int) -> int:
        return -(-n // page) * page

    reserve = draw(st.integers(0, 2))
    each = [pages(r.prompt_len + r.max_new_tokens + reserve) + page for r in reqs]
    # the full pool: from the biggest request's worth (later ones reuse its pages) to all
    full = max(each) + page + pages(draw(st.integers(0, sum(each))))
    swa = sum(pages(window + page + reserve) + 2 * page for _ in reqs)
    swa = max(swa, pages(draw(st.integers(swa, max(swa, full)))))
    cfg = ServerConfig(page_size=page, disaggregation_mode="decode",
                       disaggregation_transfer_backend="fake",
                       num_reserved_decode_tokens=reserve)
    case = ServerCase(config=cfg, model=ModelShape(
        layers=layers, sliding_window=window, full_tokens=full + page, swa_tokens=swa + page,
        row_bytes=16, swa_eviction_interval=draw(st.sampled_from((1, 2, 128)))),
        requests=reqs, payload_seed=draw(st.integers(0, 3)), kind="server_pd_decode")
    validate(case)
    return case
