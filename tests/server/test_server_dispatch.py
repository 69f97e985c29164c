"""The release's model-runner dispatch at server level (``targets/sglang/pipeline/dispatch.py``,
``features/dp/sglang_server_idle.py``; marker ``upstream``: 0.5.22 / 0.5.23, whose
``EagerRunner`` the pipeline drives; 0.5.12 keeps its direct path)."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.server.case import parse

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)"),
              pytest.mark.usefixtures("pipeline_here")]

ONE_RANK = {"config": {"page_size": 1, "disable_cuda_graph": False, "cuda_graph_bs_decode": [2]},
            "model": {"full_tokens": 64, "swa_tokens": 64, "sliding_window": 3},
            "requests": [{"prompt_len": 3, "max_new_tokens": 3},
                         {"prompt_len": 2, "max_new_tokens": 2, "arrive_step": 1}]}

#: rank 0 extends, decodes and finishes; rank 1's requests arrive at steps 2 and 6: each rank
#: IDLE while its peer extends (unpadded) and while it decodes (padded)
TWO_RANKS = {"config": {"page_size": 1, "tp_size": 2, "dp_size": 2,
                        "enable_dp_attention": True},
             "model": {"full_tokens": 64, "swa_tokens": 64, "sliding_window": 2, "layers": 1},
             "requests": [{"prompt_len": 3, "max_new_tokens": 4, "rank": 0},
                          {"prompt_len": 4, "max_new_tokens": 1, "rank": 1, "arrive_step": 2},
                          {"prompt_len": 2, "max_new_tokens": 1, "rank": 1, "arrive_step": 6}]}


def _run(obj, mutant=None):
    from swafuzz.harness.executors import get_executor
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    return execute(parse(obj), pipeline_of("sglang"), executor=get_executor("tape", "cpu"),
                   mutant=mutant)


def _driven():
    from swafuzz.targets.sglang.pipeline import dispatch
    if not dispatch.DRIVEN:
        pytest.skip("this release has no EagerRunner: its dispatch is not driven")


def test_each_forward_goes_through_the_release_runner_entry_of_its_mode():
    _driven()
    v = _run(ONE_RANK)
    assert not v.failures and v.out_of_scope is None
    d = v.obs.dispatch
    assert d[0] == {"entry": "_execute_extend", "mode": "EXTEND", "batch_size": 1,
                    "metadata_of": 0}
    entries = [d[i]["entry"] for i in sorted(d)]
    assert "graph" in entries and entries.count("_execute_extend") == 2
    assert all(d[i]["batch_size"] == 2 for i in d if d[i]["entry"] == "graph")


def test_idle_ranks_run_the_release_idle_dispatch():
    _driven()
    v = _run(TWO_RANKS)
    assert not v.failures and v.out_of_scope is None
    idles = {(r, i["step"]): i for r, o in enumerate(v.obs.ranks) for i in o.idles}
    assert all(i["entry"] == "_execute_idle" and i["mode"] == "IDLE" for i in idles.values())
    padded = [i for i in idles.values() if i["batch_size"] > 0]
    empty = [i for i in idles.values() if i["batch_size"] == 0]
    assert padded and empty
    assert all(i["metadata_of"] == f"idle {i['step']}" and i["stores"] == [[0] * i["rows"]]
               for i in padded)
    assert all(i["metadata_of"] is None and i["stores"] == [[]] for i in empty)


@pytest.mark.parametrize("mutant", ["server_idle_keeps_metadata", "server_idle_padded_no_init"])
def test_idle_mutants_fail_model_dispatch(mutant):
    _driven()
    v = _run(TWO_RANKS, mutant=mutant)
    assert v.failures and {f.check for f in v.failures} == {"model_dispatch"}
