"""Server-level Cases: JSON round trip, validation (exit 2 naming the field), strategies that
shrink, the schedule plan and the oracle on hand-made observations (torch-free, fast)."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings

from swafuzz.harness.cli.commands import main as cli_main
from swafuzz.scenarios.case import CaseError
from swafuzz.server.case import ServerCase, parse
from swafuzz.server.observation import ForwardRec, ServerObs
from swafuzz.server.oracle import judge, rows
from swafuzz.server.run import refusal
from swafuzz.server.strategies import server_cases
from swafuzz.server.timeline import Forward, Release, plan

LEDGER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "ledger", "known_failures.json")
BASE = {"config": {"page_size": 1}, "model": {"full_tokens": 64, "swa_tokens": 32,
                                               "sliding_window": 2, "layers": 1},
        "requests": [{"prompt_len": 3, "max_new_tokens": 2},
                     {"prompt_len": 2, "max_new_tokens": 1, "arrive_step": 1}]}


@settings(max_examples=30)
@given(server_cases("server_mixed"))
def test_round_trip(case):
    assert parse(json.loads(case.dumps())) == case


@pytest.mark.parametrize("path,value,needle", [
    (("config", "page_size"), 3, "config.page_size: must be a power of two in [1, 64] (got 3)"),
    (("config", "speculative_algorithm"), "MEDUSA", "config.speculative_algorithm: must be one of null, EAGLE,"),
    (("config", "bogus"), 1, "config.bogus: unknown field; allowed: chunked_prefill_size,"),
    (("model", "row_bytes"), 5, "model.row_bytes: must be in [8, 64] (got 5)"),
    (("requests", 0, "prompt_len"), 0, "requests[0].prompt_len: must be in [1, 512] (got 0)"),
    (("requests", 0, "rank"), 1, "requests[0].rank: a rank in 0..0"),
    (("requests", 0, "accept_lengths"), [1], "requests[0].accept_lengths: empty expected"),
])
def test_validation_names_the_field(path, value, needle):
    obj = json.loads(json.dumps(BASE))
    d = obj
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    with pytest.raises(CaseError) as e:
        parse(obj)
    assert needle in str(e.value)


def test_plan():
    ev = plan(parse(BASE))
    assert ev == [Forward(0, 0, "EXTEND", (0,), ((0, 3),)),
                  Forward(1, 1, "EXTEND", (1,), ((0, 2),)),
                  Release(2, (1,), ()),
                  Forward(2, 2, "DECODE", (0,), ((3, 1),)),
                  Release(3, (0,), ())]


def test_strategy_shrinks_to_the_smallest_case():
    from hypothesis import find

    case = find(server_cases("server_decode"), lambda c: True)
    assert len(case.requests) == 1 and case.config.page_size == 1
    assert case.requests[0].prompt_len == 1 and case.config.speculative_algorithm is None


def test_window_kinds_shrink_to_one_request_on_one_rank():
    from hypothesis import find

    case = find(server_cases("server_window"), lambda c: True)
    assert len(case.requests) == 1 and case.config.tp_size == 1
    assert case.config.enable_encoder_swa_bounded_replay and case.requests[0].prompt_len == 1
    assert case.model.sliding_window % case.config.page_size == 0
    tail = find(server_cases("server_window_tail"), lambda c: True)
    assert len(tail.requests) == 1 and tail.requests[0].prompt_len == 385
    assert tail.config.enable_decoder_swa_bounded_replay and tail.model.late_layer_start == 1
    # the late layer's field stays out of the JSON of a Case without the tail (older bundles
    # and draws re-emit byte for byte)
    assert "late_layer_start" not in case.to_json()["model"]
    assert parse(tail.to_json()) == tail


def _obs(case: ServerCase, shift: int = 0) -> ServerObs:
    obs, nxt = ServerObs(), 1
    for ev in plan(case):
        if isinstance(ev, Release):
            continue
        alloc = [[nxt + i, nxt + i] for i in range(ev.rows)]
        nxt += ev.rows
        stores = [[s + shift for _, s in alloc] for _ in range(case.model.layers)]
        obs.forwards.append(ForwardRec(ev.index, ev.mode, alloc, stores))
    pool = bytearray(b"\x5a" * 16 * 32)
    for f in obs.forwards:
        for s, row in zip(f.stores[0], rows(case, f.index, 0, len(f.stores[0]))):
            pool[s * 16:(s + 1) * 16] = row
    obs.pools = [bytes(pool)]
    return obs


def test_oracle_accepts_a_correct_run_and_catches_a_shift():
    case = parse(BASE)
    assert judge(case, _obs(case)) == []
    bad = judge(case, _obs(case, shift=1))
    assert bad and bad[0].check == "write_targets"


def test_oracle_catches_a_short_allocation_and_a_reused_slot():
    case = parse(BASE)
    obs = _obs(case)
    obs.forwards[2].alloc = []
    assert judge(case, obs)[0].check == "alloc_count"
    obs = _obs(case)
    obs.forwards[1].alloc[0] = [1, 1]  # full slot 1 is request 0's
    assert judge(case, obs)[0].check == "allocation"


def test_refusals_name_the_field():
    spec = json.loads(json.dumps(BASE))
    spec["config"].update(speculative_algorithm="EAGLE", speculative_num_steps=1,
                          speculative_eagle_topk=1, speculative_num_draft_tokens=3)
    assert "config.speculative_algorithm" in refusal(parse(spec))
    assert refusal(parse(BASE)) is None


def test_cli_level_server_refuses_other_targets(capsys, tmp_path):
    assert cli_main(["run", "--target", "unified", "--level", "server", "--examples", "1",
                     "--out", str(tmp_path / "o")]) == 2
    assert "target unified has no server-level pipeline" in capsys.readouterr().err


def test_graph_bucket_is_the_smallest_captured_size():
    from swafuzz.server.oracle import graph_bucket

    obj = json.loads(json.dumps(BASE))
    obj["config"].update(disable_cuda_graph=False, cuda_graph_bs_decode=[2, 4])
    case = parse(obj)
    assert [graph_bucket(case, "DECODE", b, True) for b in (1, 2, 3, 4, 5)] == [2, 2, 4, 4, None]
    assert graph_bucket(case, "EXTEND", 1, True) is None
    assert graph_bucket(case, "DECODE", 1, False) is None
    assert graph_bucket(parse(BASE), "DECODE", 1, True) is None


def test_graph_without_batch_sizes_is_refused():
    obj = json.loads(json.dumps(BASE))
    obj["config"].update(disable_cuda_graph=False)
    assert "config.cuda_graph_bs_decode" in refusal(parse(obj))


def test_server_mutant_flag_needs_the_level_and_a_known_name(capsys, tmp_path):
    assert cli_main(["run", "--target", "unified", "--server-mutant", "x", "--examples", "1",
                     "--out", str(tmp_path / "a")]) == 2
    assert "--server-mutant: only with --level server" in capsys.readouterr().err
    assert cli_main(["run", "--target", "sglang", "--level", "server", "--server-mutant", "nope",
                     "--examples", "1", "--out", str(tmp_path / "b")]) == 2
    assert "server_decode_stale_loc" in capsys.readouterr().err


def test_hop_table_lists_every_hop_and_mutant():
    from swafuzz.targets.mutants import load_server
    from swafuzz.targets.sglang.pipeline.hops import HOPS, NOT_DRIVEN, OLDER_SHAPE, hop_text

    text = hop_text()
    statuses = ("real", "modelled", "absent", "refused", "not driven")
    assert all(h in text and s in statuses for h, s, _ in HOPS + NOT_DRIVEN)
    hops = {h for h, _, _ in HOPS}
    assert all(h in hops and s in statuses for h, (s, _) in OLDER_SHAPE.items())
    assert "ForwardBatch.init_new" in text and "0.5.12: from the batch's get_model_worker_batch" \
        in " ".join(text.split())
    assert "  real      refused   MLP sync, data-parallel / attention-TP padding" in text
    assert len(load_server()) == 41 and all(n in text for n in load_server())


def test_server_kind_without_the_level_names_the_flag(capsys, tmp_path):
    assert cli_main(["run", "--target", "unified", "--scenario", "server_decode", "--examples",
                     "1", "--out", str(tmp_path / "a")]) == 2
    assert "add --level server" in capsys.readouterr().err


def test_plan_chunks_a_long_prompt():
    obj = json.loads(json.dumps(BASE))
    obj["config"]["chunked_prefill_size"] = 2
    ev = plan(parse(obj))
    fw = [(e.mode, e.rids, e.spans) for e in ev if isinstance(e, Forward)]
    assert fw[:3] == [("EXTEND", (0,), ((0, 2),)), ("EXTEND", (0, 1), ((2, 1), (0, 1))),
                      ("EXTEND", (1,), ((1, 1),))]
    assert all(m == "DECODE" for m, _, _ in fw[3:])


@pytest.mark.parametrize("sigs,needle", [
    (["window_ring"], "field 'signatures' must be a non-empty list"),
    ([], "field 'signatures' must be a non-empty list")])
def test_server_level_ledger_schema_errors_exit_2_naming_the_field(sigs, needle, capsys,
                                                                  tmp_path):
    """``--ledger FILE`` at server level: a malformed server answer is refused before anything
    is written (exit 2, the field named)."""
    with open(LEDGER) as f:
        ledger = json.load(f)
    e = next(e for e in ledger["entries"] if (e.get("server") or {}).get("signatures"))
    e["server"]["signatures"] = sigs
    bad = tmp_path / "ledger.json"
    bad.write_text(json.dumps(ledger))
    assert cli_main(["run", "--target", "sglang", "--level", "server", "--examples", "1",
                     "--ledger", str(bad), "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"error: --ledger: {bad}: " in err and f".server: {needle}" in err, err
    assert not (tmp_path / "a").exists()


def test_plan_follows_observed_retractions_and_admissions():
    obj = json.loads(json.dumps(BASE))
    obj["requests"] = [{"prompt_len": 2, "max_new_tokens": 3}, {"prompt_len": 2,
                                                                "max_new_tokens": 3}]
    case = parse(obj)
    ev = plan(case, retractions={2: ((1,), (0,))}, admissions={0: 1})
    kinds = [(type(e).__name__, getattr(e, "mode", None), e.rids) for e in ev]
    assert kinds[:4] == [("Forward", "EXTEND", (0,)), ("Forward", "EXTEND", (1,)),
                         ("Retract", None, (1,)), ("Forward", "DECODE", (0,))]
    reprefill = next(e for e in ev[4:] if isinstance(e, Forward) and e.mode == "EXTEND")
    assert reprefill.rids == (1,) and reprefill.spans == ((0, 3),)  # prompt + 1 generated


def test_oracle_refuses_a_retraction_that_is_not_a_split():
    obj = json.loads(json.dumps(BASE))
    obj["requests"] = [{"prompt_len": 2, "max_new_tokens": 3}] * 2
    case = parse(obj)
    obs = _obs(case)
    obs.retractions = {1: [[1], [1]]}  # request 1 both retracted and kept
    bad = judge(case, obs)
    assert bad and bad[0].check == "retraction"


def test_plan_and_oracle_on_a_retraction_that_keeps_nothing():
    """Every running request retracted: no DECODE that step (the scheduler's
    update_running_batch), and the oracle names it (the release keeps one)."""
    obj = json.loads(json.dumps(BASE))
    obj["requests"] = [{"prompt_len": 2, "max_new_tokens": 3}]
    case = parse(obj)
    ev = plan(case, retractions={1: ((0,), ())})
    assert [(type(e).__name__, getattr(e, "mode", None)) for e in ev[:3]] == [
        ("Forward", "EXTEND"), ("Retract", None), ("Forward", "EXTEND")]
    obs = _obs(case)
    obs.retractions = {1: [[0], []]}
    bad = judge(case, obs)
    assert bad and bad[0].check == "retraction" and "keeps one" in bad[0].message

def _draw_digest(kind: str) -> str:
    """sha256 prefix of 40 derandomized draws of ``kind`` (their JSON, in order)."""
    import hashlib

    from hypothesis import Phase

    out: list[str] = []

    @settings(max_examples=40, derandomize=True, database=None, deadline=None,
              phases=(Phase.generate,), suppress_health_check=list(HealthCheck))
    @given(server_cases(kind))
    def one(case):
        out.append(case.dumps())

    one()
    return hashlib.sha256("\n".join(out).encode()).hexdigest()[:16]


#: the draws of the kinds before ``server_window`` (recorded on main at 3ec09be with this
#: helper): a new kind draws after them, so theirs stay byte-identical
OLDER_DRAWS = {"server_decode": "8b0defa25ee04194", "server_mixed": "d90d6acaf0dd55e0", "server_graph": "ec83d44ac11fd13b",
               "server_attn_tp": "106321b85cc550e9",
               # the feature kinds, recorded at ae41775 (before their move into the features'
               # folders: the move keeps their draws)
               "server_window": "6fec998d115cf3dd", "server_window_tail": "58b10af968e73242",
               "server_dp": "1f6b5cf16edf0146",
               # recorded at 848b6f8, before speculative decoding's move into its own feature
               "server_spec": "730fda0fbb7c2706"}


@pytest.mark.parametrize("kind", sorted(OLDER_DRAWS))
def test_older_kinds_draw_as_before(kind):
    assert _draw_digest(kind) == OLDER_DRAWS[kind]


@pytest.mark.parametrize("flag,allowed", [(["--impl", "nope"], "auto, cuda, torch, triton"),
                                          (["--executor", "x"], "all, auto, cudagraph, eager")])
def test_server_level_names_a_bad_impl_or_executor(flag, allowed, capsys, tmp_path):
    assert cli_main(["run", "--target", "sglang", "--level", "server", "--examples", "1",
                     "--out", str(tmp_path / "a")] + flag) == 2
    err = capsys.readouterr().err
    assert f"{flag[0]}: {flag[1]!r} is not allowed; choose one of: {allowed}" in err, err
    assert not (tmp_path / "a").exists()
