"""The prepared-metadata checks (issue 18, item 6): ``prepared`` (core: the full locations the
metadata was built from and the stamped SWA locations) and ``loc_buffer`` (the draft-extend
buffer's refill), on the ``unified`` engine and its mutants. Each check is seen failing on a
mutant no other check kills, and on hand-altered observations; the control passes."""

from __future__ import annotations

import copy

import pytest

from swafuzz.checks.prep import check_prepared
from swafuzz.features.draft_extend_buffer.checks import check_loc_buffer
from swafuzz.harness.executors import get_executor
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.targets import run_case

EX = ["eager", "tape"]
POOL = PoolConfig(page_size=1, full_pages=8, swa_pages=10, window=4)

#: graph draft-extends in buckets 4, 2 and 1 with the buffer (the zoo's shrunk killing Case of
#: draft_extend_buffer_tail_unzeroed, one page larger), then an eager one
BUFFER = Case(
    pool=POOL, kind="draft_extend_buffer",
    graph=GraphConfig(buckets=(1, 2, 4, 8), draft_extend_buffer=True),
    steps=(Step("admit", rid=0, length=1), Step("admit", rid=1, length=1),
           Step("admit", rid=2, length=1),
           Step("draft_extend", rids=(0, 1, 2), accept=(1, 1, 1), exec="graph"),
           Step("draft_extend", rids=(0, 1), accept=(1, 1), exec="graph"),
           Step("draft_extend", rids=(0,), accept=(1,), exec="graph"),
           Step("draft_extend", rids=(1,), accept=(1,))))

#: two graph decodes of one bucket (the second replay finds the first one's stamp)
DECODE = Case(pool=POOL, kind="decode", steps=(
    Step("admit", rid=0, length=2), Step("decode", rids=(0,), exec="graph"),
    Step("decode", rids=(0,), exec="graph")))

#: a decode graph of bucket 2 with two requests, then with one (the padded request's length)
PADDED = Case(pool=POOL, kind="decode", graph=GraphConfig(buckets=(2,)), steps=(
    Step("admit", rid=0, length=2), Step("admit", rid=1, length=3),
    Step("decode", rids=(0, 1), exec="graph"), Step("decode", rids=(0,), exec="graph")))

#: multi-step draft decode, eager then graph: each step's metadata is built from the whole batch
MULTI = Case(
    pool=PoolConfig(page_size=2, full_pages=24, swa_pages=24, window=12), kind="multi_step_draft",
    graph=GraphConfig(buckets=(1, 2), topk=2, num_steps=3, num_draft_tokens=2),
    steps=(Step("admit", rid=0, length=3), Step("admit", rid=1, length=2),
           Step("draft_decode", rids=(0, 1)), Step("draft_decode", rids=(1, 0), exec="graph")))


def _fired(case, target="unified") -> set[str]:
    return {f.check for f in execute(case, target, "torch", EX).failures}


@pytest.mark.parametrize("case", [BUFFER, DECODE, PADDED, MULTI],
                         ids=["buffer", "decode", "padded", "multi"])
def test_the_control_prepares_what_the_oracle_predicts(case):
    assert _fired(case) == set()


def test_every_forward_records_what_its_preparation_built():
    obs = run_case(BUFFER, "unified", "torch", executor=get_executor("tape", "cpu"))
    graph = [f for f in obs.forwards if f.exec == "graph"]
    assert [len(f.prepared["out_loc"]) for f in graph] == [4, 2, 1]  # padded to the bucket
    assert [len(f.prepared["swa_loc"]) for f in graph] == [3, 2, 1]  # the live rows' stamp
    assert all(len(f.prepared["loc_buffer"]) == 8 for f in graph)
    assert graph[1].prepared["loc_buffer"][2:] == [0] * 6
    eager = obs.forwards[-1]
    assert eager.exec == "eager" and "loc_buffer" not in eager.prepared  # not the buffer's view


def test_a_padded_graph_prepares_the_fill_value_for_its_padded_request():
    obs = run_case(PADDED, "unified", "torch", executor=get_executor("tape", "cpu"))
    last = obs.forwards[-1]
    assert last.exec == "graph" and last.prepared["seq_lens"] == [4, 1]
    assert last.prepared["positions"][:1] == [3] and last.prepared["out_loc"][1] == 0
    bad = copy.deepcopy(obs)
    bad.forwards[-1].prepared["seq_lens"][1] = 4  # the larger batch's request 1
    fails = check_prepared(PADDED, bad, expect(PADDED))
    assert [f.slot_class for f in fails] == ["seq-lens"]
    assert "request 1 (padded) expected 1, got 4" in fails[0].message


def test_a_multi_step_step_is_prepared_from_the_whole_batch():
    obs = run_case(MULTI, "unified", "torch", executor=get_executor("tape", "cpu"))
    exp = expect(MULTI)
    for o, e in zip(obs.forwards[2:], exp.forwards[2:]):
        assert e.prep_locs is not None and len(e.prep_locs) == 2 * 2 * 3
        assert o.prepared["out_loc"][:12] == e.prep_locs


@pytest.mark.parametrize("name, case, check", [
    ("draft_extend_prep_drops_live_loc", BUFFER, "prepared"),
    ("graph_swa_loc_kept", DECODE, "prepared"),
    ("graph_pad_seq_lens_stale", PADDED, "prepared"),
    ("draft_extend_buffer_tail_unzeroed", BUFFER, "loc_buffer"),
])
def test_each_latent_mutant_is_seen_only_by_its_check(name, case, check):
    assert _fired(case, f"mutant:{name}") == {check}


def test_the_latent_prep_mutant_without_the_buffer_is_still_seen():
    """Without the buffer the stores resolve through the live fallback: still only prepared."""
    plain = Case(pool=POOL, kind="draft_extend", graph=GraphConfig(buckets=(1, 2)),
                 steps=BUFFER.steps[:2] + (
                     Step("draft_extend", rids=(0, 1), accept=(1, 1), exec="graph"),))
    assert _fired(plain) == set()
    assert _fired(plain, "mutant:draft_extend_prep_drops_live_loc") == {"prepared"}


def _observed(case):
    obs = run_case(case, "unified", "torch", executor=get_executor("tape", "cpu"))
    return obs, expect(case, observed_alloc=None)


@pytest.mark.parametrize("key, row, value, cls", [
    ("out_loc", 0, 0, "out-loc"),  # a real row dropped
    ("out_loc", 3, 5, "out-loc"),  # a padded row not 0
    ("swa_loc", 1, 0, "swa-loc"),
    ("positions", 1, 7, "positions"),
])
def test_prepared_names_the_first_differing_row(key, row, value, cls):
    obs, exp = _observed(BUFFER)
    assert check_prepared(BUFFER, obs, exp) == []
    bad = copy.deepcopy(obs)
    f = next(f for f in bad.forwards if f.exec == "graph")
    f.prepared[key][row] = value
    fails = check_prepared(BUFFER, bad, exp)
    assert len(fails) == 1 and fails[0].slot_class == cls and fails[0].step == f.step
    assert f"row {row} ({'real' if row < f.n_real else 'padded'})" in fails[0].message


def test_prepared_reports_missing_real_rows_and_judges_no_absent_stamp():
    obs, exp = _observed(BUFFER)
    bad = copy.deepcopy(obs)
    f = next(f for f in bad.forwards if f.exec == "graph")
    f.prepared["swa_loc"] = f.prepared["swa_loc"][:1]
    fails = check_prepared(BUFFER, bad, exp)
    assert len(fails) == 1 and "row 1 (real)" in fails[0].message
    assert fails[0].message.endswith("got missing")
    del f.prepared["swa_loc"]  # a path that stamps nothing is not judged on the stamp
    assert check_prepared(BUFFER, bad, exp) == []


def test_loc_buffer_judges_the_whole_refilled_buffer():
    obs, exp = _observed(BUFFER)
    assert check_loc_buffer(BUFFER, obs, exp) == []
    bad = copy.deepcopy(obs)
    f = [f for f in bad.forwards if f.exec == "graph"][2]
    f.prepared["loc_buffer"][7] = 3
    fails = check_loc_buffer(BUFFER, bad, exp)
    assert len(fails) == 1 and fails[0].slot_class == "buffer-tail"
    assert "entry 7 (past the real rows) expected 0, got 3" in fails[0].message
