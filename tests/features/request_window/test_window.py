"""Issue 12: the request window, encoder replay and late-layer tail (addendum §2.2-§2.4).

What: the Case fields and the ``extend`` step (JSON unchanged when unused, CaseError naming the
field); the window oracle's predictions on hand-made Cases (workspace rows ``G * W + i``,
commit mask, tags, tail rows, the workspace refusal); the engine model and the oracle agree on
every new scenario kind; each window-path mutant is killed on a hand-made Case by the check its
docstring names, and the kinds that do not reach it leave it alone.
Reproduce: ``pytest tests/features/request_window/test_window.py``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.features.request_window.oracle_layout import layout
from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step

EX = ["eager", "tape"]


def _pool(**kw):
    base = dict(page_size=1, full_pages=40, swa_pages=40, window=4, layers=1)
    base.update(kw)
    return PoolConfig(**base)


WINDOW = Case(pool=_pool(request_window=6, window_slots=2, window_chunk=6, layers=2),
              graph=GraphConfig(topk=1),
              steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=6),
                     Step("extend", rids=(0, 1), lengths=(2, 1)), Step("decode", rids=(0, 1)),
                     Step("idle", tokens=2), Step("finish", rid=0),
                     Step("dp_decode", rank_tokens=(3,)), Step("admit", rid=2, length=9)),
              payload_seed=3, kind="request_window")
TAIL_PAGED = Case(pool=_pool(page_size=2, layers=3, late_layer_start=1),
                  steps=(Step("admit", rid=0, length=7), Step("admit", rid=1, length=3),
                         Step("extend", rids=(0, 1), lengths=(2, 6)),
                         Step("decode", rids=(0, 1)), Step("evict", rid=0)),
                  payload_seed=4, kind="late_tail")
TAIL_WINDOW = Case(pool=_pool(request_window=6, window_slots=2, window_chunk=8, layers=2,
                              late_layer_start=1),
                   steps=(Step("admit", rid=0, length=7), Step("admit", rid=1, length=2),
                          Step("extend", rids=(1, 0), lengths=(6, 1))),
                   payload_seed=5, kind="late_tail")
REPLAY = Case(pool=_pool(request_window=6, window_slots=2, window_chunk=12),
              steps=(Step("admit", rid=0, length=8), Step("admit", rid=1, length=2),
                     Step("extend", rids=(0, 1), lengths=(1, 2), replay=(0, 1)),
                     Step("decode", rids=(0,))),
              payload_seed=6, kind="encoder_replay")
OVERFLOW = Case(pool=_pool(request_window=4, window_slots=1),
                steps=(Step("admit", rid=0, length=3), Step("extend", rids=(0,), lengths=(5,))),
                kind="request_window")
HAND = {"window": WINDOW, "tail_paged": TAIL_PAGED, "tail_window": TAIL_WINDOW,
        "replay": REPLAY, "overflow": OVERFLOW}


# ----------------------------------------------------------------------------- Case
def test_json_unchanged_without_the_new_fields():
    d = Case(steps=(Step("admit", rid=0, length=1),)).to_json()
    assert not {"request_window", "window_slots", "window_chunk", "late_layer_start"} & set(
        d["pool"])
    assert Case.loads(WINDOW.dumps()) == WINDOW and Case.loads(REPLAY.dumps()) == REPLAY
    assert json.loads(REPLAY.dumps())["steps"][2] == {"op": "extend", "rids": [0, 1],
                                                      "lengths": [1, 2], "replay": [0, 1]}


@pytest.mark.parametrize("patch, path", [
    (lambda d: d["pool"].pop("window_slots"), "pool.window_slots"),
    (lambda d: d["pool"].update(late_layer_start=2), "pool.late_layer_start"),
    (lambda d: d["steps"][2].update(lengths=[1]), "steps[2].lengths"),
    (lambda d: d["steps"][2].update(replay=[5]), "steps[2].replay"),
    # exec "graph" on extend is valid under a window since the prefill graphs (issue 12,
    # tests/features/prefill_graphs/test_window_prefill.py); other values are not
    (lambda d: d["steps"][2].update(exec="fast"), "steps[2].exec"),
])
def test_malformed_fields_name_the_field(patch, path):
    d = json.loads(REPLAY.dumps())
    patch(d)
    with pytest.raises(CaseError) as e:
        load_case(d)
    assert e.value.path == path


# ----------------------------------------------------------------------------- oracle
def test_layout_contract():
    # two runs: slot 1 positions 5..7, slot 2 positions 0..1; W 4, cap 4, zero row 12
    lay = layout([(1, 5, 0)] * 0 + [(1, 5, 0), (1, 6, 0), (1, 7, 0), (2, 0, 0), (2, 1, 0)],
                 2, 4, 4, 12)
    assert lay.write_loc == [8, 9, 10, 11, 12] and lay.size == 13
    assert lay.history_pos[:4] == [1, 2, 3, 4] and lay.history_src[:4] == [5, 6, 7, 4]
    assert lay.history_valid[4:] == [False] * 4 and lay.history_src[4:] == [12] * 4
    assert lay.commit == [True] * 5
    long = layout([(1, p, 2) for p in range(6)], 1, 4, 4, 12)
    assert long.commit == [False, False, True, True, True, True]
    assert long.history_valid == [False] * 4  # positions -4..-1


def test_oracle_predictions():
    w = expect(WINDOW).channel("request_window")
    f = {e.step: e for e in w.forwards}
    assert f[2].locs[0] == [8 + i for i in range(2 + 1)]  # G = 2 requests, W = 4
    assert f[4].mode == "IDLE" and f[4].locs[0] == [4, 5]  # idle layout: [W, W + n)
    assert f[6].locs[0] == [4, 5, 6]  # an idle DP rank pads to 3 rows
    last = w.steps[-1]
    cap = 6
    assert last.tags[0][1 * cap + 7 % cap] == 7  # rid 0 (slot 1) position 7 committed
    assert last.tags[0][2 * cap:3 * cap] == [6, 7, 2, 3, 4, 5]  # rid 1 (slot 2): 6 + 1 + 1
    # rid 2 took the slot rid 0 freed (1), reset it, and committed its last 6 positions
    assert last.tags[1][cap:2 * cap] == [6, 7, 8, 3, 4, 5]
    t = {e.step: e for e in expect(TAIL_PAGED).channel("request_window").forwards}
    assert t[2].tail_layers == [1, 2] and t[2].tail_lens == [2, 4] and len(t[2].locs[1]) == 6
    r = {e.step: e for e in expect(REPLAY).channel("request_window").forwards}
    assert r[2].runs == [(1, 4, 5), (2, 0, 4)]  # rid 0 replays 4..7, rid 1 replays 0..1
    assert expect(OVERFLOW).channel("request_window").refused[0] == 1


@pytest.mark.parametrize("name", sorted(HAND))
def test_unified_passes_hand_cases(name):
    v = execute(HAND[name], "unified", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


@pytest.mark.parametrize("kind", ["request_window", "late_tail", "encoder_replay"])
def test_unified_agrees_with_the_oracle_on_each_kind(kind):
    @settings(max_examples=15, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, "unified", "torch", EX)
        assert not v.failures, [f.message for f in v.failures]

    prop()


# ----------------------------------------------------------------------------- mutants
@pytest.mark.parametrize("mutant, case, checks", [
    ("window_before_idle", WINDOW, {"window"}),
    ("workspace_overflow_unchecked", OVERFLOW, {"window"}),
    ("commit_first_rows", WINDOW, {"window"}),
    ("idle_commits", WINDOW, {"window"}),
    ("tail_first_rows", TAIL_PAGED, {"tail", "pool_bytes"}),
    ("tail_first_rows", TAIL_WINDOW, {"window"}),
    ("tail_len_unchecked", TAIL_PAGED, {"contracts"}),
    ("tail_len_unchecked", TAIL_WINDOW, {"tail", "window"}),
    ("window_paged_fallback", WINDOW, {"window"}),
    ("replay_rows_appended", REPLAY, {"window"}),
    ("replay_without_reset", REPLAY, {"window"}),
    ("replay_rows_not_committed", REPLAY, {"window"}),
])
def test_each_mutant_is_killed_by_its_check(mutant, case, checks):
    v = execute(case, f"mutant:{mutant}", "torch", EX)
    fired = {f.check for f in v.failures}
    assert checks <= fired, (fired, [f.message for f in v.failures])


def test_window_check_alone_kills_window_before_idle():
    """A2 with equal row counts (an IDLE of 2 rows after a decode of 2, MTP skipped the
    init): the stale layout's rows are written silently; only the window check sees it.
    (With different counts the store's own contract refuses: the 'host shape error'.)"""
    from dataclasses import replace

    from swafuzz.checks.registry import check_names

    case = replace(WINDOW, steps=WINDOW.steps[:5])
    v = execute(case, "mutant:window_before_idle", "torch", EX, only=set(check_names()) - {"window"})
    assert not v.failures
    v = execute(case, "mutant:window_before_idle", "torch", EX, only={"window"})
    assert any("IDLE" in f.message and "(W1: groups * W + i)" in f.message
               for f in v.failures), [f.message for f in v.failures]
    # with different row counts the store's own row/location contract refuses (W2)
    v = execute(WINDOW, "mutant:window_before_idle", "torch", EX)
    assert any(f.check == "contracts" and "location count equals row count" in f.message
               for f in v.failures), [f.message for f in v.failures]


def test_tail_check_names_t1_on_a_window_pool():
    v = execute(TAIL_WINDOW, "mutant:tail_len_unchecked", "torch", EX, only={"tail"})
    assert any("(T1)" in f.message for f in v.failures), [f.message for f in v.failures]


def test_sglang_0_5_12_adapter_refuses_the_window_kinds(monkeypatch):
    """Without importing sglang: the 0.5.12 adapter cannot run the window kinds (the CLI's
    exit 2 is tested with the release installed: tests/features/request_window/test_sglang_window.py)."""
    from swafuzz import features
    from swafuzz.targets import sglang as sg
    from swafuzz.targets.sglang.target import TARGET

    def refused(kinds):
        return [k for k in kinds if TARGET.supports(k)]

    monkeypatch.delenv(sg.ADAPTER_ENV, raising=False)
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.12")
    assert refused(["decode", "late_tail", "request_window"]) == [
        "late_tail", "request_window"]
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.23")
    assert refused(features.kind_names()) == ["dspark_verify_graph"]  # driven by no release
