"""Scenario kind ``raw_metadata``: every forward with Raw metadata (``graph.prep_in_graph``).
"""

from __future__ import annotations

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.strategies import paged_kind, with_graph


def raw_metadata_cases():
    """Raw metadata on (``prep_in_graph``, SGLANG_PREP_IN_CUDA_GRAPH, spec §4.1, §4.3): every
    forward kind on captured graphs whose out-graph prep builds Raw metadata; the draft-extend
    graph (no in-graph init) and eager MTP IDLE after a replay resolve with Raw metadata in
    place (§4.5). Shrinks towards one request, one graph draft-extend."""
    return paged_kind("raw_metadata", [A.draft_extend, A.verify, A.decode, A.idle,
                                       A.draft_decode], multi_step=True,
                      finish=with_graph(prep_in_graph=True))
