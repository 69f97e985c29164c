"""Graph runners: captured buckets over static buffers (spec §5.1-§5.3).

Static buffers are sized for the largest bucket: ``static_loc`` int64 ``[max_bs *
tokens_per_req]`` (the graph's ``out_cache_loc``), ``static_seq_lens`` int64 ``[max_bs]`` (fill
1), ``static_positions`` int64 ``[max_rows]``, and per forward and layer a payload buffer
``[rows_per_forward(max_bs), row_width]`` of the row dtype. A bucket is captured on first use
(synthetic capture state, out-graph prep with ``in_capture=True``, ``executor.capture(run_once)``);
each use copies the live batch in (``load_batch``), runs the out-graph prep on a replay view and
replays.

* :class:`DecodeGraphRunner` (decode/verify/IDLE, §5.1): raw bs padded to the bucket, loc
  buffer zeroed first when ``bs != raw_bs``; ``run_once`` = in-graph init + forward; the replay
  view carries the live ``out_cache_loc``.
* :class:`DraftExtendGraphRunner` (§5.2): loc buffer of ones, zeroed when ``bs*width !=
  num_tokens``; replay loc ``buffer[:num_tokens]``; ``run_once`` skips the in-graph init (the
  resolver's fallback translation is recorded per layer).
* :class:`MultiStepDraftRunner` (§5.3): one ``bs*topk*steps`` buffer; ``run_once`` = in-graph
  init of every step backend, then a forward per step ``s < steps-1`` over its slice.

A forward's ``StoreRecord`` list is refilled inside ``run_once``; after a replay it holds, by
reference, the loc tensors the captured stores used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from swafuzz.targets.backend import (
    DSV4Backend,
    MultiStepBackend,
    StoreRecord,
    per_step_draft_out_cache_loc,
)
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.model import SWAModel

#: ``rows_for(fwd, layer, n_rows) -> [n_rows, row_width]`` K rows of one forward and layer.
RowsFn = Callable[[int, int, int], torch.Tensor]

SEQ_LENS_FILL = 1  # the DSV4 backend's seq_lens fill value for padded requests


@dataclass
class CapturedBucket:
    bs: int
    rows: int  # rows per forward
    handle: object
    logs: list[list[StoreRecord]]  # per forward of the graph
    baked: dict[str, list[int]] = field(default_factory=dict)
    #: per forward of the graph, what the last replay's out-graph prep left on its backend
    #: (:meth:`targets.backend.DSV4Backend.prepared`), read before the replay
    prepared: list[dict[str, list[int]]] = field(default_factory=list)


class GraphRunner:
    """Shared machinery; subclasses set the capture mode, widths and ``run_once``."""

    capture_mode: ForwardMode = ForwardMode.DECODE
    static_loc_init = 0  # initial value of the static loc buffer

    def __init__(self, model: SWAModel, backend, executor, buckets: tuple[int, ...],
                 tokens_per_req: int):
        self.model = model
        self.backend = backend
        self.executor = executor
        self.buckets = tuple(buckets)
        self.tokens_per_req = tokens_per_req
        self.max_bs = max(self.buckets)
        pool = model.pool
        dev = pool.device
        self.max_rows = self.max_bs * tokens_per_req
        self.static_loc = torch.full((self.max_rows,), self.static_loc_init, dtype=torch.int64,
                                     device=dev)
        self.static_seq_lens = torch.full((self.max_bs,), SEQ_LENS_FILL, dtype=torch.int64,
                                          device=dev)
        self.static_positions = torch.zeros(self.max_rows, dtype=torch.int64, device=dev)
        fwd_rows = self.rows_per_forward(self.max_bs)
        self.static_rows = [
            [torch.zeros(fwd_rows, pool.row_width, dtype=pool.row_dtype, device=dev)
             for _ in range(pool.num_layers)]
            for _ in range(self.num_forwards)
        ]
        self.captured: dict[int, CapturedBucket] = {}

    # -- shape helpers --------------------------------------------------------------------------
    @property
    def num_forwards(self) -> int:
        return 1

    def rows_per_forward(self, bs: int) -> int:
        return bs * self.tokens_per_req

    def bucket_for(self, raw_bs: int) -> int | None:
        for b in self.buckets:
            if b >= raw_bs:
                return b
        return None

    def backends(self) -> list[DSV4Backend]:
        return [self.backend]

    # -- capture --------------------------------------------------------------------------------
    def prepare_capture_buffers(self) -> None:
        """Synthetic capture state: loc 0 (dummy slot), seq_lens fill value, positions 0."""
        self.static_loc.zero_()
        self.static_seq_lens.fill_(SEQ_LENS_FILL)
        self.static_positions.zero_()

    def capture_batch(self, bs: int) -> ForwardBatch:
        rows = bs * self.tokens_per_req
        return ForwardBatch(self.capture_mode, bs, self.static_loc[:rows],
                            self.static_seq_lens[:bs], self.static_positions[:rows])

    def capture(self, bs: int) -> CapturedBucket:
        self.prepare_capture_buffers()
        fb = self.capture_batch(bs)
        for b in self.backends():
            b.baked = {}
        self.backend.init_forward_metadata_out_graph(fb, in_capture=True)
        rows = self.rows_per_forward(bs)
        logs: list[list[StoreRecord]] = [[] for _ in range(self.num_forwards)]
        payload = [[r[:rows] for r in per_layer] for per_layer in self.static_rows]

        def run_once() -> None:
            self.run_once(fb, payload, logs)

        handle = self.executor.capture(run_once)
        baked: dict[str, list[int]] = {"rows": [rows]}
        for b in self.backends():
            baked.update(b.baked)
        cap = CapturedBucket(bs, rows, handle, logs, baked)
        self.captured[bs] = cap
        return cap

    def run_once(self, fb: ForwardBatch, payload: list[list[torch.Tensor]],
                 logs: list[list[StoreRecord]]) -> None:
        raise NotImplementedError

    # -- replay ---------------------------------------------------------------------------------
    def fill_static_loc(self, live_loc: torch.Tensor, rows: int) -> None:
        """Padded (``rows != live rows``): zero the whole loc buffer first; then copy the real
        rows (spec §5.1, #24743)."""
        n = live_loc.numel()
        if n != rows:
            self.static_loc.zero_()
        self.static_loc[:n].copy_(live_loc)

    def load_batch(self, fb: ForwardBatch, bs: int) -> None:
        raw_bs = fb.batch_size
        rows = bs * self.tokens_per_req
        self.fill_static_loc(fb.out_cache_loc, rows)
        if bs != raw_bs:
            self.static_seq_lens.fill_(SEQ_LENS_FILL)
            self.static_positions.zero_()
        self.static_seq_lens[:raw_bs].copy_(fb.seq_lens[:raw_bs])
        self.static_positions[:fb.positions.numel()].copy_(fb.positions)

    def load_rows(self, bs: int, rows_for: RowsFn) -> None:
        rows = self.rows_per_forward(bs)
        for f, per_layer in enumerate(self.static_rows):
            for layer, buf in enumerate(per_layer):
                buf[:rows].copy_(rows_for(f, layer, rows))

    def replay_view(self, fb: ForwardBatch, bs: int) -> ForwardBatch:
        rows = bs * self.tokens_per_req
        return fb.view(batch_size=bs, forward_mode=self.capture_mode,
                       actual_forward_mode=fb.forward_mode,
                       seq_lens=self.static_seq_lens[:bs],
                       positions=self.static_positions[:rows])

    def run(self, fb: ForwardBatch, rows_for: RowsFn) -> CapturedBucket:
        """Run ``fb`` through its bucket (captured on first use); returns the bucket, whose
        ``logs`` hold the store records of this replay."""
        bs = self.bucket_for(fb.batch_size)
        assert bs is not None, (
            f"{type(self).__name__}.run: batch size {fb.batch_size} exceeds the largest "
            f"bucket {self.max_bs}")
        cap = self.captured.get(bs) or self.capture(bs)
        self.load_batch(fb, bs)
        self.load_rows(bs, rows_for)
        self.backend.init_forward_metadata_out_graph(self.replay_view(fb, bs))
        cap.prepared = self.prepared(cap)
        self.executor.replay(cap.handle)
        return cap

    def prepared(self, cap: CapturedBucket) -> list[dict[str, list[int]]]:
        """Per forward of the graph, what the out-graph prep left on the backend that forward's
        stores resolve through (host values, read before the replay)."""
        backends = self.backends()
        return [backends[f].prepared() for f in range(self.num_forwards)]


class DecodeGraphRunner(GraphRunner):
    """Decode / target-verify runner (capture mode DECODE or TARGET_VERIFY; IDLE replays through
    the DECODE graphs with ``actual_forward_mode = IDLE``)."""

    def __init__(self, model, backend, executor, buckets, tokens_per_req: int = 1,
                 capture_mode: ForwardMode = ForwardMode.DECODE):
        self.capture_mode = capture_mode
        super().__init__(model, backend, executor, buckets, tokens_per_req)

    def run_once(self, fb, payload, logs) -> None:
        logs[0].clear()
        self.backend.store_log = logs[0]
        self.backend.init_forward_metadata_in_graph(fb)
        self.model.forward(fb, self.backend, payload[0])


class DraftExtendGraphRunner(GraphRunner):
    """EAGLE draft-extend runner (DRAFT_EXTEND_V2, width = num_draft_tokens per request)."""

    capture_mode = ForwardMode.DRAFT_EXTEND_V2
    static_loc_init = 1  # upstream initialises this buffer with ones

    def prepare_capture_buffers(self) -> None:
        """Upstream captures at start-up, when ``M`` is all zero, so the ones-initialised buffer
        writes the dummy slot. Capturing lazily in a live engine (``M[1]`` is a live slot when
        P == 1, spec §9.17), the buffer is zeroed first to keep capture writes in page 0."""
        super().prepare_capture_buffers()

    def replay_view(self, fb: ForwardBatch, bs: int) -> ForwardBatch:
        view = super().replay_view(fb, bs)
        return view.view(out_cache_loc=self.static_loc[:fb.out_cache_loc.numel()])

    def run_once(self, fb, payload, logs) -> None:
        logs[0].clear()
        self.backend.store_log = logs[0]
        self.model.forward(fb, self.backend, payload[0])


class MultiStepDraftRunner(GraphRunner):
    """Multi-step draft decode (topk, num_steps >= 2): one graph per bucket runs every step."""

    #: the per-step write-target layout (the EAGLE worker's helper; a target may swap it)
    per_step_loc = staticmethod(per_step_draft_out_cache_loc)

    def __init__(self, model, backend: MultiStepBackend, executor, buckets, topk: int,
                 num_steps: int):
        self.topk = topk
        self.num_steps = num_steps
        super().__init__(model, backend, executor, buckets, topk * num_steps)

    @property
    def num_forwards(self) -> int:
        return self.num_steps - 1

    def rows_per_forward(self, bs: int) -> int:
        return bs * self.topk

    def backends(self) -> list[DSV4Backend]:
        return list(self.backend.backends)

    def run_once(self, fb, payload, logs) -> None:
        self.backend.init_forward_metadata_in_graph(fb)
        per_step = self.per_step_loc(fb.out_cache_loc, fb.batch_size, self.topk,
                                     self.num_steps)
        for s in range(self.num_steps - 1):
            b = self.backend.backends[s]
            logs[s].clear()
            b.store_log = logs[s]
            self.model.forward(fb.view(out_cache_loc=per_step[s]), b, payload[s])
