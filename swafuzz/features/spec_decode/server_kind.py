"""Hypothesis strategies of speculative server-level Cases (kinds ``server_spec`` and, with
decode graphs, ``server_spec_graph``).

EAGLE top-k 1 (DeepSeek-V4's MTP draft), ``speculative_num_steps`` 1..3 and
``speculative_num_draft_tokens`` one more, staggered arrivals and aborts, per request an accept
length per verify (1..num_draft_tokens); pools hold every token plus the per-decode reserve, so
the capacity gate never refuses. Shrinks towards one request, one step, short prompts, accept 1.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate

#: the captured decode batch sizes of ``server_spec_graph``: every one pads some batch of 1..3
#: requests to a larger bucket (stale padded rows show when a smaller batch follows a larger
#: one in the same bucket), and (2,) leaves a batch of 3 to the eager verify
GRAPH_BUCKETS = ((2,), (4,), (2, 4), (1, 3), (3,))


@st.composite
def _request(draw, window: int, n: int) -> Request:
    arrive = draw(st.integers(0, 6))
    prompt = draw(st.integers(1, 3 * window + 4))
    new = draw(st.integers(1, 2 * window + 2))
    abort = arrive + draw(st.integers(0, new + 1)) if draw(st.booleans()) else None
    acc = tuple(draw(st.lists(st.integers(1, n), max_size=new)))
    return Request(arrive_step=arrive, prompt_len=prompt, max_new_tokens=new, abort_step=abort,
                   accept_lengths=acc)


@st.composite
def spec_cases(draw, graphs: bool = False) -> ServerCase:
    page = draw(st.sampled_from((1, 2, 4)))
    window = draw(st.integers(1, 8))
    layers = draw(st.integers(1, 2))
    steps = draw(st.integers(1, 3))
    n = steps + 1
    reqs = tuple(draw(st.lists(_request(window, n), min_size=1, max_size=3)))
    # every token a request may hold: its prompt, its outputs (a verify may accept past
    # max_new_tokens) and the release's reserve of 2 * n, page-aligned, a page on top
    each = [-(-(r.prompt_len + r.max_new_tokens + 4 * n) // page) * page + page for r in reqs]
    full = sum(each) + 2 * page
    buckets = draw(st.sampled_from(GRAPH_BUCKETS)) if graphs else None
    cfg = ServerConfig(page_size=page, speculative_algorithm="EAGLE",
                       speculative_num_steps=steps, speculative_eagle_topk=1,
                       speculative_num_draft_tokens=n, disable_cuda_graph=not graphs,
                       cuda_graph_bs_decode=buckets)
    interval = draw(st.sampled_from((1, 2, 4, 128)))
    case = ServerCase(config=cfg, model=ModelShape(layers=layers, sliding_window=window,
                                                   full_tokens=full, swa_tokens=full,
                                                   row_bytes=16, swa_eviction_interval=interval),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)),
                      kind="server_spec_graph" if graphs else "server_spec")
    validate(case)
    return case


def spec_graph_cases() -> st.SearchStrategy[ServerCase]:
    """``server_spec`` Cases with decode graphs (kind ``server_spec_graph``): each verify goes
    to the release's TARGET_VERIFY graph runner where its batch fits a bucket."""
    return spec_cases(graphs=True)
