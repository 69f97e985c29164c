"""Harness throughput: cases and checked forward steps (one forward of a Case by one executor,
checked against the oracle) per second of a ``unified`` campaign, for 1 and N worker processes.

    python -m swafuzz.bench.harness --workers 1,2 --examples 48 --impl torch

Each worker runs its own campaign (every kind, no shrinking, seed ``--seed + i``, ``--examples``
cases: N workers do N times one's work), warmed up by one case, started at a barrier; a round
lasts from the barrier to the last worker's end. The ratio (over 1 worker) approaches N with N
free cores.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import sys
import time

import torch

from swafuzz import features
from swafuzz.harness.pipeline.campaign import Campaign
from swafuzz.harness.pipeline.execute import execute, resolve_executors
from swafuzz.harness.pipeline.throughput import forward_count


def _worker(idx: int, seed: int, examples: int, impl: str, executor: str, threads: int,
            barrier, results) -> None:  # pragma: no cover - runs in a child process
    if not torch.cuda.is_available():  # the child's Triton mode, before Triton loads
        os.environ.setdefault("TRITON_INTERPRET", "1")
    if threads > 0:
        torch.set_num_threads(threads)
    executors = resolve_executors(executor)
    counts = {"cases": 0, "steps": 0, "failed": 0}

    def run(case):
        v = execute(case, "unified", impl, executors)
        counts["cases"] += 1
        counts["steps"] += forward_count(case) * len(executors)
        counts["failed"] += 1 if v.failed else 0
        return v

    # warm-up outside the timed region: imports, the first kernel launches
    Campaign(run, seed=10_000 + seed, shrink=False).run_kind("decode", 1)
    counts.update(cases=0, steps=0, failed=0)
    kinds = list(features.default_kind_names())
    per_kind = max(1, examples // len(kinds))
    barrier.wait()
    t0 = time.perf_counter()
    camp = Campaign(run, seed=seed, shrink=False)
    for kind in kinds:
        camp.run_kind(kind, per_kind)
    t1 = time.perf_counter()
    results.put({"worker": idx, "seed": seed, "t0": t0, "t1": t1, **counts})


def run_round(n: int, args) -> dict:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n)
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(i, args.seed + i, args.examples, args.impl,
                                               args.executor, args.threads, barrier, results))
             for i in range(n)]
    for p in procs:
        p.start()
    got = []
    while len(got) < n:
        try:
            got.append(results.get(timeout=2))
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                for p in procs:
                    p.kill()
                raise RuntimeError(f"a benchmark worker died (exit code {dead[0]})") from None
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a benchmark worker exited with {p.exitcode}")
    wall = max(g["t1"] for g in got) - min(g["t0"] for g in got)
    cases = sum(g["cases"] for g in got)
    steps = sum(g["steps"] for g in got)
    return {"workers": n, "cases": cases, "forward_steps": steps, "seconds": wall,
            "cases_per_s": cases / wall, "steps_per_s": steps / wall,
            "failed": sum(g["failed"] for g in got),
            "per_worker_seconds": [round(g["t1"] - g["t0"], 3) for g in
                                   sorted(got, key=lambda g: g["worker"])]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m swafuzz.bench.harness", description=__doc__
                                .splitlines()[0], formatter_class=argparse.
                                ArgumentDefaultsHelpFormatter)
    p.add_argument("--workers", default="1,2", help="worker counts to measure, comma-separated "
                   "(1 is always measured: the ratio's base)")
    p.add_argument("--examples", type=int, default=48, help="cases per worker")
    p.add_argument("--impl", default="torch", help="torch | triton | cuda | auto")
    p.add_argument("--executor", default="auto", help="eager | tape | cudagraph | auto | all")
    p.add_argument("--seed", type=int, default=0, help="seed of worker 0 (worker i: seed + i)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads per worker (0: torch's default)")
    p.add_argument("--json", default=None, help="also write the results here")
    args = p.parse_args(argv)
    try:
        counts = sorted({1, *(int(x) for x in args.workers.split(",") if x.strip())})
    except ValueError:
        print(f"--workers: {args.workers!r} must be comma-separated integers", file=sys.stderr)
        return 2
    if counts[0] < 1 or args.examples < 1:
        print("--workers and --examples: must be >= 1", file=sys.stderr)
        return 2
    rows = [run_round(n, args) for n in counts]
    base = rows[0]["cases_per_s"]
    print(f"harness throughput: target unified, impl {args.impl}, executor {args.executor}, "
          f"{args.examples} cases per worker, torch threads {args.threads or 'default'}, "
          f"{os.cpu_count()} CPU cores on this machine")
    print(f"{'workers':>7} {'cases':>6} {'fwd steps':>9} {'seconds':>8} {'cases/s':>8} "
          f"{'steps/s':>8} {'ratio':>6}")
    for r in rows:
        r["ratio"] = r["cases_per_s"] / base
        print(f"{r['workers']:>7} {r['cases']:>6} {r['forward_steps']:>9} {r['seconds']:>8.1f} "
              f"{r['cases_per_s']:>8.2f} {r['steps_per_s']:>8.1f} {r['ratio']:>6.2f}")
    if any(r["failed"] for r in rows):
        print("note: some cases failed on unified (a finding; run swafuzz run to see it)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "cpu_count": os.cpu_count(), "rounds": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
