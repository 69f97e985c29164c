"""``swafuzz run --level server`` and the replay of a server-level bundle (``swafuzz repro``).

A server-level campaign draws Cases of the request-level kinds (:data:`swafuzz.server.
strategies.KINDS`) with Hypothesis and runs them through the component level's run pipeline
(:mod:`swafuzz.harness.pipeline`: one unit per kind, its Cases in a crash-isolating case worker,
``--workers N`` unit processes, ``--budget``, ``--resume``, Ctrl-C, the case log
``cases.jsonl``), the server level's part being :mod:`swafuzz.harness.server_unit`: each Case
runs through the target's pipeline (:func:`swafuzz.harness.server_exec.run_all`) in the case
worker and is judged there by the server-level oracle. A Case that takes the worker down
(segfault, abort) is a ``server:crash`` finding, written before the next Case runs, and a fresh
worker runs the next. The first failure of a kind is shrunk and written as a bundle,
``OUT/findings/server-<check>.<kind>.json``, replayable with ``swafuzz repro`` (in a case worker
too, unless ``--no-isolate``). ``run.json`` records the level, kinds, cases, seconds and cases
per second, and its findings relative to the run directory, with the run's configuration
(``config``: what ``--resume`` continues); ``summary.md`` and ``junit.xml``
(:mod:`swafuzz.reports.server_summary`) follow. ``--examples`` counts Cases in all, split over
the kinds (default 300), as at component level.

``--ledger`` / ``--known-cap`` as at component level (:mod:`swafuzz.harness.known`: ``auto``,
``none`` or a file; the first Case of an entry shrunk within it and written as
``findings/server-<check>.<kind>.known-<entry>.json``, later ones counted, the search going on,
the entry's region excluded after ``--known-cap`` Cases), over the ledger's server-level
answers (:class:`swafuzz.harness.server_unit.ServerKnownLedger`): ``run.json``'s ``known``
(entry id -> signature, Cases, bundle), the exit code counting new findings only;
``swafuzz repro`` of a bundle names the entry that knows its failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from swafuzz import features, targets
from swafuzz.harness import pipeline, resume
from swafuzz.harness.cli_common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    UsageError,
    check_impl_executor,
    load_plugins,
    parse_duration,
    positive,
    prepare_out,
)
from swafuzz.harness.known import load_entries, print_known, resolve_ledger, target_release
from swafuzz.harness.ledger import DEFAULT_LEDGER, LedgerError
from swafuzz.harness.ledger_server import server_known
from swafuzz.harness.run import CaseRefused, resolve_executors, resolve_impl
from swafuzz.harness.runconfig import RunConfig, read_run_config
from swafuzz.harness.runlock import RunDirBusy, RunLock
from swafuzz.harness.server_exec import (  # noqa: F401 - the server level's API, from here too
    ServerResult,
    execute_server,
    levels_of,
    mutants_of,
    pipeline_of,
    run_all,
    server_targets,
)
from swafuzz.harness.server_unit import write_json_atomic
from swafuzz.harness.worker import CaseWorker, WorkerSetupError
from swafuzz.reports.bundle import atomic_write_text
from swafuzz.reports.server_summary import write_server_reports
from swafuzz.server.case import ServerCaseError, parse
from swafuzz.server.run import Pipeline
from swafuzz.targets import plugins

#: the run options a server-level run does not take: (flag, attribute, default, why)
UNSUPPORTED = (
    ("--ray", "ray", None, "a fleet task runs component-level units only"),
    ("--shard", "shard", None, "swafuzz merge joins component-level run directories only"),
    ("--db", "db", None, "the example database is not wired into the server level"),
    ("--coverage", "coverage", False, "coverage is measured for component-level Cases only"),
    ("--coverage-bias", "coverage_bias", False, "coverage is measured for component-level "
     "Cases only"))
#: cases of a server-level run without --examples (in all, split over its kinds)
DEFAULT_EXAMPLES = 300


def check_level(args) -> list[str]:
    """The kinds of a ``--level server`` run (exit 2 on a target without the level, a
    component kind or a run option the level does not take)."""
    tgts = args.target if isinstance(args.target, list) else [args.target or "unified"]
    for t in tgts:
        if "server" not in levels_of(t):
            raise UsageError(f"--level server: target {t} has no server-level pipeline "
                             f"(levels of {t}: {', '.join(levels_of(t))}; --level server runs on: "
                             f"{', '.join(server_targets())})")
    if len(tgts) != 1:
        raise UsageError(f"--target: one target at server level (got {', '.join(tgts)})")
    check_options(args)
    m = args.server_mutant = getattr(args, "server_mutant", None)
    known = mutants_of(tgts[0])
    if m is not None and m not in known:
        raise UsageError(f"--server-mutant {m}: not a server mutant of target {tgts[0]} "
                         f"(allowed: {', '.join(known) or 'none'})")
    kinds = args.scenario or list(features.default_kind_names("server"))
    for k in kinds:
        if k not in features.kind_names("server"):
            raise UsageError(f"--scenario {k}: not a server-level kind (allowed with --level "
                             f"server: {', '.join(features.kind_names('server'))})")
    return kinds


def check_options(args) -> None:
    for flag, name, default, why in UNSUPPORTED:
        if getattr(args, name, default) != default:
            raise UsageError(f"{flag}: not with --level server ({why})")


def server_config(args) -> RunConfig:
    """Flags -> the RunConfig of a server-level run (``level`` "server"), or the RunConfig of
    the server-level run being resumed (flags that would change it: exit 2 naming them)."""
    if args.resume:
        return _resumed(args)
    kinds = check_level(args)
    target = args.target[0] if isinstance(args.target, list) else args.target
    args.impl = args.impl or "auto"
    check_impl_executor(args)
    if args.examples is not None and args.examples < 1:
        raise UsageError(f"--examples: must be >= 1 (got {args.examples})")
    positive("--workers", args.workers)
    if args.shrink_budget < 0:
        raise UsageError(f"--shrink-budget: must be >= 0 (got {args.shrink_budget})")
    budget_s = parse_duration("--budget", args.budget) if args.budget else None
    positive("--known-cap", args.known_cap)
    try:
        ledger = resolve_ledger(args.ledger, [target])
    except LedgerError as e:
        raise UsageError(f"--ledger: {e} (or 'auto', 'none')") from None
    out = args.out or "swafuzz-out/server"
    if os.path.isdir(out) and os.listdir(out):
        raise UsageError(f"--out {out}: exists and is not empty (a server-level run writes a "
                         "new directory)")
    prepare_out(out, resume=False)
    examples = args.examples or DEFAULT_EXAMPLES
    if budget_s and not getattr(args, "examples_given", True):
        examples = 10**6  # --budget without --examples: the time decides
    return RunConfig(targets=[target], impl=resolve_impl(args.impl or "auto"),
                     executors=resolve_executors(args.executor), executor_label=args.executor,
                     kinds=list(dict.fromkeys(kinds)), examples=examples, budget_s=budget_s,
                     seed=args.seed, workers=args.workers, shrink_budget=args.shrink_budget,
                     out=out, isolate=not args.no_isolate, plugins=plugins.loaded_modules(),
                     db="none", ledger=ledger, known_cap=args.known_cap, level="server",
                     server_mutant=args.server_mutant)


def _resumed(args) -> RunConfig:
    prepare_out(args.resume, resume=True)
    try:
        cfg = read_run_config(args.resume)
    except (OSError, ValueError, TypeError) as e:
        raise UsageError(f"--resume: {args.resume}/run.json is unreadable: {e}") from None
    if cfg.level != "server":
        raise UsageError(f"--resume {args.resume}: a component-level run; resume it without "
                         "--level server")
    check_options(args)
    cfg.out = args.resume
    load_plugins(argparse.Namespace(plugin=cfg.plugins))
    mutant = getattr(args, "server_mutant", None)
    if mutant is not None and mutant != cfg.server_mutant:
        raise UsageError(f"--resume: continues {args.resume} as it was configured; not with: "
                         f"--server-mutant {mutant} (the run's: {cfg.server_mutant or 'none'})")
    cfg = resume.apply(args, cfg)
    args.target = cfg.targets
    return cfg


def cmd_server_run(args, session_start: float | None = None) -> int:
    cfg = server_config(args)
    os.makedirs(os.path.join(cfg.out, "findings"), exist_ok=True)
    fresh = not args.resume
    try:  # one live run per directory (a second --resume while it runs: exit 2)
        lock = RunLock(cfg.out).acquire()
    except RunDirBusy as e:
        raise UsageError(f"{'--resume' if args.resume else '--out'}: {e}") from None
    try:
        _check_target(cfg, lock, fresh)
        return _locked_run(args, cfg, session_start)
    finally:
        lock.release()


def _check_target(cfg: RunConfig, lock: RunLock, fresh: bool) -> None:
    """The target's server level loads (in the case worker that the units of a 1-worker run
    reuse, or here with ``--no-isolate``), before anything else is written; a new run
    directory is removed when it does not."""
    try:
        if cfg.isolate:
            pipeline.case_worker(cfg, cfg.target).start()
        else:
            _available(cfg.target)
    except (ValueError, WorkerSetupError, targets.TargetUnavailable) as e:
        if fresh:
            lock.release()
            os.unlink(lock.path)
            os.rmdir(os.path.join(cfg.out, "findings"))
            if not os.listdir(cfg.out):
                os.rmdir(cfg.out)
        raise UsageError(str(e)) from None


def _locked_run(args, cfg: RunConfig, session_start: float | None) -> int:
    path = os.path.join(cfg.out, "run.json")
    meta = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    meta.update({"level": "server", "target": cfg.target, "seed": cfg.seed,
                 "executors": cfg.executors, "server_mutant": cfg.server_mutant,
                 "workers": cfg.workers, "budget_s": cfg.budget_s, "config": cfg.to_json(),
                 "versions": targets.versions(cfg.target)})
    meta.setdefault("started", time.time())
    write_json_atomic(path, meta)  # what --resume continues, from the first Case on
    quiet = getattr(args, "quiet", False)

    def say(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr, flush=True)

    res = pipeline.run(cfg, say=say, session_start=session_start)
    per_kind, findings = summarize(cfg, res.rows)
    total = sum(k["cases"] for k in per_kind.values())
    secs = res.prior_seconds + res.seconds
    known = print_known(res.rows)  # bundles relative to the run directory, as findings
    for k in known.values():
        k["bundle"] = os.path.relpath(k["bundle"], cfg.out) if k["bundle"] else None
    meta.update({"kinds": per_kind, "cases": total, "seconds": round(secs, 2),
                 "cases_per_second": round(total / secs, 3) if secs else None,
                 "findings": [r["bundle"] for r in findings if r.get("bundle")],
                 "ledger": cfg.ledger, "known": known, "interrupted": res.interrupted})
    write_json_atomic(path, meta)
    write_server_reports(cfg.out, atomic_write_text)
    for kind, k in per_kind.items():
        if k.get("refused"):
            print(f"{kind}: {k['cases']} cases run; the release refused the others: "
                  f"{k['refused']}", file=sys.stderr)
    for r in findings:
        print(f"FINDING {r['finding']} ({r['kind']}): {r.get('message')}"
              + (f"\n  repro (from {cfg.out}): swafuzz repro {r['bundle']}"
                 if r.get("bundle") else ""), file=sys.stderr)
    print(f"server-level run: {total} cases in {secs:.1f} s ({total / max(secs, 1e-9):.2f} "
          f"cases/s), {len(findings)} new findings"
          + (f", {sum(k['cases'] for k in known.values())} Cases of {len(known)} known "
             f"ledger entr{'y' if len(known) == 1 else 'ies'}" if known else "")
          + f" -> {cfg.out}")
    if res.interrupted:
        logged = sum(1 for r in pipeline.read_log(os.path.join(cfg.out, "cases.jsonl"))
                     if "case" in r)
        print(f"interrupted: {logged} cases are recorded in {cfg.out}/cases.jsonl (the counts "
              f"are of finished kinds only); continue with: swafuzz run --resume {cfg.out}")
        return pipeline.EXIT_INTERRUPTED
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def summarize(cfg: RunConfig, rows: list[dict]) -> tuple[dict[str, dict], list[dict]]:
    """The unit rows of a server-level run per kind (``run.json``'s ``kinds``: cases run,
    seconds, Cases stopped out of scope, the finding, the release's refusal) and the unit rows
    with a finding (one per signature and kind), in the run's kind order."""
    per_kind: dict[str, dict] = {}
    findings: dict[tuple[str, str], dict] = {}
    for r in sorted(rows, key=lambda r: (cfg.kinds.index(r["kind"])
                                         if r["kind"] in cfg.kinds else len(cfg.kinds),
                                         r["unit"])):
        k = per_kind.setdefault(r["kind"], {"cases": 0, "seconds": 0.0,
                                            "stopped_out_of_scope": 0, "finding": None})
        k["cases"] += (r.get("generated") or 0) + (r.get("shrunk") or 0)
        k["seconds"] = round(k["seconds"] + (r.get("seconds") or 0.0), 2)
        k["stopped_out_of_scope"] += r.get("stopped_out_of_scope") or 0
        for eid, n in (r.get("known") or {}).items():
            k.setdefault("known", {})[eid] = k.get("known", {}).get(eid, 0) + n
        if r.get("refused"):
            k["refused"] = r["refused"]
        if r.get("finding"):
            k["finding"] = k["finding"] or r["finding"]
            findings.setdefault((r["finding"], r["kind"]), r)
    return per_kind, list(findings.values())


def is_server_run(out: str | None) -> bool:
    """``out`` holds a server-level run (its ``run.json`` says so): ``--resume`` continues it
    at that level without ``--level server``."""
    if not out:
        return False
    try:
        with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
            obj = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(obj, dict) and obj.get("level") == "server"


def is_server_bundle(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(obj, dict) and obj.get("level") == "server"


def cmd_server_repro(args) -> int:
    with open(args.file, encoding="utf-8") as f:
        bundle = json.load(f)
    try:
        case = parse(bundle.get("case"))
    except ServerCaseError as e:
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
            v = execute_server(case, _available(target), executors, mutant, impl)
        else:  # a Case that crashes its process is reported, not the end of this command
            w = CaseWorker(target, impl, executors, server=True, server_mutant=mutant)
            try:
                w.start()
            except (ValueError, WorkerSetupError) as e:
                raise UsageError(str(e)) from None
            try:
                v = w.run_server(case)
            finally:
                w.close()
    except CaseRefused as e:
        raise UsageError(f"{args.file}: {e}") from None
    if v.failed:
        eid = repro_known(target, case, v)
        print(f"FAIL {v.signature()} ({len(v.failures)} failures"
              + (f"; known: ledger entry {eid}" if eid else "") + ")")
        for fl in v.failures:
            print(f"  {fl.check}: {fl.message}")
        return EXIT_FINDINGS
    stop = f"; the run stopped out of scope: {v.out_of_scope}" if v.out_of_scope else ""
    print(f"PASS: server-level Case clean on target {target} ({v.target_version}){stop}")
    return EXIT_CLEAN


def repro_known(target: str, case, v: ServerResult) -> str | None:
    """The repository ledger's entry that knows a failing server-level Case on the installed
    release (:func:`swafuzz.harness.ledger_server.server_known`), or None."""
    try:
        entries = load_entries(DEFAULT_LEDGER)
    except (OSError, LedgerError) as e:
        raise UsageError(f"ledger {DEFAULT_LEDGER}: {e}") from None
    return server_known(entries, target, target_release(target), case.config.server_args(),
                        v.signature())


def _available(target: str) -> Pipeline:
    try:
        return pipeline_of(target)  # a release lacking a hop of the pipeline: refused by name
    except targets.TargetUnavailable as e:
        raise UsageError(str(e)) from None

