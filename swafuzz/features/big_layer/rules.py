"""Rules of held SWA pages (``pool.swa_held_pages``; ``features/big_layer/SEMANTICS.md``): at
least one SWA page stays free, and only the paired full/SWA allocator honours the field (not
the per-request ring's allocator, not the request window's workspace)."""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
    pool = case.pool
    held = pool.swa_held_pages
    if not held:
        return
    if held >= pool.swa_pages:
        raise CaseError("pool.swa_held_pages", f"must leave a free SWA page: {held} held of "
                        f"swa_pages = {pool.swa_pages}")
    for name in ("swa_ring", "request_window"):
        if getattr(pool, name, False):
            raise CaseError("pool.swa_held_pages", f"held pages are honoured by the paired "
                            f"full/SWA allocator only: not with pool.{name}")
