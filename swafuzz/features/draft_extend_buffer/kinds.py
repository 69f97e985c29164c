"""Scenario kind ``draft_extend_buffer``: the draft-extend graph's pre-allocated SWA location buffer.
"""

from __future__ import annotations

from swafuzz.scenarios import actions as A
from swafuzz.scenarios.strategies import paged_kind, with_graph


def draft_extend_buffer_cases():
    """The draft-extend graph with the pre-allocated SWA location buffer refilled by the
    out-graph prep (``draft_extend_buffer``, sglang PR #34890, spec §4.7): verify and
    draft-extend forwards whose token counts shrink and grow inside one bucket. Shrinks towards
    two graph draft-extends of one request."""
    return paged_kind("draft_extend_buffer", [A.draft_extend, A.verify, A.draft_extend],
                      spec=True, finish=with_graph(draft_extend_buffer=True))
