"""The run pipeline as a user meets it: workers, findings, kill -9 / SIGINT / SIGTERM and
``--resume``, a non-empty ``--out``, resource limits, exit codes (0/1/2/3/130).

Campaigns, signals, crashes and exit 3 run ``python -m swafuzz`` in a subprocess on the torch
path (fast), as CI would. Usage and input errors (exit 2 before any case runs) call
:func:`swafuzz.harness.cli.commands.main` in-process - the function ``python -m swafuzz`` exits with -
so the many small refusals do not each pay an interpreter and a torch import.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from support.runcli import (
    ENV,
    HANG_S,
    assert_no_duplicates,
    case_rows,
    cli_caller,
    swafuzz,
    wait_until,
)
from support.runcli import log_rows as rows


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli(*args) -> (exit code, stdout, stderr)``: the CLI in-process, without
    SWAFUZZ_PLUGINS."""
    return cli_caller(capsys, monkeypatch)


def test_two_workers_find_and_deduplicate(tmp_path):
    out = tmp_path / "o"
    r = swafuzz("run", "--target", "mutant:idle_uses_cache", "--scenario", "idle",
                "--scenario", "decode", "--examples", "40", "--workers", "2", "--impl", "torch",
                "--out", out)
    assert r.returncode == 1, r.stdout + r.stderr
    units = [x for x in rows(out) if x.get("event") == "unit_done"]
    assert sorted(u["unit"] for u in units) == ["decode.0", "idle.0"]
    assert [u["kind"] for u in units if u["finding"]] == ["idle"]
    assert len(list((out / "findings").glob("*.json"))) == 1  # unshrunk bundle superseded
    gen = sum(u["generated"] for u in units)
    assert f"{gen} cases generated" in r.stdout and "results: " in r.stdout
    assert gen <= 40
    assert_no_duplicates(out)


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "o"
    args = ["run", "--examples", "60", "--scenario", "decode", "--scenario", "episode",
            "--scenario", "draft_extend", "--impl", "torch", "--quiet", "--out", out]
    p = subprocess.Popen([sys.executable, "-m", "swafuzz", *map(str, args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                         start_new_session=True)
    deadline = time.time() + HANG_S
    while time.time() < deadline:  # until some cases are recorded, not all
        time.sleep(0.5)
        if (out / "cases.jsonl").exists() and len(case_rows(out)) >= 12:
            break
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    before = case_rows(out)
    assert before and not any(x.get("event") == "unit_done" and x["unit"] == "episode.0"
                              for x in rows(out))
    r = swafuzz("run", "--resume", out, "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    after = case_rows(out)
    assert after[:len(before)] == before  # nothing recorded was lost
    assert_no_duplicates(out)
    units = {x["unit"]: x for x in rows(out) if x.get("event") == "unit_done"}
    assert set(units) == {"decode.0", "episode.0", "draft_extend.0"}
    # the budget counts what ran before the kill: generated cases over all units <= 60
    assert sum(u["generated"] for u in units.values()) <= 60
    # same cases as an uninterrupted run with the same seed
    fresh = tmp_path / "fresh"
    r = swafuzz(*[a if a != out else fresh for a in args])
    assert r.returncode == 0
    canon = lambda o: sorted(json.dumps(x["case"], sort_keys=True) for x in case_rows(o))  # noqa: E731
    assert canon(out) == canon(fresh)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_prints_table_and_resume_hint(tmp_path, sig):
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "swafuzz", "run", "--examples", "400",
                          "--impl", "torch", "--out", str(out)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    wait_until(lambda: (out / "cases.jsonl").exists() and len(case_rows(out)) >= 3, p)
    p.send_signal(sig)
    so, se = p.communicate(timeout=HANG_S)
    assert p.returncode == 130, so + se
    assert "Traceback" not in se and "Traceback" not in so
    assert "scenario kind" in so and f"--resume {out}" in so


def test_fresh_run_into_non_empty_out_is_refused(tmp_path, cli):
    out = tmp_path / "o"
    out.mkdir()
    (out / "something").write_text("x")
    code, _, err = cli("run", "--examples", "1", "--out", out)
    assert code == 2 and "not empty" in err and "--resume" not in err  # not a run: no resume
    assert sorted(os.listdir(out)) == ["something"]
    (out / "run.json").write_text("{}")  # a run directory: continued with --resume
    code, _, err = cli("run", "--examples", "1", "--out", out)
    assert code == 2 and f"--resume {out}" in err
    assert sorted(os.listdir(out)) == ["run.json", "something"]


@pytest.mark.parametrize("args,field", [
    (["run", "--workers", "0"], "--workers"),
    (["run", "--budget", "soon"], "--budget"),
    (["run", "--resume", "/nonexistent/run"], "--resume"),
    (["zoo", "--seeds", "0"], "--seeds"),
    (["zoo", "--examples", "-3"], "--examples"),
    (["zoo", "--jobs", "0"], "--jobs"),
    (["zoo", "--budget", "ci", "--seeds", "3"], "--seeds"),
    (["zoo", "--json", "/proc/nope/zoo.json"], "--json"),
    (["bench", "--", "--impls", "cuda"], "--impls"),
])
def test_bad_counts_and_paths_exit_2(tmp_path, cli, args, field):
    if "cuda" in args and "cuda" in __import__("swafuzz.kernels").kernels.available_impls():
        pytest.skip("cuda is available here")
    code, _, err = cli(*args, *(["--out", tmp_path / "o"] if args[0] in ("run", "zoo") and
                             "--resume" not in args else []))
    assert code == 2, err
    assert field in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_out_at_a_file_or_unwritable_exit_2(tmp_path, cli):
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = cli("run", "--examples", "1", "--out", f)
    assert code == 2 and "--out" in err
    if os.geteuid() != 0:  # root may write anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        code, _, err = cli("run", "--examples", "1", "--out", ro / "x")
        assert code == 2 and "--out" in err


def test_resource_limit_and_corrupt_bundle_exit_2(tmp_path, cli):
    from swafuzz.scenarios.case import Case, PoolConfig, Step

    case = Case(pool=PoolConfig(full_pages=10**9), steps=(Step("admit", rid=0, length=1),))
    b = tmp_path / "huge.json"
    b.write_text(json.dumps({"case": case.to_json(), "target": "unified"}))
    code, _, err = cli("repro", b)
    assert code == 2 and "pool.full_pages" in err and "limit" in err
    bad = tmp_path / "run"
    (bad / "findings").mkdir(parents=True)
    (bad / "findings" / "x.json").write_text("{not json")
    code, _, err = cli("report", bad)
    assert code == 2 and "x.json" in err and "Traceback" not in err


def test_repro_of_a_crash_is_isolated(tmp_path):
    from swafuzz.scenarios.case import Case, Step

    case = Case(steps=(Step("admit", rid=0, length=1), Step("finish", rid=0)))
    b = tmp_path / "crash.json"
    b.write_text(json.dumps({"case": case.to_json(), "target": "selftest:segfault",
                             "impl": "torch"}))
    r = swafuzz("repro", b)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "crash" in r.stdout and "SIGSEGV" in r.stdout


def test_tool_failure_exits_3_with_traceback_file(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text(
        "import sys\n"
        "import swafuzz.harness.cli.commands as cli\n"
        "def boom(args):\n    raise RuntimeError('kaboom')\n"
        "cli.cmd_list = boom\n"
        "p = cli.build_parser\n"
        "def bp():\n    parser = p()\n"
        "    for a in parser._subparsers._group_actions[0].choices.values():\n"
        "        if a.prog.endswith(' list'):\n            a.set_defaults(fn=boom)\n"
        "    return parser\n"
        "cli.build_parser = bp\n"
        "sys.exit(cli.main(['list']))\n")
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, env=ENV,
                       timeout=HANG_S)
    assert r.returncode == 3, r.stdout + r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "tool failure" in line and "kaboom" in line and "Traceback" not in r.stderr
    path = line.rsplit("traceback in ", 1)[1].rstrip(")")
    assert "RuntimeError: kaboom" in open(path).read()


def test_time_budget_stops_generation(tmp_path):
    out = tmp_path / "o"
    r = swafuzz("run", "--budget", "2s", "--scenario", "decode", "--scenario", "idle",
                "--impl", "torch", "--quiet", "--out", out)
    assert r.returncode == 0, r.stdout + r.stderr
    units = [x for x in rows(out) if x.get("event") == "unit_done"]
    assert len(units) == 2 and all(u["out_of_time"] for u in units)
    assert sum(u["generated"] for u in units) > 0
