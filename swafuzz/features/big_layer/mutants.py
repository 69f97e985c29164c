"""Mutant of the store's address arithmetic past 2^31 bytes (feature ``big_layer``); reached
only by the ``bigaddr`` kind (the default kinds' layers are far below 2^31 bytes, where int32
and int64 addresses are the same number)."""

from __future__ import annotations

import torch

from swafuzz.kernels import contracts
from swafuzz.kernels.launch import capturing
from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant

_2_31, _2_32 = 1 << 31, 1 << 32


def int32_wrap(x: torch.Tensor) -> torch.Tensor:
    """``x`` (int64) as a two's-complement int32 computation leaves it."""
    return (x + _2_31) % _2_32 - _2_31


class _Int32AddressBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        """Slot ``s``'s byte address ``page * stride + offset * row bytes`` in int32 (wrapping at
        2^31); a negative address indexes from the byte view's end, as torch does (a kernel would write
        before the buffer). The rest is the unified store's; the DSV4 store is left as it is."""
        if cache.dim() != 3:
            return super()._store(cache, loc, rows)
        if self.row_tables is not None:  # as the unified store: -1 rows skipped first
            loc = self.store_skip_guard(loc)
        contracts.check_store_static(cache, loc, rows)  # the host checks stay the kernel's
        if not capturing():
            contracts.check_store_values(cache, loc)
        pages, p, d = cache.shape
        item = cache.element_size()
        rb = d * item
        loc = loc.to(torch.int64)
        addr = int32_wrap((loc >> (p.bit_length() - 1)) * (cache.stride(0) * item)
                          + (loc & (p - 1)) * rb)
        size = pages * cache.stride(0) * item
        flat = torch.empty(0, dtype=torch.uint8, device=cache.device).set_(
            cache.untyped_storage(), cache.storage_offset() * item, (size,), (1,))
        idx = addr[:, None] + torch.arange(rb, dtype=torch.int64, device=cache.device)
        flat[idx] = rows.contiguous().view(torch.uint8).reshape(-1, rb)


@mutant("store_int32_address", ("bigaddr",), "spec §4.6 (device-side addressing in both store "
        "kernels is int32 arithmetic: page * PageBytes + offset * row bytes, which wraps for a "
        "layer past 2^31 bytes); §9.8 (all SWA ids and addresses < 2^31)",
        expected=("pool_bytes", "write_set"))
class StoreInt32Address(UnifiedEngine):
    """Slots past byte 2^31 of a layer are written at their int32-wrapped address: the row
    lands 2^32 bytes lower (indexed from the layer's end: a low page), its own slot stays
    poisoned."""

    backend_cls = _Int32AddressBackend
