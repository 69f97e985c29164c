"""Oracle of prefix hits on the V4.1 path, compressor write locations and the separate replay
forward (plain Python; the section of ``SEMANTICS.md`` beside this file, addendum §2.3, §2.4,
§5 T5 / E1 / E2, §6 A13), called by :class:`features.request_window.oracle.WindowShadow`:
:func:`prefix_hit` (T5), :func:`compressor` (E1), :func:`admit_prefix` and :func:`run_separate`
(E2)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from swafuzz.features.parts import OraclePart
from swafuzz.oracles.errors import CaseInfeasible

__all__ = ["CompExp", "admit_prefix", "c4_loc", "compressor", "prefix_cap", "prefix_hit",
           "run_separate"]


@dataclass
class CompExp:
    """Compressor locations of one EXTEND forward: ``loc`` (int64 per row, batch order: 0 for a
    folded replay row, else the row's full location), ``c4`` (int64 per row: ``loc // 4`` when
    ``(pos + 1) % 4 == 0``, else 0) and ``low_ratio`` (the ratio-1/2 source compressors run)."""

    loc: list[int]
    c4: list[int]
    low_ratio: bool
    dtype: str = "int64"


def prefix_hit(n: int, length: int, W: int, P: int, tail: bool) -> int:
    """The prefix a radix hit of ``n`` tokens keeps for a request of ``length`` tokens: with a
    late-layer tail the key is capped at ``length - W`` tokens (the last W are re-prefilled)
    and the tree matches whole pages; without a tail the hit is ``n``."""
    if not tail:
        return n
    limit = length - W if length > W else 0
    return min(n, limit // P * P)


def c4_loc(loc: int, pos: int) -> int:
    """The ratio-4 compressor slot of a row at position ``pos`` writing at ``loc``."""
    return loc // 4 if (pos + 1) % 4 == 0 else 0


def compressor(locs: list[int], positions: list[int], replay: list[bool],
               low_ratio: bool = True) -> CompExp:
    """``replay[k]``: row k is a replay row folded into the extend (its compressor location is
    0)."""
    loc = [0 if rp else f for f, rp in zip(locs, replay)]
    return CompExp(loc, [c4_loc(f, p) for f, p in zip(loc, positions)], low_ratio)


def admit_prefix(win, sh, i: int, s) -> None:
    """``admit`` with ``prefix_rid`` / ``prefix_len`` on the window / tail path. ``win``: the
    :class:`features.request_window.oracle.WindowShadow`; ``sh``: the engine oracle's shadow allocator."""
    if s.rid is None or s.length is None or s.length < 1:
        raise CaseInfeasible(i, "admit needs rid and length >= 1")
    if s.rid in sh.ever:
        raise CaseInfeasible(i, f"request {s.rid} admitted twice")
    src, n = s.prefix_rid, s.prefix_len
    toks = sh.live(i, src)
    if n is None or not 1 <= n < s.length or n > len(toks) or n % win.P:
        raise CaseInfeasible(i, f"prefix_len {n} must be in [1, length) and <= the length "
                             f"{len(toks)} of request {src}, a multiple of P = {win.P}")
    h = prefix_hit(n, s.length, win.W, win.P, bool(win.L))
    if h == 0:  # the cap leaves no hit: a plain admit
        return win.admit(sh, i, replace(s, prefix_rid=None, prefix_len=None))
    if win.on:
        if h % 2:
            raise CaseInfeasible(i, f"encoder replay needs an even cached-prefix boundary "
                                    f"(hit {h})")
        if not win.free_slots:
            raise CaseInfeasible(i, f"no free request slot (window_slots = "
                                 f"{win.cfg.window_slots})")
        if h - min(h, win.W) < sh.evicted[src]:
            raise CaseInfeasible(i, f"request {src}: replayed tokens below its SWA frontier")
    new = sh.admit_prefix(i, replace(s, prefix_len=h))
    toks = sh.tokens[s.rid]
    if not win.on:
        positions = list(range(h, s.length))
        win.paged(sh, i, new, [len(new)], comp=compressor(new, positions, [False] * len(new)))
        return
    slot = min(win.free_slots)
    win.free_slots.discard(slot)
    win.slot[s.rid] = slot
    win.reset_slot(slot)
    r = min(h, win.W)
    if win.cfg.separate_replay:
        run_separate(win, i, [(s.rid, h, r)], toks)
        rows = [(slot, p, 0) for p in range(h, s.length)]
        win.forward(i, "EXTEND", rows, 1, [len(rows)], fwd=1,
                    comp=compressor(new, list(range(h, s.length)), [False] * len(new)))
        return
    rows = [(slot, p, h - r) for p in range(h - r, s.length)]
    locs = toks[h - r:]
    win.forward(i, "EXTEND", rows, 1, [len(rows)],
                comp=compressor(locs, list(range(h - r, s.length)), [True] * r
                                + [False] * (len(locs) - r)))


def run_separate(win, i: int, hits: list[tuple[int, int, int]], toks_of) -> None:
    """The separate replay forward (forward index 0) of a step's hits ``(rid, Pq, r)`` in batch
    order: rows ``Pq - r .. Pq - 1`` at the cached full locations, floor ``Pq - r``, one group
    per hit, compressors at those locations, ratio-1/2 sources off. ``toks_of``: the token list
    of the (single) admitted request, or a dict rid -> token list."""
    rows, locs, pos, per = [], [], [], []
    for rid, pq, r in hits:
        toks = toks_of[rid] if isinstance(toks_of, dict) else toks_of
        rows += [(win.slot[rid], p, pq - r) for p in range(pq - r, pq)]
        locs += toks[pq - r:pq]
        pos += range(pq - r, pq)
        per.append(r)
    win.forward(i, "EXTEND", rows, len(hits), per, fwd=0,
                comp=compressor(locs, pos, [False] * len(locs), low_ratio=False))


def prefix_cap(case, s, n: int) -> int:
    """Hook ``oracle.prefix_cap``: the tokens of an ``admit``'s ``n``-token prefix hit the Case
    shares after the late-layer re-prefill cap (T5; :func:`prefix_hit`). For the
    Case-arithmetic oracles (:func:`oracles.sharing.effective_prefix`)."""
    cfg = case.pool
    return prefix_hit(n, s.length, cfg.window, cfg.page_size, bool(cfg.late_layer_start))


class TailPrefixOracle(OraclePart):
    """The oracle part: the tail's re-prefill cap on prefix hits."""

    prefix_cap = staticmethod(prefix_cap)
