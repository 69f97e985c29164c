"""The allocator against the allocation policy of ``features/dense/SEMANTICS.md`` and the invariants of
spec §2.4 / §7, checked over plain Python lists read back from the target."""

from __future__ import annotations

import random

import pytest
import torch

from swafuzz.scenarios.case import PoolConfig
from swafuzz.targets.allocator import AllocationError, SWAAllocator


def invariants(a: SWAAllocator) -> None:
    P, cfg = a.page_size, a.pool
    m = a.mapping.tolist()
    assert len(m) == cfg.full_pages * P + P + 1 and m[-1] == -1 and m[0] == 0
    assert all(m[f] == 0 for f in range(P)), "page 0 of the full side is never mapped"
    live = {}
    for rid, toks in a.tokens.items():
        for pos, f in enumerate(toks):
            if pos >= a.evicted[rid]:
                assert m[f] >= P, f"in-window position {pos} of request {rid} unmapped"
                assert m[f] % P == f % P, "full % P == swa % P"
                live[f] = m[f]
            else:
                assert m[f] == 0, f"evicted position {pos} of request {rid} still mapped"
    assert len(set(live.values())) == len(live), "mapped SWA slots are unique"
    mapped = {f for f, s in enumerate(m[:-1]) if s != 0}
    assert mapped == set(live), "only live in-window tokens are mapped"
    used_swa = {s // P for s in live.values()}
    assert not used_swa & set(a.free_swa_pages()) and 0 not in a.free_swa_pages()
    used_full = {f // P for toks in a.tokens.values() for f in toks}
    assert not used_full & set(a.free_full_pages()) and 0 not in a.free_full_pages()
    assert len(used_full) + len(a.free_full_pages()) == cfg.full_pages
    assert len(used_swa) + len(a.free_swa_pages()) == cfg.swa_pages


def test_lowest_page_first_and_congruence():
    a = SWAAllocator(PoolConfig(page_size=4, full_pages=6, swa_pages=4, window=4))
    assert a.admit(1, 5) == [4, 5, 6, 7, 8]
    assert a.admit(2, 2) == [12, 13]
    assert a.extend([(1, 4), (2, 1)]) == [[9, 10, 11, 16], [14]]
    m = a.mapping.tolist()
    assert [m[f] for f in a.tokens[1]] == [4, 5, 6, 7, 8, 9, 10, 11, 16]
    assert [m[f] for f in a.tokens[2]] == [12, 13, 14]
    assert a.free_full_pages() == [5, 6] and a.free_swa_pages() == []
    with pytest.raises(AllocationError, match="fresh pages"):
        a.extend([(2, 2)])  # position 3 fits, position 4 needs a page on both sides
    assert len(a.tokens[2]) == 3, "a refused step allocates nothing"
    a.evict(1, window=4)  # len 9 -> frontier floor(5/4)*4 = 4
    assert a.evicted[1] == 4 and a.free_swa_pages() == [1]
    assert all(a.mapping[f].item() == 0 for f in a.tokens[1][:4])
    invariants(a)
    a.finish(1)
    assert a.free_full_pages() == [1, 2, 4, 5, 6] and a.free_swa_pages() == [1, 2, 4]
    invariants(a)


def test_invariants_after_churn():
    rng = random.Random(7)
    for P in (1, 2, 8):
        cfg = PoolConfig(page_size=P, full_pages=24, swa_pages=12, window=3)
        a = SWAAllocator(cfg)
        next_rid = 0
        for _ in range(300):
            op = rng.random()
            try:
                if op < 0.2 or not a.tokens:
                    a.admit(next_rid, rng.randint(1, 3 * P))
                    next_rid += 1
                elif op < 0.6:
                    rids = rng.sample(sorted(a.tokens), rng.randint(1, len(a.tokens)))
                    a.extend([(r, rng.randint(1, 2)) for r in rids])
                elif op < 0.85:
                    a.evict(rng.choice(sorted(a.tokens)), cfg.window)
                else:
                    a.finish(rng.choice(sorted(a.tokens)))
            except AllocationError:
                pass
            invariants(a)


def test_new_request_last_loc_is_the_sentinel():
    a = SWAAllocator(PoolConfig(page_size=2))
    a.tokens[9], a.evicted[9] = [], 0
    assert a.translate_last_loc(9) == -1  # M[-1] = -1: "no last location"
    assert a.mapping.dtype == torch.int64
