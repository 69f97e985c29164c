"""Issue 12: prefix hits under a late-layer tail (T5 / A13), the compressor side of encoder
replay (E1) and the separate replay forward (E2) (addendum §2.3, §2.4, §5, §6).

What: the Case field ``pool.separate_replay`` (JSON unchanged when unused, CaseError naming the
field); the oracle's re-prefill cap, compressor locations and separate-forward rows on hand-made
Cases; the engine model passes them and agrees with the oracle on both new kinds; each mutant of
``features/request_window/tail_prefix/mutants.py`` (and
``features/request_window/encoder_replay/mutants.py``) is killed on a hand-made Case by the check its
docstring names (``fold_compresses_replay_rows`` by ``compressor`` alone) and campaigns of the
kinds that do not reach it leave it alone; 0.5.12 refuses the kinds.
Reproduce: ``pytest tests/features/tail_prefix/test_tail_prefix.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.checks.registry import check_names
from swafuzz.features.request_window.tail_prefix.oracle import prefix_hit
from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, CaseError, PoolConfig, Step

EX = ["eager", "tape"]

PAGED = PoolConfig(page_size=2, full_pages=40, swa_pages=40, window=4, layers=3,
                   late_layer_start=2, row_width=4)
TP_PAGED = Case(pool=PAGED, steps=(
    Step("admit", rid=0, length=10),
    Step("admit", rid=1, length=12, prefix_rid=0, prefix_len=10),  # cut to 8
    Step("admit", rid=2, length=20, prefix_rid=0, prefix_len=8),  # whole hit
    Step("admit", rid=3, length=5, prefix_rid=0, prefix_len=4),  # no hit left
    Step("extend", rids=(0, 1), lengths=(3, 2)), Step("decode", rids=(1, 2, 3))),
    payload_seed=7, kind="tail_prefix")
WIN = replace(PAGED, request_window=6, window_slots=3, window_chunk=30)
TP_WINDOW = Case(pool=WIN, steps=(
    Step("admit", rid=0, length=10),
    Step("admit", rid=1, length=12, prefix_rid=0, prefix_len=10),  # hit 8, replay 4..7
    Step("extend", rids=(0, 1), lengths=(3, 1), replay=(1,)), Step("decode", rids=(0, 1))),
    payload_seed=8, kind="tail_prefix")
TP_SEPARATE = replace(TP_WINDOW, pool=replace(WIN, separate_replay=1), kind="replay_separate")
SEP_NO_TAIL = replace(TP_WINDOW, pool=replace(WIN, separate_replay=1, late_layer_start=0),
                      kind="replay_separate")
HAND = {"paged": TP_PAGED, "window": TP_WINDOW, "separate": TP_SEPARATE,
        "separate_no_tail": SEP_NO_TAIL}


# ----------------------------------------------------------------------------- Case
def test_json_unchanged_without_separate_replay():
    d = json.loads(TP_WINDOW.dumps())
    assert "separate_replay" not in d["pool"]
    assert json.loads(TP_SEPARATE.dumps())["pool"]["separate_replay"] == 1
    assert Case.loads(TP_SEPARATE.dumps()) == TP_SEPARATE


@pytest.mark.parametrize("pool, path", [
    ({"separate_replay": 2, "request_window": 6, "window_slots": 1}, "pool.separate_replay"),
    ({"separate_replay": 1}, "pool.separate_replay"),
    ({"separate_replay": True, "request_window": 6, "window_slots": 1}, "pool.separate_replay"),
])
def test_malformed_separate_replay_names_the_field(pool, path):
    d = json.loads(TP_WINDOW.dumps())
    d["pool"] = {k: v for k, v in d["pool"].items()
                 if k not in ("request_window", "window_slots", "window_chunk")}
    d["pool"].update(pool)
    with pytest.raises(CaseError) as e:
        load_case(d)
    assert e.value.path == path


# ----------------------------------------------------------------------------- oracle
def test_prefix_hit_cap():
    # length - W, whole pages; no tail: the hit as matched
    assert prefix_hit(10, 12, 4, 2, True) == 8
    assert prefix_hit(8, 20, 4, 2, True) == 8
    assert prefix_hit(4, 5, 4, 2, True) == 0
    assert prefix_hit(6, 11, 4, 4, True) == 4
    assert prefix_hit(10, 12, 4, 2, False) == 10
    assert prefix_hit(3, 3, 4, 1, True) == 0


def test_oracle_rows_and_compressor_locations():
    w = expect(TP_PAGED).channel("request_window")
    by = {(f.step, f.fwd): f for f in w.forwards}
    assert len(by[(1, 0)].locs[0]) == 4 and by[(1, 0)].tail_lens == [4]  # positions 8..11
    assert len(by[(2, 0)].locs[0]) == 12  # positions 8..19
    assert len(by[(3, 0)].locs[0]) == 5  # a plain admit
    c = by[(1, 0)].comp
    assert 0 not in c.loc and c.low_ratio and len(c.loc) == 4
    # the hit's requests share the prefix's full slots
    st = expect(TP_PAGED).steps[1]
    assert st.requests[1][0][:8] == st.requests[0][0][:8]
    assert st.requests[1][0][8] != st.requests[0][0][8]

    w = expect(TP_WINDOW).channel("request_window")
    f = [f for f in w.forwards if f.step == 1]
    assert len(f) == 1 and len(f[0].locs[0]) == 8 and f[0].comp.loc[:4] == [0, 0, 0, 0]
    assert 0 not in f[0].comp.loc[4:]
    assert all(c == (f[0].comp.loc[k] // 4 if (4 + k + 1) % 4 == 0 else 0)
               for k, c in enumerate(f[0].comp.c4))
    ext = [f for f in w.forwards if f.step == 2][0]
    assert ext.comp.loc[3:7] == [0, 0, 0, 0]  # request 1's replay rows follow request 0's 3

    w = expect(TP_SEPARATE).channel("request_window")
    f = {f.fwd: f for f in w.forwards if f.step == 1}
    assert set(f) == {0, 1}
    assert len(f[0].locs[0]) == 4 and not f[0].comp.low_ratio and 0 not in f[0].comp.loc
    assert len(f[1].locs[0]) == 4 and f[1].comp.low_ratio
    st = expect(TP_SEPARATE).steps[1]
    assert f[0].comp.loc == st.requests[1][0][4:8]  # req_to_token[slot, P - r:P]


def test_odd_hit_under_a_window_is_infeasible():
    from swafuzz.oracles.engine import CaseInfeasible

    pool = replace(WIN, page_size=1)
    case = Case(pool=pool, steps=(Step("admit", rid=0, length=10),
                                  Step("admit", rid=1, length=9, prefix_rid=0, prefix_len=8)))
    with pytest.raises(CaseInfeasible, match="even"):
        expect(case)  # hit min(8, 9 - 4) = 5: odd


# ----------------------------------------------------------------------------- unified
@pytest.mark.parametrize("name", sorted(HAND))
def test_unified_passes_hand_cases(name):
    v = execute(HAND[name], "unified", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


@pytest.mark.parametrize("kind", ["tail_prefix", "replay_separate"])
def test_unified_agrees_with_the_oracle_on_each_kind(kind):
    @settings(max_examples=15, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, "unified", "torch", EX)
        assert not v.failures, [f.message for f in v.failures]

    prop()


# ----------------------------------------------------------------------------- mutants
@pytest.mark.parametrize("mutant, case, checks", [
    ("prefix_hit_without_reprefill", TP_PAGED, {"reprefill", "invariants", "pool_bytes"}),
    ("prefix_hit_without_reprefill", TP_WINDOW, {"reprefill", "window"}),
    ("fold_compresses_replay_rows", TP_WINDOW, {"compressor"}),
    ("separate_replay_wrong_span", TP_SEPARATE, {"window"}),
    ("separate_replay_no_reset", TP_SEPARATE, {"window"}),
    ("separate_replay_no_reset", SEP_NO_TAIL, {"window"}),
])
def test_each_mutant_is_killed_by_its_check(mutant, case, checks):
    v = execute(case, f"mutant:{mutant}", "torch", EX)
    fired = {f.check for f in v.failures}
    assert checks <= fired, (fired, [f.message for f in v.failures])


def test_compressor_alone_kills_the_fold_mutant():
    v = execute(TP_WINDOW, "mutant:fold_compresses_replay_rows", "torch", EX,
                only=set(check_names()) - {"compressor"})
    assert not v.failures, [f.message for f in v.failures]
    v = execute(TP_WINDOW, "mutant:fold_compresses_replay_rows", "torch", EX,
                only={"compressor"})
    assert any("folded replay row" in f.message and "(E1)" in f.message
               for f in v.failures), [f.message for f in v.failures]


def test_reprefill_names_the_hit():
    v = execute(TP_PAGED, "mutant:prefix_hit_without_reprefill", "torch", EX,
                only={"reprefill"})
    msgs = [f.message for f in v.failures]
    assert any("step 1 (admit 1" in m and "computes 2 rows" in m and "determines 4" in m
               and "T5 / A13" in m for m in msgs), msgs


@pytest.mark.parametrize("mutant, kinds", [
    ("prefix_hit_without_reprefill", ["prefix_share", "late_tail", "replay_tail"]),
    ("separate_replay_wrong_span", ["encoder_replay", "replay_tail", "tail_prefix"]),
    ("separate_replay_no_reset", ["encoder_replay", "replay_tail", "tail_prefix"]),
])
def test_other_kinds_do_not_reach_the_mutant(mutant, kinds):
    for kind in kinds:
        _clean_campaign(kind, mutant)


def _clean_campaign(kind: str, mutant: str) -> None:
    @settings(max_examples=10, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, f"mutant:{mutant}", "torch", ["eager"])
        assert not v.failures, (kind, [f.message for f in v.failures])

    prop()


def test_sglang_0_5_12_adapter_refuses_the_kinds(monkeypatch):
    from swafuzz.targets import sglang as sg
    from swafuzz.targets.sglang.target import TARGET

    def refused(kinds):
        return [k for k in kinds if TARGET.supports(k)]

    monkeypatch.delenv(sg.ADAPTER_ENV, raising=False)
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.12")
    assert refused(["decode", "tail_prefix", "replay_separate"]) == [
        "tail_prefix", "replay_separate"]
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.23")
    assert refused(["tail_prefix", "replay_separate"]) == []
