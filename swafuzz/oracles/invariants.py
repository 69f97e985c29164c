"""Pool / allocator invariants over plain lists (no expectation, no torch).

:func:`pool_invariants` judges one snapshot of an SWA allocator state (``M`` with sentinel, the two
free page lists, the live requests): one message per violation, rule name first, then the
slot/page and values. P = page_size; SWA slots in ``[0, (swa_pages+1)*P)``, page 0 the dummy.

* ``length`` ``len(M) == full_pages*P + P + 1``; ``sentinel`` ``M[-1] == -1``; ``slot0``
  ``M[0] == 0``; ``range`` others 0 or in ``[P, (swa_pages+1)*P)``; ``unique`` no SWA slot
  mapped twice; ``offset`` ``f % P == M[f] % P``.
* ``free-page0`` / ``free-range`` / ``free-dup``: page 0 never free, free pages in range, none
  twice; ``free-in-use``: no free page holds a live token / mapped slot.
* ``token-range`` / ``token-dup``: live tokens are real full slots (not page 0) owned once.
* ``frontier`` ``0 <= evicted <= len(tokens)``, a multiple of P; ``in-window`` positions
  ``[evicted, len)`` mapped; ``evicted`` positions below unmapped; ``orphan`` every mapped full
  slot a live request's.
* ``held``: SWA pages ``1..swa_held`` (``pool.swa_held_pages``) neither free nor mapped;
  ``accounting``: free + in use (+ held) == all pages, each side.
"""

from __future__ import annotations


def pool_invariants(mapping: list[int], free_full_pages: list[int], free_swa_pages: list[int],
                    requests: dict[int, tuple[list[int], int]], page_size: int, full_pages: int,
                    swa_pages: int, swa_held: int = 0) -> list[str]:
    """Violations of the rules above. ``requests``: rid -> (full slot per position, frontier);
    ``swa_held``: SWA pages ``1..swa_held`` are held from the start."""
    P, M, out = page_size, mapping, []
    n_map = full_pages * P + P + 1
    swa_hi = (swa_pages + 1) * P
    if len(M) != n_map:
        out.append(f"length: len(M) = {len(M)}, expected full_pages*P+P+1 = {n_map}")
    if not M:
        return out
    if M[-1] != -1:
        out.append(f"sentinel: M[-1] = {M[-1]}, expected -1")
    if M[0] != 0:
        out.append(f"slot0: M[0] = {M[0]}, expected 0 (full slot 0 is the dummy slot)")
    owner: dict[int, int] = {}  # mapped swa slot -> full slot
    for f, s in enumerate(M[:-1]):
        if s == 0:
            continue
        if not P <= s < swa_hi:
            out.append(f"range: M[{f}] = {s}, allowed 0 or [{P}, {swa_hi})")
            continue
        if s in owner:
            out.append(f"unique: SWA slot {s} mapped from full slots {owner[s]} and {f}")
        else:
            owner[s] = f
        if f % P != s % P:
            out.append(f"offset: M[{f}] = {s}: full offset {f % P} != SWA offset {s % P}")

    def check_free(name: str, free: list[int], n_pages: int) -> set[int]:
        seen: set[int] = set()
        for pg in free:
            if pg == 0:
                out.append(f"free-page0: page 0 is in the {name} free list")
            elif not 1 <= pg <= n_pages:
                out.append(f"free-range: {name} free page {pg} outside [1, {n_pages}]")
            if pg in seen:
                out.append(f"free-dup: {name} page {pg} appears twice in the free list")
            seen.add(pg)
        return seen

    free_full = check_free("full", free_full_pages, full_pages)
    free_swa = check_free("SWA", free_swa_pages, swa_pages)

    live_full: dict[int, tuple[int, int]] = {}  # full slot -> (rid, position)
    for rid, (toks, ev) in sorted(requests.items()):
        if not (0 <= ev <= len(toks) and ev % P == 0):
            out.append(f"frontier: request {rid}: evicted = {ev}, length {len(toks)}, P = {P}")
        for pos, f in enumerate(toks):
            if not P <= f < n_map - 1:
                out.append(f"token-range: request {rid} position {pos}: full slot {f} outside "
                           f"[{P}, {n_map - 1})")
                continue
            if f in live_full:
                o = live_full[f]
                out.append(f"token-dup: full slot {f} owned by request {o[0]} position {o[1]} "
                           f"and request {rid} position {pos}")
            live_full[f] = (rid, pos)
            if pos >= ev and M[f] <= 0:
                out.append(f"in-window: request {rid} position {pos} (full slot {f}) unmapped: "
                           f"M[{f}] = {M[f]}, window [{ev}, {len(toks)})")
            if pos < ev and M[f] != 0:
                out.append(f"evicted: request {rid} position {pos} (full slot {f}) below "
                           f"frontier {ev} still mapped: M[{f}] = {M[f]}")
    for s, f in sorted(owner.items(), key=lambda kv: kv[1]):
        if f not in live_full:
            out.append(f"orphan: full slot {f} mapped to SWA slot {s} but no live request owns it")

    used_full = {f // P for f in live_full}
    used_swa = {s // P for s in owner}
    for pg in sorted(used_full & free_full):
        out.append(f"free-in-use: full page {pg} is free but holds live tokens")
    for pg in sorted(used_swa & free_swa):
        out.append(f"free-in-use: SWA page {pg} is free but holds mapped slots")
    held = set(range(1, swa_held + 1))
    for pg in sorted(held & (free_swa | used_swa))[:1]:
        out.append(f"held: SWA page {pg} is held (pool.swa_held_pages = {swa_held}) but "
                   f"{'free' if pg in free_swa else 'holds mapped slots'}")
    for name, used, free, n_pages in (("full", used_full, free_full, full_pages),
                                      ("SWA", used_swa | held, free_swa, swa_pages)):
        lost = sorted(set(range(1, n_pages + 1)) - used - free)
        if lost:
            out.append(f"accounting: {name} pages {lost[:8]}{'...' if len(lost) > 8 else ''} "
                       f"neither free nor in use (leaked)")
    return out
