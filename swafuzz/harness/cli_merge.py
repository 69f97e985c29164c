"""``swafuzz merge DIR... --out DIR``: the shards of one run (``swafuzz run --shard I/N``) joined
into one run directory (:mod:`swafuzz.harness.merge`), with the reports of ``swafuzz report``
(summary.md, junit.xml, summary.html; the known-failure ledger applied) written into it.

Exit codes as ``swafuzz report``: 0 no finding the ledger does not know, 1 findings, 2 inputs
that are not the shards of one run (one line naming the directory or flag; nothing written).
"""

from __future__ import annotations

import sys

from swafuzz.harness import merge, report
from swafuzz.harness.cli_common import EXIT_CLEAN, EXIT_FINDINGS, UsageError
from swafuzz.harness.ledger import DEFAULT_LEDGER, LedgerError, load_ledger


def cmd_merge(args) -> int:
    ledger = None if args.no_ledger else args.ledger or DEFAULT_LEDGER
    if ledger is not None:
        try:  # before anything is written
            load_ledger(ledger)
        except LedgerError as e:
            raise UsageError(f"--ledger: {e} (or --no-ledger)") from None

    def finish(out: str):
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
    rep = res["result"]
    st = rep["status"]
    for w in rep["ledger_warnings"]:
        print(f"ledger: warning: {w}", file=sys.stderr)
    print(f"{rep['findings']} findings by signature: {len(st['new'])} new, "
          f"{len(st['known'])} known, {len(st['fixed'])} fixed")
    for s in st["new"] + st["known"]:
        led = rep["ledger_entries"].get(s)
        print(f"  {'NEW  ' if s in st['new'] else 'known'} {s}"
              + (f" (ledger: {', '.join(led)})" if led else ""))
    for p in rep["paths"]:
        print(f"wrote {p}")
    print(f"results: {args.out} (swafuzz report {args.out})")
    return EXIT_FINDINGS if rep["findings"] > len(rep["ledger_known"]) else EXIT_CLEAN
