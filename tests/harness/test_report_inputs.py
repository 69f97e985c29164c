"""harness.report.read on its own inputs, in-process: pool pictures from bundles without an observed
side (older bundles, crashes) and from unrunnable Cases, the observed side of a real failing
verdict, and a case log torn by a kill."""

import json
import os

import pytest

from swafuzz.harness.pipeline.execute import execute
from swafuzz.harness.report.findings import pool_picture
from swafuzz.harness.report.inputs import ReportInputError, read_log
from swafuzz.reports.html import render_picture
from swafuzz.scenarios.case import Case

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                    "bundles")


def _bundle(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def test_picture_without_observed_side_draws_the_oracle_only():
    b = _bundle("pad_rows_not_zeroed.json")
    pic, why = pool_picture(b["case"], None)
    assert why == "" and "expected pool only" in pic["note"]
    layer = pic["pools"]["target"][0]
    assert layer["expected"] and layer["observed"] == []
    html = render_picture(pic)
    assert "expected (oracle)" in html and "actual" not in html


def test_picture_of_an_unrunnable_case_says_why():
    case = _bundle("pad_rows_not_zeroed.json")["case"]
    case = dict(case, steps=[{"op": "decode", "rids": [7], "exec": "eager"}])
    pic, why = pool_picture(case, None)
    assert pic is None and "does not run on the oracle" in why


def test_observed_side_of_a_failing_verdict_marks_the_negative_write():
    b = _bundle("negative_loc_wraps.json")
    v = execute(Case.from_json(b["case"]), b["target"], "torch", ["eager", "tape"])
    assert v.failed and v.observed and {"eager", "tape"} <= {o["executor"] for o in v.observed}
    assert json.loads(json.dumps(v.observed)) == v.observed  # plain data for the bundle
    written = [x for o in v.observed for x in o["pools"]["target"][0]["written"]]
    assert any(x < 0 for x in written)
    pic, _ = pool_picture(b["case"], v.observed)
    assert "locations outside" in render_picture(pic)


def test_passing_verdict_carries_no_observed_side():
    b = _bundle("pad_rows_not_zeroed.json")
    v = execute(Case.from_json(b["case"]), "unified", "torch", ["eager"])
    assert not v.failed and v.observed is None


def test_torn_last_line_of_the_case_log_is_skipped(tmp_path):
    p = tmp_path / "cases.jsonl"
    p.write_text('{"kind": "idle", "failed": false}\n{"kind": "idle", "fai')
    assert read_log(str(p)) == [{"kind": "idle", "failed": False}]
    p.write_text('{"kind": "idle", "fai\n{"kind": "idle", "failed": false}\n')
    with pytest.raises(ReportInputError, match="line 1"):
        read_log(str(p))
