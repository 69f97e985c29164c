"""The request window at server level: what the server-level oracle (hook
``server.window_oracle``; plain Python) predicts for a Case with
``enable_encoder_swa_bounded_replay`` from the plan (:mod:`swafuzz.server.timeline`) and the
request slots the release chose (observed, validated first); addendum §2.2, ``SEMANTICS.md``:
``window_slots`` (each request of a forward holds a slot >= 1 no other live request holds, for
its life; a prefill from position 0 resets the slot's tags), ``write_targets`` (fed here: rows,
padding included, at workspace rows ``groups * W + k``; ``groups``: an EXTEND's requests, a
DECODE's rows), ``window_history`` (group ``g``'s history for first position ``f``: ``f - W +
j`` where >= 0, else the zero row, tag -1; a DECODE's padding groups read none), ``window_ring``
(every ring row of a request slot holds tag and stub bytes of the last position committed there,
each run's last ``capacity`` rows; padding never commits to a request's slot; the zero row keeps
tag -1). With the late-layer tail (L > 0) an EXTEND's layers from L run each request's last
``min(W, rows)`` rows (floor ``max(0, seq_len - W)``, ledger ``short-tail-floor``) and commit
them all; the stub rows are the tail's."""

from __future__ import annotations

from swafuzz.features.record import check
from swafuzz.scenarios.payload import k_rows_bytes


class ServerWindowOracle:
    """The window's shadow state of one server-level Case (module docstring)."""

    def __init__(self, case):
        self.case = case
        self.W = case.model.sliding_window
        self.rb = case.model.row_bytes
        self.slot_of: dict[int, int] = {}
        self.tags: list[dict[int, int]] = [{} for _ in range(case.model.layers)]
        self.bytes: list[dict[int, bytes]] = [{} for _ in range(case.model.layers)]
        self.L = case.model.late_layer_start

    def release(self, rid: int) -> None:
        """Request ``rid`` left (or was retracted): its slot is free."""
        self.slot_of.pop(rid, None)

    def runs(self, fwd, layer: int) -> list[tuple[int, int, int]] | None:
        """``(first position, rows, floor)`` per request of ``fwd`` at ``layer``: the tail's on a
        late layer of an EXTEND; None: the forward's own rows."""
        if not (self.L and fwd.mode == "EXTEND" and layer >= self.L):
            return None
        out = []
        for start, n in fwd.spans:
            t = min(self.W, n)
            out.append((start + n - t, t, max(0, start + n - self.W)))
        return out

    def stores(self, fwd, total: int) -> list[list[int]]:
        """Per layer, the workspace rows its store receives (``total``: rows, padding in)."""
        groups = len(fwd.rids) if fwd.mode == "EXTEND" else total
        out = []
        for layer in range(self.case.model.layers):
            tail = self.runs(fwd, layer)
            n = total if tail is None else sum(t for _, t, _ in tail)
            out.append([groups * self.W + k for k in range(n)])
        return out

    def forward(self, fwd, rec, total: int) -> list[tuple[str, str]]:
        """``(check, message)`` per failure of forward ``fwd`` observed as ``rec`` (its
        ``window`` record), ``total`` rows padding in; the shadow state follows."""
        w = rec.window or {}
        slots, cap = w.get("slots", []), w.get("capacity", 0)
        if cap < self.W:
            return [("window_slots", f"ring capacity {cap} below the window {self.W}")]
        bad = self._slots(fwd, slots, cap)
        if bad:
            return [("window_slots", bad)]
        out = self._history_tags(fwd, w, total)
        self._commit(fwd, rec.index, total, cap)
        out += self._ring(w, cap)
        return out

    # -- the pieces (the checks: ``@check(level="server")``, run by the server oracle's walk)
    @check("window_history", level="server")
    def _history_tags(self, fwd, w: dict, total: int) -> list[tuple[str, str]]:
        for layer, got in enumerate(w.get("history_tags") or []):
            exp_hist = self._history(fwd, total, layer)
            if got != exp_hist:
                k = next(i for i, (a, b) in enumerate(zip(got + [None], exp_hist + [None]))
                         if a != b)
                return [("window_history", f"layer {layer}: history row {k} (group "
                         f"{k // self.W}) holds tag {got[k] if k < len(got) else 'nothing'}"
                         f", the position it must hold is "
                         f"{exp_hist[k] if k < len(exp_hist) else 'nothing'}")]
        return []

    @check("window_slots", level="server")
    def _slots(self, fwd, slots: list[int], cap: int) -> str | None:
        if len(slots) != len(fwd.rids):
            return f"{len(slots)} request slots observed for {len(fwd.rids)} requests"
        for rid, (start, _), s in zip(fwd.rids, fwd.spans, slots):
            held = {v for r, v in self.slot_of.items() if r != rid}
            if s < 1 or s in held:
                return f"request {rid} got slot {s}: the dummy slot 0 or a live request's"
            if rid in self.slot_of and self.slot_of[rid] != s:
                return f"request {rid} moved from slot {self.slot_of[rid]} to {s}"
            if fwd.mode == "EXTEND" and start == 0:  # a new window: the slot's tags reset
                for tags in self.tags:
                    for r in [r for r in tags if r // cap == s]:
                        tags[r] = -1
            self.slot_of[rid] = s
        return None

    def _history(self, fwd, total: int, layer: int) -> list[int]:
        runs = self.runs(fwd, layer) or [(start, n, 0) for start, n in fwd.spans]
        if fwd.mode == "DECODE":  # padding groups: position 0, no history
            runs += [(0, 1, 0)] * (total - len(runs))
        out = []
        for f, _, floor in runs:
            out += [p if p >= max(0, floor) else -1 for p in range(f - self.W, f)]
        return out

    def _commit(self, fwd, index: int, total: int, cap: int) -> None:
        for layer in range(self.case.model.layers):
            runs = self.runs(fwd, layer) or [(start, n, 0) for start, n in fwd.spans]
            n_rows = total if self.runs(fwd, layer) is None else sum(t for _, t, _ in runs)
            data = k_rows_bytes("rows", self.case.payload_seed, index, 0, "target", layer,
                                n_rows, self.rb)
            k = 0
            for rid, (start, n, _) in zip(fwd.rids, runs):
                s = self.slot_of[rid]
                for j in range(n):
                    if n - 1 - j < cap:
                        row, p = s * cap + (start + j) % cap, start + j
                        self.tags[layer][row] = p
                        self.bytes[layer][row] = data[(k + j) * self.rb:(k + j + 1) * self.rb]
                k += n

    @check("window_ring", level="server", defence=(
        "a ring row holding another position's tag also fails the release's own window "
        "invariant check, which raises (contracts); this names the ring row and its tag"))
    def _ring(self, w: dict, cap: int) -> list[tuple[str, str]]:
        tags_obs, ring_obs, zero = w.get("ring_tags") or [], w.get("bytes_after") or [], w["zero_row"]
        for layer, (tags, ring) in enumerate(zip(tags_obs, ring_obs)):
            if tags[zero] != -1:
                return [("window_ring", f"layer {layer}: the zero row {zero} holds tag "
                         f"{tags[zero]}, not -1")]
            for row in range(cap, min(zero, len(tags))):
                want = self.tags[layer].get(row, -1)
                if tags[row] != want:
                    return [("window_ring", f"layer {layer}: ring row {row} (slot {row // cap}"
                             f", position {want if want >= 0 else 'none'}) holds tag "
                             f"{tags[row]}, expected {want}")]
                data = self.bytes[layer].get(row)
                got = ring[row * self.rb:(row + 1) * self.rb]
                if want >= 0 and data is not None and got != data:
                    return [("window_ring", f"layer {layer}: ring row {row} (slot {row // cap}"
                             f", position {want}) holds {got.hex()}, the stub model's row of "
                             f"that position is {data.hex()}")]
        return []
