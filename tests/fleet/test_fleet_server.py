"""``swafuzz run --level server --ray``: a server-level campaign's units as Ray tasks on a real
Ray cluster (a head and one worker node started with ``ray start`` on this machine) give the
single-machine run's results: the same Cases per unit, the same per-kind counts and findings.
Each Ray worker's case worker children fork from one zygote in that worker
(:mod:`swafuzz.harness.pipeline.zygote`).

Two campaigns: ``tests/data/server_plugin``'s ``fixture:server_segv`` (no SGLang: the fleet
tier's ``.venv-fleet``), and the ``sglang`` target's own server pipeline where the Python running
the tier imports both ray and SGLang (a layer over an SGLang env and ``.venv-fleet``: see
docs/FLEET.md; skipped elsewhere). Runs in the fleet tier (``python3 bootstrap.py fleet-tier``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the fleet tier needs ray: python3 bootstrap.py fleet-tier "
                                  "(pip install 'swafuzz[ray]')")

from swafuzz.harness.fleet.local import Cluster  # noqa: E402

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "data" / "server_plugin"


def _rows(out: Path) -> list[dict]:
    with open(out / "cases.jsonl") as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def _cases(out: Path) -> list[tuple]:
    return sorted((r["unit"], r["phase"], r["failed"], r["signature"],
                   json.dumps(r["case"], sort_keys=True)) for r in _rows(out) if "case" in r)


def _campaign(tmp_path: Path, monkeypatch, args: list[str]) -> tuple[Path, Path]:
    """The same server-level campaign on one machine and on the Ray cluster; both run dirs."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PLUGIN_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    cluster = Cluster({"a": 1}, redis=False)
    try:
        def run(extra: list[str], out: Path) -> subprocess.Popen:
            return subprocess.Popen([sys.executable, "-m", "swafuzz", "run", "--level", "server",
                                     *args, *extra, "--out", str(out)], env=cluster.env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        local = run(["--db", "none"], tmp_path / "local")  # while the cluster starts
        cluster.start()
        fleet = run(["--ray", cluster.address, "--db", "none"], tmp_path / "fleet")
        text, _ = fleet.communicate(timeout=900)
        local_text, _ = local.communicate(timeout=900)
        assert local.returncode in (0, 1), local_text[-3000:]
        assert fleet.returncode == local.returncode, text[-3000:]
    finally:
        cluster.stop(ray_stop=True)
    return tmp_path / "local", tmp_path / "fleet"


def _same(local: Path, fleet: Path) -> dict:
    assert _cases(fleet) == _cases(local)  # the same Cases, none recorded twice
    assert len(set(_cases(fleet))) == len(_cases(fleet))
    runs = [json.loads((d / "run.json").read_text()) for d in (local, fleet)]
    assert runs[1]["kinds"] == {k: {**v, "seconds": runs[1]["kinds"][k]["seconds"]}
                                for k, v in runs[0]["kinds"].items()}
    assert runs[1]["findings"] == runs[0]["findings"]
    def bundles(d: Path) -> list[str]:
        return sorted(os.listdir(d / "findings")) if (d / "findings").is_dir() else []
    assert bundles(fleet) == bundles(local)
    # (a Case that took its worker down stays in flight, as on one machine)
    assert os.listdir(fleet / "inflight") == os.listdir(local / "inflight")
    return runs[1]


def test_server_level_ray_campaign_equals_one_machine(tmp_path, monkeypatch):
    local, fleet = _campaign(tmp_path, monkeypatch, [
        "--plugin", "swafuzz_server_fixture", "--target", "fixture:server_segv", "--impl",
        "torch", "--scenario", "server_decode", "--scenario", "server_mixed", "--examples", "12",
        "--seed", "2", "--shrink-budget", "0", "--ledger", "none"])
    run = _same(local, fleet)
    assert run["kinds"]["server_decode"]["finding"] == "server:crash"  # a segfault in a Ray task
    assert [r["event"] for r in map(json.loads, (fleet / "fleet.jsonl").read_text().splitlines())
            ].count("start") == 2  # one attempt per unit


@pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                    reason="this Python does not import SGLang (a layer over an SGLang env and "
                           ".venv-fleet runs it: docs/FLEET.md)")
def test_sglang_server_level_ray_campaign_equals_one_machine(tmp_path, monkeypatch):
    local, fleet = _campaign(tmp_path, monkeypatch, [
        "--target", "sglang", "--scenario", "server_decode", "--scenario", "server_mixed",
        "--examples", "8", "--seed", "1", "--ledger", "none"])
    run = _same(local, fleet)
    assert run["cases"] == 8 and run["versions"].get("sglang")
