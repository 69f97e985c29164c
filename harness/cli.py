"""``swafuzz`` (also ``python -m swafuzz``): run, zoo, repro, list, report, bench.

Exit codes: 0 clean, 1 findings, 2 usage or input error (with a message naming the field and the
allowed values, and nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


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
    from swafuzz import targets

    try:
        targets.get_target(args.target)
    except targets.TargetUnavailable as e:
        raise UsageError(str(e)) from None
    _check_choice("--impl", args.impl, ("auto",) + tuple(IMPLS))
    if args.impl not in ("auto",) and args.impl not in available_impls():
        raise UsageError(f"--impl: {args.impl!r} is not available on this machine; available: "
                         f"{', '.join(['auto'] + available_impls())}")
    _check_choice("--executor", args.executor, ("auto", "all", "eager", "tape", "cudagraph"))
    if args.executor == "cudagraph" and "cudagraph" not in available_executors():
        raise UsageError("--executor: 'cudagraph' needs a CUDA GPU; available here: "
                         f"{', '.join(['auto', 'all'] + available_executors())}")


def _progress(enabled: bool):
    """A progress bar on a terminal (stderr); nothing per case when stderr is not a TTY."""
    state = {"t": 0.0, "shown": False}
    tty = enabled and sys.stderr.isatty()

    def show(kind: str, done: int, total: int) -> None:
        now = time.monotonic()
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
    per_kind = max(1, -(-args.examples // len(kinds)))
    out = args.out
    os.makedirs(out, exist_ok=True)
    log = CaseLog(os.path.join(out, "cases.jsonl"))
    run_case, worker = _make_runner(args, out)

    def logged(case):
        v = run_case(case)
        log.write({"kind": case.kind, "failed": v.failed, "signature": v.signature(),
                   "seconds": round(v.seconds, 4), "checks": v.checks_run,
                   "case": case.to_json() if v.failed else None})
        return v

    progress = _progress(not args.quiet)
    first_paths: dict[str, str] = {}

    def on_first_failure(v) -> None:
        # the unshrunk Case goes to disk before any shrinking run: a crash later loses nothing
        first_paths[v.case.kind] = write_bundle(out, v.finding(args.target, args.impl, args.executor))

    camp = Campaign(logged, seed=args.seed, shrink_budget=args.shrink_budget, progress=progress,
                    on_first_failure=on_first_failure)
    stats, seen = {}, set()
    findings = 0
    try:
        for kind in kinds:
            res = camp.run_kind(kind, per_kind)
            stats[kind] = {"cases": res.cases, "checks": res.checks,
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

    if args.target is not None:
        _check_choice("--target", args.target, _targets())
        if args.target == "sglang":
            from swafuzz.targets import TargetUnavailable, sglang

            try:
                v, a = sglang.release()
                print(f"target sglang: installed sglang {v} (adapter {a})\n")
            except TargetUnavailable as e:
                print(f"{e}\n")
            print(sglang.table_text())
            return EXIT_CLEAN
    print("targets:        " + ", ".join(_targets()))
    print("scenario kinds: " + ", ".join(SCENARIO_KINDS))
    print("checks:         " + ", ".join(CHECKS))
    print("implementations:" + " " + ", ".join(available_impls()))
    print("executors:      " + ", ".join(available_executors()))
    return EXIT_CLEAN


# --------------------------------------------------------------------------- report
def cmd_report(args) -> int:
    from swafuzz.reports.summary import table

    fdir = os.path.join(args.dir, "findings")
    if not os.path.isdir(args.dir):
        raise UsageError(f"DIR: {args.dir!r} is not a directory written by 'swafuzz run'")
    rows = []
    for name in sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []:
        if name.endswith(".json"):
            with open(os.path.join(fdir, name)) as f:
                b = json.load(f)
            rows.append([b.get("signature"), b.get("target"), json.dumps(b.get("shrunk")),
                         b.get("command")])
    text = table(["signature", "target", "shrunk", "repro"], rows, markdown=True)
    print(text if rows else "no findings")
    return EXIT_FINDINGS if rows else EXIT_CLEAN


# --------------------------------------------------------------------------- zoo / bench
def cmd_zoo(args) -> int:
    from swafuzz.harness.zoo import run_zoo

    _check_choice("--budget", args.budget, ("full", "ci"))
    return run_zoo(args)


def cmd_bench(args) -> int:
    import runpy

    rest = [a for a in args.rest if a != "--"]
    sys.argv = ["swafuzz bench"] + rest
    try:
        runpy.run_module("swafuzz.bench.kernels", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        return int(e.code or 0)
    return EXIT_CLEAN


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="swafuzz", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, defaults=True):
        sp.add_argument("--target", default="unified" if defaults else None)
        sp.add_argument("--impl", default="auto" if defaults else None,
                        help="torch | triton | cuda | auto (triton)")
        sp.add_argument("--executor", default="auto",
                        help="eager | tape | cudagraph | auto (eager + this machine's graphs) | all")

    r = sub.add_parser("run", help="fuzz a target: scenarios x checks")
    common(r)
    r.add_argument("--scenario", action="append", help="scenario kind (repeatable)")
    r.add_argument("--examples", type=int, default=300, help="cases in all (split over kinds)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", default="swafuzz-out")
    r.add_argument("--shrink-budget", type=int, default=150)
    r.add_argument("--no-isolate", action="store_true", help="run cases in this process")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(fn=cmd_run)

    rp = sub.add_parser("repro", help="replay a finding bundle")
    rp.add_argument("file")
    common(rp, defaults=False)
    rp.set_defaults(fn=cmd_repro)

    ls = sub.add_parser("list", help="what is available here")
    ls.add_argument("--target", default=None, help="details of one target (sglang: real/modelled)")
    ls.set_defaults(fn=cmd_list)

    rep = sub.add_parser("report", help="summarise a run directory")
    rep.add_argument("dir")
    rep.set_defaults(fn=cmd_report)

    z = sub.add_parser("zoo", help="run every mutant; print the kill matrix")
    z.add_argument("--examples", type=int, default=200, help="case budget per mutant and seed")
    z.add_argument("--seeds", type=int, default=5)
    z.add_argument("--json", default=None)
    z.add_argument("--budget", default="full", help="full | ci (reduced, for the CI gate)")
    z.add_argument("--impl", default="auto")
    z.add_argument("--executor", default="auto")
    z.add_argument("--out", default="swafuzz-out/zoo")
    z.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="worker processes (mutants run in parallel)")
    z.add_argument("--quiet", action="store_true")
    z.set_defaults(fn=cmd_zoo)

    b = sub.add_parser("bench", help="kernel benchmark (bench/kernels.py)")
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


if __name__ == "__main__":
    sys.exit(main())
