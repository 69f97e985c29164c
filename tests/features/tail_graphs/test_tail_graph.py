"""Issue 12: the late-layer tail under graphs (row-bucket tail graphs, the prefill-graph tail's
capacity buffer, the IDLE DP rank in a tail graph; addendum §5 T1/T4, §6 A3/A9).

What: the Case fields (``graph.tail_buckets``, ``graph.tail_capacity``, ``Step.tail_exec``)
round-trip, stay out of older bundles' JSON and refuse bad values naming the field; ``unified``
is clean on hand-written Cases and on the ``tail_graphs`` kind (eager and tape); each mutant of
:mod:`features.tail_graphs.mutants` is killed on a hand-written Case by the checks named
here (``tail_graph_exit_keeps_tail`` by ``tail_graph`` alone, leave-one-out), and none of them
is reached by the other kinds that run the V4.1 path; the sglang 0.5.23 target runs the kind
(release's enter/exit of the tail) and 0.5.12 refuses it.
Reproduce: ``pytest tests/features/tail_graphs/test_tail_graph.py``.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings

from swafuzz import features
from swafuzz.checks.registry import check_names
from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, Step

EX = ["eager", "tape"]
POOL = {"page_size": 1, "full_pages": 40, "swa_pages": 40, "window": 3, "layers": 3,
        "draft_layers": 1, "row_width": 4, "row_dtype": "uint8", "late_layer_start": 1}
PAGED = {"version": 1, "kind": "custom", "pool": POOL,
         "graph": {"buckets": [1], "tail_buckets": [3, 6], "tail_capacity": 9},
         "payload_seed": 5,
         "steps": [{"op": "admit", "rid": 0, "length": 7}, {"op": "admit", "rid": 1, "length": 2},
                   {"op": "extend", "rids": [0, 1], "lengths": [5, 4], "tail_exec": "prefill"},
                   {"op": "extend", "rids": [1], "lengths": [2], "tail_exec": "prefill"},
                   {"op": "extend", "rids": [0, 1], "lengths": [1, 5], "tail_exec": "bucket"},
                   {"op": "decode", "rids": [0, 1], "exec": "eager"},
                   {"op": "extend", "rids": [0], "lengths": [1], "tail_exec": "bucket",
                    "rank_tokens": [5, 0]}]}
WINDOW = {"version": 1, "kind": "custom",
          "pool": dict(POOL, request_window=4, window_slots=2, window_chunk=20),
          "graph": {"buckets": [1], "tail_buckets": [3, 6], "topk": 1}, "payload_seed": 5,
          "steps": [{"op": "admit", "rid": 0, "length": 7},
                    {"op": "admit", "rid": 1, "length": 2},
                    {"op": "extend", "rids": [0, 1], "lengths": [5, 4], "tail_exec": "bucket"},
                    {"op": "dp_decode", "rids": [], "rank_tokens": [2], "exec": "eager",
                     "tail_exec": "bucket"},
                    {"op": "extend", "rids": [1], "lengths": [1], "tail_exec": "bucket"},
                    {"op": "decode", "rids": [0, 1], "exec": "eager"}]}


def _case(d) -> Case:
    return Case.from_json(json.loads(json.dumps(d)))


def _fired(v) -> list[str]:
    return sorted({f.check for f in v.failures})


# ----------------------------------------------------------------------------- Case fields
def test_fields_round_trip_and_stay_out_of_old_json():
    for d in (PAGED, WINDOW):
        c = _case(d)
        assert Case.loads(c.dumps()) == c
    j = Case(graph=GraphConfig(), steps=(Step("extend", rids=(0,), lengths=(1,)),)).to_json()
    assert "tail_buckets" not in j["graph"] and "tail_capacity" not in j["graph"]
    assert "tail_exec" not in j["steps"][0]
    c = _case(PAGED)
    assert c.graph.tail_buckets == (3, 6) and c.graph.tail_capacity == 9
    assert c.to_json()["steps"][2]["tail_exec"] == "prefill"


def _bad(path_edit, field: str, words: str):
    d = json.loads(json.dumps(PAGED))
    path_edit(d)
    with pytest.raises(CaseError) as e:
        load_case(d)
    assert e.value.path == field and words in str(e.value), str(e.value)


def test_bad_fields_name_the_field():
    def ex(k, v, i=2):
        return lambda d: d["steps"][i].__setitem__(k, v)

    _bad(ex("tail_exec", "graph"), "steps[2].tail_exec", "bucket, prefill")
    _bad(lambda d: d["graph"].__setitem__("tail_buckets", [6, 3]), "graph.tail_buckets",
         "strictly increasing")
    _bad(lambda d: d["graph"].__setitem__("tail_buckets", [0]), "graph.tail_buckets", "1..")
    _bad(lambda d: d["graph"].__setitem__("tail_capacity", -1), "graph.tail_capacity", "0..")
    _bad(lambda d: d["graph"].pop("tail_capacity"), "steps[2].tail_exec", "tail_capacity")
    _bad(lambda d: d["graph"].pop("tail_buckets"), "steps[4].tail_exec", "tail_buckets")
    _bad(lambda d: d["pool"].pop("late_layer_start"), "steps[2].tail_exec", "late_layer_start")
    _bad(ex("tail_exec", "bucket", 0), "steps[0].tail_exec", "unknown field")  # not on admit
    _bad(ex("rank_tokens", [1], 3), "steps[3].rank_tokens", "tail_exec")  # prefill: no DP
    _bad(ex("rank_tokens", [], 4), "steps[4].rank_tokens", "1..7")
    d = json.loads(json.dumps(WINDOW))
    d["steps"][2]["tail_exec"] = "prefill"
    with pytest.raises(CaseError, match="paged pool"):
        load_case(d)
    d = json.loads(json.dumps(WINDOW))
    d["steps"][3]["rids"] = [0]
    with pytest.raises(CaseError, match="IDLE rank"):
        load_case(d)


# ----------------------------------------------------------------------------- unified
@pytest.mark.parametrize("d", [PAGED, WINDOW], ids=["paged", "window"])
def test_unified_clean(d):
    v = execute(_case(d), "unified", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


def test_unified_clean_on_the_kind():
    @settings(max_examples=25, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(features.strategy("tail_graphs")())
    def prop(case):
        v = execute(case, "unified", "torch", EX)
        assert not v.failures, [f.message for f in v.failures]

    prop()


def test_observation_carries_the_tail_graph():
    from swafuzz.oracles.engine import expect
    from swafuzz.targets import get_target

    c = _case(PAGED)
    exp = expect(c)
    tg = exp.channel("request_window").tail_graph
    assert [(e.step, e.exec, e.bucket, e.real_rows, e.capacity) for e in tg] == [
        (2, "prefill", None, 6, 9), (3, "prefill", None, 2, 9), (4, "bucket", 6, 4, 0),
        (6, "bucket", 6, 1, 0)]  # a DP rank: its 1 tail row replays the peer's bucket
    obs = get_target("unified")(c, impl="torch").run()
    by = {f.step: f for f in obs.channel("request_window").forwards}
    assert by[3].stores[1].locs[2:] == [0] * 7 and by[3].stores[1].rows == 9
    assert by[4].tail_graph["bucket"] == 6 and by[4].stores[2].rows == 4
    assert by[4].tail_graph["probe_count"] == 6 and len(by[4].tail_graph["probe_locs"]) == 6
    assert by[6].tail_graph["bucket"] == 6 and by[6].stores[2].rows == 1


# ----------------------------------------------------------------------------- mutants
@pytest.mark.parametrize("mutant,case,checks", [
    ("tail_graph_k_bucket_rows", PAGED, ["contracts"]),
    ("tail_capacity_not_zeroed", PAGED, ["pool_bytes", "tail", "tail_graph", "write_set"]),
    ("tail_graph_exit_keeps_tail", PAGED, ["tail_graph"]),
    ("tail_graph_exit_keeps_tail", WINDOW, ["tail_graph"]),
    ("tail_graph_idle_relabelled", WINDOW, ["window"]),
    ("tail_graph_dp_own_bucket", PAGED, ["tail_graph"]),
])
def test_mutant_killed(mutant, case, checks):
    v = execute(_case(case), f"mutant:{mutant}", "torch", EX)
    assert _fired(v) == checks, [f.message for f in v.failures]


def test_prefill_graph_block_is_captured_once_and_replayed():
    from swafuzz.features.request_window.tail_graphs.oracle import expected_tail_graph_use
    from swafuzz.harness.executors.base import CountingExecutor
    from swafuzz.harness.executors.tape import TapeExecutor
    from swafuzz.targets import get_target

    c = _case(PAGED)
    ex = CountingExecutor(TapeExecutor())
    obs = get_target("unified")(c, impl="torch", executor=ex).run()
    assert obs.error is None and ex.counts() == {"captures": 1, "replays": 2}
    assert expected_tail_graph_use(c, True) == (2, 1) and expected_tail_graph_use(c, False) == (0, 0)


def test_rebound_buffer_is_graph_only():
    """A location buffer rebound per forward: eager is right, the captured block reads the
    buffer it captured (capture_freeze attributes it)."""
    c = _case(PAGED)
    assert not execute(c, "mutant:tail_prefill_buffer_rebound", "torch", ["eager"]).failures
    v = execute(c, "mutant:tail_prefill_buffer_rebound", "torch", EX)
    assert {"capture_freeze", "agreement", "tail", "tail_graph"} <= set(_fired(v)), _fired(v)


def test_t4_is_seen_by_tail_graph_alone():
    c = _case(PAGED)
    v = execute(c, "mutant:tail_graph_exit_keeps_tail", "torch", EX,
                only=set(check_names()) - {"tail_graph"})
    assert not v.failures, [f.message for f in v.failures]
    (f, *_) = execute(c, "mutant:tail_graph_exit_keeps_tail", "torch", EX).failures
    assert "T4" in f.message and f.step == 2


def test_capacity_mutant_names_the_stale_row():
    v = execute(_case(PAGED), "mutant:tail_capacity_not_zeroed", "torch", ["eager"])
    (f,) = [f for f in v.failures if f.check == "tail_graph"]
    assert "past real_rows_count = 2" in f.message and f.slot_class == "stale"


OTHER_WINDOW_KINDS = ("late_tail", "replay_tail", "request_window", "encoder_replay")


@pytest.mark.parametrize("mutant", ["tail_graph_k_bucket_rows", "tail_capacity_not_zeroed",
                                    "tail_graph_exit_keeps_tail", "tail_graph_idle_relabelled",
                                    "tail_graph_dp_own_bucket", "tail_prefill_buffer_rebound"])
def test_mutants_not_reached_by_other_kinds(mutant):
    """The other kinds that run the V4.1 path never set ``tail_exec``: the mutants behave as
    ``unified`` there (the remaining kinds never build the path at all)."""
    for kind in OTHER_WINDOW_KINDS:
        @settings(max_examples=8, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(features.strategy(kind)())
        def prop(case):
            assert not any(s.tail_exec for s in case.steps)
            v = execute(case, f"mutant:{mutant}", "torch", EX)
            assert not v.failures, (case.kind, [f.message for f in v.failures])

        prop()


# ----------------------------------------------------------------------------- sglang
def test_sglang_release_table():
    from swafuzz import features
    from swafuzz.targets.sglang import TABLE

    # the prefill-graph tail is 0.5.22's, but the adapter drives 0.5.23's seams (measured: 0.5.22
    # fails on the compressor flags), so the kind starts at 0.5.23
    assert features.get("tail_graphs").since_for("sglang", "tail_graphs").release == "0.5.23"
    rows = [r for r in TABLE if r[0].startswith("late-layer tail under graphs")]
    assert [r[2] for r in rows] == ["real", "modelled"]


@pytest.mark.parametrize("d", [PAGED, WINDOW], ids=["paged", "window"])
def test_sglang_0523_runs_the_release_enter_exit(d):
    pytest.importorskip("sglang")
    from swafuzz.targets.sglang.real import ADAPTER

    if ADAPTER != "0.5.23":
        pytest.skip("the 0.5.23 adapter drives the tail")
    from swafuzz.features.request_window.tail_graphs.sglang import SGLangTailGraphPath

    v = execute(_case(d), "sglang", "torch", ["eager"])
    assert not v.failures, [f.message for f in v.failures]

    class _NoExit(SGLangTailGraphPath):
        def exit_graph_tail(self, saved, fb):
            pass

    from swafuzz.targets.sglang.engine import SGLangEngine

    class _Engine(SGLangEngine):
        step_path_cls = _NoExit

    from swafuzz.targets import register

    register("test:sglang_no_exit", _Engine)
    v = execute(_case(d), "test:sglang_no_exit", "torch", ["eager"])
    assert _fired(v) == ["tail_graph"], [f.message for f in v.failures]
