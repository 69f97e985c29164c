"""``swafuzz run --resume DIR`` and the other flags of ``run``.

A resume continues the run as configured (``DIR/run.json``), so its units draw the Cases already
logged: a flag that would change the run is refused (exit 2, each named with the run's value).
Accepted: ``--quiet``; a flag repeating the run's own value (a flag is "given" when it is not the
parser's default); ``--ray ADDRESS``; the run's own ``--shard I/N``; ``--workers N`` when the
run's units stay the same.
"""

from __future__ import annotations

import os

from swafuzz.harness.cli.common import UsageError, parse_duration, positive
from swafuzz.harness.fleet.shard import ShardSpecError, label, parse_shard, shard_units
from swafuzz.harness.pipeline.runconfig import RunConfig

#: the defaults of ``swafuzz run``'s flags (cli.build_parser), to tell a given flag
DEFAULTS = {"target": ["unified"], "impl": "auto", "executor": "auto", "scenario": None,
            "examples": 300, "budget": None, "workers": 1, "seed": 0, "out": None,
            "shrink_budget": 150, "db": None, "no_isolate": False, "ledger": "auto",
            "known_cap": 50, "plugin": None, "shard": None, "ray": None,
            "coverage": False, "coverage_bias": False}


def _ledger_of(spec: str) -> str | None:
    return None if spec == "none" else os.path.abspath(spec)


def conflicts(args, cfg: RunConfig) -> list[str]:
    """The flags of ``args`` that would change the resumed run ``cfg``, each as
    ``--flag VALUE (the run's: VALUE)``; [] when the resume can go on."""
    out: list[str] = []

    def given(name: str) -> bool:
        if name == "examples":
            return bool(getattr(args, "examples_given", False))
        return getattr(args, name, DEFAULTS[name]) != DEFAULTS[name]

    def refuse(flag: str, value, theirs) -> None:
        out.append(f"{flag} {value} (the run's: {theirs})")

    if given("out") and os.path.abspath(args.out) != os.path.abspath(args.resume):
        refuse("--out", args.out, args.resume)
    if given("target") and list(dict.fromkeys(args.target)) != cfg.targets:
        refuse("--target", ",".join(args.target), ",".join(cfg.targets))
    if given("impl") and args.impl != cfg.impl:
        refuse("--impl", args.impl, cfg.impl)
    if given("executor") and args.executor != cfg.executor_label:
        refuse("--executor", args.executor, cfg.executor_label)
    if given("scenario") and list(dict.fromkeys(args.scenario)) != cfg.kinds:
        refuse("--scenario", ",".join(args.scenario), ",".join(cfg.kinds))
    if given("examples") and args.examples != cfg.examples:
        refuse("--examples", args.examples,
               cfg.examples if cfg.examples < 10**6 else "no cap (--budget)")
    if given("budget") and parse_duration("--budget", args.budget) != cfg.budget_s:
        refuse("--budget", args.budget, f"{cfg.budget_s:g}s" if cfg.budget_s else "none")
    if given("seed") and args.seed != cfg.seed:
        refuse("--seed", args.seed, cfg.seed)
    if given("shrink_budget") and args.shrink_budget != cfg.shrink_budget:
        refuse("--shrink-budget", args.shrink_budget, cfg.shrink_budget)
    if given("db") and args.db != cfg.db:
        refuse("--db", args.db, cfg.db or "default")
    if given("no_isolate") and cfg.isolate:
        refuse("--no-isolate", "", "isolated")
    if given("ledger") and args.ledger != "auto" and _ledger_of(args.ledger) != cfg.ledger:
        refuse("--ledger", args.ledger, cfg.ledger or "none")
    if given("known_cap") and args.known_cap != cfg.known_cap:
        refuse("--known-cap", args.known_cap, cfg.known_cap)
    if given("plugin") and not set(args.plugin) <= set(cfg.plugins):
        refuse("--plugin", ",".join(args.plugin), ",".join(cfg.plugins) or "none")
    bias, on = getattr(args, "coverage_bias", False), getattr(args, "coverage", False)
    want_cov = "bias" if bias else "on" if on else None
    if (given("coverage") or given("coverage_bias")) and want_cov != cfg.coverage:
        refuse("--coverage-bias" if bias else "--coverage", "",
               f"coverage {cfg.coverage or 'off'}")
    if given("shard"):
        try:
            want = parse_shard(args.shard)
        except ShardSpecError as e:
            raise UsageError(str(e)) from None
        if not cfg.shard or tuple(want) != tuple(cfg.shard):
            refuse("--shard", args.shard, label(cfg.shard) if cfg.shard else "not sharded")
    if given("workers") and args.workers != cfg.workers:
        other = RunConfig.from_json({**cfg.to_json(), "workers": args.workers})
        if [u.id for u in shard_units(other)] != [u.id for u in shard_units(cfg)]:
            refuse("--workers", args.workers, f"{cfg.workers}; it would change the run's units")
    return out


def apply(args, cfg: RunConfig) -> RunConfig:
    """``cfg`` with what a resume may change (``--workers``); UsageError naming every flag that
    would change the run (see the module docstring)."""
    positive("--workers", args.workers)
    bad = conflicts(args, cfg)
    if bad:
        raise UsageError(f"--resume: continues {args.resume} as it was configured; not with: "
                         f"{'; '.join(bad)}. Drop these flags, or start a new run with --out")
    if args.workers != DEFAULTS["workers"]:
        cfg.workers = args.workers
    if getattr(args, "ray", None):  # where the units run, not what they run
        cfg.ray = args.ray
    return cfg
