"""Kernel benchmark: translate, store and translate_store per implementation.

    python bench/kernels.py [--sizes 64,4096,1048576,16777216] [--d 576]
                            [--impls torch,triton,cuda] [--json FILE] [--tune]

Per size N and operation: µs per call (median), speed-up over torch, effective bandwidth and its
fraction of a copy ceiling measured in the same run (a large device-to-device ``copy_``). Bytes
per call: translate reads ``N*8`` (loc) + ``N*8`` (mapping), writes ``N*4``; store reads ``N*4``
(int32 loc) + ``N*D*es`` (rows), writes ``N*D*es`` (es = 2 for bf16); translate_store
``20*N + 2*N*D*es``.

Setup: page size 256, bf16 rows of width D, ``ceil(N/256) + 1`` pages, N distinct full slots sent
to N distinct SWA slots in random order; only device work is timed (host value contracts off via
a pass-through launch recorder). GPU: ``triton.testing.do_bench``; CPU: the Triton interpreter
and ``time.perf_counter`` medians (default sizes 64, 4096: a smoke test). ``--tune`` (GPU) sweeps
a few Triton store configurations for translate_store at the largest size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from swafuzz import kernels  # noqa: E402
from swafuzz.kernels.launch import recording  # noqa: E402

PAGE = 256
OPS = ("translate", "store", "translate_store")


class _PassThrough:
    """Launch recorder that just launches: value contracts (host syncs) are not run."""

    def on_launch(self, name, fn, args, validate):
        fn(*args)


def _time_us(fn, gpu: bool, reps: int) -> float:
    if gpu:
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def copy_ceiling_gbps(device: torch.device, gpu: bool) -> float:
    """Bytes read + written per second by a large device-to-device copy."""
    nbytes = (2 << 30) if gpu else (64 << 20)
    bufs = {"src": torch.empty(nbytes, dtype=torch.uint8, device=device)}
    bufs["dst"] = torch.empty_like(bufs["src"])
    us = _time_us(lambda: bufs["dst"].copy_(bufs["src"]), gpu, reps=5)
    bufs.clear()
    return 2 * nbytes / (us * 1e-6) / 1e9


def op_bytes(op: str, n: int, d: int, es: int) -> int:
    """Bytes an operation must move (see the module docstring)."""
    rows = 2 * n * d * es
    return {"translate": 20 * n, "store": 4 * n + rows}.get(op, 20 * n + rows)


def make_inputs(n: int, d: int, device: torch.device, seed: int = 0) -> dict:
    g = torch.Generator(device="cpu").manual_seed(seed)
    num_pages = -(-n // PAGE) + 1
    length = n + PAGE + 1
    mapping = torch.zeros(length, dtype=torch.int64)
    mapping[PAGE:PAGE + n] = torch.randperm(n, generator=g) + PAGE
    mapping[-1] = -1
    loc = torch.randperm(n, generator=g) + PAGE
    mapping, loc = mapping.to(device), loc.to(device)
    rows = torch.empty(n, d, dtype=torch.bfloat16, device=device)
    rows.view(torch.int16).random_(-(2**15), 2**15 - 1)
    return {"mapping": mapping, "loc": loc, "swa": mapping[loc].to(torch.int32), "rows": rows,
            "cache": torch.zeros(num_pages, PAGE, d, dtype=torch.bfloat16, device=device),
            "out": torch.empty(n, dtype=torch.int32, device=device)}


def _call(impl, op: str, x: dict):
    if op == "translate":
        return lambda: impl.translate(x["mapping"], x["loc"], out=x["out"])
    if op == "store":
        return lambda: impl.store(x["cache"], x["swa"], x["rows"])
    return lambda: impl.translate_store(x["mapping"], x["loc"], x["rows"], x["cache"],
                                        out=x["out"])


def tune(x: dict, gpu: bool) -> list[dict]:
    """Sweep Triton GPU store configurations on translate_store; keep the fastest."""
    impl = kernels.get_impl("triton")  # swafuzz.kernels.triton_impl (imports triton)
    results = []
    for block_r, block_d, warps in [(32, 64, 4), (16, 128, 4), (64, 64, 8), (8, 1024, 8),
                                    (4, 1024, 4), (32, 128, 8), (16, 64, 4), (2, 1024, 4)]:
        impl.GPU_STORE_CONFIG.clear()
        impl.GPU_STORE_CONFIG.update(block_r=block_r, block_d=block_d, num_warps=warps)
        with recording(_PassThrough()):
            us = _time_us(_call(impl, "translate_store", x), gpu, reps=3)
        results.append({"block_r": block_r, "block_d": block_d, "num_warps": warps, "us": us})
        print(f"  tune BLOCK_R={block_r:<4} BLOCK_D={block_d:<5} warps={warps}: {us:10.1f} us",
              flush=True)
    best = min(results, key=lambda r: r["us"])
    impl.GPU_STORE_CONFIG.clear()
    impl.GPU_STORE_CONFIG.update(block_r=best["block_r"], block_d=best["block_d"],
                                        num_warps=best["num_warps"])
    return results


def main(argv: list[str] | None = None) -> int:
    gpu = torch.cuda.is_available()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="64,4096,1048576,16777216" if gpu else "64,4096")
    ap.add_argument("--d", type=int, default=576, help="row width in bfloat16 elements")
    ap.add_argument("--impls", default=",".join(kernels.available_impls()))
    ap.add_argument("--json", default=None, help="write the numbers to this file")
    ap.add_argument("--tune", action="store_true", help="sweep Triton store configs (GPU)")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
        impl_names = [s for s in args.impls.split(",") if s]
        impls = {name: kernels.get_impl(name) for name in impl_names}
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if "torch" not in impls:
        impls = {"torch": kernels.get_impl("torch"), **impls}
    device = torch.device("cuda" if gpu else "cpu")
    es = 2
    ceiling = copy_ceiling_gbps(device, gpu)
    dev_name = torch.cuda.get_device_name() if gpu else "cpu (Triton interpreter)"
    print(f"device: {dev_name}; copy ceiling {ceiling:.0f} GB/s (read + write); "
          f"D={args.d} bf16, P={PAGE}; host value checks excluded", flush=True)

    report: dict = {"device": dev_name, "copy_gbps": ceiling, "d": args.d, "page_size": PAGE,
                    "dtype": "bfloat16", "results": [], "tune": None}
    if args.tune and gpu and "triton" in impls:
        x = make_inputs(max(sizes), args.d, device)
        report["tune"] = tune(x, gpu)
        del x
        torch.cuda.empty_cache()

    header = (f"{'op':<16}{'N':>10} {'impl':<8}{'us/call':>12}{'vs torch':>10}"
              f"{'GB/s':>10}{'% copy':>8}")
    print(header)
    print("-" * len(header))
    for n in sizes:
        x = make_inputs(n, args.d, device)
        reps = (5 if n <= 4096 else 3) if gpu else (3 if n <= 1024 else 1)
        for op in OPS:
            nbytes = op_bytes(op, n, args.d, es)
            torch_us = None
            for name, impl in impls.items():
                with recording(_PassThrough()):
                    us = _time_us(_call(impl, op, x), gpu, reps)
                if name == "torch":
                    torch_us = us
                gbps = nbytes / (us * 1e-6) / 1e9
                row = {"op": op, "n": n, "impl": name, "us": us, "bytes": nbytes,
                       "speedup_vs_torch": torch_us / us if torch_us else None,
                       "gbps": gbps, "frac_copy": gbps / ceiling}
                report["results"].append(row)
                print(f"{op:<16}{n:>10} {name:<8}{us:>12.1f}{row['speedup_vs_torch']:>9.2f}x"
                      f"{gbps:>10.1f}{100 * gbps / ceiling:>7.1f}%", flush=True)
        del x
        if gpu:
            torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
