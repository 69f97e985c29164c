"""``swafuzz run --ray``: a real Ray cluster (a head and two worker nodes, each started with
``ray start`` on this machine), a real Redis corpus, the real harness. One worker node is killed
with ``kill -9`` (every process of it) while its unit runs; the run's results must equal a
single-machine run's on the same seed: the same Cases, the same finding signatures, no Case
recorded twice, and the killed unit retried from its log on the other node.

Runs in the fleet tier (``python3 bootstrap.py fleet-tier``, which ``.ci/run`` runs); skipped
where ray is not installed (the README's test command)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("ray", reason="the fleet tier needs ray: python3 bootstrap.py fleet-tier "
                                  "(pip install 'swafuzz[ray]')")
if shutil.which("redis-server") is None:
    pytest.skip("redis-server is not installed (the fleet's shared corpus)",
                allow_module_level=True)

from swafuzz.harness.fleet.local import Cluster  # noqa: E402

TARGET = "mutant:negative_loc_wraps"
ARGS = ["--target", TARGET, "--impl", "torch", "--executor", "tape", "--scenario", "decode",
        "--scenario", "idle", "--examples", "40", "--seed", "3", "--ledger", "none"]


def _rows(out: str, name: str = "cases.jsonl") -> list[dict]:
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def _cases(out: str) -> list[tuple]:
    return sorted((r["unit"], r["phase"], r["failed"], r["signature"],
                   json.dumps(r["case"], sort_keys=True)) for r in _rows(out) if "case" in r)


def _run(args: list[str], env: dict, out: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "swafuzz", "run", *args, "--out", out],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_kill_a_worker_node_mid_run(tmp_path):
    cluster = Cluster({"a": 1, "b": 1})
    try:
        # the single-machine reference runs while the cluster starts
        local = _run(ARGS + ["--db", "none"], cluster.env, str(tmp_path / "local"))
        cluster.start()
        out = str(tmp_path / "fleet")
        db = f"redis://127.0.0.1:{cluster.redis_port}/0"
        fleet = _run(ARGS + ["--ray", cluster.address, "--db", db], cluster.env, out)
        killed, victim = None, None
        end = time.monotonic() + 240
        while fleet.poll() is None and time.monotonic() < end and killed is None:
            starts = {r["unit"]: r for r in _rows(out, "fleet.jsonl") if r["event"] == "start"}
            done = {r["unit"] for r in _rows(out) if r.get("event") == "unit_done"}
            logged: dict[str, int] = {}
            for r in _rows(out):
                if "case" in r:
                    logged[r["unit"]] = logged.get(r["unit"], 0) + 1
            for unit, s in starts.items():  # mid-run: a few Cases recorded, the unit not done
                # (decode: the longer unit, 85 Cases, so the kill lands well before its end)
                if unit == "decode.0" and unit not in done and logged.get(unit, 0) >= 5:
                    victim = unit
                    killed = cluster.node_of(s["pid"])
                    assert killed in ("a", "b"), (unit, s)
                    pids = cluster.kill(killed)
                    assert s["pid"] in pids
                    break
            time.sleep(0.2)
        text, _ = fleet.communicate(timeout=240)
        local_text, _ = local.communicate(timeout=240)
        assert killed is not None, f"no unit was seen mid-run:\n{text[-3000:]}"
        assert local.returncode == 1, local_text[-3000:]
        assert fleet.returncode == 1, text[-3000:]
        recorded_at_kill = None
        attempts = _rows(out, "fleet.jsonl")
        died = [r for r in attempts if r["event"] == "died"]
        assert [r["unit"] for r in died] == [victim], attempts
        recorded_at_kill = died[0]["cases_recorded"]
        assert recorded_at_kill >= 5
        retry = [r for r in attempts if r["event"] == "start" and r["unit"] == victim]
        assert [r["attempt"] for r in retry] == [1, 2]
        assert retry[1]["node"] != retry[0]["node"]  # on the node left
        # the same Cases as one machine, none of them recorded twice
        fleet_cases, local_cases = _cases(out), _cases(str(tmp_path / "local"))
        assert len(set(fleet_cases)) == len(fleet_cases)
        assert fleet_cases == local_cases
        victim_done = [r for r in _rows(out) if r.get("event") == "unit_done"
                       and r["unit"] == victim]
        assert len(victim_done) == 1 and victim_done[0]["replayed"] == recorded_at_kill
        # the same findings, bundles written by the driver alone, nothing left in flight
        sigs = sorted(r["finding"] for r in _rows(out) if r.get("event") == "unit_done")
        assert sigs == sorted(r["finding"] for r in _rows(str(tmp_path / "local"))
                              if r.get("event") == "unit_done")
        assert all(sigs)
        assert sorted(os.listdir(os.path.join(out, "findings"))) == sorted(
            os.listdir(tmp_path / "local" / "findings"))
        assert os.listdir(os.path.join(out, "inflight")) == []
        # the corpus is in Redis: the failures the units saved, under swafuzz:<target>:<kind>
        import redis

        keys = redis.Redis(port=cluster.redis_port).keys("*")
        assert any(f"swafuzz:{TARGET}:decode".encode() in k for k in keys), keys
    finally:
        cluster.stop(ray_stop=True)  # and `ray stop --force`: nothing of Ray outlives the test
