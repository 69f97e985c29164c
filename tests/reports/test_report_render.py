"""Reports from plain data: deduplication by signature, junit.xml that parses, a summary.md
that stays under its size limit, and a self-contained summary.html."""

import xml.etree.ElementTree as ET

from swafuzz.reports import dedup
from swafuzz.reports.html import render as render_html
from swafuzz.reports.html import render_picture
from swafuzz.reports.junit import render as render_junit
from swafuzz.reports.summary import report_markdown


def _case(steps):
    return {"pool": {"page_size": 1}, "steps": [{"op": "admit", "rid": i, "length": 1}
                                                for i in range(steps)]}


def test_group_counts_first_last_and_smallest_case():
    rows = [
        {"kind": "decode", "failed": False, "signature": ""},
        {"kind": "decode", "failed": True, "signature": "a/decode/live", "case": _case(5), "t": 10},
        {"kind": "idle", "failed": True, "signature": "b/idle/dummy", "case": _case(3), "t": 11},
        {"kind": "decode", "failed": True, "signature": "a/decode/live", "case": _case(2), "t": 12},
        {"kind": "decode", "failed": True, "signature": "a/decode/live", "case": _case(4), "t": 13},
    ]
    bundles = [("findings/a.json", {"signature": "a/decode/live", "message": "m",
                                    "case": _case(3)})]
    groups = dedup.group(rows, bundles)
    assert [g.signature for g in groups] == ["a/decode/live", "b/idle/dummy"]
    a = groups[0]
    assert (a.count, a.first_seen, a.last_seen, a.first_time, a.last_time) == (3, 2, 5, 10, 13)
    assert len(a.case["steps"]) == 2  # the smallest of the log rows and the bundle
    assert a.bundle_path == "findings/a.json" and a.message == "m"
    assert a.to_json()["shrunk"] == {"steps": 2, "requests": 2}


def test_classify_new_known_fixed():
    assert dedup.classify(["a", "b"], None) == {"new": ["a", "b"], "known": [], "fixed": []}
    assert dedup.classify(["a", "b"], ["b", "c"]) == {"new": ["a"], "known": ["b"],
                                                      "fixed": ["c"]}


def _finding(i, status="new"):
    return {"signature": f"write_targets/decode/live{i}", "status": status,
            "message": "step 1 fwd 0: <row> & \x01 " + "x" * 400, "count": 3, "first_seen": 1,
            "last_seen": 9, "reliability": "2/2 reruns failed",
            "shrunk": {"steps": 2, "requests": 1}, "repro": f"swafuzz repro f{i}.json",
            "picture": None, "why": "test"}


INFO = {"commit": "abc", "versions": "torch 2", "device": "cpu", "target": "unified",
        "budget": "10 cases"}


def test_junit_parses_and_names_are_signatures():
    findings = [_finding(0), _finding(1, "known")]
    status = {"new": [findings[0]["signature"]], "known": [findings[1]["signature"]],
              "fixed": ["redzones/idle/outside"]}
    text = render_junit([["decode", 10, 3, 2, 150]], findings, status, INFO)
    root = ET.fromstring(text.split("\n", 1)[1])
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert names == ["campaign.decode", "finding.write_targets/decode/live0",
                     "finding.write_targets/decode/live1", "finding.redzones/idle/outside"]
    assert root.get("tests") == "4" and root.get("failures") == "2"
    types = [f.get("type") for f in root.iter("failure")]
    assert types == ["new", "known"]
    # the same input gives the same bytes (stable from night to night)
    assert text == render_junit([["decode", 10, 3, 2, 150]], findings, status, INFO)


def test_summary_md_stays_under_the_limit():
    findings = [_finding(i) for i in range(3000)]
    status = dedup.classify([f["signature"] for f in findings], None)
    md = report_markdown(INFO, [["decode", 1, 0, 1, 1]], findings, status, "| km |", limit=64 * 1024)
    assert len(md.encode()) <= 64 * 1024
    assert "more findings left out" in md and "## Kill matrix" in md and "commit: `abc`" in md
    small = report_markdown(INFO, [], [], dedup.classify([], None))
    assert "No findings." in small and "0 new" in small.replace("**", "")


def test_html_is_self_contained_and_draws_the_pool():
    pic = {"page_size": 2, "swa_slots": 8, "note": "n", "pools": {"target": [{
        "expected": [2, 3, 4], "dummy_expected": True,
        "observed": [{"executor": "tape", "written": [-1, 0, 2, 3, 6], "changed": [0, 2, 3, 6],
                      "differs": [3], "redzones": {"before": 2, "after": 0}}]}]}}
    part = render_picture(pic)
    # slot 4 expected but not written, slot 6 written but not expected, slot 3 wrong bytes
    assert "slot 4 (page 2): missing" in part and "slot 6 (page 3): stray" in part
    assert "slot 3 (page 1): wrong" in part and "slot 2 (page 1): ok" in part
    assert "1 missing, 1 stray, 1 wrong" in part and "redzones: before 2 B" in part
    f = dict(_finding(0), picture=pic)
    page = render_html("t", [("commit", "abc")], [["decode", 1, 0, 1, 1]], [f], "| km |")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    low = page.lower()
    assert "<script" not in low and "<link" not in low and "src=" not in low
    assert "http://" not in low.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "&lt;row&gt; &amp;" in page  # escaped


def test_tables_print_a_dash_not_none():
    from swafuzz.reports.summary import kill_matrix

    t = kill_matrix({"control": {"clean": True, "cases": 3, "seconds": 1.0, "check": None},
                     "mutants": [{"name": "m", "killed": False, "cases_to_kill": None,
                                  "kills": "0/2", "seconds": 1.0, "check": None,
                                  "shrunk": None, "repro": None}]})
    assert "None" not in t and "SURVIVED  -" in t
