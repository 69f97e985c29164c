"""Window oracle: the V4.1 request window, encoder replay and the late-layer tail, from the Case.

Plain Python over ints, lists and bytearrays (no torch, never imports ``targets/`` or
``kernels/``). It implements the "Request window, encoder replay and late-layer tail" section
of ``features/request_window/SEMANTICS.md`` (addendum §2.2-§2.4) on top of the engine oracle's shadow
allocator (:class:`oracles.engine._Shadow`, passed in as ``sh``; only its allocator methods,
``M`` and shadow pools are used):

* :class:`WindowShadow` owns the request slots, the per-layer ring bytes and tags, and the
  single-layer workspace; :meth:`WindowShadow.run_step` takes the steps the window / tail path
  claims and returns False for the others (the engine oracle runs them);
* :func:`layout` is the layout contract (runs, ``write_loc``, history rows with their source
  ring rows and validity, commit mask, size) over ``(slot, position, floor)`` rows;
* :func:`oracles.tail.tail_rows` (its own module) picks the late layers' rows.

What it predicts per window-path forward (:class:`WinFwdExp`): for every target layer the
locations its store receives (window: workspace rows; paged tail: ``M[loc]`` of the rows that
layer runs) and, under a window, the workspace bytes after that layer's commit; after every step
(:class:`WinStepExp`) the tags and ring bytes of every layer; and the step a forward whose
layout does not fit the workspace is refused at (:attr:`WindowExp.refused`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swafuzz.oracles.tail import tail_rows
from swafuzz.oracles.tail_prefix import admit_prefix, compressor, run_separate
from swafuzz.oracles.translation import translate as expected_translation
from swafuzz.scenarios.case import POISON_BYTE, Case, Step
from swafuzz.scenarios.payload import rows_bytes

__all__ = ["Layout", "WinFwdExp", "WinStepExp", "WindowExp", "WindowShadow", "layout",
           "uses_window_path"]

#: ops a request-window pool runs (anything else is infeasible under a window)
WINDOW_OPS = ("admit", "extend", "decode", "idle", "dp_decode", "evict", "finish", "remap")


def uses_window_path(case: Case) -> bool:
    return case.pool.request_window > 0 or case.pool.late_layer_start > 0


@dataclass
class Layout:
    """The layout of one window forward (plain lists; ``n`` rows, ``groups`` groups)."""

    groups: int
    write_loc: list[int]
    history_src: list[int]  # [groups * W] ring row each history row copies (zero row if invalid)
    history_pos: list[int]
    history_valid: list[bool]
    commit: list[bool]
    runs: list[tuple[int, int, int]]  # (slot, first position, rows) per run
    size: int


def layout(rows: list[tuple[int, int, int]], groups: int, W: int, cap: int, zero_row: int
           ) -> Layout:
    """``rows``: ``(slot, position, floor)`` per query row, batch order. Runs are maximal blocks
    of consecutive rows with equal slot; a run's floor is its first row's."""
    n = len(rows)
    runs: list[list[int]] = []  # [slot, first pos, count, floor, first row]
    for i, (slot, pos, floor) in enumerate(rows):
        if runs and runs[-1][0] == slot:
            runs[-1][2] += 1
        else:
            runs.append([slot, pos, 1, floor, i])
    write_loc = [groups * W + i for i in range(n)]
    src, hpos, valid = [], [], []
    for g in range(groups):
        for j in range(W):
            if g < len(runs):
                slot, first, _, floor, _ = runs[g]
                p = first - W + j
                ok = p >= 0 and p >= floor
            else:
                slot, p, ok = 0, -W + j, False
            hpos.append(p)
            valid.append(ok)
            src.append(slot * cap + p % cap if ok else zero_row)
    commit = []
    for run in runs:
        count = run[2]
        commit += [count - 1 - k < cap for k in range(count)]
    return Layout(groups, write_loc, src, hpos, valid, commit,
                  [(r[0], r[1], r[2]) for r in runs], groups * W + n)


@dataclass
class WinFwdExp:
    step: int
    fwd: int
    mode: str
    paged: bool  # True: paged-pool tail forward (locations are SWA slots M[loc])
    locs: list[list[int]]  # per target layer: the locations its store receives
    tail_layers: list[int]  # late layers of this forward (their locs are the tail's)
    tail_lens: list[int]  # per request of the batch (empty without a tail)
    workspace: list[bytes] | None  # window: workspace bytes after each layer's commit
    commit: list[bool] = field(default_factory=list)  # commit mask of the full layout
    runs: list[tuple[int, int, int]] = field(default_factory=list)
    bucket: int | None = None  # a DECODE graph's bucket (graph executors); None: eager
    size: int = 0  # the layout's size (groups * W + rows)
    # EXTEND forwards: the compressor locations (oracles.tail_prefix.CompExp); None otherwise
    comp: object | None = None
    tail_capacity: int = 0  # prefill-graph tail: rows of every late-layer store (tail_graph)
    # W5 at use (harness.history_checks): per target layer, per history row of the layout that
    # layer runs, the position the Case says it holds (-1: invalid, the zero row); empty: not
    # predicted for this forward
    history: list[list[int]] = field(default_factory=list)


@dataclass
class WinStepExp:
    step: int
    tags: list[list[int]] | None  # window only: per layer
    ring: list[bytes] | None  # window only: per layer, all R rows


@dataclass
class WindowExp:
    forwards: list[WinFwdExp] = field(default_factory=list)
    steps: list[WinStepExp] = field(default_factory=list)
    refused: tuple[int, str] | None = None  # (step, why): the forward the target must refuse
    workspace_rows: int = 0
    ring_rows: int = 0
    # Cases with graph window steps: what an executor that captures no graphs (eager) sees,
    # every step eager; None when no step differs (this expectation holds for every executor)
    eager: WindowExp | None = None


def _infeasible(i: int, reason: str):
    from swafuzz.oracles.engine import CaseInfeasible

    return CaseInfeasible(i, reason)


class WindowShadow:
    """Shadow request window (or paged late-layer tail) of one Case."""

    def __init__(self, case: Case):
        cfg = case.pool
        self.case, self.cfg = case, cfg
        self.P, self.W = cfg.page_size, cfg.window
        self.L = cfg.late_layer_start
        self.on = cfg.request_window > 0
        self.rb = cfg.row_bytes
        self.exp = WindowExp()
        if self.L and self.L >= cfg.layers:
            raise _infeasible(-1, f"pool.late_layer_start = {self.L} must be < layers "
                                  f"({cfg.layers})")
        if not self.on:
            return
        P = self.P
        self.cap = -(-cfg.request_window // P) * P
        if self.cap < self.W:
            raise _infeasible(-1, f"pool.request_window rounds up to {self.cap} rows, below the "
                                  f"window {self.W}")
        if cfg.window_slots < 1:
            raise _infeasible(-1, "pool.window_slots must be >= 1 with a request window")
        S = cfg.window_slots
        self.Z = (S + 1) * self.cap
        self.R = self.Z + P
        self.WS = -(-((S + 1) * self.W + cfg.window_chunk) // P) * P
        self.exp.workspace_rows, self.exp.ring_rows = self.WS, self.R
        rb = self.rb
        ring = bytearray([POISON_BYTE]) * (self.Z * rb) + bytearray(P * rb)
        self.ring = [bytearray(ring) for _ in range(cfg.layers)]
        self.tags = [[-1] * self.R for _ in range(cfg.layers)]
        self.ws = bytearray([POISON_BYTE]) * (self.WS * rb)
        self.free_slots = set(range(1, S + 1))
        self.slot: dict[int, int] = {}

    # ------------------------------------------------------------------ steps
    def run_step(self, sh, i: int, s: Step) -> bool:
        """Run step ``i`` if the window / tail path owns it; False: the engine oracle runs it."""
        from swafuzz.oracles.dspark import run_step as dspark_step

        if dspark_step(self, sh, i, s):  # window verify, DP-padded EXTEND (oracles.dspark)
            return True
        if s.op == "extend":
            if not (self.on or self.L):
                raise _infeasible(i, "extend needs pool.request_window > 0 or "
                                     "pool.late_layer_start > 0")
        if self.L and s.dp_extend:
            raise _infeasible(i, "dp_extend is not modelled with a late-layer tail")
        if s.replay and not self.on:
            raise _infeasible(i, "replay needs a request window (pool.request_window > 0)")
        if not self.on:
            if s.op == "admit":
                self._admit(sh, i, s)
                return True
            if s.op == "extend":
                self._extend(sh, i, s)
                return True
            return False
        if s.op not in WINDOW_OPS:
            raise _infeasible(i, f"op {s.op} is not modelled on a request-window pool (allowed: "
                                 f"{', '.join(WINDOW_OPS)})")
        if s.op in ("decode", "idle", "dp_decode") and s.exec not in ("eager", "graph"):
            raise _infeasible(i, f"{s.op} on a request-window pool: exec eager or graph")
        if s.op == "admit":
            self._admit(sh, i, s)
        elif s.op == "extend":
            self._extend(sh, i, s)
        elif s.op == "decode":
            if not s.rids:
                raise _infeasible(i, "decode needs at least one rid")
            rows = self._decode_rows(sh, i, s.rids)
            self._forward(i, "DECODE", rows, len(s.rids), None, self._bucket(i, s, len(rows)))
        elif s.op == "idle":
            if s.tokens is None or s.tokens < 1:
                raise _infeasible(i, "idle needs tokens >= 1")
            self._forward(i, "IDLE", [(0, 0, 0)] * s.tokens, 1, None,
                          self._bucket(i, s, s.tokens))
        elif s.op == "dp_decode":
            if not s.rank_tokens or len(s.rank_tokens) > 7 or (
                    not s.rids and max(s.rank_tokens) < 1):
                raise _infeasible(i, "dp_decode on a request-window pool: 1..7 other ranks with "
                                     "some tokens")
            if s.dp_extend:
                raise _infeasible(i, "dp_decode with dp_extend is not modelled under a window")
            if s.rids:  # a DP rank with requests: MAX_LEN padding rows (slot 0, position 0)
                rows = self._decode_rows(sh, i, s.rids)
                padded = max([len(rows), *s.rank_tokens])
                rows += [(0, 0, 0)] * (padded - len(rows))
                self._forward(i, "DECODE", rows, padded, None, self._bucket(i, s, padded))
            else:
                self._forward(i, "IDLE", [(0, 0, 0)] * max(s.rank_tokens), 1, None,
                              self._bucket(i, s, max(s.rank_tokens)))
        elif s.op == "finish":
            if s.rid in self.slot:
                self.free_slots.add(self.slot.pop(s.rid))
            return False
        else:
            return False  # evict, remap: the allocator only
        return True

    def _reset(self, slot: int) -> None:
        for tags in [lane[1] for lane in getattr(self, "_lanes", None) or [[None, self.tags]]]:
            for t in tags:
                for q in range(slot * self.cap, (slot + 1) * self.cap):
                    t[q] = -1

    def _admit(self, sh, i: int, s: Step) -> None:
        if s.prefix_rid is not None or s.prefix_len is not None:
            return admit_prefix(self, sh, i, s)  # oracles.tail_prefix (T5, E1, E2)
        if s.rid is None or s.length is None or s.length < 1:
            raise _infeasible(i, "admit needs rid and length >= 1")
        if s.rid in sh.ever:
            raise _infeasible(i, f"request {s.rid} admitted twice")
        if self.on and not self.free_slots:
            raise _infeasible(i, f"no free request slot (window_slots = "
                                 f"{self.cfg.window_slots})")
        sh._check_alloc(i, [(s.rid, s.length)])
        sh.ever.add(s.rid)
        sh.tokens[s.rid], sh.evicted[s.rid] = [], 0
        locs = sh._extend(s.rid, s.length)
        if self.on:
            slot = min(self.free_slots)
            self.free_slots.discard(slot)
            self.slot[s.rid] = slot
            self._reset(slot)
            rows = [(slot, p, 0) for p in range(s.length)]
            self._forward(i, "EXTEND", rows, 1, [s.length], prefill_bucket(self, i, s, len(rows)),
                          comp=compressor(locs, list(range(s.length)), [False] * len(locs)))
        else:
            self._paged(sh, i, locs, [s.length],
                        comp=compressor(locs, list(range(s.length)), [False] * len(locs)))

    def check_extend(self, sh, i: int, s: Step) -> None:
        """An ``extend`` step's feasibility (rids, lengths, replay spans) and allocation."""
        if not s.rids or len(s.lengths) != len(s.rids) or any(n < 1 for n in s.lengths):
            raise _infeasible(i, "extend needs rids and one length >= 1 per rid")
        if len(set(s.rids)) != len(s.rids):
            raise _infeasible(i, f"rids {list(s.rids)} repeat a request")
        if not set(s.replay) <= set(s.rids):
            raise _infeasible(i, "replay must name requests of rids")
        for rid in s.rids:
            sh._live(i, rid)
        for rid in s.replay:
            pq = len(sh.tokens[rid])
            if pq < 2 or pq % 2:
                raise _infeasible(i, f"request {rid}: encoder replay needs an even cached "
                                     f"prefix >= 2 (length {pq})")
            if pq - min(pq, self.W) < sh.evicted[rid]:
                raise _infeasible(i, f"request {rid}: replayed tokens were evicted")
        sh._check_alloc(i, list(zip(s.rids, s.lengths)))

    def _extend(self, sh, i: int, s: Step) -> None:
        self.check_extend(sh, i, s)
        sep = bool(self.cfg.separate_replay)
        rows, locs, per_req, pos, rp, hits = [], [], [], [], [], []
        for rid, n in zip(s.rids, s.lengths):
            pq = len(sh.tokens[rid])
            r = min(pq, self.W) if rid in s.replay else 0
            if r:
                self._reset(self.slot[rid])
                hits.append((rid, pq, r))
            if r and sep:  # the separate replay forward runs them (oracles.tail_prefix)
                r = 0
            if r:
                locs += sh.tokens[rid][pq - r:]
            new = sh._extend(rid, n)
            locs += new
            pos += range(pq - r, pq + n)
            rp += [True] * r + [False] * n
            floor = pq - r if r else 0
            if self.on:
                rows += [(self.slot[rid], p, floor) for p in range(pq - r, pq + n)]
            per_req.append(r + n)
        comp = compressor(locs, pos, rp)
        if sep and hits:
            run_separate(self, i, hits, sh.tokens)
            self._forward(i, "EXTEND", rows, len(s.rids), per_req, fwd=1, comp=comp)
        elif self.on:
            self._forward(i, "EXTEND", rows, len(s.rids), per_req,
                          prefill_bucket(self, i, s, len(rows)), comp=comp)
        else:
            self._paged(sh, i, locs, per_req, comp=comp)

    # ------------------------------------------------------------------ forwards
    def _tail(self, rows, per_req, seq_after):
        """Tail rows (with their floors) of an EXTEND batch, and the tail lengths."""
        idx, lens = tail_rows(per_req, self.W)
        out, b_of = [], []
        for b, n in enumerate(per_req):
            b_of += [b] * n
        for k in idx:
            slot, pos, _ = rows[k]
            out.append((slot, pos, max(0, seq_after[b_of[k]] - self.W)))
        return idx, lens, out

    # ------------------------------------------------------------------ DECODE graphs
    def _bucket(self, i: int, s: Step, n: int) -> int | None:
        """The DECODE-graph bucket of a window step with ``exec == "graph"`` (None: eager, also
        when no bucket fits: the engine falls back to eager). A bucket whose layout
        ``B * W + B`` exceeds the workspace makes the Case infeasible (a capture-time error)."""
        if s.exec != "graph":
            return None
        B = next((b for b in self.case.graph.buckets if b >= n), None)
        if B is None:
            return None
        if B * self.W + B > self.WS:
            raise _infeasible(i, f"graph bucket {B} under a request window: its layout of "
                                 f"{B * self.W + B} rows exceeds the workspace's {self.WS} rows")
        return B

    def _lane(self, lane: list) -> None:
        self.ring, self.tags, self.ws, self.exp = lane

    def _decode_rows(self, sh, i: int, rids) -> list[tuple[int, int, int]]:
        """Extend each live rid by one token (allocation checked first); its row
        ``(slot, position, floor 0)``."""
        for rid in rids:
            sh._live(i, rid)
        sh._check_alloc(i, [(rid, 1) for rid in rids])
        rows = []
        for rid in rids:
            sh._extend(rid, 1)
            rows.append((self.slot[rid], len(sh.tokens[rid]) - 1, 0))
        return rows

    def _forward(self, i: int, mode: str, rows, groups: int, per_req: list[int] | None,
                 bucket: int | None = None, fwd: int = 0, comp=None) -> None:
        """Run a forward on every lane: the graph lane (graph executors) runs a graph step
        through its bucket; the eager lane (made at the first graph step, a copy of the state
        so far) runs every step eagerly."""
        lanes = getattr(self, "_lanes", None)
        if lanes is None:
            lanes = self._lanes = [[self.ring, self.tags, self.ws, self.exp]]
        if bucket is not None and len(lanes) == 1:
            main = self.exp
            twin = WindowExp(list(main.forwards), list(main.steps), main.refused,
                             main.workspace_rows, main.ring_rows)
            main.eager = twin
            lanes.append([[bytearray(r) for r in self.ring], [list(t) for t in self.tags],
                          bytearray(self.ws), twin])
        for k, lane in enumerate(lanes):
            self._lane(lane)
            if bucket is not None and k == 0 and mode == "EXTEND":
                prefill_lane(self, i, rows, bucket)  # a prefill graph (oracles.window_prefill)
            elif bucket is not None and k == 0:
                B = bucket
                captured = self.__dict__.setdefault("_captured", set())
                if B not in captured:  # the capture's warm-up runs the capture state: every
                    captured.add(B)    # row slot 0, position 0, committed to slot-0 row 0
                    for t in self.tags:
                        t[0] = 0
                grows = list(rows) + [(0, 0, 0)] * (B - len(rows)) if mode != "IDLE" \
                    else [(0, 0, 0)] * B
                self._forward_lane(i, mode, grows, B, None, B)
            else:
                self._forward_lane(i, mode, rows, groups, per_req, fwd=fwd, comp=comp)
        self._lane(lanes[0])

    def snapshot(self, i: int) -> None:
        for lane in getattr(self, "_lanes", None) or [None]:
            if lane is not None:
                self._lane(lane)
            self._snapshot_lane(i)
        if getattr(self, "_lanes", None):
            self._lane(self._lanes[0])

    def _forward_lane(self, i: int, mode: str, rows, groups: int, per_req: list[int] | None,
                      bucket: int | None = None, fwd: int = 0, comp=None) -> None:
        if self.exp.refused is not None:
            return
        lay = layout(rows, groups, self.W, self.cap, self.Z)
        if lay.size > self.WS:
            self.exp.refused = (i, f"layout of {lay.size} rows (groups {groups} * W {self.W} + "
                                   f"{len(rows)} rows) exceeds the workspace's {self.WS} rows")
            return
        tail_layers, tail_lens, tail_lay, tail_n = [], [], None, 0
        if self.L and per_req is not None:
            seq_after = []
            k = 0
            for n in per_req:  # the batch's rows of a request end at its new length
                seq_after.append(rows[k + n - 1][1] + 1)
                k += n
            _, tail_lens, trows = self._tail(rows, per_req, seq_after)
            tail_lay = layout(trows, groups, self.W, self.cap, self.Z)
            tail_layers = list(range(self.L, self.cfg.layers))
            tail_n = len(trows)
        locs, wsb, hist = [], [], []
        for layer in range(self.cfg.layers):
            late = layer in tail_layers
            lay_l = tail_lay if late else lay
            hist.append([p if ok else -1 for p, ok in zip(lay_l.history_pos, lay_l.history_valid)])
            rws = trows if late else rows
            n = tail_n if late else len(rows)
            data = rows_bytes(self.case.payload_seed, i, fwd, "target", layer, n, self.rb)
            # a captured DECODE graph's commit has no IDLE guard (W6 graph half)
            self._run_layer(layer, lay_l, rws, data, commit=(mode != "IDLE" or bucket is not None))
            locs.append(list(lay_l.write_loc))
            wsb.append(bytes(self.ws))
        self.exp.forwards.append(WinFwdExp(i, fwd, mode, False, locs, tail_layers, tail_lens, wsb,
                                           list(lay.commit), list(lay.runs), bucket, lay.size,
                                           comp=comp, history=hist))

    def _run_layer(self, layer: int, lay: Layout, rows, data: bytes, commit: bool) -> None:
        rb, ring, ws = self.rb, self.ring[layer], self.ws
        for h, src in enumerate(lay.history_src):
            ws[h * rb:(h + 1) * rb] = ring[src * rb:(src + 1) * rb]
        for k, w in enumerate(lay.write_loc):
            ws[w * rb:(w + 1) * rb] = data[k * rb:(k + 1) * rb]
        if not commit:
            return
        for k, (slot, pos, _) in enumerate(rows):
            if lay.commit[k]:
                q = slot * self.cap + pos % self.cap
                w = lay.write_loc[k]
                ring[q * rb:(q + 1) * rb] = ws[w * rb:(w + 1) * rb]
                self.tags[layer][q] = pos

    def _paged(self, sh, i: int, locs: list[int], per_req: list[int], comp=None) -> None:
        """A paged-pool EXTEND forward with a late-layer tail: early layers write every row at
        ``M[loc]``, late layers only the tail rows."""
        idx, lens = tail_rows(per_req, self.W)
        n = len(locs)
        targets_all = expected_translation(sh.M, locs)
        targets_tail = expected_translation(sh.M, [locs[k] for k in idx])
        out, tl = [], []
        for layer in range(self.cfg.layers):
            late = layer >= self.L
            tg = targets_tail if late else targets_all
            if late:
                tl.append(layer)
            data = rows_bytes(self.case.payload_seed, i, 0, "target", layer, len(tg), self.rb)
            buf = sh.pools["target"][layer]
            for r, t in enumerate(tg):
                if t >= self.P:
                    buf[t * self.rb:(t + 1) * self.rb] = data[r * self.rb:(r + 1) * self.rb]
            out.append(list(tg))
        del n
        self.exp.forwards.append(WinFwdExp(i, 0, "EXTEND", True, out, tl, lens, None, comp=comp))

    def _snapshot_lane(self, i: int) -> None:
        if self.exp.refused is not None and self.exp.refused[0] <= i:
            return
        if self.on:
            self.exp.steps.append(WinStepExp(i, [list(t) for t in self.tags],
                                             [bytes(r) for r in self.ring]))
        else:
            self.exp.steps.append(WinStepExp(i, None, None))


def layout_indices(rows: list[tuple[int, int, int]], groups: int, W: int
                   ) -> tuple[list[list[int]], list[int]]:
    """What attention reads (addendum §2.2 ``indices`` / ``lengths``): for row i and lookback
    ``j < W`` the position ``p = pos_i - j``; valid iff ``p >= 0`` and ``p >= floor_i``; a
    position before the run's first one reads history row ``g * W + (p - (first - W))``, a
    position of the run reads the workspace row it was written to (``G * W + start + p -
    first``); invalid lookbacks are ``-1``. ``lengths[i]`` counts the valid ones."""
    out, lens = [], []
    g, start, first = -1, 0, 0
    prev = None
    for i, (slot, pos, floor) in enumerate(rows):
        if slot != prev:
            g, start, first, prev = g + 1, i, pos, slot
        idx = []
        for j in range(W):
            p = pos - j
            if p < 0 or p < floor:
                idx.append(-1)
            elif p < first:
                idx.append(g * W + p - (first - W))
            else:
                idx.append(groups * W + start + p - first)
        out.append(idx)
        lens.append(sum(1 for x in idx if x >= 0))
    return out, lens


from swafuzz.oracles.window_prefill import prefill_bucket, prefill_lane  # noqa: E402
