"""Triton kernels for translate, store and the fused translate_store.

Signatures, shapes and dtypes: :mod:`kernels.torch_impl`. Every launch goes through
:func:`kernels.launch.launch` with the value contract as ``validate``; ``N == 0`` launches nothing.

* ``translate``: a program per ``BLOCK_N`` locations; negative locations wrap by ``len(mapping)``;
  int64 cast to int32.
* ``store``: a program per ``BLOCK_R`` rows, ``BLOCK_D`` columns at a time, to ``page *
  page_stride + offset * D`` (``page``/``offset`` in int32 as upstream; a negative location is
  unguarded on device and lands in the redzone); bf16 moved as int16, so every bit survives.
* ``translate_store``: both in one launch, also writing the int32 locations out.

Without CUDA they run in the Triton interpreter (``TRITON_INTERPRET=1`` set before import, as
``tests/conftest.py`` and ``bench/kernels.py`` do; ~1.5 ms per launch + ~0.45 ms per program, no
bounds checks): block sizes are large so grids stay tiny, and the host contracts keep indices in
bounds. ``D`` is a compile-time constant (the interpreter cannot loop to a runtime bound).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from swafuzz.kernels import contracts
from swafuzz.kernels.launch import launch

# -- kernels ----------------------------------------------------------------------------------------


@triton.jit
def _translate_kernel(mapping_ptr, loc_ptr, out_ptr, n, m_len, BLOCK_N: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = r < n
    full = tl.load(loc_ptr + r, mask=rmask, other=0)
    full = tl.where(full < 0, full + m_len, full)
    swa = tl.load(mapping_ptr + full, mask=rmask, other=0)
    tl.store(out_ptr + r, swa.to(tl.int32), mask=rmask)


@triton.jit
def _scatter_rows(cache_ptr, rows_ptr, swa, r, rmask, page_stride, log2p, page_mask,
                  d: tl.constexpr, BLOCK_D: tl.constexpr):
    """Rows ``r`` (masked by ``rmask``) of ``rows`` to SWA slots ``swa`` (int32)."""
    page = swa >> log2p  # int32 arithmetic, as upstream
    off = swa & page_mask
    dst = page.to(tl.int64) * page_stride + off.to(tl.int64) * d
    src = r * d
    for d0 in range(0, d, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols < d)[None, :]
        x = tl.load(rows_ptr + (src[:, None] + cols[None, :]), mask=m)
        tl.store(cache_ptr + (dst[:, None] + cols[None, :]), x, mask=m)


@triton.jit
def _store_kernel(cache_ptr, loc_ptr, rows_ptr, n, page_stride, log2p, page_mask,
                  d: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < n
    swa = tl.load(loc_ptr + r, mask=rmask, other=0)
    _scatter_rows(cache_ptr, rows_ptr, swa, r, rmask, page_stride, log2p, page_mask, d, BLOCK_D)


@triton.jit
def _translate_store_kernel(mapping_ptr, loc_ptr, out_ptr, cache_ptr, rows_ptr, n, m_len,
                            page_stride, log2p, page_mask,
                            d: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < n
    full = tl.load(loc_ptr + r, mask=rmask, other=0)
    full = tl.where(full < 0, full + m_len, full)
    swa = tl.load(mapping_ptr + full, mask=rmask, other=0).to(tl.int32)
    tl.store(out_ptr + r, swa, mask=rmask)
    _scatter_rows(cache_ptr, rows_ptr, swa, r, rmask, page_stride, log2p, page_mask, d, BLOCK_D)


# -- launch configuration ---------------------------------------------------------------------------

#: Overrides for the GPU store configuration (set by ``bench/kernels.py --tune``):
#: keys ``block_r``, ``block_d``, ``num_warps``.
GPU_STORE_CONFIG: dict[str, int] = {}


def _interpreted() -> bool:
    return type(_translate_kernel).__name__ == "InterpretedFunction"


def _require_runnable(op: str, t: torch.Tensor) -> None:
    if t.device.type == "cuda":
        return
    if not _interpreted():
        raise contracts.ContractError(
            f"{op}: tensors must be on a CUDA device for compiled Triton (got {t.device}); on a "
            "machine without a GPU set TRITON_INTERPRET=1 before triton is imported"
        )


def _translate_config(n: int, device: torch.device) -> tuple[int, int]:
    """(BLOCK_N, num_warps)."""
    if device.type == "cuda":
        return 1024, 4
    # Interpreter: cost grows with programs and with (masked) block elements: fit the block to N.
    return min(triton.next_power_of_2(n), 4096), 1


def _store_config(n: int, d: int, device: torch.device) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_D, num_warps) for ``n`` rows of ``d`` 1- or 2-byte elements."""
    if device.type == "cuda":
        # 64-column steps divide the real width (576) exactly; with 16-byte aligned bases and a
        # page stride divisible by 16 Triton emits 16-byte vector loads/stores (checked in PTX).
        block_d = GPU_STORE_CONFIG.get("block_d", min(triton.next_power_of_2(d), 64))
        block_r = GPU_STORE_CONFIG.get("block_r", max(1, 4096 // block_d))
        return block_r, block_d, GPU_STORE_CONFIG.get("num_warps", 4)
    # Interpreter (measured: ~80 ns per block element per column step, ~0.5 ms per program):
    # narrow column steps, many rows per program, the block fitted to N.
    block_d = min(triton.next_power_of_2(d), 64)
    block_r = min(triton.next_power_of_2(n), 2048)
    return block_r, block_d, 1


def _store_geometry(cache: torch.Tensor, n: int):
    """(grid, page stride, P-1, D, launch meta) of a store of ``n`` rows into ``cache``."""
    _, page_size, d = cache.shape
    block_r, block_d, warps = _store_config(n, d, cache.device)
    meta = {"BLOCK_R": block_r, "BLOCK_D": block_d, "num_warps": warps}
    return (triton.cdiv(n, block_r),), cache.stride(0), page_size - 1, d, meta


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t


# -- public API -------------------------------------------------------------------------------------


def translate(mapping: torch.Tensor, loc: torch.Tensor, *,
              out: torch.Tensor | None = None) -> torch.Tensor:
    """int32 ``[N]`` = ``int32(mapping[loc])``; see :mod:`kernels.torch_impl`."""
    contracts.check_translate_static(mapping, loc, out)
    _require_runnable("translate", loc)
    n = loc.numel()
    out = contracts.int32_out(loc, out)
    if n == 0:
        return out
    block_n, warps = _translate_config(n, loc.device)
    grid = (triton.cdiv(n, block_n),)

    def fn(mapping, loc, out):
        _translate_kernel[grid](mapping, loc, out, n, mapping.numel(), BLOCK_N=block_n,
                                num_warps=warps)

    launch("triton.translate", fn, (mapping, loc, out),
           contracts.translate_values_validator(mapping, loc))
    return out


def store(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, *,
          checked: bool = True) -> None:
    """Write ``rows[i]`` to slot ``loc[i]`` (int32) of ``cache``; see :mod:`kernels.torch_impl`
    (``checked=False``: :func:`store_unchecked`)."""
    log2p = contracts.check_store_static(cache, loc, rows)
    _require_runnable("store", cache)
    n = loc.numel()
    if n == 0:
        return
    grid, page_stride, page_mask, d, meta = _store_geometry(cache, n)

    def fn(cache, loc, rows):
        _store_kernel[grid](_bits(cache), loc, _bits(rows), n, page_stride, log2p, page_mask,
                            d=d, **meta)

    launch("triton.store", fn, (cache, loc, rows),
           contracts.store_values_validator(cache, loc) if checked else None)


def store_unchecked(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
    """:func:`store` without the value contract (mutants of a missing host check); a bad location
    writes outside the cache (interpreter: undefined unless redzones span a page stride)."""
    store(cache, loc, rows, checked=False)


def translate_store(mapping: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor,
                    cache: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """Translate int64 full ``loc`` and store ``rows`` there, in one launch; returns the int32
    SWA locations (``out`` when given)."""
    log2p = contracts.check_translate_store_static(mapping, loc, rows, cache, out)
    _require_runnable("translate_store", cache)
    n = loc.numel()
    out = contracts.int32_out(loc, out)
    if n == 0:
        return out
    grid, page_stride, page_mask, d, meta = _store_geometry(cache, n)

    def fn(mapping, loc, out, cache, rows):
        _translate_store_kernel[grid](mapping, loc, out, _bits(cache), _bits(rows), n,
                                      mapping.numel(), page_stride, log2p, page_mask, d=d,
                                      **meta)

    launch("triton.translate_store", fn, (mapping, loc, out, cache, rows),
           contracts.translate_store_values_validator(mapping, loc, cache))
    return out
