"""Raw metadata on (``graph.prep_in_graph``, SGLANG_PREP_IN_CUDA_GRAPH; issue 10, item 4; spec
§4.1, §4.3, §4.5): the out-graph prep builds Raw metadata, upgraded in-graph; the draft-extend
graph (no in-graph init, §5.2) and an eager MTP IDLE after a replay resolve with Raw metadata in
place. ``mutant:raw_metadata_assumed_core`` is reached only with it on.
Reproduce: ``pytest tests/features/raw_metadata/test_raw_metadata.py``.
"""

import dataclasses

import pytest

from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step

RAW = Case(
    pool=PoolConfig(full_pages=16, swa_pages=16, window=12),
    graph=GraphConfig(buckets=(1, 2), topk=1, num_steps=2, num_draft_tokens=2, prep_in_graph=True),
    kind="raw_metadata",
    steps=(Step("admit", rid=0, length=2), Step("decode", rids=(0,), exec="graph"),
           Step("idle", tokens=1, exec="eager"), Step("verify", rids=(0,), exec="graph"),
           Step("draft_decode", rids=(0,), exec="graph"),
           Step("draft_extend", rids=(0,), accept=(2,), exec="graph")))
DENSE = dataclasses.replace(RAW, graph=dataclasses.replace(RAW.graph, prep_in_graph=False))


def test_round_trip_json_and_validation():
    assert Case.loads(RAW.dumps()) == RAW
    assert RAW.to_json()["graph"]["prep_in_graph"] is True
    assert "prep_in_graph" not in DENSE.to_json()["graph"]  # old bundles stay byte-identical
    bad = RAW.to_json()
    bad["graph"]["prep_in_graph"] = "yes"
    with pytest.raises(CaseError, match=r"graph\.prep_in_graph"):
        Case.from_json(bad)
    a, b = expect(RAW), expect(DENSE)  # nothing the contract observes changes
    assert [f.targets for f in a.forwards] == [f.targets for f in b.forwards]
    assert a.steps[-1].pools == b.steps[-1].pools


def test_unified_with_raw_metadata():
    assert not execute(RAW, "unified", "torch", ["eager", "tape"]).failures


def test_raw_metadata_assumed_core_is_reached_only_with_raw_metadata():
    target = "mutant:raw_metadata_assumed_core"
    assert not execute(DENSE, target, "torch", ["eager", "tape"]).failures
    v = execute(RAW, target, "torch", ["eager", "tape"])
    assert v.failures and {f.check for f in v.failures} == {"error"}
    assert "core_attn_metadata" in v.failures[0].message
    # under the tape the eager MTP IDLE (step 2) runs after a decode replay left Raw metadata
    assert v.failures[0].step == 2
