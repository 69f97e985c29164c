"""The ``swafuzz`` command line's parser: every command's flags, ``--help`` and ``--version``.

It imports no torch and no command module, so ``swafuzz --help``, ``swafuzz --version`` and a
mistyped flag are answered before anything heavy loads (``swafuzz.__main__`` parses with it
first); :mod:`swafuzz.harness.cli.commands` binds the commands to their functions and runs them.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from swafuzz.reports.bundle import version_text

DESCRIPTION = ("``swafuzz`` (also ``python -m swafuzz``): run, zoo, repro, list, report, merge, "
               "bisect, export, bench.")

DB_HELP = ("Hypothesis example database (the corpus replayed first): DIR, "
           "redis://HOST:PORT[/N] or none; default: OUT/.hypothesis-db")


def _bound(commands: dict[str, Callable] | None, name: str) -> dict[str, Callable]:
    return {"fn": commands[name]} if commands else {}


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where there is none (None, or a flag's False)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or not action.help:
            return action.help or ""
        return super()._get_help_string(action)


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; give a number of seconds > 0")
    return v


def _start_timeout(sp) -> None:
    """``--start-timeout`` (swafuzz.machinery: the start-up limit of case workers, process-group
    ranks and Ray tasks; the CLI passes it down as SWAFUZZ_START_TIMEOUT)."""
    sp.add_argument("--start-timeout", type=_seconds, default=None, metavar="SECONDS",
                    help="give a starting case worker or process-group rank up after SECONDS "
                         "without progress (exit 3; default 1800, or SWAFUZZ_START_TIMEOUT)")


def build_parser(commands: dict[str, Callable] | None = None) -> argparse.ArgumentParser:
    """The ``swafuzz`` parser; ``commands`` (name -> function) sets each command's ``fn``."""
    fmt = _HelpFormatter
    p = argparse.ArgumentParser(prog="swafuzz", description=DESCRIPTION,
                                formatter_class=fmt)
    p.add_argument("--version", action=_VersionAction,
                   help="swafuzz's version and its stack's (Python, torch, Triton, Hypothesis; "
                        "SGLang when installed)")
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
        _start_timeout(sp)

    r = sub.add_parser("run", formatter_class=fmt, help="fuzz a target: scenarios x checks")
    common(r, many=True)
    r.add_argument("--scenario", action="append", help="scenario kind (repeatable; default all)")
    r.add_argument("--examples", type=int, default=None,
                   help="generated cases in all, split exactly over kinds and workers "
                        "(default: 300; with --budget: no cap)")
    r.add_argument("--budget", default=None,
                   help="wall-clock budget, e.g. 90s, 30m, 2h (no new case after it)")
    r.add_argument("--workers", type=int, default=1, help="unit processes running in parallel")
    r.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="run the units as Ray tasks on the cluster at ADDRESS (HOST:PORT or "
                        "auto; pip install 'swafuzz[ray]'; docs/FLEET.md)")
    r.add_argument("--seed", type=int, default=0, help="hypothesis seed (same seed, same Cases)")
    r.add_argument("--out", default=None,
                   help="a new or empty directory for the run (default: a new "
                        "swafuzz-out/run-<UTC time> each run)")
    r.add_argument("--resume", default=None, metavar="DIR",
                   help="continue the run in DIR (after Ctrl-C, SIGTERM or kill -9)")
    r.add_argument("--shrink-budget", type=int, default=150,
                   help="cases run to shrink each first failure (a count, never wall time)")
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
    r.add_argument("--shard", default=None, metavar="I/N",
                   help="run shard I of N (CI matrix jobs): a deterministic slice of the units; "
                        "the N shards together run the units of one run, each once (join "
                        "them with swafuzz merge)")
    r.add_argument("--coverage", action="store_true",
                   help="record line and branch coverage of the target's code in the case "
                        "workers (OUT/coverage.md; pip install 'swafuzz[coverage]')")
    r.add_argument("--coverage-bias", action="store_true",
                   help="--coverage, and bias generation towards Cases reaching new branches "
                        "(a hypothesis target() score)")
    r.add_argument("--level", choices=("component", "server"), default="component",
                   help="component: Cases of steps on the target's components; server: "
                        "server-level Cases (server arguments + requests) through the target's "
                        "own batch pipeline (targets that have one)")
    r.add_argument("--server-mutant", default=None, metavar="NAME",
                   help="with --level server: run with one server mutant, a patch of the "
                        "release's own pipeline code (swafuzz list --target T names them)")
    r.set_defaults(**_bound(commands, "run"))

    rp = sub.add_parser("repro", formatter_class=fmt, help="replay a finding bundle")
    rp.add_argument("file")
    common(rp, defaults=False)
    rp.add_argument("--no-isolate", action="store_true", help="run the case in this process")
    rp.set_defaults(**_bound(commands, "repro"))

    ls = sub.add_parser("list", help="what is available here")
    ls.add_argument("--target", default=None,
                    help="details of one target (what its describe hook says)")
    ls.add_argument("--features", action="store_true",
                    help="every feature record: kinds, case fields, checks, mutants, and which "
                         "target (and release) runs it")
    ls.add_argument("--json", action="store_true", help="with --features: as JSON")
    ls.add_argument("--mutants", action="store_true",
                    help="the bug zoo's mutant targets and the server mutants, a row each")
    ls.set_defaults(**_bound(commands, "list"))

    rep = sub.add_parser("report", formatter_class=fmt, help="summarise a run directory")
    rep.add_argument("dir")
    rep.add_argument("--baseline", default=None,
                     help="a previous run directory: findings split into new / known / fixed")
    rep.add_argument("--reruns", type=int, default=0,
                     help="replay each finding's smallest Case N times (reliability k/N)")
    rep.add_argument("--ledger", default=None,
                     help="known-failure ledger: findings it knows (signature and 'when') are "
                          "known, not failures (default: the checkout's "
                          "ledger/known_failures.json)")
    rep.add_argument("--no-ledger", action="store_true", help="do not consult a ledger")
    rep.add_argument("--release", default=None,
                     help="target version for the ledger (default: the run's recorded one)")
    rep.set_defaults(**_bound(commands, "report"))

    m = sub.add_parser("merge", formatter_class=fmt, help="join the shards of one run "
                       "(run --shard I/N) into one run directory, with its reports")
    m.add_argument("dirs", nargs="+", metavar="DIR", help="the shards' run directories")
    m.add_argument("--out", required=True, help="a new or empty directory for the merged run")
    m.add_argument("--ledger", default=None,
                   help="known-failure ledger applied to the merged findings, as report's "
                        "(default: the checkout's ledger/known_failures.json)")
    m.add_argument("--no-ledger", action="store_true", help="do not consult a ledger")
    m.add_argument("--partial", action="store_true",
                   help="merge even when shards are missing or have unfinished units (they are "
                        "listed in run.json); without it, that is an error")
    m.set_defaults(**_bound(commands, "merge"))

    bi = sub.add_parser("bisect", formatter_class=fmt,
                        help="replay a finding bundle on each release's environment: first bad, "
                             "last bad, fixed-in")
    bi.add_argument("file")
    bi.add_argument("--releases", default=None, metavar="A..B|A,B,...",
                    help="releases to replay on (default: every release of the target)")
    bi.add_argument("--target", default=None,
                    help="the target whose releases to replay on (default: the bundle's)")
    bi.add_argument("--executor", default=None, help="passed to swafuzz repro")
    bi.add_argument("--json", default=None, metavar="PATH", help="write the outcomes as JSON")
    bi.set_defaults(**_bound(commands, "bisect"))

    ex = sub.add_parser("export", formatter_class=fmt,
                        help="write a server-level finding as an SGLang maintainer takes it: "
                             "launch command, requests, releases, functions, a standalone test")
    ex.add_argument("file", metavar="BUNDLE")
    ex.add_argument("--out", required=True, help="a new or empty directory")
    ex.add_argument("--ledger", default=None, help="known-failure ledger naming the entry "
                    "(default: the checkout's ledger/known_failures.json)")
    ex.add_argument("--bisect", default=None, metavar="JSON",
                    help="a 'swafuzz bisect --json' record of the bundle: first bad, fixed in")
    ex.set_defaults(**_bound(commands, "export"))

    z = sub.add_parser("zoo", formatter_class=fmt, help="run every mutant; print the kill matrix")
    z.add_argument("--examples", type=int, default=None,
                   help="case budget per mutant and seed (default: 200; --budget full only)")
    z.add_argument("--seeds", type=int, default=None,
                   help="seeds per mutant (default: 5; --budget full only)")
    z.add_argument("--mutant", action="append", default=None, metavar="NAME",
                   help="run only this mutant (repeatable; the control then covers their kinds "
                        "and the leave-one-out rule is not enforced); default: every mutant")
    z.add_argument("--json", default=None, help="write the kill matrix as JSON here")
    z.add_argument("--budget", default="full", help="full | ci (reduced, for the CI gate)")
    z.add_argument("--impl", default="auto", help="torch | triton | cuda | auto")
    z.add_argument("--executor", default="auto", help="eager | tape | cudagraph | auto | all")
    z.add_argument("--out", default="swafuzz-out/zoo", help="bundles and kill-matrix.md")
    z.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="worker processes (mutants run in parallel)")
    z.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _start_timeout(z)
    z.add_argument("--level", default="component",
                   help="component | server (the server mutants on the installed SGLang)")
    z.set_defaults(**_bound(commands, "zoo"))

    b = sub.add_parser("bench", formatter_class=fmt, help="kernel benchmark (bench/kernels.py); 'bench harness': "
                       "campaign throughput, 1 vs N workers (bench/harness.py); 'bench fleet': "
                       "a run's steps/s with --workers, --ray and --shard (bench/fleet.py); 'bench server': "
                       "server-level Cases/s, 1 vs 2 workers (bench/server.py)")
    b.add_argument("rest", nargs=argparse.REMAINDER)
    b.set_defaults(**_bound(commands, "bench"))
    return p
