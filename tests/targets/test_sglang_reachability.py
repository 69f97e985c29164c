"""Every ledger entry's server-level answer (its ``server`` field,
:mod:`swafuzz.harness.ledger.server`) checked against the installed release: an
``unreachable`` entry's guard holds (the release refuses the arguments, forces the value, or
its own rule answers as the guard says), a ``probable`` entry's server arguments pass the
release's own checks (:mod:`swafuzz.targets.sglang.serverargs`) with the values its note relies
on. Each test runs on the releases its entries list and skips elsewhere. Marker ``upstream``
(``scripts/upstream-check``).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re

import pytest

from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, load_ledger, release_matches

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None,
    reason="sglang is not installed (build an environment with scripts/upstream-env VERSION)")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENTRIES = {e.id: e for e in load_ledger(DEFAULT_LEDGER)}


def entry(eid: str):
    """The ledger entry, skipping the test when the installed release is not one it lists."""
    from swafuzz.targets.sglang import installed_version

    e = ENTRIES[eid]
    v = installed_version()
    if not any(release_matches(r, v) for r in e.releases):
        pytest.skip(f"entry {eid} lists {list(e.releases)}; installed sglang {v}")
    assert e.server is not None, f"entry {eid} has no server answer"
    return e


def verdict(e, **changes):
    from swafuzz.targets.sglang.serverargs import check_server_args

    return check_server_args({**e.server.server_args, **changes}, env=e.server.env,
                             stand_in=e.server.stand_in)


@pytest.mark.parametrize("eid", ["ring-p1-alloc-writes-mapping", "ring-p1-alloc-refused"])
def test_dsv4_page_size_is_forced(eid):
    e = entry(eid)
    assert e.server.status == "unreachable" and e.server.server_args["page_size"] == 1
    v = verdict(e)
    assert v.accepted, v.message
    assert v.resolved["page_size"] == 256          # asked for 1: the DSV4 override wins
    assert verdict(e, page_size=64).resolved["page_size"] == 256


def test_ring_has_no_draft_extend_on_cuda():
    e = entry("ring-a4-draft-extend-graph")
    v = verdict(e)                                   # EAGLE with the window: refused
    assert not v.accepted and "validate_deepseek_v41_features" in v.where
    assert "DSpark" in v.message
    v4 = verdict(e, speculative_algorithm=None, speculative_eagle_topk=None,
                 speculative_num_steps=None, speculative_num_draft_tokens=None)
    assert v4.accepted, v4.message                   # V4.1 without speculative decoding: fine
    from swafuzz.targets.sglang.serverargs import check_server_args
    no_v41 = check_server_args({"enable_encoder_swa_bounded_replay": True,
                                "chunked_prefill_size": 8192}, model_type="deepseek_v4")
    assert not no_v41.accepted and "validate_deepseek_v41_features" in no_v41.where
    # the CUDA ring is the DSpark draft's under encoder replay ...
    import inspect

    from sglang.srt.mem_cache import deepseek_v4_memory_pool as pool
    assert "enable_encoder_swa_bounded_replay" in inspect.getsource(pool.uses_draft_swa_ring)
    # ... and the DSpark modules set no forward mode but TARGET_VERIFY / IDLE (source scan)
    spec = list(importlib.util.find_spec("sglang.srt.speculative").submodule_search_locations)[0]
    modes: set[str] = set()
    for folder, _, files in os.walk(spec):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and "dspark" in path.removeprefix(spec):
                with open(path, encoding="utf-8") as fh:
                    modes |= set(re.findall(r"ForwardMode\.([A-Z_0-9]+)", fh.read()))
    assert modes and not any(m.startswith("DRAFT_EXTEND") for m in modes), modes


def test_ring_with_dp_attention_is_accepted():
    e = entry("ring-a4-resolver-fallback-dp-eager")
    v = verdict(e)
    assert v.accepted, v.message
    assert v.resolved["speculative_algorithm"] == "DSPARK"
    assert v.resolved["attn_dp_size"] == 2 and v.resolved["enable_encoder_swa_bounded_replay"]
    assert not verdict(e, enable_dp_lm_head=False).accepted   # the checks do run


@pytest.mark.parametrize("eid", ["a2-window-before-idle", "a2-window-before-idle-count",
                                 "a2-window-before-idle-history"])
def test_window_refuses_dp_attention_before_0_5_23(eid):
    e = entry(eid)
    v = verdict(e)
    assert not v.accepted and v.error == "ValueError"
    assert "validate_deepseek_v41_features" in v.where and "DP attention" in v.message
    alone = verdict(e, dp_size=1, enable_dp_attention=False)   # the window alone: accepted
    assert alone.accepted, alone.message
    eagle = verdict(e, dp_size=1, enable_dp_attention=False, speculative_algorithm="EAGLE",
                    speculative_eagle_topk=1, speculative_num_steps=1,
                    speculative_num_draft_tokens=2)             # the other IDLE source
    assert not eagle.accepted and "validate_deepseek_v41_features" in eagle.where


def test_tail_with_window_is_accepted():
    e = entry("short-tail-floor")
    v = verdict(e)
    assert v.accepted, v.message
    assert v.resolved["enable_encoder_swa_bounded_replay"] is True
    assert v.resolved["enable_decoder_swa_bounded_replay"] is True
    assert v.resolved["chunked_prefill_size"] == 384



def _server_bundle(eid: str, signature: str) -> str:
    """The path of entry ``eid``'s server-level bundle, after checking that it fails with
    ``signature`` and that its server arguments are the entry's and resolve, by the release's
    own checks, to the bundle's."""
    e = entry(eid)
    assert e.server.status == "reachable" and e.server.bundle
    path = os.path.join(ROOT, e.server.bundle)
    with open(path, encoding="utf-8") as fh:
        bundle = json.load(fh)
    assert bundle["level"] == "server" and bundle["signature"] == signature
    cfg = bundle["case"]["config"]
    assert {k: cfg[k] for k in e.server.server_args} == e.server.server_args
    v = verdict(e)
    assert v.accepted, v.message
    for k in ("tp_size", "enable_encoder_swa_bounded_replay",
              "enable_decoder_swa_bounded_replay", "chunked_prefill_size"):
        assert v.resolved[k] == cfg[k] or (k == "chunked_prefill_size" and cfg[k] is None), k
    return path



def _replay_fails(path: str, capsys) -> str:
    """``swafuzz repro`` of a server-level bundle in this process: it fails (exit 1); its
    stdout. The padding hop's gloo ranks are closed after."""
    from swafuzz.features.dp import sglang_server_pad
    from swafuzz.harness.cli.commands import main
    from swafuzz.harness.cli.common import EXIT_FINDINGS

    try:
        assert main(["repro", "--no-isolate", path]) == EXIT_FINDINGS
    finally:
        sglang_server_pad.close_all()
    return capsys.readouterr().out


def test_short_tail_bundle_reproduces(capsys):
    """The entry's server-level bundle (encoder + decoder replay, tp 1, chunked prefill 384, a
    385-token prompt whose last chunk is a 1-row tail, W 2) fails on replay on the entry's
    releases as the entry says: the late layer's history reads the zero row where position 383
    must be (``server:window_history``); its server arguments are the entry's and accepted."""
    from swafuzz.harness.cli.commands import main
    from swafuzz.harness.cli.common import EXIT_FINDINGS

    path = _server_bundle("short-tail-floor", "server:window_history")
    assert main(["repro", "--no-isolate", path]) == EXIT_FINDINGS
    out = capsys.readouterr().out
    assert "FAIL server:window_history" in out and "layer 1" in out and "383" in out, out


#: the entry's bundle before 0.5.22: 0.5.20 / 0.5.21 keep a decoding request's window (the
#: entry's own bundle passes there) and meet the frontier through a chunk's publish instead
FRONTIER_CHUNK = "tests/data/bundles/sglang/server_swa_frontier_unaligned_window_chunk.json"


def test_swa_frontier_bundle_reproduces(capsys):
    """The entry's server-level bundle (radix cache on, window 5 over pages of 4) fails on
    replay on each release the entry lists: on 0.5.22 one request decoding past its window, the
    release's own over-free assertion when the tree evicts; on 0.5.20 / 0.5.21 a chunk's publish whose
    key keeps less than a window of live SWA, the next requests of the group matching nothing.
    The ledger knows it only while the window is not a whole number of pages: the same Case with
    window 8 passes."""
    from swafuzz.harness.cli.commands import main
    from swafuzz.harness.cli.common import EXIT_FINDINGS
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.case import parse
    from swafuzz.server.run import execute
    from swafuzz.targets.sglang import installed_version

    eid = "swa-frontier-unaligned-window"
    from swafuzz.targets.sglang.releases import release_key

    if release_key(installed_version()) < release_key("0.5.22"):  # 0.5.20, 0.5.21
        entry(eid)
        path = os.path.join(ROOT, FRONTIER_CHUNK)
        want = ("FAIL server:prefix_hit", "lost share")
    else:
        path = _server_bundle(eid, "server:contracts")
        want = ("FAIL server:contracts", "allocator/swa.py")
    assert main(["repro", "--no-isolate", path]) == EXIT_FINDINGS
    out = capsys.readouterr().out
    assert all(w in out for w in want), out
    assert f"known: ledger entry {eid}" in out, out
    with open(path, encoding="utf-8") as fh:
        case = copy.deepcopy(json.load(fh)["case"])
    case["model"]["sliding_window"] = 8
    res = execute(parse(case), pipeline_of("sglang"))
    assert res.failures == [], res.failures


def test_a5_needs_a_single_window_layer():
    """The A5 skip, run through the release's RequestWindow: the entry's repro fails with one
    window layer and passes with two or three (the (layer, phase) key changes every layer)."""
    import fnmatch

    from swafuzz.features.validation import load_case
    from swafuzz.harness.pipeline.execute import execute, resolve_executors
    from swafuzz.reports.bundle import read_bundle

    e = entry("window-a5-mtp-idle-after-graph-replay")
    case = read_bundle(os.path.join(ROOT, e.repro))["case"]
    failed = {}
    for layers in (1, 2, 3):
        c = copy.deepcopy(case)
        c["pool"]["layers"] = layers
        v = execute(load_case(c), "sglang", "torch", resolve_executors("auto"))
        failed[layers] = v.failed and fnmatch.fnmatchcase(
            v.failures[0].signature(v.case.kind), e.signature)
    assert failed == {1: True, 2: False, 3: False}


#: the DP-attention route of the request-window padding entry (attention TP 2 as well)
DP_ROUTE = {"tp_size": 4, "dp_size": 2, "enable_dp_attention": True,
            "enable_encoder_swa_bounded_replay": True, "chunked_prefill_size": 8192}


def test_window_with_attention_tp_is_accepted():
    from swafuzz.targets.sglang.serverargs import built_server_args, release_context

    e = entry("window-dp-extend-pad-joins-run")
    for cfg, ranks in ((e.server.server_args, (2, 1)), (DP_ROUTE, (2, 2))):
        with built_server_args(cfg, env=e.server.env) as (v, args):
            assert v.accepted, v.message
            assert v.resolved["enable_encoder_swa_bounded_replay"] is True
            assert v.resolved["enable_decoder_swa_bounded_replay"] is False   # no tail there
            with release_context(args):
                from sglang.srt.runtime_context import get_parallel
                assert (get_parallel().attn_tp_size, get_parallel().attn_dp_size) == ranks
    scattered = verdict(e, tp_size=2, dp_size=1, enable_dp_attention=False,
                        enable_attn_tp_input_scattered=True, moe_dense_tp_size=None,
                        enable_decoder_swa_bounded_replay=False)
    assert scattered.accepted, scattered.message


def test_window_pad_bundle_reproduces(capsys):
    """The entry's server-level bundle (shrunk by the ``server_window`` kind: attention TP 2,
    encoder replay, one request of 1 prompt token) fails on replay as the entry says: the
    release's MLP-sync padding row joins the request's window run and its commit puts the
    padding row's bytes in the ring row of position 0 (``server:window_ring``); the bundle's
    server arguments are the entry's and the release accepts them."""

    path = _server_bundle("window-dp-extend-pad-joins-run", "server:window_ring")
    out = _replay_fails(path, capsys)
    assert "FAIL server:window_ring" in out and "position 0" in out, out


def test_window_dp_decode_bundle_reproduces(capsys):
    """The entry's server-level bundle (tp 2, dp 2, DP attention, pplx, prefill graph off,
    encoder replay; one request decoding on rank 0 while another arrives on rank 1) fails on
    replay as the entry says: the release's MLP sync relabels rank 0's decode an EXTEND padded
    to rank 1's 2 tokens, and the padding row joins the request's window run (its history reads
    the zero row where position 0 must be: ``server:window_history``); the bundle's server
    arguments and environment are the entry's and the release accepts them. One DPSync
    bring-up (the pplx shape)."""

    eid = "window-dp-decode-extend-pad-joins-run"
    path = _server_bundle(eid, "server:window_history")
    with open(path, encoding="utf-8") as fh:
        assert json.load(fh)["case"]["config"]["env"] == entry(eid).server.env
    out = _replay_fails(path, capsys)
    assert "FAIL server:window_history" in out and "rank 0: forward 1" in out, out
    assert "window_ring" in out and "position 1" in out, out


def test_pplx_forces_max_len_with_the_window():
    from swafuzz.targets.sglang.serverargs import built_server_args, release_context

    e = entry("window-dp-decode-extend-pad-joins-run")
    modes = {}
    for a2a in ("pplx", "none"):
        cfg = {**e.server.server_args, "moe_a2a_backend": a2a}
        with built_server_args(cfg, env=e.server.env) as (v, args):
            assert v.accepted, v.message
            with release_context(args):
                from sglang.srt.layers.dp_attention import DpPaddingMode
                from sglang.srt.layers.moe.utils import initialize_moe_config
                initialize_moe_config()
                # one rank extends 3 tokens, the other decodes 1: extend in batch
                modes[a2a] = DpPaddingMode.get_dp_padding_mode(True, [3, 1])
    assert modes["pplx"].is_max_len() and modes["none"].is_sum_len(), modes


#: the other files whose tests answer an entry: those that run the release on process groups
#: (one bring-up each, so not here)
DP_FILES = ("tests/features/dp/test_sglang_dp_sync.py", "tests/features/dp/test_sglang_dp_reach.py")


def test_every_entry_is_answered_by_a_test_of_this_file():
    names = set(globals())
    for e in ENTRIES.values():
        assert e.server is not None, e.id
        path, name = e.server.test.split("::")
        if path in DP_FILES:
            with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
                assert re.search(rf"^def {name}\(", fh.read(), re.M), e.id
            continue
        assert path == "tests/targets/test_sglang_reachability.py" and name in names, e.id
    json.dumps([e.server.server_args for e in ENTRIES.values()])
