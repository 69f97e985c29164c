"""Where a benchmarked command's CPU time goes: a thread sampling the process trees below some
root pids (Linux ``/proc``) and summing user + system CPU time by role in a campaign (the CLI, a
``--workers N`` pool process, a case worker, a Ray worker, ...). A process that ends between two
samples loses at most one interval (``every``); the exact total of a local run is
``resource.getrusage`` of its reaped children (:mod:`swafuzz.bench.fleet` reports both).
"""

from __future__ import annotations

import os
import threading
from typing import Callable

from swafuzz.harness.fleet.local import children_map

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def tree(roots: list[int]) -> set[int]:
    """Every pid at or below ``roots`` now."""
    kids, out = children_map(), set()
    todo = list(roots)
    while todo:
        p = todo.pop()
        out.add(p)
        todo += kids.get(p, [])
    return out


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (stat fields 14, 15)


def cmdline(pid: int) -> str | None:
    """``pid``'s command line, words joined by spaces ('' for a zombie, None once gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


def role(pid: int, root: int) -> str:
    """The part a process plays in a campaign, from its command line."""
    cmd = cmdline(pid)
    if not cmd:  # a zombie (ended, not yet reaped): its role was seen while it ran
        return "gone"
    if "_child_main" in cmd:
        return "case worker"
    if "resource_tracker" in cmd:
        return "resource tracker"
    if "multiprocessing" in cmd or "spawn_main" in cmd:
        return "pool process"
    if cmd.startswith("ray::"):
        return "ray worker"
    if "raylet" in cmd or "gcs_server" in cmd or "/ray/" in cmd or "bin/ray start" in cmd:
        return "ray node (raylet, gcs, agents)"
    if pid == root and " merge " in f" {cmd} ":
        return "merge"
    if pid == root:
        return "swafuzz CLI"
    return "other"


class TreeSampler(threading.Thread):
    """Samples the trees below ``roots()`` every ``every`` seconds until :meth:`finish`; of a
    pid in ``preexisting`` (alive before the command: a Ray node) only the CPU time it spends
    from its first sample on is counted."""

    def __init__(self, roots: Callable[[], list[int]], every: float = 0.5,
                 preexisting: set[int] | None = None,
                 classify: Callable[[int, int, str], str] | None = None):
        super().__init__(name="swafuzz-bench-sampler", daemon=True)
        self.roots, self.every = roots, every
        #: ``classify(pid, root, parent's role)``: a process's role (default :func:`role`)
        self.classify = classify or (lambda p, root, _parent: role(p, root))
        self.preexisting = preexisting or set()  # pids alive before (a Ray node's)
        self.seen: dict[int, tuple[str, float]] = {}  # pid -> (role, CPU seconds)
        self.base: dict[int, float] = {}  # CPU time a pid had at its first sample (a node's)
        self._halt = threading.Event()

    def sample(self) -> None:
        kids = children_map()
        for root in self.roots():
            todo = [(root, "")]
            while todo:
                p, parent = todo.pop()
                t = cpu_seconds(p)
                if t is None:
                    continue
                if p not in self.seen:  # a process alive before the command: its new time
                    self.base[p] = t if p in self.preexisting else 0.0
                r = self.classify(p, root, parent)  # the latest (a Ray worker renames itself)
                r = self.seen.get(p, (r, 0))[0] if r == "gone" else r
                self.seen[p] = (r, t)
                todo += [(k, r) for k in kids.get(p, [])]

    def run(self) -> None:
        while not self._halt.wait(self.every):
            self.sample()

    def finish(self) -> dict[str, dict[str, float]]:
        """Stop; CPU seconds and process count per role."""
        self._halt.set()
        self.join()
        self.sample()
        return self.totals()

    def totals(self) -> dict[str, dict[str, float]]:
        """CPU seconds and process count per role, as of the last sample."""
        out: dict[str, dict[str, float]] = {}
        for pid, (r, t) in self.seen.items():
            d = out.setdefault(r, {"cpu_s": 0.0, "processes": 0})
            d["cpu_s"] = round(d["cpu_s"] + t - self.base.get(pid, 0.0), 2)
            d["processes"] += 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]["cpu_s"]))
