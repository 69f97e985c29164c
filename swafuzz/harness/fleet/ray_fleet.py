"""Fleet runs: ``swafuzz run --ray ADDRESS|auto`` runs a campaign's units as Ray tasks on a Ray
cluster (``pip install 'swafuzz[ray]'``; docs/FLEET.md).

A unit is one streaming-generator task (:func:`swafuzz.harness.fleet.task.unit_stream`; one CPU,
one GPU where the run needs one: :func:`unit_resources`) yielding its case rows, bundles and
in-flight Case; only this driver writes them into the run directory, plus ``fleet.jsonl``: one
row per attempt (``start``: node, host, pid; ``died``: why, Cases recorded; ``reads``: the unit's
corpus reads, so a retry reads the same). A dead worker or node costs at most its running Case:
the unit is resubmitted with its recorded rows, answered from its log. After :data:`STRIKES`
attempts in a row that die without a new Case, the run ends in a tool failure (exit 3; a
:class:`~swafuzz.machinery.HarnessError`, as a unit's own HarnessError), never a finding. Corpus:
``--db redis://...`` shared by every node, or ``none`` (the default with ``--ray``).
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any, Callable

from swafuzz.harness.cli.common import UsageError
from swafuzz.harness.fleet.task import unit_stream
from swafuzz.harness.pipeline import level
from swafuzz.harness.pipeline.caselog import CaseLog, read_log
from swafuzz.harness.pipeline.level import case_size
from swafuzz.harness.pipeline.runconfig import RunConfig, Unit, crash_row
from swafuzz.harness.pipeline.unit import STOP
from swafuzz.machinery import FAULTS_ENV, START_TIMEOUT_ENV, HarnessError
from swafuzz.reports.bundle import atomic_write_text

#: attempts in a row that die without recording a Case before the unit is a crash finding
STRIKES = 3


class FleetError(UsageError):
    """``--ray`` cannot be used as given (exit 2; the message names the flag, what is allowed)."""


def check_ray(spec: str) -> None:
    """Validate ``--ray`` before anything is written."""
    if not spec or spec.startswith("-"):
        raise FleetError(f"--ray: {spec!r} is not an address; use HOST:PORT of the Ray head, "
                         "ray://HOST:PORT or auto")
    try:  # the modules the driver uses (a stray ``ray`` folder on the path is not Ray)
        import ray  # noqa: F401
        import ray.exceptions  # noqa: F401
    except ImportError:
        raise FleetError("--ray: needs the 'ray' package (pip install 'swafuzz[ray]')") from None
    check_reachable(spec)


#: seconds a Ray head gets to accept a TCP connection before ``--ray`` is refused
PROBE_S = 5.0


def check_reachable(spec: str, timeout: float = PROBE_S) -> None:
    """Refuse, before anything is written, a ``--ray HOST:PORT`` / ``ray://HOST:PORT`` (``auto``:
    ``RAY_ADDRESS``, else left to Ray) whose head accepts no TCP connection."""
    addr = os.environ.get("RAY_ADDRESS", "") if spec == "auto" else spec
    if not addr or addr == "auto":
        return
    hostport = addr.split("://", 1)[1] if "://" in addr else addr
    host, _, port = hostport.rstrip("/").rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise FleetError(f"--ray: {spec!r} is not an address; use HOST:PORT of the Ray head, "
                         "ray://HOST:PORT or auto")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        via = f" (RAY_ADDRESS={addr})" if spec == "auto" else ""
        raise FleetError(f"--ray: no Ray head answers at {hostport}{via}: {why} after at most "
                         f"{timeout:g} s; start one (ray start --head --port={port}) or fix the "
                         "address") from None


def check_db(spec: str | None) -> str:
    """The ``--db`` of a fleet run: ``redis://...`` or ``none`` (the default); a directory is
    one per node, so it is refused."""
    if spec is None or spec.lower() == "none":
        return "none"
    if spec.startswith("redis://"):
        return spec
    raise FleetError(f"--db: {spec!r} is a directory, one per node in a fleet; with --ray use "
                     "redis://HOST:PORT[/N] (the shared corpus) or none")


def unit_resources(impl: str, executors: list[str], cluster_gpus: float) -> dict[str, float]:
    """A unit's Ray resources: one CPU (the unit process waits on its case worker), and one GPU
    when the run needs one: impl ``cuda`` or the ``cudagraph`` executor always, ``triton`` when
    the cluster has GPUs (compiled there, as on a GPU machine; interpreted on CPU nodes)."""
    needs = impl == "cuda" or "cudagraph" in executors or (impl == "triton" and cluster_gpus > 0)
    return {"num_cpus": 1, "num_gpus": 1 if needs else 0}


class RunDirMirror:
    """Applies a unit attempt's batches to the run directory (this process alone writes it)."""

    def __init__(self, out: str, log: CaseLog, size: Callable[[dict], Any] | None = None):
        self.out, self.log = out, log
        self.size = size  # a bundle Case's size at the run's level ('smallest'; component)
        self.sent: dict[tuple[str, str], str] = {}  # (unit, relpath) -> what the unit wrote
        self.scratch: dict[str, str] = {}  # unit -> its attempt's scratch directory

    def apply(self, unit: str, batch: dict[str, Any], recorded: list[dict]) -> dict | None:
        """Write ``batch`` (rows, files, gone) of ``unit``; its unit row when it has one."""
        done = None
        for row in batch.get("rows", ()):
            row = {k: v for k, v in row.items() if k != "v"}
            self.log.write(row)
            if row.get("event") == "unit_done":
                done = row
            elif "case" in row:
                recorded.append(row)
        for rel, text in batch.get("files", {}).items():
            self._write(unit, rel, text)
        for rel in batch.get("gone", ()):
            self._remove(unit, rel)
        return done

    def _write(self, unit: str, rel: str, text: str) -> None:
        path = os.path.join(self.out, rel)
        scratch = self.scratch.get(unit)
        if rel.startswith("findings/") and scratch:  # its repro line names the run directory
            try:
                b = json.loads(text)
                b["command"] = str(b.get("command", "")).replace(scratch, self.out.rstrip("/"))
                text = json.dumps(b, indent=1, sort_keys=True) + "\n"
            except ValueError:
                pass
        if rel.startswith("findings/") and not rel.endswith(".unshrunk.json"):
            try:  # one bundle per signature: the smallest Case of all units
                with open(path) as f:
                    old = json.load(f)
                size = self.size or case_size
                if size(old["case"]) <= size(json.loads(text)["case"]):
                    return
            except (OSError, ValueError, KeyError):
                pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write_text(path, text)
        self.sent[(unit, rel)] = text

    def _remove(self, unit: str, rel: str) -> None:
        path = os.path.join(self.out, rel)
        text = self.sent.pop((unit, rel), None)
        try:
            with open(path) as f:
                if text is None or f.read() != text:
                    return  # another unit's file now (or never ours)
            os.unlink(path)
        except OSError:
            pass


class _Attempts:
    """``OUT/fleet.jsonl``: where each attempt ran, how it ended, the corpus reads per unit."""

    def __init__(self, out: str):
        self.path = os.path.join(out, "fleet.jsonl")
        self.reads: dict[str, list] = {}
        self.attempts: dict[str, int] = {}
        for r in read_log(self.path):  # a resumed run keeps its units' reads
            if r.get("event") == "reads":
                self.reads.setdefault(r["unit"], []).append(r["read"])
            if r.get("event") == "start":
                self.attempts[r["unit"]] = max(self.attempts.get(r["unit"], 0), r["attempt"])
        self.log = CaseLog(self.path)

    def write(self, row: dict[str, Any]) -> None:
        self.log.write({**row, "t": round(time.time(), 3)})


def run_fleet(cfg: RunConfig, units: list[Unit], budget: tuple[float, float] | None,
              unit_done: Callable[[dict], None], tick: Callable[[], None],
              say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Run ``units`` on the Ray cluster ``cfg.ray``; their unit rows, in the order they end."""
    import ray
    from ray.exceptions import RayError, RayTaskError, TaskCancelledError

    try:
        ray.init(address=cfg.ray, logging_level="ERROR", log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise FleetError(f"--ray: cannot connect to a Ray cluster at {cfg.ray!r} ({e})") from None
    try:
        res = ray.cluster_resources()
        opts = unit_resources(cfg.impl, cfg.executors, res.get("GPU", 0))
        for name, key in (("num_cpus", "CPU"), ("num_gpus", "GPU")):
            if res.get(key, 0) < opts[name]:
                raise FleetError(f"--ray: the cluster at {cfg.ray} has {res.get(key, 0):g} "
                                 f"{key}s; each unit needs {opts[name]} (impl {cfg.impl}, "
                                 f"executors {','.join(cfg.executors)})")
        say(f"fleet: {len(units)} units on {cfg.ray} ({res.get('CPU', 0):g} CPUs, "
            f"{res.get('GPU', 0):g} GPUs; {opts['num_cpus']} CPU, {opts['num_gpus']} GPU a unit; "
            f"corpus: {check_db(cfg.db)})")
        env = {k: os.environ[k] for k in (START_TIMEOUT_ENV, FAULTS_ENV) if k in os.environ}
        task = ray.remote(unit_stream).options(  # --start-timeout, SWAFUZZ_FAULTS: to the tasks
            max_retries=0, **opts, **({"runtime_env": {"env_vars": env}} if env else {}))
        ledger_text = None
        if cfg.ledger:
            with open(cfg.ledger) as f:
                ledger_text = f.read()
        log = CaseLog(os.path.join(cfg.out, "cases.jsonl"))
        lv = level.get(cfg.level)
        mirror = RunDirMirror(cfg.out, log, lambda c: lv.size(lv.load(c)))
        att = _Attempts(cfg.out)
        recorded: dict[str, list[dict]] = {u.id: [] for u in units}
        for r in read_log(os.path.join(cfg.out, "cases.jsonl")):
            if r.get("unit") in recorded and "case" in r:
                recorded[r["unit"]].append(r)
        strikes = {u.id: 0 for u in units}
        cfg_json = dict(cfg.to_json(), db=check_db(cfg.db))

        def submit(u: Unit):
            att.attempts[u.id] = att.attempts.get(u.id, 0) + 1
            return task.remote(cfg_json, {**u.__dict__}, recorded[u.id],
                               att.reads.get(u.id, []), ledger_text, budget)

        gens = {submit(u): (u, len(recorded[u.id])) for u in units}
        rows: list[dict[str, Any]] = []
        try:
            while gens:
                ready, _ = ray.wait(list(gens), num_returns=1, timeout=1.0)
                if STOP["flag"]:
                    raise KeyboardInterrupt
                for g in ready:
                    u, before = gens[g]
                    try:
                        msg = ray.get(next(g))
                    except StopIteration:
                        gens.pop(g)
                        msg = None
                        err: Exception | None = RuntimeError("the task ended without its unit row")
                    except TaskCancelledError:
                        raise KeyboardInterrupt from None
                    except RayTaskError as e:  # the unit's own error: a finding, as in a pool
                        gens.pop(g)
                        cause = getattr(e, "cause", None) or e
                        if isinstance(cause, HarnessError):  # the machinery: exit 3, as in a pool
                            raise cause from None
                        rows.append(crash_row(cfg, u, f"{type(cause).__name__}: {cause}"))
                        log.write(rows[-1])
                        unit_done(rows[-1])
                        continue
                    except RayError as e:  # the worker or its node died
                        gens.pop(g)
                        msg, err = None, e
                    if msg is not None:
                        if "start" in msg:
                            mirror.scratch[u.id] = msg["start"].get("scratch", "")
                            att.write({"unit": u.id, "event": "start",
                                       "attempt": att.attempts[u.id], **msg["start"]})
                            continue
                        for i, read in msg.get("reads", ()):
                            att.reads.setdefault(u.id, []).append(read)
                            att.write({"unit": u.id, "event": "reads", "i": i, "read": read})
                        done = mirror.apply(u.id, msg, recorded[u.id])
                        if done is not None:
                            gens.pop(g, None)
                            att.write({"unit": u.id, "event": "done",
                                       "attempt": att.attempts[u.id]})
                            rows.append(done)
                            unit_done(done)
                        continue
                    n = len(recorded[u.id])
                    why = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                    att.write({"unit": u.id, "event": "died", "attempt": att.attempts[u.id],
                               "error": why, "cases_recorded": n})
                    strikes[u.id] = 0 if n > before else strikes[u.id] + 1
                    if strikes[u.id] >= STRIKES:  # the fleet's machinery, not the code under test
                        raise HarnessError(f"unit {u.id}: its Ray task died {STRIKES} times "
                                           f"without recording a Case (last: {why})")
                    say(f"fleet: unit {u.id} lost its worker ({why}); retrying from its log "
                        f"({n} Cases recorded)")
                    gens[submit(u)] = (u, n)
                tick()
        except KeyboardInterrupt:
            for g in gens:
                ray.cancel(g, force=True)
            raise
        finally:
            log.close()
            att.log.close()
        return rows
    finally:
        ray.shutdown()
