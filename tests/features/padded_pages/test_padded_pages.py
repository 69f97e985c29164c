"""Pools with a padded page stride (``pool.page_pad_bytes``; issue 10, item 4; spec §4.6: the
DSV4 pool's page stride is ``ceil(584*P/576)*576`` bytes, not ``P * row_bytes``): the pads are
canaries checked by ``redzones``; ``mutant:store_dense_page_stride`` (the store on a dense
re-view of the cache) is reached only there. Reproduce: ``pytest tests/features/padded_pages/test_padded_pages.py``.
"""


import pytest

from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.kv_pool import canary_bytes


def _case(p: int, pad: int, dtype: str = "bfloat16") -> Case:
    return Case(pool=PoolConfig(page_size=p, full_pages=8, swa_pages=8, window=3 * p, layers=2,
                                row_width=3, row_dtype=dtype, page_pad_bytes=pad),
                graph=GraphConfig(buckets=(1, 2), num_draft_tokens=2), kind="padded_pages",
                steps=(Step("admit", rid=0, length=p + 1), Step("admit", rid=1, length=1),
                       Step("decode", rids=(0, 1), exec="graph"),
                       Step("verify", rids=(1,), exec="eager"), Step("evict", rid=0),
                       Step("finish", rid=1), Step("admit", rid=2, length=2)))


def test_round_trip_json_and_validation():
    c = _case(16, 6)
    assert Case.loads(c.dumps()) == c
    assert c.to_json()["pool"]["page_pad_bytes"] == 6
    assert "page_pad_bytes" not in _case(16, 0).to_json()["pool"]
    assert c.pool.page_stride_bytes == 16 * 6 + 6
    bad = c.to_json()
    bad["pool"]["page_pad_bytes"] = 3  # not a multiple of the bfloat16 item size
    with pytest.raises(CaseError, match=r"pool\.page_pad_bytes"):
        load_case(bad)
    # the contract's pool bytes are the rows only: the same as the dense pool's
    a, b = expect(c), expect(_case(16, 0))
    assert a.steps[-1].pools == b.steps[-1].pools


@pytest.mark.parametrize("p,pad,dtype", [(1, 2, "uint8"), (16, 6, "bfloat16"), (4, 64, "uint8")])
def test_pool_layout_and_unified(p, pad, dtype):
    c = _case(p, pad, dtype)
    eng = UnifiedEngine(c, "torch")
    cache = eng.target_pool.caches[0]
    elem = 2 if dtype == "bfloat16" else 1
    assert cache.stride(0) * elem == p * c.pool.row_bytes + pad  # the padded page stride
    zones = eng.target_pool.redzone(0)
    assert zones[3] == canary_bytes(pad) * (c.pool.swa_pages + 1)
    for impl in ("torch", "triton"):
        assert not execute(c, "unified", impl, ["eager", "tape"]).failures


def test_store_dense_page_stride_is_reached_only_by_padded_pages():
    target = "mutant:store_dense_page_stride"
    assert not execute(_case(16, 0), target, "torch", ["eager", "tape"]).failures
    v = execute(_case(16, 6), target, "torch", ["eager", "tape"])
    fired = {f.check for f in v.failures}
    assert {"redzones", "pool_bytes"} <= fired
    z = [f for f in v.failures if f.check == "redzones"][0]
    assert "pad canaries" in z.message and z.step == 0


def test_redzones_reads_the_pads():
    """A pad byte overwritten behind the store's back is a redzones finding of its own."""
    from swafuzz.checks.write import check_redzones

    c = _case(1, 2, "uint8")
    eng = UnifiedEngine(c, "torch")
    obs = eng.run()
    assert not check_redzones(c, obs, None)
    rz = eng.target_pool.redzone_bytes
    eng.target_pool.raw[1][rz + 3 * c.pool.page_stride_bytes + c.pool.row_bytes] = 0
    obs.steps.append(eng.step_obs(len(c.steps) - 1))
    f = check_redzones(c, obs, None)
    assert f and f[0].slot_class == "page-pad" and "first after page 3" in f[0].message
