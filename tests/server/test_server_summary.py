"""summary.md / junit.xml of a server-level run directory, from a hand-made run.json and bundle
(no SGLang: the renderer reads files only)."""

import json
import xml.etree.ElementTree as ET

from swafuzz.reports.junit import write_server_reports

RUN = {"level": "server", "target": "sglang", "versions": {"sglang": "0.5.23"}, "seed": 0,
       "executors": ["eager"], "server_mutant": None, "cases": 7, "seconds": 1.5,
       "kinds": {"server_decode": {"cases": 4, "seconds": 1.0, "stopped_out_of_scope": 0,
                                   "finding": "server:write_targets"},
                 "server_mixed": {"cases": 3, "seconds": 0.5, "stopped_out_of_scope": 1,
                                  "finding": None}},
       "findings": ["findings/server-write_targets.server_decode.json"]}
BUNDLE = {"signature": "server:write_targets", "level": "server",
          "case": {"config": {"page_size": 1}, "requests": [{"prompt_len": 1}]},
          "failures": [{"check": "write_targets", "message": "row 0 stored at 5, expected 3"},
                       {"check": "pool_bytes", "message": "slot 5 differs"}]}


def _run_dir(tmp_path, run, bundle=None):
    (tmp_path / "findings").mkdir()
    (tmp_path / "run.json").write_text(json.dumps(run))
    if bundle is not None:
        (tmp_path / run["findings"][0]).write_text(json.dumps(bundle))
    write_server_reports(str(tmp_path))
    return (tmp_path / "summary.md").read_text(), ET.parse(tmp_path / "junit.xml").getroot()


def test_a_finding_shows_every_check_and_a_relative_repro(tmp_path):
    md, suite = _run_dir(tmp_path, RUN, BUNDLE)
    rel = RUN["findings"][0]
    assert f"swafuzz repro {rel}" in md and str(tmp_path) not in md
    assert "write_targets: row 0 stored at 5" in md and "pool_bytes: slot 5 differs" in md
    assert "| server_mixed | 3 | 0.5 | 1 | - |" in md
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    [fail] = suite.iter("failure")
    assert fail.get("message").startswith("write_targets:") and rel in fail.text


def test_a_clean_run_passes(tmp_path):
    md, suite = _run_dir(tmp_path, dict(RUN, findings=[]))
    assert "No findings." in md
    assert suite.get("failures") == "0" and not list(suite.iter("failure"))
    assert {tc.get("name") for tc in suite.iter("testcase")} == {"campaign.server_decode",
                                                                 "campaign.server_mixed"}


def test_known_entries_are_shown_apart_from_new_findings(tmp_path):
    """A run whose failures the ledger knows: summary.md and junit.xml name the entry, as
    known, and fail nothing (run.json's ``known``, written by the server level's report, harness/pipeline/level_server.py)."""
    rel = "findings/server-window_ring.server_window.known-window-dp-extend-pad-joins-run.json"
    run = dict(RUN, findings=[], known={"window-dp-extend-pad-joins-run": {
        "signature": "server:window_ring", "cases": 4, "shrunk": 20, "bundle": rel,
        "units": ["server_window.0"]}})
    md, suite = _run_dir(tmp_path, run)
    assert "0 new finding(s), 1 known ledger entr(y/ies)" in md and "No new findings." in md
    assert f"| window-dp-extend-pad-joins-run | server:window_ring | 4 | {rel} |" in md
    assert suite.get("tests") == "3" and suite.get("failures") == "0"
    [tc] = [t for t in suite.iter("testcase") if t.get("classname") == "swafuzz.server.known"]
    assert tc.get("name") == "known.window-dp-extend-pad-joins-run"
    assert "known: ledger entry window-dp-extend-pad-joins-run" in tc.find("system-out").text
    (tmp_path / "both").mkdir()
    md, suite = _run_dir(tmp_path / "both", dict(run, findings=RUN["findings"]), BUNDLE)
    assert "## new: server:write_targets" in md and "## known (ledger entries" in md
    assert suite.get("failures") == "1"
