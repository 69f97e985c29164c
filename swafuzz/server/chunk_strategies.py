"""The ``server_chunked`` kind's draw: long prompts split over several chunked prefills with
pages larger than one token (``chunked_prefill_size`` drawn below, at or above the page), aborts
landing while a prompt is still being chunked, and pools tight enough that the release's
capacity gate refuses decodes (``retract_decode``), besides decode graphs some of the time.

Shrinks towards one request, a prompt of two chunks, page 2, no abort, loose pools and no
graphs: each is the first (smallest) choice of its draw.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate


def _pages(n: int, page: int) -> int:
    return -(-n // page) * page


@st.composite
def _request(draw, chunk: int, window: int, arrive_hi: int) -> Request:
    arrive = draw(st.integers(0, arrive_hi))
    chunks = draw(st.integers(2, 5))  # the prefills its prompt takes when it prefills alone
    prompt = draw(st.integers((chunks - 1) * chunk + 1, chunks * chunk))
    new = draw(st.integers(1, 2 * window + 3))
    abort = None
    if draw(st.integers(0, 3)) == 3:  # mostly while its prompt is chunked: the first steps
        abort = arrive + draw(st.integers(0, chunks + 1))
    return Request(arrive_step=arrive, prompt_len=prompt, max_new_tokens=new, abort_step=abort)


@st.composite
def chunked_cases(draw) -> ServerCase:
    page = draw(st.sampled_from((2, 4, 8)))
    window = draw(st.integers(1, 2 * page + 1))
    chunk = draw(st.sampled_from((page, 2 * page, page + 1, 3 * page - 1, page - 1)))
    reqs = tuple(draw(st.lists(_request(chunk, window, 3), min_size=1, max_size=4)))
    layers = draw(st.integers(1, 2))
    longest = max(r.prompt_len + r.max_new_tokens for r in reqs)
    held = sum(_pages(r.prompt_len + r.max_new_tokens, page) + page for r in reqs)
    # full pool: every request at once (loose) down to the longest one and a request's pages
    # more (tight: decodes the capacity gate refuses, a retraction); the SWA pool likewise,
    # from every request's window on its own pages plus the longest prompt
    tight = _pages(longest, page) + 3 * page
    full = tight + page * draw(st.integers(0, max(0, (held - tight) // page)))
    swa_tight = _pages(max(max(r.prompt_len for r in reqs) + 2 * page,
                           len(reqs) * (_pages(window + 1, page) + 2 * page)), page)
    swa = swa_tight + page * draw(st.integers(0, max(0, (held - swa_tight) // page)))
    interval = draw(st.sampled_from((1, 4, 128)))
    cfg = ServerConfig(page_size=page, chunked_prefill_size=chunk)
    if draw(st.booleans()):
        bs = tuple(sorted(draw(st.sets(st.integers(1, 4), min_size=1, max_size=3))))
        cfg = ServerConfig(page_size=page, chunked_prefill_size=chunk, disable_cuda_graph=False,
                           cuda_graph_bs_decode=bs)
    case = ServerCase(config=cfg, model=ModelShape(layers=layers, sliding_window=window,
                                                   full_tokens=full + page, swa_tokens=swa,
                                                   row_bytes=16, swa_eviction_interval=interval),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)),
                      kind="server_chunked")
    validate(case)
    return case
