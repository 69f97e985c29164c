"""The worker side of a fleet run (``swafuzz run --ray``, :mod:`swafuzz.harness.fleet.ray_fleet`):
one unit as a Ray streaming-generator task.

It runs :func:`swafuzz.harness.pipeline.unit.run_unit` in a scratch directory on its node,
pre-filled with the case rows the driver already recorded (answered from the log on a retry), and
yields in small batches what appears there (case rows, bundles written or removed, the in-flight
Case); the driver alone writes the run directory. The corpus keys Hypothesis reads are recorded
for the driver (:func:`recorded_reads_db`), so a retry reads and draws as the first attempt did.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from typing import Any, Iterator

import torch
from hypothesis.database import ExampleDatabase

from swafuzz.harness.pipeline.caselog import LOG_VERSION
from swafuzz.harness.pipeline.corpus import open_database
from swafuzz.harness.pipeline.runconfig import RunConfig
from swafuzz.harness.pipeline.unit import case_worker, close_workers, load_plugins, run_unit

#: seconds between two looks at the scratch directory
POLL_S = 0.2
#: scratch subfolders mirrored to the driver (cases.jsonl is streamed row by row)
MIRRORED = ("findings", "inflight")


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def recorded_reads_db(inner, reads: list[list[Any]]):
    """An example database over ``inner`` whose ``fetch`` answers the first ``len(reads)``
    fetches from ``reads`` (``[key_b64, [value_b64, ...]]`` in call order; what an earlier
    attempt of the unit read) and records every later one in ``reads``. Writes go to ``inner``."""
    class RecordedReads(ExampleDatabase):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def fetch(self, key: bytes):
            i, self.n = self.n, self.n + 1
            if i < len(reads) and reads[i][0] == _b64(key):
                vals = [base64.b64decode(v) for v in reads[i][1]]
            else:
                vals = list(inner.fetch(key))
                if i >= len(reads):
                    reads.append([_b64(key), [_b64(v) for v in vals]])
            return vals  # a list, not a generator: the call itself counts

        def save(self, key: bytes, value: bytes) -> None:
            inner.save(key, value)

        def delete(self, key: bytes, value: bytes) -> None:
            inner.delete(key, value)

        def move(self, src: bytes, dest: bytes, value: bytes) -> None:
            inner.move(src, dest, value)

    return RecordedReads()


class _Scratch:
    """What changed in the scratch directory since the last look."""

    def __init__(self, root: str, log_offset: int):
        self.root, self.offset = root, log_offset
        self.seen: dict[str, tuple[int, int]] = {}

    def changes(self) -> dict[str, Any]:
        with open(os.path.join(self.root, "cases.jsonl"), "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # whole lines only: a row being written comes next time
        rows = [json.loads(line) for line in data[:end].splitlines()]
        self.offset += end
        files: dict[str, str] = {}
        now: dict[str, tuple[int, int]] = {}
        for sub in MIRRORED:
            d = os.path.join(self.root, sub)
            for e in os.scandir(d) if os.path.isdir(d) else ():
                if not e.is_file() or e.name.endswith(".tmp") or e.name.startswith("."):
                    continue
                rel = f"{sub}/{e.name}"
                st = e.stat()
                now[rel] = (st.st_mtime_ns, st.st_size)
                if self.seen.get(rel) != now[rel]:
                    try:
                        with open(e.path) as f:
                            files[rel] = f.read()
                    except OSError:  # removed meanwhile: seen (or not) next time
                        now.pop(rel)
        gone = sorted(set(self.seen) - set(now))
        self.seen = now
        return {"rows": rows, "files": files, "gone": gone}


def unit_stream(cfg_json: dict[str, Any], unit_json: dict[str, Any], recorded: list[dict],
                reads: list[list[Any]], ledger_text: str | None,
                budget: tuple[float, float] | None) -> Iterator[dict[str, Any]]:
    """Run one unit (``recorded``: its case rows already in the driver's log) and yield
    ``{"start": {...}}`` first, then batches ``{"rows", "files", "gone", "reads"}`` (``reads``:
    new corpus reads, with their index) as they happen, the last one after the unit ended."""
    # one scratch directory per worker process, emptied per unit: the same path keeps the
    # process's case worker (unit.case_worker is keyed by it) for the next unit
    scratch = os.path.join(tempfile.gettempdir(), f"swafuzz-fleet-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    box: dict[str, Any] = {}  # the unit's row, or the error it raised
    try:
        os.makedirs(os.path.join(scratch, "inflight"))
        with open(os.path.join(scratch, "cases.jsonl"), "w") as f:
            for r in recorded:
                f.write(json.dumps({"v": LOG_VERSION, **r}) + "\n")
        cfg = dict(cfg_json, out=scratch, workers=1)
        if ledger_text is not None:
            cfg["ledger"] = os.path.join(scratch, "ledger.json")
            with open(cfg["ledger"], "w") as f:
                f.write(ledger_text)
        if not torch.cuda.is_available():  # the Triton mode, before triton loads (as a pool)
            os.environ.setdefault("TRITON_INTERPRET", "1")
        reads = [list(r) for r in reads]
        n_reads = len(reads)
        inner = open_database(cfg.get("db") or "none", scratch)
        db = recorded_reads_db(inner, reads) if inner is not None else None
        yield {"start": {**_where(), "scratch": scratch}}
        if cfg.get("isolate", True):  # started here, not in the unit's thread below: a case
            # worker dies with the thread that started it (PR_SET_PDEATHSIG follows the
            # thread), so one started there lived for one unit and every unit paid a new one
            load_plugins(cfg.get("plugins") or [])  # the target's recipe may need them
            case_worker(RunConfig.from_json(cfg), unit_json["target"]).start()
        watch = _Scratch(scratch, os.path.getsize(os.path.join(scratch, "cases.jsonl")))

        def body() -> None:
            try:
                box["row"] = run_unit(cfg, unit_json, budget, database=db)
            except BaseException as e:  # noqa: BLE001 - re-raised in the task's thread
                box["error"] = e

        t = threading.Thread(target=body, name=f"unit {unit_json['id']}", daemon=True)
        t.start()
        while True:
            alive = t.is_alive()
            batch = watch.changes()
            batch["reads"] = [[i, reads[i]] for i in range(n_reads, len(reads))]
            n_reads = len(reads)
            if any(batch.values()):
                yield batch
            if not alive:
                break
            t.join(POLL_S)
        if "error" in box:
            raise box["error"]
    finally:
        if "error" in box or not box:  # a unit's error or a cancel: a fresh worker next time
            close_workers()
        shutil.rmtree(scratch, ignore_errors=True)


def _where() -> dict[str, Any]:
    """Where this attempt runs: Ray node id, host, worker pid (``fleet.jsonl``)."""
    node = None
    try:
        import ray

        node = ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - informative only
        pass
    return {"node": node, "host": socket.gethostname(), "pid": os.getpid(), "t": time.time()}
