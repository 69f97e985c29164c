"""Speculative server-level Cases, torch-free: the timeline's accept semantics, the kind's
draws, the pipeline's limits, and the spec oracle on a hand-made observation (each check
failing on the piece it reads)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings

from swafuzz.features.spec_decode.server_oracle import judge, reserve
from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.server.case import parse
from swafuzz.server.observation import ForwardRec, ServerObs
from swafuzz.server.oracle import rows
from swafuzz.server.run import refusal
from swafuzz.server.strategies import server_cases
from swafuzz.server.timeline import Forward, Release, plan

SPEC = {"config": {"page_size": 1, "speculative_algorithm": "EAGLE", "speculative_num_steps": 1,
                   "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 2},
        "model": {"layers": 1, "full_tokens": 32, "swa_tokens": 32, "sliding_window": 4},
        "requests": [{"prompt_len": 2, "max_new_tokens": 3, "accept_lengths": [2]}]}


def test_decode_writes_the_draft_window_and_advances_by_the_accept():
    case = parse(copy.deepcopy(SPEC))
    fwds = [e for e in plan(case) if isinstance(e, Forward)]
    assert [(f.mode, f.spans, f.accepts) for f in fwds] == [
        ("EXTEND", ((0, 2),), ()), ("DECODE", ((2, 2),), (2,))]
    more = copy.deepcopy(SPEC)
    more["requests"][0].update(max_new_tokens=5, accept_lengths=[2])
    fwds = [e for e in plan(parse(more)) if isinstance(e, Forward)]
    # accept lengths run out: one token each verify after them
    assert [(f.spans, f.accepts) for f in fwds[1:]] == [(((2, 2),), (2,)), (((4, 2),), (1,)),
                                                        (((5, 2),), (1,))]
    assert isinstance(plan(parse(more))[-1], Release)


@settings(max_examples=25)
@given(server_cases("server_spec"))
def test_spec_draws_are_driven_and_round_trip(case):
    c = case.config
    assert (c.speculative_algorithm, c.speculative_eagle_topk) == ("EAGLE", 1)
    assert c.speculative_num_draft_tokens == c.speculative_num_steps + 1
    assert refusal(case) is None
    assert parse(json.loads(case.dumps())) == case


@pytest.mark.parametrize("change,field", [
    ({"speculative_eagle_topk": 2}, "speculative_eagle_topk"),
    ({"speculative_eagle_topk": 2, "speculative_num_draft_tokens": 4}, "speculative_eagle_topk"),
    ({"speculative_num_draft_tokens": 3}, "speculative_algorithm")])
def test_not_driven_is_refused_naming_the_field(change, field):
    spec = copy.deepcopy(SPEC)
    spec["config"].update(change)
    assert refusal(parse(spec)).startswith(f"config.{field}:")


def test_decode_graphs_are_driven():
    spec = copy.deepcopy(SPEC)
    spec["config"].update(disable_cuda_graph=False, cuda_graph_bs_decode=[2])
    assert refusal(parse(spec)) is None


@settings(max_examples=25)
@given(server_cases("server_spec_graph"))
def test_spec_graph_draws_capture_graphs_and_are_driven(case):
    c = case.config
    assert not c.disable_cuda_graph and c.cuda_graph_bs_decode
    assert refusal(case) is None
    assert parse(json.loads(case.dumps())) == case


def _obs(case) -> ServerObs:
    """What a correct release does with SPEC: prefill slots 1, 2; the reserve 3..6 (2 committed
    + 2 x 2 draft tokens); verify and draft extend over positions 2, 3 (slots 3, 4)."""
    assert reserve(case.config) == 4
    rb = case.model.row_bytes
    pool = bytearray([POISON_BYTE] * rb * 33)
    for fwd, slots in ((0, [1, 2]), (1, [3, 4])):
        for slot, row in zip(slots, rows(case, fwd, 0, 2)):
            pool[slot * rb:(slot + 1) * rb] = row
    return ServerObs(
        forwards=[ForwardRec(0, "EXTEND", alloc=[[1, 1], [2, 2]], stores=[[1, 2]]),
                  ForwardRec(1, "DECODE", alloc=[[3, 3], [4, 4], [5, 5], [6, 6]], stores=[[3, 4]],
                             mapping=list(range(33)))],
        pools=[bytes(pool)],
        spec=[{"index": 1, "bs": 1, "draft": [],
               "verify": {"out_cache_loc": [3, 4], "positions": [2, 3], "seq_lens": [2],
                          "stores": [[3, 4]]},
               "draft_extend": {"out_cache_loc": [3, 4], "positions": [2, 3],
                                "stores": [[3, 4]]},
               "committed": [4], "allocated": [6], "seq_lens": [4],
               "free": {"full": 25, "swa": 25, "dups": [0, 0]},
               "rows": [[1, 2, 3, 4, 5, 6]]}],
        free={"before": [31, 31], "after": [31, 31]})


def _break(obs, path, value):
    node = obs
    for k in path[:-1]:
        node = node[k] if isinstance(node, (dict, list)) else getattr(node, k)
    if isinstance(node, (dict, list)):
        node[path[-1]] = value
    else:
        setattr(node, path[-1], value)


@pytest.mark.parametrize("path,value,check", [
    (("forwards", 1, "alloc"), [[3, 3], [4, 4]], "spec_alloc"),
    (("forwards", 1, "alloc"), [[3, 3], [4, 4], [5, 5], [1, 1]], "spec_alloc"),
    (("spec", 0, "verify", "out_cache_loc"), [4, 5], "verify_rows"),
    (("spec", 0, "verify", "stores"), [[3, 0]], "write_targets"),
    (("spec", 0, "draft_extend", "stores"), [[3, 0]], "draft_extend"),
    (("spec", 0, "draft_extend", "out_cache_loc"), [5, 6], "draft_extend"),
    (("spec", 0, "committed"), [3], "spec_accept"),
    (("spec", 0, "allocated"), [5], "spec_accept"),
    (("spec", 0, "rows"), [[1, 2, 3, 4, 5]], "spec_accept"),
    (("spec", 0, "draft"), [{"out_cache_loc": [3], "stores": [[3]]}], "draft_decode"),
    (("forwards", 1, "mapping"), [0] * 33, "window_reads"),
    (("free", "after"), [30, 31], "spec_leak"),
    (("free", "dups"), [0, 1], "spec_leak"),
    (("spec", 0, "free", "full"), 27, "spec_pool"),
    (("spec", 0, "free", "dups"), [1, 0], "spec_pool"),
    (("pools",), [bytes([POISON_BYTE]) * 16 * 33], "pool_bytes"),
])
def test_each_check_reads_its_piece(path, value, check):
    case = parse(copy.deepcopy(SPEC))
    assert judge(case, _obs(case)) == []
    obs = _obs(case)
    _break(obs, path, value)
    assert [f.check for f in judge(case, obs)][:1] == [check]


def test_a_raised_run_reports_what_it_observed_first():
    case = parse(copy.deepcopy(SPEC))
    obs = _obs(case)
    obs.error = "AssertionError: (at allocator)"
    assert [f.check for f in judge(case, obs)] == ["contracts"]
    obs.spec[0]["free"]["full"] = 27
    assert [f.check for f in judge(case, obs)] == ["spec_pool", "contracts"]


def _graph_obs(case, exec_="eager") -> ServerObs:
    """``_obs`` with decode graphs of size 2: the lone request's verify padded to bucket 2 by
    the release's verify graph runner (request row 2: 0.5.23's free list hands out its tail)."""
    obs = _obs(case)
    obs.target_version = "sglang 0.5.23"
    v = obs.spec[0]["verify"]
    v["graph"] = {"bucket": 2, "raw_bs": 1, "out_cache_loc": [3, 4, 0, 0],
                  "positions": [2, 3, 0, 0], "seq_lens": [2, 1], "req_pool_indices": [2, 0]}
    v["exec"] = exec_
    if exec_ == "graph":  # the replay's padded rows write the dummy slot
        v["stores"] = [[3, 4, 0, 0]]
    return obs


@pytest.mark.parametrize("key,value", [
    ("bucket", 1), ("raw_bs", 2), ("out_cache_loc", [3, 4, 3, 4]), ("positions", [2, 3, 2, 3]),
    ("seq_lens", [2, 0]), ("req_pool_indices", [2, 2])])
def test_verify_graph_predicts_every_padded_row(key, value):
    spec = copy.deepcopy(SPEC)
    spec["config"].update(disable_cuda_graph=False, cuda_graph_bs_decode=[2])
    case = parse(spec)
    for exec_ in ("eager", "graph"):
        assert judge(case, _graph_obs(case, exec_)) == []
    obs = _graph_obs(case)
    obs.spec[0]["verify"]["graph"][key] = value
    assert [f.check for f in judge(case, obs)] == ["verify_graph"]


def test_verify_graph_expects_eager_past_the_largest_bucket_and_a_fill_within():
    spec = copy.deepcopy(SPEC)
    spec["config"].update(disable_cuda_graph=False, cuda_graph_bs_decode=[2])
    case = parse(spec)
    obs = _obs(case)  # no fill recorded for a batch a captured size holds
    assert [f.check for f in judge(case, obs)] == ["verify_graph"]
    eager = parse(copy.deepcopy(SPEC))
    assert [f.check for f in judge(eager, _graph_obs(eager))] == ["verify_graph"]
    replayed = _graph_obs(case, "graph")
    replayed.spec[0]["verify"]["stores"] = [[3, 4, 3, 4]]  # padded rows into live slots
    assert [f.check for f in judge(case, replayed)][:1] == ["write_targets"]
