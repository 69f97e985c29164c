"""Plugins alike (issue 27 item 8): the ledger and the bundles ask a target's ``release`` hook,
never its name. Target ``acme:sglang`` (``tests/data/wrap_plugin``) wraps the built-in ``sglang``
target under another name: the repository ledger's ``sglang`` entries classify its findings (a
component bundle through ``classify``, a server bundle through ``server_known``, the campaign's
``KnownLedger``) and a bundle written for it records the SGLang version its hooks answer. Needs no
SGLang: the hooks read metadata only (``version`` None where SGLang is not installed)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from swafuzz import targets
from swafuzz.checks.base import Failure
from swafuzz.features.validation import load_case
from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, classify, load_ledger
from swafuzz.harness.ledger.known import KnownLedger, server_known, target_release
from swafuzz.harness.pipeline.execute import Verdict
from swafuzz.reports.bundle import write_bundle
from swafuzz.server.case import parse as parse_server_case

DATA = Path(__file__).resolve().parents[1] / "data"
WRAP = "acme:sglang"


@pytest.fixture(scope="module", autouse=True)
def wrap_plugin():
    sys.path.insert(0, str(DATA / "wrap_plugin"))
    try:
        importlib.import_module("swafuzz_wrap_fixture")
        yield
    finally:
        sys.path.remove(str(DATA / "wrap_plugin"))
        targets.TARGETS.pop(WRAP, None)
        targets.ORIGINS.pop(WRAP, None)


def _bundle(name: str) -> dict:
    return json.loads((DATA / "bundles" / "sglang" / name).read_text())


def test_release_hook_names_the_wrapped_project():
    got = targets.release(WRAP)
    assert got == {"project": "sglang", "version": targets.release("sglang")["version"]}
    assert target_release(WRAP) == targets.version("sglang")
    # a target without the hook stands for itself
    assert targets.release("unified") == {"project": "unified", "version": None}


def test_ledger_classifies_a_wrapped_targets_component_finding():
    entries = load_ledger(DEFAULT_LEDGER)
    finding = {**_bundle("ring_p1_alloc_writes_mapping.json"), "target": WRAP}
    c = classify([finding], entries, WRAP, "0.5.23")
    assert [e.id for _, e in c.known] == ["ring-p1-alloc-writes-mapping"]
    assert not c.new
    # the same finding on a target that drives something else stays new
    c = classify([{**finding, "target": "unified"}], entries, "unified", "0.5.23")
    assert [f["signature"] for f in c.new] == [finding["signature"]]


def test_ledger_knows_a_wrapped_targets_server_finding():
    entries = load_ledger(DEFAULT_LEDGER)
    b = _bundle("server_window_dp_extend_pad_joins_run.json")
    case = parse_server_case(b["case"])
    assert server_known(entries, WRAP, "0.5.23", case.config.server_args(),
                        b["signature"]) == "window-dp-extend-pad-joins-run"
    known = KnownLedger(entries, WRAP, "0.5.23", ["eager"])
    assert "window-dp-extend-pad-joins-run" in {e.id for e in known.entries}
    assert not KnownLedger(entries, "unified", None, ["eager"]).entries


def test_bundle_records_the_version_the_hooks_answer(tmp_path):
    case = load_case(_bundle("ring_p1_alloc_writes_mapping.json")["case"])
    v = Verdict(case, [Failure("invariants", "planted", "allocation")], 1, 0.0)
    path = write_bundle(str(tmp_path), v.finding(WRAP, "torch", "eager"))
    b = json.loads(Path(path).read_text())
    assert b["target"] == WRAP
    assert b["versions"]["sglang"] == targets.versions("sglang")["sglang"]
    assert b["release"] == {"project": "sglang", "version": targets.version("sglang")}
    entries = load_ledger(DEFAULT_LEDGER)
    c = classify([b], entries, WRAP, "0.5.23")
    assert [e.id for _, e in c.known] == ["ring-p1-alloc-writes-mapping"]
