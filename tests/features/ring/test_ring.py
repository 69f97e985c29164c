"""The per-request SWA ring in the engine model (``features/ring/engine.py``) and its mutants
(``features/ring/mutants.py``): a hand Case with every ring forward runs clean on ``unified``
under eager and tape; each ring mutant fails it (or a smaller one) on the check named in its
table; the other scenario kinds never generate a ring pool, so only ``ring`` reaches them."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swafuzz import features
from swafuzz.harness.pipeline.execute import execute
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.targets import run_case

EXECUTORS = ["eager", "tape"]

FULL = Case(
    pool=PoolConfig(page_size=2, full_pages=16, swa_pages=4, window=3, swa_ring=4, req_slots=3),
    graph=GraphConfig(buckets=(1, 2, 4), topk=1, num_draft_tokens=2),
    steps=(Step("admit", rid=0, length=7), Step("admit", rid=1, length=2),
           Step("decode", rids=(0, 1), exec="graph"), Step("verify", rids=(1, 0), exec="graph"),
           Step("draft_extend", rids=(0, 1), accept=(2, 1), exec="graph"),
           Step("idle", tokens=3, exec="graph"), Step("idle", tokens=2, exec="eager"),
           Step("dp_decode", rids=(0,), rank_tokens=(3,), exec="eager"),
           Step("verify", rids=(1,), rank_tokens=(5,), exec="graph"),
           Step("dp_decode", rids=(1,), rank_tokens=(2,), exec="graph", dp_extend=True),
           Step("evict", rid=0), Step("finish", rid=1), Step("admit", rid=2, length=5),
           Step("decode", rids=(2, 0), exec="eager"), Step("finish", rid=0)),
    kind="ring")


# admit 4 with window 3: position 0 is skipped (-1); without the rule it lands in a fresh row
NOSKIP = Case(pool=PoolConfig(page_size=2, full_pages=4, swa_pages=1, window=3, swa_ring=4,
                              req_slots=1), steps=(Step("admit", rid=0, length=4),), kind="ring")


def test_unified_runs_the_ring_case_clean():
    v = execute(FULL, "unified", "torch", EXECUTORS)
    assert not v.failed, [f.message for f in v.failures]


def test_ring_state_exposed_after_every_step():
    obs = run_case(FULL, target="unified", impl="torch")
    assert obs.error is None
    first, last = obs.steps[1].channel("ring"), obs.steps[-1].channel("ring")
    assert first["slots"] == {0: 1, 1: 2} and first["free_slots"] == [3]
    assert first["swa_available"] == 1 * 4 and first["swa_paged_available"] == 8
    assert last["slots"] == {2: 2} and last["free_slots"] == [1, 3]
    assert all(v == 0 for v in obs.steps[-1].mapping[:-1])


@pytest.mark.parametrize("mutant,case,check", [
    ("ring_fallback_translate", FULL, "write_targets"),
    ("ring_accounting_drift", FULL, "invariants"),
    ("ring_no_mod", FULL, "contracts"),
    ("ring_slot_zero", FULL, "invariants"),
    ("ring_unguarded_store", FULL, "contracts"),
    ("ring_no_window_skip", FULL, "contracts"),  # rows p and p+R collide: refused
    ("ring_no_window_skip", NOSKIP, "write_targets"),
    ("ring_alloc_writes_mapping", NOSKIP, "invariants"),
])
def test_ring_mutant_killed(mutant, case, check):
    v = execute(case, f"mutant:{mutant}", "torch", EXECUTORS)
    assert v.failed
    assert check in {f.check for f in v.failures}, [f.message for f in v.failures]


@pytest.mark.parametrize("kind", [k for k in features.kind_names() if k not in ("ring", "ring_draft")])
def test_other_kinds_never_generate_a_ring(kind):
    @settings(max_examples=15, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draw(data):
        case = data.draw(features.strategy(kind)())
        assert case.pool.swa_ring == 0 and case.pool.req_slots == 0

    draw()


@settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(features.strategy("ring")())
def test_ring_kind_generates_valid_ring_cases(case):
    assert case.pool.swa_ring >= max(case.pool.window, case.pool.page_size)
    assert Case.loads(case.dumps()) == case
    v = execute(case, "unified", "torch", ["eager"])
    assert not v.failed, [f.message for f in v.failures]
