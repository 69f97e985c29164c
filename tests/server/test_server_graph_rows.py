"""Every row of the decode graph fill predicted from the Case (``swafuzz/server/graph_rows.py``):
the request rows' free list, the static buffers' padded rows per release, and the mutants only
the prediction sees (the marked tests run the release: ``upstream``)."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.server.graph_rows import ReqSlots, StaticBuffers, fill_semantics


def test_release_semantics_by_version():
    assert fill_semantics("sglang 0.5.23").slot_order == "tail"
    assert fill_semantics("sglang 0.5.19 (adapter 0.5.23)").reset_index_tails
    assert fill_semantics("sglang 0.5.18").slot_order == "tail"  # read: as 0.5.19
    old = fill_semantics("sglang 0.5.12")
    assert (old.slot_order, old.reset_index_tails) == ("head", False)
    mid = fill_semantics("sglang 0.5.15")  # 0.5.14 .. 0.5.17: head rows, the registry's ZERO
    assert (mid.slot_order, mid.reset_index_tails) == ("head", True)
    assert fill_semantics("sglang 0.5.13") is None and fill_semantics("") is None


def test_req_rows_tail_and_head_order():
    tail, head = ReqSlots(3, "tail"), ReqSlots(3, "head")  # rows 1..4, row 0 padding
    for s in (tail, head):
        s.take([0, 1])
        s.take([1, 2])  # 1 continues its chunk: keeps its row
    assert tail.rows == {0: 3, 1: 4, 2: 2} and head.rows == {0: 1, 1: 2, 2: 3}
    tail.free([1, 0])
    tail.take([3])
    assert tail.rows[3] == 3  # the last freed row comes back first
    head.free([1, 0])
    head.take([3])
    assert head.rows[3] == 4


def test_static_buffers_padded_rows():
    real3 = {"out_cache_loc": [5, 6, 7], "seq_lens": [4, 5, 6], "positions": [3, 4, 5],
             "req_pool_indices": [2, 3, 4]}
    real1 = {k: v[:1] for k, v in real3.items()}
    zero, keep = StaticBuffers(4, 1, True), StaticBuffers(4, 1, False)
    for b in (zero, keep):
        assert b.replay(4, real3)["seq_lens"] == [4, 5, 6, 1]
    assert zero.replay(2, real1) == {"out_cache_loc": [5, 0], "seq_lens": [4, 1],
                                     "positions": [3, 0], "req_pool_indices": [2, 0]}
    assert keep.replay(2, real1) == {"out_cache_loc": [5, 0], "seq_lens": [4, 1],
                                     "positions": [3, 4], "req_pool_indices": [2, 3]}



#: the shorter request finishes first; the longer replays alone in bucket 2, its padded row
#: where the shorter one's row was
SHRINKING = {"config": {"page_size": 2, "disable_cuda_graph": False, "cuda_graph_bs_decode": [2]},
             "model": {"full_tokens": 128, "swa_tokens": 64, "sliding_window": 4},
             "requests": [{"prompt_len": 3, "max_new_tokens": 3},
                          {"prompt_len": 5, "max_new_tokens": 6}]}


def _run(mutant=None):
    from swafuzz.harness.executors import get_executor
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.case import parse
    from swafuzz.server.run import execute

    return execute(parse(SHRINKING), pipeline_of("sglang"),
                   executor=get_executor("tape", "cpu"), mutant=mutant)


def _unpredicted(v) -> list:
    """The graph forwards' failures of the check as it was before the prediction (real rows
    of positions / req_pool_indices against the batch, padded rows of those two unread)."""
    from swafuzz.server import graph_rows, oracle

    class Off(graph_rows.GraphRows):
        def replay(self, *a, **k):
            return None

    real = oracle.GraphRows
    oracle.GraphRows = Off
    try:
        return oracle.judge(v.case, v.obs, graphs=True)
    finally:
        oracle.GraphRows = real


@pytest.mark.upstream
@pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                    reason="sglang is not installed (scripts/upstream-env VERSION)")
@pytest.mark.usefixtures("pipeline_here")
@pytest.mark.parametrize("mutant", ["server_graph_req_rows_tail_kept",
                                    "server_graph_positions_tail_kept",
                                    "server_req_rows_from_zero"])
def test_only_the_prediction_sees(mutant):
    """Each mutant fails ``graph_fill`` alone; the check without the prediction passes it."""
    from swafuzz.server.graph_rows import fill_semantics as sem
    from swafuzz.targets.sglang.real import TARGET_VERSION

    if not (sem(TARGET_VERSION) and sem(TARGET_VERSION).reset_index_tails) and \
            "tail_kept" in mutant:
        pytest.skip(f"{TARGET_VERSION}'s fill keeps the padded tails: the mutant is the release")
    clean = _run()
    assert not clean.failed, [f.message for f in clean.failures]
    v = _run(mutant)
    assert {f.check for f in v.failures} == {"graph_fill"}, v.failures
    assert _unpredicted(v) == [], "the check without the prediction saw it"
