"""Fleet throughput in one run: checked forward steps per second of one ``swafuzz run`` campaign
with ``--workers 1`` (the base of every ratio), ``--workers 2``, ``--ray`` on a local Ray cluster
with 1 and 2 worker nodes, and ``--shard 1/2`` + ``--shard 2/2`` at once then ``swafuzz merge``.

    python -m swafuzz.bench.fleet --out bench-out --examples 400 --impl torch

Every row runs the same campaign (``unified``, same kinds, examples and seed, no corpus, no
ledger) through the real CLI, start-up included (not the Ray cluster's). Ray rows need
``swafuzz[ray]``, else are reported as not run. The ``start-up`` section times each piece alone;
``--profile`` splits CPU time by process role (``/proc`` sampling); the columns are defined in
the table's notes (:func:`swafuzz.bench.fleet_parts.render`). Writes ``fleet-bench.md`` and
``fleet-bench.json`` into ``--out``, each row's run directory under ``OUT/runs``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from swafuzz import features
from swafuzz.bench.fleet_parts import measure_startup, render, run_info
from swafuzz.bench.proctree import TreeSampler, tree
from swafuzz.harness.fleet.local import Cluster


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _swafuzz(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "swafuzz", *args]


class Bench:
    def __init__(self, args):
        self.args, self.out = args, args.out
        self.common = ["--target", "unified", "--impl", args.impl, "--executor", args.executor,
                       "--examples", str(args.examples), "--seed", str(args.seed),
                       "--db", "none", "--ledger", "none", "--quiet"]
        for k in args.scenario or []:
            self.common += ["--scenario", k]

    def _timed(self, cmds: list[list[str]], env: dict, extra_roots=(), preexisting=()):
        """Run ``cmds`` at the same time; their wall time, CPU time and profile."""
        cpu0, t0 = _cpu_children(), time.time()
        procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for c in cmds]
        sampler = None
        if self.args.profile:
            sampler = TreeSampler(lambda: [p.pid for p in procs] + list(extra_roots),
                                  preexisting=set(preexisting))
            sampler.start()
        outs = [p.communicate() for p in procs]
        wall = time.time() - t0
        prof = sampler.finish() if sampler else None
        cpu = _cpu_children() - cpu0  # the processes reaped: not a forkserver's children
        if prof:  # the sampled tree counts those too
            cpu = max(cpu, sum(d["cpu_s"] for d in prof.values()))
        for c, p, (_o, e) in zip(cmds, procs, outs):
            if p.returncode not in (0, 1):
                raise RuntimeError(f"{' '.join(c[2:])}: exit {p.returncode}\n{e[-3000:]}")
        return t0, wall, cpu, prof

    def local(self, workers: int, tag: str) -> dict:
        d = os.path.join(self.out, "runs", tag)
        t0, wall, cpu, prof = self._timed([_swafuzz(["run", *self.common, "--workers",
                                                     str(workers), "--out", d])], dict(os.environ))
        return {"mode": f"--workers {workers}", **run_info([d], t0), "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2), "profile": prof}

    def ray(self, nodes: int, tag: str) -> dict:
        mode = f"--ray, {nodes} node{'s' if nodes > 1 else ''}"
        cluster = Cluster({f"w{i}": 1 for i in range(nodes)}, redis=False)
        d = os.path.join(self.out, "runs", tag)
        try:
            c0 = time.time()
            cluster.start()
            started = time.time() - c0
            nodes_pids = [p.pid for p in cluster.procs.values()]
            t0, wall, cpu, prof = self._timed(
                [_swafuzz(["run", *self.common, "--ray", cluster.address, "--workers",
                           str(nodes), "--out", d])], cluster.env, nodes_pids, tree(nodes_pids))
        finally:
            cluster.stop()
        return {"mode": mode, **run_info([d], t0), "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2), "cpu_note": "with --profile the nodes' CPU time during the run; else the CLI's only",
                "cluster_start_s": round(started, 2), "profile": prof}

    def shards(self, n: int, tag: str) -> dict:
        dirs = [os.path.join(self.out, "runs", f"{tag}-{i}") for i in range(1, n + 1)]
        merged = os.path.join(self.out, "runs", f"{tag}-merged")
        t0, wall, cpu, prof = self._timed(
            [_swafuzz(["run", *self.common, "--shard", f"{i}/{n}", "--workers", "1", "--out",
                       d]) for i, d in zip(range(1, n + 1), dirs)], dict(os.environ))
        _, mwall, mcpu, mprof = self._timed([_swafuzz(["merge", *dirs, "--out", merged,
                                                       "--no-ledger"])], dict(os.environ))
        info = run_info([merged], t0, shards=dirs)
        if prof is not None and mprof is not None:
            prof = {**prof, **mprof}
        return {"mode": f"--shard 1/{n} .. {n}/{n} + merge", **info,
                "wall_s": round(wall + mwall, 2), "shards_wall_s": round(wall, 2),
                "merge_s": round(mwall, 2), "cpu_s": round(cpu + mcpu, 2), "profile": prof}


def ray_missing() -> str | None:
    try:
        import ray  # noqa: F401 - is it installed in this Python?
    except ImportError:
        return (f"not run: ray is not installed in {sys.executable} (pip install "
                "'swafuzz[ray]', or python3 bootstrap.py fleet-tier and its .venv-fleet)")
    return None


def _ints(flag: str, text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"{flag}: {text!r} must be comma-separated whole numbers") from None
    if any(v < 1 for v in vals):
        raise SystemExit(f"{flag}: every count must be >= 1 (got {text!r})")
    return vals


def parse(argv):
    p = argparse.ArgumentParser(prog="python -m swafuzz.bench.fleet",
                                description=__doc__.strip().splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", required=True, help="a new or empty directory for the results")
    p.add_argument("--workers", default="2", help="--workers counts besides the base 1")
    p.add_argument("--nodes", default="1,2", help="worker-node counts of the --ray rows "
                   "('' for none)")
    p.add_argument("--shards", type=int, default=2, help="shards of the shard row (0: none)")
    p.add_argument("--examples", type=int, default=400, help="cases in all (split over units)")
    p.add_argument("--scenario", action="append", help="scenario kind (repeatable; default all)")
    p.add_argument("--impl", default="torch")
    p.add_argument("--executor", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=1, help="rounds of every row (the table shows "
                   "each row's median steps/s; the rows of a round run one after another)")
    p.add_argument("--startup-samples", type=int, default=3,
                   help="timings of each start-up piece alone (0: not measured)")
    p.add_argument("--profile", action="store_true", help="CPU time per process role (samples "
                   "/proc every 0.5 s)")
    args = p.parse_args(argv)
    args.workers_list = [w for w in _ints("--workers", args.workers) if w != 1]
    args.nodes_list = _ints("--nodes", args.nodes)
    for k in args.scenario or []:
        if k not in features.kind_names():
            raise SystemExit(f"--scenario: {k!r} is not a scenario kind; choose one of: "
                             f"{', '.join(features.kind_names())}")
    if args.examples < 1 or args.repeat < 1 or args.shards < 0 or args.shards == 1:
        raise SystemExit("--examples and --repeat: >= 1; --shards: 0 or >= 2")
    if os.path.exists(args.out) and os.listdir(args.out):
        raise SystemExit(f"--out: {args.out} is not empty")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(argv)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        raise
    os.makedirs(args.out, exist_ok=True)
    bench = Bench(args)
    load = [os.getloadavg()]
    no_ray = ray_missing() if args.nodes_list else None
    plan = [("--workers 1", lambda t: bench.local(1, t), "w1")]
    plan += [(f"--workers {w}", lambda t, w=w: bench.local(w, t), f"w{w}")
             for w in args.workers_list]
    plan += [(f"--ray, {n} node{'s' if n > 1 else ''}", lambda t, n=n: bench.ray(n, t), f"ray{n}")
             for n in args.nodes_list]
    if args.shards:
        plan.append((f"--shard x{args.shards} + merge",
                     lambda t: bench.shards(args.shards, t), f"shard{args.shards}"))
    rounds: dict[str, list[dict]] = {}
    for rnd in range(args.repeat):
        for mode, fn, tag in plan:
            if tag.startswith("ray") and no_ray:
                rounds.setdefault(mode, [{"mode": mode, "skipped": no_ray}])
                continue
            before = os.getloadavg()[0]
            row = fn(f"{tag}.r{rnd}")
            row.update(load_before=round(before, 2), load_after=round(os.getloadavg()[0], 2))
            row["steps_per_s"] = round(row["forward_steps"] / max(row["wall_s"], 1e-9), 2)
            rounds.setdefault(mode, []).append(row)
            print(f"round {rnd + 1}: {mode}: {row['forward_steps']} steps in {row['wall_s']} s "
                  f"({row['steps_per_s']} steps/s, load {before:.1f})", file=sys.stderr,
                  flush=True)
    load.append(os.getloadavg())
    startup = measure_startup(args.impl, args.executor, args.startup_samples)
    rows = [_median_row(rs) for rs in rounds.values()]
    base = rows[0]["steps_per_s"]
    for r in rows:
        if "skipped" not in r:
            r["ratio"] = round(r["steps_per_s"] / max(base, 1e-9), 3)
    result = {"cores": os.cpu_count(), "load_start": load[0], "load_end": load[1],
              "args": {k: v for k, v in vars(args).items()}, "rows": rows,
              "rounds": rounds, "startup": startup}
    with open(os.path.join(args.out, "fleet-bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    text = render(result)
    with open(os.path.join(args.out, "fleet-bench.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def _median_row(rs: list[dict]) -> dict:
    if "skipped" in rs[0]:
        return rs[0]
    rs = sorted(rs, key=lambda r: r["steps_per_s"])
    row = dict(rs[(len(rs) - 1) // 2])  # the median round (the lower one of an even count)
    row["rounds_steps_per_s"] = [r["steps_per_s"] for r in rs]
    if len(rs) > 1:
        row["spread"] = round(statistics.pstdev(row["rounds_steps_per_s"]), 2)
    return row


if __name__ == "__main__":
    sys.exit(main())
