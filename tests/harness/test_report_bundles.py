"""``swafuzz report`` shows every bundle (issue 19 defect 7): a signature two ledger entries
know, with one bundle per entry (``write_targets/ring/dummy``: the DP-eager resolver fallback and
the draft-extend graph, as a campaign on sglang 0.5.23 writes them), lists both bundles in
summary.md, summary.html and junit.xml, each with its own Case size, every failing check, the
Case's steps and a repro line relative to the run directory (no absolute path, even where the
bundle's own ``command`` was written with one). The HTML legend has one colour per meaning, the
redzone colours among them, and every slot of the pool picture has a number and hover text.

Plain data from ``tests/data/bundles/sglang`` and two entries of the repository ledger; no
target runs (the pool picture re-runs the plain-Python oracle only)."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from swafuzz.harness.cli.commands import main
from swafuzz.harness.ledger.entries import DEFAULT_LEDGER
from swafuzz.reports import html as html_report

DATA = Path(__file__).resolve().parents[1] / "data" / "bundles" / "sglang"
SIG = "write_targets/ring/dummy"
DP, DX = "ring-a4-resolver-fallback-dp-eager", "ring-a4-draft-extend-graph"
NAME = {DP: f"write_targets_ring_dummy.known-{DP}.json",
        DX: f"write_targets_ring_dummy.known-{DX}.json"}


@pytest.fixture
def run(tmp_path):
    d = tmp_path / "run"
    (d / "findings").mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"target": "sglang", "commit": "abc",
                                            "versions": {"sglang": "0.5.23"}}))
    dp = json.loads((DATA / "ring_a4_dp_eager.json").read_text())
    dp["case"]["steps"].append(copy.deepcopy(dp["case"]["steps"][1]))  # 3 steps: the larger
    dp["shrunk"] = {"requests": 1, "steps": 3}
    dx = json.loads((DATA / "ring_a4_draft_extend_graph.json").read_text())
    rows = []
    for eid, b in ((DP, dp), (DX, dx)):
        b["ledger_entry"] = eid
        b["command"] = f"swafuzz repro /tmp/h4/elsewhere/findings/{NAME[eid]}"  # as written
        (d / "findings" / NAME[eid]).write_text(json.dumps(b))
        rows.append({"kind": "ring", "phase": "generate", "failed": True, "signature": SIG,
                     "case": b["case"], "known": eid})
    (d / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    entries = [e for e in json.loads(Path(DEFAULT_LEDGER).read_text())["entries"]
               if e["id"] in (DP, DX)]
    assert len(entries) == 2
    led = tmp_path / "ledger.json"
    led.write_text(json.dumps({"ledger_version": 1, "entries": entries}))
    return d, str(led)


def test_every_bundle_of_a_two_entry_signature_is_shown(run, capsys):
    d, led = run
    assert main(["report", str(d), "--ledger", led]) == 0, capsys.readouterr()
    capsys.readouterr()
    md = (d / "summary.md").read_text()
    page = (d / "summary.html").read_text()
    junit = (d / "junit.xml").read_text()
    for text in (md, page, junit):
        for eid in (DP, DX):
            assert f"swafuzz repro findings/{NAME[eid]}" in text, eid
            assert eid in text
        assert "/tmp/h4" not in text and str(d) not in text  # repro paths are relative
    # each bundle's row: its own Case, its entry, its repro line
    table = [ln for ln in md.splitlines() if ln.startswith("| known")]
    assert len(table) == 2, md
    row = {eid: next(ln for ln in table if NAME[eid] in ln) for eid in (DP, DX)}
    assert "1 req / 3 steps" in row[DP] and "1 req / 2 steps" in row[DX]
    assert f"ledger: {DP}" in row[DP] and f"ledger: {DX}" in row[DX]


def test_each_bundle_shows_every_failing_check_and_its_steps(run, capsys):
    d, led = run
    assert main(["report", str(d), "--ledger", led]) == 0
    capsys.readouterr()
    md = (d / "summary.md").read_text()
    page = (d / "summary.html").read_text()
    dp_part = md[md.index(f"### `{SIG}`: `findings/{NAME[DP]}`"):]
    dx_part = md[md.index(f"### `{SIG}`: `findings/{NAME[DX]}`"):]
    dp_part, dx_part = (dp_part, dx_part[:dx_part.index("\n### ", 1)]
                        if "\n### " in dx_part[1:] else dx_part)
    # the DP bundle fails write_targets and pool_bytes under both executors: 4 checks
    assert "failing checks (4)" in dp_part and dp_part.count("pool_bytes") >= 2
    assert "failing checks (3)" in dx_part and "agreement" in dx_part
    assert "2: dp_decode" in dp_part and "1: draft_extend" in dx_part
    assert 'accept=[1]' in dx_part and 'exec="graph"' in dx_part
    for eid in (DP, DX):
        assert f"findings/{NAME[eid]}" in page
    assert page.count("<h3 class=\"bundle\"") == 2
    assert page.count("failing checks (") == 2 and "after step 1: draft layer 0: eager and " \
        "tape differ" in page


def test_the_report_says_how_much_went_to_shrinking_known_findings(run, capsys):
    d, led = run
    with open(d / "cases.jsonl", "a") as f:
        f.write(json.dumps({"unit": "ring.0", "event": "unit_done", "kind": "ring",
                            "cases": 30, "shrunk": 12,
                            "shrunk_known": {DP: 7, DX: 5}}) + "\n")
    assert main(["report", str(d), "--ledger", led]) == 0
    capsys.readouterr()
    md = (d / "summary.md").read_text()
    assert "12 of them on ledger-known findings" in md, md
    assert f"{DP} 7" in md and f"{DX} 5" in md


def test_legend_colours_are_distinct_and_cover_every_colour_drawn():
    legend = [html_report.COLORS[k] for k, _ in html_report.LEGEND]
    assert len(set(legend)) == len(legend), legend
    drawn = set(html_report.COLORS) - {"expected"}  # the oracle strip's green is 'ok''s
    assert drawn <= {k for k, _ in html_report.LEGEND}
    assert html_report.COLORS["expected"] == html_report.COLORS["ok"]


def test_every_slot_has_a_number_and_hover_text(run, capsys):
    d, led = run
    assert main(["report", str(d), "--ledger", led]) == 0
    capsys.readouterr()
    page = (d / "summary.html").read_text()
    svgs = re.findall(r"<svg .*?</svg>", page, flags=re.S)
    assert svgs
    for s in svgs:
        root = ET.fromstring(s)
        ns = "{http://www.w3.org/2000/svg}"
        # every slot rect sits in a page group with a title naming its slots, or has its own
        for g in root.iter(f"{ns}g"):
            assert g.find(f"{ns}title") is not None
            assert re.match(r"pages? \d+(-\d+)?: slots \d+-\d+", g.find(f"{ns}title").text)
        slots = [r for g in root.iter(f"{ns}g") for r in g.findall(f"{ns}rect")]
        assert slots, s[:300]
        # slot numbers: the first slot of each drawn row is labelled
        labels = [t.text for t in root.iter(f"{ns}text")]
        assert labels and labels[0] == "0", labels


def test_a_signature_only_logged_shows_its_smallest_case_and_checks(tmp_path, capsys):
    """A failure met while shrinking another has no bundle: the report still shows its
    smallest logged Case (steps), its failing checks and that there is no bundle to replay."""
    d = tmp_path / "run"
    d.mkdir()
    dx = json.loads((DATA / "ring_a4_draft_extend_graph.json").read_text())
    row = {"kind": "ring", "phase": "shrink", "failed": True, "signature": SIG,
           "case": dx["case"], "verdict": {"failures": dx["failures"], "checks_run": 3,
                                           "seconds": 0.1, "observed": dx["observed"]}}
    (d / "cases.jsonl").write_text(json.dumps({"kind": "ring", "failed": False}) + "\n"
                                   + json.dumps(row) + "\n")
    assert main(["report", str(d), "--no-ledger"]) == 1
    capsys.readouterr()
    md = (d / "summary.md").read_text()
    assert "`case #2 of cases.jsonl`" in md and "- (no bundle)" in md
    assert "failing checks (3)" in md and "1: draft_extend accept=[1]" in md
    assert "DRAFT_EXTEND_V2" in md  # the message, from the logged verdict
    page = (d / "summary.html").read_text()
    assert "no bundle was written" in page and "actual (tape)" in page


def test_zoo_kill_matrix_repro_paths_become_relative(tmp_path, capsys):
    d = tmp_path / "zoo"
    (d / "findings").mkdir(parents=True)
    b = json.loads((DATA / "ring_a4_draft_extend_graph.json").read_text())
    (d / "findings" / "m_x.json").write_text(json.dumps({**b, "signature": "mutant:m:x"}))
    (d / "kill-matrix.md").write_text(
        "| mutant | verdict | repro |\n|---|---|---|\n"
        f"| m | killed | swafuzz repro {d}/findings/m_x.json |\n"
        "| n | killed | swafuzz repro /elsewhere/findings/gone.json |\n")
    assert main(["report", str(d), "--no-ledger"]) == 1
    capsys.readouterr()
    md = (d / "summary.md").read_text()
    assert "| m | killed | swafuzz repro findings/m_x.json |" in md and str(d) not in md
    assert "/elsewhere/findings/gone.json" in md  # no such bundle here: left as written
