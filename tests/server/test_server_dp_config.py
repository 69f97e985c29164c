"""The server-level Case's MoE all-to-all backend, prefill-graph switch and deployment
environment (issue 18, ledger entry ``window-dp-decode-extend-pad-joins-run``): validated by
name (exit 2 naming the field), left out of the JSON while at their defaults, handed to the
release's own argument checks (marker ``upstream``) and to the DPSync ranks' shape."""

from __future__ import annotations

import importlib.util
import json

import pytest

from swafuzz.server.case import ServerCaseError, ServerConfig, parse

PPLX = {"tp_size": 2, "dp_size": 2, "enable_dp_attention": True, "moe_a2a_backend": "pplx",
        "disable_prefill_cuda_graph": True, "enable_encoder_swa_bounded_replay": True}
ENV = {"SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "8192"}
BASE = {"model": {"full_tokens": 64, "swa_tokens": 32, "sliding_window": 2, "layers": 1},
        "requests": [{"prompt_len": 3, "max_new_tokens": 2},
                     {"prompt_len": 2, "max_new_tokens": 1, "arrive_step": 1, "rank": 1}]}

upstream = pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                              reason="sglang is not installed")


def _case(config: dict):
    return parse(dict(BASE, config=config))


def test_the_fields_round_trip_and_env_is_no_server_arg():
    case = _case(dict(PPLX, env=ENV))
    c = case.config
    assert (c.moe_a2a_backend, c.disable_prefill_cuda_graph) == ("pplx", True)
    assert c.env_dict() == ENV and "env" not in c.server_args()
    assert c.server_args()["moe_a2a_backend"] == "pplx"
    assert case.to_json()["config"]["env"] == ENV
    assert parse(json.loads(case.dumps())) == case


def test_defaults_leave_the_json_as_before():
    """A Case without the new fields serialises without them (the draws' digests hold)."""
    one = dict(BASE, requests=[BASE["requests"][0]])
    cfg = parse(one).to_json()["config"]
    assert not {"moe_a2a_backend", "disable_prefill_cuda_graph", "env"} & set(cfg)
    assert ServerConfig().server_args() == {k: v for k, v in cfg.items()}


@pytest.mark.parametrize("config,needle", [
    (dict(PPLX, moe_a2a_backend="pplxx"), "config.moe_a2a_backend: one of None, none,"),
    (dict(PPLX, disable_prefill_cuda_graph=1), "config.disable_prefill_cuda_graph: true or"),
    (dict(PPLX, env={"SGLANG_OTHER": "1"}), "config.env.SGLANG_OTHER: not a deployment "
     "variable swafuzz sets (allowed: SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK)"),
    (dict(PPLX, env={"SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK": 8192}),
     "config.env.SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK: a decimal integer"),
    (dict(PPLX, env=["x"]), "config.env: an object of environment variables"),
])
def test_bad_values_name_the_field(config, needle):
    with pytest.raises(ServerCaseError) as e:
        _case(config)
    assert needle in str(e.value)


def test_the_cli_exits_2_naming_the_field(tmp_path, capsys):
    from swafuzz.harness.cli import main as cli_main

    p = tmp_path / "c.json"
    case = dict(BASE, level="server", config=dict(PPLX, env={"X": "1"}))
    p.write_text(json.dumps({"bundle_version": 1, "level": "server", "target": "sglang",
                             "case": case}))
    assert cli_main(["repro", str(p), "--no-isolate"]) == 2
    assert "config.env.X" in capsys.readouterr().err


def test_the_ranks_get_the_padding_fields_and_the_env():
    from swafuzz.features.dp.sglang_server_pad import rank_shape

    shape, env = rank_shape(_case(dict(PPLX, env=ENV)).config)
    assert env == ENV
    args = shape.server_args()
    assert {k: args[k] for k in ("tp_size", "dp_size", "enable_dp_attention",
                                 "moe_a2a_backend", "disable_prefill_cuda_graph")} == {
        "tp_size": 2, "dp_size": 2, "enable_dp_attention": True, "moe_a2a_backend": "pplx",
        "disable_prefill_cuda_graph": True}
    assert "enable_encoder_swa_bounded_replay" not in args  # the ranks run without it
    plain, _ = rank_shape(ServerConfig(tp_size=2, moe_dense_tp_size=1))
    assert plain.server_args() == {"tp_size": 2, "dp_size": 1, "enable_dp_attention": False,
                                   "moe_dense_tp_size": 1,
                                   "enable_attn_tp_input_scattered": False}


@pytest.mark.upstream
@upstream
@pytest.mark.parametrize("env,accepted", [(ENV, True), ({}, False)])
def test_the_release_checks_pplx_with_the_cases_env(env, accepted):
    """0.5.23's pplx check (``moe_hook.handle_a2a_moe``) needs the dispatch budget from the
    deployment's environment: refused with the release's message without the Case's ``env``."""
    from swafuzz.server.run import release_refusal
    from swafuzz.targets.sglang.pipeline.argnames import release_refusal as check
    from swafuzz.targets.sglang.serverargs import release_shape

    if not release_shape().knows_v41:
        pytest.skip("encoder replay and pplx checks: 0.5.23")
    c = _case(dict(PPLX, env=env)).config
    why = release_refusal(c.server_args(), check, c.env_dict())
    if accepted:
        assert why is None
    else:
        assert "SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK" in why


@pytest.mark.upstream
@upstream
def test_a_backend_the_release_lacks_is_refused_by_name():
    from swafuzz.targets.sglang.pipeline.argnames import literal_choices, unknown_choice

    choices = literal_choices("moe_a2a_backend")
    assert choices and "none" in choices
    missing = next((b for b in ("pplx", "flashinfer_megamoe") if b not in choices), None)
    if missing is None:
        assert unknown_choice({"moe_a2a_backend": "pplx"}, "x") is None
    else:
        why = unknown_choice({"moe_a2a_backend": missing}, "0.5.12")
        assert why.startswith(f"config.moe_a2a_backend: {missing!r} is not a backend")

