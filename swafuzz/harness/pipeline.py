"""One run pipeline: a :class:`RunConfig` resolved once, units of work spread over worker
processes, and one findings sink. ``swafuzz run`` only parses flags into a RunConfig and prints.

Units
-----
A campaign is split into *units*: ``(kind, seed, examples)``, one hypothesis search each. With
``--workers 1`` there is one unit per scenario kind (seed ``--seed``). With N workers and fewer
kinds than N, each kind is split into shards with seeds ``seed + 7919 * shard`` and the
``--examples`` budget divided between them, so every worker has work. Units run in a pool of N
``spawn`` processes (``concurrent.futures.ProcessPoolExecutor``: plain processes with their own
interpreter, no shared hypothesis state; pytest-xdist is a test runner, not a campaign scheduler).
Each unit process owns a crash-isolating :class:`~swafuzz.harness.worker.CaseWorker`, so a crash
inside a case is a ``crash`` finding and the case worker is replaced; a unit process that dies
itself becomes a ``crash`` finding of that unit and the pool is rebuilt.

The case log (``OUT/cases.jsonl``, schema version 1; one JSON object per line, appended with
one ``write`` each, so concurrent units never interleave lines):

* a case row - ``{"v": 1, "unit": "decode.0", "kind", "seed", "phase": "generate"|"shrink",
  "failed": bool, "signature": str, "checks": int, "seconds": float, "case": {...},
  "verdict": {...} (failures; failed rows only)}``. Every row carries its Case, so any case,
  passing or not, replays with ``swafuzz repro`` on a bundle made from it;
* a unit row - ``{"v": 1, "unit", "event": "unit_done", "kind", "cases", "generated",
  "shrunk", "replayed", "checks", "seconds", "finding": signature|null, "out_of_time"}``.

With a ledger consulted during the run (``RunConfig.ledger``, :mod:`swafuzz.harness.known`),
failing case rows add ``"known": entry id|null`` and ``"executor"`` (the executors that ran,
``eager+tape``), and unit rows ``"known": {entry id: Cases}``, ``"known_findings": {entry id:
{"signature", "bundle"}}``, ``"excluded"``, ``"stopped"`` and ``"rounds"``; ``finding`` stays
the new finding only (known ones do not fail the run).

``OUT/run.json`` holds the RunConfig (what ``--resume`` continues); ``OUT/inflight/<unit>.json``
is the Case a unit is executing right now (kept if the process is killed: the Case that was
running at the time; it is re-run on resume).

Resume and interrupts
---------------------
``--resume OUT`` reloads ``run.json``, skips units with a ``unit_done`` row and re-runs the others:
generation is deterministic for a unit's seed, and every Case already in the log is answered
from its row instead of being executed again (so nothing is lost or run twice, and the budget
counts what already ran). Ctrl-C and SIGTERM stop the units, print the table of what finished
and the resume command, and exit 130.

Exit codes: 0 clean, 1 findings, 2 usage or input error, 3 tool failure, 130 interrupted.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from swafuzz.features.validation import load_case

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_TOOL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
LOG_VERSION = 1
SHARD_SEED_STRIDE = 7919


@dataclass
class RunConfig:
    """Everything a run needs, resolved once (``impl`` and ``executors`` are never ``auto``)."""

    target: str = "unified"  # the first of ``targets``
    targets: list[str] = field(default_factory=list)  # every target of the run (default: target)
    impl: str = "triton"
    executors: list[str] = field(default_factory=lambda: ["eager", "tape"])
    executor_label: str = "auto"  # what the user asked for (recorded in bundles)
    kinds: list[str] = field(default_factory=list)
    examples: int = 300  # generated cases in all (split over units); with budget_s: per unit cap
    budget_s: float | None = None  # wall-clock budget of the whole run
    seed: int = 0
    workers: int = 1
    shrink_budget: int = 150
    out: str = "swafuzz-out"
    isolate: bool = True
    plugins: list[str] = field(default_factory=list)
    db: str | None = None  # hypothesis example database (see harness.corpus when present)
    #: known-failure ledger consulted during the run (harness.known); None: off
    ledger: str | None = None
    known_cap: int = 50  # Cases of one ledger entry per unit before its region is excluded

    def __post_init__(self) -> None:
        self.targets = list(self.targets) or [self.target]
        self.target = self.targets[0]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> RunConfig:
        known = {k: v for k, v in d.items() if k in RunConfig.__dataclass_fields__}
        return RunConfig(**known)


@dataclass
class Unit:
    id: str
    kind: str
    seed: int
    examples: int
    target: str = "unified"


def plan_units(cfg: RunConfig) -> list[Unit]:
    """The units of ``cfg`` (see the module docstring). ``--examples`` is split exactly: the
    units' budgets add up to it (earlier units get the remainder; a unit left with none is not
    run), so the generated cases never exceed the flag."""
    kinds, targets = cfg.kinds, cfg.targets
    pairs = [(t, k) for t in targets for k in kinds]
    shards = max(1, -(-cfg.workers // len(pairs))) if cfg.workers > len(pairs) else 1
    slots = [(t, k, s) for s in range(shards) for t, k in pairs]
    base, extra = divmod(cfg.examples, len(slots))
    prefix = (lambda t: f"{t}/") if len(targets) > 1 else (lambda t: "")
    units = [Unit(f"{prefix(t)}{k}.{s}", k, cfg.seed + SHARD_SEED_STRIDE * s,
                  base + (1 if i < extra else 0), t)
             for i, (t, k, s) in enumerate(slots)]
    return [u for u in units if u.examples > 0]


def case_key(case_json: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(case_json, sort_keys=True).encode()).hexdigest()


class CaseLog:
    """Appends rows to ``cases.jsonl`` (one ``os.write`` per row, ``O_APPEND``)."""

    def __init__(self, path: str):
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, row: dict[str, Any]) -> None:
        os.write(self.fd, (json.dumps({"v": LOG_VERSION, **row}) + "\n").encode())

    def close(self) -> None:
        os.close(self.fd)


def read_log(path: str) -> list[dict[str, Any]]:
    """Rows of a case log; a torn last line (kill -9 mid-write) is ignored."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


# --------------------------------------------------------------------------- one unit
def run_unit(cfg_json: dict[str, Any], unit_json: dict[str, Any],
             budget: tuple[float, float] | None = None) -> dict[str, Any]:
    """Run one unit (in a pool process or in-process) and return its unit row. ``budget``:
    ``(end of the run as wall-clock time, slice seconds)``: a unit generates new cases for at most its
    slice of a ``--budget`` run (its share of the remaining time), never past the end."""
    from swafuzz.harness.campaign import Campaign
    from swafuzz.harness.run import Verdict, execute
    from swafuzz.reports.bundle import write_bundle

    cfg, unit = RunConfig.from_json(cfg_json), Unit(**unit_json)
    _load_plugins(cfg.plugins)
    out = cfg.out
    log = CaseLog(os.path.join(out, "cases.jsonl"))
    replay: dict[str, Verdict] = {}
    for row in read_log(os.path.join(out, "cases.jsonl")):
        if row.get("unit") == unit.id and "case" in row:
            c = load_case(row["case"])
            replay[c.dumps()] = (Verdict.from_json(c, row["verdict"]) if row.get("failed")
                                 else Verdict(c, [], row.get("checks", 0), row.get("seconds", 0)))
    if cfg.isolate:
        worker = case_worker(cfg, unit.target)
        worker.inflight_name = f"inflight/{unit.id}.json"
        run_one: Callable = worker.run
    else:
        def run_one(case):
            return execute(case, unit.target, cfg.impl, cfg.executors)

    def run_case(case):
        if _STOP["flag"]:  # Ctrl-C / SIGTERM: stop at this safe point, before the next case
            raise KeyboardInterrupt
        return run_one(case)

    first_path: list[str] = []

    from swafuzz.harness.throughput import forward_count

    fwd = [0]
    sig_prefix = f"{unit.target}:" if len(cfg.targets) > 1 else ""

    def on_case(case, v, phase):
        fwd[0] += forward_count(case) * len(cfg.executors)
        row = {"unit": unit.id, "target": unit.target, "kind": unit.kind, "seed": unit.seed,
               "phase": phase,
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
        first_path.append(write_bundle(out, _finding(cfg, unit, v), suffix=".unshrunk"))

    deadline = None
    if budget is not None:
        end_wall, slice_s = budget
        deadline = time.monotonic() + max(0.0, min(end_wall - time.time(), slice_s))
    from swafuzz.harness.corpus import open_database
    from swafuzz.harness.known import unit_ledger

    known = unit_ledger(cfg.ledger, unit.target, cfg.executors)
    known_paths: dict[str, str] = {}

    def on_known(v, eid):  # an entry's first Case, shrunk: its bundle, the unshrunk one gone
        rec = {**_finding(cfg, unit, v), "ledger_entry": eid}
        known_paths[eid] = _write_smallest(out, rec, suffix=f".known-{eid}")
        for p in first_path:
            if p != known_paths[eid] and os.path.exists(p):
                os.unlink(p)
        first_path.clear()

    camp = Campaign(run_case, seed=unit.seed, shrink_budget=cfg.shrink_budget,
                    on_first_failure=on_first_failure, deadline=deadline, replay=replay,
                    on_case=on_case, database=open_database(cfg.db, out), db_key=unit.target,
                    known=known, known_cap=cfg.known_cap, on_known=on_known)
    t0 = time.perf_counter()
    res = camp.run_kind(unit.kind, unit.examples)
    finding = None
    if res.finding is not None:
        rec = _finding(cfg, unit, res.finding)
        finding = rec["signature"]
        path = _write_smallest(out, rec)
        for p in first_path:
            if p != path and os.path.exists(p):
                os.unlink(p)  # superseded by the shrunk Case
    row = {"unit": unit.id, "event": "unit_done", "target": unit.target, "kind": unit.kind,
           "seed": unit.seed,
           "cases": res.cases, "generated": res.generated, "shrunk": res.shrunk,
           "replayed": res.replayed, "checks": res.checks, "forward_steps": fwd[0],
           "seconds": round(time.perf_counter() - t0, 3), "finding": finding,
           "message": res.finding.failures[0].message if res.finding else None,
           "out_of_time": res.out_of_time}
    if known is not None:  # harness.known: Cases per entry, the entries' bundles, the rest
        row.update({"known": dict(res.known),
                    "known_findings": {e: {"signature": sig_prefix + v.signature(),
                                           "bundle": known_paths.get(e)}
                                       for e, v in res.known_findings.items()},
                    "excluded": res.excluded, "stopped": res.stopped, "rounds": res.rounds})
    log.write(row)
    log.close()
    return row


_WORKERS: dict[str, Any] = {}


def case_worker(cfg: RunConfig, target: str):
    """This process's crash-isolating case worker for ``target`` (one child interpreter reused
    by every unit of that target this process runs; replaced after a crash by the worker)."""
    from swafuzz.harness.worker import CaseWorker

    key = json.dumps([target, cfg.impl, cfg.executors, cfg.out])
    if key not in _WORKERS:
        _WORKERS[key] = CaseWorker(target, cfg.impl, cfg.executors, cfg.out)
        import atexit

        atexit.register(_WORKERS[key].close)
    return _WORKERS[key]


def close_workers() -> None:
    for w in _WORKERS.values():
        w.close()
    _WORKERS.clear()


def _size(case_json: dict[str, Any]) -> tuple[int, int, int]:
    s = load_case(case_json).summary()
    return (s["steps"], s["requests"], len(json.dumps(case_json)))


def _write_smallest(out: str, finding: dict[str, Any], suffix: str = "") -> str:
    """One bundle per signature (and ``suffix``: ``.known-<entry>`` for a ledger-known one):
    write ``finding`` unless the bundle already there (another unit's) holds a smaller Case."""
    from swafuzz.reports.bundle import signature_filename, write_bundle

    path = os.path.join(out, "findings",
                        signature_filename(finding["signature"]) + suffix + ".json")
    try:
        with open(path) as f:
            old = json.load(f)
        if _size(old["case"]) <= _size(finding["case"]):
            return path
    except (OSError, ValueError, KeyError):
        pass
    return write_bundle(out, finding, suffix=suffix)


def _finding(cfg: RunConfig, unit: Unit, v) -> dict[str, Any]:
    """The bundle record; with several targets in one run the signature starts with the target
    (findings are deduplicated per target)."""
    prefix = f"{unit.target}:" if len(cfg.targets) > 1 else ""
    # executors: what ran (``executor`` is the label asked for): the ledger's forwards view
    return {**v.finding(unit.target, cfg.impl, cfg.executor_label, prefix=prefix),
            "executors": list(cfg.executors)}


def _load_plugins(modules: list[str]) -> None:
    from swafuzz.targets.plugins import load_env, load_module

    for m in modules:
        load_module(m)
    load_env()


def _pool_init() -> None:  # pragma: no cover - runs in pool processes
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when units stop
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


# --------------------------------------------------------------------------- the run
@dataclass
class RunResult:
    rows: list[dict[str, Any]]  # unit rows, this run's and resumed ones
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def findings(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("finding")]


def run(cfg: RunConfig, *, say: Callable[[str], None] = print,
        progress_every: float = 5.0) -> RunResult:
    """Run (or resume) the campaign ``cfg`` into ``cfg.out``."""
    os.makedirs(os.path.join(cfg.out, "inflight"), exist_ok=True)
    log_path = os.path.join(cfg.out, "cases.jsonl")
    done = {r["unit"]: r for r in read_log(log_path) if r.get("event") == "unit_done"}
    units = [u for u in plan_units(cfg) if u.id not in done]
    rows = list(done.values())
    if done:
        say(f"resuming: {len(done)} units already done, {len(units)} to run")
    budget = None
    if cfg.budget_s:  # time already spent by earlier sessions of this run counts (--resume)
        spent = _spent_seconds(cfg, log_path)
        remaining = max(0.0, cfg.budget_s - spent)
        per_worker = max(1, -(-len(units) // max(1, cfg.workers)))
        budget = (time.time() + remaining, remaining / per_worker)
        if spent:
            say(f"budget: {spent:.0f} s of {cfg.budget_s:.0f} s already spent")
    t0 = time.monotonic()
    interrupted = False
    _STOP["flag"] = False
    prev = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    ticker = _Ticker(log_path, say, float(os.environ.get("SWAFUZZ_PROGRESS_S", progress_every)),
                     len(units))
    try:
        if cfg.workers <= 1:
            for u in units:
                if _STOP["flag"]:
                    raise KeyboardInterrupt
                rows.append(run_unit(cfg.to_json(), asdict(u), budget))
                ticker.unit_done(rows[-1])
        else:
            rows += _run_pool(cfg, units, budget, ticker)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for s, h in prev.items():
            signal.signal(s, h)
        close_workers()
    return RunResult(rows, interrupted, time.monotonic() - t0)


#: set by SIGINT/SIGTERM during a run; checked before every case and in the pool loop. The
#: handler does not raise: an exception raised from a signal handler can land in a gc callback
#: or a ``finally`` and be swallowed. A second signal raises at once.
_STOP = {"flag": False}


def _on_signal(signum, frame):
    if _STOP["flag"]:
        raise KeyboardInterrupt
    _STOP["flag"] = True


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
              ticker: _Ticker) -> list[dict[str, Any]]:
    import concurrent.futures as cf
    import multiprocessing as mp
    from concurrent.futures.process import BrokenProcessPool

    rows: list[dict[str, Any]] = []
    pending = list(units)
    broke: dict[str, int] = {}  # unit id -> pools it was in when they broke
    while pending:
        pool = cf.ProcessPoolExecutor(max_workers=cfg.workers, mp_context=mp.get_context("spawn"),
                                      initializer=_pool_init)
        futs = {pool.submit(run_unit, cfg.to_json(), asdict(u), budget): u
                for u in pending}
        pending = []
        try:
            not_done = set(futs)
            while not_done:
                fin, not_done = cf.wait(not_done, timeout=1.0, return_when=cf.FIRST_COMPLETED)
                if _STOP["flag"]:
                    raise KeyboardInterrupt
                for f in fin:
                    u = futs[f]
                    try:
                        rows.append(f.result())
                        ticker.unit_done(rows[-1])
                    except BrokenProcessPool:
                        broke[u.id] = broke.get(u.id, 0) + 1
                        if broke[u.id] >= 2:  # broke two pools: it is the one that dies
                            rows.append(_unit_crash(cfg, u, "the unit's process died twice "
                                                    "(outside the case worker)"))
                        else:
                            pending.append(u)  # maybe collateral: retried in a new pool
                    except Exception as e:  # noqa: BLE001 - a unit's harness error is a finding
                        rows.append(_unit_crash(cfg, u, f"{type(e).__name__}: {e}"))
                ticker.tick()
        except KeyboardInterrupt:
            for p in list(getattr(pool, "_processes", {}).values()):
                p.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True, cancel_futures=True)
    return rows


def _unit_crash(cfg: RunConfig, u: Unit, why: str) -> dict[str, Any]:
    row = {"unit": u.id, "event": "unit_done", "target": u.target, "kind": u.kind,
           "seed": u.seed, "cases": 0,
           "generated": 0, "shrunk": 0, "replayed": 0, "checks": 0, "seconds": 0.0,
           "finding": (f"{u.target}:" if len(cfg.targets) > 1 else "") + f"crash/{u.kind}/unit", "message": why, "out_of_time": False}
    log = CaseLog(os.path.join(cfg.out, "cases.jsonl"))
    log.write(row)
    log.close()
    return row


class _Ticker:
    """Progress lines every ``every`` seconds (cases logged so far), for logs without a TTY."""

    def __init__(self, log_path: str, say: Callable[[str], None], every: float, units: int):
        self.log_path, self.say, self.every, self.units = log_path, say, every, units
        self.t = time.monotonic()
        self.t0 = self.t
        self.done = 0
        self.start = self._cases()

    def _cases(self) -> int:
        if not os.path.exists(self.log_path):
            return 0
        with open(self.log_path) as f:
            return sum(1 for line in f if '"event"' not in line)

    def tick(self) -> None:
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
        self.tick()


def per_kind(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Unit rows summed per kind (per target and kind when a run has several targets)."""
    stats: dict[str, dict[str, Any]] = {}
    multi = len({r.get("target") for r in rows}) > 1
    for r in rows:
        key = f"{r.get('target')} {r['kind']}" if multi else r["kind"]
        s = stats.setdefault(key, {"cases": 0, "generated": 0, "shrunk": 0, "checks": 0,
                                         "findings": 0, "seconds": 0.0})
        if r.get("known"):  # harness.known: Cases per ledger entry
            for e, n in r["known"].items():
                s.setdefault("known", {})[e] = s.get("known", {}).get(e, 0) + n
        for k in ("generated", "shrunk", "checks", "seconds"):
            s[k] += r.get(k) or 0
        s["cases"] += (r.get("generated") or 0) + (r.get("shrunk") or 0)  # replayed included
        s["findings"] += 1 if r.get("finding") else 0
    return stats


def write_run_meta(cfg: RunConfig, **extra: Any) -> None:
    """``OUT/run.json``: the RunConfig (what ``--resume`` continues, under ``config``) and what
    ``swafuzz report`` reads (commit, versions, flags, and at the end timings)."""
    from swafuzz.harness.report import write_run_meta as write

    path = os.path.join(cfg.out, "run.json")
    old: dict[str, Any] = {}
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
    meta = {**old, "command": "run", "config": cfg.to_json(),
            "target": ", ".join(cfg.targets),
            "impl": cfg.impl, "executor": cfg.executor_label, "seed": cfg.seed,
            "examples": cfg.examples if cfg.examples < 10**6 else None,
            "budget_s": cfg.budget_s, "scenarios": cfg.kinds, "db": cfg.db,
            "workers": cfg.workers, **extra}
    meta.setdefault("started", time.time())
    write(cfg.out, meta)


def read_run_config(out: str) -> RunConfig:
    with open(os.path.join(out, "run.json")) as f:
        return RunConfig.from_json(json.load(f)["config"])

