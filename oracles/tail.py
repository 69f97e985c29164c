"""Tail oracle: which rows the late layers of an EXTEND forward run (addendum §2.4, T3).

Plain Python, independent of the code under test.
"""

from __future__ import annotations

__all__ = ["tail_rows"]


def tail_rows(per_req: list[int], W: int) -> tuple[list[int], list[int]]:
    """``per_req``: rows of each request in the forward, batch order (each request's rows are
    consecutive). Returns (indices into the forward's rows of every tail row, in order; tail
    length per request): each request's last ``min(W, n)`` rows."""
    idx: list[int] = []
    lens: list[int] = []
    start = 0
    for n in per_req:
        t = min(W, n)
        idx += range(start + n - t, start + n)
        lens.append(t)
        start += n
    return idx, lens
