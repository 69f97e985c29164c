"""Ledger entry ``window-dp-decode-extend-pad-joins-run`` from the release's own padding (issue 18
item 3): DP attention tp 2 / dp 2 with the pplx all-to-all (``--moe-a2a-backend pplx``,
``--disable-prefill-cuda-graph``) on 2 gloo processes (``features/dp/sglang_sync.py``; the
workers seed the MoE flags with the release's ``initialize_moe_config`` as its scheduler does).
One rank extends, the other decodes: the release's ``prepare_mlp_sync_batch`` relabels the
decode rank EXTEND and pads it; that batch, handed to the component-level window path, shows
the finding. Also ``ring-a4-resolver-fallback-dp-eager``'s one route to a DSpark draft block
with an extend in the batch (where MAX_LEN would relabel it): the coordinated step, which the
release keeps SUM_LEN. Marker ``upstream``; one bring-up per module (~25 s on 2 shared cores).
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None, reason="sglang is not installed")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUNDLE = os.path.join(ROOT, "tests", "data", "bundles", "sglang",
                      "window_dp_decode_extend_pad_joins_run.json")
PPLX = {"moe_a2a_backend": "pplx", "disable_prefill_cuda_graph": True}
#: the release's pplx argument check (``moe_hook.handle_a2a_moe``) needs the dispatch budget to
#: cover the chunked-prefill size: the ledger entry's ``env`` (the ranks start with it)
ENV = {"SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "8192"}


def _config():
    from swafuzz.server.case import ServerConfig
    return ServerConfig(tp_size=2, dp_size=2, enable_dp_attention=True,
                        enable_encoder_swa_bounded_replay=True, env=tuple(ENV.items()), **PPLX)


CONFIG = _config()
SERVER_BUNDLE = os.path.join(ROOT, "tests", "data", "bundles", "sglang",
                             "server_window_dp_decode_extend_pad_joins_run.json")


def _listed_release(eid: str) -> None:
    """Skip unless the installed release is one the ledger entry lists (both: 0.5.23)."""
    from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, load_ledger, release_matches
    from swafuzz.targets.sglang import installed_version

    e = next(e for e in load_ledger(DEFAULT_LEDGER) if e.id == eid)
    if not any(release_matches(r, installed_version()) for r in e.releases):
        pytest.skip(f"entry {eid} lists {list(e.releases)}; installed {installed_version()}")


@pytest.fixture(scope="module")
def dp2pplx():
    import sglang

    from swafuzz.features.dp.sglang_sync import ServerShape, missing

    _listed_release("window-dp-decode-extend-pad-joins-run")
    _listed_release("ring-a4-resolver-fallback-dp-eager")
    site = os.path.dirname(os.path.dirname(sglang.__file__))
    if missing(site):
        pytest.skip(f"the release lacks the DP bring-up this hop drives: {missing(site)}")
    # the server-level Case's config, handed to the ranks as the server level does; the
    # server level's own DPSync for that shape, shared with the server-level tests below
    from swafuzz.features.dp import sglang_server_pad
    from swafuzz.server.case import ServerConfig
    shape, env = sglang_server_pad.rank_shape(CONFIG)
    assert shape == ServerShape(tp_size=2, dp_size=2, enable_dp_attention=True, extra=PPLX)
    assert env == ENV and isinstance(CONFIG, ServerConfig)
    try:
        yield sglang_server_pad.sync_for(CONFIG)
    finally:
        sglang_server_pad.close_all()


def _step(d, peer_tokens: int, seq=(9,), loc=(12,)):
    from swafuzz.features.dp.sglang_sync import RankInput

    ext = RankInput("extend", (peer_tokens + 1,), (peer_tokens,),
                    tuple(range(40, 40 + peer_tokens)))
    return d.step([ext, RankInput("decode", tuple(seq), (), tuple(loc))], cuda_graph=True)


def test_pplx_relabels_a_decode_rank_extend(dp2pplx):
    """pplx makes the step MAX_LEN although a rank extends (``get_dp_padding_mode``), so
    ``prepare_mlp_sync_batch`` relabels the decode rank EXTEND (``materializes_dummy_extend``:
    1-token extends) and pads it to the extend rank's count: ``out_cache_loc`` [12, 0, 0] for
    its one row, positions [8, 0, 0], ``extend_seq_lens`` [1]. Without pplx the same step is
    SUM_LEN and the decode rank stays DECODE
    (``test_sglang_dp_sync.py::test_extend_in_batch_is_sum_len_no_rewrite``). The ranks vote
    as with CUDA graphs on: neither graph runs the step, so the relabelled batch is eager."""
    ext, dec = _step(dp2pplx, 3)
    assert ext["padded"]["padding_mode"] == dec["padded"]["padding_mode"] == "MAX_LEN"
    assert ext["padded"]["out_cache_loc"] == [40, 41, 42]
    p = dec["padded"]
    assert (p["mode"], p["original_mode"]) == ("EXTEND", "DECODE")
    assert (p["out_cache_loc"], p["positions"], p["extend_seq_lens"], p["seq_lens"],
            p["batch_size"], p["extend_num_tokens"]) == ([12, 0, 0], [8, 0, 0], [1], [9], 1, 1)
    assert dec["after_post"]["logits_rows"] == 1       # the epilogue keeps the real row
    # eager: the extending rank votes the decode graph off (min over the ranks; the decode
    # runner's can_run_graph asks that vote under MLP sync) and the prefill graph is disabled;
    # two decoding ranks would vote it on
    # and no prefill graph, so the decode rank is not converted (the relabelling is pplx's)
    assert ext["votes"] == {"decode_graph": False, "prefill_graph": False,
                            "extend_in_batch": True}
    assert dec["votes"] == dict(ext["votes"], converted=False)
    from swafuzz.features.dp.sglang_sync import RankInput
    both = dp2pplx.step([RankInput("decode", (9,), (), (12,))] * 2, cuda_graph=True)
    assert [o["votes"]["decode_graph"] for o in both] == [True, True]


def _decode_run(d, monkeypatch, peer_tokens: int):
    """The bundle's Case (admit 1, then ``dp_decode`` with ``dp_extend``) with the decode rank's
    padding taken from the release (the peer extends ``peer_tokens``): (verdict, handed)."""
    from dataclasses import replace

    from swafuzz.features.dp.sglang_sync import RankInput
    from swafuzz.features.request_window.dspark.sglang_release_pad import ReleasePaddedDSpark
    from swafuzz.features.request_window.sglang import SGLangWindowPath
    from swafuzz.features.validation import load_case
    from swafuzz.harness.pipeline.execute import execute

    def padder(seq, ext, loc):
        assert ext == [1] * len(seq)              # a decode rank's rows
        peer = RankInput("extend", (peer_tokens + 1,), (peer_tokens,),
                         tuple(range(40, 40 + peer_tokens)))
        out = d.step([peer, RankInput("decode", tuple(seq), (), tuple(loc))])[1]["padded"]
        assert (out["mode"], out["original_mode"]) == ("EXTEND", "DECODE"), out
        return out["out_cache_loc"], out["positions"]

    monkeypatch.setattr(SGLangWindowPath, "dspark_cls", ReleasePaddedDSpark)
    monkeypatch.setattr(ReleasePaddedDSpark, "padder", staticmethod(padder))
    monkeypatch.setattr(ReleasePaddedDSpark, "handed", [])
    with open(BUNDLE) as f:
        case = load_case(json.load(f)["case"])
    case = replace(case, steps=tuple(replace(s, rank_tokens=(peer_tokens,))
                                     if s.op == "dp_decode" else s for s in case.steps))
    return execute(case, "sglang", "torch", ["eager"]), ReleasePaddedDSpark.handed


def test_decode_window_finding_reproduces_from_release_padding(dp2pplx, monkeypatch):
    """The ledger bundle's ``dp_decode`` (``dp_extend``, request window, no tail) with its
    padding from the release under pplx: a peer extending 2 tokens pads the relabelled decode
    rank to ``[loc, 0]`` / positions ``[1, 0]`` and the window / history checks fail as the
    ledger says; a peer extending 1 token leaves it unpadded and the Case passes."""
    from swafuzz.targets import sglang as sg
    if sg.release()[1] != "0.5.23":
        pytest.skip("the request window exists on adapter 0.5.23 only")
    v, handed = _decode_run(dp2pplx, monkeypatch, 2)
    assert len(handed) == 1 and handed[0]["rows"] == 1
    assert handed[0]["out_cache_loc"][1:] == [0] and handed[0]["positions"] == [1, 0]
    msgs = [f.message for f in v.failures]
    assert any("history row" in m for m in msgs), msgs
    assert {f.check for f in v.failures} >= {"window", "history"}
    v, handed = _decode_run(dp2pplx, monkeypatch, 1)
    assert len(handed) == 1 and len(handed[0]["out_cache_loc"]) == handed[0]["rows"] == 1
    assert not v.failures, [f.message for f in v.failures]


def test_coordinated_draft_block_is_never_relabelled(dp2pplx):
    """Ledger ``ring-a4-resolver-fallback-dp-eager``: a DSpark draft block meets an extend in the
    batch only on a coordinated step (``SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION``, set for
    the step's gather only: ``sglang_sync.PATCHED``; a peer prefilling; the release's ``DPSpecPrefillCoordinationPlan`` for the draft phase: counts 0
    for the prefill rank, 2 x 4 here). Even under pplx (MAX_LEN) ``prepare_mlp_sync_batch``
    keeps a coordinated step SUM_LEN: the block stays TARGET_VERIFY, unpadded, stamped, and
    the resolver returns the stamp. Without that rule (mutant ``coordination_keeps_max_len``)
    the step is MAX_LEN with an extend in the batch, the block is relabelled EXTEND
    (``materializes_dummy_extend``), gets no ring stamp, and every row falls to ``M`` (-1):
    the A4 symptom."""
    from swafuzz.features.dp.sglang_sync import RankInput

    ranks = [RankInput("extend", (4,), (3,), (5, 6, 7)),
             RankInput("decode", (5, 20), (), (21, 22, 23, 24, 31, 32, 33, 34))]
    ext, dec = dp2pplx.draft_block(ranks, 4, coordinate=True)
    assert not ext["ran"] and ext["gathered"] == [3, 2]
    assert dec["heterogeneous"] and dec["scaled"] == [0, 8]
    pad, _, meta, *stores = dec["log"]
    assert pad == {"event": "padding", "out_cache_loc": 8, "mode": "SUM_LEN",
                   "forward_mode": "TARGET_VERIFY"}
    assert meta["out_cache_loc"] == meta["stamp"] == 8
    assert {(s["out_cache_loc"], s["branch"]) for s in stores} == {(8, "stamp")}
    bad = dp2pplx.draft_block(ranks, 4, coordinate=True,
                              mutant="coordination_keeps_max_len")[1]["log"]
    assert bad[0]["mode"] == "MAX_LEN" and bad[0]["forward_mode"] == "EXTEND"
    assert bad[2]["event"] == "metadata" and bad[2]["stamp"] is None
    assert {s["branch"] for s in bad[3:]} == {"translate"} and bad[3]["swa_loc"] == [-1] * 8


def _server_run(mutant: str | None = None, window: bool = True, peer_prompt: int = 2):
    """The entry's server-level bundle Case (``window``: encoder replay; ``peer_prompt``: rank
    1's prompt) through the server level's two attention-DP ranks, with server mutant
    ``mutant``."""
    from swafuzz.harness.pipeline.level_server import execute_server, pipeline_of
    from swafuzz.server.case import parse

    with open(SERVER_BUNDLE) as f:
        case = json.load(f)["case"]
    case["config"]["enable_encoder_swa_bounded_replay"] = window
    case["requests"][1]["prompt_len"] = peer_prompt
    return execute_server(parse(case), pipeline_of("sglang"), ["eager"], mutant, "torch")


def test_server_level_dp_ranks_pad_each_rank_and_pass_without_the_window(dp2pplx):
    """Two attention-DP ranks in one server-level run on the release's MLP sync (the shared
    ranks): without the request window the bundle's Case passes; rank 0's DECODE beside rank 1's
    2-token EXTEND ran as the release's relabelled EXTEND of 2 rows, its padding row stored at
    the dummy slot 0. The server mutant ``server_pad_live_loc`` (spec §9.5: padding rows at a
    live location) is killed on those ranks."""
    r = _server_run(window=False)
    assert not r.failed, [f.message for f in r.failures]
    bad = _server_run("server_pad_live_loc", window=False)
    assert bad.failed and bad.failures[0].check in ("contracts", "write_targets"), bad.failures
    assert "rank 0: " in bad.failures[0].message


def test_server_level_dp_window_fails_only_with_a_padding_row(dp2pplx):
    """With the window: rank 1 extending 2 tokens pads rank 0's relabelled EXTEND and the Case
    fails with the entry's signature; rank 1 extending 1 token (relabelled, no padding row)
    passes."""
    bad = _server_run()
    assert bad.signature() == "server:window_history", bad.failures
    rank0 = bad.observed["ranks"][0]["forwards"][1]
    assert (rank0["mode"], rank0["positions"]) == ("EXTEND", [1, 0])
    ok = _server_run(peer_prompt=1)
    assert not ok.failed, [f.message for f in ok.failures]
