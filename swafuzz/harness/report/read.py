"""``swafuzz report DIR``: ``summary.md``, ``junit.xml`` and ``summary.html`` for a run directory.

Reads DIR's ``run.json``, ``cases.jsonl``, ``findings/*.json`` and ``kill-matrix.md``
(:mod:`swafuzz.harness.report.inputs`), groups findings by signature (:mod:`swafuzz.reports.dedup`)
and draws each group's pools (:mod:`swafuzz.harness.report.findings`). ``--reruns N`` replays each
group's smallest Case N times in an isolated worker; ``--baseline PREV_DIR`` splits findings into
new / known / fixed. With a ledger (``--ledger FILE``, default the repository's; ``--no-ledger``)
a group is *known by the ledger* when every failing Case of it (bundles and failing log rows)
matches an entry, signature AND ``when``: ``known (ledger: ID; server: ...)`` in summary.md, a
``<skipped>`` test case in junit.xml. The CLI exits 1 only when some group is not known by the
ledger. The renderers in ``reports/`` only format what :func:`build` returns.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from swafuzz.harness.ledger.entries import LedgerError, imprecise, load_ledger, server_text
from swafuzz.harness.ledger.known import KNOWN_SHRINK_BUDGET
from swafuzz.harness.report.findings import ledger_status, measure_reliability, pool_picture
from swafuzz.harness.report.inputs import ReportInputError, read_bundles, read_json, read_log
from swafuzz.reports import dedup
from swafuzz.reports.bundle import atomic_write_text
from swafuzz.reports.details import view
from swafuzz.reports.html import render as render_html
from swafuzz.reports.junit import render as render_junit
from swafuzz.reports.summary import report_markdown

# ReportInputError: what build raises (from report_inputs), for the CLI
__all__ = ["MD_LIMIT", "ReportInputError", "build"]

MD_LIMIT = 1024 * 1024 - 4096


def build(d: str, baseline: str | None = None, reruns: int = 0, ledger: str | None = None,
          release: str | None = None) -> dict[str, Any]:
    """Write DIR/summary.md, DIR/junit.xml, DIR/summary.html; return what was found.
    ``ledger``: a ledger file to classify findings with (None: no ledger); ``release``: the
    target version its entries are checked against (default: the run's recorded version)."""
    entries: list = []
    ledger_warnings: list[str] = []
    if ledger is not None:
        try:
            entries = load_ledger(ledger)
        except LedgerError as e:
            raise ReportInputError(f"--ledger: {e}") from None
        ledger_warnings = imprecise(entries)
    if baseline is not None and not os.path.isdir(baseline):
        raise ReportInputError(f"--baseline: {baseline!r} is not a directory")
    if not os.path.isdir(d):
        raise ReportInputError(f"DIR: {d!r} is not a directory written by 'swafuzz run'")
    if not os.access(d, os.W_OK | os.X_OK):
        raise ReportInputError(f"DIR: cannot write the reports into {d!r} (permission denied)")
    meta_path = os.path.join(d, "run.json")
    meta = read_json(meta_path) if os.path.exists(meta_path) else {}
    if not isinstance(meta, dict):
        raise ReportInputError(f"{meta_path}: must be a JSON object")
    rows = read_log(os.path.join(d, "cases.jsonl"))
    unit_rows = read_log(os.path.join(d, "cases.jsonl"), events=True)
    bundles = read_bundles(d)
    if not rows and not bundles and not meta and not os.path.exists(
            os.path.join(d, "kill-matrix.md")):
        raise ReportInputError(f"DIR: {d!r} holds no run.json, cases.jsonl, findings/ or "
                               "kill-matrix.md: not a directory written by 'swafuzz run' or "
                               "'swafuzz zoo'")
    base_sigs = None
    if baseline is not None:
        base_sigs = [g.signature for g in dedup.group(read_log(os.path.join(baseline,
                                                                              "cases.jsonl")),
                                                      read_bundles(baseline))]
    groups = dedup.group(rows, bundles)
    if reruns > 0:
        measure_reliability(groups, reruns, meta.get("target") or "unified")
    status = dedup.classify([g.signature for g in groups], base_sigs)
    vers = meta.get("versions") or (bundles[0][1].get("versions") if bundles else None) or {}
    server_of = {e.id: server_text(e.server) for e in entries if e.server is not None}
    led = ledger_status(groups, rows, bundles, entries, meta.get("target") or "unified", vers,
                        release, meta.get("executor") if isinstance(meta.get("executor"), str)
                        else None)
    known_by_ledger = [s for s in sorted(led) if led[s]["cases"] and not led[s]["outside"]]
    for s in known_by_ledger:  # the ledger wins over a missing baseline
        if s in status["new"]:
            status["new"].remove(s)
            status["known"] = sorted(status["known"] + [s])
    st_of = {s: k for k, sigs in status.items() for s in sigs}

    kinds: dict[str, dict[str, int]] = {}
    for r in rows:
        k = kinds.setdefault(r.get("kind") or "?", {"cases": 0, "shrinking": 0, "failing": 0,
                                                    "checks": 0})
        k["cases"] += 1
        k["shrinking"] += 1 if r.get("phase") == "shrink" else 0
        k["failing"] += 1 if r.get("failed") else 0
        k["checks"] += int(r.get("checks") or 0)
    km_path = os.path.join(d, "kill-matrix.md")
    kill_md = open(km_path).read() if os.path.exists(km_path) else None
    if kill_md:  # the zoo wrote its repro paths as given: relative to the run directory here
        kill_md = re.sub(r"swafuzz repro \S*?findings/([^\s/|`]+\.json)",
                         lambda m: ("swafuzz repro findings/" + m.group(1))
                         if os.path.isfile(os.path.join(d, "findings", m.group(1)))
                         else m.group(0), kill_md)

    info = {
        "commit": meta.get("commit") or "unknown (no run.json)",
        "versions": ", ".join(f"{k} {v}" for k, v in sorted(vers.items()) if k != "device")
        or "unknown",
        "device": vers.get("device", "unknown"),
        "target": meta.get("target", "?"),
        "budget": _budget_line(meta, rows),
        "ledger": (f"{ledger} ({len(entries)} entries, {len(ledger_warnings)} warnings); "
                   f"{len(known_by_ledger)} finding signatures known by it")
        if ledger is not None else "not consulted (--no-ledger)",
        "ledger_warnings": ledger_warnings,
        "shrinking": _shrink_line(rows, unit_rows),
        "repro_note": "repro commands are relative to the run directory (the folder that "
                      "holds this report): run them from there",
    }
    findings = []
    for g in groups:
        views = []
        for path, bb in g.bundles:  # every bundle of the signature, each with its own Case
            v = view(os.path.relpath(path, d).replace(os.sep, "/"), bb,
                     led[g.signature]["bundles"].get(path, []))
            v["picture"], v["why"] = (pool_picture(bb["case"], bb.get("observed"))
                                      if isinstance(bb.get("case"), dict)
                                      else (None, "no Case recorded"))
            views.append(v)
        pic, why = (None, "no Case recorded" if not views else "")
        if not views and g.case:  # log-only (met while shrinking another): its smallest row
            ver = g.case_verdict or {}
            fails = ver.get("failures") if isinstance(ver.get("failures"), list) else []
            g.message = g.message or next((x.get("message") for x in fails
                                           if isinstance(x, dict)), "") or ""
            v = view(f"case #{g.case_row} of cases.jsonl", {"case": g.case, "message": g.message,
                                                           "failures": fails}, [])
            v["repro"] = None
            v["picture"], v["why"] = pool_picture(g.case, ver.get("observed"))
            views.append(v)
        smallest = next((v for v in views if g.bundle_path and v["path"] == os.path.relpath(
            g.bundle_path, d).replace(os.sep, "/")), None)
        findings.append({
            "signature": g.signature, "status": st_of.get(g.signature, "new"),
            "message": g.message or "", "count": g.count,
            "first_seen": g.first_seen, "last_seen": g.last_seen,
            "first_time": g.first_time, "last_time": g.last_time,
            "reliability": f"{g.reliability[0]}/{g.reliability[1]} reruns failed"
            if g.reliability else None,
            "shrunk": g.to_json()["shrunk"], "repro": smallest["repro"] if smallest else None,
            "bundles": views, "target": (g.bundle or {}).get("target") or info["target"],
            "picture": pic, "why": why,
            "ledger": [{"id": i, "cite": c, "server": server_of.get(i, "")}
                       for i, c in led[g.signature]["entries"]]
            if g.signature in known_by_ledger else [],
            "ledger_outside": (f"{led[g.signature]['outside']} of {led[g.signature]['cases']} "
                               "failing Cases match no ledger entry (signature and 'when')")
            if led[g.signature]["entries"] and g.signature not in known_by_ledger else None})
    # [kind, cases run, of which shrinking, failing, checks run]
    kind_rows = [[k, v["cases"], v["shrinking"], v["failing"], v["checks"]]
                 for k, v in sorted(kinds.items())]

    md = report_markdown(info, kind_rows, findings, status, kill_md, limit=MD_LIMIT)
    if os.path.exists(os.path.join(d, "coverage.md")):  # run --coverage (harness.pipeline.coverage)
        with open(os.path.join(d, "coverage.md")) as f:
            md = md.rstrip("\n") + "\n\n" + f.read()
    atomic_write_text(os.path.join(d, "summary.md"), md)
    atomic_write_text(os.path.join(d, "junit.xml"),
                      render_junit(kind_rows, findings, status, info))
    title = f"swafuzz report: {os.path.basename(os.path.abspath(d))}"
    meta_rows = [("commit", info["commit"]), ("versions", info["versions"]),
                 ("device", info["device"]), ("target", info["target"]),
                 ("budget used", info["budget"]), ("shrinking", info["shrinking"]),
                 ("findings", f"{len(status['new'])} new, {len(status['known'])} known, "
                              f"{len(status['fixed'])} fixed")]
    atomic_write_text(os.path.join(d, "summary.html"),
                      render_html(title, meta_rows, kind_rows, findings, kill_md))
    return {"findings": len(groups), "status": status, "ledger_known": known_by_ledger,
            "ledger_warnings": ledger_warnings,
            "ledger_entries": {s: [i for i, _ in led[s]["entries"]] for s in known_by_ledger},
            "paths": [os.path.join(d, n) for n in ("summary.md", "junit.xml", "summary.html")]}


def _shrink_line(rows: list[dict[str, Any]], unit_rows: list[dict[str, Any]]) -> str:
    """How many cases went to shrinking, and how many of those to ledger-known findings (the
    unit rows' ``shrunk_known``: cases per entry, each capped by the campaign)."""
    if unit_rows:
        shrunk = sum(int(r.get("shrunk") or 0) for r in unit_rows)
    else:
        shrunk = sum(1 for r in rows if r.get("phase") == "shrink")
    known: dict[str, int] = {}
    for r in unit_rows:
        for eid, n in (r.get("shrunk_known") or {}).items():
            known[eid] = known.get(eid, 0) + int(n)
    text = f"{shrunk} cases"
    if known:
        text += (f", {sum(known.values())} of them on ledger-known findings ("
                 + ", ".join(f"{e} {n}" for e, n in sorted(known.items()))
                 + f"; each entry's first Case in a unit is shrunk with at most "
                   f"{KNOWN_SHRINK_BUDGET} cases)")
    return text


def _budget_line(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    secs = sum(float(r.get("seconds") or 0) for r in rows)
    parts = [f"{len(rows)} cases logged" if rows else "no case log"]
    if isinstance(meta.get("budget"), dict):  # zoo
        bz = meta["budget"]
        parts.append(f"zoo budget {bz.get('name')}: {bz.get('examples')} cases x "
                     f"{bz.get('seeds')} seeds per mutant")
    if meta.get("examples") is not None:
        parts.append(f"--examples {meta['examples']}")
    if meta.get("seconds") is not None:
        parts.append(f"{meta['seconds']:.1f} s wall")
    else:
        parts.append(f"{secs:.1f} s in cases")
    if meta.get("forward_steps") is not None:
        parts.append(f"{meta['forward_steps']} forward steps checked")
    if meta.get("started"):
        parts.append("started " + time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                 time.gmtime(meta["started"])))
    return ", ".join(parts)
