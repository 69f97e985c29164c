"""Engine oracle: what running a Case must have done, computed in plain Python.

Independent of the code under test: this module never imports ``targets/``, ``kernels/`` or
torch. It re-implements the step semantics written in ``features/*/SEMANTICS.md``
(the contract) over Python ints, lists, sets and bytearrays:

* a shadow allocator (free page sets handing out the lowest page first, per-request token lists
  and SWA eviction frontiers) and the full->SWA mapping ``M`` as a list of ints of length
  ``full_pages*P + P + 1`` with ``M[-1] == -1``;
* the expected forwards (:class:`ForwardExp`): pool, mode, real rows, their full locations and
  SWA write targets ``M[loc]`` (after the step's allocation), the row counts on the eager path and
  under a captured graph bucket;
* the shadow SWA pools, rows only in slot order (page pads are canaries the contract keeps out
  of the pool bytes; every byte starts at ``POISON_BYTE``; each real row's payload from
  :func:`scenarios.payload.rows_bytes` is written at its target slot unless that slot is in the
  dummy page 0, whose bytes are not meaningful; layout ``"dsv4"``: the row's quantized 584-byte
  token from :mod:`oracles.dsv4_quant`);
* the state after every step (:class:`StepExp`).

:func:`expect` is also the reference answer to "is this Case valid": it raises
:class:`CaseInfeasible` for a step the contract cannot run (unknown or repeated request ids, not
enough free pages, no graph bucket, accept out of range, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swafuzz.oracles.dsv4_quant import slot_rows
from swafuzz.oracles.paths import bucket_of
from swafuzz.oracles.sharing import pages_held_by_others, reject_cut
from swafuzz.oracles.translation import translate as expected_translation
from swafuzz.scenarios.case import EXECS, OPS, POISON_BYTE, Case, Step

__all__ = [
    "AllocationRejected",
    "CaseInfeasible",
    "Expectation",
    "ForwardExp",
    "OracleError",
    "StepExp",
    "expect",
    "expected_translation",
]

_MODES = {
    "admit": "EXTEND",
    "decode": "DECODE",
    "verify": "TARGET_VERIFY",
    "draft_extend": "DRAFT_EXTEND_V2",
    "draft_decode": "DECODE",
    "idle": "IDLE",
}


class CaseInfeasible(ValueError):
    """The contract cannot run step ``step`` (``-1``: the configuration); ``reason`` says why."""

    def __init__(self, step: int, reason: str):
        where = "config" if step < 0 else f"steps[{step}]"
        super().__init__(f"{where}: infeasible: {reason}")
        self.step = step
        self.reason = reason


class AllocationRejected(ValueError):
    """An observed allocation (``observed_alloc``) that no valid allocator could have made at
    step ``step``: the page was not free, page 0, live elsewhere, or the token broke the page
    rules (a token that continues a request's last page sits at the next offset of that page on
    both sides; a token at a page boundary starts a fresh page at offset 0)."""

    def __init__(self, step: int, reason: str):
        super().__init__(f"steps[{step}]: observed allocation rejected: {reason}")
        self.step = step
        self.reason = reason


class OracleError(RuntimeError):
    """The oracle reached a state a valid Case cannot produce (a bug in the oracle or contract)."""


@dataclass
class ForwardExp:
    """One expected forward. ``targets[r]`` / ``full_locs[r]`` are for real rows r < n_real."""

    step: int
    fwd: int
    pool: str  # "target" | "draft"
    mode: str  # ForwardMode name as the backend sees it
    exec: str  # "eager" | "graph"
    n_real: int
    targets: list[int]  # expected SWA write slot per real row (= M[full_locs[r]])
    full_locs: list[int]
    rows_eager: int  # rows the eager path writes (padded count for dp_decode, tokens for idle)
    rows_graph: int | None  # rows under a captured bucket; None if no bucket fits / no graph
    #: issue 12 (draft_block): padded row k (k = r - n_real) resolves to ``pad_cycle[k % len]``
    #: (all in page 0); empty: every padded row resolves to 0
    pad_cycle: tuple[int, ...] = ()


@dataclass
class StepExp:
    """State after step ``step``. ``pools[name][layer]``: all ``(swa_pages+1)*P*row_bytes`` bytes
    of that SWA buffer; bytes of slots < P (dummy page) are poison and not meaningful."""

    step: int
    op: str
    mapping: list[int]  # M, sentinel included
    free_full_pages: list[int]  # sorted
    free_swa_pages: list[int]  # sorted
    requests: dict[int, tuple[list[int], int]]  # rid -> (full slots by position, evicted frontier)
    pools: dict[str, list[bytearray]]


@dataclass
class Expectation:
    forwards: list[ForwardExp] = field(default_factory=list)
    steps: list[StepExp] = field(default_factory=list)
    # the request window / late-layer tail path (oracles.window; None when the Case has neither)
    window: object | None = None


class _Shadow:
    """Shadow allocator, mapping and SWA pools for one Case."""

    def __init__(self, case: Case, observed_alloc: list[list[list[int]]] | None = None):
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
        self.free_swa = set(range(1, cfg.swa_pages + 1))
        self.M = [0] * (cfg.full_pages * p + p) + [-1]
        self.tokens: dict[int, list[int]] = {}
        self.evicted: dict[int, int] = {}
        self.reserved: dict[int, int] = {}  # reserved verify slots past the last token
        self.ever: set[int] = set()
        nbytes = cfg.swa_slots * cfg.row_bytes
        self.pools = {
            "target": [bytearray([POISON_BYTE]) * nbytes for _ in range(cfg.layers)],
            "draft": [bytearray([POISON_BYTE]) * nbytes for _ in range(cfg.draft_layers)],
        }
        self.exp = Expectation()
        # Observed mode: per step, the [full, swa] slot of every token the target's allocator
        # handed out, in contract order; validated and followed instead of "lowest free page".
        self.observed = observed_alloc
        self.step_i = -1
        self.pending: list[list[int]] | None = None
        from swafuzz.oracles.tail_graph import TailGraphShadow  # WindowShadow + tail graphs
        from swafuzz.oracles.window import uses_window_path

        self.win = TailGraphShadow(case) if uses_window_path(case) else None
        self.exp.window = self.win.exp if self.win is not None else None

    # ------------------------------------------------------------------ allocator
    def _live(self, i: int, rid: int) -> list[int]:
        if rid not in self.tokens:
            raise CaseInfeasible(i, f"request {rid} is not live (never admitted or finished)")
        return self.tokens[rid]

    def _check_alloc(self, i: int, plan: list[tuple[int, int]]) -> None:
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

    def _next_observed(self, rid: int, q: int) -> tuple[int, int]:
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
        full, swa = self._next_observed(rid, q)
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

    def _extend(self, rid: int, n: int) -> list[int]:
        toks = self.tokens[rid]
        new = []
        for _ in range(n):
            q = len(toks)
            if q % self.P:
                full = toks[-1] + 1  # next offset of the last full page
                swa = self.M[toks[-1]] + 1  # next offset of the last SWA page
                if self.pending is not None:
                    got = self._next_observed(rid, q)
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

    def _free_swa(self, slots: list[int]) -> None:
        for f in slots:
            s = self.M[f]
            if s > 0:
                self.free_swa.add(s // self.P)
            self.M[f] = 0

    def _alone(self, rid: int, slots: list[int]) -> list[int]:
        """The slots among ``slots`` on pages no other live request holds."""
        others = pages_held_by_others(self.tokens, rid, self.P)
        return [f for f in slots if f // self.P not in others]

    def _admit_prefix(self, i: int, s: Step) -> list[int]:
        """Prefix sharing (features/prefix_share/SEMANTICS.md "Prefix sharing"): the first n slots of a live
        request, then the new tokens; returns the new tokens' slots."""
        src, n = s.prefix_rid, s.prefix_len
        toks = self._live(i, src)
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
            self._check_alloc(i, [(s.rid, s.length - n)])
        except CaseInfeasible:
            del self.tokens[s.rid], self.evicted[s.rid], self.reserved[s.rid]
            raise
        self.ever.add(s.rid)
        return self._extend(s.rid, s.length - n)

    def _reject(self, s: Step, before: dict[int, int]) -> None:
        """Free the rejected draft tokens of a verify with ``accept`` (after its forward)."""
        freed: list[int] = []
        for rid, a in zip(s.rids, s.accept):
            keep, cut, end = reject_cut(before[rid], a, self.g.num_draft_tokens, self.P)
            toks = self.tokens[rid]
            freed += toks[cut:end]
            del toks[keep:]
            self.reserved[rid] = cut - keep
        self._free_swa(freed)
        self.free_full |= {f // self.P for f in freed}

    def _deferred_evictions(self) -> None:
        """After a finish: tokens below a live request's frontier on pages it now holds alone
        lose their SWA slots (they were skipped while shared)."""
        for rid, toks in self.tokens.items():
            self._free_swa([f for f in self._alone(rid, toks[:self.evicted[rid]])
                            if self.M[f] > 0])

    # ------------------------------------------------------------------ forwards
    def _bucket(self, n: int) -> int | None:
        # the oracle's own bucket choice (GraphConfig's helper is what the target calls)
        return bucket_of(self.g.buckets, n)

    def _graph_ok(self, i: int, ex: str, rows_graph: int | None) -> None:
        """Checked before a step allocates, so an infeasible step leaves the shadow untouched."""
        if ex == "graph" and rows_graph is None:
            raise CaseInfeasible(i, f"graph step: no captured bucket fits (buckets "
                                    f"{list(self.g.buckets)})")

    def _forward(self, i: int, fwd: int, pool: str, mode: str, ex: str, locs: list[int],
                 rows_eager: int, rows_graph: int | None) -> None:
        self._graph_ok(i, ex, rows_graph)
        targets = expected_translation(self.M, locs)
        seen: dict[int, int] = {}
        for r, t in enumerate(targets):
            if t >= self.P:
                if t in seen:
                    raise OracleError(f"step {i} fwd {fwd}: rows {seen[t]} and {r} both target "
                                      f"SWA slot {t}")
                seen[t] = r
        n = len(locs)
        rb = self.cfg.row_bytes
        for layer, buf in enumerate(self.pools[pool]):
            data = slot_rows(self.case, i, fwd, pool, layer, n)
            for r, t in enumerate(targets):
                if t >= self.P:
                    buf[t * rb:(t + 1) * rb] = data[r * rb:(r + 1) * rb]
        self.exp.forwards.append(ForwardExp(i, fwd, pool, mode, ex, n, list(targets), list(locs),
                                            rows_eager, rows_graph))

    # ------------------------------------------------------------------ DP (spec §5.4)
    def _dp_check(self, i: int, s: Step) -> tuple[int, ...] | None:
        """The other ranks' token counts of a DP step (None: no DP)."""
        if s.rank_tokens and s.op not in ("dp_decode", "verify", "draft_extend", "draft_decode"):
            raise CaseInfeasible(i, f"rank_tokens not allowed for op {s.op}")
        if len(s.rank_tokens) > 7 or any(t < 0 for t in s.rank_tokens):
            raise CaseInfeasible(i, "rank_tokens needs at most 7 counts >= 0")
        if s.dp_extend:
            if s.op not in ("dp_decode", "verify", "draft_extend"):
                raise CaseInfeasible(i, f"dp_extend not allowed for op {s.op}")
            if not s.rank_tokens or not s.rids:
                raise CaseInfeasible(i, "dp_extend needs rank_tokens and at least one rid")
        return tuple(s.rank_tokens) if s.rank_tokens else None

    @staticmethod
    def _dp_rows(dp: tuple[int, ...] | None, own: int, reqs: int, width: int,
                 whole_requests: bool) -> tuple[int, int]:
        """(rows the eager path writes, batch size the graph bucket is chosen for)."""
        if dp is None:
            return own, reqs
        top = own
        for t in dp:
            top = t if t > top else top
        per_req = (top + width - 1) // width
        if whole_requests:
            top = per_req * width
        return top, (reqs if reqs > per_req else per_req)

    @staticmethod
    def _mode(s: Step) -> str:
        return "EXTEND" if s.dp_extend else _MODES[s.op]

    # ------------------------------------------------------------------ steps
    def run_step(self, i: int, s: Step) -> None:
        self.step_i = i
        if self.observed is not None:
            # steps past the observation (the target stopped) fall back to exact predictions;
            # the checks never compare them
            self.pending = [list(p) for p in self.observed[i]] if i < len(self.observed) else None
        self._run_step(i, s)
        if self.pending:
            raise AllocationRejected(i, f"the target reported {len(self.pending)} allocated "
                                        f"tokens the step does not allocate (first "
                                        f"{self.pending[0]})")

    def _run_step(self, i: int, s: Step) -> None:
        if s.op not in OPS:
            raise CaseInfeasible(i, f"unknown op {s.op!r}")
        if s.exec not in EXECS or (s.op in ("admit", "evict", "finish", "remap")
                                   and s.exec != "eager" and not (  # issue 12: prefill graphs
                                       s.op == "admit" and self.cfg.request_window
                                       and not self.cfg.late_layer_start)):
            raise CaseInfeasible(i, f"exec {s.exec!r} not allowed for op {s.op}")
        if len(set(s.rids)) != len(s.rids):
            raise CaseInfeasible(i, f"rids {list(s.rids)} repeat a request")
        if s.op in ("decode", "verify", "draft_extend", "draft_decode") and not s.rids:
            raise CaseInfeasible(i, f"{s.op} needs at least one rid")
        if self.win is not None and self.win.run_step(self, i, s):
            return self._snapshot(i, s)
        g, ex = self.g, s.exec
        dp = self._dp_check(i, s)
        if s.dp_extend:
            ex = "eager"  # rewritten to EXTEND: no graph runs it, whatever the step asks
        if s.op == "admit":
            if s.rid is None or s.length is None or s.length < 1:
                raise CaseInfeasible(i, "admit needs rid and length >= 1")
            if s.rid in self.ever:
                raise CaseInfeasible(i, f"request {s.rid} admitted twice")
            if s.prefix_rid is not None or s.prefix_len is not None:
                locs = self._admit_prefix(i, s)
                self._forward(i, 0, "target", "EXTEND", "eager", locs, len(locs), None)
                self._snapshot(i, s)
                return
            self._check_alloc(i, [(s.rid, s.length)])
            self.ever.add(s.rid)
            self.tokens[s.rid], self.evicted[s.rid] = [], 0
            locs = self._extend(s.rid, s.length)
            self._forward(i, 0, "target", "EXTEND", "eager", locs, len(locs), None)
        elif s.op in ("decode", "verify"):
            per = 1 if s.op == "decode" else g.num_draft_tokens
            for rid in s.rids:
                self._live(i, rid)
            n = len(s.rids) * per
            rows, bs = self._dp_rows(dp, n, len(s.rids), per, True)
            b = self._bucket(bs)
            self._graph_ok(i, ex, b)
            if s.accept and (s.op != "verify" or len(s.accept) != len(s.rids) or any(
                    not 1 <= a <= per for a in s.accept)):
                raise CaseInfeasible(i, f"accept on {s.op} needs one entry per rid in [1, "
                                        f"num_draft_tokens={per}] (verify only)")
            self._check_alloc(i, [(rid, per) for rid in s.rids])
            before = {rid: len(self.tokens[rid]) for rid in s.rids}
            locs = [f for rid in s.rids for f in self._extend(rid, per)]
            self._forward(i, 0, "target", self._mode(s), ex, locs, rows,
                          None if b is None else b * per)
            if s.accept:
                self._reject(s, before)
        elif s.op == "draft_extend":
            if len(s.accept) != len(s.rids):
                raise CaseInfeasible(i, "accept needs one entry per rid")
            locs = []
            for rid, a in zip(s.rids, s.accept):
                toks = self._live(i, rid)
                if not 1 <= a <= min(g.num_draft_tokens, len(toks)):
                    raise CaseInfeasible(i, f"accept {a} for request {rid} outside [1, "
                                            f"min(num_draft_tokens={g.num_draft_tokens}, "
                                            f"length={len(toks)})]")
                locs += toks[len(toks) - a:]
            w = g.num_draft_tokens
            rows, bs = self._dp_rows(dp, len(locs), len(s.rids), w, False)
            b = self._bucket(bs)
            self._forward(i, 0, "draft", self._mode(s), ex, locs, rows,
                          None if b is None else b * w)
        elif s.op == "draft_decode":
            if g.topk < 1 or g.num_steps < 2:
                raise CaseInfeasible(i, f"draft_decode needs topk >= 1 and num_steps >= 2 (got "
                                        f"topk={g.topk}, num_steps={g.num_steps})")
            for rid in s.rids:
                self._live(i, rid)
            k, ns = g.topk, g.num_steps
            _, bs = self._dp_rows(dp, len(s.rids) * k * ns, len(s.rids), k * ns, True)
            b = self._bucket(bs)
            self._graph_ok(i, ex, b)
            self._check_alloc(i, [(rid, k * ns) for rid in s.rids])
            new = [self._extend(rid, k * ns) for rid in s.rids]  # new[b][kk*ns + st]
            for st in range(ns - 1):
                locs = [new[bi][kk * ns + st] for bi in range(len(s.rids)) for kk in range(k)]
                self._forward(i, st, "draft", "DECODE", ex, locs, bs * k,
                              None if b is None else b * k)
        elif s.op == "idle":
            if s.tokens is None or s.tokens < 1:
                raise CaseInfeasible(i, "idle needs tokens >= 1")
            self._forward(i, 0, "target", "IDLE", ex, [], s.tokens, self._bucket(s.tokens))
        elif s.op == "dp_decode":
            if not 1 <= len(s.rank_tokens) <= 7 or any(t < 0 for t in s.rank_tokens):
                raise CaseInfeasible(i, "rank_tokens needs 1..7 counts >= 0")
            padded = max(len(s.rids), *s.rank_tokens)
            if padded < 1:
                raise CaseInfeasible(i, "dp_decode with no rows on any rank")
            for rid in s.rids:
                self._live(i, rid)
            self._graph_ok(i, ex, self._bucket(padded))
            self._check_alloc(i, [(rid, 1) for rid in s.rids])
            locs = [self._extend(rid, 1)[0] for rid in s.rids]
            mode = "EXTEND" if s.dp_extend else ("DECODE" if s.rids else "IDLE")
            self._forward(i, 0, "target", mode, ex, locs, padded, self._bucket(padded))
        elif s.op == "evict":
            toks = self._live(i, s.rid)
            old = self.evicted[s.rid]
            front = max(old, len(toks) - self.cfg.window) // self.P * self.P
            if front > old:
                self._free_swa(self._alone(s.rid, toks[old:front]))
                self.evicted[s.rid] = front
        elif s.op == "remap":
            pass  # same contents in a new tensor: nothing the contract can observe changes
        elif s.op == "finish":
            toks = self._live(i, s.rid)
            pages = {f // self.P for f in self._alone(s.rid, toks)}
            # every slot of the pages it alone holds: its reserved verify slots included
            self._free_swa([pg * self.P + o for pg in sorted(pages) for o in range(self.P)])
            self.free_full |= pages
            del self.tokens[s.rid], self.evicted[s.rid]
            self.reserved.pop(s.rid, None)
            self._deferred_evictions()
        self._snapshot(i, s)

    def _snapshot(self, i: int, s: Step) -> None:
        if self.win is not None:
            self.win.snapshot(i)
        self.exp.steps.append(StepExp(
            step=i, op=s.op, mapping=list(self.M), free_full_pages=sorted(self.free_full),
            free_swa_pages=sorted(self.free_swa),
            requests={r: (list(t), self.evicted[r]) for r, t in self.tokens.items()},
            pools={k: [bytearray(b) for b in v] for k, v in self.pools.items()},
        ))


def expect(case: Case, *, pools_every_step: bool = True,
           observed_alloc: list[list[list[int]]] | None = None,
           observed_ring: list[dict | None] | None = None) -> Expectation:
    """Run ``case`` on the shadow engine. Raises :class:`CaseInfeasible` for an invalid step.

    ``observed_alloc`` (observed-allocation mode, for targets whose allocator picks pages
    itself): ``observed_alloc[i]`` lists the ``[full slot, SWA slot]`` of every token step ``i``
    allocated, in the contract's order. Each choice is validated (a fresh page was free, is not
    page 0, no live slot maps into it; a continuing token sits at the next offset of its
    request's last page on both sides) and then followed; the expected writes, mapping, free
    lists and pool bytes follow from the validated choices. An invalid choice raises
    :class:`AllocationRejected`. Steps past the end of the list use the exact policy. Nothing
    else is taken from the target.

    ``pools_every_step=False`` keeps the pool bytes only in the last :class:`StepExp` (earlier
    ones get ``pools == {}``): each snapshot is ``(layers + draft_layers) * swa_slots *
    row_bytes`` bytes, which is large for big pools.

    A Case with a per-request SWA ring (``pool.swa_ring > 0``) is answered by
    :func:`oracles.ring.expect_ring`; ``observed_ring`` (per step, the target's exposed ring
    state) then supplies the request-slot choices of an observed-allocation target.
    """
    if case.pool.swa_ring:  # per-request SWA ring: oracles.ring (addendum §2.1)
        from swafuzz.oracles.ring import expect_ring

        return expect_ring(case, pools_every_step=pools_every_step,
                           observed_alloc=observed_alloc, observed_ring=observed_ring)
    sh = _Shadow(case, observed_alloc)
    for i, s in enumerate(case.steps):
        if sh.win is not None and sh.win.exp.refused is not None:
            break  # the target must stop at the refused forward (oracles.window)
        sh.run_step(i, s)
        if not pools_every_step and i > 0:
            sh.exp.steps[i - 1].pools = {}
    return sh.exp
