"""Speculative decoding with decode graphs at server level (``targets/sglang/pipeline/
spec_graph.py``; marker ``upstream``): each verify through the release's TARGET_VERIFY graph
runner, which its own ``eagle_prepare_for_verify`` asks and fills; the fill predicted from the
Case (check ``verify_graph``) and each verify graph mutant killed by it."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.server.case import parse

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)"),
              pytest.mark.usefixtures("pipeline_here")]

#: two requests, then one (the second leaves first): bucket 2 holds both, then pads the one
SPEC = {"config": {"page_size": 1, "speculative_algorithm": "EAGLE", "speculative_num_steps": 2,
                   "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 3,
                   "disable_cuda_graph": False, "cuda_graph_bs_decode": [2]},
        "model": {"layers": 2, "full_tokens": 96, "swa_tokens": 96, "sliding_window": 4},
        "requests": [{"prompt_len": 5, "max_new_tokens": 6, "accept_lengths": [2, 1, 3]},
                     {"prompt_len": 3, "max_new_tokens": 4, "accept_lengths": [1, 3]}]}


def _run(obj=SPEC, mutant=None, executor=None):
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import ServerRefused, execute

    try:
        return execute(parse(obj), pipeline_of("sglang"), mutant=mutant, executor=executor)
    except ServerRefused as e:  # a release without the spec-v2 worker: refused by name
        pytest.skip(str(e))


def test_each_verify_fills_the_release_runner_padded_to_its_bucket():
    v = _run()
    assert not v.failed, [f.message for f in v.failures]
    g = [s["verify"]["graph"] for s in v.obs.spec]
    assert [x["bucket"] for x in g] == [2, 2, 2] and [x["raw_bs"] for x in g] == [2, 2, 1]
    last = g[-1]  # one request padded to 2: 3 rows at location 0 / position 0, seq_len 1, row 0
    assert last["out_cache_loc"][3:] == [0, 0, 0] and last["positions"][3:] == [0, 0, 0]
    assert last["seq_lens"][1:] == [1] and last["req_pool_indices"][1:] == [0]
    assert last["out_cache_loc"][:3] == v.obs.spec[-1]["verify"]["out_cache_loc"]


def test_a_batch_past_the_largest_bucket_verifies_eagerly():
    one = {**SPEC, "config": {**SPEC["config"], "cuda_graph_bs_decode": [1]}}
    v = _run(one)
    assert not v.failed, [f.message for f in v.failures]
    assert [s["verify"]["graph"] is None for s in v.obs.spec] == [True, True, False]


def test_replayed_on_the_tape_executor_padded_rows_write_the_dummy_slot():
    from swafuzz.harness.executors import get_executor

    v = _run(executor=get_executor("tape"))
    assert not v.failed, [f.message for f in v.failures]
    last = v.obs.spec[-1]["verify"]
    assert last["exec"] == "graph" and all(layer[3:] == [0, 0, 0] for layer in last["stores"])


@pytest.mark.parametrize("mutant", ["server_spec_verify_stale_tail",
                                    "server_spec_verify_seq_lens_pad_zero",
                                    "server_spec_verify_req_rows_tail_kept"])
def test_each_verify_graph_mutant_is_killed_by_verify_graph(mutant):
    v = _run(mutant=mutant)
    assert [f.check for f in v.failures] == ["verify_graph"], [f.message for f in v.failures]
