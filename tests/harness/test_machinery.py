"""A harness that holds up on a busy runner (issue 27 items 1-3, 6): ``SWAFUZZ_FAULTS`` checked
with exit 2; a start-up with no fixed deadline (a slow one that progresses passes, a stuck one
ends exit 3 naming it, nothing left in ``--out``, which is then reusable); a case worker killed
from outside is a tool failure (exit 3, nothing under ``findings/``) that ``--resume``
continues; the harness's own errors are never findings (worker replies, the attention-DP ranks'
pipeline, the DPSync process group); a tool failure without a run directory logs to a private
per-run file; a kill -9 of the CLI takes its forkserver with it.

No test here passes by a wall-clock limit: a stuck start-up never progresses, whatever the
load, and the slow one runs under the default limit (1800 s without progress).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from support.procs import alive
from support.runcli import ENV, cli_caller, log_rows

from swafuzz.features.dp import sglang_server_ranks
from swafuzz.features.dp.sglang_sync import DPSync, DPSyncError, DPSyncHarnessError, ServerShape
from swafuzz.harness.cli.failures import report_tool_failure
from swafuzz.harness.pipeline.worker import _ok
from swafuzz.machinery import FAULTS_ENV, FaultSpecError, HarnessError, StartTimeout, parse_faults
from swafuzz.server.case import parse

RUN = ("run", "--scenario", "decode", "--examples", "3", "--impl", "torch", "--quiet")


@pytest.fixture
def cli(capsys, monkeypatch):
    return cli_caller(capsys, monkeypatch)


# --------------------------------------------------------------------------- SWAFUZZ_FAULTS
def test_faults_parse_and_bad_entries_name_the_entry_and_the_allowed_values():
    assert parse_faults(" slow-worker-start=2.5, stuck-worker-start,kill-worker=3 ,") == {
        "slow-worker-start": 2.5, "stuck-worker-start": None, "kill-worker": 3}
    assert parse_faults("") == {} and parse_faults(None) == {}
    for bad, says in (("slow-start=1", "allowed: slow-worker-start=SECONDS, stuck-worker-start,"
                                       " slow-rank-start=SECONDS, stuck-rank-start, kill-worker=N"),
                      ("kill-worker=0", "integer >= 1"), ("kill-worker=x", "integer >= 1"),
                      ("slow-rank-start=-1", "seconds >= 0"), ("slow-rank-start=inf", ">= 0"),
                      ("stuck-worker-start=1", "takes no value")):
        with pytest.raises(FaultSpecError, match="SWAFUZZ_FAULTS: ") as e:
            parse_faults(bad)
        assert repr(bad) in str(e.value) and says in str(e.value), str(e.value)


def test_a_bad_fault_or_start_timeout_is_exit_2_with_nothing_written(tmp_path, cli, monkeypatch):
    monkeypatch.setenv(FAULTS_ENV, "kill-worker=many")
    code, _, err = cli(*RUN, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "'kill-worker=many'" in err, err
    monkeypatch.delenv(FAULTS_ENV)
    for bad in ("0", "-3", "soon"):
        code, _, err = cli(*RUN, "--start-timeout", bad, "--out", tmp_path / "o")
        assert code == 2 and "--start-timeout" in err and "seconds > 0" in err, err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- start-up
def test_stuck_start_exit_3_then_slow_start_and_killed_worker_in_the_same_out_then_resume(
        tmp_path, cli, monkeypatch):
    """Stuck start-up: exit 3 naming it, nothing left in --out. The same --out: a slow start
    that progresses runs; its worker killed at the second Case is a tool failure (exit 3,
    nothing under findings/, no unit row) that --resume continues to a clean end."""
    out = tmp_path / "o"
    monkeypatch.setenv(FAULTS_ENV, "stuck-worker-start")
    code, so, err = cli(*RUN, "--start-timeout", "1", "--out", out)
    assert code == 3, so + err
    assert err.count("\n") == 1 and "the case worker for --target unified did not start: no " \
        "progress for 1 s" in err and "--start-timeout" in err, err
    assert not out.exists()  # nothing left: the same --out is usable again
    assert os.environ.get("SWAFUZZ_START_TIMEOUT") is None  # the CLI restored its environment
    monkeypatch.setenv(FAULTS_ENV, "slow-worker-start=1,kill-worker=2")
    code, so, err = cli(*RUN, "--out", out)
    assert code == 3, so + err
    assert "HarnessError: the case worker for --target unified was killed (SIGKILL" in err, err
    assert not [p for p in out.rglob("findings/*") if p.is_file()]
    rows = log_rows(out)
    assert len([r for r in rows if "case" in r]) == 1 and not any(r.get("event") for r in rows)
    assert "Traceback" in (out / "swafuzz-error.log").read_text()
    monkeypatch.delenv(FAULTS_ENV)
    code, so, err = cli("run", "--resume", out, "--quiet")
    assert code == 0, so + err
    assert "3 cases generated" in so and not [p for p in out.rglob("findings/*") if p.is_file()]


# --------------------------------------------------------------------------- never findings
def test_a_harness_error_in_the_worker_is_raised_as_one():
    with pytest.raises(HarnessError, match="harness error in the worker: OSError: pipe"):
        _ok({"harness_error": "OSError: pipe\nTraceback ..."})


DP_CASE = {"model": {"full_tokens": 64, "swa_tokens": 32, "sliding_window": 2, "layers": 1},
           "config": {"tp_size": 2, "dp_size": 2, "enable_dp_attention": True},
           "requests": [{"prompt_len": 3, "max_new_tokens": 2},
                        {"prompt_len": 2, "max_new_tokens": 1, "rank": 1}]}


@pytest.mark.parametrize("exc", [DPSyncHarnessError("rank 1 died during start-up"),
                                 StartTimeout("process-group rank(s) 1 did not start"),
                                 MemoryError()])
def test_the_ranks_pipeline_reraises_harness_errors(exc):
    class Pipe:
        def __init__(self, *a):
            raise exc

    with pytest.raises(type(exc)):
        sglang_server_ranks.run(parse(DP_CASE), "torch", None, Pipe)


def test_the_ranks_pipeline_records_the_releases_own_errors():
    class Pipe:
        def __init__(self, *a):
            raise DPSyncError("the ranks padded the same batch differently")

    obs = sglang_server_ranks.run(parse(DP_CASE), "torch", None, Pipe)
    assert "DPSyncError: the ranks padded" in obs.error


def _bare(conns) -> DPSync:
    d = object.__new__(DPSync)
    d.procs, d.conns, d.facts, d.shape = [], conns, [], ServerShape()
    d._dir = tempfile.mkdtemp(prefix="swafuzz-sglang-sync-test-")
    return d


def test_a_rank_start_up_failure_is_the_harness_a_step_failure_the_release():
    ctx = multiprocessing.get_context("spawn")
    a, b = ctx.Pipe()
    b.send(("starting", [10, 0]))
    b.send(("err", "Traceback ...\nValueError: boom"))
    with pytest.raises(DPSyncHarnessError, match="rank 0 failed start-up") as e:
        _bare([a])._collect("start-up", 600.0, start=True)
    assert isinstance(e.value, HarnessError)
    a, b = ctx.Pipe()
    b.send(("err", "Traceback ...\nValueError: boom"))
    with pytest.raises(DPSyncError, match="rank 0 failed a step") as e:
        _bare([a])._collect("a step", 600.0)
    assert not isinstance(e.value, HarnessError)


def test_a_rank_that_never_beats_is_a_start_timeout_naming_it():
    ctx = multiprocessing.get_context("spawn")
    a, b = ctx.Pipe()  # b never sends: no progress, whatever the load
    with pytest.raises(StartTimeout, match=r"process-group rank\(s\) 0 of 1 .* did not start: "
                                           "no progress for 0.2 s"):
        _bare([a])._collect("start-up", 0.2, start=True)
    b.close()


# --------------------------------------------------------------------------- nothing left behind
def test_a_tool_failure_without_a_run_dir_logs_to_a_private_per_run_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    line = report_tool_failure("list", RuntimeError("boom"), None)
    logs = list((tmp_path / "state" / "swafuzz").glob(f"error-{os.getpid()}-*.log"))
    assert len(logs) == 1 and str(logs[0]) in line and "boom" in logs[0].read_text()
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    line = report_tool_failure("list", RuntimeError("boom"), None)
    d = [p for p in tmp_path.glob("swafuzz-*") if p.is_dir()]
    assert len(d) == 1 and oct(d[0].stat().st_mode & 0o777) == "0o700", d
    assert str(d[0]) in line and not (tmp_path / "swafuzz-error.log").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_forkserver_preloading_serverwatch_ends_with_the_cli():
    """What the pool's forkserver preloads (unit.pool_context): its process ends when the
    process that started it is killed, not after a teardown of torch (bound: generous)."""
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; p = subprocess.Popen([sys.executable,"
         " '-c', 'import swafuzz.harness.pipeline.serverwatch, time; print(1, flush=True); "
         "time.sleep(600)'], stdout=sys.stdout); print(p.pid, flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    try:
        child = int(parent.stdout.readline())
        assert parent.stdout.readline().strip() == "1"  # the watch is set up
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        end = time.monotonic() + 120
        while alive(child) and time.monotonic() < end:
            time.sleep(0.05)
        assert not alive(child)
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, NameError, UnboundLocalError):
            pass
