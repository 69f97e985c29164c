"""The ``history`` check (addendum §5 W5 at use; features/request_window/history_checks.py) and its mutant
``tags_deferred_to_step_end`` (features/request_window/encoder_replay/mutants.py), on the ``unified`` target.

Hand Case ``SEPARATE``: a request-window pool with the separate encoder replay forward
(``separate_replay = 1``); admit 2 tokens, then extend 1 token with replay: forward 0 of step 1
replays positions 0-1 into the reset slot, forward 1 runs position 2 and reads positions 0-1 as
history. Reproduce: ``PYTHONPATH=$PWD TRITON_INTERPRET=1 python -m pytest
tests/features/request_window/test_w5_history.py``.
"""

from __future__ import annotations

from copy import deepcopy

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.checks.registry import check_names
from swafuzz.features.request_window.history_checks import check_history
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case
from swafuzz.targets import run_case

SEPARATE = Case.from_json({
    "graph": {"buckets": [1, 2, 4, 8], "num_draft_tokens": 1, "num_steps": 1, "topk": 0},
    "kind": "replay_separate", "payload_seed": 0,
    "pool": {"draft_layers": 1, "full_pages": 28, "late_layer_start": 1, "layers": 2,
             "page_size": 1, "request_window": 5, "row_dtype": "uint8", "row_width": 1,
             "separate_replay": 1, "swa_pages": 28, "window": 5, "window_slots": 1},
    "steps": [{"length": 2, "op": "admit", "rid": 0},
              {"lengths": [1], "op": "extend", "replay": [0], "rids": [0]}],
    "version": 1})

MUTANT = "mutant:tags_deferred_to_step_end"


def test_check_registered_after_window():
    """``history`` is the request window's second check (its record's order)."""
    names = check_names()
    assert names.index("history") == names.index("window") + 1


def test_oracle_positions_and_target_tags_on_separate():
    """Forward 1 of step 1 (layer 0, W = 5, first position 2): history rows stand for
    positions -3..1, so rows 0-2 are invalid (-1) and rows 3, 4 hold positions 0, 1; the
    target's tags at use say the same."""
    exp = expect(SEPARATE)
    f = next(e for e in exp.channel("request_window").forwards if (e.step, e.fwd) == (1, 1))
    assert f.history[0] == [-1, -1, -1, 0, 1]
    obs = run_case(SEPARATE, "unified", "torch")
    o = next(x for x in obs.channel("request_window").forwards if (x.step, x.fwd) == (1, 1))
    assert o.history_tags[0] == [-1, -1, -1, 0, 1]
    assert check_history(SEPARATE, obs, exp) == []


def test_check_fails_on_a_wrong_tag_and_on_an_invalid_row_read_live():
    exp = expect(SEPARATE)
    obs = run_case(SEPARATE, "unified", "torch")
    bad = deepcopy(obs)
    o = next(x for x in bad.channel("request_window").forwards if (x.step, x.fwd) == (1, 1))
    o.history_tags[0][3] = 5  # the ring row used as position 0 holds position 5
    f = check_history(SEPARATE, bad, exp)
    assert len(f) == 1 and f[0].check == "history" and f[0].slot_class == "tags"
    assert "first row 3 (group 0) stands for position 0, its source row's tag says 5" in \
        f[0].message
    bad = deepcopy(obs)
    o = next(x for x in bad.channel("request_window").forwards if (x.step, x.fwd) == (1, 1))
    o.history_tags[1][0] = 0  # an invalid row (position -3) read from a live ring row
    f = check_history(SEPARATE, bad, exp)
    assert len(f) == 1 and "stands for an invalid row (zero row)" in f[0].message
    bad = deepcopy(obs)
    o = next(x for x in bad.channel("request_window").forwards if (x.step, x.fwd) == (1, 1))
    o.history_tags[0] = o.history_tags[0][:4]  # another layout shape: window's finding
    assert check_history(SEPARATE, bad, exp) == []


def test_not_recorded_forwards_are_skipped():
    exp = expect(SEPARATE)
    obs = run_case(SEPARATE, "unified", "torch")
    for o in obs.channel("request_window").forwards:
        o.history_tags = None
    assert check_history(SEPARATE, obs, exp) == []


def test_mutant_killed_by_history_alone():
    v = execute(SEPARATE, MUTANT, "torch", ["eager", "tape"])
    assert {f.check for f in v.failures} == {"history"}, [f.message for f in v.failures]
    assert all("step 1 fwd 1" in f.message and "tag says -1" in f.message for f in v.failures)
    others = set(check_names()) - {"history"} | {"agreement"}
    v = execute(SEPARATE, MUTANT, "torch", ["eager", "tape"], only=others)
    assert not v.failures, [f.message for f in v.failures]


def test_unified_clean_on_separate():
    v = execute(SEPARATE, "unified", "torch", ["eager", "tape"])
    assert not v.failures, [f.message for f in v.failures]


@pytest.mark.parametrize("kind", ["request_window", "encoder_replay", "late_tail",
                                  "window_graphs", "prefill_graphs", "dspark_verify",
                                  "window_dp_extend", "replay_tail"])
def test_mutant_not_found_by_other_kinds(kind):
    """Only the separate replay forward puts two window forwards in one step where the second
    reads rows the first committed: the deferred tags are invisible elsewhere."""

    @settings(max_examples=8, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, MUTANT, "torch", ["eager", "tape"])
        assert not v.failures, [f.message for f in v.failures]

    prop()


@pytest.mark.parametrize("kind", ["replay_separate", "request_window", "tail_graphs",
                                  "window_dp_extend"])
def test_history_clean_on_unified(kind):
    @settings(max_examples=10, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, "unified", "torch", ["eager", "tape"])
        assert not v.failures, [f.message for f in v.failures]

    prop()


def test_dspark_eager_forwards_are_compared():
    """The DSpark eager lane (verify, DP-padded EXTEND: features/request_window/dspark/oracle.py) predicts the history
    positions too; a wrong tag there is reported."""
    import os
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from tests.features.dspark.test_dspark import PADDED, VERIFY

    for case in (VERIFY, PADDED):
        exp = expect(case)
        obs = run_case(case, "unified", "torch")
        pairs = [(o, e) for o in obs.channel("request_window").forwards for e in exp.channel("request_window").forwards
                 if (o.step, o.fwd) == (e.step, e.fwd) and e.history and o.history_tags]
        assert pairs and check_history(case, obs, exp) == []
        o, e = next((o, e) for o, e in pairs if any(p >= 0 for p in e.history[0]))
        h = next(k for k, p in enumerate(e.history[0]) if p >= 0)
        o.history_tags[0][h] += 1
        assert [f.check for f in check_history(case, obs, exp)] == ["history"]
