"""One run pipeline: a :class:`RunConfig` resolved once, units spread over worker processes,
one findings sink. ``swafuzz run`` only parses flags into a RunConfig and prints.

A *unit* ``(kind, seed, examples)`` is one hypothesis search: one per kind with ``--workers
1``; with N workers and fewer kinds than N, kinds split into shards (seed ``seed + 7919 *
shard``, ``--examples`` divided). Units run in a pool of N processes forked by a ``forkserver``
that imported the harness once (:func:`~swafuzz.harness.pipeline.unit.pool_context`); ``--shard
I/N`` runs a slice (:mod:`swafuzz.harness.fleet.shard`). Each unit process owns a
:class:`~swafuzz.harness.pipeline.worker.CaseWorker`; a unit process that dies becomes a
``crash`` finding and the pool is rebuilt.

``OUT/cases.jsonl`` (schema version 1; one JSON object per line, one ``write`` each):

* case row - ``{"v": 1, "unit": "decode.0", "kind", "seed", "phase": "generate"|"shrink",
  "failed": bool, "signature": str, "checks": int, "seconds": float, "case": {...},
  "verdict": {...} (failures; failed rows only)}``: every case, passing or not, replays;
* unit row - ``{"v": 1, "unit", "event": "unit_done", "kind", "cases", "generated",
  "shrunk", "replayed", "checks", "seconds", "finding": signature|null, "out_of_time"}``.

With a ledger (:mod:`swafuzz.harness.ledger.known`) failing case rows add ``"known": entry
id|null`` and ``"executor"`` (``eager+tape``); unit rows add ``"known": {entry id: Cases}``,
``"known_findings": {entry id: {"signature", "bundle"}}``, ``"excluded"``, ``"stopped"``,
``"rounds"`` (``finding``: the new finding only). ``OUT/run.json`` holds the RunConfig;
``OUT/inflight/<unit>.json`` the Case a unit is executing (re-run on resume).

``--resume OUT`` skips units with a ``unit_done`` row and re-runs the others (generation is
deterministic per seed; logged Cases are answered from their rows). A torn last log line is cut
first (:func:`~swafuzz.harness.pipeline.caselog.repair_log`); the CLI holds ``OUT/run.lock``.
Ctrl-C / SIGTERM stop the units, print the table and the resume command, exit 130. With
``--budget`` each unit takes its fair share of the time left when it starts (:func:`unit_budgets`;
docs/RUNS.md).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from typing import Any, Callable

from swafuzz.harness.fleet.ray_fleet import run_fleet
from swafuzz.harness.fleet.shard import shard_units
from swafuzz.harness.pipeline.caselog import CaseLog, read_log, repair_log, unit_rows
from swafuzz.harness.pipeline.runconfig import RunConfig, Unit, crash_row
from swafuzz.harness.pipeline.unit import STOP, close_workers, pool_context, pool_init, run_unit
from swafuzz.machinery import HarnessError


# --------------------------------------------------------------------------- the run
@dataclass
class RunResult:
    rows: list[dict[str, Any]]  # unit rows, this run's and resumed ones
    interrupted: bool = False
    seconds: float = 0.0  # this session's wall time
    prior_seconds: float = 0.0  # wall time of the run's earlier sessions (--resume)

    @property
    def findings(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("finding")]


def run(cfg: RunConfig, *, say: Callable[[str], None] = print,
        progress_every: float = 5.0, session_start: float | None = None) -> RunResult:
    """Run (or resume) the campaign ``cfg`` into ``cfg.out``. ``session_start``: when this
    session's command started (wall clock; default now): its start-up counts in ``--budget``."""
    os.makedirs(os.path.join(cfg.out, "inflight"), exist_ok=True)
    log_path = os.path.join(cfg.out, "cases.jsonl")
    cut = repair_log(log_path)  # a torn last row (kill -9 mid-write) is not appended onto
    if cut:
        say(f"case log: cut off a torn last line ({cut} bytes, written when the run was killed)")
    done = {r["unit"]: r for r in read_log(log_path) if r.get("event") == "unit_done"}
    units = [u for u in shard_units(cfg) if u.id not in done]  # all units unsharded
    rows = list(done.values())
    if done:
        say(f"resuming: {len(done)} units already done, {len(units)} to run")
    budget = None
    spent = _spent_seconds(cfg, log_path)
    if cfg.budget_s:  # time already spent by earlier sessions of this run counts (--resume)
        remaining = max(0.0, cfg.budget_s - spent)
        per_worker = max(1, -(-len(units) // max(1, cfg.workers)))
        budget = (min(session_start or time.time(), time.time()) + remaining,
                  remaining / per_worker)
        if spent:
            say(f"budget: {spent:.0f} s of {cfg.budget_s:.0f} s already spent")
    t0 = time.monotonic()
    interrupted = False
    STOP["flag"] = False
    prev = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    ticker = _Ticker(log_path, say, float(os.environ.get("SWAFUZZ_PROGRESS_S", progress_every)),
                     len(units))
    try:
        if cfg.ray or cfg.workers > 1:  # the units run elsewhere: the case worker the CLI
            close_workers()  # started to check the target loads would sit idle all run
        if cfg.ray:  # a fleet: the units as Ray tasks (harness.fleet.ray_fleet; ray is optional)
            rows += run_fleet(cfg, units, budget, ticker.unit_done, ticker.tick, say)
        elif cfg.workers <= 1:
            turns = unit_budgets(budget, units, 1)
            for u in units:
                if STOP["flag"]:
                    raise KeyboardInterrupt
                rows.append(run_unit(cfg.to_json(), asdict(u), turns.get(u.id)))
                ticker.unit_done(rows[-1])
        else:
            _run_pool(cfg, units, budget, ticker, rows)
    except KeyboardInterrupt:
        interrupted = True  # every finished unit, and the logged Cases of the unfinished ones
        rows = unit_rows(read_log(log_path), rows)
    finally:
        ticker.stop()
        for s, h in prev.items():
            signal.signal(s, h)
        close_workers()
    return RunResult(rows, interrupted, time.monotonic() - t0, spent)


def _on_signal(signum, frame):  # a second signal raises at once
    if STOP["flag"]:
        raise KeyboardInterrupt
    STOP["flag"] = True


def _spent_seconds(cfg: RunConfig, log_path: str) -> float:
    """Wall time earlier sessions of this run used: from ``run.json``'s start to the last case
    they logged (0 for a new run)."""
    try:
        with open(os.path.join(cfg.out, "run.json")) as f:
            started = json.load(f).get("started")
    except (OSError, ValueError):
        return 0.0
    ts = [r["t"] for r in read_log(log_path) if isinstance(r.get("t"), (int, float))]
    return max(0.0, max(ts) - started) if ts and started else 0.0


def _run_pool(cfg: RunConfig, units: list[Unit], budget: tuple[float, float] | None,
              ticker: _Ticker, rows: list[dict[str, Any]]) -> None:
    """The units in a pool of ``cfg.workers`` processes, their rows appended to ``rows`` as
    they finish (kept when Ctrl-C ends the pool)."""
    pending = list(units)
    broke: dict[str, int] = {}  # unit id -> pools it was in when they broke
    while pending:
        ctx = pool_context()  # forkserver (one import of torch for every pool process) or spawn
        pool = cf.ProcessPoolExecutor(max_workers=cfg.workers, mp_context=ctx,
                                      initializer=pool_init,
                                      initargs=(os.getpid(), ctx.get_start_method()))
        turns = unit_budgets(budget, pending, cfg.workers)
        futs = {pool.submit(run_unit, cfg.to_json(), asdict(u), turns.get(u.id)): u
                for u in pending}
        pending = []
        try:
            not_done = set(futs)
            while not_done:
                fin, not_done = cf.wait(not_done, timeout=1.0, return_when=cf.FIRST_COMPLETED)
                if STOP["flag"]:
                    raise KeyboardInterrupt
                for f in fin:
                    u = futs[f]
                    try:
                        rows.append(f.result())
                        ticker.unit_done(rows[-1])
                    except BrokenProcessPool:
                        broke[u.id] = broke.get(u.id, 0) + 1
                        if broke[u.id] >= 2 and cfg.isolate:  # no code under test ran there
                            raise HarnessError(f"unit {u.id}: its pool process died twice "
                                               "(outside the case worker: out of memory, or "
                                               "killed from outside)") from None
                        if broke[u.id] >= 2:  # broke two pools: it is the one that dies
                            rows.append(_unit_crash(cfg, u, "the unit's process died twice "
                                                    "(outside the case worker)"))
                        else:
                            pending.append(u)  # maybe collateral: retried in a new pool
                    except HarnessError:  # the machinery, not the code under test: exit 3
                        raise
                    except Exception as e:  # noqa: BLE001 - a unit's harness error is a finding
                        rows.append(_unit_crash(cfg, u, f"{type(e).__name__}: {e}"))
                ticker.tick()
        except (KeyboardInterrupt, HarnessError):
            for p in list(getattr(pool, "_processes", {}).values()):
                p.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True, cancel_futures=True)


def unit_budgets(budget: tuple[float, float] | None, units: list[Unit],
                 workers: int) -> dict[str, tuple[float, float, float]]:
    """Each unit's ``budget`` argument of :func:`run_unit`: the run's end, the even slice, and
    the unit's turns left (the units from it to the last, per worker, in the order they are
    started), so each unit takes its fair share of the time left when it starts."""
    if budget is None:
        return {}
    n, w = len(units), max(1, workers)
    return {u.id: (budget[0], budget[1], float(-(-(n - i) // w))) for i, u in enumerate(units)}


def _unit_crash(cfg: RunConfig, u: Unit, why: str) -> dict[str, Any]:
    row = crash_row(cfg, u, why)
    log = CaseLog(os.path.join(cfg.out, "cases.jsonl"))
    log.write(row)
    log.close()
    return row


class _Ticker:
    """Progress lines every ``every`` seconds (cases logged so far), for logs without a TTY:
    from a thread of its own, so a long unit (one worker, one kind) reports inside it too."""

    def __init__(self, log_path: str, say: Callable[[str], None], every: float, units: int):
        self.log_path, self.say, self.every, self.units = log_path, say, every, units
        self.t = time.monotonic()
        self.t0 = self.t
        self.done = 0
        self.start = self._cases()
        self.lock = threading.Lock()
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="swafuzz-progress", daemon=True)
        self.thread.start()

    def _beat(self) -> None:
        while not self.ended.wait(max(0.5, self.every / 5)):
            self.tick()

    def stop(self) -> None:
        self.ended.set()
        self.thread.join()

    def _cases(self) -> int:
        if not os.path.exists(self.log_path):
            return 0
        with open(self.log_path) as f:
            return sum(1 for line in f if '"event"' not in line)

    def tick(self) -> None:
        with self.lock:
            now = time.monotonic()
            if now - self.t < self.every:
                return
            self.t = now
        self.say(f"progress: {self._cases() - self.start} cases run, {self.done}/{self.units} "
                 f"units done, {now - self.t0:.0f} s")

    def unit_done(self, row: dict[str, Any]) -> None:
        self.done += 1
        known = sum((row.get("known") or {}).values())
        self.say(f"{row['unit']:>20}: {row['cases']} cases ({row['generated']} generated, "
                 f"{row['shrunk']} shrinking, {row['replayed']} replayed), "
                 f"{'FINDING ' + row['finding'] if row['finding'] else 'clean'}, "
                 + (f"{known} known ({', '.join(sorted(row['known']))}), " if known else "")
                 + (f"stopped: {row['stopped']}, " if row.get("stopped") else "") +
                 f"{row['seconds']:.1f} s")
        for note in row.get("notes") or ():  # Hypothesis's messages, in the run's words
            self.say(f"note: {row['unit']}: {note}")
        if row.get("short"):
            self.say(f"note: {row['unit']}: {row['short']}")
        self.tick()
