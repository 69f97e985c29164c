"""One unit of a campaign (one hypothesis search of one scenario kind against one target, see
:mod:`swafuzz.harness.pipeline.driver`): its cases through a crash-isolating case worker, its rows in
the case log, its finding bundles, at either level (the :class:`swafuzz.harness.pipeline.level.Level`
of ``RunConfig.level`` says what differs). Runs in a pool process or in-process."""

from __future__ import annotations

import atexit
import json
import multiprocessing as mp
import os
import signal
import time
from typing import Any, Callable

import torch
from hypothesis import target as hypothesis_target

from swafuzz.harness.pipeline import level
from swafuzz.harness.pipeline.campaign import Campaign
from swafuzz.harness.pipeline.caselog import CaseLog, read_log
from swafuzz.harness.pipeline.corpus import open_database
from swafuzz.harness.pipeline.coverage import COVERAGE_DIR, sources_for
from swafuzz.harness.pipeline.runconfig import RunConfig, Unit
from swafuzz.harness.pipeline.runlock import die_with, die_with_parent
from swafuzz.harness.pipeline.worker import CaseWorker
from swafuzz.machinery import HarnessError
from swafuzz.targets.plugins import load_env, load_module

#: set by SIGINT/SIGTERM during a run (:mod:`swafuzz.harness.pipeline.driver`); checked before every
#: case and in the pool loop. The handler does not raise: an exception raised from a signal
#: handler can land in a gc callback or a ``finally`` and be swallowed.
STOP = {"flag": False}


class _HarnessAbort(BaseException):
    """A :class:`~swafuzz.machinery.HarnessError` carried out through Hypothesis (which would
    shrink on an ``Exception``): the unit stops at once, the error reaches the CLI (exit 3)."""


# --------------------------------------------------------------------------- one unit
def run_unit(cfg_json: dict[str, Any], unit_json: dict[str, Any],
             budget: tuple[float, ...] | None = None, database: Any = None) -> dict[str, Any]:
    """Run one unit (in a pool process or in-process) and return its unit row. ``budget``
    (:func:`unit_slice`): a unit of a ``--budget`` run generates new cases for at most its
    slice (its share of the remaining time), after its first Case, never past the end; past
    the end it shrinks no more. ``database``: an example database to use instead of opening
    ``cfg.db`` (a fleet unit's, :mod:`swafuzz.harness.fleet.task`)."""

    cfg, unit = RunConfig.from_json(cfg_json), Unit(**unit_json)
    load_plugins(cfg.plugins)
    lv = level.get(cfg.level)
    out = cfg.out
    log = CaseLog(os.path.join(out, "cases.jsonl"))
    replay: dict[str, Any] = {}
    for row in read_log(os.path.join(out, "cases.jsonl")):
        if row.get("unit") == unit.id and "case" in row:
            c = lv.load(row["case"])
            replay[c.dumps()] = lv.replayed(c, row)
    if cfg.isolate:
        worker = case_worker(cfg, unit.target)
        worker.inflight_name = f"inflight/{unit.id}.json"
        if budget is not None:  # its start-up (an interpreter, torch) before the slice starts
            worker.start()
        run_one: Callable = lv.in_worker(worker)
    else:
        run_one = lv.in_process(cfg, unit)

    def run_case(case):
        if STOP["flag"]:  # Ctrl-C / SIGTERM: stop at this safe point, before the next case
            raise KeyboardInterrupt
        t = time.monotonic()
        try:
            v = run_one(case)
        except HarnessError as e:
            raise _HarnessAbort(e) from None
        if cfg.coverage == "bias" and cfg.isolate:  # harness.pipeline.coverage: towards new branches
            hypothesis_target(float(worker.new_arcs), label="new arcs of the code under test")
        if budget is not None:  # --budget: after the unit's first Case, its slice counts,
            spent.append(time.monotonic() - t)  # less what a Case takes, so that the last
            camp.deadline = deadline - sum(spent) / len(spent)  # one ends within the slice
            if time.time() > budget[0]:  # the run's end: no more shrinking either (the
                camp.shrink_budget = 0  # smallest failing Case so far is the finding)
        return v

    first_path: list[str] = []

    fwd = [0]
    sig_prefix = cfg.prefix(unit.target)

    def on_case(case, v, phase):
        extra = lv.row_extra(cfg, case, v)
        fwd[0] += extra.get("forward_steps", 0)
        row = {"unit": unit.id, "target": unit.target, "kind": unit.kind, "seed": unit.seed,
               "phase": phase, **extra,
               "failed": v.failed, "signature": sig_prefix + v.signature() if v.failed else "",
               "checks": v.checks_run,
               "seconds": round(v.seconds, 4), "t": round(time.time(), 3),
               "case": case.to_json()}
        if v.failed:
            row["verdict"] = v.to_json()
            if known is not None:  # what the ledger said, and the executors it was told
                row["known"] = known.classify(case, v)
                row["executor"] = "+".join(cfg.executors)
        log.write(row)

    def on_first_failure(v):  # the unshrunk Case reaches disk before any shrinking run
        first_path.append(lv.write(out, lv.finding(cfg, unit, v), ".unshrunk", smallest=False))

    def superseded(path: str) -> None:  # the unshrunk bundle, once the shrunk one is written
        for p in first_path:
            if p != path and os.path.exists(p):
                os.unlink(p)
        first_path.clear()

    deadline, spent = 0.0, []  # spent: wall seconds of each Case run (--budget)
    if budget is not None:
        deadline = time.monotonic() + unit_slice(budget)
    known = lv.known(cfg, unit)
    known_paths: dict[str, str] = {}

    def on_known(v, eid):  # an entry's first Case, shrunk: its bundle, the unshrunk one gone
        rec = {**lv.finding(cfg, unit, v), "ledger_entry": eid}
        known_paths[eid] = lv.write(out, rec, f".known-{eid}", smallest=True)
        superseded(known_paths[eid])

    # with --budget the deadline is set after the first Case ran (run_case): every unit, so
    # every kind, runs at least one Case however late its turn comes
    camp = Campaign(run_case, seed=unit.seed, shrink_budget=cfg.shrink_budget,
                    on_first_failure=on_first_failure, deadline=None, replay=replay,
                    on_case=on_case, db_key=unit.target,
                    database=database if database is not None else open_database(cfg.db, out),
                    known=known, known_cap=cfg.known_cap, on_known=on_known,
                    strategy=lv.strategy, size=lv.size)
    t0 = time.perf_counter()
    try:
        res = camp.run_kind(unit.kind, unit.examples)  # (campaign pins Hypothesis's literals pool)
    except _HarnessAbort as e:  # nothing of this unit is judged: no unit row, no bundle
        log.close()
        raise e.args[0] from None
    finding = None
    path = None
    if res.finding is not None:
        rec = lv.finding(cfg, unit, res.finding)
        finding = rec["signature"]
        path = lv.write(out, rec, "", smallest=True)
        superseded(path)
    row = {"unit": unit.id, "event": "unit_done", "target": unit.target, "kind": unit.kind,
           "seed": unit.seed,
           "cases": res.cases, "generated": res.generated, "shrunk": res.shrunk,
           "replayed": res.replayed, "checks": res.checks, "forward_steps": fwd[0],
           "seconds": round(time.perf_counter() - t0, 3), "finding": finding,
           "message": res.finding.failures[0].message if res.finding else None,
           "out_of_time": res.out_of_time, **lv.unit_extra(out, unit, path, res),
           **({"short": res.short} if res.short else {}),
           **({"notes": res.notes} if res.notes else {})}
    if known is not None:  # harness.ledger.known: Cases per entry, the entries' bundles, the rest
        row.update({"known": dict(res.known),
                    "known_findings": {e: {"signature": sig_prefix + v.signature(),
                                           "bundle": known_paths.get(e)}
                                       for e, v in res.known_findings.items()},
                    "excluded": res.excluded, "stopped": res.stopped, "rounds": res.rounds,
                    "shrunk_known": dict(res.shrunk_known)})
    log.write(row)
    log.close()
    return row


def unit_slice(budget: tuple) -> float:
    """Seconds this unit may generate new Cases, from ``budget`` = ``(end of the run as
    wall-clock time, slice seconds[, turns left])``. With ``turns left`` (the units still to
    start per worker, this one included: :func:`swafuzz.harness.pipeline.driver.unit_budgets`) the
    slice is this unit's fair share of the time left *now*, so a unit that ran long (process
    start-up, slow Cases) shortens the slices after it instead of leaving the last units
    none; never past the end of the run."""
    left = budget[0] - time.time()
    share = left / max(1.0, budget[2]) if len(budget) > 2 else budget[1]
    return max(0.0, min(left, share))


_WORKERS: dict[str, Any] = {}


def case_worker(cfg: RunConfig, target: str):
    """This process's crash-isolating case worker for ``target`` (one child interpreter reused
    by every unit of that target this process runs; replaced after a crash by the worker)."""
    key = json.dumps([target, cfg.impl, cfg.executors, cfg.out, cfg.level, cfg.server_mutant])
    if key not in _WORKERS:
        cov = ({"data_dir": os.path.join(cfg.out, COVERAGE_DIR), "sources": sources_for(target)}
               if cfg.coverage else None)
        _WORKERS[key] = CaseWorker(target, cfg.impl, cfg.executors, cfg.out, coverage=cov,
                                   server=cfg.level == "server",
                                   server_mutant=cfg.server_mutant)
        atexit.register(_WORKERS[key].close)
    return _WORKERS[key]


def close_workers() -> None:
    for w in _WORKERS.values():
        w.close()
    _WORKERS.clear()


def load_plugins(modules: list[str]) -> None:
    for m in modules:
        load_module(m)
    load_env()


def pool_context():
    """The multiprocessing context of a ``--workers N`` pool: ``forkserver`` with this module
    preloaded where the platform has it (one fresh interpreter imports torch and the harness,
    and each pool process is a fork of it: N - 1 fewer imports of torch at the run's start),
    else ``spawn``. Either way a pool process shares no state with the CLI's process."""
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload([__name__, "swafuzz.harness.pipeline.serverwatch"])
        return ctx
    return mp.get_context("spawn")


def pool_init(parent_pid: int | None = None, method: str = "spawn") -> None:  # pragma: no cover
    """First thing in a pool process. ``parent_pid``: the CLI's; a process the forkserver
    forked (``method``) watches the server instead: its parent, which ends with the CLI."""
    if parent_pid is not None:  # a kill -9 of the run kills its pool processes too
        die_with_parent(os.getppid() if method == "forkserver" else parent_pid)
        if method == "forkserver":  # the server outlives the CLI while we live: watch the CLI
            die_with(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when units stop
    if not torch.cuda.is_available():  # the pool process's Triton mode, before Triton loads
        os.environ.setdefault("TRITON_INTERPRET", "1")
