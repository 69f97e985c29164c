"""The engine oracle's shadow allocator: pages, tokens, the full->SWA mapping and the SWA pools.

Plain Python (never torch, ``targets/`` or ``kernels/``). :class:`Allocator` holds one Case's
state under ``features/dense/SEMANTICS.md``: free page sets (lowest first, or in observed mode the
target's validated choices), per-request tokens and SWA frontiers, ``M`` (length ``full_pages*P
+ P + 1``, ``M[-1] == -1``), prefix sharing, rejected draft tokens, deferred evictions. Forwards
and step semantics: :class:`oracles.shadow.Shadow`.
"""

from __future__ import annotations

from typing import Any, Callable

from swafuzz.oracles.errors import AllocationRejected, CaseInfeasible, OracleError
from swafuzz.oracles.expectation import Expectation
from swafuzz.oracles.sharing import pages_held_by_others, reject_cut
from swafuzz.scenarios.case import POISON_BYTE, Case, Step
from swafuzz.scenarios.paged import PagedBytes, sparse_layer

__all__ = ["Allocator"]


class Allocator:
    """Shadow allocator, mapping and SWA pools for one Case.

    ``window_of``: builds the Case's window / tail shadow (None: the Case has no such path);
    called after the configuration checks, its ``exp`` becomes the Expectation's channel the
    shadow names (its ``channel``)."""

    def __init__(self, case: Case, observed_alloc: list[list[list[int]]] | None = None,
                 window_of: Callable[[Case], Any] | None = None):
        cfg, g = case.pool, case.graph
        p = cfg.page_size
        if p < 1 or p > 256 or p & (p - 1):
            raise CaseInfeasible(-1, f"pool.page_size = {p} is not a power of two in [1, 256]")
        for name in ("full_pages", "swa_pages", "window", "layers", "draft_layers", "row_width"):
            if getattr(cfg, name) < 1:
                raise CaseInfeasible(-1, f"pool.{name} = {getattr(cfg, name)} must be >= 1")
        if not g.buckets or any(b < 1 for b in g.buckets) or any(
                a >= b for a, b in zip(g.buckets, g.buckets[1:])):
            raise CaseInfeasible(-1, f"graph.buckets = {list(g.buckets)} must be strictly "
                                     "increasing sizes >= 1")
        if cfg.page_pad_bytes < 0 or cfg.page_pad_bytes % (cfg.row_bytes // cfg.row_width):
            raise CaseInfeasible(-1, f"pool.page_pad_bytes = {cfg.page_pad_bytes} must be >= 0 "
                                     "and a multiple of the row dtype's item size")
        if g.topk < 0 or g.num_steps < 1 or g.num_draft_tokens < 1:
            raise CaseInfeasible(-1, "graph: need topk >= 0, num_steps >= 1, num_draft_tokens >= 1")
        self.case, self.cfg, self.g, self.P = case, cfg, g, p
        self.free_full = set(range(1, cfg.full_pages + 1))
        self.free_swa = set(range(1 + cfg.swa_held_pages, cfg.swa_pages + 1))  # held: never free
        self.M = [0] * (cfg.full_pages * p + p) + [-1]
        self.tokens: dict[int, list[int]] = {}
        self.evicted: dict[int, int] = {}
        self.reserved: dict[int, int] = {}  # reserved verify slots past the last token
        self.ever: set[int] = set()
        self.pools = {"target": [self.layer() for _ in range(cfg.layers)],
                      "draft": [self.layer() for _ in range(cfg.draft_layers)]}
        self.exp = Expectation()
        # Observed mode: per step, the [full, swa] slot of every token the target's allocator
        # handed out, in contract order; validated and followed instead of "lowest free page".
        self.observed = observed_alloc
        self.step_i = -1
        self.pending: list[list[int]] | None = None
        self.win = window_of(case) if window_of is not None else None
        if self.win is not None:
            self.exp.channels[self.win.channel] = self.win.exp

    def layer(self):
        """One shadow SWA layer, all poison: a bytearray, or for a layer of
        :data:`scenarios.paged.SPARSE_LAYER_BYTES` or more a :class:`scenarios.paged.PagedBytes`
        of ``P * row_bytes`` pages (the pages written are stored)."""
        cfg = self.cfg
        nbytes = cfg.swa_slots * cfg.row_bytes
        if sparse_layer(nbytes):
            return PagedBytes(nbytes, cfg.page_size * cfg.row_bytes, POISON_BYTE)
        return bytearray([POISON_BYTE]) * nbytes

    def live(self, i: int, rid: int) -> list[int]:
        """The token list of live request ``rid`` (infeasible when it is not live)."""
        if rid not in self.tokens:
            raise CaseInfeasible(i, f"request {rid} is not live (never admitted or finished)")
        return self.tokens[rid]

    def check_alloc(self, i: int, plan: list[tuple[int, int]]) -> None:
        """``plan``: (rid, n) in order. Checks pages on both sides and that each last page is
        still mapped on the SWA side before anything is taken."""
        need = 0
        for rid, n in plan:
            toks = self.tokens.get(rid, [])
            ln = len(toks)
            if ln % self.P and self.M[toks[-1]] <= 0:
                raise CaseInfeasible(i, f"request {rid}: last page (position {ln - 1}, full slot "
                                        f"{toks[-1]}) has no SWA page to extend")
            need += sum(1 for q in range(ln, ln + n) if q % self.P == 0)
        for side, free in (("full", self.free_full), ("swa", self.free_swa)):
            if need > len(free):
                raise CaseInfeasible(i, f"needs {need} fresh {side} pages, {len(free)} free")

    def next_observed(self, rid: int, q: int) -> tuple[int, int]:
        """The next ``[full, swa]`` pair the target reported for this step (observed mode)."""
        if not self.pending:
            raise AllocationRejected(self.step_i, f"request {rid} position {q} needs a slot but "
                                     "the target reported no further allocated token")
        pair = self.pending.pop(0)
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2
                and all(isinstance(x, int) for x in pair)):
            raise AllocationRejected(self.step_i, f"entry {pair!r} is not a [full, swa] pair")
        return pair[0], pair[1]

    def _fresh_pages(self, rid: int, q: int) -> tuple[int, int]:
        """The (full page, SWA page) a token at a page boundary starts: the lowest free pages
        (exact mode) or the target's validated choice (observed mode)."""
        if self.pending is None:
            return min(self.free_full), min(self.free_swa)
        full, swa = self.next_observed(rid, q)
        P, i = self.P, self.step_i
        where = f"request {rid} position {q} (a page boundary)"
        if full % P or swa % P:
            raise AllocationRejected(i, f"{where}: got full slot {full} / SWA slot {swa}, which "
                                        f"are not at offset 0 of a page (page size {P})")
        fp, sp = full // P, swa // P
        if fp == 0 or sp == 0:
            raise AllocationRejected(i, f"{where}: got full page {fp} / SWA page {sp}: page 0 is "
                                        "the dummy page and is never allocated")
        if fp not in self.free_full:
            owner = [r for r, t in self.tokens.items() if any(f // P == fp for f in t)]
            raise AllocationRejected(i, f"{where}: full page {fp} was not free"
                                        + (f" (held by request {owner[0]})" if owner else
                                           f" (pages are 1..{self.cfg.full_pages})"))
        if sp not in self.free_swa:
            live = [f for f, s in enumerate(self.M[:-1]) if s > 0 and s // P == sp]
            raise AllocationRejected(i, f"{where}: SWA page {sp} was not free"
                                        + (f" (live: M[{live[0]}] = {self.M[live[0]]})" if live
                                           else f" (pages are 1..{self.cfg.swa_pages})"))
        if any(s > 0 and s // P == sp for s in self.M[:-1]):
            raise AllocationRejected(i, f"{where}: SWA page {sp} is still mapped by a live slot")
        return fp, sp

    def extend(self, rid: int, n: int) -> list[int]:
        """Allocate ``n`` tokens to live request ``rid``; returns their full slots."""
        toks = self.tokens[rid]
        new = []
        for _ in range(n):
            q = len(toks)
            if q % self.P:
                full = toks[-1] + 1  # next offset of the last full page
                swa = self.M[toks[-1]] + 1  # next offset of the last SWA page
                if self.pending is not None:
                    got = self.next_observed(rid, q)
                    if got != (full, swa):
                        raise AllocationRejected(
                            self.step_i, f"request {rid} position {q} continues its last page: "
                            f"expected full slot {full} / SWA slot {swa}, the allocator gave "
                            f"{got[0]} / {got[1]}")
            else:
                fp, sp = self._fresh_pages(rid, q)
                self.free_full.discard(fp)
                self.free_swa.discard(sp)
                full, swa = fp * self.P, sp * self.P
            if self.reserved.get(rid, 0) and q % self.P:
                self.reserved[rid] -= 1  # a reserved verify slot: still mapped to swa
                if self.M[full] != swa:
                    raise OracleError(f"reserved full slot {full} maps to {self.M[full]}, "
                                      f"not {swa}")
            elif self.M[full] != 0:
                raise OracleError(f"fresh full slot {full} already mapped to {self.M[full]}")
            self.M[full] = swa
            toks.append(full)
            new.append(full)
        return new

    def free_swa_slots(self, slots: list[int]) -> None:
        """Unmap ``slots`` (full slots) and free the SWA pages they mapped into."""
        for f in slots:
            s = self.M[f]
            if s > 0:
                self.free_swa.add(s // self.P)
            self.M[f] = 0

    def alone(self, rid: int, slots: list[int]) -> list[int]:
        """The slots among ``slots`` on pages no other live request holds."""
        others = pages_held_by_others(self.tokens, rid, self.P)
        return [f for f in slots if f // self.P not in others]

    def admit_prefix(self, i: int, s: Step) -> list[int]:
        """Prefix sharing (features/prefix_share/SEMANTICS.md "Prefix sharing"): the first n slots of a live
        request, then the new tokens; returns the new tokens' slots."""
        src, n = s.prefix_rid, s.prefix_len
        toks = self.live(i, src)
        if n is None or not 1 <= n < s.length or n > len(toks) or n % self.P:
            raise CaseInfeasible(i, f"prefix_len {n} must be in [1, length) and <= the length "
                                    f"{len(toks)} of request {src}, a multiple of P = {self.P}")
        ev = self.evicted[src]
        if ev and n - ev < self.cfg.window:
            raise CaseInfeasible(i, f"prefix of request {src} has only {n - ev} tokens past its "
                                    f"SWA frontier {ev}, fewer than the window "
                                    f"{self.cfg.window}: the radix cache would not match it")
        self.tokens[s.rid], self.evicted[s.rid] = list(toks[:n]), min(ev, n)
        self.reserved[s.rid] = 0
        try:
            self.check_alloc(i, [(s.rid, s.length - n)])
        except CaseInfeasible:
            del self.tokens[s.rid], self.evicted[s.rid], self.reserved[s.rid]
            raise
        self.ever.add(s.rid)
        return self.extend(s.rid, s.length - n)

    def reject(self, s: Step, before: dict[int, int]) -> None:
        """Free the rejected draft tokens of a verify with ``accept`` (after its forward)."""
        freed: list[int] = []
        for rid, a in zip(s.rids, s.accept):
            keep, cut, end = reject_cut(before[rid], a, self.g.num_draft_tokens, self.P)
            toks = self.tokens[rid]
            freed += toks[cut:end]
            del toks[keep:]
            self.reserved[rid] = cut - keep
        self.free_swa_slots(freed)
        self.free_full |= {f // self.P for f in freed}

    def deferred_evictions(self) -> None:
        """After a finish: tokens below a live request's frontier on pages it now holds alone
        lose their SWA slots (they were skipped while shared)."""
        for rid, toks in self.tokens.items():
            self.free_swa_slots([f for f in self.alone(rid, toks[:self.evicted[rid]])
                                 if self.M[f] > 0])
