"""Held SWA pages (``pool.swa_held_pages``, feature ``big_layer``) on the ``sglang`` target.

The adapter takes the held pages through the release's own SWA allocator (its ``alloc`` of
``held * P`` slots) before the first step; the oracle, following the release's observed
choices, must then see every SWA page the Case gets above the held ones, and the free list
without them. On small pools (the ``bigaddr`` kind's layers past 2^31 bytes are the bigmem
tier). Marker ``upstream``: skips, with the reason, when sglang is not installed. Run with the
release's environment, e.g. ``$(scripts/upstream-env 0.5.23) -m pytest
tests/features/big_layer/test_sglang_held_pages.py``.
"""

import importlib.util

import pytest

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (run with "
                                  "an upstream environment, scripts/upstream-env 0.5.23)")

HELD = Case(
    pool=PoolConfig(page_size=2, full_pages=6, swa_pages=7, window=2, row_width=3,
                    swa_held_pages=4),
    graph=GraphConfig(buckets=(1, 2), num_draft_tokens=2),
    steps=(Step("admit", rid=0, length=3), Step("decode", rids=(0,), exec="graph"),
           Step("admit", rid=1, length=1), Step("evict", rid=0), Step("finish", rid=1),
           Step("admit", rid=2, length=2)),
    kind="bigaddr")


@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("held", [4, 0])
def test_held_pages_through_the_release_allocator(held):
    import dataclasses

    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang import engine

    case = dataclasses.replace(HELD, pool=dataclasses.replace(HELD.pool, swa_held_pages=held))
    v = execute(case, "sglang", "torch", ["eager", "tape"])
    assert not v.failed, [f.message for f in v.failures]
    obs = engine.SGLangEngine(case, impl="torch").run()
    swa_pages = {s // 2 for st in obs.steps for _, s in (st.alloc or [])}
    assert swa_pages and min(swa_pages) > held
    assert all(p > held for st in obs.steps for p in st.free_swa_pages)
    if held:
        assert set(range(held + 1, 8)) - swa_pages <= set(obs.steps[0].free_swa_pages)
