"""The core server-level kinds' draw (``server_decode``, ``server_mixed``, ``server_graph``,
``server_attn_tp``), which a feature kind may extend with a configuration drawn last
(:func:`base_cases`). Draws shrink towards fewer requests, shorter prompts, fewer new tokens, no
aborts and one rank: each is the first (smallest) choice of its draw.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate


@st.composite
def _request(draw, staggered: bool, window: int) -> Request:
    arrive = draw(st.integers(0, 6)) if staggered else 0
    prompt = draw(st.integers(1, 3 * window + 4))
    new = draw(st.integers(1, 2 * window + 2))
    abort = None
    if staggered and draw(st.booleans()):
        abort = arrive + draw(st.integers(0, new + 1))
    return Request(arrive_step=arrive, prompt_len=prompt, max_new_tokens=new, abort_step=abort)


@st.composite
def base_cases(draw, kind: str, last=None) -> ServerCase:
    """The core kinds' draw, labelled ``kind`` (staggered unless ``server_decode``); ``last(draw,
    page, window) -> (config, window)``, where given, is a feature kind's server configuration,
    drawn after everything else so that the core kinds' draws stay as they were."""
    page = draw(st.sampled_from((1, 2, 4)))
    window = draw(st.integers(1, 8))
    layers = draw(st.integers(1, 2))
    staggered = kind != "server_decode"
    reqs = tuple(draw(st.lists(_request(staggered, window), min_size=1, max_size=4)))
    need = sum(r.prompt_len + r.max_new_tokens + page for r in reqs)
    full = -(-need // page) * page + page
    # the SWA pool: from each request's window on its own pages (the release's eviction
    # keeps up, or its capacity gate refuses a decode: out of scope, retraction is not driven)
    # up to every token of every request (no eviction needed); the draw shrinks towards tight
    tight = len(reqs) * (-(-(window + 1) // page) + 2) * page + 2 * page
    loose = sum(-(-(r.prompt_len + r.max_new_tokens) // page) * page + page for r in reqs) \
        + 2 * page
    swa = -(-max(tight, max(r.prompt_len for r in reqs) + 2 * page) // page) * page + page * draw(
        st.integers(0, max(0, (loose - tight) // page)))
    chunk = None
    if kind == "server_mixed" and draw(st.booleans()):  # the adder's budget: chunked prefill
        chunk = draw(st.integers(1, max(r.prompt_len for r in reqs) + 4))
    cfg = ServerConfig(page_size=page, chunked_prefill_size=chunk)
    if kind == "server_graph":
        bs = tuple(sorted(draw(st.sets(st.integers(1, 4), min_size=1, max_size=3))))
        cfg = ServerConfig(page_size=page, disable_cuda_graph=False, cuda_graph_bs_decode=bs,
                           chunked_prefill_size=chunk)
    if kind == "server_attn_tp" and draw(st.sampled_from((1, 2))) == 2:
        cfg = ServerConfig(page_size=page, tp_size=2, moe_dense_tp_size=1)
    interval = draw(st.sampled_from((1, 2, 4, 128)))
    if last is not None:
        cfg, window = last(draw, page, window)
    case = ServerCase(config=cfg, model=ModelShape(layers=layers, sliding_window=window,
                                                   full_tokens=full + page, swa_tokens=swa,
                                                   row_bytes=16, swa_eviction_interval=interval),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)), kind=kind)
    validate(case)
    return case


def decode_cases():
    return base_cases("server_decode")


def mixed_cases():
    return base_cases("server_mixed")


def graph_cases():
    return base_cases("server_graph")


def attn_tp_cases():
    return base_cases("server_attn_tp")
