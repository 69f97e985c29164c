"""The server's own state changes (feature ``server_ops``, issue 18 item 6): the cache flush
(refused while a request runs, else both allocators cleared) and admissions that fit the full
pool but not the SWA pool (refused, state unchanged), judged by the oracle and the ``refusal``
check, on the model and (marker ``upstream``) on the release's own flush and refusal.
"""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import HealthCheck, find, given, settings

from swafuzz import features
from swafuzz.harness.pipeline.execute import InvalidCase, execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, PoolConfig, Step

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (build an "
                                  "environment with scripts/upstream-env VERSION)")


def flush_case(p: int) -> Case:
    pool = PoolConfig(page_size=p, full_pages=10, swa_pages=6, window=3, layers=1,
                      draft_layers=1)
    return Case(pool=pool, kind="idle_flush", steps=(
        Step("admit", rid=0, length=2 * p + 1), Step("flush"), Step("decode", rids=(0,)),
        Step("evict", rid=0), Step("finish", rid=0), Step("flush"),
        Step("admit", rid=1, length=3 * p), Step("admit", rid=2, length=1),
        Step("decode", rids=(1, 2)), Step("finish", rid=1), Step("finish", rid=2),
        Step("flush"), Step("admit", rid=3, length=p + 1)))


def short_case(p: int) -> Case:
    pool = PoolConfig(page_size=p, full_pages=10, swa_pages=6, window=3, layers=1,
                      draft_layers=1)
    return Case(pool=pool, kind="swa_short", steps=(
        Step("admit", rid=0, length=3 * p), Step("refused_admit", rid=1, length=3 * p + 1),
        Step("refused_admit", rid=2, length=5 * p), Step("evict", rid=0),
        Step("decode", rids=(0,)), Step("admit", rid=3, length=1),
        Step("refused_admit", rid=4, length=4 * p)))


@pytest.mark.parametrize("p", [1, 4])
def test_the_model_passes_and_the_oracle_expects_refusals(p):
    for case in (flush_case(p), short_case(p)):
        v = execute(case, "unified", "torch", ["eager"])
        assert not v.failed, [f.message for f in v.failures]
    exp = expect(short_case(p))
    assert [s.requests for s in exp.steps[:3]] == [exp.steps[0].requests] * 3
    assert exp.steps[2].free_full_pages == exp.steps[0].free_full_pages
    exp = expect(flush_case(p))  # a refused flush changes nothing; an idle one clears
    assert exp.steps[1].mapping == exp.steps[0].mapping and exp.steps[1].requests
    assert exp.steps[5].free_swa_pages == list(range(1, 7))


@pytest.mark.parametrize("mutant,which", [("flush_while_running", flush_case),
                                          ("flush_seeds_page_zero", flush_case),
                                          ("refusal_takes_full_pages", short_case)])
@pytest.mark.parametrize("p", [1, 4])
def test_the_refusal_check_fails_on_each_mutant(mutant, which, p):
    v = execute(which(p), f"mutant:{mutant}", "torch", ["eager"])
    assert "refusal" in {f.check for f in v.failures}, [f.message for f in v.failures]


def test_refused_admit_round_trips_and_its_premise_is_checked():
    case = short_case(4)
    assert Case.loads(case.dumps()) == case
    bad = Case(pool=case.pool, steps=(Step("admit", rid=0, length=2),
                                      Step("refused_admit", rid=1, length=2)))
    with pytest.raises(InvalidCase, match="must fit the 9 free full pages but not the 5 free "
                                          "SWA pages"):
        execute(bad, "unified", "torch", ["eager"])


@pytest.mark.parametrize("kind,op", [("idle_flush", "flush"), ("swa_short", "refused_admit")])
def test_the_strategies_generate_the_ops_and_they_shrink_away(kind, op):
    seen = []

    @settings(max_examples=30, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(features.strategy(kind)())
    def check(case):
        expect(case)  # valid by the oracle's rules
        seen.append(any(s.op == op for s in case.steps))

    check()
    assert sum(seen) >= len(seen) // 3, (sum(seen), len(seen))
    small = find(features.strategy(kind)(), lambda c: any(s.op == op for s in c.steps),
                 settings=settings(database=None, derandomize=True, max_examples=200))
    # the minimal Case keeps only what it needs: (admit, finish, flush, admit) / (admit, refused)
    assert [s.op for s in small.steps] in (["admit", "finish", "flush", "admit"],
                                           ["admit", "refused_admit"]), small.steps
    plain = find(features.strategy(kind)(), lambda c: any(s.op == "decode" for s in c.steps),
                 settings=settings(database=None, derandomize=True, max_examples=200))
    assert [s.op for s in plain.steps] == ["admit", "decode"]  # the op, not needed: shrunk away


def test_a_flush_on_another_path_is_refused():
    """The feature's rule (the window's own rules run first in ``load_case``)."""
    import dataclasses

    from swafuzz.scenarios.schema import CaseError

    case = flush_case(1)
    case = dataclasses.replace(case, pool=dataclasses.replace(case.pool, request_window=8))
    with pytest.raises(CaseError, match=r"steps\[1\]\.op: flush runs on the paged pool's "
                                        r"allocator only; the Case uses feature\(s\) "
                                        r"request_window"):
        features.load("swafuzz.features.server_ops.rules:validate")(case)


# ----------------------------------------------------------------------------- upstream
@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("p", [1, 4])
def test_the_release_flushes_and_refuses(p, monkeypatch):
    """The release's flush (its scheduler's flush_cache where the scheduler imports, else its
    allocator's clear()) and its allocator's refusals pass every check."""
    from swafuzz.targets.sglang import eviction
    from swafuzz.targets.sglang import features as found

    calls = []
    shipped = found.SWATokenToKVPoolAllocator.clear

    def spy(self):
        calls.append(1)
        return shipped(self)
    monkeypatch.setattr(found.SWATokenToKVPoolAllocator, "clear", spy)
    for case in (flush_case(p), short_case(p)):
        v = execute(case, "sglang", "torch", ["eager"])
        assert not v.failed, [f.message for f in v.failures]
    # each allocator's constructor, and the two idle flushes (the one while running is refused)
    assert len(calls) == 1 + 2 + 1
    # the scheduler does not import on the store-path releases (0.5.12, 0.5.12.post1)
    assert (eviction.release_flush() is not None) == (found.FAMILY != "store-path")


@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("mutant,which,check", [
    # the dummy page handed to the next admission: the observed allocation is refused
    ("release_clear_seeds_page_zero", flush_case, "invariants"),
    # the release's own assert when the SWA side cannot hold what its size promised
    ("release_swa_capacity_overstated", short_case, "error")])
@pytest.mark.parametrize("p", [1, 4])
def test_the_release_mutants_are_killed(mutant, which, check, p):
    """Each release mutant (the release's own allocator with one bug put back) fails its
    feature's Case, by the check named; the release unmutated passes the same Cases
    (test_the_release_flushes_and_refuses)."""
    v = execute(which(p), f"mutant:{mutant}", "torch", ["eager"])
    assert v.failed, f"{mutant} survived page size {p}"
    assert check in {f.check for f in v.failures}, [(f.check, f.message) for f in v.failures]
