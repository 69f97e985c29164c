"""The attention-DP ranks' prefill-graph vote and the release's decode->extend conversion at
server level (issue 26 item 3): the oracle's plain-Python prediction (vote, bucket padding,
which DECODE converts, check ``dp_convert``) and, marker ``upstream``, a Case whose rank 0
decodes while rank 1 extends, run on the release: converted by the release and judged clean, and
PR #37505 put back (``server_dp_convert_prefix_from_tokens``) killed by ``dp_convert`` alone."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.features.dp.server_convert_oracle import (
    converts,
    dp_convert,
    expected_conversions,
    prefill_pad,
    vote,
)
from swafuzz.features.dp.server_oracle import expected_pads
from swafuzz.server.case import parse
from swafuzz.server.timeline import Forward

upstream = pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                              reason="sglang is not installed")


def _case(bs=(1, 2, 4, 8), backend="breakable"):
    cfg = {"page_size": 1, "tp_size": 2, "dp_size": 2, "enable_dp_attention": True}
    if backend:
        cfg.update(cuda_graph_backend_prefill=backend, cuda_graph_bs_prefill=list(bs))
    return parse({"config": cfg, "model": {"full_tokens": 64, "swa_tokens": 64, "layers": 1,
                                           "sliding_window": 2},
                  "requests": [{"prompt_len": 3, "max_new_tokens": 4, "rank": 0},
                               {"prompt_len": 2, "max_new_tokens": 4, "rank": 0},
                               {"prompt_len": 3, "max_new_tokens": 1, "rank": 1,
                                "arrive_step": 1}]})


#: rank 0: an EXTEND (5 rows) at step 0, DECODEs of 2 requests at 1 and 2; rank 1: an EXTEND
#: of 3 rows at step 1 (so at step 1 rank 0 decodes beside an extending peer), IDLE at 0 and 2
PLANS = [[Forward(0, 0, "EXTEND", (0, 1), ((0, 3), (0, 2))),
          Forward(1, 1, "DECODE", (0, 1), ((3, 1), (2, 1))),
          Forward(2, 2, "DECODE", (0, 1), ((4, 1), (3, 1)))],
         [Forward(1, 0, "EXTEND", (0,), ((0, 3),))]]


def test_the_vote_and_the_conversion_beside_an_extending_peer():
    case = _case()
    step1 = [PLANS[0][1], PLANS[1][0]]
    assert vote(case, step1) and converts(case, step1, 0) and not converts(case, step1, 1)
    assert expected_conversions(case, PLANS) == [{1: True, 2: False}, {}]
    # every rank pads MAX_LEN: 0.5.23 to the captured bucket holding 3 (4), 0.5.22 to 3
    assert prefill_pad(case, step1, "sglang 0.5.23") == 4
    assert prefill_pad(case, step1, "sglang 0.5.22") == 3
    assert expected_pads(case, PLANS, "sglang 0.5.23")[0][1] == ("EXTEND", 4, 2)
    # an idle peer votes yes: rank 0's lone EXTEND of 5 rows pads to the bucket 8
    assert prefill_pad(case, [PLANS[0][0], None], "sglang 0.5.23") == 8


@pytest.mark.parametrize("bs,why", [((1, 2), "3 rows above every captured count"),
                                    ((1, 8), "bucket 8 pads 3 rows more than twice")])
def test_a_failed_vote_keeps_the_decode_and_sum_len(bs, why):
    case = _case(bs)
    step1 = [PLANS[0][1], PLANS[1][0]]
    assert not vote(case, step1), why
    assert expected_conversions(case, PLANS) == [{1: False, 2: False}, {}]
    assert expected_pads(case, PLANS, "sglang 0.5.23")[0][1] == ("DECODE", 2, 2)


def test_no_prefill_graph_no_conversion():
    assert expected_conversions(_case(backend=None), PLANS) == [{1: False, 2: False}, {}]


def test_dp_convert_names_a_prefix_one_past_the_row():
    alloc = [[9, 4], [10, 5]]
    good = {"converted": True, "extend_seq_lens": [1, 1], "prefix_lens": [3, 2],
            "extend_num_tokens": 2, "positions": [3, 2], "seq_lens": [4, 3],
            "out_cache_loc": [9, 10], "swa": [4, 5]}
    assert dp_convert("forward 1", good, True, [4, 3], alloc) == []
    bad = dict(good, prefix_lens=[4, 3], positions=[4, 3])
    assert dp_convert("forward 1", bad, True, [4, 3], alloc) == [
        "forward 1: prefix_lens [4, 3], expected [3, 2]",
        "forward 1: positions [4, 3], expected [3, 2]"]
    assert dp_convert("forward 1", {"converted": False}, True, [4, 3], alloc) == [
        "forward 1: converted False, expected True"]
    assert dp_convert("forward 1", None, False, [4, 3], alloc)


def test_the_prefill_graph_is_refused_off_the_dp_ranks():
    from swafuzz.features.dp.server_rules import prefill_graph_not_driven
    assert not prefill_graph_not_driven(_case().config)
    one_rank = parse({"config": {"cuda_graph_backend_prefill": "breakable",
                                 "cuda_graph_bs_prefill": [4]},
                      "model": {"full_tokens": 64, "swa_tokens": 64, "sliding_window": 2},
                      "requests": [{"prompt_len": 3, "max_new_tokens": 1}]})
    assert prefill_graph_not_driven(one_rank.config)


@upstream
@pytest.mark.upstream
@pytest.mark.usefixtures("pipeline_here")
def test_the_release_converts_and_the_mutant_is_killed_by_dp_convert_alone():
    from swafuzz.features.dp.sglang_server_pad import close_all
    from swafuzz.server.run import judge_obs, refusal
    from swafuzz.targets.sglang.pipeline.argnames import release_refusal
    from swafuzz.targets.sglang.pipeline.steps import run_server_case
    case = _case((1, 2, 4, 8, 16))
    why = refusal(case, release_refusal)  # the records' and the release's own (0.5.22+ only)
    if why:
        pytest.skip(why)
    try:
        obs = run_server_case(case)
        assert [o.error for o in obs.ranks] == [None, None]
        assert judge_obs(case, obs) == []
        conv = obs.ranks[0].dispatch[1]["convert"]
        assert conv["converted"] and conv["extend_seq_lens"] == [1, 1]
        assert conv["prefix_lens"] == [3, 2] and conv["positions"] == [3, 2]
        assert obs.ranks[0].dispatch[1]["entry"] == "_execute_extend"
        assert obs.ranks[0].dispatch[2]["convert"] == {"converted": False}
        bad = run_server_case(case, mutant="server_dp_convert_prefix_from_tokens")
        fails = judge_obs(case, bad)
        assert fails and {f.check for f in fails} == {"dp_convert"}
        assert judge_obs(case, bad, disabled=frozenset({"dp_convert"})) == []
    finally:
        close_all()
