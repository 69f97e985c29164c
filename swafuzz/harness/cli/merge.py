"""``swafuzz merge DIR... --out DIR``: the shards of one run (``swafuzz run --shard I/N``) joined
into one run directory (:mod:`swafuzz.harness.fleet.merge`), with the reports of ``swafuzz report``
(summary.md, junit.xml, summary.html; the known-failure ledger applied) written into it.

Exit codes as ``swafuzz report``: 0 no finding the ledger does not know, 1 findings, 2 inputs
that are not the shards of one run (one line naming the directory or flag; nothing written).
"""

from __future__ import annotations

import sys

from swafuzz.harness.cli.common import UsageError, print_report
from swafuzz.harness.fleet import merge
from swafuzz.harness.fleet.merge_server import merged_server_report
from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, LedgerError, load_ledger
from swafuzz.harness.pipeline import level
from swafuzz.harness.report import read as report


def cmd_merge(args) -> int:
    ledger = None if args.no_ledger else args.ledger or DEFAULT_LEDGER
    if ledger is not None:
        try:  # before anything is written
            load_ledger(ledger)
        except LedgerError as e:
            raise UsageError(f"--ledger: {e} (or --no-ledger)") from None

    def finish(out: str):
        if level.of_file(out) == "server":  # its run.json and reports as the run writes them
            return merged_server_report(out)
        return report.build(out, ledger=ledger)

    try:
        res = merge.merge(args.dirs, args.out, partial=args.partial, finish=finish)
    except (merge.MergeError, report.ReportInputError) as e:
        raise UsageError(str(e)) from None
    for w in res["warnings"]:
        print(f"merge: warning: {w}", file=sys.stderr)
    for what in ("missing_shards", "missing_units"):
        if res[what]:
            print(f"merge: warning (--partial): {what.replace('_', ' ')}: "
                  f"{', '.join(res[what])}", file=sys.stderr)
    runs = res["runs"]
    cases = sum(1 for r in runs for x in r.rows if "case" in x)
    units = sum(1 for r in runs for x in r.rows if x.get("event") == "unit_done")
    print(f"merged {len(runs)} run directories ({', '.join(r.label for r in runs)}): {units} of "
          f"{len(res['plan'])} units, {cases} cases, {len(res['bundles'])} bundles")
    code = res["result"] if isinstance(res["result"], int) else print_report(res["result"])
    print(f"results: {args.out} (swafuzz report {args.out})")
    return code
