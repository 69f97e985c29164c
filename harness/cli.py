"""``swafuzz`` (also ``python -m swafuzz``): run, zoo, repro, list, report, bench.

Exit codes: 0 clean, 1 findings, 2 usage or input error (with a message naming the field and the
allowed values, and nothing written), 3 tool failure (one line on stderr; the traceback goes to
``swafuzz-error.log`` in the output directory, or the temporary directory).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_TOOL = 0, 1, 2, 3


class UsageError(Exception):
    pass


def _prepare_env() -> None:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


def _check_choice(field: str, value: str, allowed) -> None:
    if value not in allowed:
        raise UsageError(f"{field}: {value!r} is not allowed; choose one of: "
                         f"{', '.join(sorted(allowed))}")


def _targets() -> list[str]:
    from swafuzz import targets

    return sorted(targets.available_targets())


def _validate_common(args) -> None:
    from swafuzz.harness.executors import available_executors
    from swafuzz.kernels import IMPLS, available_impls

    _check_choice("--target", args.target, _targets())
    _check_choice("--impl", args.impl, ("auto",) + tuple(IMPLS))
    if args.impl not in ("auto",) and args.impl not in available_impls():
        raise UsageError(f"--impl: {args.impl!r} is not available on this machine; available: "
                         f"{', '.join(['auto'] + available_impls())}")
    _check_choice("--executor", args.executor, ("auto", "all", "eager", "tape", "cudagraph"))
    if args.executor == "cudagraph" and "cudagraph" not in available_executors():
        raise UsageError("--executor: 'cudagraph' needs a CUDA GPU; available here: "
                         f"{', '.join(['auto', 'all'] + available_executors())}")


def _progress(enabled: bool, every_s: float = 5.0):
    """A progress bar on a terminal (stderr); when stderr is not a TTY (CI logs), one line
    every ``every_s`` seconds (``SWAFUZZ_PROGRESS_S`` overrides it)."""
    state = {"t": 0.0, "shown": False, "line_t": time.monotonic(), "t0": time.monotonic()}
    tty = enabled and sys.stderr.isatty()
    every_s = float(os.environ.get("SWAFUZZ_PROGRESS_S", every_s))

    def show(kind: str, done: int, total: int) -> None:
        now = time.monotonic()
        if enabled and not tty:
            if now - state["line_t"] >= every_s:
                state["line_t"] = now
                sys.stderr.write(f"progress: {kind}: {done}/{total} generated cases, "
                                 f"{now - state['t0']:.0f} s elapsed\n")
                sys.stderr.flush()
            return
        if not tty or (now - state["t"] < 0.1 and done < total):
            return
        state["t"] = now
        width = 30
        fill = int(width * min(done, total) / max(1, total))
        sys.stderr.write(f"\r{kind:>17} [{'#' * fill}{'.' * (width - fill)}] {done}/{total}")
        sys.stderr.flush()
        state["shown"] = True

    def end_kind(kind: str, cases: int, findings: int, seconds: float) -> None:
        if not enabled:
            return
        if state["shown"]:
            sys.stderr.write("\r\033[K")
            state["shown"] = False
        sys.stderr.write(f"{kind:>17}: {cases} cases, {findings} findings, {seconds:.1f} s\n")
        sys.stderr.flush()

    show.end_kind = end_kind
    return show


def resolve_executors_for(args) -> list[str]:
    from swafuzz.harness.run import resolve_executors

    return resolve_executors(args.executor)


def _make_runner(args, out_dir: str | None):
    from swafuzz.harness.run import execute, resolve_executors

    executors = resolve_executors(args.executor)
    if args.no_isolate:
        return (lambda case: execute(case, args.target, args.impl, executors)), None
    from swafuzz.harness.worker import CaseWorker

    w = CaseWorker(args.target, args.impl, executors, out_dir)
    return w.run, w


# --------------------------------------------------------------------------- run
def cmd_run(args) -> int:
    from swafuzz.harness.campaign import Campaign
    from swafuzz.reports.bundle import write_bundle
    from swafuzz.reports.log import CaseLog
    from swafuzz.reports.summary import campaign_table
    from swafuzz.scenarios.strategies import SCENARIO_KINDS

    _validate_common(args)
    kinds = args.scenario or list(SCENARIO_KINDS)
    for k in kinds:
        _check_choice("--scenario", k, SCENARIO_KINDS)
    if args.examples < 1:
        raise UsageError(f"--examples: must be >= 1 (got {args.examples})")
    if args.shrink_budget < 0:
        raise UsageError(f"--shrink-budget: must be >= 0 (got {args.shrink_budget})")
    from swafuzz.harness.failures import check_out_dir

    bad = check_out_dir("--out", args.out)
    if bad:
        raise UsageError(bad)
    per_kind = max(1, -(-args.examples // len(kinds)))
    from swafuzz.harness.corpus import DatabaseSpecError, check_spec, open_database
    from swafuzz.harness.report import write_run_meta
    from swafuzz.harness.throughput import forward_count

    try:
        check_spec(args.db)
    except DatabaseSpecError as e:
        raise UsageError(str(e)) from None
    out = args.out
    try:
        database = open_database(args.db, out)  # before anything is written (pings Redis)
    except DatabaseSpecError as e:
        raise UsageError(str(e)) from None
    os.makedirs(out, exist_ok=True)
    log = CaseLog(os.path.join(out, "cases.jsonl"))
    run_case, worker = _make_runner(args, out)
    n_exec = len(resolve_executors_for(args))
    t_start = time.time()
    fwd = {"steps": 0}

    def logged(case):
        v = run_case(case)
        fwd["steps"] += forward_count(case) * n_exec
        log.write({"kind": case.kind, "failed": v.failed, "signature": v.signature(),
                   "seconds": round(v.seconds, 4), "checks": v.checks_run,
                   "t": round(time.time(), 3), "phase": camp.phase,
                   "case": case.to_json() if v.failed else None})
        return v

    progress = _progress(not args.quiet)
    first_paths: dict[str, str] = {}

    def on_first_failure(v) -> None:
        # the unshrunk Case goes to disk before any shrinking run: a crash later loses nothing
        first_paths[v.case.kind] = write_bundle(out, v.finding(args.target, args.impl, args.executor))

    camp = Campaign(logged, seed=args.seed, shrink_budget=args.shrink_budget, progress=progress,
                    on_first_failure=on_first_failure, database=database, db_key=args.target)
    stats, seen = {}, set()
    findings = 0
    try:
        for kind in kinds:
            res = camp.run_kind(kind, per_kind)
            stats[kind] = {"cases": res.cases, "generated": res.generated, "checks": res.checks,
                           "findings": 1 if res.finding else 0, "seconds": res.seconds}
            progress.end_kind(kind, res.cases, stats[kind]["findings"], res.seconds)
            if res.finding:
                findings += 1
                sig = res.finding.signature()
                first = first_paths.pop(kind, None)
                if sig not in seen:
                    seen.add(sig)
                    path = write_bundle(out, res.finding.finding(args.target, args.impl, args.executor))
                    if first and first != path and os.path.exists(first):
                        os.unlink(first)  # superseded by the shrunk Case
                    print(f"\nFINDING {sig}: {res.finding.failures[0].message}")
                    print(f"  swafuzz repro {path}")
    finally:
        if worker:
            worker.close()
        log.close()
    print()
    print(campaign_table(stats))
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(f"# swafuzz run: target {args.target}, impl {args.impl}, executor "
                f"{args.executor}, seed {args.seed}\n\n{campaign_table(stats, markdown=True)}\n")
    wall = time.time() - t_start
    write_run_meta(out, {"command": "run", "target": args.target, "impl": args.impl,
                         "executor": args.executor, "seed": args.seed,
                         "examples": args.examples, "scenarios": kinds, "db": args.db,
                         "started": t_start, "seconds": round(wall, 3),
                         "forward_steps": fwd["steps"], "stats": stats})
    print(f"\n{fwd['steps']} forward steps checked in {wall:.1f} s "
          f"({fwd['steps'] / max(wall, 1e-9):.1f} steps/s)")
    print(f"results: {os.path.abspath(out)} (swafuzz report {out})")
    return EXIT_FINDINGS if findings else EXIT_CLEAN


# --------------------------------------------------------------------------- repro
def cmd_repro(args) -> int:
    from swafuzz.harness.run import InvalidCase, execute, resolve_executors
    from swafuzz.reports.bundle import read_bundle
    from swafuzz.scenarios.case import Case, CaseError

    try:
        bundle = read_bundle(args.file)
        case = Case.from_json(bundle["case"])
    except (ValueError, CaseError) as e:
        raise UsageError(f"{args.file}: {e}") from None
    args.target = args.target or bundle.get("target", "unified")
    args.impl = args.impl or bundle.get("impl", "auto")
    _validate_common(args)
    try:
        v = execute(case, args.target, args.impl, resolve_executors(args.executor))
    except InvalidCase as e:
        raise UsageError(f"{args.file}: field 'case' cannot run: {e}") from None
    if v.failed:
        print(f"FAIL {v.signature()} ({len(v.failures)} failures, {v.checks_run} checks)")
        for f in v.failures:
            print(f"  {f.check}: {f.message}")
        return EXIT_FINDINGS
    print(f"PASS: {v.checks_run} checks clean on target {args.target} (impl {args.impl}, "
          f"executor {args.executor})")
    return EXIT_CLEAN


# --------------------------------------------------------------------------- list
def cmd_list(args) -> int:
    from swafuzz.harness.checks import CHECKS
    from swafuzz.harness.executors import available_executors
    from swafuzz.kernels import available_impls
    from swafuzz.scenarios.strategies import SCENARIO_KINDS

    print("targets:        " + ", ".join(_targets()))
    print("scenario kinds: " + ", ".join(SCENARIO_KINDS))
    print("checks:         " + ", ".join(CHECKS))
    print("implementations:" + " " + ", ".join(available_impls()))
    print("executors:      " + ", ".join(available_executors()))
    return EXIT_CLEAN


# --------------------------------------------------------------------------- report
def cmd_report(args) -> int:
    from swafuzz.harness.report import ReportInputError, build

    if args.reruns < 0:
        raise UsageError(f"--reruns: must be >= 0 (got {args.reruns})")
    try:
        res = build(args.dir, baseline=args.baseline, reruns=args.reruns)
    except ReportInputError as e:
        raise UsageError(str(e)) from None
    st = res["status"]
    print(f"{res['findings']} findings by signature: {len(st['new'])} new, "
          f"{len(st['known'])} known, {len(st['fixed'])} fixed")
    for s in st["new"] + st["known"]:
        print(f"  {'NEW  ' if s in st['new'] else 'known'} {s}")
    for p in res["paths"]:
        print(f"wrote {p}")
    return EXIT_FINDINGS if res["findings"] else EXIT_CLEAN


# --------------------------------------------------------------------------- zoo / bench
def cmd_zoo(args) -> int:
    from swafuzz.harness.failures import check_out_dir, check_out_file
    from swafuzz.harness.zoo import run_zoo

    _check_choice("--budget", args.budget, ("full", "ci"))
    if args.budget == "ci":
        given = [f for f, v in (("--examples", args.examples), ("--seeds", args.seeds)) if v
                 is not None]
        if given:
            raise UsageError(f"{given[0]}: not allowed with --budget ci (its budget is fixed); "
                             "use --budget full with --examples and --seeds")
    args.examples = 200 if args.examples is None else args.examples
    args.seeds = 5 if args.seeds is None else args.seeds
    for field, v in (("--examples", args.examples), ("--seeds", args.seeds),
                     ("--jobs", args.jobs)):
        if v < 1:
            raise UsageError(f"{field}: must be >= 1 (got {v})")
    bad = check_out_dir("--out", args.out) or (args.json and check_out_file("--json", args.json))
    if bad:
        raise UsageError(bad)
    return run_zoo(args)


def cmd_bench(args) -> int:
    import runpy

    rest = [a for a in args.rest if a != "--"]
    module = "swafuzz.bench.kernels"
    if rest[:1] == ["harness"]:  # swafuzz bench harness [...]: campaign throughput, 1 vs N workers
        module, rest = "swafuzz.bench.harness", rest[1:]
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
    from swafuzz.harness.corpus import DB_HELP

    from swafuzz import __version__

    fmt = _HelpFormatter
    p = argparse.ArgumentParser(prog="swafuzz", description=__doc__.splitlines()[0],
                                formatter_class=fmt)
    p.add_argument("--version", action="version", version=f"swafuzz {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, defaults=True):
        sp.add_argument("--target", default="unified" if defaults else None,
                        help="target under test (swafuzz list)"
                        + ("" if defaults else "; default: the bundle's"))
        sp.add_argument("--impl", default="auto" if defaults else None,
                        help="torch | triton | cuda | auto (triton)")
        sp.add_argument("--executor", default="auto",
                        help="eager | tape | cudagraph | auto (eager + this machine's graphs) | all")

    r = sub.add_parser("run", formatter_class=fmt, help="fuzz a target: scenarios x checks")
    common(r)
    r.add_argument("--scenario", action="append", help="scenario kind (repeatable)")
    r.add_argument("--examples", type=int, default=300, help="cases in all (split over kinds)")
    r.add_argument("--seed", type=int, default=0, help="hypothesis seed (same seed, same Cases)")
    r.add_argument("--out", default="swafuzz-out", help="output directory")
    r.add_argument("--shrink-budget", type=int, default=150,
                   help="cases run to shrink each first failure")
    r.add_argument("--db", default=None, help=DB_HELP)
    r.add_argument("--no-isolate", action="store_true", help="run cases in this process")
    r.add_argument("--quiet", action="store_true", help="no progress on stderr")
    r.set_defaults(fn=cmd_run)

    rp = sub.add_parser("repro", formatter_class=fmt, help="replay a finding bundle")
    rp.add_argument("file")
    common(rp, defaults=False)
    rp.set_defaults(fn=cmd_repro)

    sub.add_parser("list", formatter_class=fmt, help="what is available here").set_defaults(fn=cmd_list)

    rep = sub.add_parser("report", formatter_class=fmt, help="summarise a run directory")
    rep.add_argument("dir")
    rep.add_argument("--baseline", default=None,
                     help="a previous run directory: findings split into new / known / fixed")
    rep.add_argument("--reruns", type=int, default=0,
                     help="replay each finding's smallest Case N times (reliability k/N)")
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
    _prepare_env()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: 2 on usage errors, 0 on --help
        return int(e.code or 0)
    try:
        return args.fn(args)
    except UsageError as e:
        print(f"swafuzz {args.cmd}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - a tool failure: exit 3, traceback to a log file
        from swafuzz.harness.failures import report_tool_failure

        out = getattr(args, "out", None) or getattr(args, "dir", None)
        print(report_tool_failure(args.cmd, e, out), file=sys.stderr)
        return EXIT_TOOL


if __name__ == "__main__":
    sys.exit(main())
