"""Issue 18 item 2, the padding hop: SGLang's own MLP-sync / DP / attention-TP padding on real
process groups (2 processes, gloo over 127.0.0.1; ``features/dp/sglang_sync.py``), compared with
swafuzz's DP model (``features/dp``: ``DPAttention`` = hook ``engine.rank_pad``, ``batch_pad``),
and the reachability of ledger entry ``window-dp-extend-pad-joins-run`` from the release's own
padding. Marker ``upstream``; skipped without sglang or on a release without the bring-up
(0.5.12). One module fixture per server shape (its bring-up: ~45 s on 2 shared cores); each
test's steps then take well under a second. Reproduce:
``$(scripts/upstream-env 0.5.23) -m pytest tests/features/dp/test_sglang_dp_sync.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest
import torch

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None, reason="sglang is not installed")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUNDLE = os.path.join(ROOT, "tests", "data", "bundles", "sglang",
                      "window_dp_extend_pad_joins_run.json")


def _sync(shape):
    import sglang

    from swafuzz.features.dp.sglang_sync import DPSync, missing

    site = os.path.dirname(os.path.dirname(sglang.__file__))
    if missing(site):
        pytest.skip(f"the release lacks the DP bring-up this hop drives: {missing(site)}")
    return DPSync(shape)  # no fixed limit: --start-timeout's default (swafuzz.machinery)


def test_a_stuck_rank_start_is_the_harness_not_the_release(monkeypatch):
    """Issue 27: ranks that never progress at start-up (SWAFUZZ_FAULTS=stuck-rank-start) end in
    a StartTimeout naming them, a HarnessError (exit 3), never a DPSyncError finding; the ranks
    are stopped. A stuck rank never beats, so no load makes this pass or fail by the clock."""
    import multiprocessing

    from swafuzz.features.dp.sglang_sync import DPSync, DPSyncError, ServerShape
    from swafuzz.machinery import HarnessError, StartTimeout

    monkeypatch.setenv("SWAFUZZ_FAULTS", "stuck-rank-start")
    before = set(multiprocessing.active_children())
    try:
        d = DPSync(ServerShape(tp_size=2, dp_size=2, enable_dp_attention=True), start_timeout=2)
    except DPSyncError as e:  # a release without the bring-up (0.5.12)
        pytest.skip(str(e))
    with pytest.raises(StartTimeout, match=r"rank\(s\) 0, 1 of 2 .* no progress for 2 s") as e:
        d.__enter__()
    assert isinstance(e.value, HarnessError) and not d.procs
    assert not [p for p in multiprocessing.active_children() if p not in before]


@pytest.fixture(scope="module")
def dp2():
    """DP attention, tp 2, dp 2: attention TP 1, two attention-DP ranks."""
    from swafuzz.features.dp.sglang_sync import ServerShape
    with _sync(ServerShape(tp_size=2, dp_size=2, enable_dp_attention=True)) as d:
        yield d


@pytest.fixture(scope="module")
def atp2():
    """tp 2 with ``--moe-dense-tp-size 1``: attention TP 2, MLP sync on (the gathered buffer)."""
    from swafuzz.features.dp.sglang_sync import ServerShape
    with _sync(ServerShape(tp_size=2, moe_dense_tp_size=1)) as d:
        yield d


@pytest.fixture(scope="module")
def tp2s():
    """Pure TP 2 with ``--enable-attn-tp-input-scattered`` (no MLP sync)."""
    from swafuzz.features.dp.sglang_sync import ServerShape
    with _sync(ServerShape(tp_size=2, enable_attn_tp_input_scattered=True)) as d:
        yield d


def _model_pad(mode: str, seq, loc, padded: int, pad_cls=None) -> dict:
    """swafuzz's DP model on the same batch: the engine's ``rank_pad`` class (hook
    ``engine.rank_pad``: ``DPAttention``) or ``pad_cls``."""
    from swafuzz.targets.engine import UnifiedEngine
    from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode

    dp = (pad_cls or UnifiedEngine.rank_pad_cls)()
    if mode == "idle":
        fb = dp.idle_batch()
    else:
        t = torch.tensor
        fb = ForwardBatch(ForwardMode.DECODE, len(seq), t(loc, dtype=torch.int64),
                          t(seq, dtype=torch.int64), t([s - 1 for s in seq], dtype=torch.int64))
    dp.pad_inputs_to_size(fb, padded)
    return {"batch_size": fb.batch_size, "out_cache_loc": fb.out_cache_loc.tolist(),
            "positions": fb.positions.tolist(), "seq_lens": fb.seq_lens.tolist(),
            "mode": fb.forward_mode.name}


def _pick(d: dict) -> dict:
    return {k: d[k] for k in ("batch_size", "out_cache_loc", "positions", "seq_lens", "mode")}


def test_parallel_state_is_the_releases_on_gloo(dp2, atp2):
    for d, atp, adp in ((dp2, 1, 2), (atp2, 2, 1)):
        assert [f["tp_group_backend"] for f in d.facts] == ["gloo", "gloo"]
        assert {f["attn_tp_size"] for f in d.facts} == {atp}
        assert {f["attn_dp_size"] for f in d.facts} == {adp}
        assert all(f["require_mlp_sync"] for f in d.facts)
    assert [f["attn_dp_rank"] for f in dp2.facts] == [0, 1]
    assert [f["attn_tp_rank"] for f in atp2.facts] == [0, 1]


DECODE_STEPS = (
    ("decode+decode", ("decode", (5,), (11,)), ("decode", (3, 4, 9), (7, 8, 9))),
    ("decode+idle", ("decode", (2, 6), (4, 5)), ("idle", (), ())),
    ("idle+decode", ("idle", (), ()), ("decode", (2,), (6,))),
)


def _decode_mismatches(d, pad_cls=None, mutant=None) -> list:
    """Run DECODE_STEPS through the release (``mutant``: a release mutant); every rank's padded
    batch that differs from the model's (``pad_cls``: a DPAttention class, default the
    engine's)."""
    from swafuzz.features.dp.sglang_sync import RankInput

    bad = []
    for name, *spec in DECODE_STEPS:
        ranks = [RankInput(m, seq, (), loc) for m, seq, loc in spec]
        out = d.step(ranks, mutant=mutant)
        counts = [len(r.out_cache_loc) for r in ranks]
        for j, (r, o) in enumerate(zip(ranks, out)):
            assert o["ran"] and o["path"] == "mlp_sync", o
            assert o["gathered"] == counts and o["padded"]["padding_mode"] == "MAX_LEN"
            # the epilogue restores the batch size and slices seq_lens / positions back
            assert o["after_post"]["batch_size"] == len(r.seq_lens)
            assert o["after_post"]["seq_lens"] == list(r.seq_lens)
            model = _model_pad(r.mode, r.seq_lens, r.out_cache_loc, max(counts), pad_cls)
            if _pick(o["padded"]) != model:
                bad.append((name, r.mode, _pick(o["padded"]), model))
            others = counts[:j] + counts[j + 1:]
            oracle = _oracle_rows(len(r.seq_lens), tuple(others))
            if oracle != (o["padded"]["mode"], len(o["padded"]["out_cache_loc"])):
                bad.append((name, r.mode, "oracle", oracle))
    return bad


def _oracle_rows(n: int, rank_tokens: tuple) -> tuple:
    """The oracle's forward of ``dp_decode`` (``features/dp/oracle.path_dp_decode``): its mode
    and the rows it expects the stores to write."""
    from swafuzz.features.dp.oracle import path_dp_decode
    from swafuzz.scenarios.case import Step

    seen = []
    path_dp_decode(None, Step(op="dp_decode", rids=tuple(range(n)), rank_tokens=rank_tokens),
                   lambda *a, **k: seen.append(a))
    return seen[0][1], seen[0][6]


def test_dp_decode_and_idle_pad_as_the_model(dp2):
    """DECODE / IDLE ranks under MAX_LEN (2 ranks, decode only): the release pads each rank to
    the gathered maximum: out_cache_loc and positions with 0, seq_lens with 1, batch size =
    rows; exactly swafuzz's ``DPAttention.pad_inputs_to_size`` (the engine) and the rows and mode
    ``path_dp_decode`` expects (the oracle)."""
    assert _decode_mismatches(dp2) == []


def test_comparison_fails_on_a_dp_mutant(dp2):
    """The comparison can fail: zoo mutant ``dp_never_pads`` (spec §5.4 (2)-(4)) differs from
    the release on every padded rank."""
    from swafuzz.features.dp.mutants import DPNeverPads

    bad = _decode_mismatches(dp2, DPNeverPads.rank_pad_cls)
    assert {b[0] for b in bad} == {name for name, *_ in DECODE_STEPS}


def test_comparisons_fail_on_release_mutants(dp2, atp2):
    """The release's own padding rule changed (``RELEASE_MUTANTS``): seq_lens padded with 0
    differs from the model on every padded rank; without attention-TP alignment an EXTEND of
    1 token is no longer padded."""
    from swafuzz.features.dp.sglang_sync import RankInput

    bad = _decode_mismatches(dp2, mutant="seq_lens_fill_0")
    assert {b[0] for b in bad} == {name for name, *_ in DECODE_STEPS}
    e = RankInput("extend", (2,), (1,), (17,))
    assert [o["padded"]["out_cache_loc"] for o in atp2.step([e, e], mutant="no_attn_tp_align")
            ] == [[17], [17]]


def test_extend_in_batch_is_sum_len_no_rewrite(dp2):
    """A peer extends: eager DP attention takes SUM_LEN (``get_dp_padding_mode``, gather width
    2), so no rank is padded (attention TP 1), a DECODE rank stays DECODE (no rewrite: that
    needs MAX_LEN, i.e. the prefill-graph rule) and an IDLE rank runs 0 rows. swafuzz's
    ``dp_extend`` / padded-IDLE-beside-an-extend Cases are therefore the prefill-graph path's,
    not eager's (noted in the component table)."""
    from swafuzz.features.dp.sglang_sync import RankInput

    ext = RankInput("extend", (4,), (3,), (5, 6, 7))
    for other, rows in ((RankInput("decode", (9,), (), (12,)), 1), (RankInput("idle"), 0)):
        a, b = dp2.step([ext, other])
        assert a["padded"]["padding_mode"] == b["padded"]["padding_mode"] == "SUM_LEN"
        assert a["padded"]["out_cache_loc"] == [5, 6, 7]
        assert b["padded"]["mode"] == other.mode.upper()
        assert b["padded"]["original_mode"] is None
        assert len(b["padded"]["out_cache_loc"]) == rows


def test_attn_tp2_pads_an_extend_of_one_token(atp2):
    """Attention TP 2: ``ceil_align(1, 2)``: an EXTEND of 1 row forwards 2 rows: the second
    has full location 0 and position 0; seq_lens / extend_seq_lens keep the one request of 1
    row, so the out_cache_loc the backend gets is longer than the batch's rows (the premise of
    ``window-dp-extend-pad-joins-run``). A DECODE of 1 becomes 2 requests (seq fill 1)."""
    from swafuzz.features.dp.sglang_sync import RankInput

    e = RankInput("extend", (2,), (1,), (17,))
    for o in atp2.step([e, e]):
        p = o["padded"]
        assert (p["out_cache_loc"], p["positions"], p["seq_lens"], p["extend_seq_lens"],
                p["batch_size"], p["mode"]) == ([17, 0], [1, 0], [2], [1], 1, "EXTEND")
        assert o["gathered"] == [1] and p["global_num_tokens"] == [2]
        assert p["extend_num_tokens"] == 2
    even = RankInput("extend", (2,), (2,), (17, 18))
    for o in atp2.step([even, even]):
        assert o["padded"]["out_cache_loc"] == [17, 18]
    d = RankInput("decode", (7,), (), (21,))
    for o in atp2.step([d, d]):
        assert _pick(o["padded"]) == _model_pad("decode", (7,), (21,), 2)


def _bundle_case(rank_tokens):
    from dataclasses import replace

    from swafuzz.features.validation import load_case

    with open(BUNDLE) as f:
        case = load_case(json.load(f)["case"])
    return replace(case, steps=tuple(
        replace(s, rank_tokens=rank_tokens) if s.op == "extend" else s for s in case.steps))


def _only_window_release():
    from swafuzz.targets import sglang as sg
    if sg.release()[1] != "0.5.23":
        pytest.skip("the request window exists on adapter 0.5.23 only")


def test_batch_of_the_seams_rows():
    _only_window_release()
    from swafuzz.features.request_window.dspark.sglang_release_pad import batch_of

    rows = [(1, 3, 0), (1, 4, 0), (2, 0, 0), (3, 7, 5)]
    assert batch_of(rows, [9, 10, 11, 12]) == ([5, 1, 8], [2, 1, 1], [9, 10, 11, 12])


def _window_run(d, monkeypatch, lengths, mutant=None):
    """The bundle's Case with extend ``lengths``, its padding from the release (``d``, both TP
    ranks holding the batch; ``rank_tokens``: the count the release pads this rank to):
    (verdict, the padded batches the backend was handed)."""
    from dataclasses import replace

    from swafuzz.features.dp.sglang_sync import RankInput
    from swafuzz.features.request_window.dspark.sglang_release_pad import ReleasePaddedDSpark
    from swafuzz.features.request_window.sglang import SGLangWindowPath
    from swafuzz.harness.pipeline.execute import execute

    def padder(seq, ext, loc):
        r = RankInput("extend", tuple(seq), tuple(ext), tuple(loc))
        out = d.step([r, r], mutant=mutant)
        assert out[0]["padded"] == out[1]["padded"]
        return out[0]["padded"]["out_cache_loc"], out[0]["padded"]["positions"]

    n = sum(lengths)
    probe = RankInput("extend", (1 + n,), (n,), tuple(range(1, n + 1)))
    count = d.step([probe, probe], mutant=mutant)[0]["padded"]["global_num_tokens"][0]
    monkeypatch.setattr(SGLangWindowPath, "dspark_cls", ReleasePaddedDSpark)
    monkeypatch.setattr(ReleasePaddedDSpark, "padder", staticmethod(padder))
    monkeypatch.setattr(ReleasePaddedDSpark, "handed", [])
    case = _bundle_case((count,))
    case = replace(case, steps=tuple(replace(s, lengths=tuple(lengths)) if s.op == "extend"
                                     else s for s in case.steps))
    return execute(case, "sglang", "torch", ["eager"]), ReleasePaddedDSpark.handed


def test_window_finding_reproduces_from_release_padding(atp2, monkeypatch):
    """The ledger bundle's EXTEND (1 token, request window, no tail) with its padding taken
    from the release's MLP-sync padding under attention TP 2: the backend is handed
    ``[loc, 0]`` / positions ``[1, 0]`` and the window / history checks fail as the ledger
    says. An extend of 2 tokens is not padded and passes; so does the 1-token extend when the
    release's ``ceil_align`` is taken out (release mutant ``no_attn_tp_align``)."""
    _only_window_release()
    v, handed = _window_run(atp2, monkeypatch, (1,))
    assert len(handed) == 1 and handed[0]["rows"] == 1
    assert handed[0]["out_cache_loc"][1:] == [0] and handed[0]["positions"] == [1, 0]
    msgs = [f.message for f in v.failures]
    assert any("history row" in m for m in msgs), msgs
    assert {f.check for f in v.failures} >= {"window", "history"}
    for lengths, mutant in (((2,), None), ((1,), "no_attn_tp_align")):
        v, handed = _window_run(atp2, monkeypatch, lengths, mutant)
        assert len(handed) == 1 and len(handed[0]["out_cache_loc"]) == handed[0]["rows"]
        assert not v.failures, [f.message for f in v.failures]


def test_dsv4_never_scatters_attn_tp_input(tp2s):
    """Pure TP 2, ``--enable-attn-tp-input-scattered``: no MLP sync, the eager forward takes
    ``prepare_attn_tp_scatter_input``. Where the attention-TP context allows scattering (a
    DeepSeek-V2/V3 model on CUDA, ``force_scatter``) an EXTEND of 1 row is padded to 2 rows
    (location 0); DeepSeek-V4's ``init_context(q_lora_rank, is_dsa=True)`` never allows it
    (``is_mhc or not is_dsa``), so the ledger's second route is blocked by that guard."""
    from swafuzz.features.dp.sglang_sync import RankInput

    assert {f["attn_tp_size"] for f in tp2s.facts} == {2}
    assert not any(f["require_mlp_sync"] for f in tp2s.facts)
    e = RankInput("extend", (2,), (1,), (17,))
    for o in tp2s.step([e, e]):
        assert o["path"] == "attn_tp_scatter" and o["padded"]["out_cache_loc"] == [17]
    for o in tp2s.step([e, e], force_scatter=True):
        assert o["padded"]["out_cache_loc"] == [17, 0] and o["padded"]["positions"] == [1, 0]
    assert [g["allow_input_scattered"] for g in tp2s.scatter_guard(True)] == [False, False]
    # the control, a non-DSA model: scattered, unless the release's published prefill graph
    # backend is piecewise (0.5.21's default), which forbids it for every model
    control = tp2s.scatter_guard(False)
    assert [g["allow_input_scattered"] for g in control] == [
        not g["prefill_piecewise"] for g in control]


@pytest.mark.skipif(os.environ.get("SWAFUZZ_DP_SYNC_TP4") != "1",
                    reason="4 processes (~90 s bring-up on 2 cores): set SWAFUZZ_DP_SYNC_TP4=1")
def test_dp_attention_with_attn_tp2_pads_an_extend_under_sum_len():
    """DP attention tp 4, dp 2 (attention TP 2, two attention-DP replicas of 2 ranks each):
    an EXTEND of 1 token beside a DECODE of 1 is SUM_LEN, yet both are padded to 2 rows by
    ``ceil_align`` (location 0, position 0); DECODE counts 1 and 3 become MAX_LEN 4 each (the
    model's ``rank_tokens`` must carry the aligned count, 4, to match)."""
    from swafuzz.features.dp.sglang_sync import RankInput, ServerShape

    with _sync(ServerShape(tp_size=4, dp_size=2, enable_dp_attention=True)) as d:
        assert [f["attn_tp_size"] for f in d.facts] == [2] * 4
        e, dec = RankInput("extend", (2,), (1,), (17,)), RankInput("decode", (5,), (), (9,))
        out = d.step([e, e, dec, dec])
        assert {o["padded"]["padding_mode"] for o in out} == {"SUM_LEN"}
        assert [o["padded"]["out_cache_loc"] for o in out] == [[17, 0]] * 2 + [[9, 0]] * 2
        assert out[0]["padded"]["extend_seq_lens"] == [1]
        a, b = RankInput("decode", (2,), (), (17,)), RankInput("decode", (5, 6, 7), (), (9, 10, 11))
        out = d.step([a, a, b, b])
        assert {o["padded"]["padding_mode"] for o in out} == {"MAX_LEN"}
        assert _pick(out[0]["padded"]) == _model_pad("decode", (2,), (17,), 4)
        assert _pick(out[2]["padded"]) == _model_pad("decode", (5, 6, 7), (9, 10, 11), 4)


def _draft_block_records(d, mutant=None) -> list:
    """Two DP ranks' DSpark draft blocks (4 tokens per request) with 1 and 2 requests: a
    decode step, so MAX_LEN pads rank 0's 4 rows to 8 (``features/dp/sglang_sync_draft``)."""
    from swafuzz.features.dp.sglang_sync import RankInput

    a = RankInput("decode", (9,), (), (11, 12, 13, 14))
    b = RankInput("decode", (5, 20), (), (21, 22, 23, 24, 31, 32, 33, 34))
    return d.draft_block([a, b], 4, mutant=mutant)


def _only_a4_releases():
    from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, load_ledger, release_matches
    from swafuzz.targets.sglang import installed_version

    e = next(e for e in load_ledger(DEFAULT_LEDGER) if e.id == "ring-a4-resolver-fallback-dp-eager")
    if not any(release_matches(r, installed_version()) for r in e.releases):
        pytest.skip(f"the entry lists {list(e.releases)}; installed {installed_version()}")


def _events(log) -> list:
    return [e["event"] for e in log]


def test_dspark_draft_block_pads_before_its_metadata(dp2):
    """Ledger ``ring-a4-resolver-fallback-dp-eager`` (unreachable): the release's eager
    ``ModelRunner._forward_raw`` pads a DSpark draft block (TARGET_VERIFY, never pre-planned)
    before ``EagerRunner._execute_extend`` plans its metadata (the block metadata, then the
    in-graph ring restamp over the padded batch: ``bs * block`` rows), so the stamp spans the
    padded ``out_cache_loc`` and the resolver returns it on every layer: no row is translated
    through ``M``. The padding rows are slot-0 requests (ring rows 1-4 of the padding slot).
    With the padding moved after the metadata init (mutant ``pad_after_metadata``, the A4
    premise) the stamp is 4 rows, ``out_cache_loc`` 8, and every row falls to ``M`` (-1)."""
    _only_a4_releases()
    out = _draft_block_records(dp2)
    assert [o["gathered"] for o in out] == [[1, 2]] * 2
    assert [o["scaled"] for o in out] == [[4, 8]] * 2 and not any(o["preplanned"] for o in out)
    for o in out:
        assert _events(o["log"]) == ["padding", "block_metadata", "metadata", "store", "store"]
        pad, block, meta, *stores = o["log"]
        assert pad == {"event": "padding", "out_cache_loc": 8, "mode": "MAX_LEN",
                       "forward_mode": "TARGET_VERIFY"}
        assert block["block_rows"] == block["prefill_stamp"] == 8     # 2 requests of 4
        assert meta["out_cache_loc"] == meta["stamp"] == 8
        assert {(s["out_cache_loc"], s["branch"]) for s in stores} == {(8, "stamp")}
    assert out[0]["log"][3]["swa_loc"] == [9, 10, 11, 12, 1, 2, 3, 4]
    bad = _draft_block_records(dp2, mutant="pad_after_metadata")[0]["log"]
    assert _events(bad) == ["block_metadata", "metadata", "padding", "store", "store"]
    assert bad[1]["stamp"] == 4 and bad[3]["out_cache_loc"] == 8
    assert {s["branch"] for s in bad[3:]} == {"translate"}
    assert bad[3]["swa_loc"] == [-1] * 8


def test_dense_draft_block_is_never_scattered(tp2s):
    """The same entry's other padding route: a dense DSpark draft (no ``dp_moe_sync``, so no
    MLP-sync counts) under attention TP 2 with scattered input allowed (``force_scatter``)
    takes ``prepare_attn_tp_scatter_input``, whose ``use_input_scattered`` excludes
    TARGET_VERIFY: a block of 3 rows stays 3, stamped. Without that exclusion (mutant
    ``scatter_verify``) it is padded to 4 rows before its metadata, yet the in-graph restamp
    covers ``bs * block`` = 3 rows: the resolver misses and all 4 rows fall to ``M``."""
    _only_a4_releases()
    from swafuzz.features.dp.sglang_sync import RankInput

    a = RankInput("decode", (9,), (), (11, 12, 13))
    for o in tp2s.draft_block([a, a], 3, moe_draft=False, force_scatter=True):
        assert o["gathered"] is None and o["scaled"] is None
        assert _events(o["log"]) == ["padding", "block_metadata", "metadata", "store", "store"]
        assert o["log"][2]["out_cache_loc"] == o["log"][2]["stamp"] == 3
        assert {s["branch"] for s in o["log"][3:]} == {"stamp"}
    bad = tp2s.draft_block([a, a], 3, moe_draft=False, force_scatter=True,
                           mutant="scatter_verify")[0]["log"]
    assert bad[0]["out_cache_loc"] == 4 and bad[2]["stamp"] == 3
    assert {s["branch"] for s in bad[3:]} == {"translate"} and bad[3]["swa_loc"] == [-1] * 4
