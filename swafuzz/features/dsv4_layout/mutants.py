"""Mutants of the DSV4 SWA cache layout store (pool layout ``"dsv4"``; spec §4.6), reached only by
the ``dsv4_layout`` kind: each quantizes as the store does, then writes the token's 584 bytes
where the layout does not say.
"""

from __future__ import annotations

import torch

from swafuzz.kernels import dsv4_store
from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


def _static(backend: DSV4Backend, cache, loc, rows) -> bool:
    """False for an opaque-row pool (the mutant's store is the unified one there)."""
    if backend.pool.layout != "dsv4":
        return False
    dsv4_store.check_static(cache, loc, rows, backend.page_size)
    return True


class _TokenContiguousBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        if not _static(self, cache, loc, rows):
            return super()._store(cache, loc, rows)
        data, scales = dsv4_store.quantize(rows)
        dsv4_store.scatter(cache, loc, data, scales, self.page_size, data_stride=584,
                           scale_base=576, scale_stride=584)


class _RopeQuantizedBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        if not _static(self, cache, loc, rows):
            return super()._store(cache, loc, rows)
        data, scales = dsv4_store.quantize(rows)
        n = rows.shape[0]
        rope_tile = torch.cat([rows[:, 448:], rows[:, :448]], dim=1).contiguous()
        rdata, rscales = dsv4_store.quantize(rope_tile)  # tile 0 of this row is the rope tile
        data = torch.cat([data[:, :448], rdata[:, :64], data[:, 512:]], dim=1)
        scales = torch.cat([scales, rscales[:, :1]], dim=1)
        assert data.shape == (n, 576) and scales.shape == (n, 8)
        dsv4_store.scatter(cache, loc, data, scales, self.page_size)


class _DenseTokenStrideBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        if not _static(self, cache, loc, rows):
            return super()._store(cache, loc, rows)
        data, scales = dsv4_store.quantize(rows)
        dsv4_store.scatter(cache, loc, data, scales, self.page_size,
                           page_bytes=584 * self.page_size)


@mutant("dsv4_token_contiguous", ("dsv4_layout",), "spec §4.6 (DSV4 SWA page: 576-byte data "
        "rows, then UE8M0 scales at 576*P + offset*8; upstream S_OFFSET = P * 576)",
        expected=("pool_bytes", "write_set"))
class DSV4TokenContiguous(UnifiedEngine):
    """Layout dsv4: each token stored as one 584-byte record, scales at ``offset * 584 + 576``
    instead of ``576 * P + offset * 8`` (visible from P = 2 on)."""

    backend_cls = _TokenContiguousBackend


@mutant("dsv4_rope_quantized", ("dsv4_layout",), "spec §4.6 (bf16 rope at +448 of the 576-byte "
        "row; the V4 stores' rope tile 7 is copied, only V4.1 layouts quantize it)",
        expected=("pool_bytes",))
class DSV4RopeQuantized(UnifiedEngine):
    """Layout dsv4: the rope tile quantized to fp8 like the nope tiles, its scale in the scale
    pad byte, instead of copied as bf16."""

    backend_cls = _RopeQuantizedBackend


@mutant("dsv4_dense_page_stride", ("dsv4_layout",), "spec §4.6 (DSV4 page stride "
        "ceil(584*P/576)*576 bytes, not 584*P); §9.13 address-arithmetic class",
        expected=("pool_bytes", "redzones"))
class DSV4DensePageStride(UnifiedEngine):
    """Layout dsv4: pages addressed at ``584 * P`` bytes, not the padded page stride
    ``ceil(584*P/576)*576``."""

    backend_cls = _DenseTokenStrideBackend
