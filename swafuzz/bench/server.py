"""Server-level throughput in one bench: Cases per second of one ``swafuzz run --level server``
campaign with ``--workers 1`` (the base of every ratio) and ``--workers 2``, both through the
zygote (the case workers fork from one process that imported the release once:
:mod:`swafuzz.harness.pipeline.zygote`), and ``--workers 2`` with fresh interpreters
(``SWAFUZZ_ZYGOTE=off``: each case worker imports the release itself, as before the zygote).

    swafuzz bench server --out bench-out --examples 40 --scenario server_decode

Every row runs the same campaign (same kinds, examples and seed, no ledger) through the real
CLI in a child process. Columns: ``wall`` (the command, start-up and the release's import
included), ``run`` (``run.json``'s seconds: from the first unit's start to the last one's end,
pool start-up included, the target check before it not) and ``steady`` (the case log: the
first Case's start to the last Case's end, over all units). Ratios are over the ``--workers 1`` row of the same bench.
The load average before and after each row is recorded: with fewer free cores than workers a
ratio says more about the machine than the harness, so a second table gives each role's CPU
milliseconds per Case (driver, pool process, case worker, zygote, forkserver) and the ratio they
imply on free cores (:mod:`swafuzz.bench.server_cpu`), which holds on a loaded machine. Writes ``server-bench.md`` and
``server-bench.json`` into ``--out``, each row's run directory under ``OUT/runs``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from swafuzz.bench import server_cpu

ROWS = {"1": (1, True), "2": (2, True), "2-fresh": (2, False)}


def _read_log(path: str) -> list[dict[str, Any]]:
    rows = []
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def run_row(name: str, args) -> dict[str, Any]:
    """One row: its campaign run to completion and its rates."""
    workers, zyg = ROWS[name]
    d = os.path.join(args.out, "runs", f"w{name}")
    cmd = [sys.executable, "-m", "swafuzz", "run", "--target", args.target, "--level", "server",
           "--examples", str(args.examples), "--seed", str(args.seed), "--workers", str(workers),
           "--ledger", "none", "--shrink-budget", "0", "--quiet", "--out", d]
    for k in args.scenario or ["server_decode"]:
        cmd += ["--scenario", k]
    env = dict(os.environ)
    if not zyg:
        env["SWAFUZZ_ZYGOTE"] = "off"
    else:
        env.pop("SWAFUZZ_ZYGOTE", None)
    load0 = os.getloadavg()
    err_path = os.path.join(args.out, "runs", f"w{name}.log")
    t0 = time.time()
    with open(err_path, "w") as err:
        p = subprocess.Popen(cmd, env=env, stdout=err, stderr=subprocess.STDOUT)
        cpu = server_cpu.watch(p, os.path.join(d, "cases.jsonl"))
    wall = time.time() - t0
    if p.returncode not in (0, 1):
        with open(err_path) as f:
            raise RuntimeError(f"{' '.join(cmd[2:])}: exit {p.returncode}\n{f.read()[-3000:]}")
    with open(os.path.join(d, "run.json")) as f:
        meta = json.load(f)
    cases = [r for r in _read_log(os.path.join(d, "cases.jsonl")) if "case" in r]
    ends = [r["t"] for r in cases]
    starts = [r["t"] - r.get("seconds", 0.0) for r in cases]
    steady = max(ends) - min(starts) if cases else 0.0
    n = meta["cases"]
    return {"row": name, "workers": workers, "zygote": zyg, "cases": n,
            "wall_s": round(wall, 2), "run_s": meta["seconds"], "steady_s": round(steady, 2),
            "wall_rate": round(n / wall, 3), "run_rate": round(n / meta["seconds"], 3)
            if meta["seconds"] else None, "steady_rate": round(n / steady, 3) if steady else None,
            "cpu": cpu, "cpu_ms_per_case": server_cpu.per_case(cpu),
            "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in os.getloadavg()]}


def render(rows: list[dict[str, Any]], args) -> str:
    base = rows[0]
    lines = [f"# swafuzz bench server: target {args.target}, {args.examples} Cases of "
             f"{', '.join(args.scenario or ['server_decode'])}, seed {args.seed}, "
             f"{os.cpu_count()} CPUs", "",
             "| row | workers | zygote | cases | wall s | run s | steady s | Cases/s wall | "
             "Cases/s run | Cases/s steady | ratio run | ratio steady | load before -> after |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    def ratio(r: dict[str, Any], k: str) -> str:
        return f"{r[k] / base[k]:.2f}x" if r[k] and base[k] else "-"
    for r in rows:
        lines.append(f"| {r['row']} | {r['workers']} | {'yes' if r['zygote'] else 'no'} | "
                     f"{r['cases']} | {r['wall_s']} | {r['run_s']} | {r['steady_s']} | "
                     f"{r['wall_rate']} | {r['run_rate']} | {r['steady_rate']} | "
                     f"{ratio(r, 'run_rate')} | {ratio(r, 'steady_rate')} | "
                     f"{r['load_before'][0]} -> {r['load_after'][0]} |")
    lines += ["", *render_cpu(rows)]
    lines += ["", "Ratios are over the first row (`--workers 1`). wall: the whole command "
              "(the release's import included); run: run.json's seconds (pool start-up "
              "included); steady: first Case start to last Case end in the case log. Load: "
              "1-minute load average before and after the row."]
    return "\n".join(lines) + "\n"


CPU_ROLES = ("driver", "pool process", "case worker", "zygote", "forkserver")


def render_cpu(rows: list[dict[str, Any]]) -> list[str]:
    """The CPU table: steady CPU ms per Case by role, and the ratio it implies on this many
    cores (:func:`swafuzz.bench.server_cpu.implied_ratio`): judged on a loaded machine too."""
    base = rows[0].get("cpu_ms_per_case") or {}
    out = ["| row | " + " | ".join(f"{r} ms/Case" for r in CPU_ROLES) + " | other ms/Case | "
           "chain ms/Case | total ms/Case | implied ratio | harness-only ratio | CPU s (all) |",
           "|---|" + "---|" * (len(CPU_ROLES) + 6)]
    for r in rows:
        pc = r.get("cpu_ms_per_case") or {}
        other = round(pc.get("total", 0.0) - sum(pc.get(k, 0.0) for k in CPU_ROLES), 2)
        imp = [server_cpu.implied_ratio(base, pc, r["workers"], harness_only=h)
               for h in (False, True)]
        out.append(f"| {r['row']} | " + " | ".join(str(pc.get(k, 0.0)) for k in CPU_ROLES)
                   + f" | {other} | {pc.get('pipeline', '-')} | {pc.get('total', '-')} | "
                   + " | ".join(f"{x:.2f}x" if x else "-" for x in imp)
                   + f" | {(r.get('cpu') or {}).get('all_s', '-')} |")
    return out + ["", f"CPU: steady state (from the sample that saw the first Case to the one "
                  f"that saw the last), per Case. chain: one worker's pool process + case worker "
                  f"(the driver with 1 worker); implied ratio: min(workers x base total / "
                  f"chain, {os.cpu_count()} cores x base total / total), the wall ratio on "
                  f"free cores; harness-only: the same with the base row's case worker CPU per "
                  f"Case (what the harness adds, not a case worker slowed by other load). "
                  f"CPU s: the whole command, start-up included."]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="swafuzz bench server", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--target", default="sglang")
    ap.add_argument("--examples", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scenario", action="append")
    ap.add_argument("--rows", default="1,2,2-fresh",
                    help="comma list of: " + ", ".join(ROWS) + " (the first is the base)")
    args = ap.parse_args(argv)
    names = args.rows.split(",")
    for n in names:
        if n not in ROWS:
            print(f"error: --rows: {n!r} is not a row (allowed: {', '.join(ROWS)})",
                  file=sys.stderr)
            return 2
    if args.examples < 2:
        print(f"error: --examples: must be >= 2 (got {args.examples})", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    rows = []
    for n in names:
        rows.append(run_row(n, args))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    md = render(rows, args)
    with open(os.path.join(args.out, "server-bench.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "server-bench.json"), "w") as f:
        json.dump({"rows": rows, "examples": args.examples, "seed": args.seed,
                   "scenario": args.scenario or ["server_decode"]}, f, indent=1)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
