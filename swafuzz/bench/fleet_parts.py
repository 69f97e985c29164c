"""Pieces of :mod:`swafuzz.bench.fleet`: what a row reads back from its run directory, the
start-up pieces timed alone, and the markdown table."""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import statistics
import time
from typing import Any

from swafuzz.harness.pipeline.caselog import read_log
from swafuzz.harness.pipeline.execute import resolve_executors, resolve_impl
from swafuzz.harness.pipeline.unit import pool_init
from swafuzz.harness.pipeline.worker import CaseWorker


def run_info(dirs: list[str], t0: float, shards: list[str] | None = None) -> dict[str, Any]:
    """Cases, checked forward steps and times of the run in ``dirs[0]`` (a merged run for the
    shard row) started at ``t0`` (wall clock); ``shards``: the shard runs it was merged from."""
    with open(os.path.join(dirs[0], "run.json")) as f:
        meta = json.load(f)
    rows = read_log(os.path.join(dirs[0], "cases.jsonl"))
    ts = [r["t"] for r in rows if "case" in r and isinstance(r.get("t"), (int, float))]
    units = [r for r in rows if r.get("event") == "unit_done"]
    info = {"cases": sum(1 for r in rows if "case" in r),
            "units": len(units), "forward_steps": meta.get("forward_steps") or 0,
            "run_s": meta.get("seconds") or 0.0,
            "cli_s": round(meta["started"] - t0, 2) if meta.get("started") else None,
            "first_case_s": round(min(ts) - t0, 2) if ts else None,
            "last_case_s": round(max(ts) - t0, 2) if ts else None,
            "findings": sorted({r["finding"] for r in units if r.get("finding")})}
    if shards:
        info["shard_run_s"] = []
        for d in shards:
            with open(os.path.join(d, "run.json")) as f:
                info["shard_run_s"].append(json.load(f).get("seconds"))
    return info


def _median_time(fn, samples: int) -> dict[str, Any]:
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        fn()
        times.append(round(time.perf_counter() - t, 3))
    return {"median_s": statistics.median(times), "samples_s": times}


def measure_startup(impl: str, executor: str, samples: int) -> dict[str, Any]:
    """Each start-up piece of a campaign timed alone, ``samples`` times: a case worker (a fresh
    interpreter importing torch and the harness, the target restored), and a ``spawn`` pool
    process of ``--workers N`` (an interpreter importing the unit module)."""
    if samples < 1:
        return {}
    imp, exe = resolve_impl(impl), resolve_executors(executor)

    def case_worker():
        w = CaseWorker("unified", imp, exe)
        w.start()
        w.close()

    def pool_process():
        with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"),
                                    initializer=pool_init) as pool:
            pool.submit(os.getpid).result()

    return {"case_worker": _median_time(case_worker, samples),
            "pool_process": _median_time(pool_process, samples)}


def _f(x, fmt="{:.1f}") -> str:
    return "-" if x is None else fmt.format(x)


def render(res: dict[str, Any]) -> str:
    a = res["args"]
    kinds = ", ".join(a["scenario"]) if a.get("scenario") else "every kind"
    la, lb = res["load_start"], res["load_end"]
    lines = [
        "# Fleet throughput (`python -m swafuzz.bench.fleet`)", "",
        f"{res['cores']} CPU cores; load average (1/5/15 min) {la[0]:.2f} / {la[1]:.2f} / "
        f"{la[2]:.2f} at the start, {lb[0]:.2f} / {lb[1]:.2f} / {lb[2]:.2f} at the end. "
        f"Target unified, impl {a['impl']}, executor {a['executor']}, {a['examples']} "
        f"examples, seed {a['seed']}, {kinds}; {a['repeat']} round(s), each row's median round "
        "shown.", "",
        "| mode | cases | fwd steps | wall s | run s | start s | cpu s | steps/s | ratio | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in res["rows"]:
        if "skipped" in r:
            lines.append(f"| {r['mode']} | {r['skipped']} |||||||||")
            continue
        wall = _f(r["wall_s"])
        if "merge_s" in r:
            wall += f" ({_f(r['shards_wall_s'])} + merge {_f(r['merge_s'])})"
        rounds = r.get("rounds_steps_per_s", [])
        rate = _f(r["steps_per_s"]) + (f" ({', '.join(_f(x) for x in rounds)})"
                                       if len(rounds) > 1 else "")
        lines.append(f"| {r['mode']} | {r['cases']} | {r['forward_steps']} | {wall} | "
                     f"{_f(r['run_s'])} | {_f(r['first_case_s'])} | {_f(r['cpu_s'])} | {rate} | "
                     f"{r['ratio']:.2f} | {r['load_before']:.1f} -> {r['load_after']:.1f} |")
    lines += ["", "`wall s`: the command's start to its exit (shard row: both shards at the same "
              "time, then the merge); `run s`: the pipeline's own time (`run.json`); `start s`: "
              "from the command's start to its first case row (start-up and the first Case); "
              "`cpu s`: CPU time of the command's process tree (with `--profile` the sampled tree, "
              "the Ray nodes' processes included; without it, the processes the command "
              "reaped: a Ray row's is then the CLI's only); "
              "`steps/s`: checked forward steps over `wall s`; `ratio`: over `--workers 1`'s; "
              "`load`: the 1-minute load average before and after the row."]
    st = res.get("startup") or {}
    if st:
        lines += ["", "Start-up pieces timed alone (median of "
                  f"{len(st['case_worker']['samples_s'])}): a case worker "
                  f"{st['case_worker']['median_s']:.2f} s (an interpreter importing torch and "
                  f"the harness, the target restored), a `spawn` pool process "
                  f"{st['pool_process']['median_s']:.2f} s. `--workers N` starts a forkserver "
                  "(one such import), forks N pool processes from it, and starts N case "
                  "workers; the CLI first starts one case worker to check the target loads. `--budget` is the wall time of the whole command, all of "
                  "this start-up included (docs/RUNS.md)."]
    prof = [r for r in res["rows"] if r.get("profile")]
    if prof:
        roles = sorted({k for r in prof for k in r["profile"]})
        lines += ["", "CPU seconds by process role (`--profile`: /proc sampled every 0.5 s; "
                  "processes in parentheses; `pool process` includes the forkserver that forks them):",
                  "",
                  "| role | " + " | ".join(r["mode"] for r in prof) + " |",
                  "|---|" + "---:|" * len(prof)]
        for role in roles:
            cells = []
            for r in prof:
                d = r["profile"].get(role)
                cells.append(f"{d['cpu_s']:.1f} ({d['processes']})" if d else "-")
            lines.append(f"| {role} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
