"""The installed SGLang release as the ``sglang`` target's modules use it (imports SGLang).

A leaf of the adapter: the release's version and adapter label, its modules and classes found
by feature (:mod:`swafuzz.targets.sglang.features`), the name-matched ForwardMode
(:func:`real_mode`, :func:`real_batch`) and the one 0.5.12 kernel routed to the release's own
CPU twin. :mod:`.engine`, :mod:`.allocator`, :mod:`.metadata` and the features' sglang seams
import it; it imports none of them.
"""

from __future__ import annotations

from types import SimpleNamespace

from swafuzz import features as registry
from swafuzz.targets.sglang import features, release

__all__ = ["VERSION", "ADAPTER", "TARGET_VERSION", "UNIFIED_RESOLVER", "STORE_PATH",
           "RealForwardMode", "SWATokenToKVPoolAllocator", "RealBackend", "RealPool",
           "backend_mod", "pool_mod", "paged_mod", "real_mode", "real_batch", "bare_backend"]

VERSION, ADAPTER = release()

# the release's modules, found by feature (targets/sglang/features.py, which also pins the
# fused store path before importing them), not by version pin
backend_mod = features.backend_mod
pool_mod = features.pool_mod
paged_mod = features.paged_mod
RealForwardMode = features.RealForwardMode
SWATokenToKVPoolAllocator = features.SWATokenToKVPoolAllocator
RealBackend = features.RealBackend
RealPool = features.RealPool
UNIFIED_RESOLVER = features.RESOLVER and features.IN_GRAPH
#: the store-path family (0.5.12): the pool's cached_loc translation, no resolver
STORE_PATH = features.FAMILY == "store-path"
TARGET_VERSION = f"sglang {VERSION}" + ("" if VERSION == ADAPTER else f" (adapter {ADAPTER})")


def real_mode(name: str):
    """The release's ForwardMode member called ``name`` (values differ from the model's)."""
    try:
        return RealForwardMode[name]
    except KeyError:
        raise ValueError(f"ForwardMode.{name}: sglang {VERSION} has no such member (members: "
                         f"{', '.join(m.name for m in RealForwardMode)})") from None


def real_batch(fb) -> SimpleNamespace:
    """The forward batch as SGLang's code reads it: same tensors, the release's mode."""
    return SimpleNamespace(
        forward_mode=real_mode(fb.forward_mode.name), batch_size=fb.batch_size,
        out_cache_loc=fb.out_cache_loc, seq_lens=fb.seq_lens, positions=fb.positions,
        spec_info=None)


def bare_backend(real_pool, **attrs):
    """A constructor-less ``RealBackend`` over ``real_pool`` (the features' attributes, hook
    ``sglang.bare_backend``, then ``attrs``): ``self`` for the release's methods."""
    sh = object.__new__(RealBackend)
    sh.token_to_kv_pool = real_pool
    sh.forward_metadata = None
    sh.pre_kv_store_hook = None
    for part in registry.parts("sglang"):  # what features' release code reads
        part.bare_backend(sh)
    for name, value in attrs.items():
        setattr(sh, name, value)
    return sh


# ----------------------------------------------------------------------------- 0.5.12 kernels
class _NaiveAllocExtend:
    """``alloc_extend_kernel[grid](...)`` of 0.5.12 routed to the release's own
    ``alloc_extend_naive`` (same arguments, device taken from the output tensor)."""

    def __getitem__(self, grid):
        def launch(prefix_lens, seq_lens, last_loc, free_pages, out_indices, _bs_pow2, page):
            paged_mod.alloc_extend_naive(prefix_lens, seq_lens, last_loc, free_pages,
                                         out_indices, page, out_indices.device)
        return launch


if not features.NAIVE_SWITCH:  # no CPU switch of its own (0.5.12 .. 0.5.22)
    paged_mod.alloc_extend_kernel = _NaiveAllocExtend()
