"""A DP-padded EXTEND under a request window whose padding is the release's own.

:class:`ReleasePaddedDSpark` is :class:`features.dspark.sglang.SGLangDSpark` whose padded forward
takes ``out_cache_loc`` and ``positions`` from a **padder**: a callable handed this rank's batch
(per request its sequence and extend length, the real rows' full locations) returning what the
release's MLP-sync padding made of it (:meth:`features.dp.sglang_sync.DPSync.step`, on real
process groups). The real rows must come back unchanged and first; each padding row enters the
window path (layout, store, commit) with the release's location and position, and the forward's
row count is the release's. Without a padder: the plain seam (``rank_tokens`` padding)."""

from __future__ import annotations

from swafuzz.features.request_window.dspark.sglang import SGLangDSpark
from swafuzz.features.request_window.window import WinFwdObs
from swafuzz.targets.forward_mode import ForwardMode


def batch_of(rows, locs: list[int]) -> tuple[list[int], list[int], list[int]]:
    """(seq_lens, extend_lens, out_cache_loc) of an EXTEND's real rows ``(slot, pos, floor)``:
    one request per run of equal slots, its sequence length its last position + 1."""
    seq: list[int] = []
    ext: list[int] = []
    last = None
    for slot, pos, _ in rows:
        if seq and slot == last:
            ext[-1] += 1
            seq[-1] = pos + 1
        else:
            seq.append(pos + 1)
            ext.append(1)
        last = slot
    return seq, ext, list(locs)


class ReleasePaddedDSpark(SGLangDSpark):
    """The window seam with the release's MLP-sync padding (module docstring)."""

    #: callable (seq_lens, extend_lens, out_cache_loc) -> (padded out_cache_loc, positions)
    padder = None
    #: the padded batches the padder returned, in order (what the backend was handed)
    handed: list = []

    def padded_forward(self, i: int, rows, locs: list[int], groups: int, rank_tokens
                       ) -> WinFwdObs:
        if type(self).padder is None:
            return super().padded_forward(i, rows, locs, groups, rank_tokens)
        seq, ext, loc = batch_of(rows, locs)
        out, pos = type(self).padder(seq, ext, loc)
        n = len(rows)
        if list(out[:n]) != list(loc) or [int(p) for p in pos[:n]] != [r[1] for r in rows]:
            raise AssertionError(f"step {i}: the release's padding changed the real rows: "
                                 f"{out[:n]} / {pos[:n]} for {loc} / {[r[1] for r in rows]}")
        pad = len(out) - n
        type(self).handed.append({"step": i, "out_cache_loc": list(out), "positions": list(pos),
                                  "rows": n})
        self.pad = pad
        try:
            return self.p.forward(i, ForwardMode.EXTEND, list(rows) + [(0, p, 0) for p in pos[n:]],
                                  list(out), groups, None)
        finally:
            self.pad = 0
