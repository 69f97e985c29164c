"""The ``remap`` step (issue 10, item 4): the mapping rewritten and re-registered between forwards
(HiCache load-back / commit, spec §2.8, sglang PR #25889). The unified engine rewrites ``M`` in
place, so graphs captured before keep reading the live mapping; ``mutant:remap_new_tensor``
rebuilds it as a new tensor and is reached only by this step.
Reproduce: ``pytest tests/features/remap/test_remap.py``.
"""

from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, Step

WITH = Case(steps=(Step("admit", rid=0, length=2), Step("decode", rids=(0,), exec="graph"),
                   Step("remap"), Step("decode", rids=(0,), exec="graph")), kind="decode")
WITHOUT = Case(steps=tuple(s for s in WITH.steps if s.op != "remap"), kind="decode")


def test_remap_round_trips_and_changes_nothing_the_contract_sees():
    assert Case.loads(WITH.dumps()) == WITH
    assert WITH.to_json()["steps"][2] == {"op": "remap"}
    a, b = expect(WITH), expect(WITHOUT)
    assert a.steps[2].mapping == a.steps[1].mapping
    assert [f.targets for f in a.forwards] == [f.targets for f in b.forwards]


def test_unified_keeps_graphs_on_the_live_mapping():
    assert not execute(WITH, "unified", "torch", ["eager", "tape"]).failures


def test_remap_new_tensor_is_reached_only_by_remap():
    assert not execute(WITHOUT, "mutant:remap_new_tensor", "torch", ["eager", "tape"]).failures
    v = execute(WITH, "mutant:remap_new_tensor", "torch", ["eager", "tape"])
    fired = {f.check for f in v.failures}
    assert {"write_targets", "capture_freeze"} <= fired
    assert v.failures[0].step == 3  # the first graph replay after the remap
    assert not execute(WITH, "mutant:remap_new_tensor", "torch", ["eager"]).failures  # graph-only
