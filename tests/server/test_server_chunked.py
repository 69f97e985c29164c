"""The ``server_chunked`` kind (``swafuzz/server/chunk_strategies.py``) and the ``kv_held`` check
(``swafuzz/server/held_checks.py``); the marked test runs the release (``upstream``)."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import HealthCheck, given, settings

from swafuzz.server.case import parse
from swafuzz.server.held_checks import held_full, kv_end, kv_held
from swafuzz.server.observation import ServerObs
from swafuzz.server.strategies import server_cases
from swafuzz.server.timeline import MAX_STEPS, Forward, Release, Timeline


def _shape(case) -> tuple[bool, bool]:
    """(a prompt over 3+ prefills, an abort while a prompt is chunked)."""
    tl, chunks, mid = Timeline(case), {}, False
    for t in range(2 * MAX_STEPS):
        if tl.done():
            break
        before = tl.chunked
        for e in tl.step(t):
            if isinstance(e, Release) and before and before[0] in e.aborted:
                mid = True
            if isinstance(e, Forward) and e.mode == "EXTEND":
                for r in e.rids:
                    chunks[r] = chunks.get(r, 0) + 1
    return max(chunks.values(), default=0) >= 3, mid


def test_chunked_kind_draws_long_prompts_and_mid_chunk_aborts():
    seen = {"pages": set(), "multi": 0, "mid": 0, "n": 0}

    @settings(max_examples=60, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(server_cases("server_chunked"))
    def draw(case):
        assert case.config.page_size > 1 and case.config.chunked_prefill_size
        multi, mid = _shape(case)
        seen["pages"].add(case.config.page_size)
        seen["multi"] += multi
        seen["mid"] += mid
        seen["n"] += 1

    draw()
    assert seen["pages"] == {2, 4, 8}
    assert seen["multi"] >= seen["n"] // 2 and seen["mid"] >= 3, seen


CASE = {"config": {"page_size": 2, "chunked_prefill_size": 2},
        "model": {"full_tokens": 32, "swa_tokens": 32, "sliding_window": 2},
        "requests": [{"prompt_len": 7, "max_new_tokens": 2, "abort_step": 1},
                     {"prompt_len": 3, "max_new_tokens": 2, "arrive_step": 1}]}


def test_kv_held_counts_pages_per_live_request():
    case = parse(CASE)
    assert held_full(case, {0: [1, 2, 3], 1: [4]}) == 6
    assert kv_held(case, {0: [1, 2, 3]}, [28, 30], "x") is None
    assert "27 free full tokens, expected 28" in kv_held(case, {0: [1, 2, 3]}, [27, 30], "x")
    assert kv_held(case, {}, [], "x") is None  # not observed
    assert kv_end(case, ServerObs(free={"before": [32, 32], "after": [32, 32]})) is None
    assert "after the run" in kv_end(case, ServerObs(free={"before": [32, 32],
                                                           "after": [32, 30]}))
    assert kv_end(case, ServerObs(free={"before": [32, 32], "after": [30, 30]},
                                  out_of_scope="x")) is None


@pytest.mark.upstream
@pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                    reason="sglang is not installed (scripts/upstream-env VERSION)")
@pytest.mark.usefixtures("pipeline_here")
def test_abort_mid_chunk_leak_killed_by_kv_held_alone():
    """Request 0's 7-token prompt is chunked 2 by 2 and aborted after its first chunk: the
    release frees its page; ``server_abort_mid_chunk_leaks`` (the release's release_kv_cache
    returning for a chunked request) keeps it, which only ``kv_held`` sees."""
    from swafuzz.harness.executors import get_executor
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    def run(mutant=None):
        return execute(parse(CASE), pipeline_of("sglang"), executor=get_executor("eager", "cpu"),
                       mutant=mutant)

    clean = run()
    assert not clean.failed, [f.message for f in clean.failures]
    assert clean.obs.free["before"] == clean.obs.free["after"] == [32, 32]
    v = run("server_abort_mid_chunk_leaks")
    assert {f.check for f in v.failures} == {"kv_held"}, v.failures
    assert "after step 1's releases: 30 free full tokens, expected 32" in v.failures[0].message
