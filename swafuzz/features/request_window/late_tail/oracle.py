"""Tail oracle: which rows the late layers of an EXTEND forward run (addendum §2.4, T3).

Plain Python, independent of the code under test.
"""

from __future__ import annotations

__all__ = ["tail_floors", "tail_rows"]


def tail_rows(per_req: list[int], W: int) -> tuple[list[int], list[int]]:
    """``per_req``: rows of each request in the forward, batch order (each request's rows are
    consecutive). Returns (indices into the forward's rows of every tail row, in order; tail
    length per request): each request's last ``min(W, n)`` rows."""
    return tail_floors(per_req, [0] * len(per_req), W)[:2]


def tail_floors(per_req: list[int], seq_after: list[int], W: int,
                whole: list[bool] | None = None) -> tuple[list[int], list[int], list[int]]:
    """(row indices, tail lengths, read floor per tail row): the plain tail of
    :func:`tail_rows` with floor ``max(0, seq - W)``; a request marked ``whole`` (it needs
    every prompt row: logprobs, full hidden states) runs its whole extend with its plain
    window, floor ``max(0, seq - n - W)`` (addendum §2.4)."""
    idx: list[int] = []
    lens: list[int] = []
    floors: list[int] = []
    start = 0
    for b, (n, s) in enumerate(zip(per_req, seq_after)):
        w = bool(whole and whole[b])
        t = n if w else min(W, n)
        idx += range(start + n - t, start + n)
        lens.append(t)
        floors += [max(0, s - t - W) if w else max(0, s - W)] * t
        start += n
    return idx, lens, floors
