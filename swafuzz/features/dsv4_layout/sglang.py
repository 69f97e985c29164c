"""The DSV4 cache layout on the ``sglang`` target: a dsv4 pool's store is the release's Triton
V4-layout store (:func:`targets.sglang.store.release_store`). Importing this module imports
release modules (a release without the store raises TargetUnavailable)."""

from __future__ import annotations

import torch

from swafuzz.features.dsv4_layout.engine import DSV4LayoutImpl
from swafuzz.targets.sglang.store import release_store


class ReleaseDSV4Impl(DSV4LayoutImpl):
    """:class:`features.dsv4_layout.engine.DSV4LayoutImpl` with the release's Triton store."""

    def store(self, cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        release_store(cache, loc, rows, self.page_size)

    def store_unchecked(self, cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        release_store(cache, loc, rows, self.page_size, checked=False)
