"""Payload rows: the K bytes each forward writes, derived from the Case alone.

Plain Python (``random.Random`` seeded with a string, which CPython hashes with SHA-512, so the
stream is the same on every machine and Python version >= 3.2). Both the target (which turns the
bytes into a tensor) and the oracle (which keeps them as bytes) call this: it defines the input,
not the logic under test.
"""

from __future__ import annotations

import random


def rows_bytes(seed: int, step: int, fwd: int, pool: str, layer: int, n_rows: int,
               row_bytes: int) -> bytes:
    """``n_rows * row_bytes`` bytes: row r is ``out[r*row_bytes:(r+1)*row_bytes]``.

    ``step`` is the step index in the Case, ``fwd`` the forward index within the step (0 except
    for multi-step draft decode, where it is the speculative step id), ``pool`` is ``"target"``
    or ``"draft"``. Rows are independent of ``n_rows``: the first rows of a padded block equal the
    rows of the unpadded block (so eager and graph executions write identical real rows).
    """
    out = bytearray()
    for r in range(n_rows):
        out += random.Random(f"{seed}:{step}:{fwd}:{pool}:{layer}:{r}").randbytes(row_bytes)
    return bytes(out)
