"""Step ops a feature owns (``features/step_op.py``, hook ``scenario.step_ops``).

What: the declared ops join ``OPS`` where their ``after`` says (the parser's error lists them
in the order they always had), every declared op is run by the engine and the forward ops have
an execution path, a malformed declaration is named, and the episode machine gains the
features' rules. Why: the core names no feature's op; a declaration the registry cannot wire
would fail only when a Case used the op.
"""

from __future__ import annotations

import pytest

from swafuzz import features
from swafuzz.features.step_op import StepOp
from swafuzz.scenarios.case import FORWARD_OPS, OPS, STEP_OPS, Case, CaseError


def _tables(point: str) -> dict:
    out: dict = {}
    for t in features.hooks(point):
        out.update(t)
    return out


def test_declared_ops_join_ops_after_their_anchor():
    assert OPS == ("admit", "decode", "verify", "draft_extend", "draft_decode", "idle",
                   "dp_decode", "evict", "finish", "remap", "flush", "refused_admit", "extend",
                   "draft_block")
    for name, d in STEP_OPS.items():
        assert OPS.index(name) > OPS.index(d.after)
        assert (name in FORWARD_OPS) == d.forward


def test_every_declared_op_is_wired():
    engine, shadow = (_tables(p) for p in ("engine.step_ops", "oracle.step_ops"))
    paths = {op: f for part in features.parts("oracle") for op, f in part.path_ops.items()}
    for name, d in STEP_OPS.items():
        assert name in engine, f"op {name}: no engine.step_ops entry"
        if d.forward:
            assert name in paths and name in shadow, f"forward op {name}: no oracle entry"
    assert set(engine) <= set(STEP_OPS) and set(paths) <= set(STEP_OPS)


@pytest.mark.parametrize("decl, words", [
    (StepOp("x", "doc", "idle", fields=("lengths",)), "fields / emit"),
    (StepOp("x", "doc", "idle", pool="cpu"), "pool must be one of"),
    (StepOp("x", "doc", "", ), "must not be empty"),
    (StepOp("x", "doc", "idle", grows=-1), "grows"),
])
def test_malformed_declaration_is_named(decl, words):
    assert words in decl.problem()


def _case(steps: list) -> Case:
    return Case.from_json({**Case(steps=()).to_json(), "steps": steps})


def test_parser_lists_every_op_and_takes_declared_fields():
    with pytest.raises(CaseError, match="must be one of admit, decode, .*dp_decode.*remap"):
        _case([{"op": "nope"}])
    with pytest.raises(CaseError, match=r"steps\[0\]"):
        _case([{"op": "remap", "rids": [0]}])
    with pytest.raises(CaseError, match=r"steps\[1\].rank_tokens: some rank must have tokens"):
        _case([{"op": "admit", "rid": 0, "length": 1},
               {"op": "dp_decode", "rids": [], "rank_tokens": [0]}])
    c = _case([{"op": "admit", "rid": 0, "length": 1},
               {"op": "dp_decode", "rids": [], "rank_tokens": [2]}])
    assert c.steps[1].to_json() == {"op": "dp_decode", "rids": [], "rank_tokens": [2],
                                    "exec": "eager"}


def test_episode_machine_gains_the_features_rules():
    from swafuzz.scenarios.episode_machine import EpisodeMachine

    names = [r.function.__name__ for r in EpisodeMachine.setup_state().rules]
    assert {"dp_decode", "remap", "verify_reject"} <= set(names)
    assert names == sorted(names)
