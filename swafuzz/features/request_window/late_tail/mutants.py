"""Mutants of the late-layer tail (feature ``late_tail``: the late layers run each request's last
min(W, extend_len) rows; addendum §2.4, §5 T1/T3, §6 A3): :meth:`WindowPath.tail` overridden
(:mod:`features.request_window.mutants`); kind ``late_tail``."""

from __future__ import annotations

import torch

from swafuzz.features.request_window.engine import WindowPath
from swafuzz.features.request_window.window import tail_layout
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _TailFirstRowsPath(WindowPath):
    def tail(self, per_req, seq_after):
        idx, lens, floor = tail_layout(per_req, seq_after, self.W, self.device)
        first, start = [], 0
        for n in per_req:
            first += range(start, start + min(self.W, n))
            start += n
        return torch.tensor(first, dtype=torch.int64, device=self.device), lens, floor


@mutant("tail_first_rows", ("late_tail",), "addendum §2.4 (late layers run each request's "
        "last min(128, extend_len) rows, late_layer_tail_layout) and §5 T3",
        expected=("tail", "pool_bytes", "window"))
class TailFirstRows(UnifiedEngine):
    """The late layers run each request's first min(W, n) rows instead of its last (T3)."""

    step_path_cls = _TailFirstRowsPath


class _TailLenUncheckedPath(WindowPath):
    def tail(self, per_req, seq_after):
        idx, start = [], 0
        for n in per_req:
            idx += range(start + n - self.W, start + n)
            start += n
        floors = [max(0, s - self.W) for s in seq_after for _ in range(self.W)]
        total = sum(per_req)
        return (torch.tensor(idx, dtype=torch.int64, device=self.device) % total,
                [self.W] * len(per_req),
                torch.tensor(floors, dtype=torch.int64, device=self.device))


@mutant("tail_len_unchecked", ("late_tail",), "addendum §6 A3 (unchecked tail length) and §5 "
        "T1 (len(tail loc) == sum of tail lens == min(128, extend_len) per request)",
        expected=("contracts", "tail", "window"))
class TailLenUnchecked(UnifiedEngine):
    """The tail length min(W, n) is not clamped to the extend: W rows per request, those before
    a short request's extend taken from the previous request or wrapped (A3, T1)."""

    step_path_cls = _TailLenUncheckedPath
