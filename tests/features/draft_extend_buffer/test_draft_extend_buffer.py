"""The pre-allocated draft-extend SWA location buffer refilled outside the graph
(``graph.draft_extend_buffer``; sglang PR #34890, spec §4.7; issue 10, item 4): the captured
stores read the buffer the out-graph prep refills before every replay (``buf[n:] = 0``,
``buf[:n] = M[loc]``). ``mutant:draft_extend_buffer_tail_kept`` (no ``buf[n:] = 0``) is reached
only with the buffer on. Reproduce: ``pytest tests/features/draft_extend_buffer/test_draft_extend_buffer.py``.
"""

import dataclasses

import pytest

from swafuzz.harness.pipeline.execute import execute
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step
from swafuzz.targets.engine import UnifiedEngine

# two graph draft-extends in bucket 2: the second has fewer live rows than the first
BUF = Case(
    pool=PoolConfig(full_pages=16, swa_pages=16, window=12),
    graph=GraphConfig(buckets=(2,), topk=0, num_draft_tokens=2, draft_extend_buffer=True),
    kind="draft_extend_buffer",
    steps=(Step("admit", rid=0, length=3), Step("admit", rid=1, length=3),
           Step("draft_extend", rids=(0, 1), accept=(2, 2), exec="graph"),
           Step("draft_extend", rids=(0,), accept=(1,), exec="graph")))
PLAIN = dataclasses.replace(BUF, graph=dataclasses.replace(BUF.graph, draft_extend_buffer=False))


def test_round_trip_json_and_validation():
    assert Case.loads(BUF.dumps()) == BUF
    assert BUF.to_json()["graph"]["draft_extend_buffer"] is True
    assert "draft_extend_buffer" not in PLAIN.to_json()["graph"]
    bad = BUF.to_json()
    bad["graph"]["draft_extend_buffer"] = 1
    with pytest.raises(CaseError, match=r"graph\.draft_extend_buffer"):
        Case.from_json(bad)


def test_the_captured_store_reads_the_refilled_buffer():
    from swafuzz.harness.executors import get_executor

    eng = UnifiedEngine(BUF, "torch", get_executor("tape"))
    obs = eng.run()
    assert obs.error is None
    buf = eng.draft_extend_backend.swa_loc_buffer
    assert buf is not None and buf.numel() == 4 and str(buf.dtype) == "torch.int32"
    last = [f for f in obs.forwards if f.step == 3][0]
    assert last.exec == "graph"
    # the store's loc is a view of the buffer: refilled, tail zeroed by the out-graph prep
    assert last.stores[0].locs[1:] == [0, 0, 0] and buf.tolist()[1:] == [0, 0, 0]
    assert buf.tolist()[0] == last.stores[0].locs[0] > 0
    assert not execute(BUF, "unified", "torch", ["eager", "tape"]).failures


def test_tail_kept_is_reached_only_with_the_buffer():
    target = "mutant:draft_extend_buffer_tail_kept"
    assert not execute(PLAIN, target, "torch", ["eager", "tape"]).failures
    assert not execute(BUF, target, "torch", ["eager"]).failures  # graph-only
    v = execute(BUF, target, "torch", ["eager", "tape"])
    fired = {f.check for f in v.failures}
    assert {"write_targets", "pool_bytes"} <= fired
    assert v.failures[0].step == 3
