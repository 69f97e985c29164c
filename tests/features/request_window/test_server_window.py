"""The request window at server level (issue 18 item 3): Cases with
``enable_encoder_swa_bounded_replay`` stored through the release's own window path (marker
``upstream``: a release with a request window, 0.5.22 / 0.5.23; every Case here runs at attention
TP 1, the TP-2 finding is :mod:`tests.targets.test_sglang_reachability`'s)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from swafuzz.server.case import parse

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)")]

#: three requests: one aborted early, one arriving after it left (its slot again), one long
CASE = {"config": {"enable_encoder_swa_bounded_replay": True},
        "model": {"layers": 2, "sliding_window": 4, "full_tokens": 64, "swa_tokens": 64},
        "requests": [{"prompt_len": 5, "max_new_tokens": 6, "abort_step": 3},
                     {"arrive_step": 4, "prompt_len": 3, "max_new_tokens": 4},
                     {"arrive_step": 1, "prompt_len": 2, "max_new_tokens": 9}]}


def _pipeline():
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.targets import TargetUnavailable
    from swafuzz.targets.sglang.pipeline.argnames import release_refusal

    try:
        p = pipeline_of("sglang")
    except TargetUnavailable as e:
        pytest.skip(str(e))
    why = release_refusal({"enable_encoder_swa_bounded_replay": True})
    if why:  # a release without the flag or the window (0.5.12): refused by name
        assert "enable_encoder_swa_bounded_replay" in why
        pytest.skip(why)
    return p


def _run(obj, mutant=None):
    from swafuzz.server.run import execute

    return execute(parse(obj), _pipeline(), mutant=mutant)


def test_window_cases_are_clean_and_leave_the_swa_pool_alone():
    v = _run(CASE)
    assert v.obs.error is None and not v.failed, [f.message for f in v.failures]
    fw = v.obs.forwards
    assert [f.mode for f in fw][:5] == ["EXTEND", "EXTEND", "DECODE", "DECODE", "EXTEND"]
    assert all(f.window is not None for f in fw)
    # the EXTEND of 5 rows, one group: workspace rows W + k; the DECODE of both requests, two
    # groups: rows 2W + k, histories positions 1..4 and -1, -1, 0, 1 (the zero row: -1)
    assert fw[0].stores[0] == [4, 5, 6, 7, 8] and fw[2].stores[0] == [8, 9]
    assert fw[2].window["history_tags"][0] == [1, 2, 3, 4, -1, -1, 0, 1]
    # the late request (forward 4) took the aborted one's slot, which the release reset
    assert fw[4].window["slots"] == fw[0].window["slots"]
    assert fw[4].window["history_tags"][0] == [-1] * 4
    # no store reached the SWA pool (the oracle's pool_bytes checked it is all poison)
    assert not any(f.check == "pool_bytes" for f in v.failures)


@pytest.mark.parametrize("mutant, check", [("server_slot_reset_next", "window_ring"),
                                           ("server_layout_floor_own_row", "window_history"),
                                           ("server_padding_slot_handed_out", "window_slots")])
def test_window_mutants_are_killed(mutant, check):
    v = _run(CASE, mutant)
    assert v.failed and v.failures[0].check == check, [f.message for f in v.failures]


def test_window_mutants_are_listed():
    from swafuzz.targets.sglang.pipeline.hops import hop_text, server_mutant_sources

    src = server_mutant_sources()
    assert "addendum §2.2" in src["server_slot_reset_next"]
    text = hop_text()
    assert "request window store and commit" in text and "server_layout_floor_own_row" in text


@pytest.mark.parametrize("change, model, field", [
    ({"enable_decoder_swa_bounded_replay": True}, {}, "model.late_layer_start"),
    ({"enable_decoder_swa_bounded_replay": True, "tp_size": 2, "moe_dense_tp_size": 1},
     {"late_layer_start": 1}, "config.enable_decoder_swa_bounded_replay"),
    ({"enable_decoder_swa_bounded_replay": True, "enable_encoder_swa_bounded_replay": False},
     {"late_layer_start": 1}, "config.enable_decoder_swa_bounded_replay"),
    ({"disable_cuda_graph": False, "cuda_graph_bs_decode": [1, 2]}, {},
     "config.disable_cuda_graph"),
])
def test_combinations_not_driven_are_refused_by_name(change, model, field, tmp_path, capsys):
    from swafuzz.harness.cli.commands import main

    case = json.loads(json.dumps(CASE))
    case["config"].update(change)
    case["model"].update(model)
    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps({"level": "server", "target": "sglang", "case": case}))
    _pipeline()
    assert main(["repro", "--no-isolate", str(bundle)]) == 2
    assert field in capsys.readouterr().err


TAIL_BUNDLE = "tests/data/bundles/sglang/server_short_tail_floor.json"


def _tail_floor_is_short() -> bool:
    """The installed release's own late_layer_tail_layout: a 1-row tail of a 385-token request,
    W 2: floor 384 (seq_len - tail_lens, 0.5.21 / 0.5.22) or 383 (max(0, seq_len - W))."""
    import torch

    from swafuzz.targets.sglang import features as found

    _, _, floor = found.tail_mod.late_layer_tail_layout(
        extend_lens_cpu=[1], seq_lens_cpu=[385], tail_len=2, device=torch.device("cpu"))
    return int(floor[0]) == 384


@pytest.mark.parametrize("mutant", [None, "server_tail_floor_short"])
def test_tail_bundle_fails_exactly_where_the_tail_floor_is_short(mutant):
    """The late-layer tail at server level (encoder + decoder replay, chunked prefill 384, a
    385-token prompt: the last chunk's tail is 1 row, W 2): the late layer's history must read
    position 383; a release whose tail floor is seq_len - tail_lens (ledger short-tail-floor)
    reads none. The mutant puts that floor into a release that has the fixed one."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with open(os.path.join(root, TAIL_BUNDLE), encoding="utf-8") as fh:
        case = json.load(fh)["case"]
    v = _run(case, mutant)
    assert v.obs.error is None, v.obs.error
    if mutant is None and not _tail_floor_is_short():
        assert not v.failed, [f.message for f in v.failures]
        assert v.obs.forwards[1].window["history_tags"][1] == [-1, 383]
        return
    assert v.failed and v.failures[0].check == "window_history", [f.message for f in v.failures]
    assert "layer 1" in v.failures[0].message and "383" in v.failures[0].message


def test_attention_tp_with_the_window_needs_the_padded_extend_layout():
    """Attention TP 2 with encoder replay runs where the release has the padded eager-EXTEND
    layout the hop drives (the backend's ``_pad_rows``: 0.5.23) and is refused naming
    ``config.tp_size`` where it lacks it (0.5.22)."""
    from sglang.srt.layers.attention import deepseek_v4_backend as backend

    from swafuzz.targets.sglang.pipeline.argnames import release_refusal

    _pipeline()
    why = release_refusal({**CASE["config"], "tp_size": 2, "moe_dense_tp_size": 1})
    if hasattr(backend, "_pad_rows"):
        assert why is None, why
    else:
        assert why is not None and why.startswith("config.tp_size"), why
