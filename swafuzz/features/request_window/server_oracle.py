"""The request window at server level: what the server-level oracle predicts (hook
``server.window_oracle``; plain Python over ints, lists and bytes, never the code it judges).

From the plan (:mod:`swafuzz.server.timeline`: per forward the requests, their positions) and
what the release chose (the request slot of each request, observed like the allocation and
validated before it is followed), for a Case with ``enable_encoder_swa_bounded_replay``
(addendum §2.2; ``features/request_window/SEMANTICS.md``):

* ``window_slots``: every request of a forward holds a slot >= 1 no other live request holds,
  and keeps it while it lives; a request whose prefill starts at position 0 (a new one, or a
  retracted one computed again) starts its window: the slot's ring tags are -1;
* ``write_targets`` (the core check, fed here): each layer stores the forward's rows, padding
  included, at workspace rows ``groups * W + k`` (``groups``: an EXTEND's requests; a DECODE's
  rows, padding included);
* ``window_history``: per layer, the history each group reads: for its first position ``f``
  and ``j < W`` the position ``f - W + j`` holds that tag when it is >= 0, the zero row (tag -1)
  otherwise; a DECODE's padding groups read none;
* ``window_ring``: after the forward, every ring row of a request slot holds the tag and the
  stub model's bytes of the last position committed there: the last ``capacity`` rows of each
  request's run commit (padding rows never commit to a request's slot); the zero row keeps tag
  -1.
"""

from __future__ import annotations

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

    def release(self, rid: int) -> None:
        """Request ``rid`` left (or was retracted): its slot is free."""
        self.slot_of.pop(rid, None)

    def stores(self, fwd, total: int) -> list[int]:
        """The workspace rows every layer's store receives (``total``: rows, padding in)."""
        groups = len(fwd.rids) if fwd.mode == "EXTEND" else total
        return [groups * self.W + k for k in range(total)]

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
        out = []
        exp_hist = self._history(fwd, total)
        for layer, got in enumerate(w.get("history_tags") or []):
            if got != exp_hist:
                k = next(i for i, (a, b) in enumerate(zip(got + [None], exp_hist + [None]))
                         if a != b)
                out.append(("window_history", f"layer {layer}: history row {k} (group "
                            f"{k // self.W}) holds tag {got[k] if k < len(got) else 'nothing'}"
                            f", the position it must hold is "
                            f"{exp_hist[k] if k < len(exp_hist) else 'nothing'}"))
                break
        self._commit(fwd, rec.index, total, cap)
        out += self._ring(w, cap)
        return out

    # -- the pieces ----------------------------------------------------------------------------
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

    def _history(self, fwd, total: int) -> list[int]:
        firsts = [start for start, _ in fwd.spans]
        if fwd.mode == "DECODE":
            firsts += [0] * (total - len(firsts))  # padding groups: position 0, no history
        out = []
        for f in firsts:
            out += [p if p >= 0 else -1 for p in range(f - self.W, f)]
        return out

    def _commit(self, fwd, index: int, total: int, cap: int) -> None:
        for layer in range(self.case.model.layers):
            data = k_rows_bytes("rows", self.case.payload_seed, index, 0, "target", layer,
                                total, self.rb)
            k = 0
            for rid, (start, n) in zip(fwd.rids, fwd.spans):
                s = self.slot_of[rid]
                for j in range(n):
                    if n - 1 - j < cap:
                        row, p = s * cap + (start + j) % cap, start + j
                        self.tags[layer][row] = p
                        self.bytes[layer][row] = data[(k + j) * self.rb:(k + j + 1) * self.rb]
                k += n

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
