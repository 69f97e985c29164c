"""Rules of padded SWA pages (``pool.page_pad_bytes``; ``features/padded_pages/SEMANTICS.md``):
the pad is a whole number of row elements."""

from __future__ import annotations

from swafuzz.scenarios.schema import ROW_ITEMSIZE, CaseError


def validate(case) -> None:
    pool = case.pool
    size = ROW_ITEMSIZE[pool.row_dtype]
    if pool.page_pad_bytes % size:
        raise CaseError("pool.page_pad_bytes", f"must be a multiple of the {pool.row_dtype} "
                        f"item size {size} (got {pool.page_pad_bytes})")
