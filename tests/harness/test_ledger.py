"""The known-failure ledger (harness/ledger.py): parsing with field-naming errors, classifying a
run's findings into known / new, entries nothing matched, replaying an entry's repro bundle, and
the repository's own ledger file."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from swafuzz.harness import ledger
from swafuzz.harness.ledger import (
    DEFAULT_LEDGER,
    LedgerError,
    classify,
    load_ledger,
    parse_ledger,
    replay_entries,
)

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "bundles")


def _entry(**kw):
    e = {"id": "e1", "target": "sglang", "signature": "write_targets/decode/*",
         "cite": "https://github.com/sgl-project/sglang/pull/1", "note": "test entry"}
    e.update(kw)
    return e


def _ledger(*entries):
    return {"ledger_version": 1, "entries": list(entries)}


def test_repository_ledger_is_valid():
    for e in load_ledger(DEFAULT_LEDGER):
        assert e.cite.startswith("https://")


@pytest.mark.parametrize("obj,needle", [
    ([], "must be a JSON object"),
    ({"ledger_version": 2, "entries": []}, "'ledger_version' must be 1"),
    ({"ledger_version": 1, "entries": {}}, "'entries' must be a list"),
    (_ledger(_entry(cite="PR 1")), "entries[0]: field 'cite'"),
    (_ledger(_entry(signature="")), "entries[0]: field 'signature'"),
    (_ledger(_entry(releases="0.5.12")), "entries[0]: field 'releases'"),
    (_ledger(_entry(extra=1)), "entries[0]: unknown fields ['extra']"),
    (_ledger(_entry(), _entry()), "entries[1]: field 'id' 'e1' repeats"),
])
def test_malformed_ledger_names_the_field(obj, needle):
    with pytest.raises(LedgerError) as ei:
        parse_ledger(obj, "L")
    assert needle in str(ei.value)


def test_classify_known_new_unmatched():
    entries = parse_ledger(_ledger(
        _entry(id="dec", releases=["0.5.12"]),
        _entry(id="idle", signature="write_set/idle/live"),
        _entry(id="other", target="unified", signature="*")))
    findings = [
        {"target": "sglang", "signature": "write_targets/decode/live", "message": "m1"},
        {"target": "sglang", "signature": "pool_bytes/decode/live", "message": "m2"},
    ]
    c = classify(findings, entries, "sglang", "0.5.12")
    assert [(f["signature"], e.id) for f, e in c.known] == [("write_targets/decode/live", "dec")]
    assert [f["signature"] for f in c.new] == ["pool_bytes/decode/live"]
    assert [e.id for e in c.unmatched] == ["idle"]  # "other" is for another target
    # on another release the release-pinned entry does not apply
    c = classify(findings, entries, "sglang", "0.5.23")
    assert not c.known and len(c.new) == 2
    assert [e.id for e in c.unmatched] == ["idle"]


def test_main_exit_codes(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "findings").mkdir(parents=True)
    (run / "findings" / "a.json").write_text(json.dumps(
        {"target": "sglang", "signature": "write_targets/decode/live", "message": "m"}))
    led = tmp_path / "l.json"
    led.write_text(json.dumps(_ledger(_entry())))
    assert ledger.main([str(run), "--ledger", str(led)]) == 0
    assert "KNOWN write_targets/decode/live: ledger entry e1" in capsys.readouterr().out
    led.write_text(json.dumps(_ledger(_entry(signature="pool_bytes/*"))))
    assert ledger.main([str(run), "--ledger", str(led)]) == 1
    out = capsys.readouterr().out
    assert "NEW   write_targets/decode/live" in out and "UNSEEN ledger entry e1" in out
    led.write_text("{")
    assert ledger.main([str(run), "--ledger", str(led)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert ledger.main([str(tmp_path / "nope"), "--ledger", str(led)]) == 2


def test_replay_reports_entries_that_no_longer_reproduce(tmp_path):
    """The draft_extend_zeros bundle still fails on its mutant and does not fail on unified:
    an entry citing it for ``unified`` is reported as no longer reproducing."""
    (tmp_path / "ledger").mkdir()
    shutil.copy(os.path.join(DATA, "draft_extend_zeros.json"), tmp_path / "ledger" / "r.json")
    entries = parse_ledger(_ledger(
        _entry(id="mut", target="mutant:draft_extend_zeros", signature="write_targets/*",
               repro="ledger/r.json"),
        _entry(id="fixed", target="unified", signature="*", repro="ledger/r.json")))
    assert replay_entries(entries, "mutant:draft_extend_zeros", None, str(tmp_path),
                          executor="tape") == {"mut": True}
    assert replay_entries(entries, "unified", None, str(tmp_path), executor="auto") == {
        "fixed": False}
