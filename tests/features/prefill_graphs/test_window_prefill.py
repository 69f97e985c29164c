"""Issue 12: breakable prefill graphs under a request window (addendum §4 "Breakable prefill
graphs", §5 W3/W6/W7; the "Prefill graphs under a request window" section of
features/request_window/prefill_graphs/SEMANTICS.md).

What: the Case fields (``graph.prefill_buckets``, ``exec`` on ``admit`` / ``extend``) keep old
JSON unchanged and are validated with CaseErrors naming the field; the window oracle's graph
lane for a prefill graph (``min(S + 1, T)`` groups, padded workspace rows, padding never
committed, the capture's warm-up tags in slot 0, the padding-factor bucket rule) and its eager
lane; the graph use a graph executor must count; the engine model agrees with both lanes
(tape: graph; eager: every step eager) on a hand Case and on the ``prefill_graphs`` kind; each
prefill mutant is killed on the hand Case by the check it names and by that check alone
(leave-one-out) and only under the graph executor; the other window kinds do not reach them.
Reproduce: ``pytest tests/features/prefill_graphs/test_window_prefill.py``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.checks.registry import check_names
from swafuzz.features.request_window.prefill_graphs.oracle import expected_prefill_graph_use
from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step

EX = ["eager", "tape"]

POOL = PoolConfig(page_size=1, full_pages=60, swa_pages=60, window=4, layers=2,
                  request_window=6, window_slots=3, window_chunk=24)
HAND = Case(pool=POOL, graph=GraphConfig(buckets=(1,), prefill_buckets=(4, 8, 16)),
            steps=(Step("admit", rid=0, length=6, exec="graph"),
                   Step("admit", rid=1, length=3, exec="graph"),
                   Step("extend", rids=(0, 1), lengths=(3, 2), exec="graph"),
                   Step("decode", rids=(0, 1)),
                   Step("extend", rids=(1, 0), lengths=(1, 2), replay=(0,), exec="graph"),
                   Step("admit", rid=2, length=7, exec="graph"),
                   Step("extend", rids=(2,), lengths=(3,), exec="graph"),
                   Step("extend", rids=(2,), lengths=(1,), exec="graph"),
                   Step("finish", rid=1),
                   Step("admit", rid=3, length=2, exec="graph")),
            payload_seed=5, kind="prefill_graphs")
MUTANTS = {
    "prefill_graph_pad_rows_commit": "window",
    "prefill_graph_refresh_skipped": "window",
    "prefill_graph_layout_rebound": "window_graph",
}


# -- Case -----------------------------------------------------------------------------------
def test_json_round_trip_and_old_json_unchanged():
    assert Case.loads(HAND.dumps()) == HAND
    d = json.loads(HAND.dumps())
    assert d["graph"]["prefill_buckets"] == [4, 8, 16]
    assert d["steps"][0]["exec"] == "graph" and d["steps"][3] == {"op": "decode", "rids": [0, 1],
                                                                  "exec": "eager"}
    plain = Case(pool=POOL, steps=(Step("admit", rid=0, length=2),
                                   Step("extend", rids=(0,), lengths=(1,))))
    d = json.loads(plain.dumps())
    assert "prefill_buckets" not in d["graph"]
    assert all("exec" not in s for s in d["steps"])


@pytest.mark.parametrize("patch,field", [
    ({"graph": {"buckets": [1], "prefill_buckets": [8, 4]}}, "graph.prefill_buckets"),
    ({"graph": {"buckets": [1], "prefill_buckets": [0]}}, "graph.prefill_buckets[0]"),
    ({"steps": [{"op": "admit", "rid": 0, "length": 2, "exec": "cuda"}]}, "steps[0].exec"),
    ({"pool": {"request_window": 0}}, "steps[0].exec"),
    ({"pool": {"late_layer_start": 1}}, "steps[0].exec"),
])
def test_bad_input_names_the_field(patch, field):
    d = json.loads(HAND.dumps())
    for k, v in patch.items():
        d[k] = {**d[k], **v} if isinstance(v, dict) else v
    with pytest.raises(CaseError) as e:
        load_case(d)
    # (list items: _int_list names them "<list>[i].x", a pre-existing quirk for every list field)
    assert e.value.path.startswith(field), str(e.value)


def test_graph_admit_with_prefix_is_refused():
    d = json.loads(HAND.dumps())
    d["steps"][5] = {"op": "admit", "rid": 2, "length": 7, "prefix_rid": 0, "prefix_len": 4,
                     "exec": "graph"}
    with pytest.raises(CaseError, match=r"steps\[5\]\.exec"):
        load_case(d)


# -- oracle -----------------------------------------------------------------------------------
def test_oracle_graph_lane():
    w = expect(HAND).channel("request_window")
    f = {e.step: e for e in w.forwards}
    W, cap = 4, 6
    # admit of 6 rows in bucket 8: G = min(S + 1, 8) = 4 groups; rows 6, 7 are padding
    assert f[0].bucket == 8 and f[0].size == 4 * W + 8
    assert f[0].locs[0] == list(range(16, 24)) and f[0].runs == [(1, 0, 6)]
    assert f[0].commit == [True] * 6 + [False] * 2
    # admit of 3 rows in bucket 4: G = 4 (min(4, 4)); one padding row, not committed
    assert f[1].bucket == 4 and f[1].size == 4 * W + 4 and f[1].commit[-1] is False
    # encoder replay rows (positions 6..9 of request 0) folded in front of its new rows
    assert f[4].bucket == 8 and f[4].runs == [(2, 6, 1), (1, 6, 6)]
    # 2 rows: bucket 4 is <= 2 * 2; a 1-row extend would need bucket 4 > 2 * 1: eager
    assert f[7].bucket is None and f[9].bucket == 4
    # the eager lane runs every step eagerly: slot 0 untouched
    e = {x.step: x for x in w.eager.forwards}
    assert e[0].bucket is None and e[0].locs[0] == [W + k for k in range(6)]
    assert all(t == -1 for t in w.eager.steps[-1].tags[0][:cap])


def test_capture_warm_up_tags_slot_zero():
    w = expect(HAND).channel("request_window")
    tags = {s.step: s.tags for s in w.steps}
    # step 0 captures bucket 8 (positions 2..7 -> rows 2..5, 0, 1), step 1 bucket 4
    # (positions 0..3 -> rows 0..3), every layer alike
    for layer in range(POOL.layers):
        assert tags[0][layer][:6] == [6, 7, 2, 3, 4, 5]
        assert tags[1][layer][:6] == [0, 1, 2, 3, 4, 5]
        assert tags[6][layer][:6] == [0, 1, 2, 3, 4, 5]  # bucket 16 is never used


def test_graph_use_count():
    # graph steps with a bucket: 0, 1, 2, 4, 5, 6, 9 (7 replays), buckets 4 and 8; 2 layers
    assert expected_prefill_graph_use(HAND, True) == (14, 4)
    assert expected_prefill_graph_use(HAND, False) == (0, 0)


# -- engine model ---------------------------------------------------------------------------
@pytest.mark.parametrize("executors", [["eager"], ["tape"], EX])
def test_unified_passes_the_hand_case(executors):
    v = execute(HAND, "unified", "torch", executors)
    assert not v.failures, [f.message for f in v.failures]


def test_unified_agrees_with_the_oracle_on_prefill_graphs():
    @settings(max_examples=20, database=None, deadline=None)
    @given(features.strategy("prefill_graphs")())
    def prop(case):
        v = execute(case, "unified", "torch", EX)
        assert not v.failures, [f.message for f in v.failures]

    prop()


def test_the_kind_runs_graphs():
    """Most prefill_graphs Cases take at least one prefill graph (not all fall back eager)."""
    seen = []

    @settings(max_examples=20, database=None, deadline=None)
    @given(features.strategy("prefill_graphs")())
    def prop(case):
        seen.append(any(f.bucket for f in expect(case).channel("request_window").forwards))

    prop()
    assert sum(seen) >= len(seen) // 2


# -- mutants --------------------------------------------------------------------------------
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_each_mutant_is_killed_by_its_check_alone(mutant):
    check = MUTANTS[mutant]
    v = execute(HAND, f"mutant:{mutant}", "torch", EX, only={check})
    assert any(f.check == check for f in v.failures), [f.message for f in v.failures]
    assert all("/tape]" in f.message for f in v.failures)  # the eager executor runs no graph
    # history (W5 at use, issue12-w5) sees the same wrong ring rows through their tags
    v = execute(HAND, f"mutant:{mutant}", "torch", EX, only=set(check_names()) - {check, "history"})
    assert not v.failures, [f.message for f in v.failures]


def test_mutants_are_registered_with_their_kind_and_source():
    from swafuzz.targets.mutants import load_all

    ZOO = load_all()

    for m in MUTANTS:
        assert ZOO[m].kinds == ("prefill_graphs",)
        assert "addendum §4" in ZOO[m].source


def test_other_window_kinds_do_not_reach_these_mutants():
    from swafuzz.harness.zoo.matrix import search_kill

    for m in MUTANTS:
        v, _ = search_kill(f"mutant:{m}", ["request_window", "encoder_replay", "window_graphs"], 15, 0,
                     shrink=False, impl="torch", executors=EX, shrink_budget=5)
        assert v is None, m


def test_exec_path_counts_prefill_graph_replays():
    """The widened ``exec_path`` count (features.prefill_graphs.oracle.expected_prefill_graph_use) fails
    on a target that runs every prefill-graph step eagerly (an experiment, not a zoo mutant:
    ``window_graph`` sees the missing bucket too)."""
    from swafuzz.features.request_window.engine import WindowPath
    from swafuzz.targets import register
    from swafuzz.targets.engine import UnifiedEngine

    class _NoPrefill(WindowPath):
        prefill_runner_cls = None

    class PrefillGraphLess(UnifiedEngine):
        step_path_cls = _NoPrefill

    register("selftest:prefill_graph_less", PrefillGraphLess)
    v = execute(HAND, "selftest:prefill_graph_less", "torch", ["tape"], only={"exec_path"})
    assert [f.check for f in v.failures] == ["exec_path"], [f.message for f in v.failures]
    assert "replays" in v.failures[0].message or "captures" in v.failures[0].message
    v = execute(HAND, "selftest:prefill_graph_less", "torch", ["eager"])
    assert not v.failures  # the eager executor runs no graph: nothing to miss
