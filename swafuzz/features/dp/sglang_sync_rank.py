"""Entry point of a ``DPSync`` rank process (spawned; standard library and
:mod:`swafuzz.machinery` only): a watchdog that ends the rank when its parent is gone, then a
beat on the pipe (``("starting", mark)``) before anything heavy loads, the start-up faults
(``SWAFUZZ_FAULTS``), and only then the rank's code (:mod:`.sglang_sync_worker`, which imports
torch and SGLang) by name, so that its imports are covered by the beat: the parent gives a rank
up only after ``--start-timeout`` seconds without progress.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
import traceback

from swafuzz.machinery import Heartbeat, start_fault


def _watchdog(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(3)
        time.sleep(0.5)


def main(rank: int, port: int, server: dict, model_dir: str, conn, parent_pid: int) -> None:
    """The rank's process target (``DPSync._spawn``)."""
    threading.Thread(target=_watchdog, args=(parent_pid,), daemon=True).start()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    hb = Heartbeat(lambda mark: conn.send(("starting", mark))).start()
    try:
        start_fault("rank", hb)  # SWAFUZZ_FAULTS=slow-rank-start=SECONDS, stuck-rank-start
        worker = importlib.import_module("swafuzz.features.dp.sglang_sync_worker")
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        hb.stop()
        conn.send(("err", traceback.format_exc()))
        os._exit(1)
    worker.main(rank, port, server, model_dir, conn, hb)
