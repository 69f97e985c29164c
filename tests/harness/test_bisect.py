"""``swafuzz bisect``'s logic with a fake per-release runner (no SGLang, no environments): the
release list, first bad / last bad / fixed-in, releases that cannot be driven reported, the
CLI's exit codes and usage errors."""

from __future__ import annotations

import json
import os

import pytest

from swafuzz.harness.cli.commands import main as cli_main
from swafuzz.harness.cli.common import UsageError
from swafuzz.harness.ledger import bisect as b

KNOWN = tuple(f"0.5.{p}" for p in range(12, 24))


def fake(states: dict[str, str]):
    seen = []

    def run(v):
        seen.append(v)
        st = states.get(v, b.GOOD)
        return b.Outcome(v, st, "why" if st == b.CANNOT else "")
    run.seen = seen
    return run


def test_release_lists():
    assert b.parse_releases(None, KNOWN) == list(KNOWN)
    assert b.parse_releases("0.5.20..0.5.23", KNOWN) == ["0.5.20", "0.5.21", "0.5.22", "0.5.23"]
    assert b.parse_releases("0.5.13..0.5.13.post1", KNOWN) == ["0.5.13", "0.5.13.post1"]
    assert b.parse_releases("0.5.15.post1,0.5.14", KNOWN) == ["0.5.15.post1", "0.5.14"]
    for bad, msg in (("0.5.2x..0.5.23", "not a release"), ("0.5.23..0.5.12", "is empty"),
                     ("0.5.24", "outside the target's releases 0.5.12 .. 0.5.23"),
                     ("0.5.11..0.5.13", "outside"), (",", "releases X.Y.Z")):
        with pytest.raises(UsageError, match=msg):
            b.parse_releases(bad, KNOWN)


def test_first_last_fixed_and_cannot_drive():
    run = fake({"0.5.21": b.BAD, "0.5.22": b.BAD, "0.5.15": b.CANNOT})
    out = b.bisect(["0.5.23", "0.5.12", "0.5.15", "0.5.21", "0.5.22"], run)
    assert [o.release for o in out] == ["0.5.12", "0.5.15", "0.5.21", "0.5.22", "0.5.23"]
    s = b.summary(out)
    assert (s["first_bad"], s["last_bad"], s["fixed_in"]) == ("0.5.21", "0.5.22", "0.5.23")
    assert s["contiguous"] and not s["never_bad"]
    assert s["cannot_drive"] == {"0.5.15": "why"}  # reported, not skipped silently
    text = b.render(out, s)
    assert "first bad: 0.5.21; last bad: 0.5.22; fixed in: 0.5.23" in text
    assert "cannot drive: 0.5.15" in text and "0.5.15         cannot-drive  why" in text


def test_still_bad_at_the_newest_and_gaps():
    s = b.summary(b.bisect(list(KNOWN), fake({"0.5.20": b.BAD, "0.5.23": b.BAD})))
    assert (s["first_bad"], s["last_bad"], s["fixed_in"]) == ("0.5.20", "0.5.23", None)
    assert not s["contiguous"]
    s = b.summary(b.bisect(list(KNOWN), fake({})))
    assert s["never_bad"] and s["first_bad"] is None and s["fixed_in"] is None
    # a cannot-drive release after the last bad one is not "fixed in"
    s = b.summary(b.bisect(["0.5.21", "0.5.22", "0.5.23"],
                           fake({"0.5.21": b.BAD, "0.5.22": b.CANNOT})))
    assert s["fixed_in"] == "0.5.23"


BUNDLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                      "bundles", "sglang", "short_tail_floor.json")  # a late_tail Case: 0.5.21+


def test_cli_exit_codes_and_json(tmp_path, capsys, monkeypatch):
    bundle = BUNDLE
    out = tmp_path / "o.json"
    monkeypatch.setattr(b, "env_runner", lambda *a, **k: fake({"0.5.22": b.BAD}))
    assert cli_main(["bisect", str(bundle), "--releases", "0.5.21..0.5.23",
                     "--json", str(out)]) == 1
    assert "fixed in: 0.5.23" in capsys.readouterr().out
    rec = json.loads(out.read_text())
    assert rec["first_bad"] == "0.5.22" and len(rec["outcomes"]) == 3
    monkeypatch.setattr(b, "env_runner", lambda *a, **k: fake({}))
    assert cli_main(["bisect", str(bundle), "--releases", "0.5.23"]) == 0
    assert cli_main(["bisect", str(tmp_path / "none.json")]) == 2
    assert "FILE: cannot read" in capsys.readouterr().err  # decided before torch loads
    assert cli_main(["bisect", str(bundle), "--releases", "0.5.30"]) == 2
    assert cli_main(["bisect", str(bundle), "--target", "nope"]) == 2
    (tmp_path / "x.json").write_text("{}")
    assert cli_main(["bisect", str(tmp_path / "x.json")]) == 2
    capsys.readouterr()
    # where the records refuse the Case, no environment is asked: cannot drive, with the reason
    asked = fake({})
    monkeypatch.setattr(b, "env_runner", lambda *a, **k: asked)
    assert cli_main(["bisect", str(bundle), "--releases", "0.5.19..0.5.21"]) == 0
    text = capsys.readouterr().out
    assert asked.seen == ["0.5.21"]
    assert "0.5.19         cannot-drive  records: scenario kind late_tail" in text
    assert "cannot drive: 0.5.19, 0.5.20" in text


def test_ledger_table_says_where_the_ledger_disagrees(tmp_path):
    ledger = tmp_path / "l.json"
    ledger.write_text(json.dumps({"ledger_version": 1, "entries": [
        {"id": "a", "releases": ["0.5.21", "0.5.22"]}, {"id": "b", "releases": ["0.5.23"]},
        {"id": "c", "releases": ["0.5.23"]}]}))
    for eid, states in (("a", {"0.5.21": b.BAD, "0.5.22": b.BAD}),
                        ("b", {"0.5.22": b.BAD, "0.5.23": b.BAD, "0.5.15": b.CANNOT})):
        out = b.bisect(["0.5.15", "0.5.21", "0.5.22", "0.5.23"], fake(states))
        (tmp_path / f"{eid}.json").write_text(json.dumps(
            {"outcomes": [vars(o) for o in out], **b.summary(out)}))
    text, disagree = b.ledger_table(str(tmp_path), str(ledger))
    assert disagree == 1  # b also fails on 0.5.22; c was not bisected (no row)
    assert "| a | 0.5.21, 0.5.22 | 0.5.21, 0.5.22 | 0.5.21 | 0.5.22 | 0.5.23 | 0.5.15 | yes |" \
        not in text  # 0.5.15 could be driven for a
    assert "| a | 0.5.21, 0.5.22 | 0.5.21, 0.5.22 | 0.5.21 | 0.5.22 | 0.5.23 | - | yes |" in text
    assert "| b | 0.5.23 | 0.5.22, 0.5.23 | 0.5.22 | 0.5.23 | - | 0.5.15 | NO |" in text
    assert "| c |" not in text
    assert b.main([str(tmp_path), str(ledger)]) == 1
    assert b.main([str(tmp_path / "none")]) == 2


SERVER_BUNDLE = os.path.join(os.path.dirname(__file__), "..", "data", "bundles", "sglang",
                             "server_short_tail_floor.json")


def test_server_level_bundle_asks_every_release(tmp_path, capsys, monkeypatch):
    """A server-level bundle (``"level": "server"``) has no records to ask first: every release's
    own ``repro`` answers (exit 2 there is "cannot drive"); a bad server Case is exit 2 naming
    the field, before any environment."""
    asked = fake({"0.5.21": b.BAD, "0.5.22": b.BAD, "0.5.20": b.CANNOT})
    monkeypatch.setattr(b, "env_runner", lambda *a, **k: asked)
    assert cli_main(["bisect", SERVER_BUNDLE, "--releases", "0.5.19..0.5.23"]) == 1
    text = capsys.readouterr().out
    assert asked.seen == ["0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]
    assert "first bad: 0.5.21; last bad: 0.5.22; fixed in: 0.5.23" in text
    with open(SERVER_BUNDLE, encoding="utf-8") as fh:
        bad = json.load(fh)
    bad["case"]["config"]["tp_size"] = "two"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    asked.seen.clear()
    assert cli_main(["bisect", str(tmp_path / "bad.json"), "--releases", "0.5.23"]) == 2
    assert "config.tp_size" in capsys.readouterr().err and not asked.seen


def test_a_release_failing_otherwise_is_marked(monkeypatch):
    """A replay that fails with another first signature than the bundle's (an adapter's own
    error on that release, say) stays "bad" but is marked and listed, not read as the bug."""
    from types import SimpleNamespace

    answers = iter([SimpleNamespace(returncode=0, stdout="/env/bin/python\n", stderr=""),
                    SimpleNamespace(returncode=1, stdout="FAIL server:contracts (1 failures)\n",
                                    stderr=""),
                    SimpleNamespace(returncode=0, stdout="/env/bin/python\n", stderr=""),
                    SimpleNamespace(returncode=1, stdout="FAIL server:window_history (1 "
                                    "failures; known: ledger entry short-tail-floor)\n",
                                    stderr="")])
    monkeypatch.setattr(b.subprocess, "run", lambda *a, **k: next(answers))
    run = b.env_runner("x.json", signature="server:window_history")
    out = [run("0.5.21"), run("0.5.22")]
    assert [o.state for o in out] == [b.BAD, b.BAD]
    assert b.DIFFERENT in out[0].detail and b.DIFFERENT not in out[1].detail
    s = b.summary(out)
    assert s["differently"] == ["0.5.21"]
    assert "fails, but not with the bundle's signature: 0.5.21" in b.render(out, s)
