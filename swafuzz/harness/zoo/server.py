"""``swafuzz zoo --level server``: the bug zoo over the server mutants (patches of the release's
own code) on the installed release of a target with a server level.

The component zoo's matrix, ablation and leave-one-out rule (:func:`zoo.finish` over the server
checks): per mutant and seed, Cases of its server kinds (derandomized by the seed, no shrinking)
through the patched pipeline until the first failure; the control is the unpatched pipeline.
Leave-one-out re-judges the killing observation without the check
(:func:`swafuzz.server.run.judge_obs`). Without the release: exit 2, the target's message.
"""

from __future__ import annotations

import json
import os
import sys
import time

from hypothesis import HealthCheck, Phase, given, seed, settings

from swafuzz import targets
from swafuzz.checks.registry import check_names
from swafuzz.harness.cli.common import EXIT_INTERRUPTED, UsageError
from swafuzz.harness.executors import get_executor
from swafuzz.harness.pipeline.execute import resolve_executors
from swafuzz.harness.pipeline.level_server import bundle_of, pipeline_of, server_targets
from swafuzz.harness.zoo.matrix import cases_text, finish, kill_row
from swafuzz.harness.zoo.stop import StopSignals
from swafuzz.reports.bundle import atomic_write_text
from swafuzz.server.run import ServerRefused, execute, judge_obs
from swafuzz.server.strategies import server_cases
from swafuzz.targets.mutants import load_server

#: budget -> (Cases per mutant and seed, seeds, control Cases per kind). A mutant's search
#: stops at its first kill (every mutant but one dies within 8 Cases of seed 0), so the ci cap
#: costs only where a mutant survives; server_radix_frontier_unaligned needs a window that is
#: no whole number of pages, a one-token tail and a later group member (on seed 0: not within
#: 40 Cases, killed within 150)
BUDGETS = {"ci": (150, 1, 3), "full": (None, None, 20)}


class _Killed(Exception):
    pass


def selected(names: list[str] | None) -> dict:
    """The server mutants to run: all, or the ``--mutant`` names (an unknown one: UsageError
    naming the known ones)."""
    zoo = load_server()
    unknown = [n for n in names or () if n not in zoo]
    if unknown:
        raise UsageError(f"--mutant: {unknown[0]!r} is not a server mutant; known: "
                         f"{', '.join(zoo)}")
    return {n: zoo[n] for n in dict.fromkeys(names)} if names else zoo


def search(pipeline, kinds: list[str], examples: int, seed_: int, executors: list[str],
           mutant: str | None, runner=None) -> tuple[dict | None, int, list[str]]:
    """Cases of ``kinds`` (``examples`` in all) through ``pipeline`` until the first failure:
    (the failing ``{"verdict", "graphs", "kind"}`` or None, Cases run, refusals seen)."""
    run = runner or (lambda case, executor, mutant: execute(case, pipeline, "torch",
                                                            mutant=mutant, executor=executor))
    state = {"found": None, "cases": 0, "refused": []}
    per_kind = max(1, examples // len(kinds))
    for kind in kinds:
        @settings(max_examples=per_kind, database=None, derandomize=False, deadline=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @seed(seed_)
        @given(server_cases(kind))
        def one(case):
            if state["found"] is not None:
                raise _Killed
            graphs = not case.config.disable_cuda_graph and bool(case.config.cuda_graph_bs_decode)
            for name in executors if graphs else executors[:1]:
                ex = get_executor(name)
                try:
                    v = run(case, ex, mutant)
                except (ServerRefused, targets.TargetUnavailable, ImportError) as e:
                    state["refused"].append(str(e))
                    return
                if v.failed:
                    state["found"] = {"verdict": v, "graphs": bool(getattr(ex, "graphs", False)),
                                      "kind": case.kind}
                    break
            state["cases"] += 1
            if state["found"] is not None:
                raise _Killed

        try:
            one()
        except _Killed:
            return state["found"], state["cases"], state["refused"]
    return None, state["cases"], state["refused"]


def ablation(found: dict, judge=None) -> dict:
    """The killing Case's checks (``alone``) and its sole killer (``sole``: the one check whose
    leave-one-out judgement of the same observation passes), as :func:`zoo.ablation`."""
    judge = judge or judge_obs
    v = found["verdict"]
    alone = sorted({f.check for f in v.failures} & set(check_names("server")))
    res = {"alone": alone, "sole": None, "leave_one_out": None}
    if len(alone) == 1 and not {f.check for f in v.failures} - set(alone):
        left = judge(v.case, v.obs, found["graphs"], disabled=frozenset(alone))
        res["leave_one_out"] = sorted({f.check for f in left})
        res["sole"] = None if left else alone[0]
    return res


def mutant_row(name: str, spec, pipeline, examples: int, seeds: int, executors: list[str],
               out: str, runner=None, judge=None, target: str = "") -> dict:
    """Kill one server mutant over ``seeds`` seeds; its kill-matrix row (zoo.zoo_mutant's)."""
    tm = time.perf_counter()
    counts, first, refused, ran = [], None, [], 0
    for s in range(seeds):
        found, used, why = search(pipeline, list(spec.kinds), examples, s, executors, name,
                                  runner)
        counts.append(used if found else None)
        refused, ran = refused + why, ran + used
        first = first or found
    row = kill_row(name, spec, "torch", counts, tm,
                   next((c for c in counts if c is not None), None),
                   f"every Case refused: {refused[0]}" if refused and not ran else None)
    if first is not None:
        v = first["verdict"]
        row.update(check=v.failures[0].check, checks=sorted({f.check for f in v.failures}),
                   kind=first["kind"])  # not shrunk: the zoo stops at the first kill
        os.makedirs(os.path.join(out, "findings"), exist_ok=True)
        path = os.path.join(out, "findings", f"server-mutant-{name}.json")
        atomic_write_text(path, _bundle(v, name, target))
        row["repro"] = f"swafuzz repro {os.path.relpath(path, out)}"
        row.update(ablation(first, judge))
    return row


def _bundle(v, mutant: str, target: str) -> str:
    return json.dumps(bundle_of(v, target, mutant), indent=1) + "\n"


def control(pipeline, kinds: list[str], per_kind: int, executors: list[str], runner=None,
            target: str = "") -> dict:
    """The unpatched pipeline over ``kinds``: clean, or its first failing check."""
    tc = time.perf_counter()
    res = {"clean": True, "cases": 0, "seconds": 0.0, "check": None, "impl": "torch",
           "target": f"{target} (server level)"}
    for kind in kinds:
        found, used, _ = search(pipeline, [kind], per_kind, 0, executors, None, runner)
        res["cases"] += used
        if found is not None:
            f = found["verdict"].failures[0]
            res.update(clean=False, check=f.check, message=f.message)
            break
    res["seconds"] = time.perf_counter() - tc
    return res


def run_server_zoo(args, pipeline=None, runner=None, judge=None) -> int:
    """``swafuzz zoo --level server`` (module docstring); ``pipeline`` / ``runner`` (``(case,
    executor, mutant) -> ServerVerdict``) / ``judge``: stand-ins for tests (None: the installed
    release's)."""
    target = next(iter(server_targets()), "")
    if pipeline is None:
        if not target:
            raise UsageError("zoo --level server: no target offers a server level")
        try:
            pipeline = pipeline_of(target)
        except targets.TargetUnavailable as e:
            raise UsageError(f"zoo --level server: {e}") from None
    examples, seeds, control_n = BUDGETS[args.budget]
    if args.budget == "full":
        examples, seeds = args.examples, args.seeds
    executors = resolve_executors(args.executor)
    zoo = selected(getattr(args, "mutant", None))
    narrowed = bool(getattr(args, "mutant", None))
    t0 = time.perf_counter()
    kinds = list(dict.fromkeys(k for m in zoo.values() for k in m.kinds))
    rows: list[dict] = []
    ctl = None
    with StopSignals() as stop:
        try:
            ctl = control(pipeline, kinds, control_n, executors, runner, target)
            stop.check()
            if not args.quiet:
                print(f"control: {'clean' if ctl['clean'] else 'FAILED'} ({ctl['cases']} Cases, "
                      f"{ctl['seconds']:.1f} s)", file=sys.stderr, flush=True)
            for name, spec in zoo.items():
                rows.append(mutant_row(name, spec, pipeline, examples, seeds, executors,
                                       args.out, runner, judge, target))
                stop.check()
                r = rows[-1]
                if not args.quiet:
                    print(f"{name}: {'killed' if r['killed'] else 'SURVIVED'} ("
                          f"{cases_text(r['cases_per_seed'])}, {r['seconds']:.1f} s"
                          + (f", {r['check']}" if r["check"] else "") + ")", file=sys.stderr,
                          flush=True)
        except BaseException as e:
            if not stop.asked(e):
                raise
            print(f"\ninterrupted: {len(rows)} of {len(zoo)} mutants finished"
                  + ("" if ctl else ", the control did not finish") + "; their matrix:")
            finish(args, rows, ctl, examples, seeds, control_n, 0, t0, narrowed, level="server")
            return EXIT_INTERRUPTED
    return finish(args, rows, ctl, examples, seeds, control_n, 0, t0, narrowed, level="server")
