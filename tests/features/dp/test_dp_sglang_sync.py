"""The padding hop's plumbing without SGLang (``features/dp/sglang_sync.py``): bad input is a
clear error naming the field; a rank that does not answer is a timeout naming it, with the
workers stopped; ``close`` ends every worker (also a stuck one) and removes the model dir. The hop
itself, on real process groups, is ``tests/features/dp/test_sglang_dp_sync.py`` (marker upstream).
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time

import pytest

from swafuzz.features.dp.sglang_sync import (
    PATCHED,
    DPSync,
    DPSyncError,
    DPSyncInputError,
    RankInput,
    ServerShape,
)


@pytest.mark.parametrize("bad, field", [
    (RankInput("prefill"), "mode"),
    (RankInput("idle", (3,)), "idle rank"),
    (RankInput("decode", ()), "seq_lens"),
    (RankInput("decode", (3,), (1,), (5,)), "extend_lens"),
    (RankInput("extend", (3, 4), (1,), (5,)), "extend_lens"),
    (RankInput("extend", (3,), (4,), (5,)), "extend_lens"),
    (RankInput("extend", (3,), (2,), (5,)), "out_cache_loc"),
    (RankInput("decode", (3,), (), (0,)), "out_cache_loc"),
])
def test_bad_rank_input_names_the_field(bad, field):
    with pytest.raises(DPSyncInputError, match=field):
        bad.check(1)


def test_good_rank_inputs_pass():
    for r in (RankInput("idle"), RankInput("decode", (3, 1), (), (5, 6)),
              RankInput("extend", (3, 2), (2, 2), (5, 6, 7, 8))):
        r.check(0)


def test_bad_server_shape_names_the_field():
    with pytest.raises(DPSyncInputError, match="tp_size"):
        ServerShape(tp_size=3).server_args()
    with pytest.raises(DPSyncInputError, match="dp_size"):
        ServerShape(tp_size=4, dp_size=3).server_args()
    assert ServerShape(moe_dense_tp_size=1, extra={"page_size": 64}).server_args() == {
        "tp_size": 2, "dp_size": 1, "enable_dp_attention": False, "moe_dense_tp_size": 1,
        "enable_attn_tp_input_scattered": False, "page_size": 64}


def test_every_patched_probe_has_a_reason():
    assert PATCHED and all(len(p) == 2 and p[0] and len(p[1]) > 20 for p in PATCHED)


def _bare(procs, conns) -> DPSync:
    """A DPSync around the given processes / pipe ends, without SGLang."""
    d = object.__new__(DPSync)
    d.procs, d.conns, d.facts = procs, conns, []
    d.shape, d.step_timeout, d.start_timeout = ServerShape(), 0.3, 0.3
    d._dir = tempfile.mkdtemp(prefix="swafuzz-sglang-sync-test-")
    return d


def test_a_silent_rank_is_a_timeout_and_the_workers_stop():
    ctx = multiprocessing.get_context("spawn")
    a, b = ctx.Pipe()
    p = ctx.Process(target=time.sleep, args=(60,), daemon=True)
    p.start()
    d = _bare([p], [a])
    t = time.monotonic()
    with pytest.raises(DPSyncError, match="rank 0 did not answer a step within 0.3 s"):
        d._ask("a step", [("step", {}, False)])
    assert time.monotonic() - t < 15
    assert not p.is_alive() and not os.path.exists(d._dir)
    with pytest.raises(DPSyncError, match="not running"):
        d._ask("a step", [("step", {}, False)])
    b.close()


def test_a_rank_that_dies_is_named():
    ctx = multiprocessing.get_context("spawn")
    a, b = ctx.Pipe()
    d = _bare([], [a])
    b.close()
    with pytest.raises(DPSyncError, match="rank 0 died during a step"):
        d._collect("a step", 1.0)


def test_an_error_answer_is_raised_with_the_rank():
    ctx = multiprocessing.get_context("spawn")
    a, b = ctx.Pipe()
    b.send(("err", "Traceback ...\nValueError: boom"))
    d = _bare([], [a])
    with pytest.raises(DPSyncError, match="rank 0 failed a step:\nTraceback"):
        d._collect("a step", 1.0)


def test_ctrl_c_inside_the_block_stops_the_workers():
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=time.sleep, args=(60,), daemon=True)
    p.start()
    d = _bare([p], [])
    d.start = lambda: None
    with pytest.raises(KeyboardInterrupt):
        with d:
            raise KeyboardInterrupt
    assert not p.is_alive() and not os.path.exists(d._dir)


def test_an_unknown_release_mutant_is_refused():
    d = _bare([], [])
    with pytest.raises(DPSyncInputError, match="mutant 'x' not one of no_attn_tp_align"):
        d.step([RankInput("idle"), RankInput("idle")], mutant="x")


@pytest.mark.parametrize("ranks, mutant, field", [
    ([RankInput("decode", (3,), (), (5, 6, 7)), RankInput("idle")], None, "rank 0"),
    ([RankInput("idle"), RankInput("extend", (3,), (2,), (5,))], None, "rank 1"),
    ([RankInput("idle")], None, "ranks"),
    ([RankInput("idle"), RankInput("idle")], "pad_late", "mutant"),
])
def test_bad_draft_block_names_the_field(ranks, mutant, field):
    """``DPSync.draft_block`` refuses before any worker is asked: a decode rank needs ``qtn``
    (here 2) locations per request, another rank a valid RankInput, one input per rank, a
    known mutant."""
    d = _bare([], [])
    try:
        with pytest.raises(DPSyncInputError, match=field):
            d.draft_block(ranks, 2, mutant=mutant)
    finally:
        d.close()
