"""A real Ray cluster on this machine, for the fleet tier (``tests/fleet``) and the fleet
throughput benchmark (:mod:`swafuzz.bench.fleet`): a head (no CPUs, so no unit runs there) and
worker nodes, each its own ``ray start --block`` process with its own temp dir, ports,
``--num-cpus`` and a custom resource ``node_<name>``; and a Redis server for the corpus. A node
is killed as a machine dies: ``kill -9`` of every process of it at once (Linux: ``/proc``).
The nodes import the swafuzz this module belongs to (``PYTHONPATH``)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from swafuzz.machinery import start_timeout

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
#: the folder holding this swafuzz package: the nodes' PYTHONPATH
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def free_port(lo: int = 20000) -> int:
    """A free TCP port above Ray's worker-port range (10002-19999)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p >= lo:
            return p
    raise RuntimeError("no free port above 20000")


def children_map() -> dict[int, list[int]]:
    """Parent pid -> its children's pids, of every process now alive (read from /proc)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    return kids


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (read from /proc)."""
    kids = children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


#: what ``ray start`` prints when it gave up on Ray's own start-up deadline (the GCS or the
#: raylet did not answer in time), not on a misconfiguration: worth starting again
GAVE_UP = ("timed out during startup", "Deadline Exceeded", "GCS has become overloaded")


def _gave_up_waiting(log: str) -> bool:
    """Did a node's ``ray start`` (its log ``log``) end on Ray's own start-up deadline?"""
    return any(m in log for m in GAVE_UP)


class Cluster:
    def __init__(self, workers: dict[str, int], redis: bool = True):
        self.workers = workers  # node name -> CPUs
        self.tmp = tempfile.mkdtemp(prefix="sf-ray-", dir="/tmp")  # short: socket paths
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0",
                        PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH"))
                                                   if p))
        self.args: dict[str, list[str]] = {}  # node name -> its ray start arguments
        self.attempts: dict[str, int] = {}  # node name -> starts so far
        self.redis: subprocess.Popen | None = None
        self.redis_port = 0
        self.with_redis = redis

    def _start(self, name: str, args: list[str]) -> None:
        """Start node ``name`` (``ray start --block`` with ``args``), in a fresh temp dir per
        attempt; its log is ``<tmp>/<name>.log`` (appended to across attempts)."""
        self.args[name] = args
        self.attempts[name] = self.attempts.get(name, 0) + 1
        d = os.path.join(self.tmp, f"{name}-{self.attempts[name]}")
        os.makedirs(d)
        log = open(os.path.join(self.tmp, f"{name}.log"), "a")
        self.procs[name] = subprocess.Popen(
            [RAY, "start", "--block", f"--temp-dir={d}", "--disable-usage-stats",
             f"--dashboard-agent-listen-port={free_port()}", f"--metrics-export-port={free_port()}",
             "--object-store-memory=100000000", *args],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def _wait_started(self, names: list[str], timeout: float) -> None:
        """Wait until every node of ``names`` logs that its runtime started. A node whose
        ``ray start`` gave up on Ray's own start-up deadline (its GCS did not answer in time: a
        saturated machine, CI's upstream step beside the fleet tier) is started again while
        ``timeout`` lasts; any other exit, or ``timeout`` spent, raises naming the node, its
        attempts and its log."""
        end = time.monotonic() + timeout
        for n in names:
            seen = 0  # the log's length before this attempt: only this attempt's lines count
            while True:
                text = self.log(n)
                if "Ray runtime started" in text[seen:]:
                    break
                exited = self.procs[n].poll() is not None
                if exited and _gave_up_waiting(text[seen:]) and time.monotonic() < end:
                    self.kill(n)  # what the failed attempt left (raylet, GCS, agents)
                    seen = len(self.log(n))
                    self._start(n, self.args[n])
                    continue
                if exited or time.monotonic() > end:
                    raise RuntimeError(
                        f"ray node {n} did not start ({self.attempts[n]} attempt(s), "
                        f"{timeout:.0f} s allowed):\n{text[-3000:]}")
                time.sleep(0.3)

    def log(self, name: str) -> str:
        with open(os.path.join(self.tmp, f"{name}.log")) as f:
            return f.read()

    def start(self, timeout: float | None = None) -> None:
        """Start the nodes; each gets ``timeout`` seconds (default: ``--start-timeout``'s,
        swafuzz.machinery) to say it started."""
        timeout = start_timeout() if timeout is None else timeout
        if self.with_redis:
            self._start_redis()
        self._start("head", ["--head", f"--port={self.port}", "--num-cpus=0",
                             "--include-dashboard=false", "--node-ip-address=127.0.0.1"])
        self._wait_started(["head"], timeout)
        for name, cpus in self.workers.items():
            self._start(name, [f"--address={self.address}", f"--num-cpus={cpus}",
                               f'--resources={{"node_{name}": 1}}'])
        self._wait_started(list(self.workers), timeout)

    def _start_redis(self) -> None:
        self.redis_port = free_port()
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.tmp], stdout=subprocess.DEVNULL,
            start_new_session=True)

    def node_of(self, pid: int) -> str | None:
        """The node (name) whose process tree holds ``pid``."""
        for name, p in self.procs.items():
            if pid in descendants(p.pid):
                return name
        return None

    def kill(self, name: str) -> list[int]:
        """``kill -9`` every process of node ``name`` (the ``ray start`` process, its raylet,
        agents and workers, and their case workers)."""
        pids = descendants(self.procs[name].pid)
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.procs[name].wait(10)
        return pids

    def stop(self, ray_stop: bool = False) -> None:
        """Kill every process this cluster started (and with ``ray_stop`` run ``ray stop
        --force`` after, which stops every Ray process of this machine: the CI tier's cleanup,
        not for a machine where other Ray clusters run)."""
        for p in list(self.procs.values()) + ([self.redis] if self.redis else []):
            for q in descendants(p.pid):
                try:
                    os.kill(q, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if ray_stop:
            subprocess.run([RAY, "stop", "--force"], env=self.env, capture_output=True,
                           timeout=60)
        shutil.rmtree(self.tmp, ignore_errors=True)
