"""Hypothesis strategies that build only valid Cases, one per scenario kind.

Every strategy returns a :class:`scenarios.case.Case`. Draw order is chosen so that shrinking
moves towards the smallest interesting Case: page size 1 (then 16, 64, 256), the fewest pages,
one layer, one request, one step, graph execution before eager (graph bugs are the point), the
smallest bucket list. Each kind's docstring says what it exercises and what it shrinks towards.

Kinds (``SCENARIO_KINDS``): ``decode``, ``idle``, ``dp_padded``, ``draft_extend``,
``target_verify``, ``multi_step_draft``, ``episode`` (a mix of all of them on the same captured
graphs, with allocator churn and window eviction), ``remap`` (mapping re-registration between
decode forwards), ``dp_spec`` (DP re-padding and the rewrite to EXTEND on speculative forwards),
``raw_metadata`` (every forward with Raw metadata, ``prep_in_graph``), ``draft_extend_buffer``
(the draft-extend graph's pre-allocated SWA location buffer, PR #34890), ``padded_pages`` (pools
with a padded page stride, the pads as canaries), ``dsv4_layout`` (the real DSV4 SWA cache
layout: quantizing store, 584-byte tokens, padded pages), ``verify_reject`` (rejected draft
tokens freed after a verify, their slots reused), ``prefix_share`` (radix-cache prefix hits:
requests sharing leading pages, refcounted finishes), and (issue 12,
:mod:`scenarios.window_strategies`) ``request_window``, ``late_tail``, ``encoder_replay``.
with a padded page stride, the pads as canaries), ``ring`` (a per-request SWA ring,
``pool.swa_ring``: :mod:`scenarios.ring_kind`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from hypothesis import strategies as st

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.sharing import SharingPlanner

PAGE_SIZES = (1, 16, 64, 256)
BUCKET_SETS = ((1, 2, 4, 8), (4,), (2, 4), (1, 8), (1, 2, 3, 4), (1, 2, 4, 6, 8))
EXECS = ("graph", "eager")


@st.composite
def pool_configs(draw, min_pages: int = 2) -> PoolConfig:
    """Pool configs; shrink towards P=1, ``min_pages`` pages each side, window 1, one layer,
    one-byte rows."""
    p = draw(st.sampled_from(PAGE_SIZES))
    return PoolConfig(
        page_size=p,
        full_pages=draw(st.integers(min_pages, 12)),
        swa_pages=draw(st.integers(min_pages, 12)),
        window=draw(st.integers(1, 3 * p + 2)),
        layers=draw(st.integers(1, 2)),
        draft_layers=draw(st.integers(1, 2)),
        row_width=draw(st.sampled_from((1, 3, 8, 5))),
        row_dtype=draw(st.sampled_from(("uint8", "bfloat16"))),
    )


@st.composite
def graph_configs(draw, spec: bool = False, multi_step: bool = False) -> GraphConfig:
    """Buckets (shrinks to ``(1, 2, 4, 8)``) and speculative settings (shrink to the smallest:
    topk 1, 2 steps, 1 draft token)."""
    buckets = draw(st.sampled_from(BUCKET_SETS))
    topk = draw(st.integers(1, 2)) if multi_step else (draw(st.integers(0, 2)) if spec else 0)
    steps = draw(st.integers(2, 3)) if multi_step else 1
    ndt = draw(st.integers(1, 4)) if (spec or multi_step) else 1
    return GraphConfig(buckets=buckets, topk=topk, num_steps=steps, num_draft_tokens=ndt)


def _admit_some(draw, pl: Planner, min_reqs: int = 1) -> None:
    """Admit 1..max_bs requests (shrinks to one request of length 1)."""
    p = pl.pool.page_size
    n = draw(st.integers(min_reqs, max(min_reqs, min(pl.max_bs, 6))))
    for _ in range(n):
        length = draw(st.integers(1, 2 * p + 1))
        if pl.admit(length) is None:
            break


def _subset(draw, items: list[int], lo: int, hi: int) -> list[int]:
    hi = min(hi, len(items))
    if hi < lo:
        return []
    k = draw(st.integers(lo, hi))
    chosen = draw(st.permutations(items))[:k] if k else []
    return list(chosen)


def _exec(draw) -> str:
    return draw(st.sampled_from(EXECS))


# --------------------------------------------------------------------------- actions
def _act_decode(draw, pl: Planner) -> None:
    rids = _subset(draw, pl.live(), 1, pl.max_bs)
    if rids:
        pl.forward_extend("decode", rids, 1, _exec(draw))


def _act_decode_shrinking(draw, pl: Planner) -> None:
    """Two graph decodes in one bucket, the second with fewer requests: the padded rows of the
    second must not inherit the first's locations (PR #24743)."""
    live = pl.live()[: pl.max_bs]
    if len(live) < 2:
        return _act_decode(draw, pl)
    if pl.forward_extend("decode", live, 1, "graph"):
        k = draw(st.integers(1, len(live) - 1))
        pl.forward_extend("decode", live[:k], 1, "graph")


def _act_verify(draw, pl: Planner) -> None:
    rids = _subset(draw, pl.live(), 1, pl.max_bs)
    if rids:
        pl.forward_extend("verify", rids, pl.graph.num_draft_tokens, _exec(draw))


def _act_draft_extend(draw, pl: Planner, dp: bool = False) -> None:
    """A draft-extend of live requests; ``dp``: with other ranks' token counts (re-padding) or
    the rewrite to EXTEND (spec §5.4, §6)."""
    rids = _subset(draw, pl.live(), 1, pl.max_bs)
    if not rids:
        return
    ndt = pl.graph.num_draft_tokens
    accept = tuple(draw(st.integers(1, min(ndt, pl.reqs[r][0]))) for r in rids)
    # every accepted token must still be SWA-mapped (inside the eviction frontier)
    if any(pl.reqs[r][0] - a < pl.reqs[r][1] for r, a in zip(rids, accept)):
        return
    ex = _exec(draw)
    extra = ({"rank_tokens": _others(draw, pl, ndt), "dp_extend": draw(st.booleans())}
             if dp else {})
    pl.steps.append(Step(op="draft_extend", rids=tuple(rids), accept=accept, exec=ex, **extra))


def _act_draft_decode(draw, pl: Planner) -> None:
    rids = _subset(draw, pl.live(), 1, pl.max_bs)
    if rids:
        pl.forward_extend("draft_decode", rids, pl.graph.topk * pl.graph.num_steps, _exec(draw))


def _act_idle(draw, pl: Planner) -> None:
    pl.steps.append(Step(op="idle", tokens=draw(st.integers(1, pl.max_bs)), exec=_exec(draw)))


def _act_dp(draw, pl: Planner) -> None:
    rids = _subset(draw, pl.live(), 0, pl.max_bs)
    others = draw(st.lists(st.integers(0, pl.max_bs), min_size=1, max_size=7))
    if not rids and max(others) == 0:
        others[0] = 1
    if not pl.can_extend(rids, 1):
        return
    pl.forward_extend("dp_decode", rids, 1, _exec(draw), rank_tokens=tuple(others))


def _others(draw, pl: Planner, width: int) -> tuple[int, ...]:
    """Other DP ranks' token counts: 1..7 ranks, each at most a full largest bucket of
    ``width``-row requests (so a graph step's padded batch still fits a bucket)."""
    return tuple(draw(st.lists(st.integers(0, pl.max_bs * width), min_size=1, max_size=7)))


def _act_dp_verify(draw, pl: Planner) -> None:
    """DP re-padding of a target-verify batch, or its rewrite to EXTEND (spec §5.4)."""
    rids = _subset(draw, pl.live(), 1, pl.max_bs)
    if rids:
        ndt = pl.graph.num_draft_tokens
        pl.forward_extend("verify", rids, ndt, _exec(draw), rank_tokens=_others(draw, pl, ndt),
                          dp_extend=draw(st.booleans()))


def _act_dp_draft_extend(draw, pl: Planner) -> None:
    """DP re-padding of a draft-extend batch, or its rewrite to EXTEND (spec §5.4, §6)."""
    _act_draft_extend(draw, pl, dp=True)


def _act_dp_draft_decode(draw, pl: Planner) -> None:
    """DP re-padding of a multi-step draft batch (whole requests of topk*num_steps rows)."""
    rids = _subset(draw, pl.live(), 1, pl.max_bs)
    if rids:
        w = pl.graph.topk * pl.graph.num_steps
        pl.forward_extend("draft_decode", rids, w, _exec(draw), rank_tokens=_others(draw, pl, w))


def _act_dp_rewrite(draw, pl: Planner) -> None:
    """DP decode rewritten to EXTEND because another rank extends (spec §5.4 (3))."""
    rids = _subset(draw, pl.live(), 1, pl.max_bs)
    if rids:
        pl.forward_extend("dp_decode", rids, 1, _exec(draw), rank_tokens=_others(draw, pl, 1),
                          dp_extend=True)


def _act_evict(draw, pl: Planner) -> None:
    if pl.live():
        pl.evict(draw(st.sampled_from(pl.live())))


def _act_remap(draw, pl: Planner) -> None:
    """HiCache load-back / commit: the mapping rewritten and re-registered between forwards
    (spec §2.8, PR #25889); graphs captured before it must keep reading the live mapping."""
    pl.steps.append(Step(op="remap"))


def _act_churn(draw, pl: Planner) -> None:
    """Finish a request and admit a new one (allocator churn)."""
    if pl.live():
        pl.finish(draw(st.sampled_from(pl.live())))
    pl.admit(draw(st.integers(1, 2 * pl.pool.page_size + 1)))


Action = Callable[..., None]


def _episode(draw, pl: Planner, actions: list[Action], max_steps: int) -> None:
    n = draw(st.integers(1, max_steps))
    for _ in range(n):
        if not pl.live():
            _admit_some(draw, pl)
            if not pl.live():
                break
        draw(st.sampled_from(actions))(draw, pl)


def _case(pl: Planner, seed: int, kind: str) -> Case:
    return Case(pool=pl.pool, graph=pl.graph, steps=tuple(pl.steps), payload_seed=seed, kind=kind)


def _kind(kind: str, actions: list[Action], spec: bool = False, multi_step: bool = False,
          max_steps: int = 10):
    @st.composite
    def strategy(draw) -> Case:
        pool = draw(pool_configs())
        graph = draw(graph_configs(spec=spec, multi_step=multi_step))
        pl = Planner(pool, graph)
        _admit_some(draw, pl)
        _episode(draw, pl, actions, max_steps)
        seed = draw(st.integers(0, 2**32 - 1))
        return _case(pl, seed, kind)

    return strategy


def decode_cases():
    """Decode forwards, raw bs below and at the bucket, with window eviction. Shrinks towards one
    request, one graph decode step."""
    return _kind("decode", [_act_decode, _act_decode_shrinking, _act_evict])()


def remap_cases():
    """Mapping re-registration between forwards (HiCache load-back / commit, spec §2.8, PR
    #25889) among decode forwards on the same captured graphs, with eviction and churn: graphs
    captured before a remap must keep translating through the live mapping. Shrinks towards
    one graph decode, one remap, one graph decode."""
    return _kind("remap", [_act_decode, _act_remap, _act_decode, _act_evict, _act_churn])()


def idle_cases():
    """IDLE forwards (eager and graph) after real decode forwards left metadata behind. Shrinks
    towards one decode then one IDLE."""
    return _kind("idle", [_act_decode, _act_idle], spec=True)()


def dp_padded_cases():
    """DP attention: this rank's decode padded to the max over ranks (out_cache_loc rebound after
    metadata init); empty ranks run IDLE. Shrinks towards one request and one other rank."""
    return _kind("dp_padded", [_act_dp, _act_dp, _act_decode])()


def raw_metadata_cases():
    """Raw metadata on (``prep_in_graph``, SGLANG_PREP_IN_CUDA_GRAPH, spec §4.1, §4.3): every
    forward kind on captured graphs whose out-graph prep builds Raw metadata; the draft-extend
    graph (no in-graph init) and eager MTP IDLE after a replay resolve with Raw metadata in
    place (§4.5). Shrinks towards one request, one graph draft-extend."""
    @st.composite
    def strategy(draw) -> Case:
        case = draw(_kind("raw_metadata", [_act_draft_extend, _act_verify, _act_decode,
                                           _act_idle, _act_draft_decode], multi_step=True)())
        return dataclasses.replace(case, graph=dataclasses.replace(case.graph,
                                                                   prep_in_graph=True))

    return strategy()


def draft_extend_buffer_cases():
    """The draft-extend graph with the pre-allocated SWA location buffer refilled by the
    out-graph prep (``draft_extend_buffer``, sglang PR #34890, spec §4.7): verify and
    draft-extend forwards whose token counts shrink and grow inside one bucket. Shrinks towards
    two graph draft-extends of one request."""
    @st.composite
    def strategy(draw) -> Case:
        case = draw(_kind("draft_extend_buffer", [_act_draft_extend, _act_verify,
                                                  _act_draft_extend], spec=True)())
        return dataclasses.replace(case, graph=dataclasses.replace(case.graph,
                                                                   draft_extend_buffer=True))

    return strategy()


def padded_pages_cases():
    """Pools whose page stride is padded past ``P * row_bytes`` (``page_pad_bytes``, as the real
    DSV4 pool pads its pages, spec §4.6), the pads checked as canaries, under decode, verify,
    draft-extend, eviction and churn. Shrinks towards P = 1, one graph decode, a 2-byte pad."""
    @st.composite
    def strategy(draw) -> Case:
        case = draw(_kind("padded_pages", [_act_decode, _act_verify, _act_draft_extend,
                                           _act_evict, _act_churn], spec=True)())
        pad = draw(st.sampled_from((2, 8, 6, 64, 30)))
        return dataclasses.replace(case, pool=dataclasses.replace(case.pool, page_pad_bytes=pad))

    return strategy()


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


def dsv4_layout_cases():
    """The real DSV4 SWA cache layout (``pool.layout = "dsv4"``, spec §4.6): bf16 K rows
    quantized into 584-byte tokens (fp8 nope, bf16 rope, UE8M0 scales) on pages padded to
    ``ceil(584*P/576)*576`` bytes, under decode, verify, draft-extend, eviction and churn. Few
    requests and steps (at most 6). Shrinks towards P = 1, one request, one graph decode."""
    @st.composite
    def strategy(draw) -> Case:
        pool = draw(dsv4_pool_configs())
        graph = draw(graph_configs(spec=True))
        pl = Planner(pool, graph)
        p = pool.page_size
        for _ in range(draw(st.integers(1, 2))):
            if pl.admit(draw(st.integers(1, 2 * p + 1))) is None:
                break
        _episode(draw, pl, [_act_decode, _act_verify, _act_draft_extend, _act_evict,
                            _act_churn], 6)
        return _case(pl, draw(st.integers(0, 2**32 - 1)), "dsv4_layout")

    return strategy()


def dp_spec_cases():
    """DP attention on speculative forwards (spec §5.4, §6): target-verify, draft-extend and
    multi-step draft batches padded to the other ranks' maximum (out_cache_loc rebound after
    metadata init, graph buckets over the padded batch), and batches rewritten to EXTEND
    because another rank extends. Shrinks towards one request, one other rank, no rewrite."""
    return _kind("dp_spec", [_act_dp_verify, _act_dp_draft_extend, _act_dp_draft_decode,
                             _act_dp_rewrite, _act_verify], multi_step=True)()


def draft_extend_cases():
    """Target verify then draft-extend over accepted tokens (padding to the captured width).
    Shrinks towards one request, one draft token."""
    return _kind("draft_extend", [_act_verify, _act_draft_extend, _act_draft_extend],
                 spec=True)()


def target_verify_cases():
    """TARGET_VERIFY forwards of num_draft_tokens per request. Shrinks towards one request, one
    draft token, one step."""
    return _kind("target_verify", [_act_verify, _act_evict], spec=True)()


def multi_step_draft_cases():
    """Multi-step draft decode over one bs*topk*steps location buffer (per-step slices). Shrinks
    towards one request, topk 1, two steps."""
    return _kind("multi_step_draft", [_act_draft_decode, _act_decode], multi_step=True)()


def episode_cases():
    """Everything on the same captured graphs: decode, verify, draft-extend, multi-step draft,
    IDLE, DP padding, evictions and churn. Shrinks towards the shortest such sequence."""
    acts = [_act_decode, _act_decode_shrinking, _act_verify, _act_draft_extend, _act_draft_decode,
            _act_idle, _act_dp, _act_evict, _act_churn, _act_remap]
    return _kind("episode", acts, multi_step=True, max_steps=16)()


def _act_verify_reject(draw, pl: SharingPlanner) -> None:
    """A verify whose requests accept 1..num_draft_tokens draft tokens: the rejected tail is
    freed after the forward (EAGLE verify, sglang 0.5.12 ``EagleVerifyInput.verify``)."""
    rids = _subset(draw, pl.live(), 1, pl.max_bs)
    if rids:
        ndt = pl.graph.num_draft_tokens
        accept = tuple(draw(st.integers(1, ndt)) for _ in rids)
        pl.verify_reject(rids, accept, _exec(draw))


def _act_prefix_admit(draw, pl: SharingPlanner) -> None:
    """A new request whose first n tokens are a live request's (radix-cache prefix hit)."""
    srcs = [r for r in pl.live() if pl.prefix_choices(r)]
    if srcs:
        src = draw(st.sampled_from(srcs))
        n = draw(st.sampled_from(pl.prefix_choices(src)))
        pl.admit_prefix(src, n, n + draw(st.integers(1, 2 * pl.pool.page_size + 1)))


def _act_first_prefix_admit(draw, pl: SharingPlanner) -> None:
    """A prefix admit, first admitting a source of at least one page if no live request can
    lend a prefix (so short Cases carry a hit)."""
    if not any(pl.prefix_choices(r) for r in pl.live()):
        p = pl.pool.page_size
        pl.admit(draw(st.integers(p, 2 * p + 1)))
    _act_prefix_admit(draw, pl)


def _act_finish(draw, pl: Planner) -> None:
    if len(pl.live()) > 1:
        pl.finish(draw(st.sampled_from(pl.live())))


def _sharing_kind(kind: str, first: Action, actions: list[Action], max_steps: int = 12,
                  wide_drafts: bool = False):
    """Like :func:`_kind` on a :class:`SharingPlanner`; ``first`` runs once before the
    episode (the trigger, so short Cases carry it). ``wide_drafts``: 2..max(4, min(P + 3, 20))
    draft tokens (shrinks to 2), so a rejected tail can free a whole page when P > 1."""
    @st.composite
    def strategy(draw) -> Case:
        pool = draw(pool_configs())
        graph = draw(graph_configs(spec=True))
        if wide_drafts:
            hi = max(4, min(pool.page_size + 3, 20))
            graph = dataclasses.replace(graph, num_draft_tokens=draw(st.integers(2, hi)))
        pl = SharingPlanner(pool, graph)
        _admit_some(draw, pl)
        first(draw, pl)
        _episode(draw, pl, actions, max_steps)
        seed = draw(st.integers(0, 2**32 - 1))
        return _case(pl, seed, kind)

    return strategy


def verify_reject_cases():
    """Target-verify forwards that accept only part of their draft tokens (``accept`` on
    ``verify``): the rejected slots past the last accepted token's page are freed after the
    forward (page size 1: all of them) and later decodes, verifies, draft-extends and admits
    reuse them; the reserved slots on that page are reused by the request's next extension.
    Shrinks towards one request, one draft token accepted of one, one graph verify."""
    return _sharing_kind("verify_reject", _act_verify_reject, [_act_verify_reject, _act_verify_reject, _act_decode,
                                           _act_draft_extend, _act_evict, _act_churn],
                         wide_drafts=True)()


def prefix_share_cases():
    """Radix-cache prefix hits (``admit`` with ``prefix_rid`` / ``prefix_len``): requests
    sharing page-aligned leading pages with a live request, decoding and verifying on, evicting
    (shared pages skipped) and finishing in any order (a shared page is freed by its last
    holder; survivors' shared pages below their frontier give back their SWA pages then).
    Shrinks towards one request, one prefix admit of one page, one finish."""
    return _sharing_kind("prefix_share", _act_first_prefix_admit, [_act_prefix_admit, _act_prefix_admit, _act_decode,
                                          _act_verify, _act_evict, _act_finish, _act_churn])()
def ring_cases():
    """A per-request SWA ring (``pool.swa_ring``, addendum §2.1): decode, verify, draft-extend,
    IDLE and DP-padded forwards, eager and graph, long admissions (the ``-1`` window rule) and
    slot churn; see :mod:`scenarios.ring_kind`. Shrinks towards one request in one slot."""
    from swafuzz.scenarios.ring_kind import ring_strategy

    return ring_strategy()


SCENARIO_KINDS: dict[str, Callable[[], st.SearchStrategy[Case]]] = {
    "decode": decode_cases,
    "idle": idle_cases,
    "dp_padded": dp_padded_cases,
    "draft_extend": draft_extend_cases,
    "target_verify": target_verify_cases,
    "multi_step_draft": multi_step_draft_cases,
    "episode": episode_cases,
    "remap": remap_cases,
    "dp_spec": dp_spec_cases,
    "raw_metadata": raw_metadata_cases,
    "draft_extend_buffer": draft_extend_buffer_cases,
    "padded_pages": padded_pages_cases,
    "dsv4_layout": dsv4_layout_cases,
    "verify_reject": verify_reject_cases,
    "prefix_share": prefix_share_cases,
    "ring": ring_cases,
}

# issue 12: the V4.1 request window, late-layer tail and encoder replay kinds
from swafuzz.scenarios.window_strategies import WINDOW_KINDS  # noqa: E402

SCENARIO_KINDS.update(WINDOW_KINDS)

# issue 12: DECODE graphs under a request window
from swafuzz.scenarios.window_graph_strategies import WINDOW_GRAPH_KINDS  # noqa: E402

SCENARIO_KINDS.update(WINDOW_GRAPH_KINDS)

# issue 12: breakable prefill graphs under a request window
from swafuzz.scenarios.prefill_strategies import PREFILL_KINDS  # noqa: E402

SCENARIO_KINDS.update(PREFILL_KINDS)
# issue 12: prefix hits under a late-layer tail (T5) and the separate encoder-replay forward (E2)
from swafuzz.scenarios.tail_prefix_strategies import TAIL_PREFIX_KINDS  # noqa: E402

SCENARIO_KINDS.update(TAIL_PREFIX_KINDS)
# issue 12: the late-layer tail under graphs (row-bucket tail graphs, prefill-graph tail)
from swafuzz.scenarios.tail_graph_strategies import TAIL_GRAPH_KINDS  # noqa: E402

SCENARIO_KINDS.update(TAIL_GRAPH_KINDS)
# issue 12 item 2: target verify and DP-padded EXTENDs under a request window
from swafuzz.scenarios.dspark_strategies import DSPARK_KINDS  # noqa: E402

SCENARIO_KINDS.update(DSPARK_KINDS)

# issue 12: the DSpark draft block on a per-request SWA ring (issue12-ringdraft)
from swafuzz.scenarios.ring_draft_kind import ring_draft_strategy  # noqa: E402

SCENARIO_KINDS["ring_draft"] = ring_draft_strategy
