"""The CLI's promises: exit codes (0 clean, 1 findings, 2 usage/input error naming the field),
nothing half-written on bad input, findings written as bundles before the next case, repro of
a bundle, and a crash inside a case recorded as a finding without ending the campaign.

Campaigns and repro run ``python -m swafuzz`` in a subprocess, as a user would. Usage errors
(exit 2 before any work) call :func:`swafuzz.harness.cli.commands.main` in-process: the function
``python -m swafuzz`` exits with, without an interpreter and torch import per case; that the
module entry point itself works is :func:`test_list`'s subprocess.
"""

import json
import os
import subprocess
import sys

import pytest

from swafuzz.harness.cli.commands import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def swafuzz(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "swafuzz", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, env=env, timeout=600)


@pytest.mark.parametrize("args,field", [
    (["run", "--target", "nope"], "--target"),
    (["run", "--scenario", "warp"], "--scenario"),
    (["run", "--impl", "fortran"], "--impl"),
    (["run", "--executor", "magic"], "--executor"),
    (["run", "--examples", "0"], "--examples"),
    (["zoo", "--budget", "huge"], "--budget"),
])
def test_usage_errors_exit_2_and_write_nothing(tmp_path, capsys, args, field):
    out = tmp_path / "out"
    code = main([*args, "--out", str(out)] if args[0] == "run" else args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert field in err and "allowed" in err or "must be" in err
    assert not out.exists()


def test_list():
    r = swafuzz("list")
    assert r.returncode == 0
    for word in ("unified", "mutant:NAME", "dp_padded", "redzones", "tape", "server_decode"):
        assert word in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 120  # a table, not one line
    assert "mutant:pad_rows_not_zeroed" not in r.stdout  # the zoo: --mutants
    r = swafuzz("list", "--mutants")
    assert r.returncode == 0
    for word in ("mutant:pad_rows_not_zeroed", "PR #24743", "server_decode_stale_loc"):
        assert word in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 120


def test_run_clean_then_finding_then_repro(tmp_path, capsys):
    out = tmp_path / "clean"
    r = swafuzz("run", "--examples", "7", "--quiet", "--impl", "torch", "--no-isolate",
                "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "total" in r.stdout and "idle" in r.stdout
    assert (out / "cases.jsonl").exists()

    out = tmp_path / "bug"
    r = swafuzz("run", "--examples", "2", "--quiet", "--impl", "torch", "--scenario", "decode",
                "--target", "mutant:host_baked_translation", "--out", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    bundles = list((out / "findings").glob("*.json"))
    assert len(bundles) == 1
    b = json.loads(bundles[0].read_text())
    assert b["target"] == "mutant:host_baked_translation"
    # the repro line is relative to the run directory, as the bundle's command and the report
    assert f"  swafuzz repro findings/{bundles[0].name}\n" in r.stdout, r.stdout
    assert f"repro commands run from the run directory ({out})" in r.stdout
    assert not [ln for ln in r.stdout.splitlines() if "swafuzz repro" in ln and str(tmp_path) in ln]
    assert b["command"] == f"swafuzz repro findings/{bundles[0].name}"

    # repro in-process (cli.main); repro in a fresh process: test_pipeline's crash repro
    capsys.readouterr()
    assert main(["repro", str(bundles[0])]) == 1 and "FAIL" in capsys.readouterr().out
    assert main(["repro", str(bundles[0]), "--target", "unified"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_repro_malformed_bundle_exit_2(tmp_path, capsys):
    p = tmp_path / "b.json"
    p.write_text(json.dumps({"case": {"steps": []}}))
    assert main(["repro", str(p)]) == 2
    assert "pool.page_size: is required" in capsys.readouterr().err
    pool = {"page_size": 1, "full_pages": 2, "swa_pages": 2, "window": 1, "layers": 1,
            "row_width": 1}
    p.write_text(json.dumps({"case": {"pool": pool, "steps": [{"op": "warp"}]}}))
    assert main(["repro", str(p)]) == 2
    err = capsys.readouterr().err
    assert "steps[0].op" in err and "admit" in err
    p.write_text(json.dumps({"case": {"pool": pool, "steps": [{"op": "decode", "rids": [3]}]}}))
    assert main(["repro", str(p)]) == 2
    assert "cannot run" in capsys.readouterr().err


def test_crash_is_a_finding_and_the_campaign_goes_on(tmp_path):
    out = tmp_path / "crash"
    r = swafuzz("run", "--examples", "2", "--quiet", "--impl", "torch", "--target",
                "selftest:segfault", "--scenario", "decode", "--scenario", "idle",
                "--shrink-budget", "0", "--out", str(out))  # each crash costs a fresh worker
    assert r.returncode == 1, r.stdout + r.stderr
    assert "SIGSEGV" in r.stdout
    assert "idle" in r.stdout and "decode" in r.stdout  # both kinds ran: the crash did not end it
    b = json.loads(next((out / "findings").glob("*.json")).read_text())
    assert b["check"] == "crash"
