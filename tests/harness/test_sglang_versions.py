"""The sglang release in every bundle and report (issue 9, item 2), and the exit-2 refusal of an
unsupported release on every command that runs the target. CPU gate: sglang is not needed (its
installed version is monkeypatched; nothing imports sglang)."""

from __future__ import annotations

import json
import sys

import pytest

from swafuzz.checks.base import Failure
from swafuzz.harness.cli.commands import main as cli_main
from swafuzz.harness.pipeline.execute import Verdict
from swafuzz.harness.report.inputs import write_run_meta
from swafuzz.reports.bundle import write_bundle
from swafuzz.scenarios.case import Case, PoolConfig, Step
from swafuzz.targets import sglang as sg

CASE = Case(pool=PoolConfig(page_size=2, full_pages=4, swa_pages=4),
            steps=(Step("admit", rid=0, length=3),))


@pytest.fixture
def installed(monkeypatch):
    """Set the installed sglang version seen by the target (None: not installed)."""
    monkeypatch.delenv(sg.ADAPTER_ENV, raising=False)

    def set_version(v):
        monkeypatch.setattr(sg, "installed_version", lambda: v)
    return set_version


DETECTED = {"0.5.12": {"family": "store-path", "found": {}, "check": "passed"},
            "0.5.13": {"family": "resolver", "found": {}, "check": "passed"},
            "0.5.23": {"family": "resolver", "found": {}, "check": "passed"}}


@pytest.mark.parametrize("version, forced, expect", [
    ("0.5.23", None, "0.5.23 (resolver family)"), ("0.5.12", None, "0.5.12 (store-path family)"),
    ("0.5.13", None, "0.5.13 (resolver family)"),  # not "adapter 0.5.12": its family
    ("0.5.13.post1", None, "0.5.13.post1 (resolver family)"),
    ("0.5.24", "0.5.23", "0.5.24 (adapter 0.5.23, resolver family)"),
    ("0.5.17", None, "0.5.17 (family not recorded)"),
    ("0.5.24", None, "0.5.24 (unsupported)"),
    (None, None, "not installed")])
def test_run_json_records_the_sglang_release(tmp_path, installed, monkeypatch, version, forced,
                                             expect):
    monkeypatch.setattr(sg, "DETECTED", DETECTED)
    installed(version)
    if forced:
        monkeypatch.setenv(sg.ADAPTER_ENV, forced)
    write_run_meta(str(tmp_path), {"target": "unified, sglang"})
    vers = json.loads((tmp_path / "run.json").read_text())["versions"]
    assert vers["sglang"] == expect
    write_run_meta(str(tmp_path), {"target": "unified"})
    assert "sglang" not in json.loads((tmp_path / "run.json").read_text())["versions"]


def test_bundle_carries_what_the_target_ran(tmp_path):
    v = Verdict(CASE, [Failure("write_targets", "boom", "decode")], 3, 0.1,
                target_version="sglang 0.5.17 (adapter 0.5.23)")
    back = Verdict.from_json(CASE, json.loads(json.dumps(v.to_json())))
    assert back.target_version == v.target_version  # survives the case worker's pipe
    path = write_bundle(str(tmp_path), back.finding("sglang", "torch", "eager"))
    b = json.loads(open(path).read())
    assert b["target_version"] == "sglang 0.5.17 (adapter 0.5.23)"
    assert "sglang" in b["versions"]  # the installed distribution (or "not installed")
    plain = Verdict(CASE, [Failure("write_targets", "boom", "decode")], 3, 0.1)
    assert "target_version" not in plain.to_json()
    assert "target_version" not in plain.finding("unified", "torch", "eager")


def test_report_shows_the_sglang_release(tmp_path, installed):
    from swafuzz.harness.report.read import build

    installed("0.5.23")
    write_run_meta(str(tmp_path), {"target": "sglang"})
    build(str(tmp_path))
    assert "sglang 0.5.23" in (tmp_path / "summary.md").read_text()
    assert "sglang 0.5.23" in (tmp_path / "summary.html").read_text()


@pytest.mark.parametrize("argv", [["run", "--target", "sglang", "--examples", "1"],
                                  ["repro"]])
def test_unsupported_release_exits_2_naming_the_range(tmp_path, capsys, installed, monkeypatch,
                                                      argv):
    installed("0.5.99")
    monkeypatch.delitem(sys.modules, "swafuzz.targets.sglang.engine", raising=False)
    if argv == ["repro"]:
        bundle = write_bundle(str(tmp_path / "b"), Verdict(
            CASE, [Failure("write_targets", "boom", "decode")], 1, 0.0).finding(
                "sglang", "torch", "eager"))
        argv = ["repro", bundle]
    else:
        argv = argv + ["--out", str(tmp_path / "out")]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert "sglang 0.5.99 is outside the supported range 0.5.12 .. 0.5.23" in err


@pytest.mark.parametrize("listed, version, match", [
    ("0.5.13", "0.5.13", True), ("0.5.13", "0.5.13.post1", True),  # a release names its posts
    ("0.5.13.post1", "0.5.13", False), ("0.5.13.post1", "0.5.13.post1", True),
    ("0.5.13", "0.5.14", False), ("0.5.13", "0.5.130", False),
    ("0.5.17", "0.5.17 (resolver family)", True),  # a recorded label names its release
    ("0.5.17", "0.5.17 (adapter 0.5.23)", True), ("0.5.23", "0.5.17 (adapter 0.5.23)", False)])
def test_ledger_matches_releases_not_strings(listed, version, match):
    from swafuzz.harness.ledger.entries import Entry, release_matches

    assert release_matches(listed, version) is match
    e = Entry("x", "sglang", "s/*", "c", "n", releases=(listed,))
    assert e.applies("sglang", version) is match


def test_ledger_when_release_range_holds_on_post_releases_and_labels():
    from swafuzz.harness.ledger.when import parse_when

    w = parse_when({"release": {"min": "0.5.13", "max": "0.5.22"}}, "w")
    assert w.holds(CASE, "0.5.22.post1") and w.holds(CASE, "0.5.13 (resolver family)")
    assert not w.holds(CASE, "0.5.23") and not w.holds(CASE, "0.5.12.post1")
