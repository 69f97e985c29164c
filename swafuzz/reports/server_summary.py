"""``summary.md`` and ``junit.xml`` of a server-level run directory (``swafuzz run --level
server``, :mod:`swafuzz.harness.server_campaign`), from its ``run.json`` and bundles.

``run.json`` (a dict): ``target``, ``versions``, ``seed``, ``executors``, ``server_mutant``,
``cases``, ``seconds``, ``kinds`` (kind -> ``{"cases", "seconds", "stopped_out_of_scope",
"finding"}``, and ``known``: entry id -> Cases), ``findings`` (bundle paths relative to the run
directory: the new findings) and ``known`` (ledger entry id -> ``{"signature", "cases",
"bundle"}``: failures the ledger knows, not failures of the run). Each bundle: its
``signature``, ``case`` (a ServerCase as JSON: ``config``, ``requests``) and ``failures``
(``{"check", "message"}``). One ``<testcase>`` per kind (passing, with its counts), one per new
finding (``<failure type="new">`` with the Case's size, every failing check and the repro line,
relative to the run directory) and one per known entry (passing, ``known`` with the entry id in
its name and output). Plain Python: no torch, no SGLang.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from typing import Any

__all__ = ["render_junit", "render_markdown", "write_server_reports"]


def _clean(text: Any) -> str:
    return "".join(c for c in str(text) if c in "\t\n\r" or ord(c) >= 0x20)


def _finding_lines(rel: str, bundle: dict[str, Any]) -> list[str]:
    case = bundle.get("case") or {}
    reqs = case.get("requests") or []
    lines = [f"bundle {rel}: {len(reqs)} request(s), config "
             + json.dumps(case.get("config") or {}, sort_keys=True),
             f"  repro: swafuzz repro {rel}  (from the run directory)"]
    lines += [f"  {f.get('check')}: {f.get('message')}" for f in bundle.get("failures") or []]
    return lines


def render_markdown(run: dict[str, Any], bundles: dict[str, dict[str, Any]]) -> str:
    head = (f"# swafuzz server-level run: {run.get('target')} "
            f"({', '.join(f'{k} {v}' for k, v in sorted((run.get('versions') or {}).items()))})"
            f"\n\n{run.get('cases')} cases in {run.get('seconds')} s, seed {run.get('seed')}, "
            f"executors {', '.join(run.get('executors') or [])}"
            + (f", server mutant {run['server_mutant']}" if run.get("server_mutant") else "")
            + f"; {len(bundles)} new finding(s), {len(run.get('known') or {})} known ledger "
            "entr(y/ies).\n\n| kind | cases | seconds | stopped out of scope "
            "| finding |\n|---|---:|---:|---:|---|\n")
    rows = "".join(f"| {k} | {v.get('cases')} | {v.get('seconds')} | "
                   f"{v.get('stopped_out_of_scope')} | {v.get('finding') or '-'} |\n"
                   for k, v in (run.get("kinds") or {}).items())
    body = "".join(f"\n## new: {b.get('signature')}\n\n```\n"
                   + "\n".join(_finding_lines(rel, b)) + "\n```\n" for rel, b in bundles.items())
    known = run.get("known") or {}
    if known:
        body += ("\n## known (ledger entries; not failures of this run)\n\n| ledger entry | "
                 "signature | cases | bundle |\n|---|---|---:|---|\n" + "".join(
                     f"| {eid} | {k.get('signature')} | {k.get('cases')} | "
                     f"{k.get('bundle') or '-'} |\n" for eid, k in sorted(known.items())))
    if not bundles:
        body = ("\nNo new findings.\n" + body) if known else "\nNo findings.\n"
    return head + rows + body


def render_junit(run: dict[str, Any], bundles: dict[str, dict[str, Any]]) -> str:
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
        fail.text = _clean("\n".join(_finding_lines(rel, b)))
    for eid, k in sorted((run.get("known") or {}).items()):
        tc = ET.SubElement(suite, "testcase", classname="swafuzz.server.known",
                           name=f"known.{eid}")
        ET.SubElement(tc, "system-out").text = _clean(
            f"known: ledger entry {eid}, {k.get('signature')}, {k.get('cases')} cases"
            + (f"; repro: swafuzz repro {k['bundle']}" if k.get("bundle") else ""))
    return ET.tostring(suite, encoding="unicode") + "\n"


def write_server_reports(out: str, write=None) -> None:
    """Write ``OUT/summary.md`` and ``OUT/junit.xml`` from ``OUT/run.json`` and its bundles
    (``write(path, text)``: an atomic writer; default a plain one)."""
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        run = json.load(f)
    bundles = {}
    for rel in run.get("findings") or []:
        with open(os.path.join(out, rel), encoding="utf-8") as f:
            bundles[rel] = json.load(f)
    write = write or _plain_write
    write(os.path.join(out, "summary.md"), render_markdown(run, bundles))
    write(os.path.join(out, "junit.xml"), render_junit(run, bundles))


def _plain_write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
