"""The known-failure ledger: findings that are real, understood and cited upstream.

A ledger is a JSON file (``ledger/known_failures.json``)::

    {"ledger_version": 1,
     "entries": [{"id": "short-name",
                  "target": "sglang",                      # the target the finding is on
                  "releases": ["0.5.12"],                  # optional: target versions affected
                  "signature": "write_targets/decode/*",   # fnmatch pattern over signatures
                  "cite": "https://github.com/.../pull/N", # the upstream PR/issue
                  "note": "what it is, why it is known",
                  "repro": "ledger/repros/short-name.json"}]}  # optional: a bundle to replay

:func:`classify` sorts a run's findings into *known* (an entry matches: reported, not a
failure) and *new*, and lists the entries that apply to the run but matched nothing. An entry
with a ``repro`` bundle can be replayed (:func:`replay_entries`): an entry whose Case no longer
fails is reported so it can be removed.

``python -m swafuzz.harness.ledger RUN_DIR [--ledger FILE] [--target T] [--release V]
[--replay]`` prints the three lists; exit 0 when every finding is known, 1 when any is new,
2 for a malformed ledger or run directory (the message names the field).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from dataclasses import dataclass, field

LEDGER_VERSION = 1
DEFAULT_LEDGER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "ledger", "known_failures.json")
_FIELDS = {"id": str, "target": str, "signature": str, "cite": str, "note": str}


class LedgerError(ValueError):
    """A malformed ledger; the message names the entry and field."""


@dataclass
class Entry:
    id: str
    target: str
    signature: str
    cite: str
    note: str
    releases: tuple[str, ...] = ()
    repro: str | None = None

    def applies(self, target: str, release: str | None) -> bool:
        if self.target != target:
            return False
        return not self.releases or release is None or release in self.releases

    def matches(self, finding: dict, release: str | None) -> bool:
        return (self.applies(finding.get("target", ""), release)
                and fnmatch.fnmatchcase(str(finding.get("signature", "")), self.signature))


@dataclass
class Classified:
    known: list[tuple[dict, Entry]] = field(default_factory=list)
    new: list[dict] = field(default_factory=list)
    unmatched: list[Entry] = field(default_factory=list)  # applicable entries nothing matched


def parse_ledger(obj, where: str = "ledger") -> list[Entry]:
    if not isinstance(obj, dict):
        raise LedgerError(f"{where}: must be a JSON object with 'ledger_version' and 'entries'")
    if obj.get("ledger_version") != LEDGER_VERSION:
        raise LedgerError(f"{where}: field 'ledger_version' must be {LEDGER_VERSION} (got "
                          f"{obj.get('ledger_version')!r})")
    entries = obj.get("entries")
    if not isinstance(entries, list):
        raise LedgerError(f"{where}: field 'entries' must be a list")
    out, ids = [], set()
    for i, e in enumerate(entries):
        at = f"{where}: entries[{i}]"
        if not isinstance(e, dict):
            raise LedgerError(f"{at}: must be an object")
        for name, typ in _FIELDS.items():
            if not isinstance(e.get(name), typ) or not e.get(name):
                raise LedgerError(f"{at}: field '{name}' must be a non-empty string")
        extra = set(e) - set(_FIELDS) - {"releases", "repro"}
        if extra:
            raise LedgerError(f"{at}: unknown fields {sorted(extra)}; allowed: "
                              f"{sorted(set(_FIELDS) | {'releases', 'repro'})}")
        rel = e.get("releases", [])
        if not isinstance(rel, list) or not all(isinstance(r, str) and r for r in rel):
            raise LedgerError(f"{at}: field 'releases' must be a list of version strings")
        repro = e.get("repro")
        if repro is not None and not (isinstance(repro, str) and repro):
            raise LedgerError(f"{at}: field 'repro' must be a path to a bundle")
        if not e["cite"].startswith(("http://", "https://")):
            raise LedgerError(f"{at}: field 'cite' must be the URL of the upstream PR or issue")
        if e["id"] in ids:
            raise LedgerError(f"{at}: field 'id' {e['id']!r} repeats an earlier entry")
        ids.add(e["id"])
        out.append(Entry(e["id"], e["target"], e["signature"], e["cite"], e["note"],
                         tuple(rel), repro))
    return out


def load_ledger(path: str = DEFAULT_LEDGER) -> list[Entry]:
    try:
        with open(path) as f:
            obj = json.load(f)
    except OSError as e:
        raise LedgerError(f"{path}: cannot read ledger ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise LedgerError(f"{path}: not valid JSON ({e})") from None
    return parse_ledger(obj, path)


def classify(findings: list[dict], entries: list[Entry], target: str,
             release: str | None = None) -> Classified:
    """Sort ``findings`` (bundle records: ``target``, ``signature``) of a run on ``target``
    (version ``release``, if known) into known and new; list applicable entries matched by no
    finding."""
    c = Classified()
    hit: set[str] = set()
    for f in findings:
        e = next((e for e in entries if e.matches(f, release)), None)
        if e is None:
            c.new.append(f)
        else:
            c.known.append((f, e))
            hit.add(e.id)
    c.unmatched = [e for e in entries if e.applies(target, release) and e.id not in hit]
    return c


def replay_entries(entries: list[Entry], target: str, release: str | None, base: str,
                   impl: str = "torch", executor: str = "auto") -> dict[str, bool]:
    """Replay each applicable entry's ``repro`` bundle; ``{id: still fails}``."""
    from swafuzz.harness.run import execute, resolve_executors
    from swafuzz.reports.bundle import read_bundle
    from swafuzz.scenarios.case import Case

    out = {}
    for e in entries:
        if e.repro is None or not e.applies(target, release):
            continue
        b = read_bundle(os.path.join(base, e.repro))
        v = execute(Case.from_json(b["case"]), target, impl, resolve_executors(executor))
        out[e.id] = v.failed and fnmatch.fnmatchcase(
            v.failures[0].signature(v.case.kind), e.signature)
    return out


def read_run_findings(run_dir: str) -> list[dict]:
    fdir = os.path.join(run_dir, "findings")
    if not os.path.isdir(run_dir):
        raise LedgerError(f"RUN_DIR: {run_dir!r} is not a directory written by 'swafuzz run'")
    out = []
    for name in sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []:
        if name.endswith(".json"):
            with open(os.path.join(fdir, name)) as f:
                out.append(json.load(f))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m swafuzz.harness.ledger",
                                description="classify a run's findings against the ledger")
    p.add_argument("run_dir")
    p.add_argument("--ledger", default=DEFAULT_LEDGER)
    p.add_argument("--target", default=None, help="default: the findings' target, else unified")
    p.add_argument("--release", default=None, help="target version (e.g. the sglang release)")
    p.add_argument("--replay", action="store_true",
                   help="replay every applicable entry's repro bundle")
    args = p.parse_args(argv)
    try:
        entries = load_ledger(args.ledger)
        findings = read_run_findings(args.run_dir)
    except LedgerError as e:
        print(f"ledger: error: {e}", file=sys.stderr)
        return 2
    target = args.target or (findings[0].get("target") if findings else "unified")
    c = classify(findings, entries, target, args.release)
    for f, e in c.known:
        print(f"KNOWN {f['signature']}: ledger entry {e.id} ({e.cite})")
    for f in c.new:
        print(f"NEW   {f['signature']}: {f.get('message', '')}")
    for e in c.unmatched:
        print(f"UNSEEN ledger entry {e.id} ({e.signature}): no finding of this run matched it")
    if args.replay:
        base = os.path.dirname(os.path.dirname(os.path.abspath(args.ledger)))
        for eid, still in replay_entries(entries, target, args.release, base).items():
            print(f"REPLAY {eid}: " + ("still fails" if still else
                                       "NO LONGER REPRODUCES - remove the entry"))
    print(f"ledger: {len(c.known)} known, {len(c.new)} new, {len(c.unmatched)} unseen entries")
    return 1 if c.new else 0


if __name__ == "__main__":
    sys.exit(main())
