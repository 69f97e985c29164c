"""Prefix hits, compressor write locations and the separate encoder-replay forward of the window /
tail path (:class:`TailPrefixMixin`, a base of :class:`features.request_window.engine.WindowPath`;
``SEMANTICS.md`` beside this file, addendum §2.3, §2.4, §5 T5 / E1 / E2, §6 A13). One decision
per method (a mutant overrides one): :meth:`~TailPrefixMixin.prefix_hit` (the late-layer cap on
a radix hit), :meth:`~TailPrefixMixin.admit_prefix`, :meth:`~TailPrefixMixin.compressor_loc` /
:meth:`~TailPrefixMixin.c4_loc` (int64 ``[rows]``), :meth:`~TailPrefixMixin.reset_hits`,
:meth:`~TailPrefixMixin.replay_span`, :meth:`~TailPrefixMixin.separate` (0.5.21/0.5.22
``run_encoder_swa_replay``: reset the hit slots, one replay EXTEND over ``req_to_token[slot, Pq
- r:Pq]`` without the ratio-1/2 source compressors, then the scheduled extend)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from swafuzz.features.parts import SGLangPart, lazy
from swafuzz.features.request_window.window import dtype_name
from swafuzz.targets.forward_mode import ForwardMode


@dataclass
class CompObs:
    """Compressor locations of one EXTEND forward, rows in batch order: ``loc`` (the
    compressors' raw write location; dtype ``dtype``), ``c4`` (the ratio-4 compressor's slot)
    and ``low_ratio`` (whether the ratio-1/2 source compressors ran)."""

    loc: list[int]
    dtype: str
    c4: list[int]
    c4_dtype: str
    low_ratio: bool


class TailPrefixMixin:
    """Base of :class:`features.request_window.engine.WindowPath` (module docstring). Uses the path's ``e``
    (engine), ``cfg``, ``W``, ``P``, ``L``, ``on``, ``slot``, ``free_slots``,
    ``reset_slot``, ``forward``, ``extend_rows`` and ``extend_forward``."""

    # -- T5: the radix hit ----------------------------------------------------------------------
    def prefix_hit(self, n: int, length: int) -> int:
        """A hit of ``n`` tokens for a request of ``length`` tokens: with a late-layer tail the
        key is limited to ``length - W`` tokens and the tree matches whole pages."""
        if not self.L:
            return n
        limit = max(0, length - self.W)
        return min(n, limit // self.P * self.P)

    def admit_prefix(self, i: int, s) -> list:
        al = self.e.allocator
        h = self.prefix_hit(s.prefix_len, s.length)
        if self.on and not self.free_slots:
            raise RuntimeError("no free request slot")
        if self.on and h % 2:
            raise ValueError("encoder SWA replay requires an even cached-prefix boundary")
        if h:
            slots = al.admit(s.rid, s.length, s.prefix_rid, h)
        else:
            slots = al.admit(s.rid, s.length)
        if not self.on:
            return self.extend_forward(i, [(s.rid, 0, slots)])
        sl = min(self.free_slots)
        self.free_slots.discard(sl)
        self.slot[s.rid] = sl
        self.reset_slot(sl)
        r = min(h, self.W)
        if r and self.cfg.separate_replay:
            return self.separate(i, [(s.rid, r, slots)], reset=False)
        return self.fold(i, [(s.rid, r, slots)])

    # -- E1: compressor locations ---------------------------------------------------------------
    @staticmethod
    def compressor_loc(loc: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        """The compressors' write locations: ``loc`` (int64 ``[rows]``) with every row outside
        ``keep`` (int64 indices of the scheduled rows; None: no folded rows) set to 0."""
        if keep is None:
            return loc
        return torch.zeros_like(loc).index_copy_(0, keep, loc[keep])

    @staticmethod
    def c4_loc(raw: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """The ratio-4 compressor's slot per row: ``raw // 4`` where the row completes a group
        of 4 (``(pos + 1) % 4 == 0``), else 0 (int64)."""
        return torch.where((positions + 1) % 4 == 0, raw // 4, torch.zeros_like(raw))

    def compressor_obs(self, fb, replay: list[bool] | None, low_ratio: bool) -> CompObs:
        keep = None
        if replay is not None and any(replay):
            keep = torch.tensor([k for k, rp in enumerate(replay) if not rp], dtype=torch.int64,
                                device=fb.out_cache_loc.device)
        loc = self.compressor_loc(fb.out_cache_loc, keep)
        c4 = self.c4_loc(loc, fb.positions)
        return CompObs(loc.tolist(), dtype_name(loc), c4.tolist(), dtype_name(c4), low_ratio)

    # -- E2: the separate replay forward ----------------------------------------------------------
    def reset_hits(self, per) -> None:
        """``_reset_windows_and_collect_hits``: every hit's slot starts its window again."""
        for rid, r, _new in per:
            if r:
                self.reset_slot(self.slot[rid])

    def replay_span(self, rid: int, r: int, new: list[int]) -> tuple[int, int]:
        """``[Pq - r, Pq)``: the hit's last ``r`` cached tokens (``Pq``: its length before the
        step's allocation)."""
        pq = len(self.e.allocator.tokens[rid]) - len(new)
        return pq - r, pq

    def separate(self, i: int, per, reset: bool = True) -> list:
        """One replay EXTEND forward (index 0) over the hits' cached tokens, then the scheduled
        extend (index 1) over the new rows only, floor 0."""
        if reset:
            self.reset_hits(per)
        al = self.e.allocator
        rows, locs, per_req, hits = [], [], [], 0
        for rid, r, new in per:
            if not r:
                continue
            a, b = self.replay_span(rid, r, new)
            rows += [(self.slot[rid], p, a) for p in range(a, b)]
            locs += al.tokens[rid][a:b]
            per_req.append(b - a)
            hits += 1
        out = [self.forward(i, ForwardMode.EXTEND, rows, locs, hits, per_req, fwd=0,
                            replay=None, low_ratio=False)]
        return out + [self.scheduled_forward(i, per)]

    def scheduled_forward(self, i: int, per):
        """The separate replay's scheduled extend (index 1): the new rows only, floor 0."""
        rows, locs, per_req, replay = self.extend_rows([(rid, 0, new) for rid, _r, new in per])
        return self.forward(i, ForwardMode.EXTEND, rows, locs, len(per), per_req, fwd=1,
                            replay=replay)


class TailPrefixSGLang(SGLangPart):
    """The ``sglang`` part: the release's prefix-hit, replay and compressor seams (0.5.23)."""

    prefix_path_mixin = lazy("swafuzz.features.request_window.tail_prefix.sglang:SGLangTailPrefixPath")
