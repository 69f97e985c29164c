"""The SWA KV pool: one redzoned buffer per layer, and the full->SWA translation (spec §2.2, §4.6).

Per layer one raw ``uint8`` buffer ``[redzone | usable | redzone]``; each redzone is at least a
page of bytes (``P * row_bytes`` rounded up to 64, so page ``-1`` or one past the end lands in
it), filled with :data:`CANARY`. The usable part is ``swa_pages + 1`` pages of ``P * row_bytes
+ page_pad_bytes`` (the pad is canaries, as in the DSV4 pool), rows initially
:data:`scenarios.case.POISON_BYTE`, viewed as ``[swa_pages + 1, P, row_width]`` (per-request
ring ``pool.swa_ring``: ``[swa_buffer_pages, P, row_width]``) of the row dtype (uint8 or
bfloat16) with the padded page stride - the view the store writes.

Layout ``"dsv4"`` (§4.6): pages of ``ceil(584*P/576)*576`` bytes - P 576-byte data rows, their
8-byte scale groups, pad; ``layer_cache`` is the ``[swa_pages + 1, stride]`` uint8 view the
quantizing store (``engine.pool_impl``) writes, ``layer_bytes`` each slot's 584 bytes in order.

The pool holds a *reference* to the allocator's mapping (``register_mapping``; the draft pool
the same tensor, §2.1). ``layer_cache(layer_id)`` indexes ``layer_id - start_layer`` (the
draft's layers follow the target's).
"""

from __future__ import annotations

import torch

from swafuzz import features
from swafuzz.kernels import dsv4_store
from swafuzz.scenarios.case import POISON_BYTE, PoolConfig
from swafuzz.scenarios.paged import PagedBytes, sparse_layer

#: The canary byte pattern of every redzone (repeated, truncated to the redzone length).
CANARY = bytes([0xDE, 0xAD, 0xBE, 0xEF, 0xC0, 0xFF, 0xEE, 0x11])

#: bytes scanned per chunk by :meth:`SWAKVPool.changed_pages`
SCAN_BYTES = 64 << 20

DTYPES = {"uint8": torch.uint8, "bfloat16": torch.bfloat16}


def canary_bytes(n: int) -> bytes:
    return (CANARY * (n // len(CANARY) + 1))[:n]


class SWAKVPool:
    """SWA KV buffers of one model (``"target"`` or ``"draft"``)."""

    #: the side whose parts' ``pool_impl`` answer, if any, is the implementation the pool stores
    #: through
    impl_side = "engine"

    def __init__(self, name: str, pool: PoolConfig, num_layers: int, start_layer: int,
                 impl, device: torch.device | str = "cpu"):
        self.name = name
        self.config = pool
        self.page_size = pool.page_size
        self.num_layers = num_layers
        self.start_layer = start_layer
        self.layout = pool.layout
        self.impl = self.store_impl(pool, impl)
        self.device = torch.device(device)
        self.row_width = pool.row_width
        self.row_dtype = DTYPES[pool.row_dtype]
        self.row_bytes = pool.row_bytes
        page_bytes = pool.page_size * pool.row_bytes
        self.page_bytes = page_bytes  # the rows of one page
        self.page_stride_bytes = pool.page_stride_bytes  # rows + pad
        self.pad_bytes = pool.pad_bytes_per_page
        self.redzone_bytes = -(-self.page_stride_bytes // 64) * 64
        self.usable_bytes = pool.swa_buffer_pages * self.page_stride_bytes  # ring: ring pages
        self.mapping: torch.Tensor | None = None
        self.raw: list[torch.Tensor] = []
        self.caches: list[torch.Tensor] = []
        rz, us = self.redzone_bytes, self.usable_bytes
        canary = torch.frombuffer(bytearray(canary_bytes(rz)), dtype=torch.uint8).to(self.device)
        pad_canary = torch.frombuffer(bytearray(canary_bytes(self.pad_bytes) or b"\0"),
                                      dtype=torch.uint8).to(self.device)[:self.pad_bytes]
        for _ in range(num_layers):
            raw = torch.empty(2 * rz + us, dtype=torch.uint8, device=self.device)
            raw[:rz] = canary
            raw[rz + us:] = canary
            raw[rz:rz + us] = POISON_BYTE
            pages = raw[rz:rz + us].view(pool.swa_buffer_pages, self.page_stride_bytes)
            if self.pad_bytes:
                pages[:, page_bytes:] = pad_canary  # each page's pad: canaries
            self.raw.append(raw)
            if self.layout == "dsv4":
                self.caches.append(pages)  # [pages, stride] uint8, as the DSV4 pool's buffer
                continue
            cache = pages[:, :page_bytes].view(self.row_dtype)  # page stride kept (padded)
            self.caches.append(cache.view(pool.swa_buffer_pages, pool.page_size, pool.row_width))

    # -- mapping --------------------------------------------------------------------------------
    def register_mapping(self, mapping: torch.Tensor) -> None:
        """Keep a reference to the allocator's ``M`` (the unified pool holds no caches to reset)."""
        self.mapping = mapping

    def translate_loc_from_full_to_swa(self, loc: torch.Tensor) -> torch.Tensor:
        """int32 ``[N]`` = ``int32(M[loc])`` through the selected kernel implementation; ``loc``
        int64 ``[N]``. No memo (the unified design dropped the pool caches, spec §2.6-§2.7)."""
        return self.impl.translate(self.mapping, loc)

    def store_impl(self, pool: PoolConfig, impl):
        """The implementation the pool stores through: the first feature's answer for the pool's
        cache layout (slot ``pool_impl`` of the :attr:`impl_side` parts), else ``impl`` itself."""
        got = features.first(self.impl_side, "pool_impl", pool, impl)
        return impl if got is None else got

    # -- buffers --------------------------------------------------------------------------------
    def layer_cache(self, layer_id: int) -> torch.Tensor:
        """``[swa_pages + 1, P, row_width]`` view of the global layer ``layer_id`` (layout
        ``"dsv4"``: ``[swa_pages + 1, page stride]`` uint8)."""
        return self.caches[layer_id - self.start_layer]

    def _pages(self, i: int) -> torch.Tensor:
        rz = self.redzone_bytes
        return self.raw[i][rz:rz + self.usable_bytes].view(-1, self.page_stride_bytes)

    def layer_bytes(self, i: int) -> bytes:
        """The row bytes of local layer ``i`` in slot order (``swa_slots * row_bytes``; page
        pads excluded)."""
        if self.layout != "dsv4" and not self.pad_bytes:
            rz = self.redzone_bytes
            return self._bytes(self.raw[i][rz:rz + self.usable_bytes])
        return self._bytes(self._slot_order(self._pages(i)))

    def _slot_order(self, pages: torch.Tensor) -> torch.Tensor:
        """``[n, page stride]`` uint8 pages -> ``[n, P * row_bytes]``: each page's slots in
        slot order (the DSV4 layout: each slot's data row, then its scale group)."""
        if self.layout == "dsv4":
            p = self.page_size
            data = pages[:, :p * dsv4_store.DATA].reshape(-1, p, dsv4_store.DATA)
            scales = pages[:, p * dsv4_store.DATA:self.page_bytes].reshape(-1, p,
                                                                          dsv4_store.SCALES)
            return torch.cat([data, scales], dim=2).reshape(len(pages), -1)
        return pages[:, :self.page_bytes].contiguous()

    def layer_snapshot(self, i: int):
        """:meth:`layer_bytes`, or for a layer of :data:`scenarios.paged.SPARSE_LAYER_BYTES` or
        more its :class:`scenarios.paged.PagedBytes`: every page whose row bytes are not all
        poison (found by scanning the whole layer, so a write at any address is seen), stored in
        slot order."""
        pages = self._pages(i)
        nbytes = len(pages) * self.page_bytes
        if not sparse_layer(nbytes):
            return self.layer_bytes(i)
        dirty = self.changed_pages(pages[:, :self.page_bytes], bytes([POISON_BYTE]))
        out = PagedBytes(nbytes, self.page_bytes, POISON_BYTE)
        for a in range(0, len(dirty), 64):
            idx = torch.tensor(dirty[a:a + 64], dtype=torch.int64, device=self.device)
            rows = self._bytes(self._slot_order(pages.index_select(0, idx)))
            for j, k in enumerate(dirty[a:a + 64]):
                out.pages[k] = rows[j * self.page_bytes:(j + 1) * self.page_bytes]
        return out

    def changed_pages(self, view: torch.Tensor, clean: bytes) -> list[int]:
        """Indices of the pages (rows of ``view``, ``[n, w]`` uint8) not all ``clean`` (one byte:
        poison; ``w`` bytes: a pad's canary), scanned :data:`SCAN_BYTES` at a time (int64 words
        where possible: clean when the min and max word are the clean word)."""
        uniform = len(set(clean)) == 1
        clean = clean * view.shape[1] if uniform else clean
        words = view
        pat = torch.frombuffer(bytearray(clean), dtype=torch.uint8)
        if view.shape[1] % 8 == 0 and view.stride(0) % 8 == 0 \
                and view.storage_offset() % 8 == 0:
            words, pat = view.view(torch.int64), pat.view(torch.int64)
        pat = pat.to(self.device)
        step = max(1, SCAN_BYTES // max(1, view.stride(0)))
        out: list[int] = []
        for a in range(0, len(words), step):
            blk = words[a:a + step]
            if uniform:
                lo, hi = torch.aminmax(blk, dim=1)  # one pass, no temporary
                hit = (lo != pat[0]) | (hi != pat[0])
            else:
                hit = (blk != pat).any(dim=1)
            out += (hit.nonzero().flatten() + a).tolist()
        return out

    def redzone(self, i: int) -> tuple[bytes, bytes, bytes, bytes]:
        """(canary, bytes before, bytes after, every page's pad bytes in page order) of local layer
        ``i``; each pad is filled with the canary pattern from its start. For a layer snapshotted
        sparsely (:meth:`layer_snapshot`) the pads are a :class:`scenarios.paged.PagedBytes` of
        pad-sized pages, the canary pattern its fill, holding the pads that differ from it."""
        rz, us = self.redzone_bytes, self.usable_bytes
        raw = self.raw[i]
        pads = b""
        if self.pad_bytes:
            view = self._pages(i)[:, self.page_bytes:]
            if sparse_layer(len(view) * self.page_bytes):
                clean = canary_bytes(self.pad_bytes)
                pads = PagedBytes(len(view) * self.pad_bytes, self.pad_bytes, clean,
                                  {k: self._bytes(view[k]) for k in
                                   self.changed_pages(view, clean)})
            else:
                pads = self._bytes(view.contiguous())
        return canary_bytes(rz), self._bytes(raw[:rz]), self._bytes(raw[rz + us:]), pads

    @staticmethod
    def _bytes(t: torch.Tensor) -> bytes:
        return t.detach().cpu().numpy().tobytes()
