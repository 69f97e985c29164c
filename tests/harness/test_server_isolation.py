"""A server-level campaign (``swafuzz run --level server``) runs its Cases in case workers, as
the component level does (``harness.pipeline.level_server`` over ``harness.pipeline.unit`` / ``pipeline``): a Case
that segfaults is a ``server:crash`` finding on disk before the next Case, and the run goes on;
``--workers N`` draws the same Cases as one worker; ``--budget`` ends it in time; Ctrl-C leaves
partial results and exits 130, and ``--resume`` finishes it without running a Case twice.

No SGLang: the targets are ``tests/data/server_plugin``'s fixtures (``fixture:server_stub``, a
server level that runs no forward, and ``fixture:server_segv``, which segfaults on
``server_decode`` Cases of two or more requests). The real pipeline through the worker:
``tests/server/test_server_isolation_upstream.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.runcli import HANG_S, case_rows, cases_by_unit, wait_until

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "data" / "server_plugin"
KINDS = ["--scenario", "server_decode", "--scenario", "server_mixed"]


@pytest.fixture
def cli(capsys, monkeypatch):
    """The CLI in this process with the fixture plugin importable here and in its workers."""
    from swafuzz.harness.cli.commands import main

    monkeypatch.delenv("SWAFUZZ_PLUGINS", raising=False)
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PLUGIN_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))

    def call(*args):
        code = main(["run", "--plugin", "swafuzz_server_fixture", "--level", "server",
                     "--impl", "torch", *map(str, args)])
        cap = capsys.readouterr()
        return code, cap.out, cap.err
    return call


def _run(out):
    return json.loads((out / "run.json").read_text())


def test_a_segfault_is_a_finding_and_the_run_goes_on(cli, tmp_path, capsys):
    out = tmp_path / "run"
    code, stdout, err = cli("--target", "fixture:server_segv", *KINDS, "--examples", 8,
                            "--shrink-budget", 0, "--out", out)
    assert code == 1, err  # a finding, as at component level
    rel = "findings/server-crash.server_decode.json"
    bundle = json.loads((out / rel).read_text())
    assert bundle["signature"] == "server:crash" and bundle["level"] == "server"
    assert "died with exit code -11 (SIGSEGV) inside the case" in bundle["failures"][0]["message"]
    assert len(bundle["case"]["requests"]) >= 2  # the first Case that crashed (no shrinking)
    run = _run(out)
    assert run["findings"] == [rel]
    assert run["kinds"]["server_decode"]["finding"] == "server:crash"
    assert run["kinds"]["server_mixed"] == {"cases": 4, "finding": None, "seconds": pytest.approx(
        run["kinds"]["server_mixed"]["seconds"]), "stopped_out_of_scope": 4}
    rows = case_rows(out)  # the crash is on disk before the next Case, which a new worker ran
    crash = next(i for i, r in enumerate(rows) if r["signature"] == "server:crash")
    assert any(r["kind"] == "server_mixed" and not r["failed"] for r in rows[crash + 1:])
    assert f"swafuzz repro {rel}" in err and f"swafuzz repro {rel}" in (
        out / "summary.md").read_text()
    assert 'failures="1"' in (out / "junit.xml").read_text()
    from swafuzz.harness.cli.commands import main  # the bundle replays, its crash isolated too
    assert main(["repro", "--plugin", "swafuzz_server_fixture", str(out / rel)]) == 1
    assert "FAIL server:crash" in capsys.readouterr().out


def test_same_cases_with_one_and_two_workers(cli, tmp_path):
    """The draws, not the isolation (the stub runs in the unit processes: --no-isolate)."""
    runs = {}
    for n in (1, 2):
        out = tmp_path / f"w{n}"
        code, _, err = cli("--target", "fixture:server_stub", *KINDS, "--examples", 10,
                           "--workers", n, "--seed", 3, "--no-isolate", "--out", out)
        assert code == 0, err
        runs[n] = cases_by_unit(out)
        assert _run(out)["workers"] == n and _run(out)["cases"] == 10
    assert runs[1] == runs[2] and sorted(runs[1]) == ["server_decode.0", "server_mixed.0"]


def test_budget_ends_the_run_and_every_kind_runs(cli, tmp_path, monkeypatch):
    from swafuzz.harness.cli import run as cli_run

    monkeypatch.setenv("SWAFUZZ_FIXTURE_CASE_S", "0.05")
    out = tmp_path / "b"
    t0 = time.monotonic()  # the budget counts from the command's start: this call's, here
    monkeypatch.setattr(cli_run, "COMMAND_START", time.time())
    code, _, err = cli("--target", "fixture:server_stub", *KINDS, "--budget", "3s",
                       "--no-isolate", "--out", out)
    assert code == 0, err
    run = _run(out)  # no --examples: the budget alone ended it, each kind had its turn
    assert run["budget_s"] == 3 and time.monotonic() - t0 < 10
    assert all(k["cases"] >= 1 for k in run["kinds"].values()) and run["cases"] < 200


def test_ctrl_c_leaves_partial_results_and_resume_finishes(cli, tmp_path):
    env = dict(os.environ, SWAFUZZ_FIXTURE_CASE_S="0.2")
    env.pop("SWAFUZZ_PLUGINS", None)
    out = tmp_path / "r"
    args = [sys.executable, "-m", "swafuzz", "run", "--plugin", "swafuzz_server_fixture",
            "--level", "server", "--target", "fixture:server_stub", *KINDS, "--impl", "torch",
            "--examples", 24, "--out", out]
    p = subprocess.Popen(list(map(str, args)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)  # (env: the fixture's PYTHONPATH)
    log = out / "cases.jsonl"
    wait_until(lambda: log.exists() and len(log.read_text().splitlines()) >= 3, p, 0.1)
    p.send_signal(signal.SIGINT)
    stdout, err = p.communicate(timeout=HANG_S)
    assert p.returncode == 130, stdout + err
    run = _run(out)
    assert run["interrupted"] is True and (out / "summary.md").exists()
    assert f"swafuzz run --resume {out}" in stdout
    assert 3 <= len(case_rows(out)) < 24
    code, _, err = cli("--resume", out, "--seed", 5)
    assert code == 2 and "--seed 5 (the run's: 0)" in err  # flags that would change the run
    code, _, err = cli("--resume", out)
    assert code == 0, err
    run = _run(out)
    assert run["interrupted"] is False and run["cases"] == 24
    keys = [json.dumps(r["case"], sort_keys=True) for r in case_rows(out)]
    assert len(keys) == len(set(keys)) == 24  # nothing recorded ran twice, nothing lost


def test_coverage_at_server_level_counts_the_cases_per_function(cli, tmp_path):
    """``--coverage`` with isolated workers (2, forked from one zygote): coverage.json names
    each called function ``module:qualname`` with the Cases that ran it, and the target's
    functions of interest with what was never reached."""
    pytest.importorskip("coverage")
    out = tmp_path / "cov"
    code, stdout, err = cli("--target", "fixture:server_cov", *KINDS, "--examples", 6,
                            "--workers", 2, "--coverage", "--out", out)
    assert code == 0, err
    cov = json.loads((out / "coverage.json").read_text())
    assert cov["functions"]["swafuzz_server_fixture:stub_pipeline"]["cases"] == 6
    assert "swafuzz_server_fixture:segv_pipeline" not in cov["functions"]  # never called
    focus = cov["focus"]
    assert focus["total"]["functions"] == 2 and focus["total"]["called"] == 1
    assert focus["absent"] == ["swafuzz_server_fixture:no_such_*"]
    assert focus["functions"]["swafuzz_server_fixture:segv_pipeline"]["cases"] == 0
    md = (out / "coverage.md").read_text()
    assert "Functions called: 1/2 (50.0%)" in md and "`swafuzz_server_fixture:no_such_*`" in md
    assert "1/2 called" in stdout


def test_shards_merge_to_the_single_machine_run(cli, tmp_path, capsys):
    """``--shard I/N`` at server level: the shards' units are the whole run's, and ``swafuzz
    merge`` joins them into the directory the single-machine run leaves (same Cases per unit,
    same per-kind counts)."""
    from swafuzz.harness.cli.commands import main

    common = ["--target", "fixture:server_stub", *KINDS, "--examples", 12, "--seed", 4,
              "--no-isolate"]
    code, _, err = cli(*common, "--workers", 2, "--out", tmp_path / "whole")
    assert code == 0, err
    for i in (1, 2):
        code, _, err = cli(*common, "--shard", f"{i}/2", "--out", tmp_path / f"s{i}")
        assert code == 0, err
        assert _run(tmp_path / f"s{i}")["shard"] == f"{i}/2"
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out",
                 str(tmp_path / "m")]) == 0, capsys.readouterr()
    whole, merged = _run(tmp_path / "whole"), _run(tmp_path / "m")
    assert cases_by_unit(tmp_path / "m") == cases_by_unit(tmp_path / "whole")
    assert merged["cases"] == whole["cases"] == 12
    assert {k: v["cases"] for k, v in merged["kinds"].items()} == \
        {k: v["cases"] for k, v in whole["kinds"].items()}
    assert (tmp_path / "m" / "summary.md").exists() and (tmp_path / "m" / "junit.xml").exists()


def test_db_replays_a_saved_failing_case_first(cli, tmp_path):
    """``--db DIR`` at server level: the failing Case one run saved is the next run's first."""
    db = tmp_path / "db"
    args = ["--target", "fixture:server_segv", "--scenario", "server_decode", "--examples", 6,
            "--shrink-budget", 0, "--ledger", "none", "--db", db]
    code, _, err = cli(*args, "--seed", 1, "--out", tmp_path / "a")
    assert code == 1, err
    assert _run(tmp_path / "a")["config"]["db"] == str(db) and os.listdir(db)
    code, _, err = cli(*args, "--seed", 2, "--out", tmp_path / "b")
    assert code == 1, err
    first = case_rows(tmp_path / "b")[0]
    assert first["signature"] == "server:crash"  # replayed from the database, not drawn


@pytest.mark.parametrize("flag,needle", [
    (["--db", "redis://"], "--db: 'redis://' needs a host and a port"),
    (["--shard", "3/2"], "--shard: '3/2' is not allowed"),
    (["--coverage", "--no-isolate"], "--coverage: measured in the local case workers: not with "
                                     "--no-isolate"),
    (["--ray="], "--ray: '' is not an address")])
def test_server_level_run_options_refuse_bad_values(flag, needle, cli, tmp_path):
    """--ray, --shard, --db and --coverage run at server level (tests/harness/
    this file, tests/fleet/test_fleet_server.py); a bad value exits 2 naming the
    flag, nothing written."""
    code, _, err = cli("--target", "fixture:server_stub", "--examples", 1, "--out",
                       tmp_path / "a", *flag)
    assert code == 2, err
    assert needle in err.replace("\n", " "), err
    assert not (tmp_path / "a").exists()
