"""The server level (:class:`ServerLevel`, the :class:`swafuzz.harness.pipeline.level.Level` of
``swafuzz run --level server``): server-level Cases (:mod:`swafuzz.server`) through the target's
server pipeline, in the component level's run pipeline.

What differs is here: Cases drawn by the records' server kinds, run under each executor
(:func:`run_all`) in the case worker or in the unit's process; a Case the release refuses is not
run nor counted (its reason is the unit row's ``refused``); a Case that takes its worker down is
a ``server:crash`` / ``server:timeout`` failure; the ledger's server-level answers classify
(:class:`swafuzz.harness.ledger.known.ServerKnownLedger`); bundles are
``findings/server-<check>.<kind>[.known-<entry>].json`` (:func:`bundle_path`), the smallest Case
per signature and kind. Case rows add ``out_of_scope``; unit rows add ``bundle``,
``stopped_out_of_scope`` and ``refused``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import Any, Callable

from swafuzz import features, targets
from swafuzz.harness.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    UsageError,
    check_impl_executor,
    check_target_kinds,
    parse_duration,
    positive,
    prepare_out,
)
from swafuzz.harness.executors import get_executor
from swafuzz.harness.fleet.shard import ShardSpecError, parse_shard
from swafuzz.harness.fleet.shard import label as shard_label
from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, LedgerError, load_ledger
from swafuzz.harness.ledger.known import (
    ServerKnownLedger,
    print_known,
    resolve_ledger,
    server_known,
    target_release,
    unit_ledger,
)
from swafuzz.harness.ledger.server import model_facts
from swafuzz.harness.pipeline.caselog import read_log
from swafuzz.harness.pipeline.corpus import DatabaseSpecError, check_spec, open_database
from swafuzz.harness.pipeline.coverage import CoverageMissing, run_mode
from swafuzz.harness.pipeline.execute import CaseRefused, resolve_executors, resolve_impl
from swafuzz.harness.pipeline.runconfig import RunConfig
from swafuzz.reports.bundle import atomic_write_json, smaller_there
from swafuzz.reports.junit import write_server_reports
from swafuzz.reports.summary import server_kinds
from swafuzz.server.case import ServerCase, parse
from swafuzz.server.run import Pipeline, ServerRefused, ServerResult, case_size, execute
from swafuzz.server.strategies import server_cases
from swafuzz.targets import plugins

#: cases of a server-level run without --examples (in all, split over its kinds)
DEFAULT_EXAMPLES = 300


def levels_of(target: str) -> tuple[str, ...]:
    """The levels ``target`` runs: a target offering a ``server_pipeline`` hook has both."""
    t = targets.find_target(target)
    return ("component", "server") if getattr(t, "server_pipeline", None) else ("component",)


def server_targets() -> list[str]:
    return [t for t in targets.available_targets() if "server" in levels_of(t)]


def mutants_of(target: str) -> dict[str, str]:
    hook = getattr(targets.find_target(target), "server_mutants", None)
    return hook() if callable(hook) else {}


def _optional(ref: str | None):  # ``module:attr`` loaded; None: no ref, or no module
    if ref is None:
        return None
    try:
        return features.load(ref)
    except ModuleNotFoundError as e:
        if e.name != ref.split(":")[0]:
            raise
        return None


def pipeline_of(target: str) -> Pipeline:
    """``target``'s server level (imports what its hooks name; TargetUnavailable when the
    installed release lacks a hop)."""
    t = targets.get_target(target)  # the target's check_available hook
    return Pipeline(run=features.load(t.server_pipeline),
                    check=_optional(getattr(t, "server_refusal", None)),
                    mutants=mutants_of(target))


def run_all(case: ServerCase, pipeline: Pipeline, executors: list[str],
            mutant: str | None = None, impl: str = "torch") -> ServerResult:
    """``case`` under each executor (one eager run when the Case captures no graphs); the
    first failing verdict, else the last (its seconds: all of them)."""
    graphs = not case.config.disable_cuda_graph and bool(case.config.cuda_graph_bs_decode)
    v, seconds = None, 0.0
    for name in executors if graphs else executors[:1]:
        v = execute(case, pipeline, impl, executor=get_executor(name), mutant=mutant)
        seconds += v.seconds
        if v.failed:
            v.failures = [dataclasses.replace(f, message=f"[{name}] {f.message}")
                          for f in v.failures]
            break
    v.seconds = seconds
    return v


def execute_server(case: ServerCase, pipeline: Pipeline, executors: list[str],
                   mutant: str | None, impl: str) -> ServerResult:
    """Run and judge ``case`` in this process; :class:`~swafuzz.harness.pipeline.execute.CaseRefused` when
    the target does not run it (its reason)."""
    try:
        return run_all(case, pipeline, executors, mutant, impl)
    except ServerRefused as e:
        raise CaseRefused(str(e)) from None


def bundle_of(v: ServerResult, target: str, mutant: str | None = None) -> dict:
    """The finding bundle of a failing :class:`ServerResult`."""
    return {"bundle_version": 1, "level": "server", "target": target,
            "server_mutant": mutant, "signature": v.signature(), "case": v.case.to_json(),
            "failures": [f.to_json() for f in v.failures],
            "versions": targets.versions(target), "release": targets.release(target),
            "observed": v.observed}


def bundle_path(signature: str, kind: str, suffix: str = "") -> str:
    """A server-level finding's bundle, relative to the run directory."""
    return os.path.join("findings", f"{signature.replace(':', '-')}.{kind}{suffix}.json")


# --------------------------------------------------------------------- in the case worker
_PIPELINES: dict[str, Pipeline] = {}


def prepare(target: str) -> Pipeline:
    """This process's server level of ``target`` (resolved once; imports the release)."""
    if target not in _PIPELINES:
        _PIPELINES[target] = pipeline_of(target)
    return _PIPELINES[target]


# --------------------------------------------------------------------- the level
class ServerLevel:
    """What a unit does with server-level Cases (one instance per unit: it keeps the reason
    the release gave for the Cases it refused)."""

    name = "server"
    #: the run options a server-level run does not take: (flag, attribute, default, message)
    unsupported = ()

    def __init__(self) -> None:
        self.refused: str | None = None

    @staticmethod
    def known(cfg, unit):
        return unit_ledger(cfg.ledger, unit.target, cls=ServerKnownLedger)

    @staticmethod
    def strategy(kind: str):
        return server_cases(kind)

    @staticmethod
    def size(case: ServerCase) -> tuple[int, int, int]:
        return case_size(case)

    @staticmethod
    def load(case_json: dict[str, Any]) -> ServerCase:
        return parse(case_json)

    @staticmethod
    def replayed(c: ServerCase, row: dict[str, Any]) -> ServerResult:
        if row.get("failed"):
            return ServerResult.from_json(c, row["verdict"])
        return ServerResult(c, [], row.get("out_of_scope"), seconds=row.get("seconds", 0.0),
                            checks_run=row.get("checks", 0))

    def _refusing(self, run: Callable[[ServerCase], ServerResult]) -> Callable:
        def run_one(case: ServerCase) -> ServerResult:
            try:
                return run(case)
            except CaseRefused as e:
                self.refused = str(e)
                raise
        return run_one

    def in_worker(self, worker) -> Callable:
        return self._refusing(worker.run_server)

    def in_process(self, cfg, unit) -> Callable:
        pipeline = prepare(unit.target)
        return self._refusing(lambda case: execute_server(case, pipeline, cfg.executors,
                                                          cfg.server_mutant, cfg.impl))

    @staticmethod
    def row_extra(cfg, case: ServerCase, v: ServerResult) -> dict[str, Any]:
        return {"out_of_scope": v.out_of_scope}

    @staticmethod
    def finding(cfg, unit, v: ServerResult) -> dict[str, Any]:
        return {**bundle_of(v, unit.target, cfg.server_mutant), "kind": unit.kind}

    @staticmethod
    def write(out: str, rec: dict[str, Any], suffix: str, smallest: bool) -> str:
        """Write the bundle ``rec``; with ``smallest``, unless the one already there (another
        unit's of the same kind) holds a smaller Case."""
        path = os.path.join(out, bundle_path(rec["signature"], rec["kind"], suffix))
        if smallest and smaller_there(path, rec, lambda c: case_size(parse(c))):
            return path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # the repro line from the run directory, as a component-level bundle's
        rec = {**rec, "command": "swafuzz repro " + os.path.relpath(path, out).replace(os.sep, "/")}
        atomic_write_json(path, rec)
        return path

    def unit_extra(self, out: str, unit, path: str | None, res) -> dict[str, Any]:
        stopped = sum(1 for r in read_log(os.path.join(out, "cases.jsonl"))
                      if r.get("unit") == unit.id and r.get("out_of_scope"))
        return {"bundle": os.path.relpath(path, out) if path else None,
                "stopped_out_of_scope": stopped, "refused": self.refused}

    # ----------------------------------------------------------------- swafuzz run / repro
    @staticmethod
    def check_args(args) -> list[str]:
        """The kinds of a ``--level server`` run (exit 2 on a target without the level, a
        component kind or an unknown server mutant)."""
        tgts = args.target if isinstance(args.target, list) else [args.target or "unified"]
        for t in tgts:
            if "server" not in levels_of(t):
                raise UsageError(f"--level server: target {t} has no server-level pipeline "
                                 f"(levels of {t}: {', '.join(levels_of(t))}; --level server "
                                 f"runs on: {', '.join(server_targets())})")
        if len(tgts) != 1:
            raise UsageError(f"--target: one target at server level (got {', '.join(tgts)})")
        m = args.server_mutant = getattr(args, "server_mutant", None)
        known = mutants_of(tgts[0])
        if m is not None and m not in known:
            raise UsageError(f"--server-mutant {m}: not a server mutant of target {tgts[0]} "
                             f"(allowed: {', '.join(known) or 'none'})")
        kinds = args.scenario or list(features.default_kind_names("server"))
        allowed = features.kind_names("server")
        for k in kinds:
            if k not in allowed:
                raise UsageError(f"--scenario {k}: not a server-level kind (allowed with "
                                 f"--level server: {', '.join(allowed)})")
        return kinds

    def config(self, args) -> RunConfig:
        """Flags -> the RunConfig of a new server-level run (``level`` "server")."""
        kinds = self.check_args(args)
        target = args.target[0] if isinstance(args.target, list) else args.target
        args.impl = args.impl or "auto"
        check_impl_executor(args)
        if args.examples is not None and args.examples < 1:
            raise UsageError(f"--examples: must be >= 1 (got {args.examples})")
        positive("--workers", args.workers)
        positive("--shrink-budget", args.shrink_budget, 0)
        budget_s = parse_duration("--budget", args.budget) if args.budget else None
        positive("--known-cap", args.known_cap)
        try:
            ledger = resolve_ledger(args.ledger, [target])
        except LedgerError as e:
            raise UsageError(f"--ledger: {e} (or 'auto', 'none')") from None
        kinds = check_target_kinds([target], kinds, bool(args.scenario))  # the kinds' Since
        try:
            cov = run_mode(args)  # measured in the case workers (harness.pipeline.coverage)
        except CoverageMissing as e:
            raise UsageError(str(e)) from None
        try:  # --shard I/N: this run's units of the whole campaign (swafuzz merge joins them)
            shard = parse_shard(args.shard) if args.shard is not None else None
        except ShardSpecError as e:
            raise UsageError(str(e)) from None
        db = "none" if args.db is None else args.db  # no example database unless asked
        try:  # (with --ray the CLI checked it first: ray importable, a shared corpus or none)
            check_spec(db)
        except DatabaseSpecError as e:
            raise UsageError(str(e)) from None
        out = args.out or "swafuzz-out/server"
        if os.path.isdir(out) and os.listdir(out):
            raise UsageError(f"--out {out}: exists and is not empty (a server-level run writes "
                             "a new directory)")
        prepare_out(out, resume=False)
        if "://" in db:
            try:
                open_database(db, out)  # reachable before anything runs (a ping)
            except DatabaseSpecError as e:
                raise UsageError(str(e)) from None
        examples = args.examples or DEFAULT_EXAMPLES
        if budget_s and not getattr(args, "examples_given", True):
            examples = 10**6  # --budget without --examples: the time decides
        return RunConfig(targets=[target], impl=resolve_impl(args.impl or "auto"),
                         executors=resolve_executors(args.executor),
                         executor_label=args.executor, kinds=list(dict.fromkeys(kinds)),
                         examples=examples, budget_s=budget_s, seed=args.seed,
                         workers=args.workers, shrink_budget=args.shrink_budget, out=out,
                         isolate=not args.no_isolate, plugins=plugins.loaded_modules(),
                         db=db, shard=shard, ray=args.ray, ledger=ledger, known_cap=args.known_cap, level="server",
                         server_mutant=args.server_mutant, coverage=cov)

    @staticmethod
    def check_resume(args, cfg: RunConfig) -> None:
        mutant = getattr(args, "server_mutant", None)
        if mutant is not None and mutant != cfg.server_mutant:
            raise UsageError(f"--resume: continues {args.resume} as it was configured; not "
                             f"with: --server-mutant {mutant} (the run's: "
                             f"{cfg.server_mutant or 'none'})")

    @staticmethod
    def check_target(cfg: RunConfig) -> None:  # --no-isolate: its server level loads here
        pipeline_of(cfg.target)

    @staticmethod
    def start_meta(cfg: RunConfig) -> dict[str, Any]:
        """``run.json`` before the first Case (what ``--resume`` continues)."""
        path = os.path.join(cfg.out, "run.json")
        meta = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                meta = json.load(f)
        meta.update({"command": "run", "level": "server", "target": cfg.target,
                     "seed": cfg.seed, "shard": shard_label(cfg.shard),
                     "executors": cfg.executors, "server_mutant": cfg.server_mutant,
                     "workers": cfg.workers, "budget_s": cfg.budget_s,
                     "config": cfg.to_json(), "versions": targets.versions(cfg.target)})
        meta.setdefault("started", time.time())
        atomic_write_json(path, meta)
        return meta

    def report(self, args, cfg: RunConfig, res) -> int:
        """``run.json``'s results, ``summary.md`` / ``junit.xml`` and what the CLI prints."""
        meta = self.start_meta(cfg)
        per_kind, findings = server_kinds(cfg.kinds, res.rows)
        total = sum(k["cases"] for k in per_kind.values())
        secs = res.prior_seconds + res.seconds
        known = print_known(res.rows)  # bundles relative to the run directory, as findings
        for k in known.values():
            k["bundle"] = os.path.relpath(k["bundle"], cfg.out) if k["bundle"] else None
        meta.update({"kinds": per_kind, "cases": total, "seconds": round(secs, 2),
                     "cases_per_second": round(total / secs, 3) if secs else None,
                     "findings": [r["bundle"] for r in findings if r.get("bundle")],
                     "ledger": cfg.ledger, "known": known, "interrupted": res.interrupted})
        atomic_write_json(os.path.join(cfg.out, "run.json"), meta)
        write_server_reports(cfg.out)
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
            logged = sum(1 for r in read_log(os.path.join(cfg.out, "cases.jsonl"))
                         if "case" in r)
            print(f"interrupted: {logged} cases are recorded in {cfg.out}/cases.jsonl (the "
                  "counts are of finished kinds only); continue with: swafuzz run --resume "
                  f"{cfg.out}")
            return EXIT_INTERRUPTED
        return EXIT_FINDINGS if findings else EXIT_CLEAN

    @staticmethod
    def repro_known(target: str, case: ServerCase, v: ServerResult) -> str | None:
        """The repository ledger's entry knowing a failing Case on the installed release."""
        try:
            entries = load_ledger(DEFAULT_LEDGER)
        except (OSError, LedgerError) as e:
            raise UsageError(f"ledger {DEFAULT_LEDGER}: {e}") from None
        return server_known(entries, target, target_release(target),
                            case.config.server_args(), v.signature(), model_facts(case))
