"""``swafuzz bisect BUNDLE [--releases A..B]``: where across a target's releases a finding
bundle fails.

    swafuzz bisect tests/data/bundles/sglang/short_tail_floor.json --releases 0.5.12..0.5.23
    swafuzz bisect BUNDLE --releases 0.5.13,0.5.13.post1 --json out.json

Every release of the range is replayed (no binary search: a finding may come and go, and a
release the adapter cannot drive must be reported), each by ``swafuzz repro`` in its own
environment (``scripts/upstream-env RELEASE``). Prints a line per release and the summary: first
bad, last bad, fixed-in (the first clean release after the last bad one), the releases not
driven (why). :func:`bisect` / :func:`summary` take any per-release runner (real one:
:func:`env_runner`). Exit 0: clean wherever it ran; 1: fails on some release; 2: usage error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from typing import Callable

from swafuzz import targets
from swafuzz.features.validation import load_case
from swafuzz.harness.cli.common import EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, UsageError
from swafuzz.harness.ledger.releases import release_key, spec_names
from swafuzz.reports.bundle import read_bundle
from swafuzz.scenarios.case import CaseError
from swafuzz.server.case import ServerCase

#: the outcomes of one release's replay
BAD, GOOD, CANNOT = "bad", "good", "cannot-drive"
#: the mark of a BAD outcome whose first failure is not the bundle's signature
DIFFERENT = "not the bundle's"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@dataclass(frozen=True)
class Outcome:
    """One release's answer: ``state`` is :data:`BAD` (the bundle fails there), :data:`GOOD`
    (it replays clean) or :data:`CANNOT` (the adapter cannot drive the release or the Case
    there: ``detail`` says why)."""

    release: str
    state: str
    detail: str = ""


_key = release_key


def parse_releases(spec: str | None, known: tuple[str, ...]) -> list[str]:
    """``A..B`` (the known releases between, inclusive; post-releases named as an end are
    included), ``A,B,C`` (exactly those), or None (every known release). Raises UsageError
    naming the field and the allowed values."""
    if not spec:
        return list(known)
    names = spec_names(spec, known)
    if isinstance(names, tuple):
        lo, hi = names
        out = sorted({v for v in known if _key(lo) <= _key(v) <= _key(hi)} | {lo, hi}, key=_key)
    else:
        out = names
    lo, hi = known[0], known[-1]
    outside = [v for v in out if not _key(lo)[:3] <= _key(v)[:3] <= _key(hi)[:3]]
    if outside:
        raise UsageError(f"--releases: {', '.join(outside)} outside the target's releases "
                         f"{lo} .. {hi}")
    return out


def bisect(releases: list[str], runner: Callable[[str], Outcome]) -> list[Outcome]:
    """Every release's outcome, in release order."""
    return [runner(v) for v in sorted(releases, key=_key)]


def summary(outcomes: list[Outcome]) -> dict:
    """``first_bad``, ``last_bad``, ``fixed_in`` (the first release after the last bad one that
    replays clean; None when the last bad one is the newest that ran), ``never_bad``,
    ``contiguous`` (no clean release between the first and the last bad one), and
    ``cannot_drive`` (release -> why)."""
    bad = [o.release for o in outcomes if o.state == BAD]
    out = {"first_bad": bad[0] if bad else None, "last_bad": bad[-1] if bad else None,
           "fixed_in": None, "never_bad": not bad, "contiguous": True,
           "cannot_drive": {o.release: o.detail for o in outcomes if o.state == CANNOT},
           "differently": [o.release for o in outcomes
                           if o.state == BAD and f"[{DIFFERENT} " in o.detail]}
    if bad:
        order = [o.release for o in outcomes]
        i, j = order.index(bad[0]), order.index(bad[-1])
        out["contiguous"] = all(o.state != GOOD for o in outcomes[i:j + 1])
        out["fixed_in"] = next((o.release for o in outcomes[j + 1:] if o.state == GOOD), None)
    return out


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:400] if lines else ""


def env_runner(bundle: str, extra: list[str] | None = None, timeout: int = 1800,
               signature: str | None = None) -> Callable[[str], Outcome]:
    """Replay ``bundle`` in ``scripts/upstream-env RELEASE``'s environment: ``swafuzz repro``
    exit 1 is :data:`BAD`, 0 :data:`GOOD`; a release whose environment does not build or
    probe, or whose adapter refuses the Case (repro exit 2), is :data:`CANNOT` with the
    reason; any other exit raises (a tool failure is not an answer)."""
    def run(release: str) -> Outcome:
        env = subprocess.run(["bash", os.path.join(ROOT, "scripts", "upstream-env"), release],
                             capture_output=True, text=True, timeout=timeout)
        if env.returncode != 0:
            return Outcome(release, CANNOT, f"environment (upstream-env exit {env.returncode}): "
                           + _last_line(env.stderr))
        py = _last_line(env.stdout)
        r = subprocess.run([py, "-m", "swafuzz", "repro", bundle, *(extra or [])],
                           capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                           env={**os.environ, "TRITON_INTERPRET": "1",
                                "PYTHONWARNINGS": "ignore"})
        if r.returncode == EXIT_FINDINGS:
            first = _first_fail(r.stdout)
            if signature and not first.startswith(f"FAIL {signature} "):
                # it fails there, but not as the bundle did: shown, so that an adapter's own
                # failure on a release is not read as the bug (summary's "differently")
                first += f" [{DIFFERENT} {signature}]"
            return Outcome(release, BAD, first)
        if r.returncode == EXIT_CLEAN:
            return Outcome(release, GOOD, _last_line(r.stdout))
        if r.returncode == EXIT_USAGE:
            return Outcome(release, CANNOT, _last_line(r.stderr))
        raise RuntimeError(f"swafuzz repro on release {release} exited {r.returncode}: "
                           f"{_last_line(r.stderr)}")
    return run


def records_first(runner: Callable[[str], Outcome], target, case) -> Callable[[str], Outcome]:
    """``runner``, asked only where the target's records say it drives ``case`` on the release
    (its ``supports_at`` hook, no environment needed); elsewhere :data:`CANNOT` with the
    records' reason (what ``swafuzz repro`` in that environment would refuse with, exit 2)."""
    at = getattr(target, "supports_at", None)

    def run(release: str) -> Outcome:
        why = at(case, release) if callable(at) else None
        return Outcome(release, CANNOT, f"records: {why}") if why else runner(release)
    return run


def _first_fail(stdout: str) -> str:
    return next((ln.strip() for ln in stdout.splitlines() if ln.startswith("FAIL")), "")


def render(outcomes: list[Outcome], s: dict) -> str:
    lines = [f"{o.release:<14} {o.state:<13} {o.detail}" for o in outcomes]
    lines.append(f"first bad: {s['first_bad'] or '-'}; last bad: {s['last_bad'] or '-'}; "
                 f"fixed in: {s['fixed_in'] or '-'}"
                 + ("" if s["contiguous"] else " (not contiguous: clean releases in between)"))
    if s["cannot_drive"]:
        lines.append(f"cannot drive: {', '.join(s['cannot_drive'])}")
    if s.get("differently"):
        lines.append(f"fails, but not with the bundle's signature: {', '.join(s['differently'])}")
    return "\n".join(lines)


def cmd_bisect(args, runner: Callable[[str], Outcome] | None = None) -> int:
    if not os.path.isfile(args.file):
        raise UsageError(f"{args.file}: no such bundle file")
    try:
        bundle = read_bundle(args.file)
        server = bundle.get("level") == "server"
        # a server-level bundle (``"level": "server"``): no records to ask first; each release's
        # own ``repro`` refuses (exit 2: cannot drive) what its pipeline or ServerArgs refuse
        case = ServerCase.from_json(bundle["case"]) if server else load_case(bundle["case"])
    except (ValueError, KeyError, CaseError) as e:
        raise UsageError(f"{args.file}: not a finding bundle with a Case ({e})") from None
    name = args.target or bundle.get("target")
    if not isinstance(name, str) or not name:
        raise UsageError(f"{args.file}: the bundle names no target; give --target")
    try:
        target = targets.find_target(name)
    except Exception as e:  # noqa: BLE001 - an unknown target is a usage error
        raise UsageError(f"--target: {e}") from None
    known = tuple(getattr(target, "releases", lambda: ())())
    if not known:
        raise UsageError(f"--target {name}: the target lists no releases to bisect over")
    releases = parse_releases(args.releases, known)
    extra = ["--target", name] + (["--executor", args.executor] if args.executor else [])
    run = runner or env_runner(os.path.abspath(args.file), extra,
                               signature=bundle.get("signature") or None)
    if not server:
        run = records_first(run, target, case)
    outcomes = bisect(releases, run)
    s = summary(outcomes)
    print(render(outcomes, s))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"bundle": args.file, "outcomes": [asdict(o) for o in outcomes], **s}, f,
                      indent=1)
    return EXIT_FINDINGS if s["first_bad"] else EXIT_CLEAN


def ledger_table(dirname: str, ledger_path: str) -> tuple[str, int]:
    """Markdown: per ledger entry bisected into ``dirname/ENTRY.json``, its ledger releases,
    where it fails, fixed-in, the releases that could not be driven, and whether the ledger's
    list is the set of releases it fails on; and how many entries disagree."""
    entries = json.load(open(ledger_path, encoding="utf-8"))["entries"]
    rows = ["| entry | ledger releases | fails on | first bad | last bad | fixed in | "
            "cannot drive | ledger agrees |", "|---|---|---|---|---|---|---|---|"]
    disagree = 0
    for e in entries:
        path = os.path.join(dirname, f"{e['id']}.json")
        if not os.path.exists(path):
            continue
        rec = json.load(open(path, encoding="utf-8"))
        bad = [o["release"] for o in rec["outcomes"] if o["state"] == BAD]
        listed = e.get("releases", [])
        ran = {o["release"] for o in rec["outcomes"] if o["state"] != CANNOT}
        agrees = sorted(bad) == sorted(v for v in listed if v in ran)
        disagree += not agrees
        rows.append(f"| {e['id']} | {', '.join(listed) or 'all'} | {', '.join(bad) or '-'} | "
                    f"{rec['first_bad'] or '-'} | {rec['last_bad'] or '-'} | "
                    f"{rec['fixed_in'] or '-'} | {', '.join(rec['cannot_drive']) or '-'} | "
                    f"{'yes' if agrees else 'NO'} |")
    return "\n".join(rows), disagree


def main(argv: list[str]) -> int:
    """``python -m swafuzz.harness.ledger.bisect DIR [LEDGER]``: :func:`ledger_table` of the bisect
    records in DIR (``scripts/upstream-bisect``); exit 1 when an entry's releases disagree."""
    if not argv or not os.path.isdir(argv[0]):
        print("usage: python -m swafuzz.harness.ledger.bisect DIR [LEDGER]  (DIR: bisect records)",
              file=sys.stderr)
        return EXIT_USAGE
    text, disagree = ledger_table(argv[0], argv[1] if len(argv) > 1 else os.path.join(
        ROOT, "ledger", "known_failures.json"))
    print(text)
    return EXIT_FINDINGS if disagree else EXIT_CLEAN


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
