"""Scenario kinds of DP attention: ``dp_padded`` (DP-padded DECODE) and ``dp_spec`` (re-padding and the
rewrite to EXTEND of speculative forwards).
"""

from __future__ import annotations

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.strategies import paged_kind


def dp_padded_cases():
    """DP attention: this rank's decode padded to the max over ranks (out_cache_loc rebound after
    metadata init); empty ranks run IDLE. Shrinks towards one request and one other rank."""
    return paged_kind("dp_padded", [A.dp, A.dp, A.decode])


def dp_spec_cases():
    """DP attention on speculative forwards (spec §5.4, §6): target-verify, draft-extend and
    multi-step draft batches padded to the other ranks' maximum (out_cache_loc rebound after
    metadata init, graph buckets over the padded batch), and batches rewritten to EXTEND
    because another rank extends. Shrinks towards one request, one other rank, no rewrite."""
    return paged_kind("dp_spec", [A.dp_verify, A.dp_draft_extend, A.dp_draft_decode,
                                  A.dp_rewrite, A.verify], multi_step=True)
