"""Rules of the per-request SWA ring (``pool.swa_ring``, ``pool.req_slots``;
``features/ring/SEMANTICS.md``): the two fields are set together, the ring holds the window and a
page, and a ring Case uses neither multi-step draft decode nor the draft-extend SWA buffer."""

from __future__ import annotations

from swafuzz.features.parts import ScenarioPart
from swafuzz.scenarios.schema import OPS, CaseError


def validate(case) -> None:
    pool = case.pool
    if bool(pool.swa_ring) != bool(pool.req_slots):
        field = "pool.req_slots" if pool.swa_ring else "pool.swa_ring"
        raise CaseError(field, "pool.swa_ring and pool.req_slots are set together (both > 0 "
                        f"for a per-request SWA ring, both 0 or absent without one; got "
                        f"swa_ring={pool.swa_ring}, req_slots={pool.req_slots})")
    if not pool.swa_ring:
        return
    if pool.swa_ring < max(pool.window, pool.page_size):
        raise CaseError("pool.swa_ring", f"must be >= window ({pool.window}) and >= page_size "
                        f"({pool.page_size}) (got {pool.swa_ring})")
    if case.graph.draft_extend_buffer:
        raise CaseError("graph.draft_extend_buffer", "must be false with pool.swa_ring > 0 "
                        "(the pre-translated buffer reads M, which a ring never writes: sglang "
                        "0.5.23 _fill_cuda_graph_swa_out_cache_loc translates through M with no "
                        "ring branch, and the only draft with a ring, DSpark's, runs no "
                        "DRAFT_EXTEND forward)")
    for i, s in enumerate(case.steps):
        if s.op == "draft_decode":
            raise CaseError(f"steps[{i}].op", "draft_decode is not supported with "
                            "pool.swa_ring > 0 (sglang 0.5.23 gives a draft a ring only under "
                            "DSpark, uses_draft_swa_ring; its draft runs TARGET_VERIFY blocks and "
                            "IDLE, never multi-step DECODE: use draft_block); allowed: " + ", ".join(
                                o for o in OPS if o != "draft_decode"))


def has_ring(case) -> bool:
    """Hook ``engine.uses_allocator``: whether the Case has a per-request SWA ring (its
    allocator is the ring allocator, whose tables give the rows every store writes)."""
    return case.pool.swa_ring > 0


def swa_buffer_pages(pool) -> int | None:
    """Hook ``scenario.swa_buffer_pages``: pages of one SWA layer buffer of a pool with a ring,
    ``ceil((req_slots + 1) * swa_ring / P)`` (slot 0's rows included); None without a ring."""
    if not pool.swa_ring:
        return None
    return -(-((pool.req_slots + 1) * pool.swa_ring) // pool.page_size)


class RingScenario(ScenarioPart):
    """The input language's part: the ring's SWA buffer pages."""

    swa_buffer_pages = staticmethod(swa_buffer_pages)
