"""Sparse SWA layer snapshots: one layer's bytes held page by page (issue 19 item 4).

A layer's bytes (``swa_slots * row_bytes``, slot order, no page pads: ``StepObs.pools`` /
``StepExp.pools`` per layer) are too many to copy per step at 2 GiB. :class:`PagedBytes` holds
pages of ``P * row_bytes``; a page not stored is ``fill`` (the poison byte) throughout. The target
stores every page differing from the fill after a full scan (``SWAKVPool.layer_pages``: a wild
write marks its page too); the oracle stores every page it writes. Two are equal exactly when
their dense bytes are. Used for layers of at least :data:`SPARSE_LAYER_BYTES`
(:func:`sparse_layer`, read at call time so tests can lower it). Plain Python, used like ``bytes``.
"""

from __future__ import annotations

#: a layer of at least this many bytes is snapshotted as :class:`PagedBytes` (1 GiB: no Case
#: of the default kinds comes near it; a layer past 2^31 bytes is past it)
SPARSE_LAYER_BYTES = 1 << 30


def sparse_layer(nbytes: int) -> bool:
    """Whether a layer of ``nbytes`` bytes is snapshotted sparsely."""
    return nbytes >= SPARSE_LAYER_BYTES


class PagedBytes:
    """``size`` bytes in pages of ``page`` bytes; ``pages``: page index -> its bytes (a page
    not there is ``fill``: one byte value throughout, or ``page`` bytes of a pattern)."""

    __slots__ = ("size", "page", "fill", "blank", "pages")

    def __init__(self, size: int, page: int, fill: int | bytes, pages: dict | None = None):
        if page < 1 or size % page:
            raise ValueError(f"PagedBytes: size {size} must be a whole number of pages of "
                             f"{page} bytes (page >= 1)")
        self.size, self.page, self.fill = size, page, fill
        self.blank = bytes([fill]) * page if isinstance(fill, int) else bytes(fill)
        if len(self.blank) != page:
            raise ValueError(f"PagedBytes: a fill pattern of {len(self.blank)} bytes for pages "
                             f"of {page}")
        self.pages: dict[int, bytes | bytearray] = dict(pages or {})
        for k, v in self.pages.items():
            if not 0 <= k < size // page or len(v) != page:
                raise ValueError(f"PagedBytes: page {k} ({len(v)} bytes) is not one of the "
                                 f"{size // page} pages of {page} bytes")

    def __len__(self) -> int:
        return self.size

    def like(self) -> PagedBytes:
        """The same geometry, every byte the fill (the poison state before any write)."""
        return PagedBytes(self.size, self.page, self.fill)

    def copy(self) -> PagedBytes:
        return PagedBytes(self.size, self.page, self.fill,
                          {k: bytearray(v) for k, v in self.pages.items()})

    def page_bytes(self, k: int) -> bytes | bytearray:
        got = self.pages.get(k)
        return self.blank if got is None else got

    def _span(self, key) -> tuple[int, int]:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("PagedBytes: only contiguous slices [a:b] are supported")
        a, b, _ = key.indices(self.size)
        return a, max(a, b)

    def __getitem__(self, key) -> bytes:
        a, b = self._span(key)
        out = bytearray()
        while a < b:
            k, o = divmod(a, self.page)
            n = min(b - a, self.page - o)
            out += self.page_bytes(k)[o:o + n]
            a += n
        return bytes(out)

    def __setitem__(self, key, data) -> None:
        a, b = self._span(key)
        if len(data) != b - a:
            raise ValueError(f"PagedBytes: {len(data)} bytes assigned to a slice of {b - a}")
        i = 0
        while a < b:
            k, o = divmod(a, self.page)
            n = min(b - a, self.page - o)
            buf = self.pages.get(k)
            if not isinstance(buf, bytearray):
                buf = self.pages[k] = bytearray(self.page_bytes(k))
            buf[o:o + n] = data[i:i + n]
            a, i = a + n, i + n

    def __bytes__(self) -> bytes:
        """The dense bytes (small layers and tests only: this is the whole layer)."""
        return b"".join(bytes(self.page_bytes(k)) for k in range(self.size // self.page))

    def differing_pages(self, other: PagedBytes) -> list[int]:
        """Pages whose bytes differ between ``self`` and ``other`` (over the pages both have),
        sorted; the page sizes must agree."""
        if self.page != other.page:
            raise ValueError(f"PagedBytes: pages of {self.page} and {other.page} bytes differ")
        n = min(self.size, other.size) // self.page
        keys = range(n) if self.blank != other.blank else set(self.pages) | set(other.pages)
        return sorted(k for k in keys if k < n and self.page_bytes(k) != other.page_bytes(k))

    def slot_diffs(self, other: PagedBytes, rb: int, start: int) -> list[int]:
        """Slots ``>= start`` (``rb`` bytes each, pages holding whole slots) whose bytes differ."""
        if self.page % rb:
            raise ValueError(f"PagedBytes: page of {self.page} bytes is not whole slots of {rb}")
        per = self.page // rb
        out = []
        for k in self.differing_pages(other):
            a, b = self.page_bytes(k), other.page_bytes(k)
            out += [k * per + j for j in range(per) if k * per + j >= start
                    and a[j * rb:(j + 1) * rb] != b[j * rb:(j + 1) * rb]]
        return out

    def __eq__(self, other) -> bool:
        if isinstance(other, PagedBytes):
            return (self.size, self.page) == (other.size, other.page) and \
                not self.differing_pages(other)
        return NotImplemented

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return (f"PagedBytes({self.size} bytes, pages of {self.page}, fill {self.fill!r}, "
                f"{len(self.pages)} stored)")


def slot_diffs(a, b, rb: int, start: int) -> list[int]:
    """Slots ``>= start`` of ``rb`` bytes where layer bytes ``a`` and ``b`` differ (over the
    shorter); ``a`` and ``b`` both ``bytes``-like, or both :class:`PagedBytes`."""
    if isinstance(a, PagedBytes) or isinstance(b, PagedBytes):
        if not (isinstance(a, PagedBytes) and isinstance(b, PagedBytes)):
            raise TypeError("slot_diffs: a sparse layer compares only with a sparse layer")
        return a.slot_diffs(b, rb, start)
    n = min(len(a), len(b)) // rb
    if a[start * rb:n * rb] == b[start * rb:n * rb]:
        return []  # the common case, compared in C
    return [i for i in range(start, n) if a[i * rb:(i + 1) * rb] != b[i * rb:(i + 1) * rb]]


def poison_like(now, fill: int):
    """The layer ``now`` before any write: every byte ``fill``."""
    if isinstance(now, PagedBytes):
        return now.like()
    return bytes([fill]) * len(now)
