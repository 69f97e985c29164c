"""Reference quantizer of the DeepSeek-V4 SWA cache layout, in plain Python (ints and lists).

One token (SGLang's DSV4 pool and V4-layout stores, releases 0.5.12 and 0.5.23; spec §4.6): the
store's input row is 512 bf16 values, ``0..447`` "nope", ``448..511`` rope. The pool keeps 584
bytes per token in two regions of its page:

* a 576-byte data row at ``page * stride + offset * 576``: bytes ``0..447`` the nope part as fp8
  e4m3fn codes in 7 tiles of 64, each scaled by its tile's power-of-two scale; bytes ``448..575``
  the 64 rope values unchanged (little-endian bf16);
* 8 scale bytes at ``page * stride + 576 * P + offset * 8``: bytes ``0..6`` the tiles' UE8M0
  scales (``e + 127`` for scale ``2**e``); byte 7 the scale pad, which no store writes.

A page of ``P`` tokens: ``576 * P`` data bytes, ``8 * P`` scale bytes, pad up to the stride
``ceil(584 * P / 576) * 576`` (:func:`page_stride`).

Quantizing one nope tile ``x[0..63]`` (the Triton V4 store; every step exact in Python):
1. ``amax = max |x|``;
2. ``scale = fp32(max(amax, EPS) / 448)``, one fp32 division, round to nearest even
   (:func:`f32_div`; ``EPS`` = :data:`EPS_TRITON`, fp32 nearest ``1e-8``);
3. ``e = ceil(log2(scale))`` from the fp32 bits;
4. each element ``fp8_e4m3fn(clamp(x * 2**-e, -448, 448))``, ties to even (:func:`e4m3fn_code`;
   ``x * 2**-e`` is exact, or underflows to a signed zero either way);
5. scale byte ``(e + 127) & 0xFF``.

Where the kernels differ (proofs in ``tests/features/dsv4_layout/test_dsv4_quant.py``): the
Triton kernel's ``ceil(log2f(scale))`` could undershoot a few ulps above a power of two, which no
bf16 ``amax`` reaches (checked exhaustively against numpy's fp32 log2). The CUDA JIT store
(``fused_store_flashmla_cache``, NVIDIA default) clamps ``amax`` at ``1e-4``: a tile with ``amax <
1e-4`` gets scale byte ``105`` where Triton writes ``ceil(log2(max(amax, 1e-8) / 448)) + 127``
(``92`` for a zero tile), and tiny elements may round differently; ``eps`` selects it
(:data:`EPS_CUDA`).

Never imports torch, ``kernels`` or ``targets``.
"""

from __future__ import annotations

import math
import struct
from typing import Sequence

from swafuzz.features.parts import CheckPart, OraclePart
from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.scenarios.payload import dsv4_rows_bytes

NOPE_DIM = 448
ROPE_DIM = 64
HEAD_DIM = NOPE_DIM + ROPE_DIM  # 512 bf16 values per input row
TILE = 64
NOPE_TILES = NOPE_DIM // TILE  # 7
DATA_BYTES = NOPE_DIM + 2 * ROPE_DIM  # 576
SCALE_BYTES = NOPE_TILES + 1  # 8: 7 UE8M0 scales + 1 pad byte
TOKEN_BYTES = DATA_BYTES + SCALE_BYTES  # 584
PAGE_ALIGN = 576
FP8_MAX = 448.0
UE8M0_BIAS = 127


def f32_bits(x: float) -> int:
    """The IEEE fp32 bits of ``x`` (``x`` must be exactly representable or is rounded by
    ``struct``, round to nearest even)."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


#: The fp32 constants the Triton store is given (``EPS=1e-8``) and the CUDA store hard-codes.
EPS_TRITON = f32_value(f32_bits(1e-8))
EPS_CUDA = f32_value(f32_bits(1e-4))


def page_stride(page_size: int) -> int:
    """Bytes per SWA page: ``ceil(584 * P / 576) * 576``."""
    return -(-TOKEN_BYTES * page_size // PAGE_ALIGN) * PAGE_ALIGN


def bf16_value(bits: int) -> float:
    """The value of bf16 ``bits`` (exact: bf16 is the top half of fp32)."""
    return f32_value((bits & 0xFFFF) << 16)


def _round_half_even(n: int, shift: int) -> int:
    """``round(n / 2**shift)``, ties to even (``n >= 0``; ``shift <= 0`` is exact)."""
    if shift <= 0:
        return n << -shift
    q, r = n >> shift, n & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    return q + (1 if r > half or (r == half and q & 1) else 0)


def f32_div(a: float, b: float) -> float:
    """The IEEE fp32 quotient of two positive values, round to nearest even, for a normal
    result (``2**-126 <= a / b < 2**128``), computed on integers (no float division)."""
    if not (a > 0 and b > 0) or math.isinf(a) or math.isinf(b):
        raise ValueError(f"f32_div: positive finite operands only (got {a!r}, {b!r})")
    ma, ea = math.frexp(a)
    mb, eb = math.frexp(b)
    na, nb = int(ma * (1 << 53)), int(mb * (1 << 53))  # a = na * 2**(ea-53), same for b
    k = 60  # a / b = (q + r / nb) * 2**(ea - eb - k), q has 60 or 61 bits
    q, r = divmod(na << k, nb)
    shift = q.bit_length() - 24  # keep 24 significant bits
    hi, lo = q >> shift, q & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if lo > half or (lo == half and (r or hi & 1)):
        hi += 1
    out = math.ldexp(hi, shift + ea - eb - k)
    if not 2.0 ** -126 <= out < 2.0 ** 128:
        raise ValueError(f"f32_div: {a!r} / {b!r} is outside the fp32 normal range")
    return out


def ceil_log2_f32(x: float) -> int:
    """``ceil(log2(x))`` of a positive normal fp32 value, from its bits."""
    bits = f32_bits(x)
    exp = (bits >> 23) & 0xFF
    if exp == 0 or exp == 0xFF:
        raise ValueError(f"ceil_log2_f32: {x!r} is not a positive normal fp32 value")
    return exp - 127 + (1 if bits & 0x7FFFFF else 0)


def e4m3fn_code(v: float, saturate: bool = True) -> int:
    """The fp8 e4m3fn code (0..255) of ``v``, round to nearest, ties to even.

    Magnitudes that round past 448 (``>= 464``) and infinities give, with ``saturate`` (the
    default: the hardware's ``satfinite`` conversion, torch 2.13's cast), +-448 (``0x7E``);
    without it NaN (``0x7F`` with the sign bit, older torch casts). NaN gives ``0x7F`` with the
    sign bit. Signed zeros keep their sign. Subnormals: ``n * 2**-9`` for codes ``1..7``.
    """
    sign = 0x80 if math.copysign(1.0, v) < 0 else 0
    a = abs(v)
    if math.isnan(a):
        return sign | 0x7F
    if math.isinf(a):
        return sign | (0x7E if saturate else 0x7F)
    if a == 0.0:
        return sign
    m, e = math.frexp(a)  # a = m * 2**e, m in [0.5, 1)
    mant = int(m * (1 << 53))  # a = mant * 2**(e - 53), exact
    ex = max(e - 1, -6)  # unbiased exponent, clamped to the subnormal one
    n = _round_half_even(mant, (ex - 3) - (e - 53))  # a / 2**(ex-3), rounded
    code = ((ex + 7) << 3) + n - 8
    if code > 0x7E:
        return sign | (0x7E if saturate else 0x7F)
    return sign | code


def e4m3fn_value(code: int) -> float:
    """The value of an e4m3fn code (NaN for ``0x7F`` / ``0xFF``)."""
    sign = -1.0 if code & 0x80 else 1.0
    ex, mant = (code >> 3) & 0xF, code & 7
    if ex == 0xF and mant == 7:
        return math.nan
    if ex == 0:
        return sign * mant * 2.0 ** -9
    return sign * (8 + mant) * 2.0 ** (ex - 10)


def tile_scale_exponent(tile: Sequence[int], eps: float = EPS_TRITON) -> int:
    """``e`` of a nope tile (bf16 bits): the smallest power of two ``>= fp32(max(amax, eps) /
    448)`` (steps 1-3 of the module docstring)."""
    amax = max(abs(bf16_value(b)) for b in tile)
    if math.isnan(amax) or math.isinf(amax):
        raise ValueError("tile_scale_exponent: the row holds a non-finite bf16 value")
    return ceil_log2_f32(f32_div(max(amax, eps), FP8_MAX))


def quantize_tile(tile: Sequence[int], eps: float = EPS_TRITON) -> tuple[list[int], int]:
    """(64 fp8 codes, UE8M0 scale byte) of one nope tile given as bf16 bits."""
    e = tile_scale_exponent(tile, eps)
    codes = []
    for b in tile:
        y = bf16_value(b) * 2.0 ** -e  # exact in a Python float
        y = min(max(y, -FP8_MAX), FP8_MAX) if y == y else y
        codes.append(e4m3fn_code(y))
    return codes, (e + UE8M0_BIAS) & 0xFF


def quantize_token(row: Sequence[int], pad_byte: int, eps: float = EPS_TRITON) -> bytes:
    """The 584 bytes of one token in slot form: the 576-byte data row, then the 7 scale bytes,
    then ``pad_byte`` (the scale pad no store writes: what the pool held there).

    ``row``: 512 bf16 bit patterns (ints 0..65535), nope ``0..447`` then rope ``448..511``.
    """
    if len(row) != HEAD_DIM:
        raise ValueError(f"quantize_token: row must hold {HEAD_DIM} bf16 values (got {len(row)})")
    data = bytearray()
    scales = bytearray()
    for t in range(NOPE_TILES):
        codes, s = quantize_tile(row[t * TILE:(t + 1) * TILE], eps)
        data += bytes(codes)
        scales.append(s)
    for b in row[NOPE_DIM:]:
        data += (b & 0xFFFF).to_bytes(2, "little")
    return bytes(data) + bytes(scales) + bytes([pad_byte & 0xFF])


def bf16_row(raw: bytes) -> list[int]:
    """512 bf16 bit patterns from 1024 little-endian bytes."""
    if len(raw) != 2 * HEAD_DIM:
        raise ValueError(f"bf16_row: need {2 * HEAD_DIM} bytes (got {len(raw)})")
    return [raw[2 * i] | raw[2 * i + 1] << 8 for i in range(HEAD_DIM)]


def quantize_rows(raw: bytes, n_rows: int, pad_byte: int, eps: float = EPS_TRITON) -> bytes:
    """``n_rows * 584`` bytes: :func:`quantize_token` of each 1024-byte bf16 row of ``raw``."""
    out = bytearray()
    for r in range(n_rows):
        out += quantize_token(bf16_row(raw[r * 1024:(r + 1) * 1024]), pad_byte, eps)
    return bytes(out)


def token_from_page_bytes(page: bytes, page_size: int, offset: int) -> bytes:
    """The 584 slot-form bytes of the token at ``offset`` of one page (``page``: the page's
    ``page_stride(P)`` bytes)."""
    d = offset * DATA_BYTES
    s = page_size * DATA_BYTES + offset * SCALE_BYTES
    return bytes(page[d:d + DATA_BYTES]) + bytes(page[s:s + SCALE_BYTES])


def dsv4_slot_rows(case, step: int, fwd: int, pool: str, layer: int, n_rows: int
                   ) -> bytes | None:
    """Hook ``oracle.slot_rows``: the bytes a forward's rows must leave in their slots under
    layout ``"dsv4"``, ``n_rows * 584``: their quantized tokens (scale pad byte = the poison
    byte, which no store overwrites); None under any other layout."""
    if case.pool.layout != "dsv4":
        return None
    raw = dsv4_rows_bytes(case.payload_seed, step, fwd, pool, layer, n_rows)
    return quantize_rows(raw, n_rows, POISON_BYTE)


def describe_token_byte(k: int) -> str:
    """What byte ``k`` (0..583) of a slot-form token holds."""
    if k < NOPE_DIM:
        return f"byte {k}: fp8 nope value {k} (tile {k // TILE})"
    if k < DATA_BYTES:
        return f"byte {k}: bf16 rope value {(k - NOPE_DIM) // 2}"
    if k < TOKEN_BYTES - 1:
        return f"byte {k}: UE8M0 scale of tile {k - DATA_BYTES}"
    return f"byte {k}: the scale pad (never written)"


def first_token_difference(a: bytes, b: bytes) -> str:
    """Where two slot-form tokens first differ (``describe_token_byte``), or ``""``."""
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return describe_token_byte(k)
    return ""


def describe_slot_difference(case, want: bytes, got: bytes) -> str:
    """Hook ``check.slot_difference``: under layout ``"dsv4"``, where the expected and the
    observed token of one slot first differ (:func:`first_token_difference`); else ``""``."""
    if case.pool.layout != "dsv4":
        return ""
    return f" (DSV4 token, first difference at {first_token_difference(want, got)})"


class DSV4LayoutOracle(OraclePart):
    """The oracle part: a dsv4 pool's slots hold quantized tokens."""

    slot_rows = staticmethod(dsv4_slot_rows)


class DSV4LayoutChecks(CheckPart):
    """The checks' part: where two quantized tokens differ (a ``pool_bytes`` finding)."""

    slot_difference = staticmethod(describe_slot_difference)
