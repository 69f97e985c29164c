"""The pieces of a fleet run that need no cluster (the README's test command runs these): the
flags, a unit's resources, the corpus reads a retry repeats, and the driver's writes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from swafuzz.harness.caselog import CaseLog, read_log
from swafuzz.harness.fleet import FleetError, RunDirMirror, check_db, unit_resources
from swafuzz.harness.fleet_task import recorded_reads_db

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_db_of_a_fleet_run():
    assert check_db(None) == "none"
    assert check_db("none") == "none"
    assert check_db("redis://10.0.0.5:6379/2") == "redis://10.0.0.5:6379/2"
    with pytest.raises(FleetError, match=r"--db: '\.swafuzz/db' is a directory.*redis://"):
        check_db(".swafuzz/db")


def test_unit_resources():
    assert unit_resources("torch", ["eager", "tape"], 0) == {"num_cpus": 1, "num_gpus": 0}
    assert unit_resources("triton", ["eager", "tape"], 0) == {"num_cpus": 1, "num_gpus": 0}
    assert unit_resources("triton", ["eager", "tape"], 8) == {"num_cpus": 1, "num_gpus": 1}
    assert unit_resources("torch", ["eager", "cudagraph"], 0)["num_gpus"] == 1
    assert unit_resources("cuda", ["eager"], 0)["num_gpus"] == 1


def test_a_retry_reads_the_corpus_as_its_first_attempt_did():
    from hypothesis.database import InMemoryExampleDatabase

    inner = InMemoryExampleDatabase()
    inner.save(b"k", b"old")
    reads: list = []
    first = recorded_reads_db(inner, reads)
    assert list(first.fetch(b"k")) == [b"old"]
    first.save(b"k", b"found-by-the-first-attempt")  # writes go through
    assert sorted(inner.fetch(b"k")) == [b"found-by-the-first-attempt", b"old"]
    retry = recorded_reads_db(inner, [list(r) for r in reads])
    assert list(retry.fetch(b"k")) == [b"old"]  # as recorded, not what was saved since
    later: list = [list(r) for r in reads]
    again = recorded_reads_db(inner, later)
    list(again.fetch(b"k"))
    assert sorted(again.fetch(b"k")) == [b"found-by-the-first-attempt", b"old"]  # past: live
    assert len(later) == 2  # and recorded for the next retry


def _bundle(sig: str, steps: int, out: str) -> str:
    case = {"kind": "k", "steps": [{"op": "x"}] * steps}
    return json.dumps({"signature": sig, "case": case,
                       "command": f"swafuzz repro {out}/findings/{sig}.json"})


def test_the_driver_writes_rows_and_the_smallest_bundle(tmp_path, monkeypatch):
    import swafuzz.harness.fleet as fleet

    monkeypatch.setattr(fleet, "case_size", lambda c: (len(c["steps"]), 0, 0))
    out = str(tmp_path / "run")
    os.makedirs(out)
    log = CaseLog(os.path.join(out, "cases.jsonl"))
    m = RunDirMirror(out, log)
    m.scratch.update({"a.0": "/tmp/scr-a", "b.0": "/tmp/scr-b"})
    rec: list = []
    row = {"v": 1, "unit": "a.0", "phase": "generate", "case": {"kind": "k"}, "failed": False}
    assert m.apply("a.0", {"rows": [row], "files": {"findings/s.json": _bundle(
        "s", 3, "/tmp/scr-a")}}, rec) is None
    assert rec == [{k: v for k, v in row.items() if k != "v"}]
    path = os.path.join(out, "findings", "s.json")
    with open(path) as f:
        assert json.load(f)["command"] == f"swafuzz repro {out}/findings/s.json"
    m.apply("b.0", {"files": {"findings/s.json": _bundle("s", 5, "/tmp/scr-b")}}, [])
    with open(path) as f:
        assert len(json.load(f)["case"]["steps"]) == 3  # the smaller Case stays
    m.apply("b.0", {"gone": ["findings/s.json"]}, [])  # not b's file: kept
    assert os.path.exists(path)
    done = {"unit": "a.0", "event": "unit_done", "finding": "s"}
    assert m.apply("a.0", {"rows": [done], "gone": ["findings/s.json"]}, rec) == done
    assert not os.path.exists(path)
    log.close()
    assert [r.get("event") for r in read_log(os.path.join(out, "cases.jsonl"))] == [
        None, "unit_done"]


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="ray is installed here")
def test_ray_flag_without_ray_is_a_usage_error(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "swafuzz", "run", "--ray", "auto", "--target",
                        "unified", "--impl", "torch", "--examples", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 2, r.stderr
    assert "--ray" in r.stderr and "swafuzz[ray]" in r.stderr
    assert not out.exists()  # nothing half-written
