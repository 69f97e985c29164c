"""``swafuzz zoo``: run every mutant of the bug zoo, and ``unified`` as the control; print the
kill matrix and its single-check ablation.

Per mutant and seed a campaign runs over the mutant's kinds until the first finding or the case
budget (the first seed shrinks the killing Case and writes its bundle); a mutant is killed when
every seed kills it. Exit 0 iff every mutant is killed, the control is clean on every kind, and
every check is the only killer of some mutant (:func:`ablation`) or has a defence-in-depth reason
in its ``@check`` and fires on some mutant. ``--mutant NAME`` (repeatable) narrows the zoo (the
control runs its kinds only; the rule is not enforced); a whole-zoo run leaves out, named, the
mutants of a release not installed here. Ctrl-C (or SIGTERM) prints the partial matrix, exit 130.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import statistics
import sys
import time

import torch

from swafuzz import features, targets
from swafuzz.checks.registry import check_names, defence_in_depth
from swafuzz.harness.cli.common import EXIT_INTERRUPTED
from swafuzz.harness.pipeline.campaign import Campaign
from swafuzz.harness.pipeline.execute import execute, resolve_executors
from swafuzz.harness.pipeline.unit import load_plugins
from swafuzz.harness.report.inputs import write_run_meta
from swafuzz.harness.zoo.select import control_of, default_zoo, not_here, selected
from swafuzz.harness.zoo.stop import StopSignals
from swafuzz.reports.bundle import atomic_write_text, write_bundle
from swafuzz.reports.summary import kill_matrix
from swafuzz.targets.mutants import load_all
from swafuzz.targets.plugins import loaded_modules

BUDGETS = {
    # examples per mutant+seed, seeds, control examples per kind, shrink budget; CI's second
    # seed is tests/features/test_mutants.py's kill test (seed 1, the same case budget). CI's
    # shrink budget is 6 Cases: shrinking was 3/4 of the gate's time (95 s vs 39 s with 6),
    # and leave-one-out proves the same checks (shrinking itself: tests/features/test_kinds.py)
    "full": (200, 5, 30, 60),
    "ci": (60, 1, 6, 6),
}


def _runner(target: str, impl: str, executors: list[str]):
    return lambda case: execute(case, target, impl, executors)


def search_kill(target: str, kinds: list[str], examples: int, seed: int, shrink: bool, impl: str,
                executors: list[str], shrink_budget: int):
    """Run ``target`` over ``kinds`` with ``examples`` cases in all; return (verdict|None,
    cases to first failure, cases run)."""
    camp = Campaign(_runner(target, impl, executors), seed=seed, shrink=shrink,
                    shrink_budget=shrink_budget)
    used = 0
    per_kind = max(1, examples // len(kinds))
    for kind in kinds:
        res = camp.run_kind(kind, per_kind)
        if res.finding is not None:
            return res.finding, used + (res.cases_to_first or 0)
        used += res.cases
    return None, used


def first_kill(name: str, seed: int = 0, budget: str = "ci", impl: str = "auto",
               executor: str = "auto"):
    """One quick kill attempt at mutant ``name``: a campaign of ``seed`` over its kinds with the
    ``budget``'s case count, stopped at the first failing Case and not shrunk. Returns that
    Case's verdict (None: survived) and the cases run."""
    spec = load_all()[name]
    return search_kill(f"mutant:{name}", list(spec.kinds), BUDGETS[budget][0], seed, shrink=False,
                       impl=impl_for(spec, impl, budget), executors=resolve_executors(executor),
                       shrink_budget=0)


def impl_for(spec, impl: str, budget: str) -> str:
    """``auto``: Triton for every mutant (compiled on a GPU, the interpreter on CPU); only in the
    CI budget on CPU do the engine-level mutants run on the torch path (about 8x faster than the
    interpreter), while the kernel-level ones (address arithmetic, dtypes) stay on Triton."""
    if impl != "auto":
        return impl
    if budget == "ci" and not spec.kernel_level and not torch.cuda.is_available():
        return "torch"
    return "triton"


def zoo_mutant(name: str, examples: int, seeds: int, impl: str, executors: list[str],
               shrink_budget: int, out: str, executor_label: str) -> dict:
    """Kill one mutant over ``seeds`` seeds; returns its kill-matrix row."""
    spec = load_all()[name]
    target = f"mutant:{name}"
    tm = time.perf_counter()
    counts, first = [], None
    # the kinds where the bug shows that the mutant target runs (targets.supports): none left,
    # no seed can kill it
    kinds = [k for k in spec.kinds if targets.supports(target, k) is None]
    for s in range(seeds):
        v, used = (None, 0) if not kinds else search_kill(
            target, kinds, examples, s, shrink=(s == 0), impl=impl, executors=executors,
            shrink_budget=shrink_budget)
        counts.append(used if v is not None else None)
        first = first or v
    row = kill_row(name, spec, impl, counts, tm, _median(counts),  # no kind runs: why
                   None if kinds else "; ".join(
                       dict.fromkeys(str(targets.supports(target, k)) for k in spec.kinds)))
    if first is not None:
        row.update(check=first.failures[0].check,
                   checks=sorted({f.check for f in first.failures}),
                   shrunk=first.case.summary())
        path = write_bundle(out, first.finding(target, impl, executor_label, prefix=f"{target}:"))
        row["repro"] = f"swafuzz repro {os.path.relpath(path, out)}"  # from the out dir
        row.update(ablation(first, target, impl, executors))
    return row


def kill_row(name: str, spec, impl: str, counts: list, t0: float, cases_to_kill,
             unreachable: str | None) -> dict:
    """A mutant's kill-matrix row before its killing Case is read (``counts``: cases to kill
    per seed, None where the seed did not kill; ``t0``: its start, ``time.perf_counter``)."""
    kills = sum(c is not None for c in counts)
    return {"name": name, "source": spec.source, "impl": impl, "killed": kills == len(counts),
            "kills": f"{kills}/{len(counts)}", "seconds": time.perf_counter() - t0,
            "cases_to_kill": cases_to_kill, "cases_per_seed": counts, "check": None,
            "checks": [], "shrunk": None, "repro": None, "unreachable": unreachable}


def ablation(verdict, target: str, impl: str, executors: list[str]) -> dict:
    """Single-check ablation of a mutant's killing Case. ``alone``: the checks that kill it
    each alone (checks are pure functions of the same observations, so the checks that failed
    in one run with all of them; ``tests/harness/test_zoo_gate.py`` checks this by rerunning).
    ``sole``: the only check that kills it, proven by leave-one-out (the Case rerun with every
    other check passes, target errors included); None when several checks or an error kill it.
    """
    alone = sorted({f.check for f in verdict.failures} & set(check_names()))
    other = sorted({f.check for f in verdict.failures} - set(check_names()))  # error, crash, timeout
    res = {"alone": alone, "sole": None, "leave_one_out": None}
    if len(alone) == 1 and not other:
        c = alone[0]
        v = execute(verdict.case, target, impl, executors, only=set(check_names()) - {c})
        res["leave_one_out"] = sorted({f.check for f in v.failures})
        if not v.failures:
            res["sole"] = c
    return res


def ablation_matrix(rows: list[dict], level: str = "component") -> str:
    """Mutants x checks: ``K`` the check alone kills the mutant's killing Case, ``S`` it is the
    only check that does (leave-one-out proven), ``.`` it does not; ``error`` for mutants killed
    by a target error only."""
    w = max([len(r["name"]) for r in rows] + [6])
    head = " " * w + " | " + " ".join(f"{c[:6]:>6}" for c in check_names(level))
    lines = ["single-check ablation (K: kills alone, S: the only killer, leave-one-out proven)",
             head, "-" * len(head)]
    for r in rows:
        alone = set(r.get("alone") or ())
        cells = []
        for c in check_names(level):
            cells.append(f"{'S' if r.get('sole') == c else ('K' if c in alone else '.'):>6}")
        note = "" if r["killed"] else "  (survived)"
        if r["killed"] and not alone:
            note = f"  ({', '.join(r['checks'])} only)"
        lines.append(f"{r['name']:<{w}} | " + " ".join(cells) + note)
    return "\n".join(lines)


def proof_status(rows: list[dict], level: str = "component"
                 ) -> tuple[dict[str, list[str]], list[str]]:
    """Per check of ``level``: the mutants it alone kills (sole, leave-one-out proven); and the
    checks that are neither the sole killer of a mutant nor justified as defence in depth (and
    firing)."""
    names, defence = check_names(level), defence_in_depth(level)
    sole: dict[str, list[str]] = {c: [] for c in names}
    fired: dict[str, list[str]] = {c: [] for c in names}
    for r in rows:
        if r.get("sole"):
            sole[r["sole"]].append(r["name"])
        for c in r.get("alone") or ():
            fired[c].append(r["name"])
    unproven = [c for c in names if not sole[c] and not (c in defence and fired[c])]
    return sole, unproven


def _control(examples: int, impl: str, executors: list[str], out: str, label: str,
             kinds: list[str] | None = None, target: str = "unified") -> dict:
    """The control: unmutated ``target`` over every kind it runs (or ``kinds``) is clean."""
    tc = time.perf_counter()
    control = {"clean": True, "cases": 0, "seconds": 0.0, "check": None, "impl": impl,
                "target": target}
    every = features.default_kind_names() if kinds is None else features.kind_names()
    for kind in (k for k in every if targets.supports(target, k) is None
                 and (kinds is None or k in kinds)):
        camp = Campaign(_runner(target, impl, executors), seed=0, shrink=False)
        res = camp.run_kind(kind, examples)
        control["cases"] += res.cases
        if res.finding is not None:
            control.update(clean=False, check=res.finding.failures[0].check,
                           message=res.finding.failures[0].message)
            path = write_bundle(out, res.finding.finding(target, impl, label,
                                                         prefix=f"{target}:"))
            control["repro"] = f"swafuzz repro {os.path.relpath(path, out)}"
            break
    control["seconds"] = time.perf_counter() - tc
    return control


def run_zoo(args) -> int:
    examples, seeds, control_n, shrink_budget = BUDGETS[args.budget]
    if args.budget == "full":
        examples, seeds = args.examples, args.seeds
    executors = resolve_executors(args.executor)
    out = args.out
    jobs = max(1, args.jobs)
    t0 = time.perf_counter()
    names = getattr(args, "mutant", None)
    skipped = {} if names else not_here()
    zoo = selected(names, skipped)
    narrowed = set(zoo) != set(default_zoo()) - set(skipped)
    control_kinds = sorted({k for spec in zoo.values() for k in spec.kinds}) if narrowed else None
    bases = {control_of(spec) for spec in zoo.values()}
    control_target = bases.pop() if len(bases) == 1 else "unified"

    def say(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    for name, why in skipped.items():
        print(f"zoo: mutant {name} not run here ({why}); run --mutant {name} where it is")

    tasks = [(name, examples, seeds, impl_for(spec, args.impl, args.budget), executors,
              shrink_budget, out, args.executor) for name, spec in zoo.items()]
    control_impl = "triton" if args.impl == "auto" else args.impl
    control_args = (control_n, control_impl, executors, out, args.executor, control_kinds,
                    control_target)
    rows: list[dict] = []
    control, ctl = None, None
    with StopSignals() as stop:
        try:
            if jobs == 1:
                control = _control(*control_args)
                stop.check()
                say(f"control {control_target}: {'clean' if control['clean'] else 'FAILED'}")
                for t in tasks:
                    rows.append(zoo_mutant(*t))
                    stop.check()
                    say(_row_line(rows[-1]))
            else:
                # the pool's processes (and the resource tracker) start with SIGINT ignored: a
                # Ctrl-C while they are still importing must not print their tracebacks
                old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
                try:
                    pool = mp.get_context("spawn").Pool(jobs, initializer=_pool_init,
                                                        initargs=(loaded_modules(),))
                finally:
                    signal.signal(signal.SIGINT, old_int)
                with pool:
                    ctl = pool.apply_async(_control, control_args)
                    pending = [pool.apply_async(zoo_mutant, t) for t in tasks]
                    for p in pending:
                        rows.append(p.get())
                        stop.check()
                        say(_row_line(rows[-1]))
                    control = ctl.get()
                    stop.check()
        except BaseException as e:
            # a Ctrl-C that lands inside Hypothesis's own bookkeeping can surface as another
            # exception (an internal assertion): the signal, not the exception's type, decides
            if not stop.asked(e):
                raise
            if control is None and ctl is not None and ctl.ready() and ctl.successful():
                control = ctl.get()
            print(f"\ninterrupted: {len(rows)} of {len(tasks)} mutants finished"
                  + ("" if control else ", the control did not finish") + "; their matrix:")
            finish(args, rows, control, examples, seeds, control_n, shrink_budget, t0, narrowed)
            return EXIT_INTERRUPTED
    return finish(args, rows, control, examples, seeds, control_n, shrink_budget, t0, narrowed)


def finish(args, rows: list[dict], control: dict | None, examples: int, seeds: int,
           control_n: int, shrink_budget: int, t0: float, narrowed: bool,
           level: str = "component") -> int:
    """Print the kill matrix, its ablation and the leave-one-out proof of ``rows`` over the
    checks of ``level``; write ``kill-matrix.md`` and ``--json``; the exit code (0: all killed,
    control clean, and - for the whole zoo - every check proven). ``control`` None: it did not
    finish (Ctrl-C)."""
    out = args.out
    names, defence = check_names(level), defence_in_depth(level)
    if control is None:
        control = {"clean": None, "cases": 0, "seconds": 0.0, "check": "did not finish"}
    fired: dict[str, set[str]] = {c: set() for c in names}
    for row in rows:
        for c in row["checks"]:
            fired.setdefault(c, set()).add(row["name"])

    result = {"control": control, "mutants": rows,
              "checks": {c: sorted(m) for c, m in fired.items()},
              "seconds": time.perf_counter() - t0,
              "budget": {"name": args.budget, "examples": examples, "seeds": seeds,
                         "control_per_kind": control_n, "shrink_budget": shrink_budget},
              "selected": [r["name"] for r in rows] if narrowed else None}
    sole, unproven = proof_status(rows, level)
    result["sole"] = sole
    result["defence_in_depth"] = {c: why for c, why in defence.items()
                                  if not sole[c]}
    result["unproven"] = unproven
    print(kill_matrix(result))
    print("\nchecks -> mutants they kill: " + "; ".join(
        f"{c}: {', '.join(sorted(fired.get(c, ()))) or 'NONE'}" for c in names))
    if rows:
        print("\n" + ablation_matrix(rows, level))
    print("\nleave-one-out proof per check" + (" (not enforced: --mutant runs a subset)"
                                               if narrowed else "") + ":")
    for c in names:
        if sole[c]:
            print(f"  {c}: only killer of {', '.join(sorted(sole[c]))}")
        elif c in defence:
            print(f"  {c}: defence in depth (fires on "
                  f"{', '.join(sorted(fired.get(c, ()))) or 'NO mutant'}): {defence[c]}")
        else:
            print(f"  {c}: UNPROVEN (kills no mutant alone, not justified as defence in depth)")
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=1, sort_keys=True) + "\n")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "kill-matrix.md"), "w") as f:
        f.write(kill_matrix(result, markdown=True) + "\n")
    enforced = [] if narrowed else unproven
    ok = bool(control["clean"]) and all(r["killed"] or r.get("unreachable") for r in rows) \
        and not enforced
    write_run_meta(out, {"command": "zoo", "level": level, "target": f"bug zoo ({len(rows)} mutants, control "
                         f"{control.get('target', 'unified')})", "impl": args.impl,
                         "executor": args.executor,
                         "budget": result["budget"], "seconds": round(result["seconds"], 3)})
    if enforced:
        print(f"FAILED leave-one-out rule: {', '.join(enforced)}")
    print(f"zoo: {'OK' if ok else 'FAILED'} in {result['seconds']:.1f} s")
    return 0 if ok else 1


def _pool_init(modules: list[str]) -> None:
    """Pool initializer: Ctrl-C reaches the whole process group, the parent decides what stops
    (it prints the partial matrix and terminates the pool); the parent's plugins loaded."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    load_plugins(modules)


def _row_line(row: dict) -> str:
    verdict = "killed" if row["killed"] else "not reachable here" if row.get(
        "unreachable") else "SURVIVED"
    return (f"{row['name']}: {verdict} ({row['kills']} seeds, "
            f"{cases_text(row['cases_per_seed'])}, {row['seconds']:.1f} s"
            + (f", {row['check']}" if row["check"] else "") + f", impl {row['impl']})")


def cases_text(counts: list[int | None]) -> str:
    """Cases to kill per seed, for any number of seeds: ``12 cases to kill``, ``cases to kill
    per seed: 12, -`` (``-``: that seed did not kill), with the median from 3 killing seeds."""
    got = [c for c in counts if c is not None]
    if not got:
        return "no seed killed it"
    if len(counts) == 1:
        return f"{got[0]} cases to kill"
    per = ", ".join("-" if c is None else str(c) for c in counts)
    return f"cases to kill per seed: {per}" + (f" (median {_median(counts):g})"
                                               if len(got) >= 3 else "")


def _median(counts):
    got = [c for c in counts if c is not None]
    if not got:
        return None
    m = statistics.median(got)
    return int(m) if m == int(m) else m
