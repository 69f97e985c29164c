"""DP attention's part of the unified engine: data-parallel attention padding (spec §5.4).

Every rank forwards the same row count. A rank with fewer requests pads (``_pad_inputs_to_size``):
``out_cache_loc`` is **rebound** to a new tensor padded with full location 0, positions with 0,
``seq_lens`` with fill value 1, ``batch_size`` the padded count; a rank with no request runs IDLE
on dummy rows. Metadata built before the rebinding keeps the unpadded ``swa_out_cache_loc``, so the
resolver's length check falls back to translating the padded tensor (tail -> slot 0).
:class:`DPAttention` (slot ``rank_pad``; mutants subclass it) pads a step's verify / draft-extend
/ multi-step draft batches to ``rank_tokens``; :func:`step_dp_decode` runs ``dp_decode``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from swafuzz.features.parts import EnginePart
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.observation import ForwardObs

PAD_LOC = 0  # full location of padded rows
SEQ_LENS_FILL = 1


class DPAttention:
    """This rank's view of DP attention: padding decisions for one batch."""

    def __init__(self, device: torch.device | str = "cpu"):
        self.device = torch.device(device)

    @staticmethod
    def padded_tokens(own_tokens: int, rank_tokens: tuple[int, ...]) -> int:
        """MAX_LEN padding: every rank pads to the global maximum."""
        return max(own_tokens, *rank_tokens)

    def idle_batch(self) -> ForwardBatch:
        """The batch of a rank without requests: IDLE, zero rows (padding adds the dummy rows)."""
        empty = torch.zeros(0, dtype=torch.int64, device=self.device)
        return ForwardBatch(ForwardMode.IDLE, 0, empty, empty.clone(), empty.clone())

    @staticmethod
    def padded_spec_tokens(own_tokens: int, rank_tokens: tuple[int, ...], width: int,
                           fixed_width: bool) -> int:
        """MAX_LEN padding of a speculative batch of ``width`` rows per request; fixed-width
        batches (target verify, multi-step draft) round up to whole requests."""
        n = max(own_tokens, *rank_tokens)
        return -(-n // width) * width if fixed_width else n

    def pad_inputs_to_size(self, fb: ForwardBatch, num_tokens: int,
                           batch_size: int | None = None) -> None:
        """Rebind ``fb``'s per-row tensors to new tensors padded to ``num_tokens`` rows;
        ``seq_lens`` to ``batch_size`` entries (decode: one row per request, so ``num_tokens``)."""
        bs = num_tokens if batch_size is None else batch_size
        n = fb.out_cache_loc.numel()
        assert n <= num_tokens, f"pad_inputs_to_size: {n} rows exceed num_tokens={num_tokens}"
        pad = num_tokens - n
        fb.out_cache_loc = F.pad(fb.out_cache_loc, (0, pad), value=PAD_LOC)
        fb.positions = F.pad(fb.positions, (0, pad), value=0)
        fb.seq_lens = F.pad(fb.seq_lens, (0, bs - fb.seq_lens.numel()), value=SEQ_LENS_FILL)
        fb.batch_size = bs

    def rewrite_to_extend(self, fb: ForwardBatch) -> None:
        """Another rank is extending under MAX_LEN (spec §5.4 (3)): this rank's batch becomes
        EXTEND, its own mode stashed in ``original_forward_mode``; no graph runs it."""
        fb.original_forward_mode = fb.forward_mode
        fb.forward_mode = ForwardMode.EXTEND

    def spec_forward(self, eng, i: int, s, pool: str, kind: str, backend, fb: ForwardBatch,
                     n_real: int, width: int, fixed_width: bool) -> list[ForwardObs]:
        """DP attention on engine ``eng``'s verify / draft-extend batch (``rank_tokens`` given,
        spec §5.4): MAX_LEN padding (to whole requests of ``width`` rows when
        ``fixed_width``), rewritten to EXTEND (eager) when another rank extends."""
        padded = self.padded_spec_tokens(fb.out_cache_loc.numel(), s.rank_tokens, width,
                                         fixed_width)
        bs = max(fb.batch_size, -(-padded // width))
        if s.dp_extend:
            self.rewrite_to_extend(fb)
        if eng.can_run_graph(s, fb, bs):
            mode = fb.forward_mode.name
            self.pad_inputs_to_size(fb, padded, bs)
            return eng.graph_forward(i, pool, kind, fb, n_real, mode)
        backend.init_forward_metadata(fb)  # on the unpadded batch
        self.pad_inputs_to_size(fb, padded, bs)  # out_cache_loc rebound after metadata init
        return [eng.eager_stores(i, 0, pool, backend, fb, n_real)]

    def multistep_batch_size(self, fb: ForwardBatch, s, width: int) -> int:
        """The batch size of a multi-step draft batch padded to whole requests of ``width``
        rows (spec §5.4)."""
        return self.padded_spec_tokens(fb.out_cache_loc.numel(), s.rank_tokens, width,
                                       True) // width


def step_dp_decode(eng, i: int, s) -> list[ForwardObs]:
    """``dp_decode`` on engine ``eng``: one token per request, the batch padded to the ranks'
    maximum after metadata init (an empty rank runs IDLE), rewritten to EXTEND (eager) when
    another rank extends."""
    dp = eng.rank_pad
    new = eng.allocator.extend([(rid, 1) for rid in s.rids])
    padded = dp.padded_tokens(len(s.rids), s.rank_tokens)
    if s.rids:
        fb = eng.batch(ForwardMode.DECODE, list(zip(s.rids, new)))
    else:
        fb = dp.idle_batch()
    n_real = len(s.rids)
    if s.dp_extend:
        dp.rewrite_to_extend(fb)
    mode = fb.forward_mode.name
    if eng.can_run_graph(s, fb, padded):
        dp.pad_inputs_to_size(fb, padded)
        return eng.graph_forward(i, "target", "decode", fb, n_real, mode)
    eng.target_backend.init_forward_metadata(fb)  # on the unpadded batch
    dp.pad_inputs_to_size(fb, padded)  # out_cache_loc rebound after metadata init
    return [eng.eager_stores(i, 0, "target", eng.target_backend, fb, n_real)]


STEP_OPS = {"dp_decode": step_dp_decode}


class DPEngine(EnginePart):
    """The engine part: the cross-rank batch padding."""

    rank_pad = DPAttention
