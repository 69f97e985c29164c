"""One import of the release for every server-level case worker (a *zygote*).

A server-level case worker child (:mod:`swafuzz.harness.pipeline.worker`) imports the target's
server level - for ``sglang``, the release: ~10 s of one core, more under load. Each ``--workers``
process used to start its own child, so two workers paid that import two or three times over
(the CLI's check of the target, then each pool process's) on the same two cores. The zygote is
one process that imports the target once (the worker's own setup: plugins, target recipe, the
server pipeline) and then only forks: each case worker child is a fork of it, the import
already done, CUDA never initialised there (nothing runs a Case in the zygote).

Protocol: the zygote listens on an abstract Unix socket (Linux; nothing on the file system).
A case worker connects and sends, with ``SCM_RIGHTS``, three descriptors: the read end of the
child's request pipe, the write end of its reply pipe and its stderr, plus one JSON line
``{"owner": PID}``. The zygote forks; the child takes those descriptors as its stdin, reply pipe
and stdout/stderr and runs the worker's child loop (the ``entry`` it was started with) as a fresh child
would (the same setup message, answered at once: the import is done). The zygote answers
``{"pid": PID}`` and, when the child ends, ``{"exit": CODE}`` (``-SIGNAL`` when a signal ended
it, as ``subprocess.Popen.returncode``) on the same connection: :class:`ZygoteChild` is the
``Popen`` the case worker holds. A child ends when its owner (the case worker's process) closes its
stdin, or with its zygote; the zygote ends with the process that started it.

The first server-level case worker of a run (the CLI's check of the target) starts the zygote
and names it in ``SWAFUZZ_ZYGOTE`` (``{"address", "key"}``), which the ``--workers`` pool
processes inherit; a worker whose setup differs (``key``), or that cannot reach the zygote,
starts a fresh interpreter as before. ``SWAFUZZ_ZYGOTE=off``: never a zygote.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import traceback
from typing import Any

import torch

from swafuzz import features, targets
from swafuzz.harness.pipeline.level_server import prepare
from swafuzz.harness.pipeline.lines import LineReader
from swafuzz.harness.pipeline.runlock import die_with_parent
from swafuzz.machinery import BEAT_S, HarnessError, Heartbeat, StartWatch, start_fault
from swafuzz.targets import plugins

ENV = "SWAFUZZ_ZYGOTE"


def key_of(setup: dict[str, Any]) -> str:
    """What a forked child inherits from the zygote: plugins, target recipe, level (not the
    per-run coverage, which each child starts after the fork)."""
    blob = json.dumps([setup.get("plugins"), setup.get("recipe"), bool(setup.get("server"))],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --------------------------------------------------------------------- in the case worker
class ZygoteChild:
    """A case worker child forked by the zygote, with the part of ``subprocess.Popen`` the
    case worker uses (``pid``, ``stdin``, ``poll``, ``wait``, ``kill``); its exit code comes
    from the zygote, which reaps it."""

    def __init__(self, conn: socket.socket, pid: int, stdin_fd: int, rest: bytes = b""):
        self.pid, self._conn, self._buf = pid, conn, rest
        self.stdin = os.fdopen(stdin_fd, "w", buffering=1)
        self.returncode: int | None = None

    def _read(self, timeout: float | None) -> None:
        while self.returncode is None:
            if b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                msg = json.loads(line)
                if "exit" in msg:
                    self.returncode = int(msg["exit"])
                    self._conn.close()
                continue
            if not select.select([self._conn], [], [], timeout)[0]:
                return
            data = self._conn.recv(4096)
            if not data:  # the zygote is gone: so is the child (it ends with its zygote)
                self.returncode = -int(signal.SIGKILL)
                self._conn.close()
                return
            self._buf += data

    def poll(self) -> int | None:
        self._read(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._read(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"case worker child {self.pid}", timeout or 0)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def fork_child(setup: dict[str, Any], reply_fd: int, entry: str) -> ZygoteChild | None:
    """A server-level case worker child forked by this run's zygote (started here when there
    is none yet), ``reply_fd`` its reply pipe, ``entry`` (``module:function``, called as
    ``entry(reply_fd, parent_pid)``) what it runs; None: start a fresh interpreter instead (not
    the server level, ``SWAFUZZ_ZYGOTE=off``, not Linux, the target initialised CUDA while
    loading, or the zygote is unreachable)."""
    if not setup.get("server") or not hasattr(socket, "AF_UNIX") or \
            not hasattr(os, "pidfd_open") or os.environ.get(ENV) == "off":
        return None
    key = key_of(setup)
    try:
        info = json.loads(os.environ.get(ENV) or "{}")
    except ValueError:
        info = {}
    if info.get("key") != key:
        try:
            info = Zygote.start({**setup, "entry": entry}).export()
        except HarnessError:  # it did not start: the harness's failure (exit 3), not a fallback
            raise
        except RuntimeError:  # a fresh child says why (the same setup fails there)
            return None
    r, w = os.pipe()
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect("\0" + info["address"])
        socket.send_fds(conn, [json.dumps({"owner": os.getpid()}).encode() + b"\n"],
                        [r, reply_fd, sys.stderr.fileno()])
        buf = b""
        while b"\n" not in buf:
            data = conn.recv(4096)
            if not data:
                raise OSError("the zygote closed the connection")
            buf += data
    except OSError:
        os.close(w)
        return None
    finally:
        os.close(r)
    line, rest = buf.split(b"\n", 1)
    return ZygoteChild(conn, int(json.loads(line)["pid"]), w, rest)


# --------------------------------------------------------------------- the zygote itself
class Zygote:
    """The zygote process, seen from the process that started it (one per setup key)."""

    _started: dict[str, Zygote] = {}

    def __init__(self, setup: dict[str, Any]):
        self.key = key_of(setup)
        self.address = f"swafuzz-zygote-{os.getpid()}-{self.key}"
        code = ("import sys; from swafuzz.harness.pipeline.zygote import _main; "
                f"sys.exit(_main({self.address!r}, {os.getpid()}))")
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.proc.stdin.write(json.dumps({k: setup.get(k) for k in ("plugins", "recipe",
                                                                    "server", "entry")}) + "\n")
        self.proc.stdin.flush()
        reply = self._await_started()
        if "ready" not in reply:
            self.close()
            raise RuntimeError(f"the case workers' zygote cannot load the target: "
                               f"{reply.get('setup_error')}")
        atexit.register(self.close)

    def _await_started(self) -> dict[str, Any]:
        """Its first reply after its beats (it imports the release: as long as that makes
        progress); :class:`swafuzz.machinery.StartTimeout` (exit 3) once the beats stop moving
        for the start-up limit, the zygote killed."""
        watch = StartWatch("the server-level case workers' zygote (one import of the target)")
        reader = LineReader(os.dup(self.proc.stdout.fileno()))  # lines.py: select loses lines
        try:
            return self._await_reply(reader, watch)
        finally:
            reader.close()

    def _await_reply(self, reader: LineReader, watch: StartWatch) -> dict[str, Any]:
        while True:
            try:
                line = reader.line(4 * BEAT_S)
            except TimeoutError:
                try:
                    watch.beat(None)
                except HarnessError:
                    self.close()
                    raise
                continue
            if line is None:
                return {"setup_error": "the zygote died while starting"}
            try:
                reply = json.loads(line)
            except ValueError:  # something the import printed: not ours, not a reply
                continue
            if not isinstance(reply, dict):
                continue
            if "starting" not in reply:
                return reply
            watch.beat(reply["starting"])

    @classmethod
    def start(cls, setup: dict[str, Any]) -> Zygote:
        k = key_of(setup)
        z = cls._started.get(k)
        if z is None or z.proc.poll() is not None:
            z = cls._started[k] = cls(setup)
        return z

    def export(self) -> dict[str, str]:
        """Name this zygote to the processes started from here on (the pool's)."""
        info = {"address": self.address, "key": self.key}
        os.environ[ENV] = json.dumps(info)
        return info

    def close(self, wait_s: float = 0.0) -> None:
        """End the zygote: with ``wait_s``, once its children have ended (their owners gone,
        each saves what it measured as it stops), killed past that; else now."""
        if self.proc.poll() is None and wait_s > 0:
            try:
                self.proc.stdin.close()
                self.proc.wait(wait_s)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def shutdown(wait_s: float = 120.0) -> None:
    """End this process's zygotes once their children have (before merging what they
    measured: ``--coverage``); a later server-level worker starts a new one."""
    for z in list(Zygote._started.values()):
        z.close(wait_s)
    Zygote._started.clear()
    os.environ.pop(ENV, None)


def _main(address: str, parent_pid: int) -> int:  # pragma: no cover - runs in the zygote
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run decides what stops
    setup = json.loads(sys.stdin.readline())

    def send(mark: Any) -> None:  # a beat while the import below makes progress
        print(json.dumps({"starting": mark}), flush=True)

    hb = Heartbeat(send).start()
    start_fault("worker", hb)  # SWAFUZZ_FAULTS: its import is the case workers' start-up
    try:
        if not torch.cuda.is_available():  # before Triton is first imported
            os.environ.setdefault("TRITON_INTERPRET", "1")
        entry = features.load(setup["entry"])  # the case worker's child loop, imported once
        for m in setup["plugins"]:
            plugins.load_module(m)
        targets.restore(setup["recipe"])
        if setup.get("server"):
            prepare(setup["recipe"]["name"])
        if torch.cuda.is_available() and torch.cuda.is_initialized():  # a fork cannot use it
            raise RuntimeError("the target initialised CUDA while loading: case workers start "
                               "fresh interpreters instead")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind("\0" + address)
        listener.listen(64)
    except Exception as e:  # noqa: BLE001 - reported to the starter as a setup error
        hb.stop()
        print(json.dumps({"setup_error": f"{type(e).__name__}: {e}"}), flush=True)
        return 1
    hb.stop()  # no beat after the reply (the lock orders them)
    print(json.dumps({"ready": True}), flush=True)
    return _serve(listener, entry)


def _serve(listener: socket.socket, entry) -> int:  # pragma: no cover - runs in the zygote
    children: dict[int, tuple[socket.socket, int]] = {}  # pidfd -> (connection, pid)
    inputs: list[Any] = [listener, sys.stdin]
    while inputs or children:
        ready = select.select([*inputs, *children], [], [])[0]
        if sys.stdin in ready and not sys.stdin.readline():
            inputs = []  # the starter closed our stdin: no more forks; done when they end
            listener.close()
        for fd in [f for f in ready if isinstance(f, int)]:  # a child ended: reap, report
            conn, pid = children.pop(fd)
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            try:
                conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)})
                             .encode() + b"\n")
            except OSError:
                pass
            conn.close()
        if listener in ready and inputs:
            conn, _ = listener.accept()
            try:
                msg, fds, _, _ = socket.recv_fds(conn, 4096, 3)
                json.loads(msg.split(b"\n", 1)[0])["owner"]  # (who asked: the protocol's check)
            except (OSError, ValueError, KeyError):
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                os._exit(_child(entry, fds, [listener, *(c for c, _ in children.values())],
                                list(children)))
            for f in fds:
                os.close(f)
            children[os.pidfd_open(pid)] = (conn, pid)
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return 0


def _child(entry, fds: list[int], sockets: list[socket.socket],
           pidfds: list[int]) -> int:  # pragma: no cover - runs in a forked child
    """The forked case worker child: the owner's pipes as its own, then the worker's loop."""
    try:
        for s in sockets:
            s.close()
        for f in pidfds:
            os.close(f)
        stdin_r, reply_w, err = fds
        os.dup2(stdin_r, 0)
        os.dup2(err, 2)
        os.dup2(2, 1)  # as a fresh child: a printing target cannot corrupt the protocol
        for f in (stdin_r, err):
            os.close(f)
        sys.stdin = os.fdopen(0, "r", closefd=False)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        # no watch on the owner: its end closes our stdin, and we end after saving what we
        # measured (--coverage); a kill -9 of the run ends the zygote, and us with it
        return entry(reply_w, os.getppid())
    except BaseException:  # noqa: BLE001 - never return into the zygote's loop
        traceback.print_exc()
        return 70
