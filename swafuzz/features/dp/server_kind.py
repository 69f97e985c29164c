"""The server-level kind of attention-DP ranks (opt-in: drawn only when named with ``--scenario``).

Staggered requests (arrivals, prompts, new tokens, aborts) on two attention-DP ranks (tp 2, dp 2),
each request's rank drawn; pplx all-to-all (MAX_LEN every step, prefill graph off) and encoder
replay drawn. Page size 1, pools holding every token. Shrinks towards one request on rank 0, no
pplx, no encoder replay.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate

NAME = "server_dp"
#: the deployment environment a pplx draw sets (the release's pplx check needs the dispatch
#: budget to cover the chunked-prefill size)
PPLX_ENV = (("SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK", "8192"),)


@st.composite
def _request(draw, window: int) -> Request:
    arrive = draw(st.integers(0, 6))
    new = draw(st.integers(1, 2 * window + 2))
    abort = arrive + draw(st.integers(0, new + 1)) if draw(st.booleans()) else None
    return Request(arrive_step=arrive, prompt_len=draw(st.integers(1, 3 * window + 4)),
                   max_new_tokens=new, abort_step=abort, rank=draw(st.integers(0, 1)))


@st.composite
def cases(draw) -> ServerCase:
    window = draw(st.integers(1, 4))
    reqs = tuple(draw(st.lists(_request(window), min_size=1, max_size=4)))
    pplx = draw(st.booleans())
    cfg = ServerConfig(tp_size=2, dp_size=2, enable_dp_attention=True,
                       enable_encoder_swa_bounded_replay=draw(st.booleans()),
                       moe_a2a_backend="pplx" if pplx else None,
                       disable_prefill_cuda_graph=pplx, env=PPLX_ENV if pplx else ())
    need = sum(r.prompt_len + r.max_new_tokens + 1 for r in reqs) + 2
    case = ServerCase(config=cfg, model=ModelShape(layers=draw(st.integers(1, 2)),
                                                   sliding_window=window, full_tokens=need,
                                                   swa_tokens=need, row_bytes=16),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)), kind=NAME)
    validate(case)
    return case
