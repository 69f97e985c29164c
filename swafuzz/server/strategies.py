"""Hypothesis strategies of server-level Cases, one per server-level kind: the ``Kind`` entries
with ``level="server"`` of the feature records (the core kinds in ``dense``'s, the request
window's and attention DP's in their features'; opt-in ones drawn only when named).

Draws shrink towards fewer requests, shorter prompts, fewer new tokens, no aborts, no
speculative decoding and one rank: each is the first (smallest) choice of its draw.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz import features as registry
from swafuzz.server.case import ServerCase


@st.composite
def server_cases(draw, kind: str = "server_decode") -> ServerCase:
    known = registry.kind_names("server")
    if kind not in known:
        raise KeyError(f"server kind {kind!r} (known: {', '.join(known)})")
    return draw(registry.strategy(kind)())
