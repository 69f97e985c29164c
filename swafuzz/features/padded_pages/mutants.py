"""Mutant of the padded SWA page stride (feature ``padded_pages``: DSV4 pages of
``ceil(584*P/576)*576`` bytes; spec §4.6, §9.13); reached only by the ``padded_pages`` kind."""

from __future__ import annotations

from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _DenseStrideBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        pages, p, d = cache.shape
        super()._store(cache.as_strided(cache.shape, (p * d, d, 1)), loc, rows)


@mutant("store_dense_page_stride", ("padded_pages",), "spec §4.6 (the DSV4 SWA pool's page "
        "stride ceil(584*P/576)*576 bytes is not P * row bytes; the store kernels address "
        "page * PageBytes); §9.13 address-arithmetic class", expected=("redzones", "pool_bytes"))
class StoreDensePageStride(UnifiedEngine):
    """The store addresses slot ``s`` at ``s * row_bytes`` (dense stride) in a pool whose pages
    are padded: every page past the first is written at the wrong bytes."""

    backend_cls = _DenseStrideBackend
