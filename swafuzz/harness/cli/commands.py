"""``swafuzz`` (also ``python -m swafuzz``): run, zoo, repro, list, report, merge, bisect, bench.

Exit codes: 0 clean, 1 findings, 2 usage or input error (a message naming the field and the
allowed values, nothing written), 3 tool failure (one line on stderr, the traceback in a log
file), 130 interrupted (Ctrl-C / SIGTERM).

This module holds ``main`` and the small commands; the torch-free parser is
:mod:`swafuzz.harness.cli.parser`, ``run`` and ``repro`` :mod:`swafuzz.harness.cli.run`, the
shared checks :mod:`swafuzz.harness.cli.common`, the listings :mod:`swafuzz.harness.cli.listing`.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys

import torch

from swafuzz import features, machinery, targets
from swafuzz.export.command import cmd_export
from swafuzz.harness.cli import listing
from swafuzz.harness.cli import parser as cli_parser
from swafuzz.harness.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_TOOL,
    EXIT_USAGE,
    UsageError,
    available_ram,
    check_choice,
    load_plugins,
    print_report,
    target_names,
)
from swafuzz.harness.cli.failures import check_out_dir, check_out_file, report_tool_failure
from swafuzz.harness.cli.merge import cmd_merge
from swafuzz.harness.cli.precheck import precheck
from swafuzz.harness.cli.run import cmd_repro, cmd_run
from swafuzz.harness.ledger import bisect
from swafuzz.harness.ledger.entries import DEFAULT_LEDGER
from swafuzz.harness.report import read as report
from swafuzz.harness.zoo.matrix import run_zoo
from swafuzz.harness.zoo.select import selected
from swafuzz.harness.zoo.server import run_server_zoo
from swafuzz.kernels import IMPLS, available_impls

__all__ = ["EXIT_CLEAN", "EXIT_FINDINGS", "EXIT_TOOL", "EXIT_USAGE", "UsageError", "build_parser",
           "main", "cmd_run", "cmd_repro", "cmd_list", "cmd_report", "cmd_zoo", "cmd_bench",
           "cmd_merge"]


def _prepare_env() -> None:
    """No CUDA: Triton's interpreter, set before Triton is first imported (by a Case)."""
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


def _machinery_env(args) -> None:
    """``SWAFUZZ_FAULTS`` checked (a usage error naming the entry); ``--start-timeout`` passed
    down to every process the command starts (swafuzz.machinery)."""
    try:
        machinery.faults()
    except machinery.FaultSpecError as e:
        raise UsageError(str(e)) from None
    if getattr(args, "start_timeout", None) is not None:  # (main restores it: in-process calls)
        os.environ[machinery.START_TIMEOUT_ENV] = repr(args.start_timeout)


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
    if getattr(args, "mutants", False):
        if args.features:
            raise UsageError("--mutants: not with --features (the feature table names each "
                             "feature's mutants)")
        print(listing.mutants_text())
        return EXIT_CLEAN
    if args.features:
        data = listing.feature_rows()
        print(listing.features_json(data) if args.json else listing.features_text(data))
        return EXIT_CLEAN
    print(listing.summary_text())
    return EXIT_CLEAN


# --------------------------------------------------------------------------- report
def cmd_report(args) -> int:
    if args.reruns < 0:
        raise UsageError(f"--reruns: must be >= 0 (got {args.reruns})")
    try:
        res = report.build(args.dir, baseline=args.baseline, reruns=args.reruns,
                           ledger=None if args.no_ledger else args.ledger or DEFAULT_LEDGER,
                           release=args.release)
    except report.ReportInputError as e:
        raise UsageError(str(e)) from None
    return print_report(res)


# --------------------------------------------------------------------------- zoo / bench
def cmd_zoo(args) -> int:
    # its flags were checked by precheck (main runs it first: budget, counts, --budget ci alone)
    args.examples = 200 if args.examples is None else args.examples
    args.seeds = 5 if args.seeds is None else args.seeds
    bad = (args.json and check_out_file("--json", args.json)) or check_out_dir("--out", args.out)
    if bad:
        raise UsageError(bad)
    args.level = getattr(args, "level", "component")
    check_choice("--level", args.level, ("component", "server"))
    if args.level == "server":
        return run_server_zoo(args)
    try:
        zoo = selected(args.mutant)
    except ValueError as e:
        raise UsageError(str(e)) from None
    why = features.ram_refusal(sorted({k for s in zoo.values() for k in s.kinds}),
                               available_ram())  # a named mutant of a resource-gated kind
    if why:
        raise UsageError(why.replace("--scenario", "--mutant", 1))
    return run_zoo(args)


def cmd_bench(args) -> int:
    rest = [a for a in args.rest if a != "--"]
    module = "swafuzz.bench.kernels"
    if rest[:1] == ["harness"]:  # swafuzz bench harness [...]: campaign throughput, 1 vs N workers
        module, rest = "swafuzz.bench.harness", rest[1:]
    elif rest[:1] == ["fleet"]:  # swafuzz bench fleet [...]: workers, Ray, shards side by side
        module, rest = "swafuzz.bench.fleet", rest[1:]
    elif rest[:1] == ["server"]:  # swafuzz bench server [...]: server level, 1 vs 2 workers
        module, rest = "swafuzz.bench.server", rest[1:]
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


def build_parser():
    """The parser of :mod:`swafuzz.harness.cli.parser`, each command bound to its function."""
    return cli_parser.build_parser({"run": cmd_run, "repro": cmd_repro, "list": cmd_list,
                                    "report": cmd_report, "zoo": cmd_zoo, "bench": cmd_bench,
                                     "merge": cmd_merge, "bisect": bisect.cmd_bisect,
                                     "export": cmd_export})


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE") and argv is None:  # `swafuzz report DIR | head`: end quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: 2 on usage errors, 0 on --help
        return int(e.code or 0)
    if args.cmd == "run":
        args.target = args.target or ["unified"]
        args.examples_given = args.examples is not None
        if args.examples is None:
            args.examples = 300
    saved = os.environ.get(machinery.START_TIMEOUT_ENV)
    try:
        precheck(args)  # as swafuzz.__main__ does (main() called directly: the same answers)
        _machinery_env(args)  # --start-timeout, SWAFUZZ_FAULTS: for every process started
        _prepare_env()  # after parsing (--help and usage errors load no torch), before plugins
        load_plugins(args)
        return args.fn(args)
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling (loading torch, ...)
        print(f"swafuzz {args.cmd}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as e:
        print(f"swafuzz {args.cmd}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - a tool failure: exit 3, traceback to a log file
        out = (getattr(args, "resume", None) or getattr(args, "out", None)
               or getattr(args, "dir", None))
        print(report_tool_failure(args.cmd, e, out), file=sys.stderr)
        return EXIT_TOOL
    finally:
        if saved is None:
            os.environ.pop(machinery.START_TIMEOUT_ENV, None)
        else:
            os.environ[machinery.START_TIMEOUT_ENV] = saved


if __name__ == "__main__":
    sys.exit(main())
