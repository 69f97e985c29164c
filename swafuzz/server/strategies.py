"""Hypothesis strategies of server-level Cases, one per request-level kind.

Draws shrink towards fewer requests, shorter prompts, fewer new tokens, no aborts, no
speculative decoding and one rank: each is the first (smallest) choice of its draw.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz import features as registry
from swafuzz.server import spec_strategies
from swafuzz.server.base_strategies import base_cases
from swafuzz.server.case import ServerCase

#: kind -> what it generates
KINDS = {
    "server_decode": "requests that all arrive at step 0: one EXTEND, then DECODE to the end",
    "server_mixed": "staggered arrivals and aborts: EXTEND batches between DECODE batches, "
                    "requests leaving while others run, chunked prefill "
                    "(chunked_prefill_size drawn): a prompt split over EXTEND batches",
    "server_graph": "staggered arrivals with decode graphs captured (disable_cuda_graph "
                    "false, cuda_graph_bs_decode drawn): the release's can_run_graph picks "
                    "graph or eager per DECODE batch, padded rows on replay",
    "server_attn_tp": "staggered arrivals on attention TP 1 or 2 (tp_size 2, moe_dense_tp_size "
                      "1; drawn, shrinks to 1): with 2, every forward padded by the release's "
                      "MLP sync on 2 gloo processes, padded rows to the dummy slot",
    spec_strategies.KIND: spec_strategies.DESCRIPTION,
}

#: kinds features add (hook ``server.kinds``: (name, description, strategy) triples)
FEATURE_KINDS = {name: strategy for kinds in registry.hooks("server.kinds")
                 for name, _, strategy in kinds}
KINDS.update({name: desc for kinds in registry.hooks("server.kinds") for name, desc, _ in kinds})
#: kinds a server-level run draws only when named (``--scenario``): the speculative kind and
#: every feature's, so that the default split keeps its draws (``scripts/upstream-check`` runs
#: them as campaigns of their own; the request-window kinds meet known ledger entries there)
OPT_IN = (spec_strategies.KIND, *FEATURE_KINDS)
DEFAULT_KINDS = tuple(k for k in KINDS if k not in OPT_IN)


@st.composite
def server_cases(draw, kind: str = "server_decode") -> ServerCase:
    if kind not in KINDS:
        raise KeyError(f"server kind {kind!r} (known: {', '.join(KINDS)})")
    if kind == spec_strategies.KIND:
        return draw(spec_strategies.spec_cases())
    if kind in FEATURE_KINDS:
        return draw(FEATURE_KINDS[kind]())
    return draw(base_cases(kind))
