"""``swafuzz`` (also ``python -m swafuzz``): run, zoo, repro, list, report, bench.

Exit codes: 0 clean, 1 findings, 2 usage or input error (with a message naming the field and the
allowed values, and nothing written), 3 tool failure (one line on stderr, the traceback in
``swafuzz-error-<pid>.log`` under the output directory or the temp directory), 130 interrupted
(Ctrl-C / SIGTERM; ``run`` prints its table and how to ``--resume``).

This module holds the parser, ``main`` and the small commands; ``run`` and ``repro`` are in
:mod:`swafuzz.harness.cli_run`, the shared checks in :mod:`swafuzz.harness.cli_common`, the
listings in :mod:`swafuzz.harness.listing`.
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys

from swafuzz import __version__, targets
from swafuzz.harness import listing
from swafuzz.harness.cli_common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_TOOL,
    EXIT_USAGE,
    UsageError,
    check_choice,
    load_plugins,
    positive,
    target_names,
)
from swafuzz.harness.cli_run import cmd_repro, cmd_run
from swafuzz.harness.corpus import DB_HELP
from swafuzz.harness.failures import check_out_dir, check_out_file, report_tool_failure
from swafuzz.harness.ledger import DEFAULT_LEDGER
from swafuzz.kernels import IMPLS, available_impls

__all__ = ["EXIT_CLEAN", "EXIT_FINDINGS", "EXIT_TOOL", "EXIT_USAGE", "UsageError", "build_parser",
           "main", "cmd_run", "cmd_repro", "cmd_list", "cmd_report", "cmd_zoo", "cmd_bench"]


def _prepare_env() -> None:
    import torch  # here, not above: keeps torch out of the CLI's start (--help, usage errors)

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


# --------------------------------------------------------------------------- list
def cmd_list(args) -> int:
    if args.json and not args.features:
        raise UsageError("--json: only with --features (the feature table as JSON)")
    if args.target is not None and args.features:  # --features used to be ignored here
        raise UsageError("--features: not with --target (the feature table has a column per "
                         "target; --target T prints T's description)")
    if args.target is not None:
        check_choice("--target", args.target, target_names())
        print(targets.describe(args.target))
        return EXIT_CLEAN
    if args.features:
        data = listing.feature_rows()
        print(listing.features_json(data) if args.json else listing.features_text(data))
        return EXIT_CLEAN
    print(listing.summary_text())
    return EXIT_CLEAN


# --------------------------------------------------------------------------- report
def cmd_report(args) -> int:
    # here, not above: with the report's modules loaded at the CLI's start, a resumed run draws
    # other Cases than a fresh one (test_pipeline's kill -9 test): generation depends on process
    # state somewhere (import order / memory layout); cause not found yet
    from swafuzz.harness import report

    if args.reruns < 0:
        raise UsageError(f"--reruns: must be >= 0 (got {args.reruns})")
    try:
        res = report.build(args.dir, baseline=args.baseline, reruns=args.reruns,
                    ledger=None if args.no_ledger else args.ledger, release=args.release)
    except report.ReportInputError as e:
        raise UsageError(str(e)) from None
    st = res["status"]
    for w in res["ledger_warnings"]:
        print(f"ledger: warning: {w}", file=sys.stderr)
    print(f"{res['findings']} findings by signature: {len(st['new'])} new, "
          f"{len(st['known'])} known, {len(st['fixed'])} fixed")
    for s in st["new"] + st["known"]:
        led = res["ledger_entries"].get(s)
        print(f"  {'NEW  ' if s in st['new'] else 'known'} {s}"
              + (f" (ledger: {', '.join(led)})" if led else ""))
    for p in res["paths"]:
        print(f"wrote {p}")
    # known by the ledger: not a failure; a baseline-known finding still is (as before)
    return EXIT_FINDINGS if res["findings"] > len(res["ledger_known"]) else EXIT_CLEAN


# --------------------------------------------------------------------------- zoo / bench
def cmd_zoo(args) -> int:
    from swafuzz.harness.zoo import run_zoo  # the campaign (hypothesis): not at the CLI's start

    check_choice("--budget", args.budget, ("full", "ci"))
    for name in ("examples", "seeds", "jobs"):
        v = getattr(args, name)
        if v is not None:
            positive(f"--{name}", v)
    if args.budget == "ci":
        given = [f for f, v in (("--examples", args.examples), ("--seeds", args.seeds))
                 if v is not None]
        if given:
            raise UsageError(f"{given[0]}: not allowed with --budget ci (its budget is fixed: 2 "
                             "seeds, 60 cases); use --budget full with --examples and --seeds")
    args.examples = 200 if args.examples is None else args.examples
    args.seeds = 5 if args.seeds is None else args.seeds
    bad = (args.json and check_out_file("--json", args.json)) or check_out_dir("--out", args.out)
    if bad:
        raise UsageError(bad)
    return run_zoo(args)


def cmd_bench(args) -> int:
    rest = [a for a in args.rest if a != "--"]
    module = "swafuzz.bench.kernels"
    if rest[:1] == ["harness"]:  # swafuzz bench harness [...]: campaign throughput, 1 vs N workers
        module, rest = "swafuzz.bench.harness", rest[1:]
    if module.endswith(".kernels") and "--impls" in rest and rest.index("--impls") + 1 < len(rest):
        for name in rest[rest.index("--impls") + 1].split(","):
            check_choice("--impls", name, IMPLS)
            if name not in available_impls():
                raise UsageError(f"--impls: {name!r} is not available on this machine; "
                                 f"available: {', '.join(available_impls())}")
    sys.argv = ["swafuzz bench"] + rest
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        return int(e.code or 0)
    return EXIT_CLEAN


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where there is none (None, or a flag's False)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or not action.help:
            return action.help or ""
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    fmt = _HelpFormatter
    p = argparse.ArgumentParser(prog="swafuzz", description=__doc__.splitlines()[0],
                                formatter_class=fmt)
    p.add_argument("--version", action="version", version=f"swafuzz {__version__}")
    plug = argparse.ArgumentParser(add_help=False)
    plug.add_argument("--plugin", action="append", metavar="MODULE",
                      help="import MODULE first; it registers targets (repeatable; also "
                           "SWAFUZZ_PLUGINS=mod1,mod2 and the 'swafuzz.targets' entry points)")
    sub = p.add_subparsers(dest="cmd", required=True)
    _add = sub.add_parser

    def _add_parser(*a, **k):  # every command: --plugin, and its defaults in --help
        k.setdefault("formatter_class", fmt)
        return _add(*a, parents=[plug], **k)

    sub.add_parser = _add_parser

    def common(sp, defaults=True, many=False):
        if many:
            sp.add_argument("--target", action="append", default=None,
                            help="target under test (swafuzz list); repeatable: one run over "
                                 "several targets, findings per target (default: unified)")
        else:
            sp.add_argument("--target", default="unified" if defaults else None,
                            help="target under test (swafuzz list)"
                            + ("" if defaults else "; default: the bundle's"))
        sp.add_argument("--impl", default="auto" if defaults else None,
                        help="torch | triton | cuda | auto (triton)")
        sp.add_argument("--executor", default="auto",
                        help="eager | tape | cudagraph | auto (eager + this machine's graphs) | all")

    r = sub.add_parser("run", formatter_class=fmt, help="fuzz a target: scenarios x checks")
    common(r, many=True)
    r.add_argument("--scenario", action="append", help="scenario kind (repeatable; default all)")
    r.add_argument("--examples", type=int, default=None,
                   help="generated cases in all, split over kinds and workers (default: 300; "
                        "with --budget: no cap)")
    r.add_argument("--budget", default=None,
                   help="wall-clock budget, e.g. 90s, 30m, 2h (no new case after it)")
    r.add_argument("--workers", type=int, default=1, help="unit processes running in parallel")
    r.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="run the units as Ray tasks on the cluster at ADDRESS (HOST:PORT or "
                        "auto; pip install 'swafuzz[ray]'; docs/FLEET.md)")
    r.add_argument("--seed", type=int, default=0, help="hypothesis seed (same seed, same Cases)")
    r.add_argument("--out", default=None,
                   help="a new or empty directory for the run (default: a new "
                        "swafuzz-out/run-<UTC time> each run)")
    r.add_argument("--resume", default=None, metavar="DIR",
                   help="continue the run in DIR (after Ctrl-C, SIGTERM or kill -9)")
    r.add_argument("--shrink-budget", type=int, default=150,
                   help="cases run to shrink each first failure")
    r.add_argument("--db", default=None, help=DB_HELP)
    r.add_argument("--no-isolate", action="store_true", help="run cases in this process")
    r.add_argument("--quiet", action="store_true", help="no progress on stderr")
    r.add_argument("--ledger", default="auto", metavar="PATH|auto|none",
                   help="known-failure ledger consulted during the run: a failing Case it knows "
                        "is counted, its entry's first Case shrunk into a .known bundle, and the "
                        "unit goes on; known findings do not fail the run. auto: the "
                        "repository's ledger when it has entries for the target and its release")
    r.add_argument("--known-cap", type=int, default=50,
                   help="Cases of one ledger entry per unit, then its region is skipped")
    r.set_defaults(fn=cmd_run)

    rp = sub.add_parser("repro", formatter_class=fmt, help="replay a finding bundle")
    rp.add_argument("file")
    common(rp, defaults=False)
    rp.add_argument("--no-isolate", action="store_true", help="run the case in this process")
    rp.set_defaults(fn=cmd_repro)

    ls = sub.add_parser("list", help="what is available here")
    ls.add_argument("--target", default=None,
                    help="details of one target (what its describe hook says)")
    ls.add_argument("--features", action="store_true",
                    help="every feature record: kinds, case fields, checks, mutants, and which "
                         "target (and release) runs it")
    ls.add_argument("--json", action="store_true", help="with --features: as JSON")
    ls.set_defaults(fn=cmd_list)

    rep = sub.add_parser("report", formatter_class=fmt, help="summarise a run directory")
    rep.add_argument("dir")
    rep.add_argument("--baseline", default=None,
                     help="a previous run directory: findings split into new / known / fixed")
    rep.add_argument("--reruns", type=int, default=0,
                     help="replay each finding's smallest Case N times (reliability k/N)")
    rep.add_argument("--ledger", default=DEFAULT_LEDGER,
                     help="known-failure ledger: findings it knows (signature and 'when') are "
                          "known, not failures")
    rep.add_argument("--no-ledger", action="store_true", help="do not consult a ledger")
    rep.add_argument("--release", default=None,
                     help="target version for the ledger (default: the run's recorded one)")
    rep.set_defaults(fn=cmd_report)

    z = sub.add_parser("zoo", formatter_class=fmt, help="run every mutant; print the kill matrix")
    z.add_argument("--examples", type=int, default=None,
                   help="case budget per mutant and seed (default: 200; --budget full only)")
    z.add_argument("--seeds", type=int, default=None,
                   help="seeds per mutant (default: 5; --budget full only)")
    z.add_argument("--json", default=None, help="write the kill matrix as JSON here")
    z.add_argument("--budget", default="full", help="full | ci (reduced, for the CI gate)")
    z.add_argument("--impl", default="auto", help="torch | triton | cuda | auto")
    z.add_argument("--executor", default="auto", help="eager | tape | cudagraph | auto | all")
    z.add_argument("--out", default="swafuzz-out/zoo", help="bundles and kill-matrix.md")
    z.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="worker processes (mutants run in parallel)")
    z.add_argument("--quiet", action="store_true", help="no progress on stderr")
    z.set_defaults(fn=cmd_zoo)

    b = sub.add_parser("bench", formatter_class=fmt, help="kernel benchmark (bench/kernels.py); 'bench harness': "
                       "campaign throughput, 1 vs N workers (bench/harness.py)")
    b.add_argument("rest", nargs=argparse.REMAINDER)
    b.set_defaults(fn=cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE") and argv is None:  # `swafuzz report DIR | head`: end quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: 2 on usage errors, 0 on --help
        return int(e.code or 0)
    _prepare_env()  # after parsing (--help and usage errors load no torch), before any plugin
    if args.cmd == "run":
        args.target = args.target or ["unified"]
        args.examples_given = args.examples is not None
        if args.examples is None:
            args.examples = 300
    try:
        load_plugins(args)
        return args.fn(args)
    except UsageError as e:
        print(f"swafuzz {args.cmd}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - a tool failure: exit 3, traceback to a log file
        out = (getattr(args, "resume", None) or getattr(args, "out", None)
               or getattr(args, "dir", None))
        print(report_tool_failure(args.cmd, e, out), file=sys.stderr)
        return EXIT_TOOL


if __name__ == "__main__":
    sys.exit(main())
