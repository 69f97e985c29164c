"""The ``sglang`` target's server-level pipeline (marker ``upstream``: needs SGLang; 0.5.12, 0.5.22
and 0.5.23 run it, each through its own seams)."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.server.case import parse

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)"),
              pytest.mark.usefixtures("pipeline_here")]



def _case(page: int) -> dict:
    return {"config": {"page_size": page},
            "model": {"full_tokens": 128, "swa_tokens": 64, "sliding_window": 4},
            "requests": [{"prompt_len": 5, "max_new_tokens": 6},
                         {"prompt_len": 3, "max_new_tokens": 3},
                         {"prompt_len": 7, "max_new_tokens": 4, "arrive_step": 3,
                          "abort_step": 5}]}


@pytest.mark.parametrize("page", [1, 4])
def test_release_pipeline_passes_the_oracle(page):
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    v = execute(parse(_case(page)), pipeline_of("sglang"))
    assert v.obs.error is None, v.obs.error
    assert [f.mode for f in v.obs.forwards] == ["EXTEND", "DECODE", "DECODE", "EXTEND",
                                                "DECODE", "DECODE", "DECODE"]
    assert not v.failed, [f.message for f in v.failures]


def test_the_stores_come_from_the_release_pipeline(monkeypatch):
    """Break the release's ForwardBatch construction: the oracle must see it."""
    from sglang.srt.model_executor.forward_batch_info import ForwardBatch

    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    real = ForwardBatch.init_new.__func__

    def shifted(cls, batch, runner, **kw):
        fb = real(cls, batch, runner, **kw)
        fb.out_cache_loc = fb.out_cache_loc + 1
        return fb

    monkeypatch.setattr(ForwardBatch, "init_new", classmethod(shifted))
    v = execute(parse(_case(1)), pipeline_of("sglang"))
    assert v.failed and v.failures[0].check in ("write_targets", "contracts")


@pytest.mark.parametrize("mutant", ["server_decode_stale_loc", "server_evict_in_window"])
def test_server_mutants_are_invisible_at_component_level(mutant):
    """A component-level Case on the same target runs no ScheduleBatch, so it passes under a
    server mutant's patch (that a server-level Case kills each, by which check alone, is the
    server zoo's: ``swafuzz zoo --level server``, run by scripts/upstream-check)."""
    from swafuzz.harness.pipeline.execute import execute as component_execute
    from swafuzz.scenarios.case import Case, PoolConfig, Step
    from swafuzz.targets.sglang.pipeline.mutants import patched

    comp = Case(pool=PoolConfig(page_size=1, full_pages=32, swa_pages=24, window=3, layers=1,
                                draft_layers=1),
                steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=2),
                       Step("decode", rids=(0, 1)), Step("decode", rids=(0, 1)),
                       Step("finish", rid=1), Step("decode", rids=(0,))))
    with patched(mutant):
        cv = component_execute(comp, "sglang", "torch", ["eager"])
    assert not cv.failed, [f.message for f in cv.failures]


@pytest.mark.parametrize("page", [1, 4])
def test_decode_graphs_the_release_decides(page):
    """disable_cuda_graph false: the release's can_run_graph sends a batch above the largest
    captured size eager and the rest to the replay (tape), padded to the bucket with the dummy
    slot; eager executor: every forward eager. The oracle accepts both."""
    from swafuzz.harness.executors import get_executor
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    obj = _case(page)
    obj["config"].update(disable_cuda_graph=False, cuda_graph_bs_decode=[2])
    obj["requests"].append({"prompt_len": 2, "max_new_tokens": 3, "arrive_step": 3})
    tape = execute(parse(obj), pipeline_of("sglang"), executor=get_executor("tape", "cpu"))
    assert not tape.failed, [f.message for f in tape.failures]
    assert [f.exec for f in tape.obs.forwards if f.mode == "DECODE"] == \
        ["graph", "graph", "eager", "graph", "graph"]
    assert tape.obs.forwards[-1].stores[0][1:] == [0]  # batch 1 padded to bucket 2
    eager = execute(parse(obj), pipeline_of("sglang"), executor=get_executor("eager", "cpu"))
    assert not eager.failed and {f.exec for f in eager.obs.forwards} == {"eager"}


def test_cli_campaign_and_repro(tmp_path, capsys):
    """swafuzz run --level server splits --examples over the kinds, writes run.json; with a
    server mutant the shrunk bundle replays with swafuzz repro. In this process (--no-isolate:
    the release is imported here already; the case worker: test_server_isolation_upstream)."""
    import json

    from swafuzz.harness.cli.commands import main as cli_main

    out = tmp_path / "clean"
    assert cli_main(["run", "--target", "sglang", "--level", "server", "--examples", "6",
                     "--impl", "torch", "--no-isolate", "--out", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["cases"] >= 6 and sorted(run["kinds"]) == ["server_attn_tp", "server_chunked",
                                                          "server_decode", "server_graph",
                                                          "server_mixed"]
    bad = tmp_path / "mutant"
    assert cli_main(["run", "--target", "sglang", "--level", "server", "--examples", "20",
                     "--scenario", "server_decode", "--impl", "torch", "--no-isolate",
                     "--server-mutant", "server_decode_stale_loc", "--out", str(bad)]) == 1
    [bundle] = list((bad / "findings").iterdir())
    assert json.loads(bundle.read_text())["server_mutant"] == "server_decode_stale_loc"
    assert json.loads((bad / "run.json").read_text())["findings"] == [
        f"findings/{bundle.name}"]  # relative to the run directory
    assert f"swafuzz repro findings/{bundle.name}" in (bad / "summary.md").read_text()
    assert 'failures="1"' in (bad / "junit.xml").read_text()
    assert "No findings." in (out / "summary.md").read_text()
    capsys.readouterr()
    assert cli_main(["repro", "--no-isolate", str(bundle)]) == 1
    assert "FAIL server:write_targets" in capsys.readouterr().out


@pytest.mark.parametrize("page,chunk", [(1, 2), (4, 3)])
def test_chunked_prefill_through_the_release(page, chunk):
    """A prompt split over EXTEND batches: the release's checkpoint_kv_cache stash and resume,
    the SWA eviction of the chunked request's prefix; the oracle accepts it."""
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    obj = {"config": {"page_size": page, "chunked_prefill_size": chunk},
           "model": {"full_tokens": 128, "layers": 2, "sliding_window": 2, "swa_tokens": 64,
                     "swa_eviction_interval": 1},
           "requests": [{"prompt_len": 7, "max_new_tokens": 4},
                        {"prompt_len": 4, "max_new_tokens": 3, "arrive_step": 1},
                        {"prompt_len": 6, "max_new_tokens": 2, "arrive_step": 2,
                         "abort_step": 3}]}
    v = execute(parse(obj), pipeline_of("sglang"))
    assert v.obs.error is None and v.obs.out_of_scope is None
    assert [f.mode for f in v.obs.forwards][:3] == ["EXTEND"] * 3
    assert not v.failed, [f.message for f in v.failures]


@pytest.mark.parametrize("page,swa", [(1, 6), (1, 7), (2, 16)])
def test_retraction_and_admission_through_the_release(page, swa):
    """A tight SWA pool: the release's check_decode_mem refuses a decode, its retract_decode
    sends a request back, the adder defers or splits admissions; the retracted request is
    prefilled again (prompt and generated tokens) and finishes. The oracle follows both."""
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    obj = {"config": {"page_size": page},
           "model": {"full_tokens": 128, "layers": 1, "sliding_window": 2, "swa_tokens": swa,
                     "swa_eviction_interval": 1},
           "requests": [{"prompt_len": 2, "max_new_tokens": 12}] * 3}
    v = execute(parse(obj), pipeline_of("sglang"))
    assert v.obs.error is None and v.obs.out_of_scope is None, (v.obs.error, v.obs.out_of_scope)
    assert v.obs.retractions, "the gate never refused: the Case no longer retracts"
    assert not v.failed, [f.message for f in v.failures]
