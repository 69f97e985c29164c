"""The ledger consulted during a campaign (``harness.ledger.known``, ``swafuzz run --ledger``): a known
failure is counted and bundled and the unit goes on; a new one still ends it and fails the run.

Target ``fixture:ring_known_and_new`` (``tests/data/known_plugin``): the ring kind with a
page-size-1 bug (mutant 46's, the model of ledger entry ``ring-p1-alloc-writes-mapping``) and
an unguarded store at page size > 1 (mutant 44's). Temporary ledgers; campaigns run the CLI in a
subprocess on the torch path, seeds fixed (hypothesis is seeded: the same Cases every run); usage
errors and the report call the CLI in-process.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.runcli import HANG_S, cli_caller, wait_until

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "data" / "known_plugin"
TARGET = "fixture:ring_known_and_new"
CITE = "https://github.com/sgl-project/sglang/pull/38192"
P1 = {"id": "fixture-p1", "target": TARGET, "signature": "invariants/ring/*", "cite": CITE,
      "note": "mutant 46 at page size 1",
      "when": {"pool": {"page_size": 1, "swa_ring": {"min": 1}}}}
STORE = {"id": "fixture-store", "target": TARGET, "signature": "contracts/ring/*", "cite": CITE,
         "note": "mutant 44 above page size 1"}


def _env():
    env = {k: v for k, v in os.environ.items() if k != "SWAFUZZ_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(PLUGIN_DIR)] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _ledger(tmp_path, *entries):
    p = tmp_path / "ledger.json"
    p.write_text(json.dumps({"ledger_version": 1, "entries": list(entries)}))
    return p


def _args(out, ledger, examples=40, *extra):
    # a small shrink budget: the known entries' first Cases shrink within it (one Case for
    # fixture-p1), and no assertion here reads how far the new finding shrank
    return ["run", "--plugin", "swafuzz_known_fixture", "--target", TARGET, "--scenario", "ring",
            "--impl", "torch", "--examples", str(examples), "--seed", "0", "--shrink-budget",
            "8", "--db", "none", "--out", str(out), "--ledger", str(ledger), *map(str, extra)]


def swafuzz(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "swafuzz", *args], capture_output=True,
                          text=True, timeout=timeout, env=_env())


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli(*args) -> (exit code, stdout, stderr)``: the CLI in-process (no interpreter and
    torch import per call), the fixture plugin importable."""
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    return cli_caller(capsys, monkeypatch)


def rows(out):
    with open(out / "cases.jsonl") as f:
        return [json.loads(x) for x in f]


def unit_rows(out):
    return [r for r in rows(out) if r.get("event") == "unit_done"]


def test_known_bug_passed_new_bug_found_in_the_same_unit(tmp_path, cli):
    led = _ledger(tmp_path, P1)
    out = tmp_path / "on"
    r = swafuzz(*_args(out, led))
    assert r.returncode == 1, r.stdout + r.stderr  # the new bug fails the run
    (u,) = unit_rows(out)
    assert u["finding"] == "contracts/ring/refused"
    assert u["known"]["fixture-p1"] >= 1 and u["rounds"] >= 2
    kf = u["known_findings"]["fixture-p1"]
    assert kf["signature"] == "invariants/ring/ring-r4"
    names = sorted(p.name for p in (out / "findings").iterdir())
    assert names == ["contracts_ring_refused.json",
                     "invariants_ring_ring-r4.known-fixture-p1.json"], names
    kb = json.loads((out / "findings" / names[1]).read_text())
    assert kb["ledger_entry"] == "fixture-p1" and kb["case"]["pool"]["page_size"] == 1
    assert kb["executor"] == "auto" and kb["executors"] == ["eager", "tape"]
    assert kb["shrunk"] == {"requests": 1, "steps": 2}
    new = json.loads((out / "findings" / names[0]).read_text())
    assert new["case"]["pool"]["page_size"] > 1 and "ledger_entry" not in new
    failing = [x for x in rows(out) if x.get("failed")]
    assert {x["known"] for x in failing if x["signature"].startswith("invariants")} == {
        "fixture-p1"}
    assert all(x["known"] is None for x in failing if x["signature"].startswith("contracts"))
    assert "KNOWN invariants/ring/ring-r4: ledger entry fixture-p1" in r.stdout
    assert "FINDING contracts/ring/refused" in r.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["known"]["fixture-p1"]["cases"] == u["known"]["fixture-p1"]
    assert meta["config"]["ledger"] == str(led)
    # the report agrees: the known group is known by the same ledger, the new one new
    code, so, se = cli("report", out, "--ledger", led)
    assert code == 1, so + se
    assert "known invariants/ring/ring-r4 (ledger: fixture-p1)" in so
    assert "NEW   contracts/ring/refused" in so

    # without the ledger the same unit ends at its first Case, the known bug (in-process
    # cases: what is shown is the campaign's, the isolated path ran above)
    off = tmp_path / "off"
    r = swafuzz(*_args(off, "none"), "--no-isolate")
    assert r.returncode == 1
    (u,) = unit_rows(off)
    assert u["finding"] == "invariants/ring/ring-r4" and u["generated"] == 1
    assert "known" not in u


def test_known_only_run_exits_0_and_the_cap_holds(tmp_path):
    # both bugs known, both entries with a region: each is excluded after 2 Cases
    region = {**STORE, "when": {"pool": {"page_size": {"min": 2}}}}
    out = tmp_path / "o"
    r = swafuzz(*_args(out, _ledger(tmp_path, P1, region), 60, "--known-cap", "2"))
    assert r.returncode == 0, r.stdout + r.stderr  # known findings only
    (u,) = unit_rows(out)
    assert u["finding"] is None
    assert u["known"] == {"fixture-p1": 2, "fixture-store": 2}, u
    # the two regions cover every ring Case: once both are capped nothing is left to draw
    assert u["excluded"] > 0 and u["generated"] <= 60
    assert u["stopped"] in (None, "all_excluded")
    assert set(u["known_findings"]) == {"fixture-p1", "fixture-store"}
    assert len(list((out / "findings").glob("*.known-*.json"))) == 2
    assert not list((out / "findings").glob("*.unshrunk.json"))
    assert "KNOWN contracts/ring/refused: ledger entry fixture-store" in r.stdout
    # an entry without 'when' has no region to exclude: at the cap the unit stops
    out = tmp_path / "stop"
    r = swafuzz(*_args(out, _ledger(tmp_path, P1, STORE), 60, "--known-cap", "3"))
    assert r.returncode == 0, r.stdout + r.stderr
    (u,) = unit_rows(out)
    assert u["known"]["fixture-store"] == 3 and u["known"]["fixture-p1"] <= 3  # the cap holds
    assert u["stopped"] == "known_cap:fixture-store" and u["generated"] < 60
    assert "stopped: known_cap:fixture-store" in r.stdout


def test_bad_ledger_is_a_usage_error(tmp_path, cli):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"ledger_version": 1, "entries": [{**P1, "when": {"pool": {
        "page_sise": 1}}}]}))
    out = tmp_path / "o"
    code, _, err = cli(*_args(out, bad))
    assert code == 2
    assert "--ledger" in err and "entries[0].when.pool.page_sise" in err
    assert not out.exists()
    code, _, err = cli(*_args(out, tmp_path / "missing.json"))
    assert code == 2 and "cannot read ledger" in err and not out.exists()


def test_sigint_after_a_known_finding_leaves_a_consistent_run(tmp_path):
    led = _ledger(tmp_path, P1, {**STORE, "when": {"pool": {"page_size": {"min": 2}}}})
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "swafuzz", *_args(out, led, 60, "--known-cap",
                                                                  "1000", "--quiet")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                         start_new_session=True)
    known = out / "findings" / "invariants_ring_ring-r4.known-fixture-p1.json"
    # the bundle, then some known Cases counted after it
    wait_until(lambda: known.exists() and sum(
        x.get("known") == "fixture-p1" for x in rows(out)) >= 3, p)
    os.killpg(p.pid, signal.SIGINT)
    so, se = p.communicate(timeout=HANG_S)
    assert p.returncode == 130, so + se
    assert "swafuzz run --resume" in so
    assert not unit_rows(out)  # the unit did not finish
    b = json.loads(known.read_text())  # whole, with its entry
    assert b["ledger_entry"] == "fixture-p1"
    before = [x for x in rows(out) if "case" in x]
    assert before and any(x.get("known") == "fixture-p1" for x in before)
    r = swafuzz("run", "--resume", str(out), "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr  # both bugs known
    after = [x for x in rows(out) if "case" in x]
    assert after[:len(before)] == before  # nothing recorded was lost
    keys = collections.Counter(json.dumps(x["case"], sort_keys=True) for x in after)
    assert max(keys.values()) == 1  # nothing ran twice
    (u,) = unit_rows(out)
    assert u["known"]["fixture-p1"] >= 1 and u["known"]["fixture-store"] >= 1
    assert u["generated"] == 60 and u["finding"] is None  # the whole budget, restarts and all


def test_bundles_record_the_executors_the_ledger_reads():
    """A run's bundle says ``executor: "auto"`` (the label asked for) and ``executors`` (what
    ran): the ledger's forwards view (eager vs graph) reads the list, so ``swafuzz report`` and
    ``python -m swafuzz.harness.ledger.entries`` classify a bundle as the run did."""
    from swafuzz.harness.ledger.entries import finding_executors

    assert finding_executors({"executor": "auto", "executors": ["eager", "tape"]}) == (
        "eager", "tape")
    assert finding_executors({"executor": "eager+tape"}) == ("eager", "tape")
    assert finding_executors({"executor": "auto", "executors": []}) == ("auto",)
    assert finding_executors({}) == ()


# ----------------------------------------------------------------------------- in-process
def _fake_runner(executed):
    """A stand-in target (no engine): ring Cases at page size 1 fail ``invariants/ring/a`` (the
    known bug), Cases at page size >= 16 with a ``verify`` step fail ``contracts/ring/b`` (the
    new one), the rest pass. Records the Cases it runs."""
    from swafuzz.checks.base import Failure
    from swafuzz.harness.pipeline.execute import Verdict

    def run(case):
        executed.append(case.dumps())
        fails = []
        if case.pool.page_size == 1:
            fails = [Failure("invariants", "known", "a")]
        elif case.pool.page_size >= 16 and any(s.op == "verify" for s in case.steps):
            fails = [Failure("contracts", "new", "b")]
        return Verdict(case, fails, 1, 0.0)

    return run


def _known(*entries):
    from swafuzz.harness.ledger.entries import parse_ledger
    from swafuzz.harness.ledger.known import KnownLedger

    return KnownLedger(parse_ledger({"ledger_version": 1, "entries": list(entries)}), "fake",
                       None, ["eager"])


_A = {"id": "a", "target": "fake", "signature": "invariants/ring/a", "cite": CITE, "note": "n",
      "when": {"pool": {"page_size": 1}}}


def test_rounds_in_process_deterministic_and_capped():
    from swafuzz.harness.pipeline.campaign import Campaign

    runs = []
    for _ in range(2):
        executed: list[str] = []
        found: list = []
        res = Campaign(_fake_runner(executed), seed=3, shrink_budget=30, known=_known(_A),
                       known_cap=4, on_known=lambda v, e, f=found: f.append((e, v.case))
                       ).run_kind("ring", 80)
        runs.append((executed, res, found))
    (ex1, r1, found), (ex2, _, _) = runs
    assert ex1 == ex2  # the same Cases in the same order: seeded rounds
    assert [e for e, _ in found] == ["a"] and found[0][1].pool.page_size == 1
    assert r1.known["a"] <= 4 and r1.rounds >= 2
    assert r1.finding is not None and r1.finding.signature() == "contracts/ring/b"
    assert r1.finding.case.pool.page_size >= 16  # shrunk without sliding into the known bug
    assert r1.generated <= 80


def test_a_ledger_that_knows_nothing_changes_nothing():
    """No entry matches: the search is the old one, Case for Case (and so is known=None)."""
    from swafuzz.harness.pipeline.campaign import Campaign

    seqs, results = [], []
    for known in (None, _known({**_A, "signature": "zzz/*"})):
        executed: list[str] = []
        res = Campaign(_fake_runner(executed), seed=5, shrink_budget=20, known=known
                       ).run_kind("ring", 80)
        seqs.append(executed)
        results.append((res.generated, res.shrunk, res.cases_to_first, res.finding.signature()))
    assert seqs[0] == seqs[1] and results[0] == results[1]
    assert results[0][3] == "invariants/ring/a" and results[0][2] == 1  # ends at the first


def test_budget_is_exact_across_rounds():
    """Both bugs known (the second without a region): the unit generates exactly its budget
    unless a cap stops it."""
    from swafuzz.harness.pipeline.campaign import Campaign

    b = {"id": "b", "target": "fake", "signature": "contracts/ring/b", "cite": CITE,
         "note": "n", "when": {"pool": {"page_size": {"min": 16}}}}
    executed: list[str] = []
    res = Campaign(_fake_runner(executed), seed=1, shrink_budget=20, known=_known(_A, b),
                   known_cap=1000).run_kind("ring", 150)
    assert res.finding is None and set(res.known_findings) == {"a", "b"}
    assert res.generated == 150 and res.rounds == 3
    assert len(executed) == res.generated + res.shrunk
