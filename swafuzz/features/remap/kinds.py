"""Scenario kind ``remap``: mapping re-registration between decode forwards.
"""

from __future__ import annotations

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.strategies import paged_kind


def remap_cases():
    """Mapping re-registration between forwards (HiCache load-back / commit, spec §2.8, PR
    #25889) among decode forwards on the same captured graphs, with eviction and churn: graphs
    captured before a remap must keep translating through the live mapping. Shrinks towards
    one graph decode, one remap, one graph decode."""
    return paged_kind("remap", [A.decode, A.remap, A.decode, A.evict, A.churn])
