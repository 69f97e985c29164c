"""The pieces of a fleet run that need no cluster (the README's test command runs these): the
flags, a unit's resources, the corpus reads a retry repeats, and the driver's writes."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time

import pytest
from support.runcli import HANG_S  # the hang guard: no wall-clock limit decides a test

from swafuzz.harness.fleet.ray_fleet import (
    FleetError,
    RunDirMirror,
    check_db,
    check_reachable,
    unit_resources,
)
from swafuzz.harness.fleet.task import recorded_reads_db
from swafuzz.harness.pipeline.caselog import CaseLog, read_log

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
    import swafuzz.harness.fleet.ray_fleet as fleet

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
                       capture_output=True, text=True, timeout=HANG_S,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 2, r.stderr
    assert "--ray" in r.stderr and "swafuzz[ray]" in r.stderr
    assert not out.exists()  # nothing half-written


def _closed_port() -> int:
    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_ray_head_is_named(monkeypatch):
    port = _closed_port()
    for spec in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(FleetError, match=rf"--ray: no Ray head answers at 127\.0\.0\.1:{port}"):
            check_reachable(spec)
    for bad in ("127.0.0.1", "host:port", ":6379", "h:0", "h:70000"):
        with pytest.raises(FleetError, match=r"--ray: .* is not an address"):
            check_reachable(bad)
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(FleetError, match=rf"RAY_ADDRESS=127\.0\.0\.1:{port}"):
        check_reachable("auto")
    monkeypatch.delenv("RAY_ADDRESS")
    check_reachable("auto")  # a cluster of this machine: Ray finds it (or says it has none)
    with socket.socket() as s:  # a listening port passes
        s.bind(("127.0.0.1", 0))
        s.listen()
        check_reachable(f"127.0.0.1:{s.getsockname()[1]}")


def test_run_with_an_unreachable_ray_head_writes_nothing(tmp_path):
    """Before: run.json and run.lock were written, then Ray's connection timed out."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    if importlib.util.find_spec("ray") is None:  # the README suite: a stand-in passes the
        stand_in = tmp_path / "standin" / "ray"  # import check, so the address check is reached
        stand_in.mkdir(parents=True)
        (stand_in / "__init__.py").write_text("")
        (stand_in / "exceptions.py").write_text("")
        env["PYTHONPATH"] = os.pathsep.join([ROOT, str(tmp_path / "standin")])
    out = tmp_path / "run"
    addr = f"127.0.0.1:{_closed_port()}"
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "swafuzz", "run", "--ray", addr, "--target",
                        "unified", "--impl", "torch", "--examples", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=HANG_S, env=env)
    assert r.returncode == 2, r.stderr
    assert "--ray" in r.stderr and addr in r.stderr and "no Ray head answers" in r.stderr
    assert not out.exists()  # no run.json, no run.lock
    assert time.monotonic() - t < 60


def _fake_ray(tmp_path, fail_first: int, message: str) -> str:
    """A ``ray`` executable whose first ``fail_first`` starts print ``message`` and exit 1,
    later starts print Ray's started line and block."""
    count = tmp_path / "count"
    script = tmp_path / "ray"
    script.write_text(
        "#!/bin/sh\n"
        f"c=$(cat {count} 2>/dev/null || echo 0); echo $((c + 1)) > {count}\n"
        f"if [ \"$c\" -lt {fail_first} ]; then echo '{message}'; exit 1; fi\n"
        "echo 'Ray runtime started.'; exec sleep 60\n")
    script.chmod(0o755)
    return str(script)


def test_a_node_that_gave_up_on_rays_start_deadline_is_started_again(tmp_path, monkeypatch):
    """CI's fleet tier: beside the upstream step a worker node's GCS call passed Ray's own
    deadline ("Deadline Exceeded", "timed out during startup") and the tier went red; the
    cluster now starts such a node again while its start-up limit lasts."""
    from swafuzz.harness.fleet import local
    monkeypatch.setattr(local, "RAY", _fake_ray(
        tmp_path, 2, "Exception: The current node timed out during startup. (RPC error: "
        "Deadline Exceeded)"))
    cluster = local.Cluster({"a": 1}, redis=False)
    try:
        cluster.start(timeout=HANG_S)
        assert cluster.attempts == {"head": 3, "a": 1}  # two gave up, the third started
        assert cluster.log("head").count("timed out during startup") == 2
    finally:
        cluster.stop()


def test_a_node_that_fails_otherwise_is_not_started_again(tmp_path, monkeypatch):
    from swafuzz.harness.fleet import local
    monkeypatch.setattr(local, "RAY", _fake_ray(tmp_path, 5, "Error: unknown option --bogus"))
    cluster = local.Cluster({"a": 1}, redis=False)
    try:
        with pytest.raises(RuntimeError, match=r"ray node head did not start \(1 attempt"):
            cluster.start(timeout=HANG_S)
    finally:
        cluster.stop()
