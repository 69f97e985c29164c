"""The DSV4 cache layout on the engine side (spec §4.6): binds the quantizing store kernel
(:mod:`kernels.dsv4_store`) to a layout-``"dsv4"`` pool's page size, in front of the selected
implementation's translation (slot ``pool_impl`` of the engine and ``sglang`` parts).
"""

from __future__ import annotations

import torch

from swafuzz import features as registry
from swafuzz.features.parts import EnginePart, SGLangPart
from swafuzz.kernels import dsv4_store

#: the ``sglang`` target's store of a dsv4 pool: the release's Triton V4-layout store (its module
#: imports release modules that only some releases have: loaded by reference when a dsv4 pool is
#: built)
RELEASE_IMPL = "swafuzz.features.dsv4_layout.sglang:ReleaseDSV4Impl"


class DSV4LayoutImpl:
    """A kernel implementation for a layout-``"dsv4"`` pool: ``translate`` from the wrapped
    implementation, ``store`` / ``store_unchecked`` the quantizing store of
    :mod:`kernels.dsv4_store`."""

    def __init__(self, inner, page_size: int):
        self.inner = inner
        self.page_size = page_size
        self.__name__ = f"dsv4[{getattr(inner, '__name__', inner)}]"

    def translate(self, mapping: torch.Tensor, loc: torch.Tensor, **kw) -> torch.Tensor:
        return self.inner.translate(mapping, loc, **kw)

    def store(self, cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        dsv4_store.store(cache, loc, rows, self.page_size)

    def store_unchecked(self, cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        dsv4_store.store_unchecked(cache, loc, rows, self.page_size)


def pool_impl(pool, impl) -> DSV4LayoutImpl | None:
    """Hook ``engine.pool_impl``: a dsv4 pool (``pool.layout == "dsv4"``) stores through
    :class:`DSV4LayoutImpl` over ``impl``; None for any other layout."""
    return DSV4LayoutImpl(impl, pool.page_size) if pool.layout == "dsv4" else None


def release_pool_impl(pool, impl):
    """Hook ``sglang.pool_impl``: a dsv4 pool of the ``sglang`` target stores through the
    release's Triton store (:data:`RELEASE_IMPL`, loaded only here); None for any other layout."""
    if pool.layout != "dsv4":
        return None
    return registry.load(RELEASE_IMPL)(impl, pool.page_size)


class DSV4LayoutEngine(EnginePart):
    """The engine part: a dsv4 pool's store."""

    pool_impl = staticmethod(pool_impl)


class DSV4LayoutSGLang(SGLangPart):
    """The ``sglang`` part: a dsv4 pool's store is the release's."""

    pool_impl = staticmethod(release_pool_impl)
