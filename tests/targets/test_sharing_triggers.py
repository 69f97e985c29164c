"""The two allocator triggers of issue 10 item 4 (semantics in ``features/verify_reject/SEMANTICS.md``, ``features/prefix_share/SEMANTICS.md``):

* ``verify`` with ``accept``: the rejected draft tokens are freed after the forward (sglang
  0.5.12 ``EagleVerifyInput.verify``: page size 1 frees every rejected slot; P > 1 keeps the page
  of the last accepted token, its rejected slots stay reserved, later whole pages are freed) and
  later allocations reuse the slots. ``mutant:verify_reject_keeps_swa`` (issue #27789 class) is
  reached only by it.
* ``admit`` with ``prefix_rid`` / ``prefix_len``: a radix-cache prefix hit sharing page-aligned
  leading slots of a live request, held until its last holder finishes.
  ``mutant:finish_frees_shared_prefix`` (spec §9.15 over-free class) is reached only by it.

Each is shown with the same Case with and without the trigger. The ``upstream`` tests drive the
installed SGLang release's allocator (run them in ``.venv-sglang-<V>``; skipped without sglang).
Reproduce: ``pytest tests/targets/test_sharing_triggers.py``.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest
from hypothesis import HealthCheck, given, settings

from swafuzz import features
from swafuzz.checks.invariants import check_invariants
from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import CaseInfeasible, expect
from swafuzz.oracles.paths import expected_paths, expected_requests
from swafuzz.oracles.sharing import expected_layout, sharing_invariants
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step
from swafuzz.targets import run_case

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (run with the "
                                  "python that scripts/upstream-env V prints)")
EXECS = ["eager", "tape"]
GRAPH = GraphConfig(num_draft_tokens=3, topk=1)


def _pool(p: int) -> PoolConfig:
    return PoolConfig(page_size=p, full_pages=12 if p > 1 else 20,
                      swa_pages=12 if p > 1 else 20, window=2)


def _reject_case(p: int, accept: bool = True) -> Case:
    """admit 2 tokens; graph verify of 3 drafts accepting 1; decode; a new request; a verify of
    both accepting (3, 1); finishes. ``accept=False``: the same Case, every draft accepted."""
    acc = (lambda *a: a) if accept else (lambda *a: ())
    return Case(pool=_pool(p), graph=GRAPH, kind="verify_reject", steps=(
        Step("admit", rid=0, length=2), Step("verify", rids=(0,), exec="graph", accept=acc(1)),
        Step("decode", rids=(0,), exec="graph"), Step("admit", rid=1, length=1),
        Step("verify", rids=(0, 1), exec="eager", accept=acc(3, 1)),
        Step("draft_extend", rids=(0, 1), accept=(2, 1), exec="graph"),
        Step("finish", rid=0), Step("admit", rid=2, length=3), Step("finish", rid=1),
        Step("finish", rid=2)))


def _share_case(p: int, prefix: bool = True) -> Case:
    """request 0 of two pages; request 1 shares its first page (or not); both decode; request
    0 evicts (the shared page is skipped) and finishes while 1 lives; a new request; finishes."""
    share = {"prefix_rid": 0, "prefix_len": p} if prefix else {}
    return Case(pool=_pool(p), graph=GRAPH, kind="prefix_share", steps=(
        Step("admit", rid=0, length=2 * p), Step("admit", rid=1, length=p + 1, **share),
        Step("decode", rids=(0, 1), exec="graph"), Step("evict", rid=0),
        Step("finish", rid=0), Step("decode", rids=(1,), exec="graph"),
        Step("admit", rid=2, length=p + 1), Step("evict", rid=1), Step("finish", rid=1),
        Step("decode", rids=(2,), exec="eager"), Step("finish", rid=2)))


# ----------------------------------------------------------------------------- the Case
def test_round_trip_and_json_unchanged_without_the_triggers():
    for case in (_reject_case(4), _share_case(4)):
        assert Case.loads(case.dumps()) == case
    assert _reject_case(1).to_json()["steps"][1] == {"op": "verify", "rids": [0], "accept": [1],
                                                      "exec": "graph"}
    assert _share_case(4).to_json()["steps"][1] == {"op": "admit", "rid": 1, "length": 5,
                                                     "prefix_rid": 0, "prefix_len": 4}
    assert "prefix_" not in str(_share_case(4, prefix=False).to_json()["steps"])
    assert "accept" not in _reject_case(4, accept=False).to_json()["steps"][1]


@pytest.mark.parametrize("step, path", [
    ({"op": "verify", "rids": [0, 1], "accept": [1]}, "steps[0].accept"),
    ({"op": "verify", "rids": [0], "accept": [0]}, "steps[0].accept[0].x"),  # the project's list-item path
    ({"op": "admit", "rid": 1, "length": 3, "prefix_rid": 0}, "steps[0].prefix_len"),
    ({"op": "admit", "rid": 1, "length": 3, "prefix_len": 2}, "steps[0].prefix_rid"),
    ({"op": "admit", "rid": 1, "length": 3, "prefix_rid": 0, "prefix_len": 3},
     "steps[0].prefix_len"),
    ({"op": "admit", "rid": 1, "length": 3, "prefix_rid": 1, "prefix_len": 1},
     "steps[0].prefix_rid"),
    ({"op": "decode", "rids": [0], "accept": [1]}, "steps[0].accept"),
    ({"op": "finish", "rid": 0, "prefix_len": 1}, "steps[0].prefix_len"),
])
def test_malformed_fields_name_the_field(step, path):
    with pytest.raises(CaseError) as e:
        load_case({**_reject_case(1).to_json(), "steps": [step]})
    assert e.value.path == path


@pytest.mark.parametrize("steps, why", [
    ((Step("admit", rid=0, length=8), Step("admit", rid=1, length=9, prefix_rid=0,
                                           prefix_len=2)), "multiple of P"),
    ((Step("admit", rid=0, length=4), Step("admit", rid=1, length=9, prefix_rid=0,
                                           prefix_len=8)), "length"),
    ((Step("admit", rid=1, length=9, prefix_rid=0, prefix_len=4),), "not live"),
    ((Step("admit", rid=0, length=12), Step("evict", rid=0),
      Step("admit", rid=1, length=13, prefix_rid=0, prefix_len=8)), "radix cache"),
    ((Step("admit", rid=0, length=1), Step("verify", rids=(0,), accept=(4,))), "accept"),
])
def test_infeasible_cases_are_refused(steps, why):
    with pytest.raises(CaseInfeasible, match=why):
        expect(Case(pool=PoolConfig(page_size=4, full_pages=12, swa_pages=12, window=2),
                    graph=GRAPH, steps=steps))


# ----------------------------------------------------------------------------- verify reject
def test_rejected_slots_are_freed_and_reused_page1():
    a, b = expect(_reject_case(1)), expect(_reject_case(1, accept=False))
    # verify allocates slots 3, 4, 5 for positions 2..4; accepting 1 frees 4 and 5 (page 1)
    assert a.steps[1].requests[0] == ([1, 2, 3], 0) and b.steps[1].requests[0][0] == [1, 2, 3,
                                                                                         4, 5]
    assert {4, 5} <= set(a.steps[1].free_full_pages) and a.steps[1].mapping[4] == 0
    assert a.steps[2].requests[0][0] == [1, 2, 3, 4]  # the decode reuses the freed slot 4
    assert a.steps[3].requests[1][0] == [5]  # the new request reuses slot 5
    assert b.steps[3].requests[1][0] == [7]


def test_reserved_slots_stay_mapped_and_are_reused_page4():
    a = expect(_reject_case(4))
    # positions 2..4 at slots 6, 7, 8 (page 2 starts at position 4); accept 1 keeps [4, 5, 6],
    # reserves slot 7 (same page, still mapped) and frees page 2
    assert a.steps[1].requests[0][0] == [4, 5, 6]
    assert a.steps[1].mapping[7] == a.steps[1].mapping[6] + 1 and 2 in a.steps[1].free_full_pages
    assert a.steps[2].requests[0][0] == [4, 5, 6, 7]  # the decode takes the reserved slot
    assert expected_layout(_reject_case(4))[1][0].reserved == 1
    assert expected_requests(_reject_case(4))[1][0] == (3, 0)


@pytest.mark.parametrize("p", [1, 4])
def test_unified_and_mutant_with_and_without_the_trigger(p):
    assert not execute(_reject_case(p), "unified", "torch", EXECS).failures
    assert not execute(_reject_case(p, False), "unified", "torch", EXECS).failures
    assert not execute(_reject_case(p, False), "mutant:verify_reject_keeps_swa", "torch",
                       EXECS).failures
    v = execute(_reject_case(p), "mutant:verify_reject_keeps_swa", "torch", EXECS)
    # right after the verify that freed a page: the leaked SWA page, M still mapping it; later
    # a reused full page's SWA slot aliases it (pool bytes) where the Case reaches that
    assert v.failures[0].check == "invariants" and v.failures[0].step == 1
    assert "orphan" in v.failures[0].message or "accounting" in v.failures[0].message


# ----------------------------------------------------------------------------- prefix sharing
def test_prefix_is_shared_and_held_until_its_last_holder_finishes():
    case = _share_case(4)
    a = expect(case)
    r0, r1 = a.steps[1].requests[0][0], a.steps[1].requests[1][0]
    assert r1[:4] == r0[:4] and r1[4] // 4 not in {f // 4 for f in r0}
    assert [p.rows for p in expected_paths(case, False)][:2] == [8, 1]  # only the new token
    # request 0 finishes: its own page 2 goes back, the shared page 1 stays with request 1
    assert 2 in a.steps[4].free_full_pages and 1 not in a.steps[4].free_full_pages
    assert all(a.steps[4].mapping[f] > 0 for f in r1[:4])
    assert sorted(expected_layout(case)[1][1].shares.items()) == [(0, 4)]
    b = expect(_share_case(4, prefix=False))
    assert b.steps[1].requests[1][0][:4] != r0[:4]


def test_evict_skips_shared_pages_and_finish_defers_their_eviction():
    case = Case(pool=PoolConfig(page_size=1, full_pages=12, swa_pages=12, window=1),
                graph=GRAPH, steps=(
                    Step("admit", rid=0, length=3),
                    Step("admit", rid=1, length=3, prefix_rid=0, prefix_len=2),
                    Step("evict", rid=0), Step("evict", rid=1), Step("finish", rid=0)))
    a = expect(case)
    shared = a.steps[1].requests[0][0][:2]
    assert all(a.steps[3].mapping[f] > 0 for f in shared)  # both frontiers passed them
    assert a.steps[3].requests[1][1] == 2
    assert all(a.steps[4].mapping[f] == 0 for f in shared)  # request 1 now holds them alone
    for target in ("unified",):
        assert not execute(case, target, "torch", EXECS).failures


@pytest.mark.parametrize("p", [1, 4, 16])
def test_unified_and_mutant_with_and_without_prefix(p):
    assert not execute(_share_case(p), "unified", "torch", EXECS).failures
    assert not execute(_share_case(p, False), "unified", "torch", EXECS).failures
    assert not execute(_share_case(p, False), "mutant:finish_frees_shared_prefix", "torch",
                       EXECS).failures
    v = execute(_share_case(p), "mutant:finish_frees_shared_prefix", "torch", EXECS)
    assert v.failures[0].check == "invariants" and v.failures[0].step == 4
    assert "in-window" in v.failures[0].message or "free-in-use" in v.failures[0].message


def test_invariants_see_a_copied_prefix():
    """A target that copies the prefix into fresh pages instead of sharing it breaks the
    ``shared`` rule (request table read from the engine, sharing from the Case)."""
    case = _share_case(4)
    obs = run_case(case, "unified")
    so = obs.steps[1]
    toks = so.requests[1][0]
    so.requests[1] = ([f + 40 for f in toks[:4]] + toks[4:], so.requests[1][1])
    fails = check_invariants(case, obs, None)
    assert fails and fails[0].step == 1
    v = sharing_invariants(so.mapping, so.requests, expected_layout(case)[1], 4)
    assert v and v[0].startswith("shared: request 0 position 0 differs from request 1")


# ----------------------------------------------------------------------------- generation
@pytest.mark.parametrize("kind", ["verify_reject", "prefix_share"])
def test_generated_cases_are_valid_and_carry_the_trigger(kind):
    seen = []

    @settings(max_examples=40, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(features.strategy(kind)())
    def check(case):
        expect(case)  # valid by the oracle's rules
        seen.append(any((s.op == "admit" and s.prefix_rid is not None)
                        or (s.op == "verify" and s.accept) for s in case.steps))
        other = "prefix_rid" if kind == "verify_reject" else "accept\": [1"
        assert kind == "prefix_share" or other not in case.dumps()
        if kind == "prefix_share":
            assert not any(s.op == "verify" and s.accept for s in case.steps)

    check()
    assert sum(seen) >= len(seen) // 3, (sum(seen), len(seen))


# ----------------------------------------------------------------------------- upstream
@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("p", [1, 4])
def test_sglang_allocator_frees_rejected_and_shares_prefixes(p):
    """The release's allocator (``free`` after verify; ``alloc_extend`` with a prefix; frees
    of pages no other request holds) passes every check in observed-allocation mode."""
    for case in (_reject_case(p), _share_case(p)):
        v = execute(case, "sglang", "torch", EXECS)
        assert not v.failed, [f.message for f in v.failures]
    from swafuzz.targets.sglang import engine

    obs = engine.SGLangEngine(_reject_case(p), impl="torch").run()
    assert obs.error is None, obs.error
    verify_slots = [f for f, _ in obs.steps[1].alloc]
    if p == 1:  # the two rejected slots are back with the release's allocator (its free list
        # or the released pages it merges back when the free list runs short)
        assert set(verify_slots[1:]) <= set(obs.steps[1].free_full_pages)
    else:  # the decode after the reject takes the reserved slot on the kept page
        assert obs.steps[2].alloc[0][0] == verify_slots[1]


@pytest.mark.upstream
@needs_sglang
def test_sglang_finish_keeps_shared_pages():
    from swafuzz.targets.sglang import engine

    case = dataclasses.replace(_share_case(4), steps=_share_case(4).steps[:5])
    obs = engine.SGLangEngine(case, impl="torch").run()
    assert obs.error is None, obs.error
    shared_page = obs.steps[1].requests[1][0][0] // 4
    assert shared_page not in obs.steps[4].free_full_pages
    assert shared_page in obs.steps[-1].free_full_pages or len(obs.steps) == 5


# ----------------------------------------------------------------------------- observed mode
def _observed(case: Case) -> list[list[list[int]]]:
    """Every step's allocated ``[full, swa]`` pairs, logged by the model's allocator run as an
    observed-allocation target (the oracle must validate and follow them)."""
    from swafuzz.targets.allocator import SWAAllocator
    from swafuzz.targets.engine import UnifiedEngine

    class Logging(SWAAllocator):
        log: list[list[int]] = []

        def extend(self, plan):
            out = super().extend(plan)
            self.log = self.log + [[f, int(self.mapping[f])] for new in out for f in new]
            return out

        def take_alloc_log(self):
            log, self.log = self.log, []
            return log

    class Observed(UnifiedEngine):
        allocator_cls = Logging
        allocation = "observed"

    obs = Observed(case).run()
    assert obs.error is None, obs.error
    return [so.alloc for so in obs.steps]


def test_observed_mode_follows_the_triggers_and_rejects_a_shared_page_as_fresh():
    from swafuzz.oracles.engine import AllocationRejected

    case = Case(pool=_pool(4), graph=GRAPH, steps=(
        Step("admit", rid=0, length=8), Step("admit", rid=1, length=5, prefix_rid=0,
                                              prefix_len=4),
        Step("verify", rids=(1,), accept=(1,)), Step("finish", rid=0),
        Step("admit", rid=2, length=1)))
    obs = _observed(case)
    assert obs[1] == [[expect(case).steps[1].requests[1][0][4], obs[1][0][1]]]  # 1 new token
    ok = expect(case, observed_alloc=obs)
    assert ok.steps[-1].requests == expect(case).steps[-1].requests
    # request 2 claims the first page (still held by request 1 after request 0 finished)
    shared_full = expect(case).steps[1].requests[1][0][0]
    bad = [list(s) for s in obs]
    bad[4] = [[shared_full, bad[4][0][1]]]
    with pytest.raises(AllocationRejected, match="was not free"):
        expect(case, observed_alloc=bad)
