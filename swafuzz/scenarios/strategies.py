"""Scenario kinds of the paged pool, each declared as an :class:`scenarios.episode.EpisodeKind`
(planner draw, first actions, action list, max steps) over the actions of
:mod:`scenarios.actions`. The feature records (``swafuzz/features/*``) name the ``*_cases``
functions; each docstring says what the kind exercises and what it shrinks towards.

Kinds: ``decode``, ``idle``, ``dp_padded``, ``draft_extend``, ``target_verify``,
``multi_step_draft``, ``episode`` (a mix of all of them on the same captured graphs, with
allocator churn and window eviction), ``remap`` (mapping re-registration between decode
forwards), ``dp_spec`` (DP re-padding and the rewrite to EXTEND on speculative forwards),
``raw_metadata`` (every forward with Raw metadata, ``prep_in_graph``), ``draft_extend_buffer``
(the draft-extend graph's pre-allocated SWA location buffer, PR #34890), ``padded_pages`` (pools
with a padded page stride, the pads as canaries), ``dsv4_layout`` (the real DSV4 SWA cache
layout: quantizing store, 584-byte tokens, padded pages). The sharing kinds are in
:mod:`scenarios.sharing_strategies`, the ring in :mod:`features.ring.kinds`, the request-window
kinds in the ``window_*``, ``prefill_*``, ``tail_*`` and ``dspark_*`` modules.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.case import Case, PoolConfig
from swafuzz.scenarios.episode import Action, EpisodeKind, action
from swafuzz.scenarios.planner import Planner


def paged_planner(spec: bool = False, multi_step: bool = False, pools=None):
    """A planner draw: ``pools`` (default :func:`scenarios.actions.pool_configs`) and
    :func:`scenarios.actions.graph_configs`."""
    def planner(draw) -> Planner:
        pool = draw(pools if pools is not None else A.pool_configs())
        return Planner(pool, draw(A.graph_configs(spec=spec, multi_step=multi_step)))

    return planner


def paged_kind(kind: str, actions: list[Action], spec: bool = False, multi_step: bool = False,
               max_steps: int = 10, finish=None) -> st.SearchStrategy[Case]:
    """A paged-pool kind: admit 1..max_bs requests, then an episode of ``actions`` (nothing
    live: admit again)."""
    return EpisodeKind(kind, paged_planner(spec, multi_step), (A.admit_some,), tuple(actions),
                       max_steps, refill=A.admit_some, finish=finish).strategy()


def _with_graph(**kw):
    return lambda draw, case: dataclasses.replace(case, graph=dataclasses.replace(case.graph,
                                                                                  **kw))


def decode_cases():
    """Decode forwards, raw bs below and at the bucket, with window eviction. Shrinks towards one
    request, one graph decode step."""
    return paged_kind("decode", [A.decode, A.decode_shrinking, A.evict])


def remap_cases():
    """Mapping re-registration between forwards (HiCache load-back / commit, spec §2.8, PR
    #25889) among decode forwards on the same captured graphs, with eviction and churn: graphs
    captured before a remap must keep translating through the live mapping. Shrinks towards
    one graph decode, one remap, one graph decode."""
    return paged_kind("remap", [A.decode, A.remap, A.decode, A.evict, A.churn])


def idle_cases():
    """IDLE forwards (eager and graph) after real decode forwards left metadata behind. Shrinks
    towards one decode then one IDLE."""
    return paged_kind("idle", [A.decode, A.idle], spec=True)


def dp_padded_cases():
    """DP attention: this rank's decode padded to the max over ranks (out_cache_loc rebound after
    metadata init); empty ranks run IDLE. Shrinks towards one request and one other rank."""
    return paged_kind("dp_padded", [A.dp, A.dp, A.decode])


def raw_metadata_cases():
    """Raw metadata on (``prep_in_graph``, SGLANG_PREP_IN_CUDA_GRAPH, spec §4.1, §4.3): every
    forward kind on captured graphs whose out-graph prep builds Raw metadata; the draft-extend
    graph (no in-graph init) and eager MTP IDLE after a replay resolve with Raw metadata in
    place (§4.5). Shrinks towards one request, one graph draft-extend."""
    return paged_kind("raw_metadata", [A.draft_extend, A.verify, A.decode, A.idle,
                                       A.draft_decode], multi_step=True,
                      finish=_with_graph(prep_in_graph=True))


def draft_extend_buffer_cases():
    """The draft-extend graph with the pre-allocated SWA location buffer refilled by the
    out-graph prep (``draft_extend_buffer``, sglang PR #34890, spec §4.7): verify and
    draft-extend forwards whose token counts shrink and grow inside one bucket. Shrinks towards
    two graph draft-extends of one request."""
    return paged_kind("draft_extend_buffer", [A.draft_extend, A.verify, A.draft_extend],
                      spec=True, finish=_with_graph(draft_extend_buffer=True))


def _page_pad(draw, case: Case) -> Case:
    pad = draw(st.sampled_from((2, 8, 6, 64, 30)))
    return dataclasses.replace(case, pool=dataclasses.replace(case.pool, page_pad_bytes=pad))


def padded_pages_cases():
    """Pools whose page stride is padded past ``P * row_bytes`` (``page_pad_bytes``, as the real
    DSV4 pool pads its pages, spec §4.6), the pads checked as canaries, under decode, verify,
    draft-extend, eviction and churn. Shrinks towards P = 1, one graph decode, a 2-byte pad."""
    return paged_kind("padded_pages", [A.decode, A.verify, A.draft_extend, A.evict, A.churn],
                      spec=True, finish=_page_pad)


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


def dp_spec_cases():
    """DP attention on speculative forwards (spec §5.4, §6): target-verify, draft-extend and
    multi-step draft batches padded to the other ranks' maximum (out_cache_loc rebound after
    metadata init, graph buckets over the padded batch), and batches rewritten to EXTEND
    because another rank extends. Shrinks towards one request, one other rank, no rewrite."""
    return paged_kind("dp_spec", [A.dp_verify, A.dp_draft_extend, A.dp_draft_decode,
                                  A.dp_rewrite, A.verify], multi_step=True)


def draft_extend_cases():
    """Target verify then draft-extend over accepted tokens (padding to the captured width).
    Shrinks towards one request, one draft token."""
    return paged_kind("draft_extend", [A.verify, A.draft_extend, A.draft_extend], spec=True)


def target_verify_cases():
    """TARGET_VERIFY forwards of num_draft_tokens per request. Shrinks towards one request, one
    draft token, one step."""
    return paged_kind("target_verify", [A.verify, A.evict], spec=True)


def multi_step_draft_cases():
    """Multi-step draft decode over one bs*topk*steps location buffer (per-step slices). Shrinks
    towards one request, topk 1, two steps."""
    return paged_kind("multi_step_draft", [A.draft_decode, A.decode], multi_step=True)


def episode_cases():
    """Everything on the same captured graphs: decode, verify, draft-extend, multi-step draft,
    IDLE, DP padding, evictions and churn. Shrinks towards the shortest such sequence."""
    return paged_kind("episode", [A.decode, A.decode_shrinking, A.verify, A.draft_extend,
                                  A.draft_decode, A.idle, A.dp, A.evict, A.churn, A.remap],
                      multi_step=True, max_steps=16)
