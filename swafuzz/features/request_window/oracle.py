"""Window oracle: the V4.1 request window, encoder replay and the late-layer tail, from the Case
(plain Python; "Request window, encoder replay and late-layer tail" in ``SEMANTICS.md`` beside
this file, addendum §2.2-§2.4), over the engine oracle's shadow allocator
(:class:`oracles.shadow.Shadow`, ``sh``). :class:`WindowShadow` runs the steps the window /
tail path claims on :class:`features.request_window.oracle_state.WindowState` with the layouts
of :mod:`features.request_window.oracle_layout`; late-layer rows, verify / DP-padded EXTENDs,
prefill graphs, prefix hits and the separate replay are their features' oracles'. It predicts
per forward (:class:`WinFwdExp`) every target layer's store locations (workspace rows, or a
paged tail's ``M[loc]``) and the workspace bytes after each commit, per step
(:class:`WinStepExp`) tags and ring bytes, and the step refused for a workspace overflow
(:attr:`WindowExp.refused`)."""

from __future__ import annotations

from itertools import accumulate

from swafuzz.features.parts import OraclePart
from swafuzz.features.request_window.dspark.oracle import run_step as dspark_step
from swafuzz.features.request_window.late_tail.oracle import tail_floors, tail_rows
from swafuzz.features.request_window.oracle_layout import WinFwdExp, layout
from swafuzz.features.request_window.oracle_state import WindowState
from swafuzz.features.request_window.prefill_graphs.oracle import prefill_bucket, prefill_lane
from swafuzz.features.request_window.rules import admit_in_graph
from swafuzz.features.request_window.tail_prefix.oracle import (
    admit_prefix,
    compressor,
    run_separate,
)
from swafuzz.oracles.errors import CaseInfeasible
from swafuzz.oracles.translation import translate as expected_translation
from swafuzz.scenarios.case import Step

__all__ = ["WINDOW_OPS", "WindowShadow"]

#: ops a request-window pool runs (anything else is infeasible under a window)
WINDOW_OPS = ("admit", "extend", "decode", "idle", "dp_decode", "evict", "finish", "remap")


class WindowShadow(WindowState):
    """Shadow request window (or paged late-layer tail) of one Case: the steps it runs."""

    # ------------------------------------------------------------------ steps
    def run_step(self, sh, i: int, s: Step) -> bool:
        """Run step ``i`` if the window / tail path owns it; False: the engine oracle runs it."""
        if dspark_step(self, sh, i, s):  # window verify, DP-padded EXTEND (features.dspark.oracle)
            return True
        if s.op == "extend":
            if not (self.on or self.L):
                raise CaseInfeasible(i, "extend needs pool.request_window > 0 or "
                                     "pool.late_layer_start > 0")
        if self.L and s.dp_extend:
            raise CaseInfeasible(i, "dp_extend is not modelled with a late-layer tail")
        if s.replay and not self.on:
            raise CaseInfeasible(i, "replay needs a request window (pool.request_window > 0)")
        if not self.on:
            if s.op == "admit":
                self.admit(sh, i, s)
                return True
            if s.op == "extend":
                self.run_extend(sh, i, s)
                return True
            return False
        if s.op not in WINDOW_OPS:
            raise CaseInfeasible(i, f"op {s.op} is not modelled on a request-window pool (allowed: "
                                 f"{', '.join(WINDOW_OPS)})")
        if s.op in ("decode", "idle", "dp_decode") and s.exec not in ("eager", "graph"):
            raise CaseInfeasible(i, f"{s.op} on a request-window pool: exec eager or graph")
        if s.op == "admit":
            self.admit(sh, i, s)
        elif s.op == "extend":
            self.run_extend(sh, i, s)
        elif s.op == "decode":
            if not s.rids:
                raise CaseInfeasible(i, "decode needs at least one rid")
            rows = self.decode_rows(sh, i, s.rids)
            self.forward(i, "DECODE", rows, len(s.rids), None, self._bucket(i, s, len(rows)))
        elif s.op == "idle":
            if s.tokens is None or s.tokens < 1:
                raise CaseInfeasible(i, "idle needs tokens >= 1")
            self.forward(i, "IDLE", [(0, 0, 0)] * s.tokens, 1, None,
                         self._bucket(i, s, s.tokens))
        elif s.op == "dp_decode":
            if not s.rank_tokens or len(s.rank_tokens) > 7 or (
                    not s.rids and max(s.rank_tokens) < 1):
                raise CaseInfeasible(i, "dp_decode on a request-window pool: 1..7 other ranks with "
                                     "some tokens")
            if s.dp_extend:
                raise CaseInfeasible(i, "dp_decode with dp_extend is not modelled under a window")
            if s.rids:  # a DP rank with requests: MAX_LEN padding rows (slot 0, position 0)
                rows = self.decode_rows(sh, i, s.rids)
                padded = max([len(rows), *s.rank_tokens])
                rows += [(0, 0, 0)] * (padded - len(rows))
                self.forward(i, "DECODE", rows, padded, None, self._bucket(i, s, padded))
            else:
                self.forward(i, "IDLE", [(0, 0, 0)] * max(s.rank_tokens), 1, None,
                             self._bucket(i, s, max(s.rank_tokens)))
        elif s.op == "finish":
            if s.rid in self.slot:
                self.free_slots.add(self.slot.pop(s.rid))
            return False
        else:
            return False  # evict, remap: the allocator only
        return True

    def admit(self, sh, i: int, s: Step) -> None:
        if s.prefix_rid is not None or s.prefix_len is not None:
            return admit_prefix(self, sh, i, s)  # features.tail_prefix.oracle (T5, E1, E2)
        if s.rid is None or s.length is None or s.length < 1:
            raise CaseInfeasible(i, "admit needs rid and length >= 1")
        if s.rid in sh.ever:
            raise CaseInfeasible(i, f"request {s.rid} admitted twice")
        if self.on and not self.free_slots:
            raise CaseInfeasible(i, f"no free request slot (window_slots = "
                                 f"{self.cfg.window_slots})")
        sh.check_alloc(i, [(s.rid, s.length)])
        sh.ever.add(s.rid)
        sh.tokens[s.rid], sh.evicted[s.rid] = [], 0
        locs = sh.extend(s.rid, s.length)
        if self.on:
            slot = min(self.free_slots)
            self.free_slots.discard(slot)
            self.slot[s.rid] = slot
            self.reset_slot(slot)
            rows = [(slot, p, 0) for p in range(s.length)]
            self.forward(i, "EXTEND", rows, 1, [s.length], prefill_bucket(self, i, s, len(rows)),
                         comp=compressor(locs, list(range(s.length)), [False] * len(locs)))
        else:
            self.paged(sh, i, locs, [s.length],
                       comp=compressor(locs, list(range(s.length)), [False] * len(locs)))

    def check_extend(self, sh, i: int, s: Step) -> None:
        """An ``extend`` step's feasibility (rids, lengths, replay spans) and allocation."""
        if not s.rids or len(s.lengths) != len(s.rids) or any(n < 1 for n in s.lengths):
            raise CaseInfeasible(i, "extend needs rids and one length >= 1 per rid")
        if len(set(s.rids)) != len(s.rids):
            raise CaseInfeasible(i, f"rids {list(s.rids)} repeat a request")
        if not set(s.replay) <= set(s.rids):
            raise CaseInfeasible(i, "replay must name requests of rids")
        for rid in s.rids:
            sh.live(i, rid)
        for rid in s.replay:
            pq = len(sh.tokens[rid])
            if pq < 2 or pq % 2:
                raise CaseInfeasible(i, f"request {rid}: encoder replay needs an even cached "
                                     f"prefix >= 2 (length {pq})")
            if pq - min(pq, self.W) < sh.evicted[rid]:
                raise CaseInfeasible(i, f"request {rid}: replayed tokens were evicted")
        sh.check_alloc(i, list(zip(s.rids, s.lengths)))

    def run_extend(self, sh, i: int, s: Step) -> None:
        self.check_extend(sh, i, s)
        sep = bool(self.cfg.separate_replay)
        rows, locs, per_req, pos, rp, hits = self.extend_rows(sh, s, sep)
        comp = compressor(locs, pos, rp)
        if sep and hits:
            run_separate(self, i, hits, sh.tokens)
            self.forward(i, "EXTEND", rows, len(s.rids), per_req, fwd=1, comp=comp)
        elif self.on:
            self.forward(i, "EXTEND", rows, len(s.rids), per_req,
                         prefill_bucket(self, i, s, len(rows)), comp=comp)
        else:
            self.paged(sh, i, locs, per_req, comp=comp)

    def extend_rows(self, sh, s: Step, sep: bool = False):
        """Allocate a checked ``extend``: its rows ``(slot, position, floor)`` (window pools),
        full locations, rows per request, positions, per-row replay flags and the replay hits
        ``(rid, Pq, r)`` (each reset; ``sep``: their rows left to the separate forward)."""
        rows, locs, per_req, pos, rp, hits = [], [], [], [], [], []
        for rid, n in zip(s.rids, s.lengths):
            pq = len(sh.tokens[rid])
            r = min(pq, self.W) if rid in s.replay else 0
            if r:
                self.reset_slot(self.slot[rid])
                hits.append((rid, pq, r))
            if r and sep:  # the separate replay forward runs them (features.tail_prefix.oracle)
                r = 0
            if r:
                locs += sh.tokens[rid][pq - r:]
            new = sh.extend(rid, n)
            locs += new
            pos += range(pq - r, pq + n)
            rp += [True] * r + [False] * n
            floor = pq - r if r else 0
            if self.on:
                rows += [(self.slot[rid], p, floor) for p in range(pq - r, pq + n)]
            per_req.append(r + n)
        return rows, locs, per_req, pos, rp, hits

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
            raise CaseInfeasible(i, f"graph bucket {B} under a request window: its layout of "
                                 f"{B * self.W + B} rows exceeds the workspace's {self.WS} rows")
        return B

    def decode_rows(self, sh, i: int, rids) -> list[tuple[int, int, int]]:
        """Extend each live rid by one token (allocation checked first); its row
        ``(slot, position, floor 0)``."""
        for rid in rids:
            sh.live(i, rid)
        sh.check_alloc(i, [(rid, 1) for rid in rids])
        rows = []
        for rid in rids:
            sh.extend(rid, 1)
            rows.append((self.slot[rid], len(sh.tokens[rid]) - 1, 0))
        return rows

    def forward(self, i: int, mode: str, rows, groups: int, per_req: list[int] | None,
                bucket: int | None = None, fwd: int = 0, comp=None) -> None:
        """Run a forward on every lane: the graph lane (graph executors) runs a graph step
        through its bucket; the eager lane (made at the first graph step, a copy of the state
        so far) runs every step eagerly."""
        if bucket is not None:
            self.fork_eager()
        for k in self.each_lane():
            if bucket is not None and k == 0 and mode == "EXTEND":
                prefill_lane(self, i, rows, bucket)  # a prefill graph (features.prefill_graphs.oracle)
            elif bucket is not None and k == 0:
                B = bucket
                if B not in self.captured["decode"]:  # the capture's warm-up runs the capture
                    self.captured["decode"].add(B)    # state: every row slot 0, position 0,
                    for t in self.tags:               # committed to slot-0 row 0
                        t[0] = 0
                grows = list(rows) + [(0, 0, 0)] * (B - len(rows)) if mode != "IDLE" \
                    else [(0, 0, 0)] * B
                self.forward_lane(i, mode, grows, B, None, B)
            else:
                self.forward_lane(i, mode, rows, groups, per_req, fwd=fwd, comp=comp)

    def forward_lane(self, i: int, mode: str, rows, groups: int, per_req: list[int] | None,
                     bucket: int | None = None, fwd: int = 0, comp=None) -> None:
        """One window forward on the current lane (the late layers run the tail rows)."""
        if self.exp.refused is not None:
            return
        lay = layout(rows, groups, self.W, self.cap, self.Z)
        if self.refuse(i, lay, groups, len(rows)):
            return
        tail_layers, tail_lens, tail_lay, tail_n = [], [], None, 0
        if self.L and per_req is not None:
            ends = [rows[k - 1][1] + 1 for k in accumulate(per_req)]  # each request's new length
            idx, tail_lens, floors = tail_floors(per_req, ends, self.W)
            trows = [(*rows[k][:2], f) for k, f in zip(idx, floors)]
            tail_lay = layout(trows, groups, self.W, self.cap, self.Z)
            tail_layers = list(range(self.L, self.cfg.layers))
            tail_n = len(trows)
        locs, wsb, hist = [], [], []
        for layer in range(self.cfg.layers):
            late = layer in tail_layers
            lay_l = tail_lay if late else lay
            hist.append([p if ok else -1 for p, ok in zip(lay_l.history_pos, lay_l.history_valid)])
            rws = trows if late else rows
            data = self.payload(i, fwd, layer, tail_n if late else len(rows))
            # a captured DECODE graph's commit has no IDLE guard (W6 graph half)
            self.run_layer(layer, lay_l, rws, data, commit=(mode != "IDLE" or bucket is not None))
            locs.append(list(lay_l.write_loc))
            wsb.append(bytes(self.ws))
        self.exp.forwards.append(WinFwdExp(i, fwd, mode, False, locs, tail_layers, tail_lens, wsb,
                                           list(lay.commit), list(lay.runs), bucket, lay.size,
                                           comp=comp, history=hist))

    def store_paged(self, sh, i: int, early: list[int], late: list[int]) -> list[list[int]]:
        """A paged-pool forward with a late-layer tail: layers below ``L`` write their rows at
        the SWA slots ``early``, late layers at ``late`` (slots below P, the dummy page, are
        skipped); returns the slots per layer."""
        rb, out = self.rb, []
        for layer in range(self.cfg.layers):
            tg = late if layer >= self.L else early
            data = self.payload(i, 0, layer, len(tg))
            buf = sh.pools["target"][layer]
            for r, t in enumerate(tg):
                if t >= self.P:
                    buf[t * rb:(t + 1) * rb] = data[r * rb:(r + 1) * rb]
            out.append(list(tg))
        return out

    def paged(self, sh, i: int, locs: list[int], per_req: list[int], comp=None) -> None:
        """A paged-pool EXTEND forward with a late-layer tail: early layers write every row at
        ``M[loc]``, late layers only the tail rows."""
        idx, lens = tail_rows(per_req, self.W)
        out = self.store_paged(sh, i, expected_translation(sh.M, locs),
                               expected_translation(sh.M, [locs[k] for k in idx]))
        late = list(range(self.L, self.cfg.layers))
        self.exp.forwards.append(WinFwdExp(i, 0, "EXTEND", True, out, late, lens, None, comp=comp))


class RequestWindowOracle(OraclePart):
    """The oracle part: admits may run in a (breakable prefill) graph under a window."""

    graph_admit = staticmethod(admit_in_graph)
