"""Server-level campaigns classified against the known-failure ledger (``swafuzz run --level
server --ledger``; harness/ledger/known.py ``ServerKnownLedger``): on a release a reachable entry
lists, the request-window kinds meet that entry's bug and the run counts it as known (exit 0,
``run.json``'s ``known``, a known bundle whose repro names the entry); a server mutant's finding,
or the same bug against a ledger whose entry names another release, is new (exit 1). Marker
``upstream``: a release with a request window (0.5.22 / 0.5.23); each campaign runs in this
process (``--no-isolate``); a new finding's shrinking is capped at 4 Cases (only its
classification is asserted)."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEDGER = os.path.join(ROOT, "ledger", "known_failures.json")
#: kind -> the ledger entry its campaign meets on the entry's releases
KNOWN = {"server_window": "window-dp-extend-pad-joins-run",
         "server_window_tail": "short-tail-floor"}


def _window_release(pipeline_here) -> str:
    from swafuzz.targets import version
    from swafuzz.targets.sglang.pipeline.argnames import release_refusal

    why = release_refusal({"enable_encoder_swa_bounded_replay": True})
    if why:  # a release without the request window (0.5.12)
        pytest.skip(why)
    return version("sglang")


def _entry(eid: str) -> dict:
    with open(LEDGER, encoding="utf-8") as f:
        return next(e for e in json.load(f)["entries"] if e["id"] == eid)


def _campaign(out, kind: str, *extra: str) -> tuple[int, dict]:
    from swafuzz.harness.cli.commands import main

    rc = main(["run", "--target", "sglang", "--level", "server", "--impl", "torch",
               "--scenario", kind, "--examples", "12", "--seed", "0", "--no-isolate",
               "--quiet", "--out", str(out), *extra])
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        return rc, json.load(f)


@pytest.mark.parametrize("kind", sorted(KNOWN))
def test_a_window_campaign_classifies_the_release_bug_as_its_entry(kind, pipeline_here,
                                                                    tmp_path, capsys):
    release, eid = _window_release(pipeline_here), KNOWN[kind]
    entry = _entry(eid)
    if release not in entry["releases"]:
        pytest.skip(f"{eid} is a bug of {', '.join(entry['releases'])}, not of {release}")
    rc, run = _campaign(tmp_path / "run", kind, "--ledger", "auto")
    assert rc == 0 and run["findings"] == [], run
    k = run["known"][eid]
    assert k["cases"] >= 1 and k["signature"] in entry["server"]["signatures"]
    assert run["kinds"][kind]["known"][eid] == k["cases"]
    bundle = os.path.join(tmp_path, "run", k["bundle"])
    with open(bundle, encoding="utf-8") as f:
        assert json.load(f)["ledger_entry"] == eid
    assert f"| {eid} | {k['signature']} |" in (tmp_path / "run" / "summary.md").read_text()
    assert f'name="known.{eid}"' in (tmp_path / "run" / "junit.xml").read_text()
    from swafuzz.harness.cli.commands import main

    capsys.readouterr()
    assert main(["repro", bundle, "--no-isolate"]) == 1  # the bundle fails: the bug is real
    assert f"; known: ledger entry {eid})" in capsys.readouterr().out

    # the entry at another release (a check that can fail): the same bug is new
    raw = json.loads(open(LEDGER, encoding="utf-8").read())
    for e in raw["entries"]:
        if e["id"] == eid:
            e["releases"] = ["0.5.12"]
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(raw))
    rc, run = _campaign(tmp_path / "moved", kind, "--ledger", str(moved), "--shrink-budget", "4")
    assert rc == 1 and run["known"] == {}, run
    assert run["kinds"][kind]["finding"] in entry["server"]["signatures"]


def test_a_server_mutants_finding_is_new_beside_the_known_one(pipeline_here, tmp_path):
    """A request-window server mutant (its slot reset clears the next slot: addendum §2.2) on a
    window campaign with the ledger on: its finding is new (exit 1), a bundle without
    ``ledger_entry``; the ledger does not swallow it."""
    _window_release(pipeline_here)
    rc, run = _campaign(tmp_path / "mut", "server_window", "--ledger", "auto",
                        "--server-mutant", "server_slot_reset_next", "--shrink-budget", "4")
    assert rc == 1 and len(run["findings"]) == 1, run
    with open(os.path.join(tmp_path, "mut", run["findings"][0]), encoding="utf-8") as f:
        b = json.load(f)
    assert "ledger_entry" not in b and b["server_mutant"] == "server_slot_reset_next"
