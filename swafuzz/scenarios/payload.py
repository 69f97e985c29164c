"""Payload rows: the K bytes each forward writes, derived from the Case alone. ``random.Random``
seeded with a string (SHA-512 hashed), so the stream is the same on every machine and Python >=
3.2. Target and oracle both call it: it defines the input, not the logic under test.
"""

from __future__ import annotations

import random


def rows_bytes(seed: int, step: int, fwd: int, pool: str, layer: int, n_rows: int,
               row_bytes: int) -> bytes:
    """``n_rows * row_bytes`` bytes, row r at ``out[r*row_bytes:(r+1)*row_bytes]``; ``fwd`` is the
    forward within step ``step`` (the speculative step id of a multi-step draft decode, else 0),
    ``pool`` ``"target"`` / ``"draft"``. Independent of ``n_rows`` (a padded block's first rows equal
    the unpadded block's, so eager and graph write identical real rows)."""
    out = bytearray()
    for r in range(n_rows):
        out += random.Random(f"{seed}:{step}:{fwd}:{pool}:{layer}:{r}").randbytes(row_bytes)
    return bytes(out)


def dsv4_rows_bytes(seed: int, step: int, fwd: int, pool: str, layer: int, n_rows: int) -> bytes:
    """K rows of a layout-``"dsv4"`` pool: ``n_rows * 1024`` bytes, row r 512 little-endian finite
    bf16 values (448 nope, 64 rope), keyed like :func:`rows_bytes` (plus ``:dsv4``), independent of
    ``n_rows``.

    Each 64-value tile draws a kind: 1/8 signed zeros, 1/8 tiny (top exponent 2**-126..2**-87,
    subnormals included), 1/8 huge (2**73..2**127), else 2**-17..2**13; each value a random sign, an
    exponent 0..9 below the tile's top (not below subnormals) and a random 7-bit mantissa: every scale
    exponent, fp8 rounding ties and fp8 subnormals are exercised."""
    out = bytearray()
    for r in range(n_rows):
        rng = random.Random(f"{seed}:{step}:{fwd}:{pool}:{layer}:{r}:dsv4")
        for _tile in range(8):
            kind = rng.randrange(8)
            top = (rng.randrange(1, 41) if kind == 1 else rng.randrange(200, 255) if kind == 2
                   else rng.randrange(110, 141))
            for _ in range(64):
                sign = rng.getrandbits(1) << 15
                if kind == 0:
                    bits = sign
                else:
                    ex = max(0, top - rng.randrange(10))
                    bits = sign | ex << 7 | rng.getrandbits(7)
                out += bits.to_bytes(2, "little")
    return bytes(out)


def k_rows_bytes(layout: str, seed: int, step: int, fwd: int, pool: str, layer: int,
                 n_rows: int, row_bytes: int) -> bytes:
    """The K rows of one forward and layer for a pool of ``layout`` (``row_bytes``: bytes of one
    K row, used by layout ``"rows"``)."""
    if layout == "dsv4":
        return dsv4_rows_bytes(seed, step, fwd, pool, layer, n_rows)
    return rows_bytes(seed, step, fwd, pool, layer, n_rows, row_bytes)
