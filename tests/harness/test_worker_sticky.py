"""A sticky CUDA error (illegal address, device-side assert) becomes a ``crash`` finding with
the Case on disk, and the worker is replaced (issue 10, item 7), proven on CPU with
``selftest:cuda_sticky``, a target that leaves its process's (simulated) device context broken.

Before: the worker stayed alive with a broken context, the next case raised "harness error in
the worker" and the campaign ended with exit 1 and no finding. Reproduce:
``pytest tests/harness/test_worker_sticky.py``.
"""

import json
import os
import subprocess
import sys

from swafuzz.harness.pipeline.worker import CaseWorker
from swafuzz.scenarios.case import Case, Step

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = Case(steps=(Step("admit", rid=0, length=2), Step("decode", rids=(0,), exec="graph")),
            kind="decode")


def test_sticky_error_is_a_crash_and_the_worker_is_replaced(tmp_path):
    w = CaseWorker("selftest:cuda_sticky", "torch", ["eager"], out_dir=str(tmp_path))
    try:
        v = w.run(CASE)
        assert [f.check for f in v.failures] == ["crash"]
        assert "illegal memory access" in v.failures[0].message
        assert "sticky" in v.failures[0].message
        inflight = json.loads((tmp_path / "inflight.json").read_text())
        assert Case.from_json(inflight["case"]) == CASE  # the Case is on disk
        assert w._proc is None  # the broken worker is gone
        v2 = w.run(CASE)  # a fresh worker: runs the case (and breaks again), no harness error
        assert [f.check for f in v2.failures] == ["crash"]
    finally:
        w.close()


def test_unified_worker_is_not_flagged(tmp_path):
    w = CaseWorker("unified", "torch", ["eager", "tape"], out_dir=str(tmp_path))
    try:
        assert not w.run(CASE).failures and not w.run(CASE).failures
    finally:
        w.close()


def test_campaign_records_crash_findings_and_goes_on(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "swafuzz", "run", "--examples", "2", "--quiet",
                        "--impl", "torch", "--target", "selftest:cuda_sticky", "--scenario",
                        "decode", "--scenario", "idle", "--shrink-budget", "0", "--out",
                        str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "harness error" not in r.stdout + r.stderr
    assert "idle" in r.stdout and "decode" in r.stdout
    bundles = [json.loads(p.read_text()) for p in (out / "findings").glob("*.json")]
    assert bundles and all(b["check"] == "crash" for b in bundles)
