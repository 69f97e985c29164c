"""Hypothesis strategies of server-level Cases, one per request-level kind.

Draws shrink towards fewer requests, shorter prompts, fewer new tokens, no aborts, no
speculative decoding and one rank: each is the first (smallest) choice of its draw.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz import features as registry
from swafuzz.server import spec_strategies
from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate

#: kind -> what it generates
KINDS = {
    "server_decode": "requests that all arrive at step 0: one EXTEND, then DECODE to the end",
    "server_mixed": "staggered arrivals and aborts: EXTEND batches between DECODE batches, "
                    "requests leaving while others run, chunked prefill "
                    "(chunked_prefill_size drawn): a prompt split over EXTEND batches",
    "server_graph": "staggered arrivals with decode graphs captured (disable_cuda_graph "
                    "false, cuda_graph_bs_decode drawn): the release's can_run_graph picks "
                    "graph or eager per DECODE batch, padded rows on replay",
    "server_attn_tp": "staggered arrivals on attention TP 1 or 2 (tp_size 2, moe_dense_tp_size "
                      "1; drawn, shrinks to 1): with 2, every forward padded by the release's "
                      "MLP sync on 2 gloo processes, padded rows to the dummy slot",
    spec_strategies.KIND: spec_strategies.DESCRIPTION,
    "server_window": "staggered arrivals with enable_encoder_swa_bounded_replay: every forward "
                     "stored through the release's per-request SWA window (slot resets, "
                     "layout, resolver, commit), on attention TP 1 or 2 (drawn, shrinks to 1; "
                     "2: the release's MLP-sync padding first); the sliding window a whole "
                     "number of pages",
    "server_window_tail": "one or two requests with enable_encoder_swa_bounded_replay and the "
                          "late-layer tail (enable_decoder_swa_bounded_replay, late layers from "
                          "model.late_layer_start) on one rank, chunked prefill 384 (the "
                          "release's minimum with the window) and prompts past it: the last "
                          "chunk's tail shorter than the sliding window",
}

#: kinds a server-level run draws only when named (``--scenario``): the speculative kind so
#: that the default split keeps its draws (``scripts/upstream-check`` runs it on its own); on
#: 0.5.23 the window kind finds the known request-window padding bug (ledger
#: ``window-dp-extend-pad-joins-run``) in most attention-TP-2 Cases, on 0.5.22 the tail kind the
#: known ``short-tail-floor``: classified as known with ``--ledger`` (``scripts/upstream-check``
#: runs both as a campaign of their own), so the default split keeps its draws
#: kinds features add (hook ``server.kinds``: name, description, strategy), opt-in each
FEATURE_KINDS = {name: strategy for name, _, strategy in registry.hooks("server.kinds")}
KINDS.update({name: desc for name, desc, _ in registry.hooks("server.kinds")})
OPT_IN = (spec_strategies.KIND, "server_window", "server_window_tail", *FEATURE_KINDS)
DEFAULT_KINDS = tuple(k for k in KINDS if k not in OPT_IN)


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
def _tail_case(draw) -> ServerCase:
    """Kind ``server_window_tail`` (see :data:`KINDS`)."""
    window = draw(st.integers(1, 16))
    chunk = 384
    reqs = tuple(Request(arrive_step=draw(st.integers(0, 2)),
                         prompt_len=chunk + draw(st.integers(1, 24)),
                         max_new_tokens=draw(st.integers(1, 3)))
                 for _ in range(draw(st.integers(1, 2))))
    need = sum(r.prompt_len + r.max_new_tokens + 1 for r in reqs) + 1
    cfg = ServerConfig(enable_encoder_swa_bounded_replay=True,
                       enable_decoder_swa_bounded_replay=True, chunked_prefill_size=chunk)
    case = ServerCase(config=cfg, model=ModelShape(layers=2, late_layer_start=1,
                                                   sliding_window=window, full_tokens=need + 1,
                                                   swa_tokens=need + 1, row_bytes=16),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)),
                      kind="server_window_tail")
    validate(case)
    return case


@st.composite
def server_cases(draw, kind: str = "server_decode") -> ServerCase:
    if kind not in KINDS:
        raise KeyError(f"server kind {kind!r} (known: {', '.join(KINDS)})")
    if kind == spec_strategies.KIND:
        return draw(spec_strategies.spec_cases())
    if kind == "server_window_tail":
        return draw(_tail_case())
    if kind in FEATURE_KINDS:
        return draw(FEATURE_KINDS[kind]())
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
    if kind == "server_window":  # drawn last: the other kinds' draws stay as they were
        tp = draw(st.sampled_from((1, 2)))
        cfg = ServerConfig(page_size=page, enable_encoder_swa_bounded_replay=True,
                           tp_size=tp, moe_dense_tp_size=1 if tp == 2 else None)
        window = -(-window // page) * page  # the ring's capacity is whole pages
    case = ServerCase(config=cfg, model=ModelShape(layers=layers, sliding_window=window,
                                                   full_tokens=full + page, swa_tokens=swa,
                                                   row_bytes=16, swa_eviction_interval=interval),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)), kind=kind)
    validate(case)
    return case
