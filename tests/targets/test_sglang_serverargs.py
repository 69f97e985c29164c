"""The installed release's own ServerArgs checks driven on CPU
(:mod:`swafuzz.targets.sglang.serverargs`): a combination the release refuses comes back with
its message and the release function that raised it, a combination it accepts comes back with
the values its resolution chose; the GPU runner's probes answer only during a build and are put
back; bad input is refused naming the field. Marker ``upstream`` (run by
``scripts/upstream-check``); works on 0.5.12, 0.5.22 and 0.5.23.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None,
    reason="sglang is not installed (build an environment with scripts/upstream-env VERSION)")]


@pytest.fixture(scope="module")
def sa():
    from swafuzz.targets.sglang import serverargs
    return serverargs


def test_plain_deployment_is_accepted_with_the_dsv4_page_size(sa):
    v = sa.check_server_args({"tp_size": 2})
    assert v.accepted and v.message is None
    assert v.resolved["page_size"] == 256          # the DSV4 override, not the default
    assert v.resolved["device"] == "cuda"
    assert sa.release_refusal({"tp_size": 2}) is None


def test_a_refusal_carries_the_release_message_and_where_it_was_raised(sa):
    cfg = {"speculative_algorithm": "EAGLE", "speculative_eagle_topk": 2,
           "speculative_num_steps": 1, "speculative_num_draft_tokens": 3}
    v = sa.check_server_args(cfg, model_type="deepseek_v4")
    assert not v.accepted and v.error == "AssertionError"
    assert "deepseek_v4_hook.py:apply_deepseek_v4_defaults" in v.where
    assert "topk" in v.message
    assert sa.release_refusal(cfg, model_type="deepseek_v4") == v.message
    # the same with topk 1 passes that check
    ok = sa.check_server_args({**cfg, "speculative_eagle_topk": 1,
                               "speculative_num_draft_tokens": 2}, model_type="deepseek_v4")
    assert ok.accepted or "topk" not in (ok.message or "")


def test_release_shape_is_detected(sa):
    shape = sa.release_shape()
    assert "tp_size" in shape.fields and "page_size" in shape.fields
    has_pipeline = hasattr(importlib.import_module("sglang.srt.server_args").ServerArgs,
                           "resolve_once")
    assert shape.resolves == has_pipeline
    assert shape.default_model_type == ("deepseek_v41" if shape.knows_v41 else "deepseek_v4")


def test_bad_input_names_the_field(sa):
    with pytest.raises(sa.ServerArgsConfigError, match=r"server_args\.tp_sise: not a "
                       r"ServerArgs field.*close: tp_size"):
        sa.check_server_args({"tp_sise": 2})
    with pytest.raises(sa.ServerArgsConfigError, match=r"server_args\.model_path: set by"):
        sa.check_server_args({"model_path": "/x"})
    with pytest.raises(sa.ServerArgsConfigError, match=r"server_args\.tp_size: expected"):
        sa.check_server_args({"tp_size": {"a": 1}})
    with pytest.raises(sa.ServerArgsConfigError, match=r"platform: 'tpu' is not one of"):
        sa.check_server_args({}, platform="tpu")
    with pytest.raises(sa.ServerArgsConfigError, match=r"model_type: 'llama'"):
        sa.check_server_args({}, model_type="llama")
    with pytest.raises(sa.ServerArgsConfigError, match=r"stand_in: a dict"):
        sa.check_server_args({}, stand_in={"model_type": "x"})
    with pytest.raises(sa.ServerArgsConfigError, match=r"env\.X: names and values"):
        sa.check_server_args({}, env={"X": 1})


def test_probes_answer_as_the_gpu_only_inside_a_build_and_are_put_back(sa):
    from swafuzz.targets.sglang.serverargs_probes import NOT_PATCHED, PLATFORMS, patched_probes
    common = importlib.import_module("sglang.srt.utils.common")
    before = common.is_cuda()
    assert all(p.reason for table in PLATFORMS.values() for p in table)
    assert all(what and why for what, why in NOT_PATCHED)
    with patched_probes("h200") as present:
        names = {p.name for p in present}
        assert {"is_cuda", "is_sm90_supported", "get_device_memory_capacity"} <= names
        assert common.is_cuda() is True and common.is_sm90_supported() is True
        assert common.is_sm100_supported() is False
        import torch
        assert torch.cuda.get_device_capability() == (9, 0)
        rc = sys.modules.get("sglang.srt.runtime_context")
        if rc is not None and hasattr(rc, "get_platform"):  # 0.5.22+: read at call time
            assert rc.get_platform().is_cuda is True
    with patched_probes("b200"):
        assert common.is_sm100_supported() is True
    assert common.is_cuda() == before
    leftovers = [f"{name}.{attr}" for name, mod in list(sys.modules.items())
                 if mod is not None and name.startswith("sglang")
                 for attr, value in list(vars(mod).items())
                 if isinstance(value, types.FunctionType)
                 and getattr(value, "swafuzz_probe", False)]
    assert leftovers == []


def test_verdicts_are_remembered_per_process(sa):
    first = sa.check_server_args({"tp_size": 2})
    again = sa.check_server_args({"tp_size": 2})
    assert again == first and again.resolved is not first.resolved
    again.resolved["page_size"] = 0               # a caller's copy: the memory keeps its own
    assert sa.check_server_args({"tp_size": 2}).resolved["page_size"] == 256
    sa.forget_verdicts()
    rebuilt = sa.check_server_args({"tp_size": 2})   # a new build: the same answers ...
    assert rebuilt is not first and rebuilt.accepted
    assert {k: v for k, v in rebuilt.resolved.items() if k != "random_seed"} == {
        k: v for k, v in first.resolved.items() if k != "random_seed"}  # ... but the seed
    assert first.resolved["model_path"] == sa.STAND_IN


def test_the_build_leaves_the_environment_as_it_found_it(sa):
    before = dict(os.environ)
    sa.check_server_args({"speculative_algorithm": "EAGLE", "speculative_eagle_topk": 1,
                          "speculative_num_steps": 1, "speculative_num_draft_tokens": 2},
                         model_type="deepseek_v4", env={"SWAFUZZ_PROBE_ENV": "1"})
    assert dict(os.environ) == before


def test_the_gpu_answer_decides_a_hardware_rule(sa):
    """The V4.1 replay flag refuses hardware other than CUDA: the probes are what make it pass
    here (on the CPU's own answers the same build is refused)."""
    shape = sa.release_shape()
    if not shape.knows_v41 or "enable_encoder_swa_bounded_replay" not in shape.fields:
        pytest.skip(f"sglang {shape.version} has no encoder SWA bounded replay")
    cfg = {"enable_encoder_swa_bounded_replay": True, "chunked_prefill_size": 8192}
    assert sa.check_server_args(cfg).accepted
    from swafuzz.targets.sglang import serverargs_probes as probes
    cpu = tuple(p if p.name not in ("is_cuda", "is_cuda_alike") else
                probes.Probe(p.name, False, "test: the CPU's answer")
                for p in probes.PLATFORMS["h200"])
    probes.PLATFORMS["cpu-test"] = cpu
    try:
        v = sa.check_server_args(cfg, platform="cpu-test")
    finally:
        del probes.PLATFORMS["cpu-test"]
    assert not v.accepted and "validate_deepseek_v41_features" in v.where
    assert "CUDA" in v.message
