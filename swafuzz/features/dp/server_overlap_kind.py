"""The server-level kind of attention-DP ranks whose work overlaps (opt-in: drawn only when named
with ``--scenario``).

Two attention-DP ranks (tp 2, dp 2, page size 1): rank 0 serves requests arriving at step 0 and
decodes for several steps while rank 1's requests arrive one by one later (steps 1..8), so a
decoding rank meets an extending peer over several steps, a rank whose requests finished runs
IDLE while its peer extends (SUM_LEN: unpadded) or decodes (MAX_LEN: padded), and a rank waiting
for its first request runs IDLE; pplx all-to-all drawn (MAX_LEN every step: a decoding rank
relabelled EXTEND, an idle one a dummy EXTEND). Shrinks towards one request per rank, no pplx.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.features.dp.server_kind import PPLX_ENV
from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate

NAME = "server_dp_overlap"


@st.composite
def cases(draw) -> ServerCase:
    window = draw(st.integers(1, 4))
    first = [Request(arrive_step=0, prompt_len=draw(st.integers(1, 2 * window + 2)),
                     max_new_tokens=draw(st.integers(1, 6)), rank=0)
             for _ in range(draw(st.integers(1, 2)))]
    later = [Request(arrive_step=draw(st.integers(1, 8)),
                     prompt_len=draw(st.integers(1, 3 * window + 4)),
                     max_new_tokens=draw(st.integers(1, 3)), rank=1)
             for _ in range(draw(st.integers(1, 3)))]
    reqs = tuple(first + sorted(later, key=lambda r: r.arrive_step))
    pplx = draw(st.booleans())
    cfg = ServerConfig(tp_size=2, dp_size=2, enable_dp_attention=True,
                       moe_a2a_backend="pplx" if pplx else None,
                       disable_prefill_cuda_graph=pplx, env=PPLX_ENV if pplx else ())
    need = sum(r.prompt_len + r.max_new_tokens + 1 for r in reqs) + 2
    case = ServerCase(config=cfg, model=ModelShape(layers=draw(st.integers(1, 2)),
                                                   sliding_window=window, full_tokens=need,
                                                   swa_tokens=need, row_bytes=16),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)), kind=NAME)
    validate(case)
    return case
