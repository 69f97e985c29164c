"""Data-parallel attention padding (spec §5.4).

Every rank forwards the same number of token rows. A rank with fewer requests pads its batch
(``_pad_inputs_to_size``): ``out_cache_loc`` is **rebound** to a new tensor padded with the full
location 0 (the dummy slot), positions padded with 0, ``seq_lens`` padded with the fill value 1;
``batch_size`` becomes the padded count (decode: one row per request). A rank with no request
runs IDLE with only dummy rows. Metadata built before the rebinding keeps the unpadded
``swa_out_cache_loc``; the resolver's length check then falls back to translating the live,
padded tensor (its tail maps to slot 0).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode

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
