"""Ring draft oracle: what a ``draft_block`` step (features/ring/ring_draft/SEMANTICS.md) must have
written. Plain Python; never ``targets/``, ``kernels/`` or torch.

:func:`draft_block_forward`, called by ``RingShadow``, checks the step against the contract, maps
each block row to ``slot*R + (L + i) mod R`` (R1, no ``-1`` rule, slot >= 1, so every row is
``>= P``), asserts them unique (R2), writes the draft shadow and records the forward. A graph
block (bucket ``B >= len(rids)``, ``B * gamma`` rows) pads with slot-0 requests of length 1 whose
rows stay in page 0 (``gamma < page_size``), never compared.
"""

from __future__ import annotations

from swafuzz.oracles.errors import CaseInfeasible
from swafuzz.oracles.expectation import ForwardExp
from swafuzz.oracles.paths import bucket_of

__all__ = ["block_rows", "draft_block_forward"]


def block_rows(slot: int, length: int, gamma: int, ring: int) -> list[int]:
    """Ring rows of one request's draft block: ``slot*ring + (length + i) % ring`` for
    ``i < gamma`` (positions ``length .. length + gamma - 1``)."""
    return [slot * ring + (length + i) % ring for i in range(gamma)]


def draft_block_forward(sh, i: int, s) -> None:
    """Apply ``draft_block`` step ``i`` to the ring shadow ``sh`` (a ``RingShadow``)."""
    cfg, g = sh.cfg, sh.g
    gamma = g.num_draft_tokens - 1
    if gamma < 1 or cfg.swa_ring < cfg.window + gamma:
        raise CaseInfeasible(i, f"draft_block needs num_draft_tokens >= 2 and swa_ring >= "
                                f"window + num_draft_tokens - 1 (got num_draft_tokens "
                                f"{g.num_draft_tokens}, swa_ring {cfg.swa_ring})")
    rows_graph = None
    if s.exec == "graph":
        if gamma >= cfg.page_size:
            raise CaseInfeasible(i, "a graph draft_block needs num_draft_tokens - 1 < page_size")
        b = bucket_of(g.buckets, len(s.rids))
        rows_graph = b * gamma if b is not None else None
        sh.graph_ok(i, "graph", rows_graph)
    if not s.rids or len(set(s.rids)) != len(s.rids):
        raise CaseInfeasible(i, f"draft_block needs distinct rids (got {list(s.rids)})")
    targets: list[int] = []
    locs: list[int] = []
    for rid in s.rids:
        toks = sh.tokens.get(rid)
        if not toks:
            raise CaseInfeasible(i, f"draft_block: request {rid} is not live")
        slot = sh.slot[rid]
        targets += block_rows(slot, len(toks), gamma, sh.R)
        locs += [toks[-1]] * gamma
    sh.store(i, 0, "draft", targets)  # unique rows (R2), written where >= P
    n = len(targets)
    # a padded request: slot 0, length 1 (the seq_lens fill): rows 1..gamma, in page 0
    sh.exp.forwards.append(ForwardExp(i, 0, "draft", "TARGET_VERIFY", s.exec, n, targets, locs,
                                      n, rows_graph,
                                      tuple((1 + k) % sh.R for k in range(gamma))))
