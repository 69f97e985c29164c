"""Scenario kinds of the dense feature (paged SWA pool rows): ``decode``, ``idle``, ``draft_extend``,
``target_verify``, ``multi_step_draft`` and ``episode``, each an episode of
:mod:`scenarios.actions` on a paged pool (:func:`scenarios.strategies.paged_kind`). Each
docstring says what the kind exercises and what it shrinks towards.
"""

from __future__ import annotations

from swafuzz.features.dp.kinds import dp
from swafuzz.features.remap.kinds import remap
from swafuzz.scenarios import actions as A
from swafuzz.scenarios.strategies import paged_kind


def decode_cases():
    """Decode forwards, raw bs below and at the bucket, with window eviction. Shrinks towards one
    request, one graph decode step."""
    return paged_kind("decode", [A.decode, A.decode_shrinking, A.evict])


def idle_cases():
    """IDLE forwards (eager and graph) after real decode forwards left metadata behind. Shrinks
    towards one decode then one IDLE."""
    return paged_kind("idle", [A.decode, A.idle], spec=True)


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
                                  A.draft_decode, A.idle, dp, A.evict, A.churn, remap],
                      multi_step=True, max_steps=16)
