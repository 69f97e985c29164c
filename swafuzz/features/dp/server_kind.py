"""The server-level kinds of attention-DP ranks (opt-in: drawn only when named with
``--scenario``). Two attention-DP ranks (tp 2, dp 2), page size 1, pools holding every token.

* ``server_dp`` (:func:`cases`): staggered requests (arrivals, prompts, new tokens, aborts), each
  request's rank drawn; pplx all-to-all (MAX_LEN every step, prefill graph off) and encoder
  replay drawn. Shrinks towards one request on rank 0, no pplx, no encoder replay.
* ``server_dp_overlap`` (:func:`overlap_cases`): rank 0 serves requests arriving at step 0 and
  decodes for several steps while rank 1's requests arrive one by one later (steps 1..8), so a
  decoding rank meets an extending peer over several steps, a rank whose requests finished runs
  IDLE while its peer extends (SUM_LEN: unpadded) or decodes (MAX_LEN: padded), and a rank
  waiting for its first request runs IDLE. Drawn: pplx all-to-all (MAX_LEN every step: a
  decoding rank relabelled EXTEND, an idle one a dummy EXTEND), neither, or the breakable prefill
  graph with its captured token counts (the ranks' prefill-graph vote; where every rank votes
  yes and a peer extends, the decoding rank's batch is converted to a one-token-per-request
  EXTEND and every rank pads to the captured bucket). Shrinks towards one request per rank and
  the prefill graph.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate

NAME = "server_dp"
OVERLAP = "server_dp_overlap"
#: the deployment environment a pplx draw sets (the release's pplx check needs the dispatch
#: budget to cover the chunked-prefill size)
PPLX_ENV = (("SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK", "8192"),)
#: the prefill token counts a Case's capture list is drawn from
PREFILL_SIZES = (1, 2, 3, 4, 6, 8, 12, 16)


@st.composite
def _request(draw, window: int) -> Request:
    arrive = draw(st.integers(0, 6))
    new = draw(st.integers(1, 2 * window + 2))
    abort = arrive + draw(st.integers(0, new + 1)) if draw(st.booleans()) else None
    return Request(arrive_step=arrive, prompt_len=draw(st.integers(1, 3 * window + 4)),
                   max_new_tokens=new, abort_step=abort, rank=draw(st.integers(0, 1)))


def _case(draw, window: int, reqs: tuple, kind: str, **cfg) -> ServerCase:
    need = sum(r.prompt_len + r.max_new_tokens + 1 for r in reqs) + 2
    case = ServerCase(config=ServerConfig(tp_size=2, dp_size=2, enable_dp_attention=True, **cfg),
                      model=ModelShape(layers=draw(st.integers(1, 2)), sliding_window=window,
                                       full_tokens=need, swa_tokens=need, row_bytes=16),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)), kind=kind)
    validate(case)
    return case


def _pplx(pplx: bool) -> dict:
    return dict(moe_a2a_backend="pplx" if pplx else None, disable_prefill_cuda_graph=pplx,
                env=PPLX_ENV if pplx else ())


@st.composite
def cases(draw) -> ServerCase:
    window = draw(st.integers(1, 4))
    reqs = tuple(draw(st.lists(_request(window), min_size=1, max_size=4)))
    return _case(draw, window, reqs, NAME, **_pplx(draw(st.booleans())),
                 enable_encoder_swa_bounded_replay=draw(st.booleans()))


@st.composite
def overlap_cases(draw) -> ServerCase:
    window = draw(st.integers(1, 4))
    first = [Request(arrive_step=0, prompt_len=draw(st.integers(1, 2 * window + 2)),
                     max_new_tokens=draw(st.integers(1, 6)), rank=0)
             for _ in range(draw(st.integers(1, 2)))]
    later = [Request(arrive_step=draw(st.integers(1, 8)),
                     prompt_len=draw(st.integers(1, 3 * window + 4)),
                     max_new_tokens=draw(st.integers(1, 3)), rank=1)
             for _ in range(draw(st.integers(1, 3)))]
    reqs = tuple(first + sorted(later, key=lambda r: r.arrive_step))
    # the breakable prefill graph the ranks vote on (half the draws; first: shrinks towards
    # it), none, or pplx
    path = draw(st.sampled_from(("prefill_graph", "eager", "prefill_graph", "pplx")))
    cfg = _pplx(path == "pplx")
    if path == "prefill_graph":
        # a doubling ladder up to a drawn top (a count above it: the vote fails) and extra
        # counts below the top (the common bucket between the ladder's steps)
        top = draw(st.sampled_from((16, 8, 4, 2)))
        sizes = {1 << k for k in range(top.bit_length())} | set(
            draw(st.lists(st.sampled_from([x for x in PREFILL_SIZES if x < top]), max_size=2)))
        cfg.update(cuda_graph_backend_prefill="breakable",
                   cuda_graph_bs_prefill=tuple(sorted(sizes)))
    return _case(draw, window, reqs, OVERLAP, **cfg)
