"""The release's decode graph runner's replay preparation at server level
(``targets/sglang/pipeline/graph.py``; marker ``upstream``: 0.5.12 ``replay_prepare``, 0.5.22 /
0.5.23 ``load_batch``)."""

from __future__ import annotations

import copy
import importlib.util

import pytest

from swafuzz.server.case import parse

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)"),
              pytest.mark.usefixtures("pipeline_here")]

#: two requests, the shorter first: after it finishes the longer one replays alone in bucket 2,
#: its padded row where the shorter one's row was (spec §9.5's decreasing raw_bs in one bucket)
SHRINKING = {"config": {"page_size": 1, "disable_cuda_graph": False, "cuda_graph_bs_decode": [2]},
             "model": {"full_tokens": 128, "swa_tokens": 64, "sliding_window": 4},
             "requests": [{"prompt_len": 3, "max_new_tokens": 3},
                          {"prompt_len": 5, "max_new_tokens": 6}]}



def _run(obj, mutant=None):
    from swafuzz.harness.executors import get_executor
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    return execute(parse(obj), pipeline_of("sglang"), executor=get_executor("tape", "cpu"),
                   mutant=mutant)


def _model_only(monkeypatch):
    """The path before the release's fill ran: the engine's graph runner gets the unpadded
    batch and pads it by its own model; nothing of the release's runner fills a buffer."""
    from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
    from swafuzz.targets.sglang.pipeline import graph

    def replay_batch(self, fb):
        return {}, ForwardBatch(ForwardMode.DECODE, fb.batch_size, fb.out_cache_loc.long(),
                                fb.seq_lens.long(), fb.positions.long())

    monkeypatch.setattr(graph.GraphFill, "replay_batch", replay_batch)
    from swafuzz.targets.sglang.pipeline import dispatch  # the direct path, not the runner's
    monkeypatch.setattr(dispatch, "DRIVEN", False)


def test_replays_store_where_the_release_filled(monkeypatch):
    """Every replay ran the release's fill (its method was called once per graph forward); the
    padded rows hold the dummy slot and the fill length; the stores wrote where the buffers
    say; the observation outside the fill record is the model-only path's, bit for bit."""
    from swafuzz.targets.sglang.pipeline import graph

    calls = []
    real = getattr(graph.RUNNER_CLS, graph.FILL)
    monkeypatch.setattr(graph.RUNNER_CLS, graph.FILL,
                        lambda self, fb, *a, **k: calls.append(fb.batch_size) or real(self, fb))
    v = _run(SHRINKING)
    assert not v.failed, [f.message for f in v.failures]
    replays = [f for f in v.obs.forwards if f.exec == "graph"]
    assert calls == [f.graph["raw_bs"] for f in replays] == [2, 2, 1, 1, 1]
    last = replays[-1].graph
    assert (last["bucket"], last["out_cache_loc"][1], last["seq_lens"][1]) == (2, 0, 1)
    assert last["metadata"]["out_cache_loc"] == last["out_cache_loc"]
    from swafuzz.targets.sglang.pipeline.graph import UPGRADE_ON_HOST
    assert ("in_graph" in last) == UPGRADE_ON_HOST  # the release's upgrade ran where it runs
    assert [f.stores[0][1] for f in replays[2:]] == [0, 0, 0]

    monkeypatch.undo()
    _model_only(monkeypatch)
    old = _run(SHRINKING)
    strip = [{k: v for k, v in f.items() if k != "graph"} for f in v.obs.to_json()["forwards"]]
    assert strip == old.obs.to_json()["forwards"] and old.obs.pools == v.obs.pools


def test_graph_fill_check_fails_on_each_field():
    """Each field the oracle predicts, changed in a passing observation, fails ``graph_fill``
    (the backend's in-graph metadata where the release's upgrade runs: 0.5.22, 0.5.23)."""
    from swafuzz.server.oracle import judge

    v = _run(SHRINKING)
    rec = max((f for f in v.obs.forwards if f.exec == "graph"), key=lambda f: f.index)
    for path, value in [(("bucket",), 3), (("raw_bs",), 2), (("out_cache_loc", 1), 7),
                        (("seq_lens", 1), 0), (("positions", 0), 99),
                        (("req_pool_indices", 0), 99), (("metadata", "out_cache_loc", 1), 7),
                        (("metadata", "seq_lens", 0), 1)] + [
                        (("in_graph", "swa_out_cache_loc", 1), 7),
                        (("in_graph", "swa_page_indices", 0, 0), 99),
                        (("in_graph", "swa_topk_lengths", 0), 0)] * ("in_graph" in rec.graph):
        obs = copy.deepcopy(v.obs)
        g = next(f for f in obs.forwards if f.index == rec.index).graph
        for key in path[:-1]:
            g = g[key]
        g[path[-1]] = value
        fails = judge(v.case, obs, graphs=True)
        assert [f.check for f in fails] == ["graph_fill"], (path, fails)


def test_stale_tail_mutant_seen_only_through_the_release_fill(monkeypatch):
    """server_graph_stale_tail (spec §9.5, a patch of the release's fill): killed by
    ``graph_fill`` (and the stores land in the live slot); the model-only path never runs the
    release's fill, so the same Case under the same patch passes there."""
    v = _run(SHRINKING, "server_graph_stale_tail")
    assert v.failed and v.failures[0].check == "graph_fill", v.failures
    assert "write_targets" in {f.check for f in v.failures}
    _model_only(monkeypatch)
    old = _run(SHRINKING, "server_graph_stale_tail")
    assert not old.failed, [f.message for f in old.failures]


def test_seq_lens_pad_zero_killed_by_graph_fill_alone():
    """server_graph_seq_lens_pad_zero (spec §5.1, a patch of the release's fill): no store reads
    the padded rows' seq_lens, so ``graph_fill`` is the only check that fails."""
    v = _run(SHRINKING, "server_graph_seq_lens_pad_zero")
    assert {f.check for f in v.failures} == {"graph_fill"}, v.failures
    assert "seq_lens buffer" in v.failures[0].message
