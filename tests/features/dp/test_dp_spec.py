"""DP attention on speculative forwards (issue 10, item 4; spec §5.4, §6): ``rank_tokens`` on
verify / draft_extend / draft_decode (MAX_LEN re-padding, out_cache_loc rebound after metadata
init, graph buckets over the padded batch) and ``dp_extend`` (the batch rewritten to EXTEND,
eager). ``mutant:dp_verify_not_rebound`` and ``mutant:dp_extend_replays_graph`` are reached only
by these steps. Reproduce: ``pytest tests/features/dp/test_dp_spec.py``.
"""

import dataclasses

import pytest

from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import CaseInfeasible, expect
from swafuzz.oracles.paths import expected_paths
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step

POOL = PoolConfig(full_pages=40, swa_pages=40, window=30)
GRAPH = GraphConfig(buckets=(1, 2, 4), topk=2, num_steps=2, num_draft_tokens=3)


def _case(ex: str) -> Case:
    return Case(pool=POOL, graph=GRAPH, kind="dp_spec", steps=(
        Step("admit", rid=0, length=3), Step("admit", rid=1, length=2),
        Step("verify", rids=(0,), exec=ex, rank_tokens=(7, 2)),
        Step("draft_extend", rids=(0, 1), accept=(2, 1), exec=ex, rank_tokens=(5,)),
        Step("draft_decode", rids=(1,), exec=ex, rank_tokens=(9,)),
        Step("verify", rids=(0, 1), exec=ex, rank_tokens=(1,)),
        Step("verify", rids=(1,), exec=ex, rank_tokens=(8,), dp_extend=True),
        Step("draft_extend", rids=(0,), accept=(1,), exec=ex, rank_tokens=(4,), dp_extend=True),
        Step("dp_decode", rids=(0,), exec=ex, rank_tokens=(3,), dp_extend=True),
        Step("verify", rids=(0,), exec=ex, rank_tokens=(2,)),
    ))


def _no_dp(case: Case) -> Case:
    return dataclasses.replace(case, steps=tuple(
        dataclasses.replace(s, rank_tokens=(3,) if s.op == "dp_decode" else (), dp_extend=False)
        for s in case.steps))


def test_round_trip_and_validation():
    c = _case("graph")
    assert Case.loads(c.dumps()) == c
    assert c.to_json()["steps"][6] == {"op": "verify", "rids": [1], "exec": "graph",
                                       "rank_tokens": [8], "dp_extend": True}
    bad = c.to_json()
    bad["steps"][2]["dp_extend"] = 1
    with pytest.raises(CaseError, match=r"steps\[2\]\.dp_extend"):
        load_case(bad)
    bad = c.to_json()
    del bad["steps"][6]["rank_tokens"]
    with pytest.raises(CaseError, match=r"steps\[6\]\.dp_extend: needs rank_tokens"):
        load_case(bad)
    bad = c.to_json()
    bad["steps"][4]["dp_extend"] = True  # draft_decode is never rewritten (spec §5.4 (3))
    with pytest.raises(CaseError, match=r"steps\[4\]\.dp_extend: unknown field"):
        load_case(bad)
    with pytest.raises(CaseInfeasible, match="dp_extend"):
        expect(Case(pool=POOL, graph=GRAPH, steps=(
            Step("admit", rid=0, length=1), Step("draft_decode", rids=(0,), dp_extend=True,
                                                 rank_tokens=(1,)))))


def test_paths_pad_to_whole_requests_and_rewrite_to_extend():
    eager = {(p.step, p.fwd): p for p in expected_paths(_case("graph"), graphs=False)}
    graph = {(p.step, p.fwd): p for p in expected_paths(_case("graph"), graphs=True)}
    # verify: own 3 rows, others 7 -> 9 rows (3 requests of 3); bucket 4 -> 12 rows
    assert (eager[2, 0].rows, eager[2, 0].n_real, eager[2, 0].pad_to) == (9, 3, 9)
    assert (graph[2, 0].exec, graph[2, 0].bucket, graph[2, 0].rows) == ("graph", 4, 12)
    # draft_extend: own 3 accepted rows, others 5 -> 5 rows (not rounded); bs 2 -> bucket 2
    assert (eager[3, 0].rows, graph[3, 0].bucket, graph[3, 0].rows) == (5, 2, 6)
    # draft_decode: width topk*steps = 4; own 4, others 9 -> 12 = 3 requests; step rows bs*topk
    assert (eager[4, 0].rows, eager[4, 0].n_real, graph[4, 0].bucket, graph[4, 0].rows) == \
        (6, 2, 4, 8)
    # own rows above every other rank: no padding beyond the batch itself
    assert (eager[5, 0].rows, graph[5, 0].rows) == (6, 6)
    for k in ((6, 0), (7, 0), (8, 0)):  # rewritten to EXTEND: eager whatever exec says
        assert (graph[k].exec, graph[k].mode) == ("eager", "EXTEND")
    assert (graph[6, 0].rows, graph[7, 0].rows, graph[8, 0].rows) == (9, 4, 3)


@pytest.mark.parametrize("ex", ["eager", "graph"])
def test_unified_pads_rebinds_and_rewrites(ex):
    assert not execute(_case(ex), "unified", "torch", ["eager", "tape"]).failures


@pytest.mark.parametrize("ex", ["eager", "graph"])
def test_dp_verify_not_rebound_is_reached_only_by_dp_on_verify(ex):
    target = "mutant:dp_verify_not_rebound"
    assert not execute(_no_dp(_case(ex)), target, "torch", ["eager", "tape"]).failures
    v = execute(_case(ex), target, "torch", ["eager", "tape"])
    assert {f.check for f in v.failures} == {"exec_path"}
    assert v.failures[0].step == 2 and "ran 3 rows, expected 9" in v.failures[0].message


def test_dp_extend_replays_graph_is_reached_only_by_the_rewrite():
    target = "mutant:dp_extend_replays_graph"
    assert not execute(_no_dp(_case("graph")), target, "torch", ["eager", "tape"]).failures
    assert not execute(_case("graph"), target, "torch", ["eager"]).failures  # no graphs: silent
    v = execute(_case("graph"), target, "torch", ["eager", "tape"])
    assert {f.check for f in v.failures} == {"exec_path"}
    assert v.failures[0].step == 6 and "ran graph, the Case determines eager" in \
        v.failures[0].message
