"""Issue 12: DECODE graphs under a request window (addendum §3 I (window), §4 decode bucket,
§5 W6 graph half and W7, §6 A5).

What: the window oracle's graph lane (bucket padding with slot-0 rows, one group per row, the
capture's warm-up commit, IDLE replays committing slot 0 only) and its eager lane; the engine
model agrees with both lanes (tape executor: graph; eager executor: every step eager) on a hand
Case and on the ``window_graphs`` kind; each of the four graph mutants is killed on the hand
Case by the check its docstring names, and only that check is needed (leave-one-out); the
other window kinds do not reach them; the sglang target refuses the kind before 0.5.21.
Reproduce: ``pytest tests/features/window_graphs/test_window_graph.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.checks.registry import check_names
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

EX = ["eager", "tape"]

POOL = PoolConfig(page_size=1, full_pages=40, swa_pages=40, window=4, layers=1,
                  request_window=6, window_slots=3, window_chunk=12)
GRAPHS = Case(pool=POOL, graph=GraphConfig(buckets=(2, 4)),
              steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=6),
                     Step("admit", rid=2, length=3),
                     Step("decode", rids=(0, 1, 2), exec="graph"), Step("idle", tokens=2),
                     Step("decode", rids=(0, 1), exec="graph"), Step("idle", tokens=2),
                     Step("decode", rids=(2, 1), exec="graph"), Step("idle", tokens=2),
                     Step("idle", tokens=3, exec="graph"),
                     Step("decode", rids=(0,), exec="graph"),
                     Step("finish", rid=0), Step("dp_decode", rank_tokens=(2,), exec="graph"),
                     Step("decode", rids=(1,))),
              payload_seed=3, kind="window_graphs")
MUTANTS = {
    "window_graph_pad_repeats_last": "window",
    "window_graph_idle_keeps_batch": "window",
    "window_graph_layout_rebuilt": "window_graph",
    "window_graph_replay_keeps_prepared": "window",
}


def test_oracle_graph_lane():
    w = expect(GRAPHS).channel("request_window")
    f = {e.step: e for e in w.forwards}
    cap = 6
    # decode of 3 in bucket 4: one group per row, write_loc = 4 * W + i, a padded slot-0 run
    assert f[3].bucket == 4 and f[3].size == 4 * 4 + 4
    assert f[3].locs[0] == [16, 17, 18, 19]
    assert f[3].runs == [(1, 5, 1), (2, 6, 1), (3, 3, 1), (0, 0, 1)]
    assert f[4].bucket is None and f[4].locs[0] == [4, 5]  # eager IDLE: rows [W, W + n)
    # graph IDLE (3 rows, bucket 4): every row slot 0, position 0; commits slot-0 row 0 only
    assert f[9].bucket == 4 and f[9].runs == [(0, 0, 4)] and f[9].commit == [True] * 4
    steps = {s.step: s for s in w.steps}
    before, after = steps[8].tags[0], steps[9].tags[0]
    assert [q for q in range(len(after)) if after[q] != before[q]] == []  # row 0 already 0
    assert after[0] == 0 and all(t == -1 for t in after[1:cap])  # the capture's warm-up
    # the eager lane runs every step eagerly: no slot-0 commit ever
    e = {x.step: x for x in w.eager.forwards}
    assert e[3].bucket is None and e[3].locs[0] == [12, 13, 14]
    assert all(t == -1 for t in w.eager.steps[-1].tags[0][:cap])


@pytest.mark.parametrize("executors", [["eager"], ["tape"], EX])
def test_unified_passes_the_hand_case(executors):
    v = execute(GRAPHS, "unified", "torch", executors)
    assert not v.failures, [f.message for f in v.failures]


def test_unified_agrees_with_the_oracle_on_window_graphs():
    @settings(max_examples=20, database=None, deadline=None)
    @given(features.strategy("window_graphs")())
    def prop(case):
        v = execute(case, "unified", "torch", EX)
        assert not v.failures, [f.message for f in v.failures]

    prop()


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_each_mutant_is_killed_by_its_check_alone(mutant):
    check = MUTANTS[mutant]
    v = execute(GRAPHS, f"mutant:{mutant}", "torch", EX, only={check})
    assert any(f.check == check for f in v.failures), [f.message for f in v.failures]
    assert all("/tape]" in f.message for f in v.failures)  # the eager executor runs no graph
    v = execute(GRAPHS, f"mutant:{mutant}", "torch", EX, only=set(check_names()) - {check})
    assert not v.failures, [f.message for f in v.failures]


def test_other_window_kinds_do_not_reach_these_mutants():
    from swafuzz.harness.zoo.matrix import search_kill

    for m in [*MUTANTS, "window_dp_pad_dropped"]:
        v, _ = search_kill(f"mutant:{m}", ["request_window", "encoder_replay", "replay_tail"], 15, 0,
                     shrink=False, impl="torch", executors=EX, shrink_budget=5)
        assert v is None, m
    v, _ = search_kill("mutant:tail_encoder_floor", ["late_tail", "encoder_replay", "window_graphs"],
                 15, 0, shrink=False, impl="torch", executors=EX, shrink_budget=5)
    assert v is None


def test_sglang_drives_graph_window_cases_from_0_5_23():
    """The sglang target runs the kind on 0.5.23 (tests/features/window_graphs/test_sglang_window_graph.py);
    earlier releases refuse it (0.5.21 / 0.5.22 have the decode bucket but not the
    commit_packed_rows / registry code the adapter drives; 0.5.12 has no window)."""
    from swafuzz import features
    from swafuzz.targets.sglang import TABLE, release

    assert features.get("window_graphs").since_for("sglang", "window_graphs").release == "0.5.23"
    row = next(r for r in TABLE if r[0].startswith("DECODE graphs under a request window"))
    assert row[1:3] == ("absent", "real")
    try:
        import sglang  # noqa: F401
    except ImportError:
        pytest.skip("sglang is not installed in this venv")
    if release()[1] != "0.5.12":
        pytest.skip("the refusal is 0.5.12's")
    from swafuzz.harness.executors import get_executor
    from swafuzz.targets import TargetUnavailable, run_case

    with pytest.raises(TargetUnavailable, match="request window"):
        run_case(GRAPHS, target="sglang", impl="torch", executor=get_executor("tape"))


def test_a6_assign_copy_split_on_0_5_23():
    """Addendum §6 A6 on the release's own code (CPU): ``DSV4AttnMetadata.copy_`` refreshes the
    persistent ``request_window_layout`` in place (a copy field) but assigns
    ``swa_out_cache_loc``: afterwards the persistent metadata's ``swa_out_cache_loc`` is the
    temporary metadata's tensor, no longer the persistent layout's ``write_loc`` (which the
    resolver's W branch returns). Values are equal; objects differ. Characterisation, not a
    finding: the decode bucket (Raw metadata) never runs this copy, and no reader of
    ``core.swa_out_cache_loc`` under a window was found in 0.5.23's store path."""
    pytest.importorskip("sglang")
    import dataclasses

    import torch

    from swafuzz.targets.sglang.real import ADAPTER

    if ADAPTER != "0.5.23":
        pytest.skip("request window first in 0.5.21; the adapter for it is 0.5.23")
    from sglang.srt.layers.attention.deepseek_v4_backend import DSV4AttnMetadata
    from sglang.srt.mem_cache.dsv41_request_window import window_layout

    def meta(req, pos):
        m = object.__new__(DSV4AttnMetadata)
        for f in dataclasses.fields(DSV4AttnMetadata):
            object.__setattr__(m, f.name, None)
        for k in ("index_topk", "page_size", "cuda_int32_kwargs", "present_ratios",
                  "low_ratios"):
            object.__setattr__(m, k, 0)
        lay = window_layout(torch.tensor(req), torch.tensor(pos), zero_row=24, window=4,
                            capacity=6)
        object.__setattr__(m, "request_window_layout", lay)
        object.__setattr__(m, "swa_out_cache_loc", lay.write_loc)
        return m

    persistent = meta([0, 0], [0, 0])  # the capture state
    temp = meta([1, 2], [5, 7])  # the replay prep's fresh metadata
    keep = persistent.request_window_layout
    persistent.copy_(temp)
    assert persistent.request_window_layout is keep  # copy field: identity kept (W7)
    assert torch.equal(keep.write_loc, temp.request_window_layout.write_loc)
    assert persistent.swa_out_cache_loc is temp.swa_out_cache_loc  # assign field
    assert persistent.swa_out_cache_loc is not keep.write_loc  # A6: the alias is gone
    assert torch.equal(persistent.swa_out_cache_loc, keep.write_loc)  # values equal


# ----------------------------------------------------------------------------- replay + tail
REPLAY_TAIL = Case(pool=PoolConfig(page_size=1, full_pages=60, swa_pages=60, window=4, layers=3,
                                   request_window=6, window_slots=2, window_chunk=24,
                                   late_layer_start=1),
                   steps=(Step("admit", rid=0, length=8), Step("admit", rid=1, length=2),
                          Step("extend", rids=(0, 1), lengths=(1, 6), replay=(0, 1)),
                          Step("extend", rids=(1, 0), lengths=(2, 3), replay=(1,)),
                          Step("decode", rids=(0, 1))),
                   payload_seed=6, kind="replay_tail")


def test_replay_tail_oracle_and_unified():
    f = {e.step: e for e in expect(REPLAY_TAIL).channel("request_window").forwards}
    # rid 0 replays 4..7 and adds 8; rid 1 replays 0..1 and adds 2..7: tails of 4 rows each
    assert f[2].runs == [(1, 4, 5), (2, 0, 8)] and f[2].tail_lens == [4, 4]
    assert f[2].tail_layers == [1, 2]
    v = execute(REPLAY_TAIL, "unified", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


def test_replay_tail_kind_agrees():
    @settings(max_examples=15, database=None, deadline=None)
    @given(features.strategy("replay_tail")())
    def prop(case):
        v = execute(case, "unified", "torch", EX)
        assert not v.failures, [f.message for f in v.failures]

    prop()


def test_tail_encoder_floor_is_killed_by_window_alone():
    v = execute(REPLAY_TAIL, "mutant:tail_encoder_floor", "torch", EX, only={"window"})
    assert any("history row" in f.message for f in v.failures), [f.message for f in v.failures]
    v = execute(REPLAY_TAIL, "mutant:tail_encoder_floor", "torch", EX,
                only=set(check_names()) - {"window"})
    assert not v.failures, [f.message for f in v.failures]


def test_replay_tail_on_sglang_0_5_23():
    pytest.importorskip("sglang")
    from swafuzz.targets.sglang.real import ADAPTER

    if ADAPTER != "0.5.23":
        pytest.skip("the request window is driven on the 0.5.23 adapter only")
    v = execute(REPLAY_TAIL, "sglang", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


# ----------------------------------------------------------------------------- DP ranks
DP = Case(pool=PoolConfig(page_size=1, full_pages=40, swa_pages=40, window=4, layers=2,
                          request_window=6, window_slots=3, window_chunk=16),
          graph=GraphConfig(buckets=(2, 4)),
          steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=6),
                 Step("dp_decode", rids=(0,), rank_tokens=(3, 1)),
                 Step("dp_decode", rids=(1, 0), rank_tokens=(3,), exec="graph"),
                 Step("dp_decode", rids=(0, 1), rank_tokens=(0,)),
                 Step("decode", rids=(1,))),
          payload_seed=9, kind="window_graphs")


def test_dp_rank_with_requests_under_a_window():
    w = expect(DP).channel("request_window")
    f = {e.step: e for e in w.eager.forwards}
    # eager: 1 real row + 2 MAX_LEN padding rows of slot 0, one group per row
    assert f[2].locs[0] == [12, 13, 14] and f[2].runs == [(1, 5, 1), (0, 0, 2)]
    g = {e.step: e for e in w.forwards}
    assert g[3].bucket == 4 and g[3].runs == [(2, 6, 1), (1, 6, 1), (0, 0, 2)]
    assert w.eager.steps[2].tags[0][0] == 0  # the padding committed into slot 0
    v = execute(DP, "unified", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]
    v = execute(DP, "mutant:window_dp_pad_dropped", "torch", EX, only={"window"})
    assert any(f.step == 2 for f in v.failures), [f.message for f in v.failures]
    v = execute(DP, "mutant:window_dp_pad_dropped", "torch", EX,
                only=set(check_names()) - {"window"})
    assert not v.failures, [f.message for f in v.failures]


def test_dp_rank_with_requests_on_sglang_0_5_23():
    pytest.importorskip("sglang")
    from swafuzz.targets.sglang.real import ADAPTER

    if ADAPTER != "0.5.23":
        pytest.skip("the request window is driven on the 0.5.23 adapter only")
    v = execute(DP, "sglang", "torch", ["eager"])  # graph window steps: not driven on sglang
    assert not v.failures, [f.message for f in v.failures]


def test_exec_path_counts_window_graph_replays():
    """The widened exec_path (window DECODE-graph replays/captures, counted by the harness) fails
    when the window's graph steps run eagerly under the tape executor."""
    from swafuzz.features.request_window.engine import WindowPath
    from swafuzz.targets import register
    from swafuzz.targets.engine import UnifiedEngine

    class _Eager(WindowPath):
        graph_runner_cls = None

    class WindowGraphLess(UnifiedEngine):
        step_path_cls = _Eager

    register("test:window_graph_less", WindowGraphLess)
    v = execute(GRAPHS, "test:window_graph_less", "torch", ["tape"], only={"exec_path"})
    assert any("captures" in f.message and "replays" in f.message for f in v.failures), \
        [f.message for f in v.failures]
    v = execute(GRAPHS, "unified", "torch", ["tape"], only={"exec_path"})
    assert not v.failures
