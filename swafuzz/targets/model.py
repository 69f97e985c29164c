"""The model side of the write path: a stack of SWA layers, each storing its K rows (spec §4.6).

K rows are given (payload bytes from the Case), so a layer's forward is its ``store_cache``
call. Layer ids are global: target ``0..layers-1``, draft from ``layers`` (as upstream numbers
the MTP layer); the pool maps a global id to its buffer.
"""

from __future__ import annotations

import torch

from swafuzz.targets.forward_mode import ForwardBatch
from swafuzz.targets.kv_pool import SWAKVPool


class SWALayer:
    """One attention layer's SWA write."""

    def __init__(self, layer_id: int):
        self.layer_id = layer_id

    def forward(self, fb: ForwardBatch, backend, swa_k: torch.Tensor) -> None:
        """``swa_k``: ``[N, row_width]`` of the pool's row dtype, one row per query-token row."""
        backend.store_cache(self.layer_id, swa_k, fb)


class SWAModel:
    """The layers of one model, writing one pool."""

    def __init__(self, pool: SWAKVPool):
        self.pool = pool
        self.layers = [SWALayer(pool.start_layer + i) for i in range(pool.num_layers)]

    def forward(self, fb: ForwardBatch, backend, rows: list[torch.Tensor]) -> None:
        """Run every layer in order; ``rows[i]`` are the K rows of local layer i."""
        assert len(rows) == len(self.layers), (
            f"SWAModel.forward: rows must hold one tensor per layer ({len(self.layers)}), "
            f"got {len(rows)}"
        )
        for layer, swa_k in zip(self.layers, rows):
            layer.forward(fb, backend, swa_k)
