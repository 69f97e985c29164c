"""The engine oracle's step semantics: forwards, pool writes and state snapshots of one Case.

Plain Python (never torch, ``targets/`` or ``kernels/``). :class:`Shadow` is the allocator of
:mod:`oracles.allocator` plus what each op of ``features/dense/SEMANTICS.md`` does on it: the
expected forwards (:class:`oracles.expectation.ForwardExp`), the SWA pool bytes they leave
(:func:`slot_rows`) and the state after every step (:class:`oracles.expectation.StepExp`). Steps
the window / tail path claims go to its shadow (``self.win``) first; :meth:`Shadow.run` runs a
Case. Subclasses (``RingShadow``) change the allocator rules, :meth:`Shadow.targets_of` and
:meth:`Shadow.payload`, not the forward loop.
"""

from __future__ import annotations

from functools import partial

from swafuzz import features
from swafuzz.oracles.allocator import Allocator
from swafuzz.oracles.errors import AllocationRejected, CaseInfeasible, OracleError
from swafuzz.oracles.expectation import Expectation, ForwardExp, StepExp
from swafuzz.oracles.paths import batch_pad, bucket_of, rewritten
from swafuzz.oracles.translation import translate as expected_translation
from swafuzz.scenarios.case import EXECS, OPS, STEP_OPS, Step
from swafuzz.scenarios.payload import rows_bytes

__all__ = ["MODES", "Shadow"]

#: the ForwardMode name each op's forward runs under (unless a feature rewrites the batch:
#: :func:`oracles.paths.rewritten`)
MODES = {
    "admit": "EXTEND",
    "decode": "DECODE",
    "verify": "TARGET_VERIFY",
    "draft_extend": "DRAFT_EXTEND_V2",
    "draft_decode": "DECODE",
    "idle": "IDLE",
}


def slot_rows(case, step: int, fwd: int, pool: str, layer: int, n_rows: int) -> bytes:
    """The bytes a forward's rows must leave in their slots, ``n_rows * row_bytes``: what the
    feature owning the Case's cache layout says (slot ``OraclePart.slot_rows``: the DSV4
    layout's quantized 584-byte tokens), else the payload rows themselves (layout ``"rows"``)."""
    data = features.first("oracle", "slot_rows", case, step, fwd, pool, layer, n_rows)
    if data is not None:
        return data
    return rows_bytes(case.payload_seed, step, fwd, pool, layer, n_rows, case.pool.row_bytes)


class Shadow(Allocator):
    """The shadow engine of one Case: allocator state plus the step semantics."""

    #: what a write target is, in an :class:`OracleError` about two rows sharing one
    TARGET = "SWA slot"

    @property
    def graph_admit(self) -> bool:
        """Whether an admit may run in a graph on this pool (a feature's
        ``OraclePart.graph_admit`` says so: breakable prefill graphs)."""
        return any(p.graph_admit(self.cfg) for p in features.parts("oracle"))

    # ------------------------------------------------------------------ forwards
    def bucket(self, n: int) -> int | None:
        # the oracle's own bucket choice (GraphConfig's helper is what the target calls)
        return bucket_of(self.g.buckets, n)

    def graph_ok(self, i: int, ex: str, rows_graph: int | None) -> None:
        """Checked before a step allocates, so an infeasible step leaves the shadow untouched."""
        if ex == "graph" and rows_graph is None:
            raise CaseInfeasible(i, f"graph step: no captured bucket fits (buckets "
                                    f"{list(self.g.buckets)})")

    def targets_of(self, locs: list[int]) -> list[int]:
        """The write target of every real row (full location ``locs[r]``): ``M[loc]``."""
        return expected_translation(self.M, locs)

    def batch_of(self, rows: list[tuple[int, int]]) -> None:
        """The last expected forward's batch: request ``rid`` of ``rows`` (in batch order)
        prepares its last ``count`` tokens: its length and those tokens' positions."""
        f = self.exp.forwards[-1]
        f.seq_lens = [len(self.tokens[rid]) for rid, _ in rows]
        f.positions = [p for rid, c in rows
                       for p in range(len(self.tokens[rid]) - c, len(self.tokens[rid]))]

    def payload(self, i: int, fwd: int, pool: str, layer: int, n: int) -> bytes:
        """The bytes ``n`` rows of this forward and layer leave in their slots."""
        return slot_rows(self.case, i, fwd, pool, layer, n)

    def store(self, i: int, fwd: int, pool: str, targets: list[int]) -> None:
        """Write the forward's rows into shadow pool ``pool`` at their targets ``>= P`` (page 0
        is never compared); two rows with one target are an :class:`OracleError`."""
        seen: dict[int, int] = {}
        for r, t in enumerate(targets):
            if t >= self.P:
                if t in seen:
                    raise OracleError(f"step {i} fwd {fwd}: rows {seen[t]} and {r} both target "
                                      f"{self.TARGET} {t}")
                seen[t] = r
        n = len(targets)
        rb = self.cfg.row_bytes
        for layer, buf in enumerate(self.pools[pool]):
            data = self.payload(i, fwd, pool, layer, n)
            for r, t in enumerate(targets):
                if t >= self.P:
                    buf[t * rb:(t + 1) * rb] = data[r * rb:(r + 1) * rb]

    def forward(self, i: int, fwd: int, pool: str, mode: str, ex: str, locs: list[int],
                rows_eager: int, rows_graph: int | None) -> None:
        """One expected forward of the real rows at ``locs``: writes and records it."""
        self.graph_ok(i, ex, rows_graph)
        targets = self.targets_of(locs)
        self.store(i, fwd, pool, targets)
        self.exp.forwards.append(ForwardExp(i, fwd, pool, mode, ex, len(locs), list(targets),
                                            list(locs), rows_eager, rows_graph))

    # ------------------------------------------------------------------ steps
    def run(self, pools_every_step: bool = True) -> Expectation:
        """Run every step of the Case (stopping at a refused window forward)."""
        for i, s in enumerate(self.case.steps):
            if self.refused():
                break  # the target must stop at the refused forward (features.request_window.oracle)
            self.run_step(i, s)
            if not pools_every_step and i > 0:
                self.exp.steps[i - 1].pools = {}
        return self.exp

    def refused(self) -> bool:
        """Whether the window path refused a forward (nothing runs after it)."""
        return self.win is not None and self.win.exp.refused is not None

    def run_step(self, i: int, s: Step) -> None:
        """Step ``i``, with the target's allocation of that step in observed mode."""
        self.step_i = i
        if self.observed is not None:
            # steps past the observation (the target stopped) fall back to exact predictions;
            # the checks never compare them
            self.pending = [list(p) for p in self.observed[i]] if i < len(self.observed) else None
        self.run_op(i, s)
        if self.pending:
            raise AllocationRejected(i, f"the target reported {len(self.pending)} allocated "
                                        f"tokens the step does not allocate (first "
                                        f"{self.pending[0]})")

    def run_op(self, i: int, s: Step) -> None:
        """What op ``s.op`` does (features/*/SEMANTICS.md), then the state snapshot. An op a
        feature owns does what its hook ``oracle.step_ops`` says (nothing, without one)."""
        if s.op not in OPS:
            raise CaseInfeasible(i, f"unknown op {s.op!r}")
        eager_only = s.op in ("admit", "evict", "finish") or (
            s.op in STEP_OPS and "exec" not in STEP_OPS[s.op].fields)
        if s.exec not in EXECS or (eager_only and s.exec != "eager" and not (
                s.op == "admit" and self.graph_admit)):
            raise CaseInfeasible(i, f"exec {s.exec!r} not allowed for op {s.op}")
        if len(set(s.rids)) != len(s.rids):
            raise CaseInfeasible(i, f"rids {list(s.rids)} repeat a request")
        if s.op in ("decode", "verify", "draft_extend", "draft_decode") and not s.rids:
            raise CaseInfeasible(i, f"{s.op} needs at least one rid")
        if self.win is not None and self.win.run_step(self, i, s):
            return self.snapshot(i, s)
        for part in features.parts("oracle"):  # e.g. DP's rank_tokens
            part.step_check(i, s)
        ex = "eager" if rewritten(s) else s.exec  # a rewritten batch: no graph runs it
        op = getattr(self, "_op_" + s.op, None)
        if op is None:  # an op a feature owns; ops of other paths (extend, ...): no-ops here
            op = next((partial(ops[s.op], self) for ops in features.hooks("oracle.step_ops")
                       if s.op in ops), None)
        if op is not None:
            op(i, s, ex)
        self.snapshot(i, s)

    def _mode(self, s: Step) -> str:
        return rewritten(s) or MODES[s.op]

    def _op_admit(self, i: int, s: Step, ex: str) -> None:
        if s.rid is None or s.length is None or s.length < 1:
            raise CaseInfeasible(i, "admit needs rid and length >= 1")
        if s.rid in self.ever:
            raise CaseInfeasible(i, f"request {s.rid} admitted twice")
        if s.prefix_rid is not None or s.prefix_len is not None:
            locs = self.admit_prefix(i, s)
        else:
            self.check_alloc(i, [(s.rid, s.length)])
            self.ever.add(s.rid)
            self.tokens[s.rid], self.evicted[s.rid] = [], 0
            locs = self.extend(s.rid, s.length)
        self.forward(i, 0, "target", "EXTEND", "eager", locs, len(locs), None)
        self.batch_of([(s.rid, len(locs))])

    def _op_decode(self, i: int, s: Step, ex: str) -> None:
        g = self.g
        per = 1 if s.op == "decode" else g.num_draft_tokens
        for rid in s.rids:
            self.live(i, rid)
        rows, bs, _ = batch_pad(s, len(s.rids) * per, len(s.rids), per, True)
        b = self.bucket(bs)
        self.graph_ok(i, ex, b)
        if s.accept and (s.op != "verify" or len(s.accept) != len(s.rids) or any(
                not 1 <= a <= per for a in s.accept)):
            raise CaseInfeasible(i, f"accept on {s.op} needs one entry per rid in [1, "
                                    f"num_draft_tokens={per}] (verify only)")
        self.check_alloc(i, [(rid, per) for rid in s.rids])
        before = {rid: len(self.tokens[rid]) for rid in s.rids}
        locs = [f for rid in s.rids for f in self.extend(rid, per)]
        self.forward(i, 0, "target", self._mode(s), ex, locs, rows,
                     None if b is None else b * per)
        self.batch_of([(rid, per) for rid in s.rids])
        if s.accept:
            self.reject(s, before)

    _op_verify = _op_decode

    def _op_draft_extend(self, i: int, s: Step, ex: str) -> None:
        g = self.g
        if len(s.accept) != len(s.rids):
            raise CaseInfeasible(i, "accept needs one entry per rid")
        locs = []
        for rid, a in zip(s.rids, s.accept):
            toks = self.live(i, rid)
            if not 1 <= a <= min(g.num_draft_tokens, len(toks)):
                raise CaseInfeasible(i, f"accept {a} for request {rid} outside [1, "
                                        f"min(num_draft_tokens={g.num_draft_tokens}, "
                                        f"length={len(toks)})]")
            locs += toks[len(toks) - a:]
        w = g.num_draft_tokens
        rows, bs, _ = batch_pad(s, len(locs), len(s.rids), w, False)
        b = self.bucket(bs)
        self.forward(i, 0, "draft", self._mode(s), ex, locs, rows, None if b is None else b * w)
        self.batch_of(list(zip(s.rids, s.accept)))

    def _op_draft_decode(self, i: int, s: Step, ex: str) -> None:
        g = self.g
        if g.topk < 1 or g.num_steps < 2:
            raise CaseInfeasible(i, f"draft_decode needs topk >= 1 and num_steps >= 2 (got "
                                    f"topk={g.topk}, num_steps={g.num_steps})")
        for rid in s.rids:
            self.live(i, rid)
        k, ns = g.topk, g.num_steps
        _, bs, _ = batch_pad(s, len(s.rids) * k * ns, len(s.rids), k * ns, True)
        b = self.bucket(bs)
        self.graph_ok(i, ex, b)
        self.check_alloc(i, [(rid, k * ns) for rid in s.rids])
        new = [self.extend(rid, k * ns) for rid in s.rids]  # new[b][kk*ns + st]
        whole = [f for per_req in new for f in per_req]  # the batch's [bs, topk, steps] layout
        for st in range(ns - 1):
            locs = [new[bi][kk * ns + st] for bi in range(len(s.rids)) for kk in range(k)]
            self.forward(i, st, "draft", "DECODE", ex, locs, bs * k, None if b is None else b * k)
            self.exp.forwards[-1].prep_locs = list(whole)
            self.batch_of([(rid, k * ns) for rid in s.rids])  # every step: the whole batch

    def _op_idle(self, i: int, s: Step, ex: str) -> None:
        if s.tokens is None or s.tokens < 1:
            raise CaseInfeasible(i, "idle needs tokens >= 1")
        self.forward(i, 0, "target", "IDLE", ex, [], s.tokens, self.bucket(s.tokens))
        self.batch_of([])  # dummy requests only: length 1, position 0

    def _op_evict(self, i: int, s: Step, ex: str) -> None:
        toks = self.live(i, s.rid)
        old = self.evicted[s.rid]
        front = max(old, len(toks) - self.cfg.window) // self.P * self.P
        if front > old:
            self.free_swa_slots(self.alone(s.rid, toks[old:front]))
            self.evicted[s.rid] = front

    def _op_finish(self, i: int, s: Step, ex: str) -> None:
        toks = self.live(i, s.rid)
        pages = {f // self.P for f in self.alone(s.rid, toks)}
        # every slot of the pages it alone holds: its reserved verify slots included
        self.free_swa_slots([pg * self.P + o for pg in sorted(pages) for o in range(self.P)])
        self.free_full |= pages
        del self.tokens[s.rid], self.evicted[s.rid]
        self.reserved.pop(s.rid, None)
        self.deferred_evictions()

    def snapshot(self, i: int, s: Step) -> None:
        """Record the state after step ``i`` (and the window path's)."""
        if self.win is not None:
            self.win.snapshot(i)
        self.exp.steps.append(StepExp(
            step=i, op=s.op, mapping=list(self.M), free_full_pages=sorted(self.free_full),
            free_swa_pages=sorted(self.free_swa),
            requests={r: (list(t), self.evicted[r]) for r, t in self.tokens.items()},
            pools={k: [b.copy() for b in v] for k, v in self.pools.items()},
        ))
