"""Fleet throughput: checked forward steps per second of one ``swafuzz run`` campaign, local
(``--workers 1`` and ``--workers 2``) and on a Ray cluster of this machine (``--ray`` with 1 and
2 worker nodes of one CPU each, :class:`swafuzz.harness.fleet_local.Cluster`), in one run.

    python -m swafuzz.bench.fleet --nodes 1,2 --examples 60 --impl torch

Every row runs the same campaign (target ``unified``, every scenario kind unless ``--scenario``,
``--examples`` cases in all, the same seed, no corpus) through the real CLI, so it counts what a
user waits for: ``run seconds`` is the pipeline's own time (``run.json``: for a fleet, from
connecting to the cluster to the last unit row, so the Ray workers' and case workers' start-up
is in it), ``wall`` adds the CLI's start. A cluster's own start (``ray start``) is not counted
(a fleet is started once for many runs). Needs ray (``pip install 'swafuzz[ray]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from swafuzz.harness.fleet_local import Cluster


def _run(args: list[str], out: str, env: dict) -> dict:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "swafuzz", "run", *args, "--out", out, "--quiet"],
                       env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode not in (0, 1):
        raise RuntimeError(f"swafuzz run {' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    with open(os.path.join(out, "run.json")) as f:
        meta = json.load(f)
    cases = sum(s.get("cases", 0) for s in (meta.get("stats") or {}).values())
    return {"cases": cases, "forward_steps": meta.get("forward_steps") or 0,
            "seconds": meta.get("seconds") or 0.0, "wall": round(wall, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--nodes", default="1,2", help="worker-node counts for --ray rows")
    p.add_argument("--workers", default="1,2", help="--workers counts for the local rows")
    p.add_argument("--examples", type=int, default=60, help="cases in all (split over units)")
    p.add_argument("--scenario", action="append", help="scenario kind (repeatable; default all)")
    p.add_argument("--impl", default="torch")
    p.add_argument("--executor", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="also write the rows here")
    args = p.parse_args(argv)
    try:
        nodes = [int(n) for n in args.nodes.split(",") if n]
        workers = [int(n) for n in args.workers.split(",") if n]
    except ValueError:
        print("--nodes/--workers: comma-separated integers", file=sys.stderr)
        return 2
    common = ["--target", "unified", "--impl", args.impl, "--executor", args.executor,
              "--examples", str(args.examples), "--seed", str(args.seed), "--db", "none",
              "--ledger", "none"] + [a for k in (args.scenario or []) for a in ("--scenario", k)]
    rows = []
    tmp = tempfile.mkdtemp(prefix="sf-bench-fleet-")
    for w in workers:
        r = _run(common + ["--workers", str(w)], os.path.join(tmp, f"local-{w}"), dict(os.environ))
        rows.append({"mode": f"--workers {w}", **r})
        print(_line(rows[-1], rows[0]), flush=True)
    for n in nodes:
        cluster = Cluster({f"w{i}": 1 for i in range(n)}, redis=False)
        try:
            cluster.start()
            r = _run(common + ["--ray", cluster.address, "--workers", str(n)],
                     os.path.join(tmp, f"ray-{n}"), cluster.env)
        finally:
            cluster.stop()
        rows.append({"mode": f"--ray, {n} node{'s' if n > 1 else ''}", **r})
        print(_line(rows[-1], rows[0]), flush=True)
    print(f"\nfleet throughput on {os.cpu_count()} cores: target unified, impl {args.impl}, "
          f"executor {args.executor}, {args.examples} examples, seed {args.seed}")
    print(f"{'mode':<16} {'cases':>6} {'fwd steps':>9} {'run s':>7} {'wall s':>7} "
          f"{'steps/s':>8} {'ratio':>6}")
    for r in rows:
        print(_line(r, rows[0]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cores": os.cpu_count(), "args": vars(args), "rows": rows}, f, indent=1)
    return 0


def _line(r: dict, base: dict) -> str:
    rate = r["forward_steps"] / max(r["seconds"], 1e-9)
    b = base["forward_steps"] / max(base["seconds"], 1e-9)
    return (f"{r['mode']:<16} {r['cases']:>6} {r['forward_steps']:>9} {r['seconds']:>7.1f} "
            f"{r['wall']:>7.1f} {rate:>8.1f} {rate / max(b, 1e-9):>6.2f}")


if __name__ == "__main__":
    sys.exit(main())
