"""Campaign runs a CI user can rely on (issue 19): file modes, same seed same Cases whatever the
worker count, one live run per directory, no orphans after a kill -9, ``--resume`` refusing
flags that would change the run, the throughput of a resumed run, a torn last log line.

Small runs on the torch path; usage errors call :func:`swafuzz.harness.cli.commands.main` in-process.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest
from support.procs import alive
from support.runcli import ENV, cases_by_unit, cli_caller, log_rows, swafuzz, wait_until

from swafuzz.harness.ledger import known
from swafuzz.harness.pipeline.caselog import repair_log
from swafuzz.harness.pipeline.runlock import RunLock


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli(*args) -> (exit code, stdout, stderr)``: the CLI in-process, without
    SWAFUZZ_PLUGINS."""
    return cli_caller(capsys, monkeypatch)


@pytest.fixture
def tiny_run(tmp_path, cli):
    """A finished 2-kind, 6-case run (in-process, --no-isolate)."""
    out = tmp_path / "run"
    code, so, se = cli("run", "--scenario", "decode", "--scenario", "idle", "--examples", "6",
                       "--impl", "torch", "--no-isolate", "--quiet", "--out", out)
    assert code == 0, so + se
    return out


# --------------------------------------------------------------------------- defect 8
def test_run_and_report_files_get_the_umask_mode(tmp_path, cli):
    old = os.umask(0o022)
    try:
        out = tmp_path / "o"
        code, so, se = cli("run", "--target", "mutant:idle_uses_cache", "--scenario", "idle",
                           "--examples", "6", "--impl", "torch", "--no-isolate", "--quiet",
                           "--out", out)
        assert code == 1, so + se
        code, so, se = cli("report", out)
        assert code == 1, so + se
    finally:
        os.umask(old)
    files = [out / "run.json", out / "junit.xml", out / "summary.html", out / "summary.md",
             out / "cases.jsonl", *(out / "findings").glob("*.json")]
    assert len(files) > 5
    modes = {f.name: oct(stat.S_IMODE(f.stat().st_mode)) for f in files}
    assert set(modes.values()) == {"0o644"}, modes


# --------------------------------------------------------------------------- defect 5
def test_same_seed_same_cases_with_1_and_2_workers(tmp_path, cli):
    """raw_metadata's third Case drew a constant from the modules loaded in the process that
    generates (Hypothesis's local constants): with 1 worker, this process (the CLI's modules,
    cases in a case worker) drew another one than a pool process of 2 workers (cases run
    in-process there, to keep the test small: a Case must not depend on that either)."""
    args = ["--scenario", "raw_metadata", "--scenario", "decode", "--examples", "6", "--impl",
            "torch", "--ledger", "none", "--quiet"]
    code, so, se = cli("run", *args, "--out", tmp_path / "w1")
    assert code == 0, so + se
    r = swafuzz("run", *args, "--workers", "2", "--no-isolate", "--out", tmp_path / "w2")
    assert r.returncode == 0, r.stdout + r.stderr
    one, two = cases_by_unit(tmp_path / "w1"), cases_by_unit(tmp_path / "w2")
    assert sorted(one) == ["decode.0", "raw_metadata.0"]
    assert one == two


# --------------------------------------------------------------------------- defect 10 (torn line)
def test_a_torn_last_log_line_is_cut_before_the_resume_appends(tiny_run, cli):
    log = tiny_run / "cases.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    cases = [x for x in lines if '"case"' in x]
    # as if killed while writing idle's last case row: no unit_done for idle, half a row
    keep = [x for x in lines if '"unit_done"' not in x or '"idle.0"' not in x]
    keep.remove(cases[-1])
    log.write_text("".join(keep) + cases[-1][: len(cases[-1]) // 2])
    code, so, se = cli("run", "--resume", tiny_run, "--quiet")
    assert code == 0, so + se
    text = log.read_text()
    assert text.endswith("\n")
    rows = [json.loads(x) for x in text.splitlines()]  # every line whole
    assert sum(1 for r in rows if "case" in r) == len(cases)
    assert sorted(r["unit"] for r in rows if r.get("event") == "unit_done") == [
        "decode.0", "idle.0"]


def test_repair_log_keeps_whole_lines(tmp_path):
    p = tmp_path / "l.jsonl"
    p.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": ')
    assert repair_log(str(p)) == 6
    assert p.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    assert repair_log(str(p)) == 0
    p.write_bytes(b'{"torn')
    assert repair_log(str(p)) == 6 and p.read_bytes() == b""


# --------------------------------------------------------------------------- defect 4
def test_resume_refuses_flags_that_would_change_the_run(tiny_run, cli):
    code, so, se = cli("run", "--resume", tiny_run, "--examples", "7", "--seed", "3")
    assert code == 2
    assert "--examples 7 (the run's: 6)" in se and "--seed 3 (the run's: 0)" in se
    code, so, se = cli("run", "--resume", tiny_run, "--out", tiny_run.parent / "x")
    assert code == 2 and "--out" in se and not (tiny_run.parent / "x").exists()
    code, so, se = cli("run", "--resume", tiny_run, "--scenario", "decode", "--impl", "triton")
    assert code == 2 and "--scenario decode" in se and "--impl triton" in se
    # the run's own values (its first command line with --resume added) and --quiet: accepted
    code, so, se = cli("run", "--resume", tiny_run, "--out", tiny_run, "--examples", "6",
                       "--scenario", "decode", "--scenario", "idle", "--quiet")
    assert code == 0, so + se


def test_throughput_of_a_resume_counts_every_session(tiny_run, cli):
    first = json.loads((tiny_run / "run.json").read_text())
    assert first["forward_steps"] > 0
    code, so, se = cli("run", "--resume", tiny_run, "--quiet")  # nothing left to run
    assert code == 0, so + se
    again = json.loads((tiny_run / "run.json").read_text())
    assert again["forward_steps"] == first["forward_steps"]
    # the wall time of the first session counts (not the resume's fraction of a second)
    assert again["seconds"] >= 0.5 * first["seconds"]
    assert "over every session of the run" in so


# --------------------------------------------------------------------------- defect 3
def _descendants(pid: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out, todo = set(), [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.add(k)
            todo.append(k)
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_leaves_no_orphans_and_a_live_run_dir_is_locked(tmp_path, cli):
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "swafuzz", "run", "--workers", "2",
                          "--scenario", "decode", "--scenario", "episode", "--examples", "2000",
                          "--impl", "torch", "--quiet", "--out", str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
                         start_new_session=True)
    procs: set[int] = set()
    try:
        # both units are running cases
        wait_until(lambda: (out / "cases.jsonl").exists() and len(cases_by_unit(out)) == 2, p)
        assert p.poll() is None
        procs = _descendants(p.pid)
        assert len(procs) >= 4, procs  # 2 pool processes, their 2 case workers (+ tracker)
        # a second run into the live directory is refused, naming the owner
        code, so, se = cli("run", "--resume", out)
        assert code == 2 and f"pid {p.pid} " in se, se
        os.kill(p.pid, signal.SIGKILL)  # the parent only, not its process group
        p.wait()
        deadline = time.time() + 120  # a generous bound: they end in well under 1 s (RUNS.md)
        while time.time() < deadline and any(alive(q) for q in procs):
            time.sleep(0.2)
        assert not [q for q in procs if alive(q)]
        RunLock(str(out)).acquire().release()  # the dead owner's lock is gone
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        for q in procs:  # what the test found alive (no pid of anyone else's)
            if alive(q):
                os.kill(q, signal.SIGKILL)


# --------------------------------------------------------------------------- defect 2
KINDS = ["decode", "idle", "draft_extend", "remap", "late_tail"]


def test_budget_gives_every_kind_cases_and_starts_none_after_its_end(tmp_path, cli):
    """``--budget 2s`` over 5 kinds: with the slices fixed at the start, the first units ran
    over theirs and the last ones got no Case at all (11 of 29 kinds at 0 in a 60 s run)."""
    out = tmp_path / "o"
    code, so, se = cli("run", "--budget", "2s", *[a for k in KINDS for a in ("--scenario", k)],
                       "--impl", "torch", "--no-isolate", "--quiet", "--out", out)
    assert code == 0, so + se
    rows = log_rows(out)
    units = {r["unit"]: r for r in rows if r.get("event") == "unit_done"}
    assert sorted(units) == sorted(f"{k}.0" for k in KINDS)
    assert not [u for u, r in units.items() if r["generated"] < 1]
    # no Case but a unit's first started after the end of the budget (the run.json start is
    # after the command's start: a late bound)
    end = json.loads((out / "run.json").read_text())["started"] + 2.0
    seen: set[str] = set()
    late = []
    for r in rows:
        if "case" in r:
            if r["unit"] in seen and r["t"] - r["seconds"] > end + 0.5:
                late.append(r["unit"])
            seen.add(r["unit"])
    assert not late


# --------------------------------------------------------------------------- defect 1
def test_ledger_auto_without_the_shipped_ledger_is_a_usage_error(tmp_path, cli, monkeypatch):
    """A wheel without the ledger used to run silently with none (every known bug failing
    the gate); the wheel itself is tests/install/test_ledger_in_wheel.py."""
    monkeypatch.setattr(known, "DEFAULT_LEDGER", str(tmp_path / "nowhere" / "known.json"))
    out = tmp_path / "o"
    code, so, se = cli("run", "--scenario", "decode", "--examples", "2", "--impl", "torch",
                       "--no-isolate", "--out", out)
    assert code == 2 and "--ledger: auto: the ledger shipped with swafuzz is missing" in se
    assert not out.exists()
