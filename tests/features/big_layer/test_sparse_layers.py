"""Sparse layer snapshots and held SWA pages (issue 19 item 4), on small buffers.

A layer of ``scenarios.paged.SPARSE_LAYER_BYTES`` or more is observed and predicted as
``PagedBytes`` (pages not all poison). Here the threshold is lowered to 0 so small Cases run
sparsely, and everything is compared with the dense run: the same bytes, the same verdicts
(every failure's check and message) on mutants killed by ``pool_bytes`` / ``write_set`` /
``redzones``; a byte written outside every reported location is seen. Held pages
(``pool.swa_held_pages``): the first page allocated is ``held + 1`` on the target and in the
oracle, the invariants' ``held`` rule and the Case rules. The int32 store mutant is the
unified store below 2^31 bytes (the bigmem tier kills it on the ``bigaddr`` kind).
Reproduce: ``pytest tests/features/big_layer/test_sparse_layers.py``.
"""

from __future__ import annotations

import random

import pytest
import torch

from swafuzz import kernels
from swafuzz.features.big_layer.mutants import int32_wrap
from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.harness.zoo.matrix import first_kill
from swafuzz.oracles.engine import expect
from swafuzz.oracles.invariants import pool_invariants
from swafuzz.scenarios import paged
from swafuzz.scenarios.case import POISON_BYTE, Case, GraphConfig, PoolConfig, Step
from swafuzz.scenarios.paged import PagedBytes, slot_diffs
from swafuzz.scenarios.schema import CaseError
from swafuzz.targets import run_case
from swafuzz.targets.kv_pool import SWAKVPool


@pytest.fixture
def sparse(monkeypatch):
    monkeypatch.setattr(paged, "SPARSE_LAYER_BYTES", 0)


def test_paged_bytes_reads_writes_and_compares_as_bytes():
    rng = random.Random(3)
    page, n = 12, 7
    dense, sp = bytearray([POISON_BYTE]) * (page * n), PagedBytes(page * n, page, POISON_BYTE)
    for _ in range(40):
        a = rng.randrange(page * n)
        b = rng.randrange(a, page * n + 1)
        data = bytes(rng.randrange(256) for _ in range(b - a))
        dense[a:b] = data
        sp[a:b] = data
        c = rng.randrange(page * n)
        d = rng.randrange(c, page * n + 1)
        assert sp[c:d] == bytes(dense[c:d])
    assert bytes(sp) == bytes(dense) and len(sp) == len(dense)
    other = sp.copy()
    assert other == sp
    other[5:6] = b"\x00" if sp[5:6] != b"\x00" else b"\x01"
    assert other != sp and sp.differing_pages(other) == [0]
    for rb in (1, 3, 4, 12):
        assert sp.slot_diffs(other, rb, 0) == slot_diffs(bytes(sp), bytes(other), rb, 0)
    assert sp.like() == PagedBytes(page * n, page, POISON_BYTE)


def test_paged_bytes_refuses_what_it_cannot_hold():
    with pytest.raises(ValueError, match="whole number of pages"):
        PagedBytes(10, 4, 0)
    with pytest.raises(ValueError, match="page 9"):
        PagedBytes(8, 4, 0, {9: b"abcd"})
    with pytest.raises(TypeError, match="contiguous slices"):
        PagedBytes(8, 4, 0)[::2]
    with pytest.raises(TypeError, match="only with a sparse layer"):
        slot_diffs(PagedBytes(8, 4, 0), bytes(8), 1, 0)


CASES = [
    Case(pool=PoolConfig(page_size=4, full_pages=6, swa_pages=6, window=3, row_width=3,
                         draft_layers=1),
         graph=GraphConfig(buckets=(1, 2), num_draft_tokens=2),
         steps=(Step("admit", rid=0, length=5), Step("decode", rids=(0,), exec="graph"),
                Step("draft_extend", rids=(0,), accept=(2,)), Step("evict", rid=0),
                Step("admit", rid=1, length=2), Step("finish", rid=0))),
    Case(pool=PoolConfig(page_size=2, full_pages=4, swa_pages=4, window=2, row_width=4,
                         row_dtype="bfloat16", page_pad_bytes=6),
         steps=(Step("admit", rid=0, length=3), Step("decode", rids=(0,)))),
    Case(pool=PoolConfig(page_size=2, full_pages=4, swa_pages=4, window=2, row_width=512,
                         row_dtype="bfloat16", layout="dsv4"),
         steps=(Step("admit", rid=0, length=3), Step("decode", rids=(0,)))),
]


@pytest.mark.parametrize("case", CASES, ids=["rows", "padded", "dsv4"])
def test_sparse_snapshots_hold_the_dense_bytes(case, monkeypatch):
    dense_obs = run_case(case, "unified", "torch")
    dense_exp = expect(case)
    monkeypatch.setattr(paged, "SPARSE_LAYER_BYTES", 0)
    sparse_obs = run_case(case, "unified", "torch")
    sparse_exp = expect(case)
    assert dense_obs.error is None and len(sparse_obs.steps) == len(case.steps)
    for do, so, de, se in zip(dense_obs.steps, sparse_obs.steps, dense_exp.steps,
                              sparse_exp.steps):
        for pool in ("target", "draft"):
            for a, b in zip(do.pools[pool], so.pools[pool]):
                assert isinstance(b, PagedBytes) and bytes(b) == a
            for a, b in zip(do.redzones[pool], so.redzones[pool]):
                assert (a.before, a.after) == (b.before, b.after) and bytes(b.pads) == a.pads
                assert isinstance(b.pads, PagedBytes) or not case.pool.pad_bytes_per_page
            for a, b in zip(de.pools[pool], se.pools[pool]):
                assert isinstance(b, PagedBytes) and bytes(b) == bytes(a)
    # only the pages written are held: page 0 (dummy) and the pages of the Case's slots
    last = sparse_obs.steps[-1].pools["target"][0]
    assert len(last.pages) < last.size // last.page


def test_a_write_at_no_reported_location_is_seen(sparse):
    cfg = PoolConfig(page_size=4, full_pages=2, swa_pages=8, window=4, row_width=8)
    pool = SWAKVPool("target", cfg, 1, 0, kernels.get_impl("torch"), "cpu")
    assert pool.layer_snapshot(0).pages == {}
    pool.caches[0][6, 3, 5] = 0  # page 6, offset 3, byte 5: no store reported it
    snap = pool.layer_snapshot(0)
    assert list(snap.pages) == [6]
    assert snap.slot_diffs(snap.like(), cfg.row_bytes, cfg.page_size) == [6 * 4 + 3]


#: mutants whose killing checks compare pool bytes (fast ones, one per layout / path)
MUTANTS = ["rows_misaligned", "idle_uses_cache", "store_dense_page_stride",
           "dsv4_token_contiguous", "ring_no_mod"]


@pytest.mark.parametrize("name", MUTANTS)
def test_sparse_verdicts_equal_the_dense_ones(name, monkeypatch):
    """The first killing Case and every failure (check and message) are the same."""
    got = {}
    for mode, limit in (("dense", paged.SPARSE_LAYER_BYTES), ("sparse", 0)):
        monkeypatch.setattr(paged, "SPARSE_LAYER_BYTES", limit)
        v, n = first_kill(name)
        assert v is not None, (name, mode)
        got[mode] = (n, v.case, [(f.check, f.message) for f in v.failures])
    assert got["dense"] == got["sparse"]


HELD = Case(pool=PoolConfig(page_size=2, full_pages=4, swa_pages=6, window=2, row_width=3,
                            swa_held_pages=3),
            steps=(Step("admit", rid=0, length=3), Step("decode", rids=(0,)),
                   Step("finish", rid=0), Step("admit", rid=1, length=1)))


def test_held_pages_are_never_handed_out(sparse):
    exp = expect(HELD)
    assert exp.forwards[0].targets == [8, 9, 10]  # SWA pages 4, 5: the first after the held 1..3
    assert exp.steps[2].free_swa_pages == [4, 5, 6]
    v = execute(HELD, "unified", "torch", ["eager", "tape"])
    assert not v.failed, [f.message for f in v.failures]
    assert Case.loads(HELD.dumps()) == HELD and '"swa_held_pages": 3' in HELD.dumps()
    assert "swa_held_pages" not in Case(pool=PoolConfig()).dumps()  # older JSON unchanged


def test_the_invariants_know_the_held_pages():
    m = [0] * 10 + [-1]
    assert pool_invariants(m, [1, 2, 3, 4], [3, 4], {}, 2, 4, 4, swa_held=2) == []
    assert any(v.startswith("accounting: SWA pages [1, 2]")
               for v in pool_invariants(m, [1, 2, 3, 4], [3, 4], {}, 2, 4, 4))
    assert pool_invariants(m, [1, 2, 3, 4], [2, 3, 4], {}, 2, 4, 4, swa_held=2) == [
        "held: SWA page 2 is held (pool.swa_held_pages = 2) but free"]


@pytest.mark.parametrize("pool,message", [
    ({"swa_pages": 3, "swa_held_pages": 3}, "must leave a free SWA page: 3 held of swa_pages = 3"),
    ({"swa_ring": 4, "req_slots": 2, "swa_held_pages": 1}, "not with pool.swa_ring"),
])
def test_held_pages_rules(pool, message):
    case = HELD.to_json()
    case["pool"].update(pool)
    with pytest.raises(CaseError, match=r"pool\.swa_held_pages") as e:
        load_case(case)
    assert message in str(e.value)


def test_the_int32_store_is_the_unified_store_below_2_31_bytes():
    x = torch.tensor([0, 2**31 - 1, 2**31, 2**32 + 5, -1], dtype=torch.int64)
    assert int32_wrap(x).tolist() == [0, 2**31 - 1, -(2**31), 5, -1]
    for case in CASES[:2]:
        v = execute(case, "mutant:store_int32_address", "torch", ["eager", "tape"])
        assert not v.failed, [f.message for f in v.failures]
