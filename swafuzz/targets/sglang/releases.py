"""The release matrix's records (``scripts/upstream-matrix``): one JSON object per release, the
Markdown table of them, and the detection module they generate.

    python -m swafuzz.targets.sglang.releases record FILE --release V --build B --check C \
        --probe PROBE.json --run RUN_DIR --seconds S
    python -m swafuzz.targets.sglang.releases table DIR       # the Markdown table of DIR/*.json
    python -m swafuzz.targets.sglang.releases detected DIR    # swafuzz/targets/sglang/detected.json
    python -m swafuzz.targets.sglang.releases status DIR docs/STATUS.md [--check]

Reads no SGLang: the probe's JSON (:mod:`.detect`) says what the release has; the run directory
of ``scripts/upstream-check`` gives the campaign's cases and findings.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

from swafuzz.targets.sglang import detected
from swafuzz.targets.sglang import version_key as _key

COLUMNS = ("release", "build / probe", "family detected", "upstream-check", "cases", "findings",
           "seconds")


def release_key(v: str) -> tuple[int, ...]:
    """Sort key of a release or post-release (``0.5.13.post1`` after ``0.5.13``)."""
    post = v.split(".post")[1] if ".post" in v else "-1"
    return (*_key(v), int(post))


def _campaign(run: str) -> tuple[int | None, str | None]:
    """(cases, findings) of a ``swafuzz run`` directory: its generated cases, and its finding
    bundles (``N new, M known``: known = a ledger entry's ``.known`` bundle); None where the run
    left nothing."""
    path = os.path.join(run, "cases.jsonl")
    if not os.path.exists(path):
        return None, None
    cases = 0
    for line in open(path, encoding="utf-8"):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        cases += 1 if row.get("phase") == "generate" else 0
    bundles = glob.glob(os.path.join(run, "findings", "*.json"))
    known = sum(".known-" in os.path.basename(b) for b in bundles)  # a ledger entry's Case
    return cases, f"{len(bundles) - known} new" + (f", {known} known" if known else "")


def record(args) -> int:
    probe = {}
    if os.path.exists(args.probe):
        try:
            probe = json.load(open(args.probe, encoding="utf-8"))
        except ValueError:
            probe = {}
    cases, findings = _campaign(args.run) if args.check != "skipped" else (None, None)
    rec = {"release": args.release, "build": args.build, "check": args.check,
           "family": probe.get("family"), "found": probe.get("found"),
           "features_found": probe.get("features_found"),
           "probe_cause": probe.get("cause"), "probe_advice": probe.get("advice"),
           "cases": cases, "findings": findings, "seconds": args.seconds}
    with open(args.file, "w", encoding="utf-8") as f:
        json.dump(rec, f, indent=1, sort_keys=True)
    return 0


def load(dirname: str) -> list[dict]:
    recs = []
    for path in glob.glob(os.path.join(dirname, "*.json")):
        rec = json.load(open(path, encoding="utf-8"))
        if isinstance(rec, dict) and "release" in rec and "build" in rec:
            recs.append(rec)
    return sorted(recs, key=lambda r: release_key(r["release"]))


def table(recs: list[dict]) -> str:
    def cell(x):
        return "-" if x is None else str(x)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in recs:
        build = r["build"] if r["build"] != "probe-failed" else (
            f"probe failed: {r.get('probe_cause') or '?'}")
        lines.append("| " + " | ".join(cell(x) for x in (
            r["release"], build, r.get("family"), r["check"], r.get("cases"), r.get("findings"),
            r.get("seconds"))) + " |")
    return "\n".join(lines)


def detected_module(recs: list[dict]) -> str:
    """The text of ``detected.json``: the recorded detections merged over the current ones;
    the core's inspection rows only (a feature's rows name the feature: they stay in the
    records and the table, not in core code)."""
    found = dict(detected.DETECTED)
    own = {k for r in recs for k in (r.get("features_found") or {})}
    for r in recs:
        if r.get("family"):
            found[r["release"]] = {"family": r["family"], "check": r["check"], "found": {
                k: v for k, v in (r.get("found") or {}).items() if k not in own}}
        elif r["build"] == "probe-failed":
            found[r["release"]] = {"family": None, "found": {}, "check": "skipped",
                                   "cause": r.get("probe_cause") or ""}
    ordered = dict(sorted(found.items(), key=lambda kv: release_key(kv[0])))
    return json.dumps(ordered, indent=1) + "\n"


BEGIN, END = "<!-- release-matrix:begin -->", "<!-- release-matrix:end -->"


def status(recs: list[dict], path: str, check: bool) -> int:
    """Put the table between ``path``'s release-matrix markers (``check``: only compare; 1
    when they differ, so a hand edit or a stale table is caught). 2: no markers."""
    text = open(path, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        print(f"error: {path}: no {BEGIN} / {END} markers", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{table(recs)}\n{END}{tail}"
    if check:
        if new != text:
            print(f"{path}: the release matrix table differs from the records", file=sys.stderr)
            return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m swafuzz.targets.sglang.releases")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("file")
    for name in ("--release", "--build", "--check", "--probe", "--run"):
        r.add_argument(name, required=True)
    r.add_argument("--seconds", type=int, required=True)
    for name in ("table", "detected", "status"):
        sub.add_parser(name).add_argument("dir")
    st = sub.choices["status"]
    st.add_argument("file", help="the Markdown file whose release-matrix markers hold the table")
    st.add_argument("--check", action="store_true", help="compare only (exit 1 when it differs)")
    args = p.parse_args(argv)
    if args.cmd == "record":
        return record(args)
    if not os.path.isdir(args.dir):
        print(f"error: {args.dir}: no such directory of matrix records", file=sys.stderr)
        return 2
    recs = load(args.dir)
    if args.cmd == "status":
        return status(recs, args.file, args.check)
    print(table(recs) if args.cmd == "table" else detected_module(recs), end="\n"
          if args.cmd == "table" else "")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
