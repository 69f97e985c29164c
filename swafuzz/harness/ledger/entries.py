"""The known-failure ledger: findings that are real, understood and cited upstream.

A ledger is a JSON file (``ledger/known_failures.json``)::

    {"ledger_version": 1,
     "entries": [{"id": "short-name",
                  "target": "sglang",   # the project the target drives (its release hook)
                  "releases": ["0.5.12"],                  # optional: target versions affected
                  "signature": "write_targets/decode/*",   # fnmatch pattern over signatures
                  "when": {"pool": {"page_size": 1}},      # optional: the trigger (ledger.when)
                  "cite": "https://github.com/.../pull/N", # the upstream PR/issue
                  "note": "what it is, why it is known",
                  "repro": "ledger/repros/short-name.json",  # optional: a bundle to replay
                  "server": {"status": "unreachable", ...}}]}  # optional: ledger.server

A finding is *known* when an entry's target, releases and signature match it AND its ``when``
(:mod:`swafuzz.harness.ledger.when`) holds on its (shrunk) Case; a finding without a parseable
Case matches no entry with a ``when``. An entry without ``when`` is accepted, warned about as
imprecise (one signature can stand for several bugs).

``python -m swafuzz.harness.ledger.entries RUN_DIR [--ledger FILE] [--target T] [--release V]
[--replay]`` prints known / new / unseen findings (:func:`classify`), with ``--replay`` the
entries' ``repro`` bundles replayed (:func:`replay_entries`, :func:`repro_mismatches`), and a
warning per imprecise entry on stderr; ``--server`` (no RUN_DIR): each entry's server answer.
Exit 0 when every finding is known, 1 when any is new, 2 for a malformed ledger or run dir.
"""

from __future__ import annotations

import sys

from swafuzz.harness.cli.failures import run_tool

if __name__ == "__main__":  # python -m swafuzz.harness.ledger.entries: before the imports below can fail
    sys.exit(run_tool("swafuzz.harness.ledger.entries", "ledger"))

import argparse  # noqa: E402 - after the guard above
import fnmatch  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

from swafuzz import targets  # noqa: E402
from swafuzz.features.validation import load_case  # noqa: E402
from swafuzz.harness.ledger.server import ServerAnswer, parse_server, server_text, table  # noqa: E402
from swafuzz.harness.ledger.when import LedgerError, When, parse_when, release_of  # noqa: E402
from swafuzz.harness.pipeline.execute import execute, resolve_executors  # noqa: E402
from swafuzz.reports.bundle import read_bundle  # noqa: E402
from swafuzz.scenarios.case import CaseError  # noqa: E402

LEDGER_VERSION = 1
_UNPARSED = object()  # Entry.matches: the finding's Case not parsed yet
# swafuzz/ledger/known_failures.json (package data); in a checkout a link to
# <repo>/ledger/known_failures.json, resolved so repro paths stay relative to the repository
DEFAULT_LEDGER = os.path.realpath(os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "ledger", "known_failures.json"))
_FIELDS = {"id": str, "target": str, "signature": str, "cite": str, "note": str}
_OPTIONAL = ("releases", "repro", "when", "server")


@dataclass
class Entry:
    id: str
    target: str
    signature: str
    cite: str
    note: str
    releases: tuple[str, ...] = ()
    repro: str | None = None
    when: When | None = None  # None: signature only (imprecise, warned about)
    server: ServerAnswer | None = None  # the server-level answer (ledger_server)

    def applies(self, target: str, release: str | None) -> bool:
        """Does the entry apply to target ``target`` (a name: compared through the project its
        ``release`` hook names, :func:`project_of`) at ``release``?"""
        if self.target != project_of(target):
            return False
        return not self.releases or release is None or any(
            release_matches(r, release) for r in self.releases)

    def matches(self, finding: dict, release: str | None, case=_UNPARSED) -> bool:
        """Signature (and target / releases) match, and the ``when`` predicate holds on the
        finding's Case (``case``: the parsed Case, or None when the finding has none that
        parses; parsed here when not given). A predicate never holds without a Case."""
        if not (self.applies(finding_project(finding), release)
                and fnmatch.fnmatchcase(str(finding.get("signature", "")), self.signature)):
            return False
        if self.when is None:
            return True
        if case is _UNPARSED:
            case = finding_case(finding)
        return case is not None and self.when.holds(case, finding_release(finding, release),
                                                    finding_executors(finding))


def project_of(target: str) -> str:
    """The project whose releases target ``target`` drives (its ``release`` hook,
    :func:`swafuzz.targets.release`; a plugin wrapping ``sglang``'s answers ``sglang``): what a
    ledger entry's ``target`` names. A name no loaded target has stands for itself."""
    if target in _PROJECTS:
        return _PROJECTS[target]
    try:
        project = targets.release(target)["project"]
    except Exception:  # noqa: BLE001 - an unloadable plugin: the name is all there is
        return target
    if target in targets.TARGETS:  # a loaded target's answer does not change
        _PROJECTS[target] = project
    return project


_PROJECTS: dict[str, str] = {}


def finding_project(finding: dict) -> str:
    """The project of a finding: the ``release`` its bundle recorded (the target's hook when it
    was written), else :func:`project_of` its target's name."""
    rel = finding.get("release")
    if isinstance(rel, dict) and isinstance(rel.get("project"), str):
        return rel["project"]
    return project_of(str(finding.get("target", "")))


def finding_case(finding: dict):
    """The finding's Case (``finding["case"]``) parsed, or None (no Case, or one this checkout
    cannot parse: a predicate cannot hold on it, so the finding stays new)."""
    obj = finding.get("case")
    if not isinstance(obj, dict):
        return None
    try:
        return load_case(obj)
    except CaseError:
        return None


def release_matches(listed: str, version: str) -> bool:
    """Does an entry's release ``listed`` name ``version``? Both are read as releases
    (:func:`~swafuzz.harness.ledger.when.release_of`: ``"sglang 0.5.17 (adapter ...)"`` is
    0.5.17): a release (``0.5.13``) names itself and its post-releases (``0.5.13.post1``: the
    same code line, rebuilt); a post-release names only itself."""
    a, b = release_of(listed), release_of(version)
    if a is None or b is None:
        return listed == version
    return a == b or ("post" not in a and b.startswith(a + ".post"))


def finding_release(finding: dict, release: str | None) -> str | None:
    """The target version a ``when.release`` constraint is checked against: ``release`` (the
    CLI's ``--release``) if given, else the finding's recorded ``release`` version (its
    target's hook), else ``versions[project]`` (bundles written before the hook)."""
    if release is not None:
        return release
    rel = finding.get("release")
    if isinstance(rel, dict) and isinstance(rel.get("version"), str):
        return rel["version"]
    vers = finding.get("versions") or {}
    v = vers.get(finding_project(finding), vers.get(finding.get("target", "")))
    return v if isinstance(v, str) else None


def finding_executors(finding: dict) -> tuple[str, ...]:
    """The executors the finding ran under: its ``executors`` list when recorded (bundles of
    ``swafuzz run``, whose ``executor`` is the label asked for, e.g. ``"auto"``), else its
    ``executor`` field (``"eager+tape"`` -> ``("eager", "tape")``); empty when not recorded."""
    exs = finding.get("executors")
    if isinstance(exs, list) and exs and all(isinstance(x, str) and x for x in exs):
        return tuple(exs)
    ex = finding.get("executor")
    return tuple(x for x in ex.split("+") if x) if isinstance(ex, str) else ()


def imprecise(entries: list[Entry]) -> list[str]:
    """Warnings: entries without a ``when`` predicate (any finding with the signature is
    classified known, a new bug with it included), and entries no finding can reach because an
    earlier entry with the same target and signature has no predicate."""
    out = []
    for i, e in enumerate(entries):
        if e.when is None:
            out.append(f"entry {e.id}: no 'when' predicate: every finding with signature "
                       f"{e.signature!r} on {e.target} is classified known, a new bug with that "
                       "signature included; add a 'when' over the trigger's Case")
        for prev in entries[:i]:
            if (prev.when is None and prev.target == e.target
                    and fnmatch.fnmatchcase(e.signature, prev.signature)):
                out.append(f"entry {e.id}: shadowed by entry {prev.id} (same target, its "
                           f"signature {prev.signature!r} covers {e.signature!r}, no 'when')")
                break
    return out


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
        extra = set(e) - set(_FIELDS) - set(_OPTIONAL)
        if extra:
            raise LedgerError(f"{at}: unknown fields {sorted(extra)}; allowed: "
                              f"{sorted(set(_FIELDS) | set(_OPTIONAL))}")
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
        when = parse_when(e["when"], f"{at}.when") if "when" in e else None
        server = parse_server(e["server"], f"{at}.server") if "server" in e else None
        out.append(Entry(e["id"], e["target"], e["signature"], e["cite"], e["note"],
                         tuple(rel), repro, when, server))
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
    """Sort ``findings`` (bundle records: ``target``, ``signature``, ``case``, ``versions``) of a
    run on ``target`` (version ``release``, if known) into known (the first entry whose
    signature AND ``when`` predicate match) and new; list applicable entries matched by no
    finding."""
    c = Classified()
    hit: set[str] = set()
    for f in findings:
        case = finding_case(f) if any(e.when is not None for e in entries) else None
        e = next((e for e in entries if e.matches(f, release, case)), None)
        if e is None:
            c.new.append(f)
        else:
            c.known.append((f, e))
            hit.add(e.id)
    c.unmatched = [e for e in entries if e.applies(target, release) and e.id not in hit]
    return c


def replay_entries(entries: list[Entry], target: str, release: str | None, base: str,
                   impl: str = "torch", executor: str = "auto",
                   refused: dict[str, str] | None = None) -> dict[str, bool]:
    """Replay each applicable entry's ``repro`` bundle; ``{id: still fails}``. An entry whose
    Case the target cannot run here (``targets.supports``) is not replayed: its id and the
    reason go into ``refused`` when given."""
    out = {}
    for e in entries:
        if e.repro is None or not e.applies(target, release):
            continue
        case = load_case(read_bundle(os.path.join(base, e.repro))["case"])
        why = targets.supports(target, case)
        if why:
            if refused is not None:
                refused[e.id] = why
            continue
        v = execute(case, target, impl, resolve_executors(executor))
        out[e.id] = v.failed and fnmatch.fnmatchcase(
            v.failures[0].signature(v.case.kind), e.signature)
    return out


def repro_mismatches(entries: list[Entry], base: str) -> list[str]:
    """Entries whose own ``repro`` bundle (path relative to ``base``) is not a finding the entry
    matches: its signature or its Case falls outside the entry (the ``when`` predicate checked on
    the bundle's Case, its release from the bundle's ``versions``). Needs no target."""
    out = []
    for e in entries:
        if e.repro is None:
            continue
        path = os.path.join(base, e.repro)
        try:
            with open(path) as f:
                b = json.load(f)
        except (OSError, json.JSONDecodeError) as err:
            out.append(f"entry {e.id}: repro {e.repro} cannot be read ({err})")
            continue
        finding = {**b, "target": e.target} if isinstance(b, dict) else {}
        if not fnmatch.fnmatchcase(str(finding.get("signature", "")), e.signature):
            out.append(f"entry {e.id}: repro {e.repro} has signature "
                       f"{finding.get('signature')!r}, outside {e.signature!r}")
        elif e.when is not None and finding_case(finding) is None:
            out.append(f"entry {e.id}: repro {e.repro} holds no Case this checkout parses")
        elif not e.matches(finding, None):
            out.append(f"entry {e.id}: the Case of its repro {e.repro} does not satisfy its "
                       "'when' predicate")
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
    p = argparse.ArgumentParser(prog="python -m swafuzz.harness.ledger.entries",
                                description="classify a run's findings against the ledger")
    p.add_argument("run_dir", nargs="?")
    p.add_argument("--ledger", default=DEFAULT_LEDGER)
    p.add_argument("--target", default=None, help="default: the findings' target, else unified")
    p.add_argument("--release", default=None, help="target version (default: what the findings "
                   "record)")
    p.add_argument("--replay", action="store_true",
                   help="replay every applicable entry's repro bundle")
    p.add_argument("--server", action="store_true", help="print each entry's server-level "
                   "answer as a table (no RUN_DIR)")
    args = p.parse_args(argv)
    if args.run_dir is None and not args.server:
        print("ledger: error: RUN_DIR is required (or --server)", file=sys.stderr)
        return 2
    try:
        entries = load_ledger(args.ledger)
        if args.server:
            print(table(entries))
            return 0
        findings = read_run_findings(args.run_dir)
    except LedgerError as e:
        print(f"ledger: error: {e}", file=sys.stderr)
        return 2
    for w in imprecise(entries):
        print(f"ledger: warning: {w}", file=sys.stderr)
    target = args.target or (findings[0].get("target") if findings else "unified")
    c = classify(findings, entries, target, args.release)
    for f, e in c.known:
        print(f"KNOWN {f['signature']}: ledger entry {e.id} ({e.cite}); {server_text(e.server)}")
    for f in c.new:
        print(f"NEW   {f['signature']}: {f.get('message', '')}")
        near = [e.id for e in entries if e.when is not None
                and fnmatch.fnmatchcase(str(f.get("signature", "")), e.signature)]
        if near:
            print(f"      signature of ledger entries {near}, but its Case is outside their "
                  "'when' predicates: a new bug with a known signature")
    for e in c.unmatched:
        print(f"UNSEEN ledger entry {e.id} ({e.signature}): no finding of this run matched it; "
              f"{server_text(e.server)}")
    if args.replay:
        base = os.path.dirname(os.path.dirname(os.path.abspath(args.ledger)))
        for m in repro_mismatches(entries, base):
            print(f"REPRO-MISMATCH {m}")
        refused: dict[str, str] = {}
        for eid, still in replay_entries(entries, target, args.release, base,
                                         refused=refused).items():
            print(f"REPLAY {eid}: " + ("still fails" if still else
                                       "NO LONGER REPRODUCES - remove the entry"))
        for eid, why in refused.items():
            print(f"REPLAY {eid}: not replayed, target {target} cannot run its Case: {why}")
    print(f"ledger: {len(c.known)} known, {len(c.new)} new, {len(c.unmatched)} unseen entries")
    return 1 if c.new else 0

