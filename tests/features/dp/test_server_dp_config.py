"""Attention-DP ranks at server level (issue 18, ledger entry
``window-dp-decode-extend-pad-joins-run``), torch-free parts: the Case's MoE all-to-all backend,
prefill-graph switch and deployment environment (validated by name, exit 2 naming the field,
left out of the JSON while at their defaults, handed to the release's own argument checks,
marker ``upstream``, and to the DPSync ranks' shape); the per-rank split and the DP padding
the oracle predicts; the opt-in kind ``server_dp``. The pipeline's two ranks on the release:
``tests/features/dp/test_sglang_dp_reach.py`` (one DPSync bring-up shared there)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from hypothesis import HealthCheck, find, given, settings

from swafuzz import features
from swafuzz.features.dp.server_oracle import expected_pads, rank_case
from swafuzz.scenarios.case import CaseError
from swafuzz.server.case import ServerConfig, parse
from swafuzz.server.strategies import server_cases
from swafuzz.server.timeline import Forward, forwards

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
    (dict(PPLX, moe_a2a_backend="pplxx"), "config.moe_a2a_backend: must be one of null, none,"),
    (dict(PPLX, disable_prefill_cuda_graph=1), "config.disable_prefill_cuda_graph: must be true or"),
    (dict(PPLX, env={"SGLANG_OTHER": "1"}), "config.env.SGLANG_OTHER: unknown field; "
     "allowed: SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK"),
    (dict(PPLX, env={"SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK": 8192}),
     "config.env.SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK: must be a decimal "
     "integer"),
    (dict(PPLX, env=["x"]), "config.env: must be an object"),
])
def test_bad_values_name_the_field(config, needle):
    with pytest.raises(CaseError) as e:
        _case(config)
    assert needle in str(e.value)


def test_the_cli_exits_2_naming_the_field(tmp_path, capsys):
    from swafuzz.harness.cli.commands import main as cli_main

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
    from swafuzz.targets.sglang.pipeline.argnames import literal_choices, ranked_bring_up
    from swafuzz.targets.sglang.pipeline.argnames import release_refusal as check

    if "pplx" not in (literal_choices("moe_a2a_backend") or ()):
        pytest.skip("the installed release has no pplx all-to-all backend")
    if not ranked_bring_up():  # DP attention refused first (test above)
        pytest.skip("the installed release's DP attention ranks are not driven")
    # without the window: on 0.5.22 the window's own server rule refuses tp_size 2 first
    c = _case(dict(PPLX, env=env, enable_encoder_swa_bounded_replay=False)).config
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



def test_each_rank_serves_its_own_requests():
    case = _case(dict(PPLX, env=ENV))
    r0, r1 = rank_case(case, 0), rank_case(case, 1)
    assert [r.prompt_len for r in r0.requests] == [3] and [r.prompt_len for r in r1.requests] == [2]
    assert {r.rank for r in r0.requests + r1.requests} == {0}
    assert r1.config == case.config


def _fwd(step, index, mode, spans):
    return Forward(step, index, mode, tuple(range(len(spans))), tuple(spans))


@pytest.mark.parametrize("a2a,want", [
    # pplx: MAX_LEN with an extend in the batch: the decode rank relabelled EXTEND, padded
    ("pplx", [{0: ("EXTEND", 1, 1), 1: ("EXTEND", 3, 1)}, {0: ("EXTEND", 3, 1)}]),
    # otherwise SUM_LEN with an extend in the batch: nothing padded, the decode stays DECODE
    (None, [{0: ("EXTEND", 1, 1), 1: ("DECODE", 1, 1)}, {0: ("EXTEND", 3, 1)}]),
])
def test_the_padding_the_oracle_predicts(a2a, want):
    """Rank 0 extends 1 token at step 0 (rank 1 idle), then decodes while rank 1 extends 3."""
    case = _case(dict(PPLX, moe_a2a_backend=a2a, env=ENV if a2a else {}))
    plans = [[_fwd(0, 0, "EXTEND", [(0, 1)]), _fwd(1, 1, "DECODE", [(1, 1)])],
             [_fwd(1, 0, "EXTEND", [(0, 3)])]]
    assert expected_pads(case, plans) == want


def test_all_decode_steps_are_max_len_with_the_batch_padded():
    case = _case(dict(PPLX, moe_a2a_backend=None, env={}))
    plans = [[_fwd(4, 7, "DECODE", [(5, 1), (6, 1), (2, 1)])], [_fwd(4, 2, "DECODE", [(3, 1)])]]
    assert expected_pads(case, plans) == [{7: ("DECODE", 3, 3)}, {2: ("DECODE", 3, 3)}]


def test_the_dp_kind_is_opt_in_and_shrinks_to_one_request_on_rank_0():
    assert features.kind("server_dp").opt_in and "server_dp" not in features.default_kind_names("server")
    small = find(server_cases("server_dp"), lambda c: True,
                 settings=settings(database=None, max_examples=50))
    assert len(small.requests) == 1 and small.requests[0].rank == 0
    assert small.config.moe_a2a_backend is None and not small.config.env
    assert (small.config.tp_size, small.config.dp_size, small.config.enable_dp_attention) == (
        2, 2, True)


@settings(max_examples=30, suppress_health_check=list(HealthCheck))
@given(server_cases("server_dp"))
def test_dp_draws_round_trip_and_run_on_two_ranks(case):
    assert parse(json.loads(case.dumps())) == case
    assert case.config.env_dict() == (ENV if case.config.moe_a2a_backend == "pplx" else {})
    n = sum(len(forwards(rank_case(case, r))) for r in (0, 1) if rank_case(case, r).requests)
    assert n <= 2 * sum(r.max_new_tokens + 1 for r in case.requests)  # each rank's own plan


@pytest.mark.upstream
@upstream
def test_data_parallel_attention_is_refused_where_the_ranks_are_not_driven():
    """0.5.12 (no runtime context, whose bring-up the DPSync ranks drive) and 0.5.18 .. 0.5.20
    (its publish takes no ranks): refused by name."""
    from swafuzz.targets.sglang.pipeline.argnames import ranked_bring_up, unpadded

    why = unpadded({"tp_size": 2, "dp_size": 2, "enable_dp_attention": True}, "x")
    if ranked_bring_up():
        assert why is None
    else:
        assert why.startswith("config.enable_dp_attention: sglang x has no")


def test_a_run_that_never_started_its_ranks_is_a_contracts_failure():
    from swafuzz.features.dp.server_oracle import judge_ranks
    from swafuzz.server.observation import ServerObs

    case = _case(dict(PPLX, env=ENV))
    bad = judge_ranks(case, ServerObs(error="DPSyncError: rank 1 did not answer"))
    assert [(f.check, f.message) for f in bad] == [
        ("contracts", "the pipeline raised: DPSyncError: rank 1 did not answer")]
    short = judge_ranks(case, ServerObs(ranks=[ServerObs()]))
    assert short[0].check == "contracts" and "1 rank observations for 2" in short[0].message
