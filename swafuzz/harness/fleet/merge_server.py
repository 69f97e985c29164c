"""``swafuzz merge`` of a server-level run's shards (``swafuzz run --level server --shard I/N``):
once :mod:`swafuzz.harness.fleet.merge` has joined the case logs and bundles, ``run.json``'s
server-level results (per kind, cases, findings) from every shard's unit rows and the reports
(summary.md, junit.xml) as the run itself writes them."""

from __future__ import annotations

import json
import os
import sys

from swafuzz.harness.cli.common import EXIT_CLEAN, EXIT_FINDINGS
from swafuzz.harness.pipeline.caselog import read_log
from swafuzz.harness.pipeline.runconfig import RunConfig
from swafuzz.reports.bundle import atomic_write_json
from swafuzz.reports.junit import write_server_reports
from swafuzz.reports.summary import server_kinds


def merged_server_report(out: str) -> int:
    """Complete the merged server-level directory ``out``; the exit code (1: findings)."""
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        meta = json.load(f)
    cfg = RunConfig.from_json(meta["config"])
    rows = [r for r in read_log(os.path.join(out, "cases.jsonl"))
            if r.get("event") == "unit_done"]
    per_kind, findings = server_kinds(cfg.kinds, rows)
    total = sum(k["cases"] for k in per_kind.values())
    meta.update({"kinds": per_kind, "cases": total,
                 "findings": [r["bundle"] for r in findings if r.get("bundle")]})
    atomic_write_json(os.path.join(out, "run.json"), meta)
    write_server_reports(out)
    for r in findings:
        print(f"FINDING {r['finding']} ({r['kind']}): {r.get('message')}", file=sys.stderr)
    print(f"server-level run (merged): {total} cases, {len(findings)} new findings")
    return EXIT_FINDINGS if findings else EXIT_CLEAN
