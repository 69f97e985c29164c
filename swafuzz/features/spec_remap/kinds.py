"""Scenario kind ``spec_remap``: mapping re-registration (``remap``) among speculative forwards on
the same captured graphs, so both target and draft pools translate tokens allocated after it.
Shrinks towards one request, one remap, then one draft-extend of post-remap tokens; topk 1, two
draft steps, one draft token (:func:`scenarios.strategies.paged_kind`).
"""

from __future__ import annotations

from swafuzz.features.remap.kinds import remap
from swafuzz.scenarios import actions as A
from swafuzz.scenarios.strategies import paged_kind


def spec_remap_cases():
    """Remaps between verify, draft-extend, multi-step draft and decode forwards (spec §2.1,
    §2.8). Shrinks towards one request, one remap, one draft-extend."""
    return paged_kind("spec_remap", [remap, A.draft_extend, A.verify, A.draft_decode,
                                     remap, A.decode], multi_step=True)
