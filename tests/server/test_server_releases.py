"""Where releases differ at the server level: the Case's field names handed to each release, and
(marker ``upstream``) each seam of :mod:`swafuzz.targets.sglang.pipeline.seams` landing on the
installed release's own code, chosen by what the release has."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.server.case import parse
from swafuzz.targets.sglang.pipeline.argnames import absent, renamed

NEW = ("cuda_graph_bs_decode", "enable_encoder_swa_bounded_replay", "page_size")
OLD = ("cuda_graph_bs", "page_size")


def test_a_field_the_release_names_otherwise_is_renamed():
    cfg = {"cuda_graph_bs_decode": [1, 2], "page_size": 4,
           "enable_encoder_swa_bounded_replay": False}
    assert renamed(cfg, NEW) == cfg
    assert renamed(cfg, OLD) == {"cuda_graph_bs": [1, 2], "page_size": 4}
    assert absent(cfg, OLD) == []


def test_a_flag_the_release_lacks_is_named_when_set():
    cfg = {"page_size": 1, "enable_encoder_swa_bounded_replay": True}
    assert absent(cfg, OLD) == ["enable_encoder_swa_bounded_replay"]
    assert absent(cfg, NEW) == []


needs_sglang = pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                  reason="sglang is not installed (scripts/upstream-env VERSION)")


def _case(**config) -> dict:
    return {"config": {"page_size": 1, **config},
            "model": {"full_tokens": 128, "swa_tokens": 64, "sliding_window": 4},
            "requests": [{"prompt_len": 5, "max_new_tokens": 4},
                         {"prompt_len": 3, "max_new_tokens": 3},
                         {"prompt_len": 2, "max_new_tokens": 3, "arrive_step": 2}]}


@pytest.mark.upstream
@needs_sglang
@pytest.mark.usefixtures("pipeline_here")
def test_the_shape_follows_what_the_release_has():
    from swafuzz.targets.sglang.pipeline import seams

    has_context = importlib.util.find_spec("sglang.srt.runtime_context") is not None
    assert seams.SHAPE == ("runtime-context" if has_context else "global-server-args")
    # each seam is probed on its own: without the runtime context all are the older form; with
    # the translator all are the newer one; 0.5.18 mixes them (runtime context, no
    # kv_index_translator: the model runner stand-in carries the pools, retract_decode takes
    # server_args), and its server level runs (scripts/upstream-check 0.5.18)
    if not has_context:
        assert seams.TRANSLATOR_MOD is None and not seams.INIT_FROM_SCHEDULE_BATCH
        assert seams.RETRACT_TAKES_ARGS
    if seams.TRANSLATOR_MOD is not None:
        assert has_context and seams.INIT_FROM_SCHEDULE_BATCH and not seams.RETRACT_TAKES_ARGS


@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("chunk", [None, 4])
@pytest.mark.usefixtures("pipeline_here")
def test_the_tree_cache_is_the_one_the_scheduler_builds(chunk):
    from swafuzz.targets.sglang.pipeline import seams
    from swafuzz.targets.sglang.pipeline.setup import Server

    srv = Server(parse(_case(chunked_prefill_size=chunk)))
    name = type(srv.tree_cache).__name__
    if seams.UNIFIED_COMPONENTS is not None:
        assert name == "UnifiedRadixCache"
    else:  # the rule of the release's Scheduler.init_cache_with_memory_pool
        want = "SWAChunkCache" if srv.server_args.chunked_prefill_size is not None \
            else "SWARadixCache"
        assert name == want
    assert srv.tree_cache.disable


@pytest.mark.upstream
@needs_sglang
def test_a_v41_flag_is_refused_by_name_where_the_release_lacks_it():
    """The release's argument check (the target's server_refusal hook) names a V4.1 flag the
    release does not have; the pipeline's own refusal (bounded replay not driven) comes first
    in a run, so the hook is asked directly."""
    from swafuzz.targets.sglang.pipeline.argnames import release_refusal
    from swafuzz.targets.sglang.serverargs import release_shape

    cfg = parse(_case(enable_encoder_swa_bounded_replay=True)).config.server_args()
    why = release_refusal(cfg)
    if "enable_encoder_swa_bounded_replay" in release_shape().fields:
        assert why is None or "has no ServerArgs field" not in why
    else:
        assert why and "has no ServerArgs field enable_encoder_swa_bounded_replay" in why


@pytest.mark.upstream
@needs_sglang
def test_attention_tp_is_refused_where_the_padding_hop_is_not_driven():
    from swafuzz.targets.sglang.pipeline.argnames import ranked_bring_up, release_refusal

    why = release_refusal({"page_size": 1, "tp_size": 2, "moe_dense_tp_size": 1})
    if not ranked_bring_up():
        assert why and "attention TP 2" in why and "runtime_context" in why
    else:
        assert why is None or "runtime_context" not in why


def _graph_decision():
    """(class, method name) of the installed release's decode graph can-run decision."""
    from swafuzz.targets.sglang.pipeline import seams

    if seams.DECODE_RUNNER_MOD is not None:
        return seams.DECODE_RUNNER_MOD.DecodeCudaGraphRunner, "can_run_graph"
    from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner
    return CudaGraphRunner, "can_run"


@pytest.mark.upstream
@needs_sglang
@pytest.mark.usefixtures("pipeline_here")
def test_the_graph_decision_is_the_releases(monkeypatch):
    """The replays follow the release's own decision: a decision that refuses every batch
    sends the decodes eager, which the oracle's exec_path check names."""
    from swafuzz.harness.executors import get_executor
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    case = parse(_case(disable_cuda_graph=False, cuda_graph_bs_decode=[2, 4]))
    tape = get_executor("tape", "cpu")
    v = execute(case, pipeline_of("sglang"), executor=tape)
    assert not v.failed, [f.message for f in v.failures]
    assert {f.exec for f in v.obs.forwards if f.mode == "DECODE"} == {"graph"}
    cls, name = _graph_decision()
    monkeypatch.setattr(cls, name, lambda self, fb: False)
    broken = execute(case, pipeline_of("sglang"), executor=get_executor("tape", "cpu"))
    assert broken.failed and broken.failures[0].check == "exec_path", broken.failures


@pytest.mark.upstream
@needs_sglang
@pytest.mark.usefixtures("pipeline_here")
def test_a_campaign_runs_what_the_release_accepts(tmp_path, capsys):
    """A kind whose Cases the release refuses (0.5.12: attention TP 2) runs the others and names
    the reason; the run itself is clean."""
    import json

    from swafuzz.harness.cli.commands import main as cli_main

    out = tmp_path / "run"
    rc = cli_main(["run", "--target", "sglang", "--level", "server", "--scenario",
                   "server_attn_tp", "--examples", "6", "--out", str(out), "--quiet",
                   "--no-isolate"])
    assert rc == 0
    kind = json.loads((out / "run.json").read_text())["kinds"]["server_attn_tp"]
    from swafuzz.targets.sglang.pipeline.argnames import ranked_bring_up

    if not ranked_bring_up():
        assert "attention TP 2" in kind["refused"]
    else:
        assert "refused" not in kind and kind["cases"] == 6
