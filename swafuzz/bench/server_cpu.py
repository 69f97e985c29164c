"""Where a server-level campaign's CPU goes, per Case, for ``swafuzz bench server``
(:mod:`swafuzz.bench.server`): a wall-clock ratio says little on a loaded machine, CPU seconds
do. The processes of one ``swafuzz run --level server`` and their roles:

* ``driver``: the CLI process (with ``--workers 1`` it also runs the unit: generation, logging);
* ``pool process``: a ``--workers N`` unit process (Hypothesis's generation, the case log);
* ``forkserver``: the pool's forkserver (imports the harness once, then only forks);
* ``zygote``: the server level's zygote (imports the release once, then only forks);
* ``case worker``: the child that runs the Cases (forked by the zygote, or a fresh interpreter);
* ``resource tracker`` and ``other``.

:func:`watch` samples the tree every ``every`` s (:class:`swafuzz.bench.proctree.TreeSampler`)
and counts the case log's rows: ``steady`` is the CPU between the sample that first saw a Case
and the one that saw the last, over the Cases between them; ``all`` is everything, start-up
included (``all_s`` its sum: a process that ends between two samples loses at most one
interval; ``getrusage`` of the reaped children would miss what the pool's forkserver reaps).

The *implied ratio* of a row over the ``--workers 1`` row, on ``C`` cores with ``W`` workers,
is ``min(W * base / pipeline, C * base / total)`` where ``base`` is the base row's steady CPU
per Case (all processes), ``pipeline`` is this row's per-worker chain per Case (pool process +
case worker: one unit runs them in turn) and ``total`` is this row's steady CPU per Case over
every process: the wall ratio a machine with ``C`` free cores would give, whatever the load
is now.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

from swafuzz.bench.proctree import TreeSampler, cmdline

#: roles on a unit's chain (one Case passes through them in turn)
PIPELINE = ("pool process", "case worker")


def server_role(pid: int, root: int, parent: str) -> str:
    """The part ``pid`` plays in a server-level campaign below ``root`` (the CLI), from its
    command line and its parent's role."""
    cmd = cmdline(pid)
    if not cmd:
        return "gone"
    if pid == root:
        return "driver"
    if parent == "zygote" or "_child_main" in cmd:
        return "case worker"
    if "pipeline.zygote import _main" in cmd:
        return "zygote"
    if "resource_tracker" in cmd:
        return "resource tracker"
    if parent == "forkserver" or "spawn_main" in cmd:
        return "pool process"
    if "forkserver" in cmd:
        return "forkserver"
    return "other"


def _cases(path: str) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if b'"event"' not in line and line.endswith(b"\n"))
    except OSError:
        return 0


def _diff(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> dict[str, float]:
    return {r: round(b[r]["cpu_s"] - a.get(r, {}).get("cpu_s", 0.0), 3) for r in b}


def watch(proc: subprocess.Popen, log_path: str, every: float = 0.25) -> dict[str, Any]:
    """Sample ``proc``'s tree until it ends; its CPU seconds per role (see the module doc)."""
    sampler = TreeSampler(lambda: [proc.pid], classify=server_role)
    first = last = None  # (cases, totals) when the first / the latest new Case was seen
    n = 0
    while proc.poll() is None:
        sampler.sample()
        c = _cases(log_path)
        if c > n:
            n = c
            snap = (c, sampler.totals())
            first = first or snap
            last = snap
        time.sleep(every)
    sampler.sample()
    every_role = {r: d["cpu_s"] for r, d in sampler.totals().items()}
    out: dict[str, Any] = {"all": every_role, "all_s": round(sum(every_role.values()), 2),
                           "steady": {}, "steady_cases": 0}
    if first and last and last[0] > first[0]:
        out["steady"], out["steady_cases"] = _diff(first[1], last[1]), last[0] - first[0]
    return out


def per_case(cpu: dict[str, Any]) -> dict[str, float]:
    """Steady CPU ms per Case by role, plus ``pipeline`` and ``total``."""
    n = cpu.get("steady_cases") or 0
    if not n:
        return {}
    out = {r: round(1000 * s / n, 2) for r, s in cpu["steady"].items() if r != "gone"}
    out["pipeline"] = round(sum(out.get(r, 0.0) for r in PIPELINE)
                            + (out.get("driver", 0.0) if not out.get("pool process") else 0.0), 2)
    out["total"] = round(sum(v for r, v in out.items() if r != "pipeline"), 2)
    return out


def implied_ratio(base: dict[str, float], row: dict[str, float], workers: int,
                  cores: int | None = None, harness_only: bool = False) -> float | None:
    """The ratio over ``base`` (per-Case CPU of the ``--workers 1`` row) that ``row`` (per-Case
    CPU with ``workers`` workers) implies on ``cores`` free cores (see the module doc).
    ``harness_only``: with the case worker's CPU per Case of ``base`` in ``row`` too, so that
    only what the harness spends (driver, pool, zygote, forkserver) weighs: a case worker
    slowed by the machine's other load (caches, a busy host) is not the harness's cost."""
    cores = cores or os.cpu_count() or 1
    if not base.get("total") or not row.get("total") or not row.get("pipeline"):
        return None
    if harness_only:
        d = base.get("case worker", 0.0) - row.get("case worker", 0.0)
        row = {**row, "pipeline": row["pipeline"] + d, "total": row["total"] + d}
    return round(min(workers * base["total"] / row["pipeline"],
                     cores * base["total"] / row["total"]), 2)
