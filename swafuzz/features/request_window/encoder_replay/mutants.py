"""Mutants of encoder replay (feature ``encoder_replay``: the fold, its late-layer tail, the
separate replay forward; addendum §2.3, §2.4, §5 E1/E2/W3/W5, §6 A8), built as
:mod:`features.request_window.mutants` says (on the engine's own
:class:`~features.request_window.tail_graphs.engine.TailGraphPath` where the bug is in its
prefix / replay half); kinds named per mutant."""

from __future__ import annotations

import torch

from swafuzz.features.request_window.engine import WindowPath, path_with
from swafuzz.features.request_window.tail_graphs.engine import TailGraphPath
from swafuzz.features.request_window.window import RequestWindowModel, seq_after
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import ForwardMode
from swafuzz.targets.mutants import mutant


class _ReplayAppendedPath(WindowPath):
    def fold(self, i, per):
        if not any(r for _, r, _ in per):
            return super().fold(i, per)
        al = self.e.allocator
        rows, locs, per_req = [], [], []
        tail_rows, tail_locs = [], []
        for rid, r, new in per:
            toks = al.tokens[rid]
            n0 = len(toks) - len(new)
            floor = n0 - r if r else 0
            sl = self.slot.get(rid, 0)
            rows += [(sl, p, floor) for p in range(n0, len(toks))]
            locs += new
            tail_rows += [(sl, p, floor) for p in range(n0 - r, n0)]
            tail_locs += toks[n0 - r:n0]
            per_req.append(len(new))
        return [self.forward(i, ForwardMode.EXTEND, rows + tail_rows, locs + tail_locs,
                             len(per), None)]


@mutant("replay_rows_appended", ("encoder_replay",), "addendum §2.3 (0.5.23 fold: replay rows "
        "prepended per request) and §6 A8 / §5 W3 (one request must form one run)",
        expected=("window", "compressor"))
class ReplayRowsAppended(UnifiedEngine):
    """The fold appends the replay rows after the whole extend instead of in front of their
    request: a replayed request forms two runs (A8, W3)."""

    step_path_cls = _ReplayAppendedPath


class _NoResetWindow(RequestWindowModel):
    def reset(self, slot):
        self.prepared = None


@mutant("replay_without_reset", ("encoder_replay",), "addendum §2.3 (reset(slot) clears the "
        "slot's tags before a replay) and §5 E2", expected=("window",))
class ReplayWithoutReset(UnifiedEngine):
    """Encoder replay without ``reset(slot)`` first: the slot's tags keep the old positions
    (E2)."""

    step_path_cls = path_with(WindowPath, window_cls=_NoResetWindow)


class _ReplayNotCommittedPath(WindowPath):
    def layout(self, req, pos, floor, groups):
        lay = super().layout(req, pos, floor, groups)
        if self.replaying and self.replay_rows.numel() == req.numel():
            lay.commit_mask = lay.commit_mask & ~self.replay_rows
        return lay

    replaying = False

    def fold(self, i, per):
        mask = []
        for _rid, r, new in per:
            mask += [True] * r + [False] * len(new)
        self.replay_rows = torch.tensor(mask, dtype=torch.bool, device=self.device)
        self.replaying = any(mask)
        try:
            return super().fold(i, per)
        finally:
            self.replaying = False


@mutant("replay_rows_not_committed", ("encoder_replay",), "addendum §2.3 (replay rows' SWA "
        "rows go through the window and are committed) and §5 E1", expected=("window",))
class ReplayRowsNotCommitted(UnifiedEngine):
    """The replay rows (prepended by the fold) are left out of the commit mask (E1)."""

    step_path_cls = _ReplayNotCommittedPath


class _TailEncoderFloorPath(WindowPath):
    def init_metadata(self, fb, req, floor, groups, per_req):
        super().init_metadata(fb, req, floor, groups, per_req)
        tm = self.tail_metadata
        if self.skip_init(fb.forward_mode) or tm is None or not self.on:
            return
        idx, _, tfloor = self.tail(per_req, seq_after(per_req, fb.positions))
        enc = floor[idx]
        tm.core_attn_metadata.request_window_layout = self.layout(
            req[idx], fb.positions[idx], torch.where(enc > 0, enc, tfloor), groups)


@mutant("tail_encoder_floor", ("replay_tail",), "addendum §2.4 (late-layer read floor "
        "max(0, seq - W), or the encoder floor when larger) and §2.3 (encoder floor Pq - r)",
        expected=("window",))
class TailEncoderFloor(UnifiedEngine):
    """The late layers of an EXTEND that replays a request read from its encoder floor
    ``Pq - r`` instead of ``max(0, seq - W)`` (the 'or' of addendum §2.4 read as 'else'); kind
    ``replay_tail``."""

    step_path_cls = _TailEncoderFloorPath


class _WrongSpanPath(TailGraphPath):
    def replay_span(self, rid, r, new):
        end = len(self.e.allocator.tokens[rid])
        return end - r, end


@mutant("separate_replay_wrong_span", ("replay_separate",), "addendum §2.3 and §5 E2 (separate "
        "replay forward of 0.5.21/0.5.22 and 0.5.23 ROCm: out_cache_loc = req_to_token[slot, "
        "P - r:P], encoder_swa_replay.run_encoder_swa_replay)",
        expected=("window", "history", "compressor"))
class SeparateReplayWrongSpan(UnifiedEngine):
    """The separate replay forward replays the last ``r`` tokens of the request's new length
    (``seq_lens``) instead of its cached prefix ``[Pq - r, Pq)`` (E2); kind ``replay_separate``."""

    step_path_cls = _WrongSpanPath


class _NoResetSeparatePath(TailGraphPath):
    def reset_hits(self, per):
        """The hit slots keep their old window (no reset before the replay forward)."""


@mutant("separate_replay_no_reset", ("replay_separate",), "addendum §2.3 and §5 E2 (reset "
        "before replay: encoder_swa_replay._reset_windows_and_collect_hits, called by "
        "run_encoder_swa_replay)", expected=("window",))
class SeparateReplayNoReset(UnifiedEngine):
    """The separate replay forward runs without resetting the hit slots' windows first (E2);
    kind ``replay_separate``."""

    step_path_cls = _NoResetSeparatePath


class _DeferredTagWindow(RequestWindowModel):
    """Ring rows committed at once; tags queued until :meth:`flush` (end of the step)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._pending: list = []

    def commit(self, layer: int) -> None:
        self._pending.append((layer, *self.commit_rows(layer)))

    def flush(self) -> None:
        for layer, dst, pos in self._pending:
            self.tags[layer, dst] = pos
        self._pending = []

    def reset(self, slot: int) -> None:
        self.flush()  # a reset comes after the tags it clears
        super().reset(slot)


class _DeferredTagPath(UnifiedEngine.step_path_cls):  # the engine's path (tail graphs too)
    window_cls = _DeferredTagWindow

    def step_obs(self, i: int):
        if self.on:
            self.window.flush()
        return super().step_obs(i)


@mutant("tags_deferred_to_step_end", ("replay_separate",), "addendum §5 W5 (tags[layer, "
        "history_src] == history_pos at use; upstream RequestWindow.buffer's strict "
        "dsv41.swa_history_present) and E1, §2.2 (commit_packed_rows writes rows and tags "
        "together)", expected=("history",))
class TagsDeferredToStepEnd(UnifiedEngine):
    """The commit writes the ring rows but stamps their tags only when the step ends: a second
    forward of the same step (the separate encoder replay forward, then the extend) uses rows
    whose tags still say 'empty' (W5, E1). Bytes and end-of-step tags are right, so only the
    ``history`` check (tags at use) sees it."""

    step_path_cls = _DeferredTagPath
