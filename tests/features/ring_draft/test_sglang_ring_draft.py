"""The DSpark draft block on a ring on the ``sglang`` target (0.5.23:
``features/ring/ring_draft/sglang.py``).

Marker ``upstream``: drives the installed SGLang release and skips, with the reason, when sglang
is not installed or is not 0.5.23. Run with the release's environment, e.g.
``$(scripts/upstream-env 0.5.23) -m pytest tests/features/ring_draft/test_sglang_ring_draft.py``.
"""

import importlib.util

import pytest

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (run with "
                                  "an upstream environment, scripts/upstream-env 0.5.23)")

# page size 2: page size 1 under a ring hits the known ring-p1-alloc-writes-mapping finding
BLOCKS = Case(
    pool=PoolConfig(page_size=2, full_pages=16, swa_pages=2, window=3, swa_ring=6, req_slots=3,
                    layers=1, draft_layers=2),
    graph=GraphConfig(buckets=(1, 2, 4), num_draft_tokens=3),
    steps=(Step("admit", rid=0, length=7), Step("admit", rid=1, length=2),
           Step("draft_block", rids=(0, 1)), Step("decode", rids=(0, 1), exec="graph"),
           Step("verify", rids=(1,), exec="eager"), Step("draft_block", rids=(1, 0)),
           Step("finish", rid=1), Step("admit", rid=2, length=11),
           Step("draft_block", rids=(2,)), Step("draft_block", rids=(0, 2))),
    kind="ring_draft")


# page size 4 > gamma 2: graph blocks (TARGET_VERIFY runner on the draft model, padded to 4)
GRAPH_BLOCKS = Case(
    pool=PoolConfig(page_size=4, full_pages=16, swa_pages=2, window=3, swa_ring=8, req_slots=4,
                    layers=1, draft_layers=2),
    graph=GraphConfig(buckets=(1, 2, 4), num_draft_tokens=3),
    steps=(Step("admit", rid=0, length=9), Step("admit", rid=1, length=2),
           Step("admit", rid=2, length=5), Step("draft_block", rids=(0, 1, 2), exec="graph"),
           Step("decode", rids=(0, 1, 2), exec="graph"),
           Step("draft_block", rids=(2, 0, 1), exec="graph"),
           Step("draft_block", rids=(1,), exec="graph"), Step("finish", rid=0),
           Step("draft_block", rids=(1, 2), exec="eager"),
           Step("draft_block", rids=(2, 1), exec="graph")),
    kind="ring_draft")


def _need_0_5_23():
    from swafuzz.targets.sglang import release

    if release()[1] != "0.5.23":
        pytest.skip("the DSpark draft ring needs the 0.5.23 adapter")


@pytest.mark.upstream
@needs_sglang
def test_draft_blocks_clean_on_0_5_23():
    _need_0_5_23()
    from swafuzz.features.ring.ring_draft.sglang import SGLangDraftBlockMixin
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang import engine

    for case in (BLOCKS, GRAPH_BLOCKS):
        v = execute(case, "sglang", "torch", ["eager", "tape"])
        assert not v.failed, [f.message for f in v.failures]
    eng = engine.SGLangEngine(BLOCKS, impl="torch")
    obs = eng.run()
    assert obs.error is None
    assert isinstance(eng._draft_block_backend, SGLangDraftBlockMixin)
    assert isinstance(eng._draft_block_backend, engine.SGLangBackend)
    assert all(v == 0 for v in obs.steps[-1].mapping[:-1])  # the ring never wrote M


@pytest.mark.upstream
@needs_sglang
def test_block_rows_come_from_the_release(monkeypatch):
    """Break the release's ``_dspark_swa_ring_out_cache_loc`` (one row off): the sglang target's
    draft blocks fail, so its rows are the release's, not the model's."""
    _need_0_5_23()
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang.real import RealBackend

    real = RealBackend._dspark_swa_ring_out_cache_loc

    def off_by_one(self, *, seq_lens_casual, req_pool_indices_repeated):
        return real(self, seq_lens_casual=seq_lens_casual + 1,
                    req_pool_indices_repeated=req_pool_indices_repeated)

    monkeypatch.setattr(RealBackend, "_dspark_swa_ring_out_cache_loc", off_by_one)
    v = execute(BLOCKS, "sglang", "torch", ["eager"])
    assert "write_targets" in {f.check for f in v.failures}
