"""Engine side of the two allocator triggers (the oracle's: ``oracles/sharing.py``; semantics:
``features/verify_reject/SEMANTICS.md``, ``features/prefix_share/SEMANTICS.md``).

* Rejected draft tokens after TARGET_VERIFY (0.5.12 ``EagleVerifyInput.verify``, chain drafts):
  page size 1 frees every rejected slot; P > 1 keeps the last accepted token's page
  (``align_evict_mask_to_page_size``) and frees only rejected slots on later (whole) pages.
* Prefix sharing (``SWARadixCache`` hit): a full page is held by every live request with a
  token on it and released (SWA slots freed) only when no other live request holds it.
"""

from __future__ import annotations


def rejected_split(length_before: int, accepted: int, num_draft_tokens: int, page_size: int
                   ) -> tuple[int, int]:
    """``(keep, first_freed)`` positions: tokens ``[0, keep)`` stay, ``[keep, first_freed)``
    are kept allocated (same page as the last accepted token), the rest of the verify's
    ``num_draft_tokens`` slots are freed."""
    keep = length_before + accepted
    if page_size == 1:
        return keep, keep
    page_end = (keep + page_size - 1) // page_size * page_size
    return keep, min(page_end, length_before + num_draft_tokens)


def held_elsewhere(tokens: dict[int, list[int]], rid: int, page_size: int) -> set[int]:
    """Full pages a live request other than ``rid`` holds."""
    out: set[int] = set()
    for other, toks in tokens.items():
        if other != rid:
            out.update(f // page_size for f in toks)
    return out
