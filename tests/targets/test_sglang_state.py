"""The state changes the server makes, made the release's way (issue 18 item 6): window eviction
through the scheduler's eviction and the allocator's segment free, and the release mutant in
that path.

The zoo's handling of release mutants runs in the CPU gate (sglang absent); the adapter tests
(marker ``upstream``) drive the installed release and skip without it.
"""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.scenarios.case import Case, PoolConfig, Step

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (build an "
                                  "environment with scripts/upstream-env VERSION)")


def evict_case(p: int) -> Case:
    """Evictions at page size ``p``: a plain request, one whose leading pages another request
    shares (they stay mapped until the sharer finishes), and a decode between them."""
    pool = PoolConfig(page_size=p, full_pages=48 // p, swa_pages=40 // p, window=3, layers=1,
                      draft_layers=1)
    return Case(pool=pool, kind="decode", steps=(
        Step("admit", rid=0, length=12), Step("admit", rid=2, length=14, prefix_rid=0,
                                                   prefix_len=8),
        Step("admit", rid=1, length=2 * p + 5), Step("evict", rid=1), Step("evict", rid=0),
        Step("decode", rids=(0, 1, 2)), Step("evict", rid=1), Step("evict", rid=2),
        Step("finish", rid=0), Step("evict", rid=2), Step("decode", rids=(2, 1)),
        Step("evict", rid=2), Step("finish", rid=1), Step("finish", rid=2)))


# ----------------------------------------------------------------------------- CPU gate
@pytest.mark.skipif(HAVE_SGLANG, reason="checks the zoo without sglang installed")
def test_zoo_leaves_release_mutants_out_where_their_release_is_missing():
    from swafuzz.harness.zoo import matrix as zoo

    skipped = zoo.not_here()
    assert "segment_free_keeps_mapping" in skipped
    assert "not installed" in skipped["segment_free_keeps_mapping"]
    assert "segment_free_keeps_mapping" not in zoo.selected(None, skipped)
    assert "evict_keeps_mapping" in zoo.selected(None, skipped)  # the model's mutants stay
    spec = zoo.load_all()["segment_free_keeps_mapping"]
    assert zoo.control_of(spec) == "sglang" and spec.source.startswith("spec §2.5")
    assert zoo.control_of(zoo.load_all()["evict_keeps_mapping"]) == "unified"


def test_a_mutant_whose_release_lacks_the_code_is_not_reachable_not_survived():
    from swafuzz.reports.summary import kill_matrix

    row = {"name": "m", "killed": False, "unreachable": "sglang 0.5.12 has no SEGMENT_EVICT",
           "seconds": 0.0, "kills": "0/2"}
    text = kill_matrix({"control": {"clean": True, "cases": 1, "seconds": 0.0,
                                    "target": "sglang"}, "mutants": [row]})
    assert "not reachable here: sglang 0.5.12 has no SEGMENT_EVICT" in text
    assert "sglang (control)" in text and "SURVIVED" not in text


def test_evict_case_passes_on_the_model():
    from swafuzz.harness.pipeline.execute import execute

    for p in (1, 2, 4):
        v = execute(evict_case(p), "unified", "torch", ["eager"])
        assert not v.failed, [f.message for f in v.failures]


# ----------------------------------------------------------------------------- upstream
@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("p", [1, 2, 4])
def test_eviction_goes_through_the_release_path(p, monkeypatch):
    """Every page size: the evict step reaches the release's segment free (where it has one) or
    its free_swa, never the other, and the Case passes every check."""
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang import features

    cls = features.SWATokenToKVPoolAllocator
    calls = {"segment": [], "free_swa": 0}
    if features.SEGMENT_EVICT:
        shipped = cls.free_swa_segment

        def spy(self, idx, *, start_pos):
            calls["segment"].append((start_pos, idx.numel()))
            return shipped(self, idx, start_pos=start_pos)
        monkeypatch.setattr(cls, "free_swa_segment", spy)
    v = execute(evict_case(p), "sglang", "torch", ["eager"])
    assert not v.failed, [f.message for f in v.failures]
    if features.SEGMENT_EVICT:
        assert calls["segment"] and all(s % p == 0 and n % p == 0 for s, n in calls["segment"])


@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("p", [1, 4])
def test_release_frontier_is_the_contracts(p):
    """The frontier the release's eviction records equals the Case contract's (no sharing)."""
    from swafuzz.targets.sglang import eviction, features
    from swafuzz.targets.sglang.engine import SGLangEngine

    if not features.SEGMENT_EVICT:
        pytest.skip(f"sglang {features.VERSION} evicts through free_swa (no segment path)")
    case = Case(pool=PoolConfig(page_size=p, full_pages=64 // p, swa_pages=64 // p, window=3),
                steps=(Step("admit", rid=0, length=2),))
    eng = SGLangEngine(case, impl="torch")
    a = eng.allocator
    a.admit(0, 2)
    for n in range(2, 30):
        got = eviction.evict_segment(a, a.rows, 0, 3)
        a.advance_frontier(0, 3)
        assert got == a.evicted[0] == max(0, n - 3) // p * p, n
        a.extend([(0, 1)])


@pytest.mark.upstream
@needs_sglang
def test_segment_free_mutant_is_killed_on_the_segment_path():
    """The release mutant (a fault in free_swa_segment) fails ``invariants`` on the releases
    whose eviction reaches it, and is refused where the release has no such path."""
    from swafuzz import targets
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang import features

    name = "mutant:segment_free_keeps_mapping"
    why = targets.supports(name, "decode")
    if not features.SEGMENT_EVICT:
        assert why and "SEGMENT_EVICT" in why
        return
    assert why is None
    v = execute(evict_case(4), name, "torch", ["eager"])
    assert v.failed and "invariants" in {f.check for f in v.failures}
