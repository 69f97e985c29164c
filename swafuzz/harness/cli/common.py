"""What every ``swafuzz`` command shares: exit codes, :class:`UsageError`, and the checks of
flags, targets, plugins, output directories and scenario kinds (a usage error names the field
and the allowed values, before anything is written).
"""

from __future__ import annotations

import sys

from swafuzz import targets
from swafuzz.harness.cli.usage import (  # noqa: F401 - the commands import them from here
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_TOOL,
    EXIT_USAGE,
    UsageError,
    available_ram,
    check_choice,
    parse_duration,
    positive,
    prepare_out,
)
from swafuzz.harness.executors import available_executors
from swafuzz.kernels import IMPLS, available_impls
from swafuzz.targets import plugins


def target_names() -> list[str]:
    return sorted(targets.available_targets())


def load_plugins(args) -> None:
    """``--plugin MODULE`` (any command) and ``SWAFUZZ_PLUGINS``: a plugin that cannot be
    loaded is a usage error naming it."""
    try:
        for m in getattr(args, "plugin", None) or []:
            plugins.load_module(m)
        plugins.load_env()
    except plugins.PluginError as e:
        raise UsageError(str(e)) from None


def validate_common(args) -> None:
    try:
        for t in args.target if isinstance(args.target, list) else [args.target]:
            targets.get_target(t)
    except (targets.UnknownTarget, targets.TargetUnavailable, plugins.PluginError) as e:
        raise UsageError(str(e)) from None
    check_impl_executor(args)


def check_impl_executor(args) -> None:
    """``--impl`` and ``--executor``: known names, available on this machine."""
    check_choice("--impl", args.impl, ("auto",) + tuple(IMPLS))
    if args.impl not in ("auto",) and args.impl not in available_impls():
        raise UsageError(f"--impl: {args.impl!r} is not available on this machine; available: "
                         f"{', '.join(['auto'] + available_impls())}")
    check_choice("--executor", args.executor, ("auto", "all", "eager", "tape", "cudagraph"))
    if args.executor == "cudagraph" and "cudagraph" not in available_executors():
        raise UsageError("--executor: 'cudagraph' needs a CUDA GPU; available here: "
                         f"{', '.join(['auto', 'all'] + available_executors())}")


def check_target_kinds(names, kinds: list[str], explicit: bool) -> list[str]:
    """Ask each target whether it runs each kind (``targets.supports``): a kind refused (e.g.
    ``ring`` on a release of the target without it) is a usage error naming the target and the
    reason when asked for by name (``explicit``), else left out of the default set with a note
    on stderr."""
    for t in names if isinstance(names, list) else [names]:
        refused = {k: why for k in kinds if (why := targets.supports(t, k))}
        if not refused:
            continue
        if explicit:
            k, why = next(iter(refused.items()))
            raise UsageError(f"--scenario {k}: target {t} cannot run it: {why}")
        whys = "; ".join(dict.fromkeys(refused.values()))  # one reason once, in order
        kinds = [k for k in kinds if k not in refused]
        if not kinds:  # nothing left to run is the target's refusal, not an empty campaign
            raise UsageError(f"target {t} can run none of the scenario kinds: {whys}")
        print(f"note: scenario kinds {', '.join(refused)} left out for target {t}: {whys}",
              file=sys.stderr)
    return kinds


def print_report(res: dict) -> int:
    """Print what ``report.build`` returned (``swafuzz report`` and ``swafuzz merge``): ledger
    warnings on stderr, the findings by signature, the files written; the exit code: findings
    the ledger does not know fail (a baseline-known finding still does)."""
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
    return EXIT_FINDINGS if res["findings"] > len(res["ledger_known"]) else EXIT_CLEAN
