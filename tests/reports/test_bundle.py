"""Bundles are written atomically, named by signature, and read back with clear errors."""

import json
import os

import pytest

from swafuzz.reports.bundle import read_bundle, signature_filename, write_bundle
from swafuzz.reports.summary import campaign_table


def test_write_and_read(tmp_path):
    path = write_bundle(str(tmp_path), {"signature": "write_targets/decode/dummy",
                                        "case": {"steps": []}})
    assert os.path.basename(path) == "write_targets_decode_dummy.json"
    b = read_bundle(path)
    # relative to the run directory: still true when the directory is copied as an artefact
    assert b["command"] == "swafuzz repro findings/write_targets_decode_dummy.json"
    assert "python" in b["versions"]
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".tmp-")]


def test_read_errors(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("[1]")
    with pytest.raises(ValueError, match="JSON object"):
        read_bundle(str(p))
    p.write_text(json.dumps({"signature": "s"}))
    with pytest.raises(ValueError, match="'case' is required"):
        read_bundle(str(p))
    with pytest.raises(ValueError, match="cannot read"):
        read_bundle(str(tmp_path / "missing.json"))


def test_signature_filename():
    assert signature_filename("mutant:a/b c") == "mutant_a_b_c"


def test_campaign_table_totals():
    t = campaign_table({"decode": {"cases": 3, "checks": 21, "findings": 0, "seconds": 1.0},
                        "idle": {"cases": 2, "checks": 14, "findings": 1, "seconds": 0.5}})
    assert "total" in t and " 5 " in t
    t = campaign_table({"decode": {"cases": 9, "generated": 4, "checks": 21, "findings": 1,
                                   "seconds": 1.0}})
    assert "generated" in t and "shrinking" in t
    total = [ln for ln in t.splitlines() if ln.startswith("total")][0].split()
    assert total[:4] == ["total", "9", "4", "5"]
