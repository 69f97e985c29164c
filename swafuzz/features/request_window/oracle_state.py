"""The window oracle's shadow state (plain Python): :class:`WindowState` holds the request
window's configuration checks, per target layer the ring bytes and tags, the single-layer
workspace, the free request slots, and the lanes: the graph lane (executors that capture
graphs) and, from the first graph step on, the eager lane (:meth:`WindowState.fork_eager`,
:meth:`WindowState.each_lane`). :meth:`WindowState.run_layer` is one layer of a window forward
(history copy, workspace writes, commit); the workspace refusal and the per-step snapshot are
here too. :class:`features.request_window.oracle.WindowShadow` adds the step semantics."""

from __future__ import annotations

from typing import Iterator

from swafuzz.features.request_window.channel import CHANNEL
from swafuzz.features.request_window.oracle_layout import Layout, WindowExp, WinStepExp
from swafuzz.oracles.errors import CaseInfeasible
from swafuzz.scenarios.case import POISON_BYTE, Case
from swafuzz.scenarios.payload import rows_bytes

__all__ = ["WindowState"]


class WindowState:
    """Shadow request window (or paged late-layer tail) state of one Case."""

    #: the Expectation channel the shadow's (root lane's) ``exp`` fills
    channel = CHANNEL

    def __init__(self, case: Case):
        cfg = case.pool
        self.case, self.cfg = case, cfg
        self.P, self.W = cfg.page_size, cfg.window
        self.L = cfg.late_layer_start
        self.on = cfg.request_window > 0
        self.rb = cfg.row_bytes
        self.exp = WindowExp()
        self.lanes: list[list] | None = None  # [ring, tags, ws, exp] per lane, graph lane first
        # buckets whose capture warm-up already ran, per graph kind (decode, verify, prefill)
        self.captured: dict[str, set[int]] = {"decode": set(), "verify": set(), "prefill": set()}
        if self.L and self.L >= cfg.layers:
            raise CaseInfeasible(-1, f"pool.late_layer_start = {self.L} must be < layers "
                                     f"({cfg.layers})")
        if not self.on:
            return
        P = self.P
        self.cap = -(-cfg.request_window // P) * P
        if self.cap < self.W:
            raise CaseInfeasible(-1, f"pool.request_window rounds up to {self.cap} rows, below "
                                     f"the window {self.W}")
        if cfg.window_slots < 1:
            raise CaseInfeasible(-1, "pool.window_slots must be >= 1 with a request window")
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

    # ------------------------------------------------------------------ lanes
    def use_lane(self, lane: list) -> None:
        """Make ``lane``'s ring, tags, workspace and expectation the current ones."""
        self.ring, self.tags, self.ws, self.exp = lane

    def fork_eager(self) -> None:
        """Make the eager lane (at the first graph step): a copy of the state so far, whose
        expectation is ``WindowExp.eager`` of the graph lane's."""
        if self.lanes is None:
            self.lanes = [[self.ring, self.tags, self.ws, self.exp]]
        if len(self.lanes) == 1:
            main = self.exp
            twin = WindowExp(list(main.forwards), list(main.steps), main.refused,
                             main.workspace_rows, main.ring_rows)
            main.eager = twin
            self.lanes.append([[bytearray(r) for r in self.ring], [list(t) for t in self.tags],
                               bytearray(self.ws), twin])

    def each_lane(self) -> Iterator[int]:
        """Yield each lane's index with its state current (the graph lane, 0, first; a single
        lane until :meth:`fork_eager`); the graph lane is current again afterwards."""
        for k, lane in enumerate(self.lanes or [None]):
            if lane is not None:
                self.use_lane(lane)
            yield k
        if self.lanes:
            self.use_lane(self.lanes[0])

    def reset_slot(self, slot: int) -> None:
        """Forget the ring tags of request slot ``slot`` in every layer of every lane."""
        for tags in [lane[1] for lane in self.lanes or [[None, self.tags]]]:
            for t in tags:
                for q in range(slot * self.cap, (slot + 1) * self.cap):
                    t[q] = -1

    # ------------------------------------------------------------------ one layer
    def refuse(self, i: int, lay: Layout, groups: int, rows: int) -> bool:
        """Record the refusal of a forward whose layout exceeds the workspace (True if so)."""
        if lay.size <= self.WS:
            return False
        self.exp.refused = (i, f"layout of {lay.size} rows (groups {groups} * W {self.W} + "
                               f"{rows} rows) exceeds the workspace's {self.WS} rows")
        return True

    def run_layer(self, layer: int, lay: Layout, rows, data: bytes, commit: bool) -> None:
        """One layer's store: history rows copied from the ring, the forward's rows ``data``
        written at ``write_loc``, then (``commit``) the committed rows into the ring."""
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

    def payload(self, i: int, fwd: int, layer: int, n: int) -> bytes:
        """The K rows of ``n`` rows of forward ``fwd`` of step ``i`` in target layer ``layer``."""
        return rows_bytes(self.case.payload_seed, i, fwd, "target", layer, n, self.rb)

    def run_layers(self, i: int, lay: Layout, rows, n: int, commit: bool = True
                   ) -> tuple[list[list[int]], list[bytes]]:
        """Every layer runs ``lay`` over ``rows`` (``n`` K rows, forward 0): per layer the
        locations its store receives and the workspace bytes after its commit."""
        locs, wsb = [], []
        for layer in range(self.cfg.layers):
            self.run_layer(layer, lay, rows, self.payload(i, 0, layer, n), commit)
            locs.append(list(lay.write_loc))
            wsb.append(bytes(self.ws))
        return locs, wsb

    def snapshot(self, i: int) -> None:
        """Record the tags and ring bytes of every layer after step ``i``, on every lane."""
        for _ in self.each_lane():
            if self.exp.refused is not None and self.exp.refused[0] <= i:
                continue
            if self.on:
                self.exp.steps.append(WinStepExp(i, [list(t) for t in self.tags],
                                                 [bytes(r) for r in self.ring]))
            else:
                self.exp.steps.append(WinStepExp(i, None, None))
