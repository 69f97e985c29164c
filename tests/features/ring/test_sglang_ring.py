"""The per-request SWA ring on the ``sglang`` target (``features/ring/sglang.py``).

Marker ``upstream``: drives the installed SGLang release (0.5.23 for the ring; 0.5.12 must refuse
ring Cases) and skips, with the reason, when sglang is not installed. Run with the release's
environment, e.g. ``$(scripts/upstream-env 0.5.23) -m pytest
tests/features/ring/test_sglang_ring.py``. The known findings (ledger entries ``ring-*``) replay from
``tests/data/bundles/sglang/``.
"""

import importlib.util
import json
import os

import pytest

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (run with "
                                  "an upstream environment, scripts/upstream-env 0.5.23)")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _release():
    from swafuzz.targets.sglang import release

    return release()[1]


CLEAN = Case(
    pool=PoolConfig(page_size=2, full_pages=16, swa_pages=4, window=3, swa_ring=4, req_slots=3,
                    layers=2),
    graph=GraphConfig(buckets=(1, 2, 4), topk=1, num_draft_tokens=2),
    steps=(Step("admit", rid=0, length=7), Step("admit", rid=1, length=2),
           Step("decode", rids=(0, 1), exec="graph"), Step("verify", rids=(1, 0), exec="graph"),
           Step("draft_extend", rids=(0, 1), accept=(2, 1), exec="eager"),
           Step("idle", tokens=3, exec="graph"), Step("idle", tokens=2, exec="eager"),
           Step("evict", rid=0), Step("finish", rid=1), Step("admit", rid=2, length=5),
           Step("decode", rids=(2, 0), exec="eager"), Step("finish", rid=0)),
    kind="ring")


@pytest.mark.upstream
@needs_sglang
def test_ring_case_clean_on_0_5_23():
    if _release() != "0.5.23":
        pytest.skip("the ring needs the 0.5.23 adapter")
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang import engine

    v = execute(CLEAN, "sglang", "torch", ["eager", "tape"])
    assert not v.failed, [f.message for f in v.failures]
    obs = engine.SGLangEngine(CLEAN, impl="torch").run()
    # ReqToTokenPool pops its highest free slot; the oracle followed that choice
    assert obs.steps[0].channel("ring")["slots"] == {0: 3} and obs.steps[1].channel("ring")["slots"] == {0: 3, 1: 2}
    assert obs.steps[1].channel("ring")["swa_available"] == 1 * 4  # one free slot * ceil(4/2)*2
    assert all(v == 0 for v in obs.steps[-1].mapping[:-1])  # the ring never wrote M


@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("entry", ["ring-p1-alloc-writes-mapping", "ring-p1-alloc-refused",
                                   "ring-a4-resolver-fallback-dp-eager",
                                   "ring-a4-draft-extend-graph"])
def test_ledger_ring_findings_replay(entry):
    if _release() != "0.5.23":
        pytest.skip("the ring needs the 0.5.23 adapter")
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.reports.bundle import read_bundle

    with open(os.path.join(ROOT, "ledger", "known_failures.json")) as f:
        e = next(x for x in json.load(f)["entries"] if x["id"] == entry)
    b = read_bundle(os.path.join(ROOT, e["repro"]))
    case = Case.from_json(b["case"])
    v = execute(case, "sglang", "torch", ["eager", "tape"])
    assert v.failed and v.signature() == b["signature"] == e["signature"]
    assert not execute(case, "unified", "torch", ["eager", "tape"]).failed


@pytest.mark.upstream
@needs_sglang
def test_0_5_12_refuses_ring(capsys, tmp_path):
    if _release() != "0.5.12":
        pytest.skip("0.5.12 is not installed here")
    from swafuzz.harness.cli.commands import main as cli_main
    from swafuzz.targets import TargetUnavailable
    from swafuzz.targets.sglang import engine

    assert cli_main(["run", "--target", "sglang", "--scenario", "ring", "--examples", "1",
                     "--out", str(tmp_path / "o")]) == 2
    assert "no per-request SWA ring" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(TargetUnavailable, match="no per-request SWA ring"):
        engine.SGLangEngine(CLEAN, impl="torch")
    bundle = os.path.join(ROOT, "tests", "data", "bundles", "sglang", "ring_a4_dp_eager.json")
    assert cli_main(["repro", bundle]) == 2
    assert "pool.swa_ring > 0" in capsys.readouterr().err


@pytest.mark.upstream
@needs_sglang
def test_release_in_graph_op_skips_translation_under_a_ring(monkeypatch):
    """Addendum §3 (0.5.23): init_forward_metadata_in_graph stamps the M translation only when
    the pool has no window and no ring; under a ring the harness's stamp is the only one."""
    if _release() != "0.5.23":
        pytest.skip("the ring needs the 0.5.23 adapter")
    import torch

    from swafuzz.features.ring import sglang as ring
    from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
    from swafuzz.targets.sglang import engine as eng

    monkeypatch.setattr(ring, "stamp_ring_rows", lambda *a: None)
    paged = Case(pool=PoolConfig(page_size=2, full_pages=8, swa_pages=8, window=3))
    for case, stamped in ((CLEAN, False), (paged, True)):
        e = eng.SGLangEngine(case, impl="torch")
        slots = e.allocator.admit(0, 3)
        z = torch.tensor
        fb = ForwardBatch(ForwardMode.EXTEND, 1, z(slots), z([3]), z([0, 1, 2]))
        b = e.target_backend
        b.forward_metadata = b.build_metadata(fb.out_cache_loc, fb.seq_lens, fb.positions)
        b.init_forward_metadata_in_graph(fb)
        got = b.forward_metadata.core_attn_metadata.swa_out_cache_loc
        assert (got is not None) == stamped
