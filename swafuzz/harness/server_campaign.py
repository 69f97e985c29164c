"""``swafuzz run --level server`` and the replay of a server-level bundle (``swafuzz repro``).

A server-level campaign draws Cases of the request-level kinds (:data:`swafuzz.server.
strategies.KINDS`) with Hypothesis, runs each through the target's pipeline
(:func:`swafuzz.server.run.execute`, in this process) and judges it with the server-level oracle;
the first failure of a kind is shrunk by Hypothesis and written as a bundle,
``OUT/findings/server-<check>.<kind>.json``, replayable with ``swafuzz repro``. ``run.json``
records the level, kinds, cases, seconds and cases per second, and its findings relative to the
run directory; ``summary.md`` and ``junit.xml`` (:mod:`swafuzz.reports.server_summary`) follow. ``--examples`` counts Cases
in all, split over the kinds (default 300), as at component level.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time

from hypothesis import HealthCheck, Phase, given, reject, seed, settings
from hypothesis.errors import Unsatisfiable

from swafuzz import features, targets
from swafuzz.harness.cli_common import EXIT_CLEAN, EXIT_FINDINGS, UsageError
from swafuzz.harness.executors import get_executor
from swafuzz.harness.run import resolve_executors, resolve_impl
from swafuzz.reports.bundle import atomic_write_text
from swafuzz.reports.server_summary import write_server_reports
from swafuzz.server.case import ServerCase, ServerCaseError, parse
from swafuzz.server.run import Pipeline, ServerRefused, ServerVerdict, execute
from swafuzz.server.strategies import DEFAULT_KINDS, KINDS, server_cases

BUNDLE_VERSION = 1


def levels_of(target: str) -> tuple[str, ...]:
    """The levels ``target`` runs: a target offering a ``server_pipeline`` hook has both."""
    t = targets.find_target(target)
    return ("component", "server") if getattr(t, "server_pipeline", None) else ("component",)


def server_targets() -> list[str]:
    return [t for t in targets.available_targets() if "server" in levels_of(t)]


def mutants_of(target: str) -> dict[str, str]:
    hook = getattr(targets.find_target(target), "server_mutants", None)
    return hook() if callable(hook) else {}


def _optional(ref: str | None):
    """``module:attr`` loaded, or None when ``ref`` is None or its module does not exist."""
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
#: the run options a server-level run does not take: (flag, attribute, default)
UNSUPPORTED = (("--budget", "budget", None), ("--workers", "workers", 1), ("--ray", "ray", None),
               ("--resume", "resume", None), ("--db", "db", None), ("--shard", "shard", None),
               ("--coverage", "coverage", False), ("--coverage-bias", "coverage_bias", False),
               ("--ledger", "ledger", "auto"), ("--known-cap", "known_cap", 50),
               ("--shrink-budget", "shrink_budget", 150))
#: cases of a server-level run without --examples (in all, split over its kinds)
DEFAULT_EXAMPLES = 300


def check_level(args) -> list[str]:
    """The kinds of a ``--level server`` run (exit 2 on a target without the level or a
    component kind)."""
    tgts = args.target if isinstance(args.target, list) else [args.target or "unified"]
    for t in tgts:
        if "server" not in levels_of(t):
            raise UsageError(f"--level server: target {t} has no server-level pipeline "
                             f"(levels of {t}: {', '.join(levels_of(t))}; --level server runs on: "
                             f"{', '.join(server_targets())})")
    if len(tgts) != 1:
        raise UsageError(f"--target: one target at server level (got {', '.join(tgts)})")
    for flag, name, default in UNSUPPORTED:
        if getattr(args, name, default) != default:
            raise UsageError(f"{flag}: not with --level server (a server-level run takes "
                             "--target, --scenario, --examples, --seed, --out, --executor, "
                             "--impl and --server-mutant; it runs its Cases in this process)")
    m = args.server_mutant = getattr(args, "server_mutant", None)
    known = mutants_of(tgts[0])
    if m is not None and m not in known:
        raise UsageError(f"--server-mutant {m}: not a server mutant of target {tgts[0]} "
                         f"(allowed: {', '.join(known) or 'none'})")
    kinds = args.scenario or list(DEFAULT_KINDS)
    for k in kinds:
        if k not in KINDS:
            raise UsageError(f"--scenario {k}: not a server-level kind (allowed with --level "
                             f"server: {', '.join(KINDS)})")
    return kinds


def write_json_atomic(path: str, obj: dict) -> None:
    atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")


def bundle_of(v: ServerVerdict, target: str, mutant: str | None = None) -> dict:
    return {"bundle_version": BUNDLE_VERSION, "level": "server", "target": target,
            "server_mutant": mutant,
            "signature": v.signature, "case": v.case.to_json(),
            "failures": [f.to_json() for f in v.failures],
            "versions": targets.versions(target),
            "observed": v.obs.to_json()}


def run_all(case: ServerCase, pipeline: Pipeline, executors: list[str],
            mutant: str | None = None, impl: str = "torch") -> ServerVerdict:
    """``case`` under each executor (one eager run when the Case captures no graphs); the
    first failing verdict, else the last."""
    graphs = not case.config.disable_cuda_graph and bool(case.config.cuda_graph_bs_decode)
    v = None
    for name in executors if graphs else executors[:1]:
        v = execute(case, pipeline, impl, executor=get_executor(name), mutant=mutant)
        if v.failed:
            v.failures = [dataclasses.replace(f, message=f"[{name}] {f.message}")
                          for f in v.failures]
            return v
    return v


def _campaign(kind: str, pipeline: Pipeline, examples: int, seed_: int, found: list,
              executors: list[str], mutant: str | None = None,
              impl: str = "torch", refused: list | None = None) -> tuple[int, int]:
    """``(cases run, cases stopped out of scope)`` of one kind; the shrunk failure in
    ``found``. A Case the installed release refuses (its argument check, e.g. a hop it does
    not have) is not run and not counted: its reason lands in ``refused`` (a kind whose every
    Case is refused runs none)."""
    count = [0, 0]
    refused = [] if refused is None else refused

    @seed(seed_)
    @settings(max_examples=examples, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck),
              phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False)
    @given(server_cases(kind))
    def one(case: ServerCase) -> None:
        try:
            v = run_all(case, pipeline, executors, mutant, impl)
        except ServerRefused as e:
            if mutant is None or "server mutant" not in str(e):
                refused[:] = [str(e)]
                reject()
            raise
        count[0] += 1
        count[1] += v.obs.out_of_scope is not None
        if v.failed:
            found[:] = [v]
            raise AssertionError(v.signature)

    try:
        one()
    except (AssertionError, Unsatisfiable):
        pass
    return count[0], count[1]


def cmd_server_run(args) -> int:
    kinds = check_level(args)
    target = args.target[0] if isinstance(args.target, list) else args.target
    executors = resolve_executors(args.executor)
    if args.examples is not None and args.examples < 1:
        raise UsageError(f"--examples: must be >= 1 (got {args.examples})")
    wanted = args.examples or DEFAULT_EXAMPLES
    impl = resolve_impl(args.impl or "auto")
    out = args.out or "swafuzz-out/server"
    if os.path.exists(out) and os.listdir(out):
        raise UsageError(f"--out {out}: exists and is not empty (a server-level run writes a "
                         "new directory)")
    pipeline = _available(target)
    os.makedirs(os.path.join(out, "findings"), exist_ok=True)
    t0, total, findings = time.monotonic(), 0, []
    per_kind = {}
    for i, kind in enumerate(kinds):
        examples = wanted // len(kinds) + (i < wanted % len(kinds))
        if examples == 0:
            continue
        found: list[ServerVerdict] = []
        refused: list[str] = []
        k0 = time.monotonic()
        n, stopped = _campaign(kind, pipeline, examples, args.seed, found, executors,
                               args.server_mutant, impl, refused)
        total += n
        per_kind[kind] = {"cases": n, "seconds": round(time.monotonic() - k0, 2),
                          "stopped_out_of_scope": stopped,
                          "finding": found[0].signature if found else None}
        if refused:
            per_kind[kind]["refused"] = refused[0]
            print(f"{kind}: {n} cases run; the release refused the others: {refused[0]}",
                  file=sys.stderr)
        if found:
            v = found[0]
            rel = os.path.join("findings", f"{v.signature.replace(':', '-')}.{kind}.json")
            write_json_atomic(os.path.join(out, rel), bundle_of(v, target, args.server_mutant))
            findings.append(rel)
            print(f"FINDING {v.signature} ({kind}): {v.failures[0].message}\n  repro (from "
                  f"{out}): swafuzz repro {rel}", file=sys.stderr)
    secs = time.monotonic() - t0
    write_json_atomic(os.path.join(out, "run.json"), {
        "level": "server", "target": target, "kinds": per_kind, "cases": total,
        "seconds": round(secs, 2), "cases_per_second": round(total / secs, 3) if secs else None,
        "findings": findings, "seed": args.seed, "executors": executors,
        "server_mutant": args.server_mutant,
        "versions": targets.versions(target)})
    write_server_reports(out, atomic_write_text)
    print(f"server-level run: {total} cases in {secs:.1f} s ({total / secs:.2f} cases/s), "
          f"{len(findings)} findings -> {out}")
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _available(target: str) -> Pipeline:
    try:
        return pipeline_of(target)  # a release lacking a hop of the pipeline: refused by name
    except targets.TargetUnavailable as e:
        raise UsageError(str(e)) from None


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
    pipeline = _available(target)
    try:
        v = run_all(case, pipeline, resolve_executors(args.executor or "auto"),
                    bundle.get("server_mutant"), resolve_impl(args.impl or "auto"))
    except ServerRefused as e:
        raise UsageError(f"{args.file}: {e}") from None
    if v.failed:
        print(f"FAIL {v.signature} ({len(v.failures)} failures)")
        for fl in v.failures:
            print(f"  {fl.check}: {fl.message}")
        return EXIT_FINDINGS
    stop = f"; the run stopped out of scope: {v.obs.out_of_scope}" if v.obs.out_of_scope else ""
    print(f"PASS: server-level Case clean on target {target} ({v.obs.target_version}){stop}")
    return EXIT_CLEAN
