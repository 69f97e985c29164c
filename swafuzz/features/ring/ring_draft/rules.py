"""Rules of ``draft_block`` steps (``features/ring/ring_draft/SEMANTICS.md``).

:func:`validate` raises ``CaseError`` naming the field: a ``draft_block`` needs a ring, ``graph.
num_draft_tokens >= 2`` (``gamma = num_draft_tokens - 1``), ``pool.swa_ring >= window + gamma``;
``exec == "graph"`` also ``gamma < page_size`` (padded requests' rows, slot 0 at positions
``1..gamma``, stay in page 0).
"""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError

__all__ = ["block_size", "validate"]


def block_size(case) -> int:
    """The DSpark draft block size ``gamma = graph.num_draft_tokens - 1``."""
    return case.graph.num_draft_tokens - 1


def validate(case) -> None:
    """Raise :class:`CaseError` for the first ``draft_block`` step the Case does not allow."""
    pool, gamma = case.pool, block_size(case)
    for i, s in enumerate(case.steps):
        if s.op != "draft_block":
            continue
        if not pool.swa_ring:
            raise CaseError(f"steps[{i}].op", "draft_block needs a per-request SWA ring "
                            "(pool.swa_ring > 0 and pool.req_slots > 0: the DSpark draft ring, "
                            "sglang 0.5.23 uses_draft_swa_ring)")
        if gamma < 1:
            raise CaseError("graph.num_draft_tokens", "must be >= 2 with a draft_block step "
                            f"(block size num_draft_tokens - 1; got {case.graph.num_draft_tokens})")
        if pool.swa_ring < pool.window + gamma:
            raise CaseError("pool.swa_ring", f"must be >= window + num_draft_tokens - 1 = "
                            f"{pool.window + gamma} with a draft_block step (the draft ring holds "
                            f"the window plus a block, get_draft_swa_ring_size; got "
                            f"{pool.swa_ring})")
        if s.exec == "graph" and gamma >= pool.page_size:
            raise CaseError(f"steps[{i}].exec", "graph needs num_draft_tokens - 1 < page_size "
                            f"for draft_block (padded requests write slot 0 at positions "
                            f"1..{gamma}, which must stay in page 0; page_size "
                            f"{pool.page_size}); use eager")
