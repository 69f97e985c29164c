"""Crash isolation: run Cases in a child process.

The parent writes the in-flight Case to ``inflight.json`` before each case (so even a hard crash
of the parent leaves it on disk), sends it to the child and waits. If the child dies (segfault,
illegal memory access, abort) or runs past the timeout, the result is a Verdict with one
``crash`` (or ``timeout``) failure, and the next case starts a fresh child. A sticky CUDA error
leaves the child alive with a broken context: the child probes its device context after every
case (:func:`device_context_error`) and, when it is broken, reports the case as a ``crash`` and
exits, so the next case starts a fresh child too (the in-flight Case stays on disk).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
from typing import Any

from swafuzz.harness.checks import Failure
from swafuzz.harness.run import Verdict
from swafuzz.scenarios.case import Case


def device_context_error() -> str | None:
    """Why this process's device context is unusable, or None. A sticky CUDA error (illegal
    address, device-side assert) surfaces asynchronously and poisons every later call, so the
    worker probes after every case: a device sync and a tiny kernel on a GPU; on CPU, the
    simulated error of ``selftest:cuda_sticky``."""
    from swafuzz.targets.selftest import simulated_context_error

    sim = simulated_context_error()
    if sim is not None:
        return sim
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        try:
            torch.cuda.synchronize()
            torch.ones(1, device="cuda").add_(1).cpu()
        except Exception as e:  # noqa: BLE001 - any failure means the context is gone
            return f"{type(e).__name__}: {e}"
    return None


def _child(conn, env: dict[str, str]) -> None:  # pragma: no cover - runs in the child
    os.environ.update(env)
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from swafuzz.harness.run import InvalidCase, execute

    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        case = Case.loads(msg["case"])
        try:
            v = execute(case, msg["target"], msg["impl"], msg["executors"], msg.get("only"))
            reply = {"ok": v.to_json()}
        except InvalidCase as e:
            reply = {"invalid": str(e)}
        except Exception as e:  # noqa: BLE001 - any harness exception is reported, not fatal
            import traceback

            reply = {"harness_error": f"{type(e).__name__}: {e}\n{traceback.format_exc()}"}
        broken = device_context_error()
        if broken is not None:  # this case broke the context: a crash; this child is done
            conn.send({"context_broken": broken})
            return
        conn.send(reply)


class CaseWorker:
    """A child process that executes Cases; restarted after a crash."""

    def __init__(self, target: str, impl: str, executors: list[str], out_dir: str | None = None,
                 timeout_s: float = 600.0):
        self.target, self.impl, self.executors = target, impl, executors
        self.out_dir = out_dir
        self.timeout_s = timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        env = {k: v for k, v in os.environ.items() if k.startswith(("TRITON", "CUDA", "PYTORCH"))}
        self._proc = self._ctx.Process(target=_child, args=(child, env), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def _inflight_path(self) -> str | None:
        return os.path.join(self.out_dir, "inflight.json") if self.out_dir else None

    def run(self, case: Case, only: set[str] | None = None) -> Verdict:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        path = self._inflight_path()
        if path:
            from swafuzz.reports.bundle import atomic_write_text

            atomic_write_text(path, json.dumps({"case": case.to_json(), "target": self.target,
                                                "impl": self.impl}) + "\n")
        self._conn.send({"case": case.dumps(), "target": self.target, "impl": self.impl,
                         "executors": self.executors, "only": only})
        reply: dict[str, Any] | None = None
        died = None
        if self._conn.poll(self.timeout_s):
            try:
                reply = self._conn.recv()
            except EOFError:
                pass
        else:
            died = f"timeout: the case ran past {self.timeout_s:.0f} s"
        if reply is None:
            if died is None:
                self._proc.join(5)
                code = self._proc.exitcode
                name = ""
                if code is not None and code < 0:
                    try:
                        name = f" ({signal.Signals(-code).name})"
                    except ValueError:
                        pass
                died = f"the worker process died with exit code {code}{name} inside the case"
            self.close(kill=True)
            check = "timeout" if died.startswith("timeout") else "crash"
            return Verdict(case, [Failure(check, died, "crash")], 0, 0.0)
        if "context_broken" in reply:  # sticky device error: crash finding, fresh worker
            self.close(kill=True)
            return Verdict(case, [Failure("crash", "the device context is broken after the "
                                          f"case (sticky error): {reply['context_broken']}",
                                          "crash")], 0, 0.0)
        if path and os.path.exists(path):
            os.unlink(path)
        if "ok" in reply:
            return Verdict.from_json(case, reply["ok"])
        if "invalid" in reply:
            from swafuzz.harness.run import InvalidCase

            raise InvalidCase(reply["invalid"])
        raise RuntimeError(f"harness error in the worker: {reply['harness_error']}")

    def close(self, kill: bool = False) -> None:
        if self._proc is not None:
            if kill:
                self._proc.kill()
            else:
                try:
                    self._conn.send(None)
                except (BrokenPipeError, OSError):
                    pass
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
        self._proc = None
        self._conn = None
