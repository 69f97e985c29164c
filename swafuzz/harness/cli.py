"""``swafuzz`` (also ``python -m swafuzz``): run, zoo, repro, list, report, bench.

Exit codes: 0 clean, 1 findings, 2 usage or input error (with a message naming the field and the
allowed values, and nothing written), 3 tool failure (one line on stderr, the traceback in
``swafuzz-error-<pid>.log`` under the output directory or the temp directory), 130 interrupted
(Ctrl-C / SIGTERM; ``run`` prints its table and how to ``--resume``).
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


def _load_plugins(args) -> None:
    """``--plugin MODULE`` (any command) and ``SWAFUZZ_PLUGINS``: a plugin that cannot be
    loaded is a usage error naming it."""
    from swafuzz.targets import plugins

    try:
        for m in getattr(args, "plugin", None) or []:
            plugins.load_module(m)
        plugins.load_env()
    except plugins.PluginError as e:
        raise UsageError(str(e)) from None


def _validate_common(args) -> None:
    from swafuzz import targets
    from swafuzz.harness.executors import available_executors
    from swafuzz.kernels import IMPLS, available_impls
    from swafuzz.targets.plugins import PluginError

    try:
        for t in args.target if isinstance(args.target, list) else [args.target]:
            targets.get_target(t)
    except (targets.UnknownTarget, targets.TargetUnavailable, PluginError) as e:
        raise UsageError(str(e)) from None
    _check_choice("--impl", args.impl, ("auto",) + tuple(IMPLS))
    if args.impl not in ("auto",) and args.impl not in available_impls():
        raise UsageError(f"--impl: {args.impl!r} is not available on this machine; available: "
                         f"{', '.join(['auto'] + available_impls())}")
    _check_choice("--executor", args.executor, ("auto", "all", "eager", "tape", "cudagraph"))
    if args.executor == "cudagraph" and "cudagraph" not in available_executors():
        raise UsageError("--executor: 'cudagraph' needs a CUDA GPU; available here: "
                         f"{', '.join(['auto', 'all'] + available_executors())}")


def _parse_duration(field: str, text: str) -> float:
    """``90s``, ``30m``, ``2h`` or plain seconds -> seconds (> 0)."""
    units = {"s": 1, "m": 60, "h": 3600}
    t = text.strip().lower()
    mult = units.get(t[-1:], None)
    num = t[:-1] if mult else t
    try:
        v = float(num) * (mult or 1)
    except ValueError:
        v = -1
    if not v > 0:
        raise UsageError(f"{field}: {text!r} is not allowed; give a positive duration like "
                         "90s, 30m or 2h")
    return v


def _positive(field: str, value: int) -> None:
    if value is None or value < 1:
        raise UsageError(f"{field}: must be >= 1 (got {value})")


def _prepare_out(out: str, resume: bool) -> None:
    """``--out``: a new or empty directory (or a run to ``--resume``); usage errors otherwise,
    before anything is written."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out: {out!r} exists and is not a directory")
    if resume:
        if not os.path.isfile(os.path.join(out, "run.json")):
            raise UsageError(f"--resume: {out!r} holds no run to resume (no run.json)")
        return
    if os.path.isdir(out) and os.listdir(out):
        raise UsageError(f"--out: {out!r} is not empty; continue that run with --resume {out} "
                         "or choose a new directory")
    parent = os.path.dirname(os.path.abspath(out))
    probe = parent
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.access(probe, os.W_OK):
        raise UsageError(f"--out: cannot create {out!r} (no write permission in {probe!r})")


def _check_target_kinds(names, kinds: list[str], explicit: bool) -> list[str]:
    """Ask each target whether it runs each kind (``targets.supports``): a kind refused (e.g.
    ``ring`` on a release of the target without it) is a usage error naming the target and the
    reason when asked for by name (``explicit``), else left out of the default set with a note
    on stderr."""
    from swafuzz import targets

    for t in names if isinstance(names, list) else [names]:
        refused = {k: why for k in kinds if (why := targets.supports(t, k))}
        if not refused:
            continue
        if explicit:
            k, why = next(iter(refused.items()))
            raise UsageError(f"--scenario {k}: target {t} cannot run it: {why}")
        print(f"note: scenario kinds {', '.join(refused)} left out for target {t}: "
              f"{'; '.join(refused.values())}", file=sys.stderr)
        kinds = [k for k in kinds if k not in refused]
    return kinds


def _run_config(args):
    """Flags -> a RunConfig resolved once (or the RunConfig of the run being resumed)."""
    from swafuzz.harness.pipeline import RunConfig, read_run_config
    from swafuzz.harness.run import resolve_executors, resolve_impl
    from swafuzz.scenarios.strategies import SCENARIO_KINDS
    from swafuzz.targets.plugins import loaded_modules

    if args.resume:
        _prepare_out(args.resume, resume=True)
        try:
            cfg = read_run_config(args.resume)
        except (OSError, ValueError, TypeError) as e:
            raise UsageError(f"--resume: {args.resume}/run.json is unreadable: {e}") from None
        cfg.out = args.resume
        _load_plugins(argparse.Namespace(plugin=cfg.plugins))
        args.target = cfg.target
        return cfg
    _validate_common(args)
    kinds = args.scenario or list(SCENARIO_KINDS)
    for k in kinds:
        _check_choice("--scenario", k, SCENARIO_KINDS)
    kinds = _check_target_kinds(args.target, kinds, bool(args.scenario))
    _positive("--examples", args.examples)
    _positive("--workers", args.workers)
    if args.shrink_budget < 0:
        raise UsageError(f"--shrink-budget: must be >= 0 (got {args.shrink_budget})")
    budget_s = _parse_duration("--budget", args.budget) if args.budget else None
    if args.out is None:  # each run gets its own directory; an explicit --out must be new
        base = os.path.join("swafuzz-out", time.strftime("run-%Y%m%d-%H%M%S", time.gmtime()))
        args.out, n = base, 1
        while os.path.exists(args.out):
            n += 1
            args.out = f"{base}-{n}"
    _prepare_out(args.out, resume=False)
    from swafuzz.harness.corpus import DatabaseSpecError, check_spec, open_database

    try:
        check_spec(args.db)
        if args.db and "://" in args.db:
            open_database(args.db, args.out)  # reachable before anything is written (a ping)
    except DatabaseSpecError as e:
        raise UsageError(str(e)) from None
    _positive("--known-cap", args.known_cap)
    from swafuzz.harness.known import resolve_ledger
    from swafuzz.harness.ledger import LedgerError

    try:
        ledger = resolve_ledger(args.ledger, list(dict.fromkeys(args.target)))
    except LedgerError as e:
        raise UsageError(f"--ledger: {e} (or 'auto', 'none')") from None
    return RunConfig(targets=list(dict.fromkeys(args.target)), impl=resolve_impl(args.impl),
                     executors=resolve_executors(args.executor), executor_label=args.executor,
                     kinds=list(dict.fromkeys(kinds)),
                     examples=args.examples if not budget_s or args.examples_given else 10**6,
                     budget_s=budget_s, seed=args.seed, workers=args.workers,
                     shrink_budget=args.shrink_budget, out=args.out,
                     isolate=not args.no_isolate, plugins=loaded_modules(), db=args.db,
                     ledger=ledger, known_cap=args.known_cap)


# --------------------------------------------------------------------------- run
def cmd_run(args) -> int:
    from swafuzz.harness import pipeline
    from swafuzz.reports.summary import campaign_table

    cfg = _run_config(args)
    os.makedirs(cfg.out, exist_ok=True)
    if cfg.isolate:  # a target the worker cannot load is a usage error before any case runs
        from swafuzz.harness.worker import WorkerSetupError

        try:
            for t in cfg.targets:  # (reused by the units of a 1-worker run)
                pipeline.case_worker(cfg, t).start()
        except (ValueError, WorkerSetupError) as e:
            if not os.listdir(cfg.out):
                os.rmdir(cfg.out)
            raise UsageError(str(e)) from None
    pipeline.write_run_meta(cfg)
    quiet = args.quiet

    def say(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr, flush=True)

    res = pipeline.run(cfg, say=say)
    stats = pipeline.per_kind(res.rows)
    print()
    print(campaign_table(stats))
    seen: dict[str, dict] = {}
    for r in res.findings:
        seen.setdefault(r["finding"], r)
    for sig, r in seen.items():
        from swafuzz.reports.bundle import signature_filename

        path = os.path.join(cfg.out, "findings", signature_filename(sig) + ".json")
        print(f"FINDING {sig}: {r.get('message') or ''}")
        if os.path.exists(path):
            print(f"  swafuzz repro {path}")
    from swafuzz.harness.known import print_known

    known = print_known(res.rows)
    generated = sum(s["generated"] for s in stats.values())
    shrunk = sum(s["shrunk"] for s in stats.values())
    with open(os.path.join(cfg.out, "summary.md"), "w") as f:
        f.write(f"# swafuzz run: target {', '.join(cfg.targets)}, impl {cfg.impl}, executors "
                f"{','.join(cfg.executors)}, seed {cfg.seed}, workers {cfg.workers}\n\n"
                f"{campaign_table(stats, markdown=True)}\n")
    steps = sum(r.get("forward_steps") or 0 for r in res.rows)
    pipeline.write_run_meta(cfg, seconds=round(res.seconds, 3), forward_steps=steps, stats=stats,
                            interrupted=res.interrupted, known=known)
    print(f"{generated} cases generated, {shrunk} run while shrinking, {len(seen)} distinct "
          f"findings; {steps} forward steps checked in {res.seconds:.1f} s "
          f"({steps / max(res.seconds, 1e-9):.1f} steps/s)")
    print(f"results: {os.path.abspath(cfg.out)} (swafuzz report {cfg.out})")
    if res.interrupted:
        logged = sum(1 for r in pipeline.read_log(os.path.join(cfg.out, "cases.jsonl"))
                     if "case" in r)
        print(f"interrupted: {logged} cases are recorded in {cfg.out}/cases.jsonl (the table "
              f"counts finished units only); continue with: swafuzz run --resume {cfg.out}")
        return pipeline.EXIT_INTERRUPTED
    return EXIT_FINDINGS if seen else EXIT_CLEAN


# --------------------------------------------------------------------------- repro
def cmd_repro(args) -> int:
    from swafuzz.harness.run import InvalidCase, execute, resolve_executors
    from swafuzz.reports.bundle import read_bundle
    from swafuzz.scenarios.case import Case, CaseError
    from swafuzz.targets.plugins import PluginError, load_record

    try:
        bundle = read_bundle(args.file)  # its errors already name the file
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        case = Case.from_json(bundle["case"])
    except (ValueError, CaseError) as e:
        raise UsageError(f"{args.file}: {e}") from None
    if not args.target and bundle.get("plugin"):
        try:  # the bundle names the plugin its target came from
            load_record(bundle["plugin"], source=f"{args.file}: target {bundle.get('target')!r}")
        except PluginError as e:
            raise UsageError(str(e)) from None
    args.target = args.target or bundle.get("target", "unified")
    args.impl = args.impl or bundle.get("impl", "auto")
    _validate_common(args)
    from swafuzz.targets import supports

    why = supports(args.target, case)  # e.g. a ring Case on a release without the ring
    if why:
        raise UsageError(f"{args.file}: target {args.target} cannot run this Case: {why}")
    executors = resolve_executors(args.executor)
    try:
        if args.no_isolate:
            v = execute(case, args.target, args.impl, executors)
        else:  # a crash inside the case is reported, not the end of this command
            from swafuzz.harness.run import resolve_impl
            from swafuzz.harness.worker import CaseWorker, WorkerSetupError

            try:
                w = CaseWorker(args.target, resolve_impl(args.impl), executors)
                w.start()
            except (ValueError, WorkerSetupError) as e:
                raise UsageError(str(e)) from None
            try:
                v = w.run(case)
            finally:
                w.close()
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
    from swafuzz import targets
    from swafuzz.harness import listing

    if args.json and not args.features:
        raise UsageError("--json: only with --features (the feature table as JSON)")
    if args.target is not None:
        _check_choice("--target", args.target, _targets())
        print(targets.describe(args.target))
        return EXIT_CLEAN
    if args.features:
        data = listing.feature_rows()
        print(listing.features_json(data) if args.json else listing.features_text(data))
        return EXIT_CLEAN
    print(listing.summary_text())
    return EXIT_CLEAN


# --------------------------------------------------------------------------- report
def _default_ledger() -> str:
    from swafuzz.harness.ledger import DEFAULT_LEDGER

    return DEFAULT_LEDGER


def cmd_report(args) -> int:
    from swafuzz.harness.report import ReportInputError, build

    if args.reruns < 0:
        raise UsageError(f"--reruns: must be >= 0 (got {args.reruns})")
    try:
        res = build(args.dir, baseline=args.baseline, reruns=args.reruns,
                    ledger=None if args.no_ledger else args.ledger, release=args.release)
    except ReportInputError as e:
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
    from swafuzz.harness.zoo import run_zoo

    _check_choice("--budget", args.budget, ("full", "ci"))
    for name in ("examples", "seeds", "jobs"):
        v = getattr(args, name)
        if v is not None:
            _positive(f"--{name}", v)
    if args.budget == "ci":
        given = [f for f, v in (("--examples", args.examples), ("--seeds", args.seeds))
                 if v is not None]
        if given:
            raise UsageError(f"{given[0]}: not allowed with --budget ci (its budget is fixed: 2 "
                             "seeds, 60 cases); use --budget full with --examples and --seeds")
    args.examples = 200 if args.examples is None else args.examples
    args.seeds = 5 if args.seeds is None else args.seeds
    from swafuzz.harness.failures import check_out_file

    bad = args.json and check_out_file("--json", args.json)
    if bad:
        raise UsageError(bad)
    _prepare_out_dir_only(args.out)
    return run_zoo(args)


def _prepare_out_dir_only(out: str) -> None:
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out: {out!r} exists and is not a directory")


def cmd_bench(args) -> int:
    import runpy

    rest = [a for a in args.rest if a != "--"]
    module = "swafuzz.bench.kernels"
    if rest[:1] == ["harness"]:  # swafuzz bench harness [...]: campaign throughput, 1 vs N workers
        module, rest = "swafuzz.bench.harness", rest[1:]
    from swafuzz.kernels import IMPLS, available_impls

    if module.endswith(".kernels") and "--impls" in rest and rest.index("--impls") + 1 < len(rest):
        for name in rest[rest.index("--impls") + 1].split(","):
            _check_choice("--impls", name, IMPLS)
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
    from swafuzz import __version__
    from swafuzz.harness.corpus import DB_HELP

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
    rep.add_argument("--ledger", default=_default_ledger(),
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
    import signal

    if hasattr(signal, "SIGPIPE") and argv is None:  # `swafuzz report DIR | head`: end quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _prepare_env()
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
    try:
        _load_plugins(args)
        return args.fn(args)
    except UsageError as e:
        print(f"swafuzz {args.cmd}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - a tool failure: exit 3, traceback to a log file
        from swafuzz.harness.failures import report_tool_failure

        out = (getattr(args, "resume", None) or getattr(args, "out", None)
               or getattr(args, "dir", None))
        print(report_tool_failure(args.cmd, e, out), file=sys.stderr)
        return EXIT_TOOL


if __name__ == "__main__":
    sys.exit(main())
