"""Issue 12 item 2: target verify (DSpark early metadata) and DP-padded EXTENDs under a request
window (features/request_window/dspark/SEMANTICS.md "DSpark target verify and DP-padded EXTEND under a request window").

What: the new Step field (``extend.rank_tokens``: JSON unchanged when unused, CaseError naming
the field) and what is infeasible; the oracle's predictions on hand-made Cases (one group and
one run per verified request, commits of draft rows, padding rows with their own workspace rows
and no commit, the workspace refusal); the engine model agrees with the oracle on both new
kinds; each new mutant is killed on a hand-made Case by the check named in its table, and the
window Cases of the other kinds do not reach it.
Reproduce: ``pytest tests/features/dspark/test_dspark.py``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.features.request_window.dspark.oracle import padded_layout
from swafuzz.harness.pipeline.execute import InvalidCase, execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step
from tests.features.request_window.test_window import HAND as WINDOW_HAND  # noqa: E402

EX = ["eager", "tape"]


def _pool(**kw):
    base = dict(page_size=1, full_pages=40, swa_pages=40, window=3, layers=1)
    base.update(kw)
    return PoolConfig(**base)


VERIFY = Case(pool=_pool(request_window=6, window_slots=2, window_chunk=12, layers=2),
              graph=GraphConfig(num_draft_tokens=3),
              steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=2),
                     Step("verify", rids=(0, 1), accept=(1, 3)), Step("decode", rids=(0, 1)),
                     Step("verify", rids=(1,)), Step("finish", rid=0),
                     Step("admit", rid=2, length=4), Step("verify", rids=(2, 1))),
              payload_seed=7, kind="dspark_verify")
VERIFY_P2 = Case(pool=_pool(page_size=2, request_window=5, window_slots=2, window_chunk=16),
                 graph=GraphConfig(num_draft_tokens=2),
                 steps=(Step("admit", rid=0, length=3), Step("verify", rids=(0,), accept=(1,)),
                        Step("extend", rids=(0,), lengths=(1,)),
                        Step("verify", rids=(0,), accept=(2,)), Step("evict", rid=0)),
                 payload_seed=8, kind="dspark_verify")
VERIFY_GRAPH = Case(pool=_pool(full_pages=60, swa_pages=60, layers=2, request_window=6,
                                window_slots=3, window_chunk=20),
                    graph=GraphConfig(num_draft_tokens=3, buckets=(1, 2)),
                    steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=2),
                           Step("verify", rids=(0, 1), exec="graph", accept=(1, 3)),
                           Step("decode", rids=(0, 1)), Step("verify", rids=(1,), exec="graph"),
                           Step("verify", rids=(1, 0), exec="graph"),
                           Step("admit", rid=2, length=3),
                           Step("verify", rids=(0, 1, 2), exec="graph")),
                    payload_seed=10, kind="dspark_verify_graph")
PADDED = Case(pool=_pool(request_window=4, window_slots=2, window_chunk=20),
              steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=2),
                     Step("extend", rids=(1, 0), lengths=(2, 1), replay=(1,), rank_tokens=(9,)),
                     Step("dp_decode", rids=(0, 1), rank_tokens=(4,), dp_extend=True),
                     Step("decode", rids=(0, 1))),
              payload_seed=9, kind="window_dp_extend")
PADDED_OVERFLOW = Case(pool=_pool(request_window=4, window_slots=1, window_chunk=2),
                       steps=(Step("admit", rid=0, length=2),
                              Step("extend", rids=(0,), lengths=(1,), rank_tokens=(6,))),
                       kind="window_dp_extend")
HAND = {"verify": VERIFY, "verify_p2": VERIFY_P2, "verify_graph": VERIFY_GRAPH, "padded": PADDED,
        "padded_overflow": PADDED_OVERFLOW}


# ----------------------------------------------------------------------------- Case
def test_json_unchanged_without_the_new_field():
    for c in WINDOW_HAND.values():
        assert "rank_tokens" not in json.dumps([s for s in c.to_json()["steps"]
                                                if s["op"] == "extend"])
    assert Case.loads(PADDED.dumps()) == PADDED and Case.loads(VERIFY.dumps()) == VERIFY
    assert json.loads(PADDED.dumps())["steps"][2] == {
        "op": "extend", "rids": [1, 0], "lengths": [2, 1], "replay": [1], "rank_tokens": [9]}


@pytest.mark.parametrize("patch, path", [
    (lambda d: d["steps"][2].update(rank_tokens=[]), "steps[2].rank_tokens"),
    (lambda d: d["steps"][2].update(rank_tokens=[1] * 8), "steps[2].rank_tokens"),
    (lambda d: d["steps"][2].update(rank_tokens=[-1]), "steps[2].rank_tokens"),
    (lambda d: d["steps"][2].update(rank_tokens="3"), "steps[2].rank_tokens"),
])
def test_malformed_rank_tokens_name_the_field(patch, path):
    d = json.loads(PADDED.dumps())
    patch(d)
    with pytest.raises(CaseError) as e:
        Case.from_json(d)
    assert e.value.path.startswith(path), e.value.path  # an entry's path: rank_tokens[k]...


@pytest.mark.parametrize("case, why", [
    (Case(pool=_pool(request_window=6, window_slots=2, window_chunk=9),
          graph=GraphConfig(num_draft_tokens=2, buckets=(2,)),
          steps=(Step("admit", rid=0, length=2), Step("verify", rids=(0,), exec="graph"))),
     "padded verify requests"),
    (Case(pool=_pool(request_window=3, window_slots=1, window_chunk=9),
          graph=GraphConfig(num_draft_tokens=4, buckets=(1,)),
          steps=(Step("admit", rid=0, length=2), Step("verify", rids=(0,), exec="graph"))),
     "ring capacity"),
    # found by sglang 0.5.23's own invariant (dsv41.swa_history_present): with cap 4 < W + T
    # the verify's committed draft row at position 4 overwrote position 0, still in the
    # next verify's window
    (Case(pool=_pool(window=4, request_window=4, window_slots=1, window_chunk=9),
          graph=GraphConfig(num_draft_tokens=2),
          steps=(Step("admit", rid=0, length=3), Step("verify", rids=(0,), accept=(1,)),
                 Step("verify", rids=(0,)))),
     "ring capacity >= window \\+ num_draft_tokens"),
    (Case(pool=_pool(request_window=6, window_slots=1, window_chunk=9),
          steps=(Step("admit", rid=0, length=2), Step("verify", rids=(0,), rank_tokens=(3,)))),
     "DP attention"),
    (Case(pool=_pool(late_layer_start=1, layers=2),
          steps=(Step("admit", rid=0, length=2),
                 Step("extend", rids=(0,), lengths=(1,), rank_tokens=(3,)))),
     "needs a request window"),
    (Case(pool=_pool(request_window=6, window_slots=1, window_chunk=9, late_layer_start=1,
                     layers=2),
          steps=(Step("admit", rid=0, length=2),
                 Step("extend", rids=(0,), lengths=(1,), rank_tokens=(3,)))),
     "late-layer tail"),
])
def test_infeasible_steps_are_refused_by_the_oracle(case, why):
    with pytest.raises(InvalidCase, match=why):
        execute(case, "unified", "torch", ["eager"])


# ----------------------------------------------------------------------------- oracle
def test_padded_layout_contract():
    # slot 1 positions 4..5 (one run), 3 padding rows; G 1, W 3, cap 4, zero row 12
    lay = padded_layout([(1, 4, 0), (1, 5, 0)], 3, 1, 3, 4, 12)
    assert lay.write_loc == [3, 4, 5, 6, 7] and lay.size == 8
    assert lay.runs == [(1, 4, 2)] and lay.commit == [True, True, False, False, False]
    assert lay.history_pos == [1, 2, 3] and lay.history_src == [5, 6, 7]


def test_oracle_predictions():
    w = expect(VERIFY).channel("request_window")
    f = {e.step: e for e in w.forwards}
    v = f[2]
    assert v.mode == "TARGET_VERIFY" and v.runs == [(1, 5, 3), (2, 2, 3)]
    assert v.locs[0] == list(range(6, 12)) and v.size == 12 and v.commit == [True] * 6
    cap = 6
    tags = w.steps[2].tags[0]
    # every draft row committed before the accept is known (rid 0 keeps 6 of 8 tokens)
    assert [tags[cap + q % cap] for q in (5, 6, 7)] == [5, 6, 7]
    assert tags[2 * cap + 2:2 * cap + 5] == [2, 3, 4]
    # the next decode of rid 0 (length 6 after the accept) overwrites position 6's ring row
    assert w.steps[3].tags[0][cap + 6 % cap] == 6 and w.steps[3].tags[0][cap + 7 % cap] == 7
    p = {e.step: e for e in expect(PADDED).channel("request_window").forwards}
    e = p[2]  # rid 1 replays 0..1 then 2..3, rid 0 writes 5; 9 - 5 = 4 padding rows
    assert e.runs == [(2, 0, 4), (1, 5, 1)] and e.size == 2 * 3 + 9
    assert e.locs[0] == list(range(6, 15)) and e.commit == [True] * 5 + [False] * 4
    d = p[3]  # dp_decode rewritten to EXTEND: 2 rows + 2 padding rows
    assert d.mode == "EXTEND" and d.runs == [(1, 6, 1), (2, 4, 1)] and d.locs[0] == [6, 7, 8, 9]
    assert d.commit == [True, True, False, False]
    assert expect(PADDED_OVERFLOW).channel("request_window").refused[0] == 1
    g = expect(VERIFY_GRAPH).channel("request_window")
    gf = {e.step: e for e in g.forwards}
    assert gf[2].bucket == 2 and gf[2].size == 2 * 3 + 6 and gf[4].bucket == 1
    assert g.steps[2].tags[0][1:4] == [1, 2, 3]  # bucket 2's capture warm-up: slot 0, 1..T
    ef = {e.step: e for e in g.eager.forwards}  # the eager executor's lane: no capture
    assert ef[2].bucket is None and g.eager.steps[2].tags[0][1:4] == [-1, -1, -1]
    assert [e.locs for e in ef.values()] == [e.locs for e in gf.values()]


@pytest.mark.parametrize("name", sorted(HAND))
def test_unified_passes_hand_cases(name):
    v = execute(HAND[name], "unified", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


@pytest.mark.parametrize("kind", ["dspark_verify", "dspark_verify_graph", "window_dp_extend"])
def test_unified_agrees_with_the_oracle_on_each_kind(kind):
    @settings(max_examples=15, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, "unified", "torch", EX)
        assert not v.failures, [f.message for f in v.failures]

    prop()


# ----------------------------------------------------------------------------- mutants
@pytest.mark.parametrize("mutant, case, checks", [
    ("verify_early_stamped_loc", VERIFY, {"window"}),
    ("verify_early_stamped_loc", VERIFY_P2, {"window"}),
    ("verify_group_per_row", VERIFY, {"error"}),  # its layout outgrows the workspace (A7)
    ("verify_group_per_row", VERIFY_P2, {"window"}),
    ("dp_extend_pad_joins_run", PADDED, {"window"}),
    ("verify_early_metadata_rebound", VERIFY_GRAPH, {"window"}),
])
def test_each_mutant_is_killed_by_its_check(mutant, case, checks):
    v = execute(case, f"mutant:{mutant}", "torch", EX)
    fired = {f.check for f in v.failures}
    assert checks <= fired, (fired, [f.message for f in v.failures])


def test_stamped_loc_writes_paged_slots_into_the_workspace():
    """Mutant 47: the window check sees the K rows at ``M[loc]`` instead of the workspace
    rows ``G * W + i`` (W1)."""
    v = execute(VERIFY, "mutant:verify_early_stamped_loc", "torch", ["eager"], only={"window"})
    assert any(f.check == "window" and "TARGET_VERIFY" in f.message and "(W1" in f.message
               for f in v.failures), [f.message for f in v.failures]


def test_rebound_early_metadata_shows_only_in_the_graph():
    """Mutant 50: the verify graph keeps the capture's layout; the eager executor (no graph)
    runs the same Case cleanly, the tape sees the capture state's slot-0 history and commits."""
    assert not execute(VERIFY_GRAPH, "mutant:verify_early_metadata_rebound", "torch",
                       ["eager"]).failures
    v = execute(VERIFY_GRAPH, "mutant:verify_early_metadata_rebound", "torch", ["tape"],
                only={"window"})
    assert any("tape" in f.message and "tags differ" in f.message for f in v.failures), [
        f.message for f in v.failures]


def test_padding_joined_to_the_last_run_shows_in_tags_and_ring():
    v = execute(PADDED, "mutant:dp_extend_pad_joins_run", "torch", ["eager"], only={"window"})
    msgs = [f.message for f in v.failures]
    assert any("after step 2" in m and "tags differ" in m for m in msgs), msgs


@pytest.mark.parametrize("mutant", ["verify_early_stamped_loc", "verify_group_per_row",
                                    "dp_extend_pad_joins_run", "verify_early_metadata_rebound"])
@pytest.mark.parametrize("name", sorted(WINDOW_HAND))
def test_other_window_cases_do_not_reach_the_mutants(mutant, name):
    v = execute(WINDOW_HAND[name], f"mutant:{mutant}", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


def test_sglang_0_5_12_adapter_refuses_the_new_kinds(monkeypatch):
    from swafuzz.targets import sglang as sg
    from swafuzz.targets.sglang.target import TARGET

    def refused(kinds):
        return [k for k in kinds if TARGET.supports(k)]

    monkeypatch.delenv(sg.ADAPTER_ENV, raising=False)
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.12")
    assert refused(["decode", "dspark_verify", "window_dp_extend"]) == [
        "dspark_verify", "window_dp_extend"]
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.23")
    assert refused(["dspark_verify", "window_dp_extend"]) == []
    assert refused(["dspark_verify_graph"]) == ["dspark_verify_graph"]  # unified
