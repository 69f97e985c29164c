"""The DeepSeek-V4 SWA cache store as torch ops: quantize bf16 K rows into the paged 584-byte
token layout (spec §4.6; written independently in ``features/dsv4_layout/oracle.py``).

``store(cache, loc, rows, page_size)``: cache uint8 ``[num_pages, S]`` (``S =
ceil(584*P/576)*576``, inner stride 1, maybe a view into a redzoned buffer); loc int32 ``[N]``;
rows bfloat16 ``[N, 512]`` contiguous. Row i goes to slot ``loc[i]`` (page ``loc >> log2(P)``,
offset ``loc & (P-1)``, int32): 448 nope values as fp8 e4m3fn at ``page*S + offset*576``, 64
rope values as bf16 at ``+448``, 7 UE8M0 tile scales at ``page*S + 576*P + offset*8`` (scale
byte 7 and the page pad unwritten). ``store_unchecked`` skips the value contract (a negative
location writes at page -1, as the real kernels; the redzones see it).

Per 64-value tile: ``amax = max|x|`` (fp32), ``scale = max(amax, 1e-8) / 448`` (the Triton V4
store's epsilon; CUDA JIT uses ``1e-4``), ``e = ceil(log2(scale))`` from the fp32 bits (CUDA's
``cast_to_ue8m0``), values ``clamp(x * 2**-e, -448, 448)`` cast RNE to ``float8_e4m3fn``, scale
byte ``e + 127``. All aten ops (the tape records them); value contract skipped while capturing.
"""

from __future__ import annotations

import torch

from swafuzz.kernels import contracts
from swafuzz.kernels.launch import capturing

NOPE, ROPE, TILE, TILES = 448, 64, 64, 7
DATA, SCALES = 576, 8
EPS = 1e-8
FP8_MAX = 448.0


def page_stride(page_size: int) -> int:
    return -(-584 * page_size // 576) * 576


def quantize(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(data uint8 [N, 576], scales uint8 [N, 7])`` of bf16 ``rows`` ``[N, 512]``."""
    n = rows.shape[0]
    x = rows[:, :NOPE].float().reshape(n, TILES, TILE)
    amax = x.abs().amax(dim=-1)
    scale = torch.clamp_min(amax, EPS) / FP8_MAX  # float32 / float32: one IEEE division
    bits = scale.view(torch.int32)
    e = ((bits >> 23) & 0xFF) - 127 + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    inv = ((127 - e) << 23).view(torch.float32)  # 2**-e (e in [-35, 120]: a normal float)
    y = (x * inv.unsqueeze(-1)).clamp(-FP8_MAX, FP8_MAX)
    codes = y.to(torch.float8_e4m3fn).view(torch.uint8).reshape(n, NOPE)
    rope = rows[:, NOPE:].contiguous().view(torch.uint8)  # [N, 128], little-endian bf16
    data = torch.cat([codes, rope], dim=1)
    return data, (e + 127).to(torch.uint8)


def check_static(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor,
                 page_size: int) -> None:
    op = "dsv4_store"
    if loc.dtype != torch.int32:
        contracts._fail(op, f"loc must be int32 (got {loc.dtype}); int64 locations are refused, "
                        "never reinterpreted")
    if loc.dim() != 1 or not loc.is_contiguous():
        contracts._fail(op, f"loc must be 1-D contiguous (got shape {tuple(loc.shape)})")
    if rows.dtype != torch.bfloat16 or rows.dim() != 2 or rows.shape[1] != NOPE + ROPE \
            or not rows.is_contiguous():
        contracts._fail(op, f"rows must be contiguous bfloat16 [N, 512] (got {rows.dtype} "
                        f"{tuple(rows.shape)})")
    if rows.shape[0] != loc.numel():
        contracts._fail(op, f"loc has {loc.numel()} entries for {rows.shape[0]} rows: the "
                        "location count must equal the row count")
    stride = page_stride(page_size)
    if cache.dtype != torch.uint8 or cache.dim() != 2 or cache.shape[1] != stride \
            or (cache.shape[0] > 1 and cache.stride(0) != stride) or cache.stride(1) != 1:
        contracts._fail(op, f"cache must be uint8 [num_pages, {stride}] with row stride {stride} "
                        f"(page size {page_size}); got {cache.dtype} {tuple(cache.shape)} strides "
                        f"{cache.stride()}")
    contracts.log2_page_size(op, page_size)


def scatter(cache: torch.Tensor, loc: torch.Tensor, data: torch.Tensor, scales: torch.Tensor,
            page_size: int, *, page_bytes: int | None = None, data_stride: int = DATA,
            scale_base: int | None = None, scale_stride: int = SCALES) -> None:
    """Write quantized tokens (``data`` uint8 ``[N, D]``, ``scales`` uint8 ``[N, K]``) at
    ``loc``: token i's data at ``page*page_bytes + offset*data_stride``, its scales at
    ``page*page_bytes + scale_base + offset*scale_stride`` (defaults: the V4 layout, page bytes
    = the cache's row length, ``scale_base = 576 * P``). Byte offsets are taken in the cache's
    whole storage, so a location outside the cache writes outside it, as a kernel would."""
    if loc.numel() == 0:
        return
    page_bytes = cache.shape[1] if page_bytes is None else page_bytes
    scale_base = page_size * DATA if scale_base is None else scale_base
    log2p = page_size.bit_length() - 1
    page = (loc >> log2p).to(torch.int64)
    off = (loc & (page_size - 1)).to(torch.int64)
    base = cache.storage_offset() + page * page_bytes  # absolute byte offsets in the storage
    d_idx = (base + off * data_stride).unsqueeze(1) + \
        torch.arange(data.shape[1], device=loc.device)
    s_idx = (base + scale_base + off * scale_stride).unsqueeze(1) + \
        torch.arange(scales.shape[1], device=loc.device)
    flat = cache.as_strided((cache.untyped_storage().nbytes(),), (1,), 0)
    flat.index_put_((d_idx.reshape(-1),), data.reshape(-1))
    flat.index_put_((s_idx.reshape(-1),), scales.reshape(-1))


def _scatter(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, page_size: int) -> None:
    if loc.numel() == 0:
        return
    data, scales = quantize(rows)
    scatter(cache, loc, data, scales, page_size)


def store(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, page_size: int) -> None:
    """Quantize and store ``rows`` at ``loc`` (see the module docstring)."""
    check_static(cache, loc, rows, page_size)
    if not capturing():
        # the value contract of every store (shape [num_pages, P, -] is all it reads)
        contracts.check_store_values(cache.new_empty((cache.shape[0], page_size, 0)), loc,
                                     op="dsv4_store")
    _scatter(cache, loc, rows, page_size)


def store_unchecked(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor,
                    page_size: int) -> None:
    """:func:`store` with the static contract only."""
    check_static(cache, loc, rows, page_size)
    _scatter(cache, loc, rows, page_size)

