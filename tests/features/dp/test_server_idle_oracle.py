"""The server oracle's prediction of attention-DP ranks' IDLE forwards and its model_dispatch
failures (plain Python; the pipeline's side: tests/server/test_server_dispatch.py)."""

from __future__ import annotations

from swafuzz.features.dp.server_idle_oracle import expected_idles, idle_failures
from swafuzz.server.case import parse
from swafuzz.server.observation import ServerObs
from swafuzz.server.timeline import Forward


def _case(pplx=False):
    cfg = {"page_size": 1, "tp_size": 2, "dp_size": 2, "enable_dp_attention": True}
    if pplx:
        cfg.update(moe_a2a_backend="pplx", disable_prefill_cuda_graph=True,
                   env={"SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "8192"})
    return parse({"config": cfg, "model": {"full_tokens": 64, "swa_tokens": 64, "layers": 1,
                                           "sliding_window": 2},
                  "requests": [{"prompt_len": 3, "max_new_tokens": 3, "rank": 0},
                               {"prompt_len": 2, "max_new_tokens": 2, "rank": 0},
                               {"prompt_len": 4, "max_new_tokens": 1, "rank": 1,
                                "arrive_step": 2}]})


#: rank 0: an EXTEND of 2 requests (5 rows) at step 0, DECODEs at 1..2; rank 1: an EXTEND at 2
PLANS = [[Forward(0, 0, "EXTEND", (0, 1), ((0, 3), (0, 2))),
          Forward(1, 1, "DECODE", (0, 1), ((3, 1), (2, 1))),
          Forward(2, 2, "DECODE", (0, 1), ((4, 1), (3, 1)))],
         [Forward(2, 0, "EXTEND", (0,), ((0, 4),))]]


def test_sum_len_idles_are_unpadded_and_max_len_idles_padded():
    want = expected_idles(_case(), PLANS)
    assert want[0] == {}
    # step 0: rank 0 extends (SUM_LEN): unpadded; step 1: rank 0 decodes 2 (MAX_LEN): padded
    assert want[1] == {0: ("IDLE", 0, 0, False), 1: ("IDLE", 2, 2, True)}


def test_pplx_idles_are_padded_and_become_a_dummy_extend_beside_an_extend():
    assert expected_idles(_case(pplx=True), PLANS)[1] == {0: ("EXTEND", 5, 1, True),
                                                         1: ("IDLE", 2, 2, True)}


def _obs(idles):
    o = ServerObs(dispatch={0: {}})
    o.idles = idles
    return o


def test_model_dispatch_names_a_stale_metadata_and_a_missing_idle():
    good = [{"step": 0, "entry": "_execute_idle", "mode": "IDLE", "batch_size": 0,
             "metadata_of": None, "stores": [[]]},
            {"step": 1, "entry": "_execute_idle", "mode": "IDLE", "batch_size": 2,
             "metadata_of": "idle 1", "stores": [[0, 0]]}]
    case = _case()
    assert idle_failures(case, PLANS, [_obs([]), _obs(good)], stopped=False) == []
    stale = [dict(good[0], metadata_of=4), good[1]]
    f = idle_failures(case, PLANS, [_obs([]), _obs(stale)], stopped=False)
    assert [x.check for x in f] == ["model_dispatch"]
    assert f[0].message == "rank 1: step 0 IDLE: metadata_of 4, expected None"
    f = idle_failures(case, PLANS, [_obs([]), _obs(good[:1])], stopped=False)
    assert f[0].message.startswith("rank 1: step 1 IDLE: the release's model runner never")
    assert idle_failures(case, PLANS, [_obs([]), _obs(good[:1])], stopped=True) == []
    live = [good[0], dict(good[1], stores=[[0, 7]])]
    f = idle_failures(case, PLANS, [_obs([]), _obs(live)], stopped=False)
    assert f[0].message == "rank 1: step 1 IDLE: stores [[0, 7]], expected [[0, 0]]"
