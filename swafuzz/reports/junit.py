"""``junit.xml`` for CI: a passing ``<testcase>`` per scenario kind that ran (``campaign.<kind>``,
its case count) and one per finding signature (``finding.<signature>``, stable night to night):
a ``<failure>`` of type ``new`` or ``known``; passing when fixed since the baseline;
``<skipped>`` when known by the ledger (message ``known: ledger entry ID (CITE)``, a
``ledger_entry`` property per entry). :func:`write_server_reports`: a server-level run's
``summary.md`` and ``junit.xml`` from its ``run.json`` (``kinds``, ``findings``: new findings'
bundles relative to the run directory, ``known``: entry id -> ``{"signature", "cases",
"bundle"}``) and bundles.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from typing import Any

from swafuzz.reports.bundle import atomic_write_text
from swafuzz.reports.details import repro_text
from swafuzz.reports.summary import server_finding_lines, server_markdown, shrunk_text


def _clean(text: Any) -> str:
    """XML 1.0 allows no control characters but tab, newline and carriage return."""
    return "".join(c for c in str(text) if c in "\t\n\r" or ord(c) >= 0x20)


def _bundle_lines(f: dict[str, Any]) -> list[str]:
    """Per bundle of the finding: its path, Case, repro line (relative to the run directory)
    and every failing check it recorded."""
    out = []
    for v in f.get("bundles") or []:
        out.append(f"{'bundle' if v.get('repro') else 'no bundle, logged:'} {v['path']}"
                   + (f" (ledger: {', '.join(v['ledger'])})"
                                            if v.get("ledger") else "")
                   + f": Case {shrunk_text(v['shrunk'])}")
        out.append(f"  repro: {repro_text(v)}")
        out += [f"  {t}" for t in v["failures"]]
    return out


def render(kinds: list[list[Any]], findings: list[dict[str, Any]],
           status: dict[str, list[str]], info: dict[str, Any]) -> str:
    skipped = sum(1 for f in findings if f.get("ledger"))
    failures = sum(1 for f in findings if f.get("status") in ("new", "known")
                   and not f.get("ledger"))
    tests = len(kinds) + len(findings) + len(status.get("fixed", []))
    suite = ET.Element("testsuite", name="swafuzz", tests=str(tests), failures=str(failures),
                       errors="0", skipped=str(skipped))
    props = ET.SubElement(suite, "properties")
    for k in ("commit", "versions", "device", "target", "budget"):
        ET.SubElement(props, "property", name=k, value=_clean(info.get(k, "")))
    for kind, cases, shrinking, failing, checks in kinds:
        tc = ET.SubElement(suite, "testcase", classname="swafuzz.campaign", name=f"campaign.{kind}")
        out = ET.SubElement(tc, "system-out")
        out.text = _clean(f"{cases} cases ({shrinking} shrinking), {failing} failing, "
                          f"{checks} checks run")
    for f in findings:
        tc = ET.SubElement(suite, "testcase", classname="swafuzz.finding",
                           name=f"finding.{f['signature']}")
        if f.get("ledger"):  # known by the ledger: reported, not a failure
            tp = ET.SubElement(tc, "properties")
            for e in f["ledger"]:
                ET.SubElement(tp, "property", name="ledger_entry", value=_clean(e["id"]))
            sk = ET.SubElement(tc, "skipped", message=_clean(
                "known: " + "; ".join(f"ledger entry {e['id']} ({e['cite']})"
                                      for e in f["ledger"])))
            sk.text = _clean("\n".join([f.get("message") or ""] + _bundle_lines(f)))
            continue
        msg = (f.get("message") or f["signature"]).splitlines()[0][:500]
        fail = ET.SubElement(tc, "failure", type=f.get("status", "new"), message=_clean(msg))
        fail.text = _clean("\n".join(x for x in [
            f.get("message") or "",
            f"seen {f.get('count')} times (cases {f.get('first_seen')}..{f.get('last_seen')}); "
            f"smallest Case {shrunk_text(f.get('shrunk'))}",
            f"reliability: {f.get('reliability') or 'not measured'}",
            f"ledger: {f['ledger_outside']}" if f.get("ledger_outside") else "",
            *(_bundle_lines(f) or [f"repro: {f.get('repro') or '-'}"])] if x))
    for sig in status.get("fixed", []):
        tc = ET.SubElement(suite, "testcase", classname="swafuzz.finding", name=f"finding.{sig}")
        out = ET.SubElement(tc, "system-out")
        out.text = _clean("fixed: in the baseline, not seen in this run")
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def server_junit(run: dict[str, Any], bundles: dict[str, dict[str, Any]]) -> str:
    """``junit.xml`` of a server-level run: one ``<testcase>`` per kind (passing, with its
    counts), one per new finding (``<failure type="new">`` with the Case's size, every failing
    check and the repro line, relative to the run directory), one per known ledger entry."""
    kinds = run.get("kinds") or {}
    suite = ET.Element("testsuite", name="swafuzz.server", tests=str(len(kinds) + len(bundles)
                                                           + len(run.get("known") or {})),
                       failures=str(len(bundles)), errors="0", skipped="0")
    props = ET.SubElement(suite, "properties")
    for k in ("target", "versions", "seed", "server_mutant"):
        ET.SubElement(props, "property", name=k, value=_clean(run.get(k, "")))
    for kind, v in kinds.items():
        tc = ET.SubElement(suite, "testcase", classname="swafuzz.server.campaign",
                           name=f"campaign.{kind}")
        ET.SubElement(tc, "system-out").text = _clean(
            f"{v.get('cases')} cases, {v.get('stopped_out_of_scope')} stopped out of scope, "
            f"{v.get('seconds')} s")
    for rel, b in bundles.items():
        tc = ET.SubElement(suite, "testcase", classname="swafuzz.server.finding",
                           name=f"finding.{b.get('signature')}")
        first = (b.get("failures") or [{}])[0]
        fail = ET.SubElement(tc, "failure", type="new",
                             message=_clean(f"{first.get('check')}: {first.get('message')}"))
        fail.text = _clean("\n".join(server_finding_lines(rel, b)))
    for eid, k in sorted((run.get("known") or {}).items()):
        tc = ET.SubElement(suite, "testcase", classname="swafuzz.server.known",
                           name=f"known.{eid}")
        ET.SubElement(tc, "system-out").text = _clean(
            f"known: ledger entry {eid}, {k.get('signature')}, {k.get('cases')} cases"
            + (f"; repro: swafuzz repro {k['bundle']}" if k.get("bundle") else ""))
    return ET.tostring(suite, encoding="unicode") + "\n"


def write_server_reports(out: str) -> None:
    """Write ``OUT/summary.md`` and ``OUT/junit.xml`` from ``OUT/run.json`` and its bundles."""
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        run = json.load(f)
    bundles = {}
    for rel in run.get("findings") or []:
        with open(os.path.join(out, rel), encoding="utf-8") as f:
            bundles[rel] = json.load(f)
    atomic_write_text(os.path.join(out, "summary.md"), server_markdown(run, bundles))
    atomic_write_text(os.path.join(out, "junit.xml"), server_junit(run, bundles))
