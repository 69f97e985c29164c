"""``swafuzz report DIR`` consults the known-failure ledger: a finding group is known when every
failing Case of it (bundle and log rows) matches an entry's signature AND ``when`` predicate
(summary.md ``known (ledger: ID)``, junit ``<skipped>`` with the entry id, exit 0); a Case of the
same signature outside the predicate keeps it new (a ``<failure>``, exit 1); a malformed ledger
exits 2 naming the JSON path; an entry without ``when`` is warned about."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from swafuzz.harness.cli.commands import main

SIG = "write_targets/dp_padded/dummy"
POOL = {"page_size": 4, "full_pages": 4, "swa_pages": 4, "window": 2, "layers": 1,
        "draft_layers": 1, "row_width": 1, "row_dtype": "uint8"}


def _case(exec_):
    return {"version": 1, "kind": "dp_padded", "pool": POOL,
            "steps": [{"op": "admit", "rid": 0, "length": 1},
                      {"op": "dp_decode", "rids": [0], "rank_tokens": [2], "exec": exec_}]}


WHEN = {"steps": [{"op": ["dp_decode", "verify", "draft_extend"],
                   "rank_tokens": {"present": True}, "exec": "eager"}]}


def _ledger(path, **entry):
    e = {"id": "dp-eager", "target": "sglang", "signature": "write_targets/*/dummy",
         "cite": "https://github.com/sgl-project/sglang/pull/1", "note": "test entry"}
    e.update(entry)
    path.write_text(json.dumps({"ledger_version": 1, "entries": [e]}))
    return str(path)


@pytest.fixture
def run(tmp_path):
    d = tmp_path / "run"
    (d / "findings").mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"target": "sglang",
                                            "versions": {"sglang": "0.5.23"}}))
    (d / "findings" / "a.json").write_text(json.dumps(
        {"bundle_version": 1, "signature": SIG, "target": "sglang", "message": "row 0 to dummy",
         "command": "swafuzz repro a.json", "case": _case("eager"),
         "versions": {"sglang": "0.5.23"}}))
    (d / "cases.jsonl").write_text(json.dumps(
        {"kind": "dp_padded", "failed": True, "signature": SIG, "case": _case("eager")}) + "\n")
    return d


def test_known_by_ledger_is_skipped_and_green(run, tmp_path, capsys):
    led = _ledger(tmp_path / "l.json", when=WHEN)
    assert main(["report", str(run), "--ledger", led]) == 0
    out = capsys.readouterr()
    assert f"known {SIG} (ledger: dp-eager)" in out.out and "warning" not in out.err
    md = (run / "summary.md").read_text()
    assert "| known (ledger: dp-eager)" in md and "1 finding signatures known by it" in md
    root = ET.parse(run / "junit.xml").getroot()
    assert root.get("failures") == "0" and root.get("skipped") == "1"
    tc = next(t for t in root.iter("testcase") if t.get("name") == f"finding.{SIG}")
    assert tc.find("failure") is None
    assert tc.find("skipped").get("message") == (
        "known: ledger entry dp-eager (https://github.com/sgl-project/sglang/pull/1)")
    assert [p.get("value") for p in tc.iter("property")] == ["dp-eager"]
    # --no-ledger: the same run is a new finding again
    assert main(["report", str(run), "--no-ledger"]) == 1
    assert "NEW   " + SIG in capsys.readouterr().out


def test_case_outside_the_predicate_is_new_and_red(run, tmp_path, capsys):
    """A second failing Case with the same signature but a graph step (outside ``when``) turns
    the group new, although the bundle's own Case matches the entry."""
    with open(run / "cases.jsonl", "a") as f:
        f.write(json.dumps({"kind": "dp_padded", "failed": True, "signature": SIG,
                            "case": _case("graph")}) + "\n")
    led = _ledger(tmp_path / "l.json", when=WHEN)
    assert main(["report", str(run), "--ledger", led]) == 1
    assert "NEW   " + SIG in capsys.readouterr().out
    md = (run / "summary.md").read_text()
    assert "| new (1 of 2 failing Cases match no ledger entry" in md
    root = ET.parse(run / "junit.xml").getroot()
    assert root.get("failures") == "1" and root.get("skipped") == "0"
    fail = next(root.iter("failure"))
    assert fail.get("type") == "new" and "1 of 2 failing Cases match no ledger" in fail.text


def test_release_constraint_uses_the_recorded_version(run, tmp_path, capsys):
    led = _ledger(tmp_path / "l.json", when={**WHEN, "release": {"max": "0.5.12"}})
    assert main(["report", str(run), "--ledger", led]) == 1  # the run recorded 0.5.23
    assert main(["report", str(run), "--ledger", led, "--release", "0.5.12"]) == 0
    capsys.readouterr()


def test_malformed_ledger_exits_2_naming_the_path(run, tmp_path, capsys):
    led = _ledger(tmp_path / "l.json", when={"pool": {"swa_rng": 1}})
    assert main(["report", str(run), "--ledger", led]) == 2
    err = capsys.readouterr().err
    assert "--ledger:" in err and "entries[0].when.pool.swa_rng: unknown field; allowed:" in err
    assert not (run / "summary.md").exists()  # nothing half-written


def test_entry_without_predicate_is_warned(run, tmp_path, capsys):
    led = _ledger(tmp_path / "l.json")
    assert main(["report", str(run), "--ledger", led]) == 0
    err = capsys.readouterr().err
    assert "ledger: warning: entry dp-eager: no 'when' predicate" in err
    assert "## Ledger warnings" in (run / "summary.md").read_text()


def test_every_bundle_of_a_signature_is_checked(run, tmp_path, capsys):
    """Two bundles with one signature (two triggers): the report groups them, and the group is
    known only if both Cases match; the graph one is outside the predicate."""
    b = json.loads((run / "findings" / "a.json").read_text())
    (run / "findings" / "b.json").write_text(json.dumps({**b, "case": _case("graph")}))
    led = _ledger(tmp_path / "l.json", when=WHEN)
    assert main(["report", str(run), "--ledger", led]) == 1
    assert "NEW   " + SIG in capsys.readouterr().out
    graph_entry = {"id": "dp-graph", "target": "sglang", "signature": SIG,
                   "cite": "https://github.com/sgl-project/sglang/pull/2", "note": "second",
                   "when": {"steps": [{"op": "dp_decode", "exec": "graph"}]}}
    obj = json.loads((tmp_path / "l.json").read_text())
    obj["entries"].append(graph_entry)
    (tmp_path / "l.json").write_text(json.dumps(obj))
    assert main(["report", str(run), "--ledger", led]) == 0
    assert f"known {SIG} (ledger: dp-eager, dp-graph)" in capsys.readouterr().out
    root = ET.parse(run / "junit.xml").getroot()
    assert [p.get("value") for p in root.iter("property") if p.get("name") == "ledger_entry"
            ] == ["dp-eager", "dp-graph"]


def test_known_finding_shows_the_entry_server_answer(run, tmp_path, capsys):
    """An entry's server-level answer (its ``server`` field) is shown with the entry."""
    server = {"status": "unreachable", "guard": "pkg.mod.fn: a rule",
              "test": "tests/targets/test_x.py::test_y"}
    led = _ledger(tmp_path / "l.json", when=WHEN, server=server)
    assert main(["report", str(run), "--ledger", led]) == 0
    capsys.readouterr()
    md = (run / "summary.md").read_text()
    assert "| known (ledger: dp-eager; server: unreachable (guard pkg.mod.fn: a rule))" in md
