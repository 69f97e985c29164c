"""``swafuzz export BUNDLE --out DIR [--ledger FILE] [--bisect FILE]`` (package docstring).

Inputs are checked before anything heavy loads or anything is written (exit 2, one line naming
the field): BUNDLE a server-level finding bundle on a target whose ``release`` hook names
``sglang``, with a Case, a signature and failures; ``--out`` new or an empty directory;
``--ledger`` a ledger file; ``--bisect`` a ``swafuzz bisect --json`` record of this bundle. A
finding no feature has a recipe for is refused (exit 2, naming the signature). DIR then holds
``README.md``, ``export.json``, the test file and, where the recipe knows the fix, ``fix.json``.
Every file is a function of the inputs (no time, host or absolute path): an export regenerated
from the same bundle, ledger and bisect record is byte for byte the stored one.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from swafuzz import features, targets
from swafuzz.export import text
from swafuzz.harness.cli.common import EXIT_CLEAN, UsageError
from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, LedgerError, load_ledger
from swafuzz.harness.ledger.known import server_known
from swafuzz.harness.ledger.server import model_facts
from swafuzz.reports.bundle import read_bundle
from swafuzz.scenarios.case import CaseError
from swafuzz.server.case import ServerCase

#: the project whose tests an export writes (a target's ``release`` hook must name it)
PROJECT = "sglang"


def _bundle(path: str) -> tuple[dict, ServerCase]:
    if not os.path.isfile(path):
        raise UsageError(f"BUNDLE: {path!r} is not a file (a finding bundle: findings/*.json of "
                         "a run, or tests/data/bundles/sglang/*.json)")
    try:
        b = read_bundle(path)
    except ValueError as e:
        raise UsageError(f"BUNDLE: {e}") from None
    if b.get("level") != "server":
        raise UsageError(f"{path}: field 'level': {b.get('level', 'component')!r} is not "
                         "exported (allowed: 'server'; a component-level bundle has no server "
                         "launch command or request sequence)")
    for name, kind in (("signature", str), ("failures", list), ("target", str)):
        if not isinstance(b.get(name), kind) or not b.get(name):
            raise UsageError(f"{path}: field {name!r}: a non-empty {kind.__name__} is required")
    rel = b.get("release")
    project = rel.get("project") if isinstance(rel, dict) else None
    if project is None:
        try:
            project = targets.release(b["target"])["project"]
        except Exception:  # noqa: BLE001 - an unloadable plugin: its name is all there is
            project = b["target"]
    if project != PROJECT:
        raise UsageError(f"{path}: field 'target': {b['target']!r} drives {project!r}; export "
                         f"writes {PROJECT} tests (allowed: a target whose release hook names "
                         f"{PROJECT})")
    try:
        case = ServerCase.from_json(b["case"])
    except CaseError as e:
        raise UsageError(f"{path}: field 'case': {e}") from None
    return b, case


def _out(path: str) -> None:
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--out: {path!r} is a file, not a directory (give a new or empty "
                         "directory)")
    if os.path.isdir(path) and os.listdir(path):
        raise UsageError(f"--out: {path!r} is not empty (give a new or empty directory)")


def _bisect(path: str | None) -> dict | None:
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"--bisect: {path!r} cannot be read as JSON ({e})") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("outcomes"), list) or \
            "first_bad" not in rec:
        raise UsageError(f"--bisect: {path!r} is not a 'swafuzz bisect --json' record (fields "
                         "'outcomes' and 'first_bad' required)")
    return rec


def _ledger_entry(ledger: str | None, b: dict, case: ServerCase):
    """The ledger entry that knows the finding (server answer: target, release, server args,
    signature), or None."""
    try:
        entries = load_ledger(ledger or DEFAULT_LEDGER)
    except LedgerError as e:
        raise UsageError(f"--ledger: {e}") from None
    release = (b.get("versions") or {}).get(PROJECT)
    eid = server_known(entries, b["target"], release, case.config.server_args(),
                       b["signature"], model_facts(case))
    return next((e for e in entries if e.id == eid), None)


def recipe_of(case: ServerCase, b: dict):
    """The first feature recipe that answers for the finding (hook ``export.sglang_test``)."""
    for make in features.hooks("export.sglang_test"):
        r = make(case, b)
        if r is not None:
            return r
    return None


def cmd_export(args) -> int:
    b, case = _bundle(args.file)
    _out(args.out)
    bis = _bisect(args.bisect)
    if args.ledger is not None and not os.path.isfile(args.ledger):
        raise UsageError(f"--ledger: {args.ledger!r} is not a file")
    entry = _ledger_entry(args.ledger, b, case)
    rec = recipe_of(case, b)
    if rec is None:
        raise UsageError(f"{args.file}: field 'signature': no feature has an SGLang test recipe "
                         f"for {b['signature']!r} on this Case (no feature's "
                         "export.sglang_test hook answers for it)")
    files = text.render(args.file, b, case, entry, bis, rec)
    os.makedirs(args.out, exist_ok=True)
    for name, body in files.items():
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(body)
    if rec.fix is not None:
        with open(os.path.join(args.out, "fix.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(asdict(rec.fix), indent=1, sort_keys=True) + "\n")
    print(f"swafuzz export: {len(files) + (rec.fix is not None)} files in {args.out} "
          f"({rec.test_name}: fails on sglang {text.release_of_bundle(b)}"
          + (", passes with fix.json)" if rec.fix else ")"))
    return EXIT_CLEAN
