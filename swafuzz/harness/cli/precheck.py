"""Usage errors decided before anything heavy loads: ``swafuzz.__main__`` calls :func:`precheck`
right after parsing, so a mistyped value of any command (``--workers 0``, ``--shard 3/2``, an
unknown target, scenario kind, mutant or check, a bad ``--budget``, ``--out``, ``--db`` or
``bisect --releases``) is answered
(exit 2, one line naming the field) without importing torch, Triton, SGLang or an engine.

It reads only the feature records (import-light by design), the bug zoo's names from its
source (:mod:`swafuzz.targets.mutant_names`) and the entry points' names (metadata, not loaded).
What only the heavy side can decide (an impl or executor this machine lacks, what a target's
release supports, a plugin's targets, a Ray cluster, a database server) is left to the command,
which checks everything again: this module only answers earlier, never differently.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os

from swafuzz import features
from swafuzz.harness.cli.failures import check_out_dir, check_out_file
from swafuzz.harness.cli.usage import (
    UsageError,
    available_ram,
    check_choice,
    parse_duration,
    positive,
    prepare_out,
)
from swafuzz.harness.fleet.shard import ShardSpecError, parse_shard
from swafuzz.harness.ledger.releases import spec_names
from swafuzz.harness.pipeline.dbspec import DatabaseSpecError, check_spec
from swafuzz.kernels import IMPLS
from swafuzz.targets import BUILTIN, HIDDEN_PREFIXES, SGLANG_NAME
from swafuzz.targets.mutant_names import declared
from swafuzz.targets.plugins import ENV, GROUP
from swafuzz.targets.registry import TARGETS

__all__ = ["precheck", "target_names"]

EXECUTORS = ("auto", "all", "eager", "tape", "cudagraph")


def precheck(args) -> None:
    """Raise :class:`UsageError` for the first bad value of ``args`` (parsed by
    :func:`swafuzz.harness.cli.parser.build_parser`) this module can judge."""
    check = _CHECKS.get(args.cmd)
    if check is not None:
        check(args)


def target_names() -> list[str] | None:
    """Every target name offered here, or None when a plugin module is named (``--plugin`` or
    ``SWAFUZZ_PLUGINS``: its targets are known only once it is imported)."""
    zoo = declared()
    if zoo is None:
        return None
    eps = [ep.name for ep in md.entry_points(group=GROUP)]
    return sorted({n for n in BUILTIN if not n.startswith(HIDDEN_PREFIXES)} | {SGLANG_NAME}
                  | {f"mutant:{n}" for n, lv in zoo.items() if lv == "component"}
                  | {n for n, lv in zoo.items() if lv == "target"} | set(eps))


def _targets(args, names) -> None:
    if getattr(args, "plugin", None) or os.environ.get(ENV, "").strip():
        return
    known = target_names()
    if known is None:
        return
    for t in names:
        # (hidden: runnable; registered in this process, e.g. by a launcher: the command says
        # whether case workers can reach it)
        if t is not None and t not in known and t not in BUILTIN and t not in TARGETS:
            shown = [n for n in known if not n.startswith("mutant:")]
            raise UsageError(f"--target: {t!r} is not allowed (no such target); choose one of: "
                             f"{', '.join(shown)}, or mutant:NAME (swafuzz list --mutants) (a "
                             "plugin target needs its package installed, --plugin MODULE or "
                             "SWAFUZZ_PLUGINS)")


def _impl_executor(args) -> None:
    if getattr(args, "impl", None) is not None:
        check_choice("--impl", args.impl, ("auto",) + tuple(IMPLS))
    if getattr(args, "executor", None) is not None:
        check_choice("--executor", args.executor, EXECUTORS)


def _mutants(field: str, names, level: str) -> None:
    zoo = declared()
    if zoo is None or not names:
        return
    known = sorted(n for n, lv in zoo.items() if lv == level)
    for n in names:
        if n not in known:
            raise UsageError(f"{field}: {n!r} is not a{' server' if level == 'server' else ''} "
                             f"mutant; known: {', '.join(known)}")


def _run(args) -> None:
    server = args.level == "server"
    if args.resume is not None:
        prepare_out(args.resume, resume=True)
        return  # the run's own flags come from its run.json (the command checks the rest)
    _targets(args, args.target or ["unified"])
    _impl_executor(args)
    lv = "server" if server else "component"
    for k in args.scenario or ():
        if not server and k in features.kind_names("server"):
            raise UsageError(f"--scenario {k}: a server-level kind: add --level server "
                             f"(server-level kinds: {', '.join(features.kind_names('server'))})")
        check_choice("--scenario", k, features.kind_names(lv))
    if args.examples is not None:
        positive("--examples", args.examples)
    positive("--workers", args.workers)
    positive("--shrink-budget", args.shrink_budget, 0)
    positive("--known-cap", args.known_cap)
    if args.budget is not None:
        parse_duration("--budget", args.budget)
    if args.shard is not None:
        try:
            parse_shard(args.shard)
        except ShardSpecError as e:
            raise UsageError(str(e)) from None
    if getattr(args, "db", None) is not None:  # its syntax (the command reaches the server)
        try:
            check_spec(args.db)
        except DatabaseSpecError as e:
            raise UsageError(str(e)) from None
    if args.server_mutant is not None:
        if not server:
            raise UsageError("--server-mutant: only with --level server (component-level "
                             "mutants: swafuzz zoo, --target mutant:NAME)")
        _mutants("--server-mutant", [args.server_mutant], "server")
    if not server:
        kinds = args.scenario or features.default_kind_names()
        why = features.ram_refusal(kinds, available_ram(), 1 if args.ray else args.workers)
        if why:
            raise UsageError(why)
    if args.out is not None:
        prepare_out(args.out, resume=False)


def _zoo(args) -> None:
    check_choice("--budget", args.budget, ("full", "ci"))
    check_choice("--level", args.level, ("component", "server"))
    for name in ("examples", "seeds", "jobs"):
        if getattr(args, name) is not None:
            positive(f"--{name}", getattr(args, name))
    if args.budget == "ci":
        given = [f for f, v in (("--examples", args.examples), ("--seeds", args.seeds))
                 if v is not None]
        if given:
            raise UsageError(f"{given[0]}: not allowed with --budget ci (its budget is fixed: 1 "
                             "seed, 60 cases, 6 shrink cases); use --budget full with --examples "
                             "and --seeds")
    _impl_executor(args)
    bad = (args.json and check_out_file("--json", args.json)) or check_out_dir("--out", args.out)
    if bad:
        raise UsageError(bad)
    if not getattr(args, "plugin", None):  # (a plugin may declare mutants of its own)
        _mutants("--mutant", args.mutant, args.level)


def _list(args) -> None:
    if args.json and not args.features:
        raise UsageError("--json: only with --features (the feature table as JSON)")
    if args.mutants and args.features:
        raise UsageError("--mutants: not with --features (the feature table names each "
                         "feature's mutants)")
    if args.target is not None and (args.features or args.mutants):
        raise UsageError(f"{'--features' if args.features else '--mutants'}: not with --target "
                         "(--target T prints T's description)")
    if args.target is not None:
        _targets(args, [args.target])


def _file(field: str, path: str) -> None:
    """``path`` must be a readable JSON object (a bundle)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise UsageError(f"{field}: cannot read {path!r} ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{field}: {path!r} is not UTF-8 text, so not a JSON bundle "
                         f"(byte {e.start})") from None
    except ValueError as e:
        raise UsageError(f"{field}: {path!r} is not a JSON bundle ({e})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{field}: {path!r} is not a bundle (a JSON object expected)")


def _repro(args) -> None:
    _file("FILE", args.file)
    _targets(args, [args.target])
    _impl_executor(args)


def _bisect(args) -> None:
    _file("FILE", args.file)
    _targets(args, [args.target])
    if args.releases:  # the names' syntax (the command knows the target's releases)
        spec_names(args.releases)


def _report(args) -> None:
    if args.reruns < 0:
        raise UsageError(f"--reruns: must be >= 0 (got {args.reruns})")
    if args.baseline is not None and not os.path.isdir(args.baseline):
        raise UsageError(f"--baseline: {args.baseline!r} is not a directory")
    if not os.path.isdir(args.dir):
        raise UsageError(f"DIR: {args.dir!r} is not a directory written by 'swafuzz run'")


def _merge(args) -> None:
    for d in args.dirs:
        if not os.path.isdir(d):
            raise UsageError(f"DIR: {d!r} is not a directory (a shard's run directory)")
    bad = check_out_dir("--out", args.out)
    if bad:
        raise UsageError(bad)


def _bench(args) -> None:
    rest = [a for a in args.rest if a != "--"]
    if rest[:1] not in (["harness"], ["fleet"]) and "--impls" in rest:
        i = rest.index("--impls") + 1
        for name in rest[i].split(",") if i < len(rest) else ():
            check_choice("--impls", name, IMPLS)


_CHECKS = {"run": _run, "zoo": _zoo, "list": _list, "repro": _repro, "bisect": _bisect,
           "report": _report, "merge": _merge, "bench": _bench}
