"""``swafuzz run`` and ``swafuzz repro``: flags to a RunConfig, the campaign and its table, the
replay of one finding bundle."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from swafuzz import features, targets
from swafuzz.features.validation import load_case
from swafuzz.harness.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    UsageError,
    available_ram,
    check_choice,
    check_target_kinds,
    load_plugins,
    parse_duration,
    positive,
    prepare_out,
    validate_common,
)
from swafuzz.harness.fleet.ray_fleet import FleetError, check_db, check_ray
from swafuzz.harness.fleet.shard import ShardSpecError, full_plan, parse_shard, shard_units
from swafuzz.harness.fleet.shard import label as shard_label
from swafuzz.harness.ledger.entries import LedgerError
from swafuzz.harness.ledger.known import print_known, resolve_ledger
from swafuzz.harness.pipeline import coverage, coverage_focus, level, resume, zygote
from swafuzz.harness.pipeline.caselog import checked_steps, examples_note, per_kind, read_log
from swafuzz.harness.pipeline.corpus import DatabaseSpecError, check_spec, open_database
from swafuzz.harness.pipeline.driver import run as run_campaign
from swafuzz.harness.pipeline.execute import (
    CaseRefused,
    InvalidCase,
    execute,
    resolve_executors,
    resolve_impl,
)
from swafuzz.harness.pipeline.level_server import (
    execute_server,
    levels_of,
    pipeline_of,
    server_targets,
)
from swafuzz.harness.pipeline.runconfig import RunConfig, read_run_config, write_run_meta
from swafuzz.harness.pipeline.runlock import RunDirBusy, RunLock
from swafuzz.harness.pipeline.unit import case_worker, close_workers
from swafuzz.harness.pipeline.worker import CaseWorker, WorkerSetupError
from swafuzz.machinery import HarnessError
from swafuzz.reports.bundle import read_bundle, signature_filename
from swafuzz.reports.summary import campaign_table
from swafuzz.scenarios.case import CaseError
from swafuzz.targets import plugins

#: when this command started (its module is loaded at the CLI's start): ``--budget`` counts the
#: command's own start-up (imports, the case workers' start) in the wall time it allows
COMMAND_START = time.time()


def run_config(args, lv=None):
    """Flags -> a RunConfig resolved once at the level ``lv`` (or the RunConfig of the run
    being resumed)."""
    lv = lv or level.get("component")
    for flag, name, default, why in lv.unsupported:
        if getattr(args, name, default) != default:
            raise UsageError(f"{flag}: {why}")
    if args.resume:
        prepare_out(args.resume, resume=True)
        try:
            cfg = read_run_config(args.resume)
        except (OSError, ValueError, TypeError) as e:
            raise UsageError(f"--resume: {args.resume}/run.json is unreadable: {e}") from None
        if cfg.level != lv.name:  # (a server-level run resumes at its level without the flag)
            raise UsageError(f"--resume {args.resume}: a component-level run; resume it without "
                             "--level server")
        cfg.out = args.resume
        load_plugins(argparse.Namespace(plugin=cfg.plugins))
        if hasattr(lv, "check_resume"):
            lv.check_resume(args, cfg)
        cfg = resume.apply(args, cfg)  # flags that would change the run: exit 2 naming them
        if cfg.ray:  # its cluster answers before the run directory is touched again
            try:
                check_ray(cfg.ray)
            except FleetError as e:
                raise UsageError(str(e)) from None
        args.target = cfg.targets if cfg.level == "server" else cfg.target
        return cfg
    if hasattr(lv, "config"):  # a level with its own flags (server: one target, its mutant)
        if getattr(args, "ray", None) is not None:  # a fleet (harness.fleet.ray_fleet)
            try:
                check_ray(args.ray)
                args.db = check_db(args.db)
            except FleetError as e:
                raise UsageError(str(e)) from None
        return lv.config(args)
    try:  # before anything is checked or written
        shard = parse_shard(args.shard) if args.shard is not None else None
    except ShardSpecError as e:
        raise UsageError(str(e)) from None
    validate_common(args)
    kinds = args.scenario or list(features.default_kind_names())  # gated kinds: by name only
    for k in kinds:
        check_choice("--scenario", k, features.kind_names())
    kinds = check_target_kinds(args.target, kinds, bool(args.scenario))
    positive("--examples", args.examples)
    positive("--workers", args.workers)
    why = features.ram_refusal(kinds, available_ram(), 1 if args.ray else args.workers)
    if why:
        raise UsageError(why)
    positive("--shrink-budget", args.shrink_budget, 0)
    budget_s = parse_duration("--budget", args.budget) if args.budget else None
    cov = check_coverage(args)
    if args.ray is not None:  # a fleet run (harness.fleet.ray_fleet): ray importable, a shared corpus
        try:
            check_ray(args.ray)
            args.db = check_db(args.db)
        except FleetError as e:
            raise UsageError(str(e)) from None
    if args.out is None:  # each run gets its own directory; an explicit --out must be new
        base = os.path.join("swafuzz-out", time.strftime("run-%Y%m%d-%H%M%S", time.gmtime()))
        args.out, n = base, 1
        while os.path.exists(args.out):
            n += 1
            args.out = f"{base}-{n}"
    prepare_out(args.out, resume=False)
    try:
        check_spec(args.db)
        if args.db and "://" in args.db:
            open_database(args.db, args.out)  # reachable before anything is written (a ping)
    except DatabaseSpecError as e:
        raise UsageError(str(e)) from None
    positive("--known-cap", args.known_cap)
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
                     isolate=not args.no_isolate, plugins=plugins.loaded_modules(), db=args.db,
                     ledger=ledger, known_cap=args.known_cap, shard=shard,
                     ray=args.ray, coverage=cov)


def check_coverage(args) -> str | None:
    """``--coverage`` / ``--coverage-bias`` -> RunConfig.coverage (harness.pipeline.coverage)."""
    try:
        return coverage.run_mode(args)
    except coverage.CoverageMissing as e:
        raise UsageError(str(e)) from None


# --------------------------------------------------------------------------- run
def cmd_run(args) -> int:
    """``swafuzz run`` at either level (``--level``, or the level of the run ``--resume``
    continues): the same config checks, lock, case workers, pipeline and exit codes; the
    level's own report."""
    server = getattr(args, "level", "component") == "server"
    lv = level.get("server" if server or level.of_file(args.resume) == "server" else "component")
    other = [k for k in args.scenario or () if k in features.kind_names("server")]
    if other and lv.name == "component":
        raise UsageError(f"--scenario {other[0]}: a server-level kind: add --level server "
                         f"(server-level kinds: {', '.join(features.kind_names('server'))})")
    cfg = run_config(args, lv)
    if cfg.shard and not shard_units(cfg):
        print(f"note: shard {shard_label(cfg.shard)} has no units (the campaign has "
              f"{len(full_plan(cfg))}); it runs nothing", file=sys.stderr)
    os.makedirs(cfg.out, exist_ok=True)
    try:  # one live run per directory (a second --resume while it runs: exit 2)
        lock = RunLock(cfg.out).acquire()
    except RunDirBusy as e:
        raise UsageError(f"{'--resume' if args.resume else '--out'}: {e}") from None
    try:
        _check_target(args, cfg, lock, lv)
        if hasattr(lv, "report"):
            lv.start_meta(cfg)  # what --resume continues, from the first Case on
            res = run_campaign(cfg, say=_say(args), session_start=COMMAND_START)
            if cfg.coverage:
                _combine_coverage(cfg)
            return lv.report(args, cfg, res)
        return _locked_run(args, cfg)
    finally:
        lock.release()


def _combine_coverage(cfg) -> None:
    """harness.pipeline.coverage: the children's data (saved as they stop: the case workers
    here, then the zygote's children, which it waits for) merged; what it says on stdout."""
    close_workers()
    zygote.shutdown()
    cov = coverage.combine(cfg.out, focus=coverage_focus.patterns_of(cfg.targets[0])
                           if len(cfg.targets) == 1 else None)
    t = cov["total"] if cov else None
    print(f"coverage: {t['covered_lines']}/{t['lines']} lines, {t['covered_branches']}/"
          f"{t['branches']} branches of {len(cov['modules'])} driven modules "
          f"({cfg.out}/coverage.md)" if t else "coverage: no data recorded")
    f = (cov or {}).get("focus")
    if f:
        t = f["total"]
        print(f"coverage of the target's functions of interest: {t['called']}/{t['functions']} "
              f"called, {t['covered_branches']}/{t['branches']} branches reached")


def _say(args):
    def say(msg: str) -> None:
        if not getattr(args, "quiet", False):
            print(msg, file=sys.stderr, flush=True)
    return say


def _check_target(args, cfg, lock, lv) -> None:
    """The targets load (in the case workers the units of a 1-worker run reuse; with
    ``--no-isolate``, here, where the level checks it): a usage error before any case runs,
    a new run directory removed."""
    try:
        if cfg.isolate:
            for t in cfg.targets:
                case_worker(cfg, t).start()
        elif hasattr(lv, "check_target"):
            lv.check_target(cfg)
    except (ValueError, WorkerSetupError, targets.TargetUnavailable, HarnessError) as e:
        if not args.resume:  # a new directory: nothing of it is left behind (--out reusable)
            lock.release()
            os.unlink(lock.path)
            for d in (os.path.join(cfg.out, "findings"), cfg.out):
                if os.path.isdir(d) and not os.listdir(d):
                    os.rmdir(d)
        if isinstance(e, HarnessError):  # a worker that did not start: exit 3, not a usage error
            raise
        raise UsageError(str(e)) from None


def _locked_run(args, cfg) -> int:
    write_run_meta(cfg)
    res = run_campaign(cfg, say=_say(args), session_start=COMMAND_START)
    stats = per_kind(res.rows)
    print()
    print(campaign_table(stats))
    seen: dict[str, dict] = {}
    for r in res.findings:
        seen.setdefault(r["finding"], r)
    if seen:  # as the bundles' own command and the report: relative to the run directory
        print(f"repro commands run from the run directory ({cfg.out}):")
    for sig, r in seen.items():
        rel = "findings/" + signature_filename(sig) + ".json"
        print(f"FINDING {sig}: {r.get('message') or ''}")
        if os.path.exists(os.path.join(cfg.out, rel)):
            print(f"  swafuzz repro {rel}")
    known = print_known(res.rows)
    if cfg.coverage:
        _combine_coverage(cfg)
    generated = sum(s["generated"] for s in stats.values())
    shrunk = sum(s["shrunk"] for s in stats.values())
    with open(os.path.join(cfg.out, "summary.md"), "w") as f:
        f.write(f"# swafuzz run: target {', '.join(cfg.targets)}, impl {cfg.impl}, executors "
                f"{','.join(cfg.executors)}, seed {cfg.seed}, workers {cfg.workers}"
                + (f", shard {shard_label(cfg.shard)}" if cfg.shard else "") + "\n\n"
                f"{campaign_table(stats, markdown=True)}\n")
    # the whole run, every session of it (--resume): steps of every logged case, all wall time
    log_rows = read_log(os.path.join(cfg.out, "cases.jsonl"))
    steps = checked_steps(log_rows, res.rows)
    seconds = res.prior_seconds + res.seconds
    write_run_meta(cfg, seconds=round(seconds, 3), forward_steps=steps, stats=stats,
                            interrupted=res.interrupted, known=known)
    print(f"{generated} cases generated, {shrunk} run while shrinking, {len(seen)} distinct "
          f"findings; {steps} forward steps checked in {seconds:.1f} s "
          f"({steps / max(seconds, 1e-9):.1f} steps/s"
          + (f"; over every session of the run, this one {res.seconds:.1f} s)"
             if res.prior_seconds else ")"))
    short = examples_note(None if cfg.examples >= 10**6 else sum(
        u.examples for u in shard_units(cfg)), res.rows, generated)
    if short:
        print(short)
    if cfg.budget_s and seconds > cfg.budget_s + 1:
        print(f"budget: the run took {seconds:.0f} s of its --budget {cfg.budget_s:g}s: every "
              "scenario kind runs at least one Case, and a Case is not stopped once started")
    print(f"results: {os.path.abspath(cfg.out)} (swafuzz report {cfg.out})")
    if res.interrupted:
        logged = sum(1 for r in log_rows if "case" in r)
        part = sum(1 for r in res.rows if r.get("partial"))
        print(f"interrupted: {logged} cases are recorded in {cfg.out}/cases.jsonl (the table "
              f"counts {len(res.rows) - part} finished units and the cases of {part} "
              f"unfinished one{'s' if part != 1 else ''}); continue with: swafuzz run "
              f"--resume {cfg.out}")
        return EXIT_INTERRUPTED
    return EXIT_FINDINGS if seen else EXIT_CLEAN


# --------------------------------------------------------------------------- repro
def cmd_repro(args) -> int:
    if level.of_file(args.file) == "server":
        return _repro_server(args)
    try:
        bundle = read_bundle(args.file)  # its errors already name the file
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        case = load_case(bundle["case"])
    except (ValueError, CaseError) as e:
        raise UsageError(f"{args.file}: {e}") from None
    for name in ("target", "impl"):  # the fields read below: strings when present
        if not isinstance(bundle.get(name, ""), str):
            raise UsageError(f"{args.file}: field {name!r} must be a string "
                             f"(got {type(bundle[name]).__name__})")
    if not args.target and bundle.get("plugin"):
        try:  # the bundle names the plugin its target came from
            plugins.load_record(bundle["plugin"],
                                source=f"{args.file}: target {bundle.get('target')!r}")
        except plugins.PluginError as e:
            raise UsageError(str(e)) from None
    args.target = args.target or bundle.get("target", "unified")
    args.impl = args.impl or bundle.get("impl", "auto")
    validate_common(args)
    why = targets.supports(args.target, case)  # e.g. a ring Case on a release without the ring
    if why:
        raise UsageError(f"{args.file}: target {args.target} cannot run this Case: {why}")
    executors = resolve_executors(args.executor)
    try:
        if args.no_isolate:
            v = execute(case, args.target, args.impl, executors)
        else:  # a crash inside the case is reported, not the end of this command
            v = _isolated(lambda: CaseWorker(args.target, resolve_impl(args.impl), executors),
                          lambda w: w.run(case))
    except InvalidCase as e:
        raise UsageError(f"{args.file}: field 'case' cannot run: {e}") from None
    if v.failed:
        return _failed(v, f", {v.checks_run} checks")
    print(f"PASS: {v.checks_run} checks clean on target {args.target} (impl {args.impl}, "
          f"executor {args.executor})")
    return EXIT_CLEAN


def _failed(v, more: str) -> int:
    """A replayed Case's failures, printed (``more``: after the count); exit 1."""
    print(f"FAIL {v.signature()} ({len(v.failures)} failures{more})")
    for f in v.failures:
        print(f"  {f.check}: {f.message}")
    return EXIT_FINDINGS


def _isolated(make, run):
    """``run(worker)`` in a case worker built by ``make()`` and started (a worker that cannot
    be built or set up for the target: a usage error naming why), closed afterwards."""
    try:
        w = make()
        w.start()
    except (ValueError, WorkerSetupError) as e:
        raise UsageError(str(e)) from None
    try:
        return run(w)
    finally:
        w.close()


def _repro_server(args) -> int:
    """A server-level bundle replayed (in a case worker unless ``--no-isolate``); a failure
    the repository ledger knows names its entry."""
    with open(args.file, encoding="utf-8") as f:
        bundle = json.load(f)
    lv = level.get("server")
    try:
        case = lv.load(bundle.get("case"))
    except CaseError as e:
        raise UsageError(f"{args.file}: field 'case': {e}") from None
    target = args.target or bundle.get("target")
    if not isinstance(target, str):
        raise UsageError(f"{args.file}: field 'target': a target name expected (or --target), "
                         f"got {target!r}")
    if "server" not in levels_of(target):
        raise UsageError(f"{args.file}: a server-level bundle; target {target} has no "
                         f"server-level pipeline (runs on: {', '.join(server_targets())})")
    executors = resolve_executors(args.executor or "auto")
    impl, mutant = resolve_impl(args.impl or "auto"), bundle.get("server_mutant")
    try:
        if args.no_isolate:
            try:
                pipe = pipeline_of(target)  # a release lacking a hop: refused by name
            except targets.TargetUnavailable as e:
                raise UsageError(str(e)) from None
            v = execute_server(case, pipe, executors, mutant, impl)
        else:  # a Case that crashes its process is reported, not the end of this command
            v = _isolated(lambda: CaseWorker(target, impl, executors, server=True,
                                             server_mutant=mutant), lambda w: w.run_server(case))
    except CaseRefused as e:
        raise UsageError(f"{args.file}: {e}") from None
    if v.failed:
        eid = lv.repro_known(target, case, v)
        return _failed(v, f"; known: ledger entry {eid}" if eid else "")
    stop = f"; the run stopped out of scope: {v.out_of_scope}" if v.out_of_scope else ""
    print(f"PASS: server-level Case clean on target {target} ({v.target_version}){stop}")
    return EXIT_CLEAN
