"""The draft-extend graph's pre-allocated SWA location buffer on the engine side (PR #34890):
how many rows the draft-extend backend's buffer has. The backend's use of the buffer is
:class:`targets.backend.DSV4Backend`'s (``swa_loc_buffer``)."""

from __future__ import annotations

from swafuzz.features.parts import EnginePart


def loc_buffer_rows(case) -> int:
    """Hook ``engine.draft_extend_loc_rows``: the largest bucket's draft-extend rows
    (``max(buckets) * num_draft_tokens``) when the Case asks for the buffer
    (``graph.draft_extend_buffer``), else 0 (no buffer)."""
    g = case.graph
    return max(g.buckets) * g.num_draft_tokens if g.draft_extend_buffer else 0


class DraftExtendBufferEngine(EnginePart):
    """The engine part: the rows of the draft-extend backend's SWA-location buffer."""

    draft_extend_loc_rows = staticmethod(loc_buffer_rows)
