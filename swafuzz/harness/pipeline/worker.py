"""Crash isolation: run Cases in a child process.

The parent writes the in-flight Case to ``inflight.json`` before each case, sends it to the child
and waits; a child that dies (segfault, illegal memory access, abort) or runs past the timeout
gives one ``crash`` (or ``timeout``) failure, and the next case starts a fresh child. The child is
a fresh interpreter (not a ``multiprocessing`` spawn) that rebuilds the target from the parent's
recipe (``swafuzz.targets.recipe``). Messages are JSON lines: requests on its stdin, replies on a
private pipe (its stdout goes to stderr: a printing target cannot corrupt the protocol). After
every case the child probes its device (:func:`device_context_error`); a sticky CUDA error is
reported as a ``crash`` and the child exits. Start-up has no fixed deadline: the child beats
while it imports and sets up (:mod:`swafuzz.machinery`), and the parent gives up only after
``--start-timeout`` seconds without progress (a :class:`~swafuzz.machinery.StartTimeout`); a
child killed from outside (SIGKILL: the out-of-memory killer, ``SWAFUZZ_FAULTS=kill-worker=N``)
and a harness exception in the child are :class:`~swafuzz.machinery.HarnessError` (exit 3), not
findings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import traceback
from typing import Any

import torch

from swafuzz import targets
from swafuzz.checks.base import Failure
from swafuzz.features.validation import loads_case
from swafuzz.harness.pipeline import zygote
from swafuzz.harness.pipeline.casetime import CaseClock
from swafuzz.harness.pipeline.coverage import ChildCoverage
from swafuzz.harness.pipeline.execute import CaseRefused, InvalidCase, Verdict, execute
from swafuzz.harness.pipeline.level_server import execute_server, prepare
from swafuzz.harness.pipeline.lines import LineReader
from swafuzz.harness.pipeline.runlock import die_with_parent
from swafuzz.machinery import (
    BEAT_S,
    HarnessError,
    Heartbeat,
    StartTimeout,
    StartWatch,
    child_boot,
    kill_fault,
)
from swafuzz.reports.bundle import atomic_write_text
from swafuzz.scenarios.case import Case
from swafuzz.server.case import ServerCase, parse
from swafuzz.server.oracle import ServerFailure
from swafuzz.server.run import ServerResult
from swafuzz.targets import plugins
from swafuzz.targets.selftest import simulated_context_error


class WorkerSetupError(RuntimeError):
    """The child could not get the target (plugin missing there): a usage error, not a crash."""


def device_context_error() -> str | None:
    """Why this process's device context is unusable, or None. A sticky CUDA error (illegal
    address, device-side assert) surfaces asynchronously and poisons every later call, so the
    worker probes after every case: a device sync and a tiny kernel on a GPU; on CPU, the
    simulated error of ``selftest:cuda_sticky``."""
    sim = simulated_context_error()
    if sim is not None:
        return sim
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        try:
            torch.cuda.synchronize()
            torch.ones(1, device="cuda").add_(1).cpu()
        except Exception as e:  # noqa: BLE001 - any failure means the context is gone
            return f"{type(e).__name__}: {e}"
    return None


def _child_main(out, hb: Heartbeat) -> int:  # pragma: no cover
    # runs in the child, started by the -c line of CaseWorker._start: it already dies with its
    # parent (runlock.die_with_parent) and beats on ``out`` (machinery.child_boot) until ready.
    # Ctrl-C in a terminal reaches the whole process group: the parent decides what stops
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not torch.cuda.is_available():  # before Triton is first imported (by a Case)
        os.environ.setdefault("TRITON_INTERPRET", "1")

    def send(obj: dict[str, Any]) -> None:
        hb.stop()  # the first reply ends the start-up: no beat after it
        try:
            out.write(json.dumps(obj) + "\n")
            out.flush()
        except BrokenPipeError:  # the parent is gone (stopped or killed): nothing to report to
            os._exit(0)

    cases = 0
    cov = None  # harness.pipeline.coverage: this child's measurement (--coverage)
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("setup"):
            try:
                for m in msg["setup"]["plugins"]:
                    plugins.load_module(m)
                targets.restore(msg["setup"]["recipe"])
                if msg["setup"].get("coverage") and cov is None:  # what Cases run, not imports
                    cov = ChildCoverage(**msg["setup"]["coverage"])
                if msg["setup"].get("server"):  # server level: the target's pipeline, here
                    prepare(msg["setup"]["recipe"]["name"])
                send({"ready": True})
            except Exception as e:  # noqa: BLE001 - reported to the parent as a setup error
                send({"setup_error": f"{type(e).__name__}: {e}"})
            continue
        cases += 1
        kill_fault(cases)  # SWAFUZZ_FAULTS=kill-worker=N
        if cov is not None:
            cov.before_case()  # what runs now is this Case's (its coverage context)
        reply = _reply(msg)
        broken = device_context_error()
        if broken is not None:  # this case broke the context: a crash; this child is done
            send({"context_broken": broken})
            return 0
        if cov is not None:
            reply["new_arcs"] = cov.after_case()
        send(reply)
    if cov is not None:
        cov.stop()
    return 0


def _zygote_main(reply_fd: int, parent_pid: int) -> int:  # pragma: no cover
    # a child forked by the run's zygote (harness.pipeline.zygote): dies with the zygote, beats
    # until ready like a fresh child, then the same loop
    die_with_parent(parent_pid)
    out, hb = child_boot(reply_fd)
    return _child_main(out, hb)


def _reply(msg: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - in the child
    """The answer to one Case message: ``ok`` (its verdict), ``invalid`` (the oracle refuses a
    component-level Case), ``refused`` (the target does not run a server-level Case: why) or
    ``harness_error``."""
    case = None if "server_case" in msg else loads_case(msg["case"])
    try:
        if case is None:  # a server-level Case (harness.pipeline.level_server)
            v = execute_server(parse(msg["server_case"]), prepare(msg["target"]),
                               msg["executors"], msg.get("server_mutant"), msg["impl"])
        else:
            v = execute(case, msg["target"], msg["impl"], msg["executors"],
                        set(msg["only"]) if msg.get("only") else None)
        return {"ok": v.to_json()}
    except InvalidCase as e:
        return {"invalid": str(e)}
    except CaseRefused as e:
        return {"refused": str(e)}
    except Exception as e:  # noqa: BLE001 - any harness exception is reported, not fatal
        return {"harness_error": f"{type(e).__name__}: {e}\n{traceback.format_exc()}"}


class CaseWorker:
    """A child process that executes Cases; restarted after a crash."""

    def __init__(self, target: str, impl: str, executors: list[str], out_dir: str | None = None,
                 timeout_s: float = 600.0, inflight_name: str = "inflight.json",
                 coverage: dict[str, Any] | None = None, server: bool = False,
                 server_mutant: str | None = None):
        self.target, self.impl, self.executors = target, impl, executors
        #: server level: Cases are server-level Cases (:meth:`run_server`), run by the target's
        #: server pipeline resolved in the child at start (a missing hop: WorkerSetupError)
        self.server, self.server_mutant = server, server_mutant
        self.out_dir = out_dir
        self.inflight_name = inflight_name
        self.timeout_s = timeout_s
        # Fails here, in the parent, with a clear message when the child could not re-import it.
        self._setup = {"plugins": plugins.loaded_modules(), "recipe": targets.recipe(target),
                       "coverage": coverage,  # {data_dir, sources}: harness.pipeline.coverage
                       "server": server}
        self.new_arcs = 0  # with coverage: arcs the last Case reached first (in this child)
        self._proc: subprocess.Popen | None = None
        self._reply = None

    def start(self) -> None:
        """Start the child now (else at the first case); raises :class:`WorkerSetupError` if it
        cannot load the target."""
        if self._proc is None or self._proc.poll() is not None:
            self._start()

    def _start(self) -> None:
        r, w = os.pipe()
        env = dict(os.environ)
        code = ("import os, sys; os.dup2(2, 1); from swafuzz.harness.pipeline.runlock import die_with_parent; "
                f"die_with_parent({os.getpid()}); from swafuzz.machinery import child_boot; "
                f"out, hb = child_boot({w}); from swafuzz.harness.pipeline.worker import "
                f"_child_main; sys.exit(_child_main(out, hb))")
        # server level: a fork of the run's zygote (the release imported once), else fresh
        self._proc = zygote.fork_child(self._setup, w, f"{__name__}:_zygote_main") or \
            subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                             pass_fds=(w,), env=env, text=True)
        os.close(w)
        self._reply = LineReader(r)
        self._send({"setup": self._setup})
        try:
            reply = self._await_started()
        except StartTimeout:
            self.close(kill=True)
            raise
        if reply is None:
            code = self._proc.wait()
            self.close(kill=True)
            raise HarnessError(f"the case worker for --target {self.target} died while "
                               f"starting (exit code {code})")
        if "setup_error" in reply:
            self.close(kill=True)
            raise WorkerSetupError(f"--target {self.target}: the case worker cannot load it: "
                                   f"{reply['setup_error']}")

    def _await_started(self) -> dict[str, Any] | None:
        """The child's first reply after its beats (None: it died); StartTimeout once its
        beats stop moving for the start-up limit (:class:`swafuzz.machinery.StartWatch`)."""
        watch = StartWatch(f"the case worker for --target {self.target}")
        while True:
            try:
                reply = self._recv(4 * BEAT_S)
            except TimeoutError:
                watch.beat(None)
                continue
            if reply is None or "starting" not in reply:
                return reply
            watch.beat(reply["starting"])

    def _send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(msg) + "\n")
        self._proc.stdin.flush()

    def _recv(self, timeout: float) -> dict[str, Any] | None:
        """The next reply; None if the child died first; raises TimeoutError past ``timeout``."""
        line = self._reply.line(timeout)  # a buffered line first (lines.py: select loses it)
        return json.loads(line) if line is not None else None

    def _await_reply(self) -> dict[str, Any] | None:
        """The child's reply to a Case; TimeoutError once the Case has had ``timeout_s`` of
        its own time (:class:`~swafuzz.harness.pipeline.casetime.CaseClock`: waiting for a
        CPU on a busy machine does not count), its message the time not counted."""
        clock = CaseClock(self._proc.pid)
        while True:
            left = self.timeout_s - clock.charged()
            if left <= 0:
                w = clock.waited()
                raise TimeoutError(f" of its own time ({w:.0f} s waiting for a CPU not counted)"
                                   if w >= 1 else "")
            try:
                return self._recv(min(left, 5.0))
            except TimeoutError:
                continue

    def _inflight_path(self) -> str | None:
        return os.path.join(self.out_dir, self.inflight_name) if self.out_dir else None

    def _exchange(self, msg: dict[str, Any], inflight: dict[str, Any]) -> dict[str, Any]:
        """Send one Case, the in-flight record on disk first; the child's reply, or why the
        child is gone: ``{"died": (check, message)}``, check ``crash`` / ``timeout`` (a fresh
        child comes next)."""
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        path = self._inflight_path()
        if path:
            atomic_write_text(path, json.dumps(inflight) + "\n")
        reply: dict[str, Any] | None = None
        died = None
        try:
            self._send(msg)
            reply = self._await_reply()
        except TimeoutError as e:
            died = ("timeout", f"timeout: the case ran past {self.timeout_s:.0f} s{e}")
        except (BrokenPipeError, OSError):
            reply = None
        if reply is None:
            if died is None:
                try:
                    code = self._proc.wait(5)
                except subprocess.TimeoutExpired:
                    code = None
                name = ""
                if code is not None and code < 0:
                    try:
                        name = f" ({signal.Signals(-code).name})"
                    except ValueError:
                        pass
                if code == -signal.SIGKILL:  # not the Case: the OOM killer, a user, a fault
                    self.close(kill=True)
                    raise HarnessError(f"the case worker for --target {self.target} was killed "
                                       "(SIGKILL: out of memory, or killed from outside) inside "
                                       "a case; nothing was judged (resume the run)")
                died = ("crash", f"the worker process died with exit code {code}{name} "
                                 "inside the case")
            self.close(kill=True)
            return {"died": died}
        if "context_broken" in reply:  # sticky device error: crash finding, fresh worker
            self.close(kill=True)
            return {"died": ("crash", "the device context is broken after the case (sticky "
                                      f"error): {reply['context_broken']}")}
        if path and os.path.exists(path):
            os.unlink(path)
        self.new_arcs = reply.get("new_arcs", 0)
        return reply

    def run(self, case: Case, only: set[str] | None = None) -> Verdict:
        reply = self._exchange(
            {"case": case.dumps(), "target": self.target, "impl": self.impl,
             "executors": self.executors, "only": sorted(only) if only else None},
            {"case": case.to_json(), "target": self.target, "impl": self.impl})
        if "died" in reply:
            return Verdict(case, [Failure(*reply["died"], "crash")], 0, 0.0)
        return Verdict.from_json(case, _ok(reply))

    def run_server(self, case: ServerCase) -> ServerResult:
        """Run a server-level Case in the child (a worker started with ``server=True``);
        :class:`~swafuzz.harness.pipeline.execute.CaseRefused` when the target does not run it."""
        reply = self._exchange(
            {"server_case": case.to_json(), "target": self.target, "impl": self.impl,
             "executors": self.executors, "server_mutant": self.server_mutant},
            {"level": "server", "case": case.to_json(), "target": self.target,
             "impl": self.impl, "server_mutant": self.server_mutant})
        if "died" in reply:
            check, message = reply["died"]
            return ServerResult(case, [ServerFailure(check, None, message)])
        return ServerResult.from_json(case, _ok(reply))

    def close(self, kill: bool = False) -> None:
        if self._proc is not None:
            try:
                if kill:
                    self._proc.kill()
                else:
                    self._proc.stdin.close()
                self._proc.wait(5)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self._proc.kill()
                self._proc.wait(5)
        if self._reply is not None:
            self._reply.close()
        self._proc = None
        self._reply = None


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    """The verdict (JSON) of a child's reply; its refusal or harness error raised here."""
    if "ok" in reply:
        return reply["ok"]
    if "invalid" in reply:
        raise InvalidCase(reply["invalid"])
    if "refused" in reply:
        raise CaseRefused(reply["refused"])
    raise HarnessError(f"harness error in the worker: {reply['harness_error']}")
