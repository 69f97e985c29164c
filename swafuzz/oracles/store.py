"""Shadow store: the expected bytes of one paged KV buffer after store launches, in plain Python.

Buffer of ``num_pages * S`` bytes (page stride ``S >= P*R``, ``R`` bytes per row); slot ``s`` in
``[0, num_pages*P)`` is the ``R`` bytes at ``(s // P) * S + (s % P) * R``; page padding belongs
to no slot and never changes. :meth:`ShadowStore.store` models one launch, a list of ``(loc,
row_bytes)``: every ``loc`` in range (the kernels' host checks); two writes may share a slot only
in dummy page 0, whose bytes are then undefined (no upstream row order) and not compared.

Never imports torch, ``kernels`` or ``targets``.
"""

from __future__ import annotations

from typing import Iterable, Sequence


class StoreContractError(ValueError):
    """A write list outside the store contract; the message names the argument and the rule."""


class ShadowStore:
    """Expected bytes of one buffer.

    ``initial``: the starting bytes of the whole buffer (``num_pages * page_stride_bytes``), or
    None for all zeros. ``page_stride_bytes`` defaults to ``page_size * row_bytes``.
    """

    def __init__(self, page_size: int, row_bytes: int, num_pages: int,
                 initial: bytes | None = None, page_stride_bytes: int | None = None) -> None:
        if page_size < 1 or page_size & (page_size - 1):
            raise StoreContractError(f"page_size must be a power of two >= 1 (got {page_size})")
        if row_bytes < 1:
            raise StoreContractError(f"row_bytes must be >= 1 (got {row_bytes})")
        if num_pages < 0:
            raise StoreContractError(f"num_pages must be >= 0 (got {num_pages})")
        stride = page_size * row_bytes if page_stride_bytes is None else page_stride_bytes
        if stride < page_size * row_bytes:
            raise StoreContractError(
                f"page_stride_bytes must be >= page_size * row_bytes = {page_size * row_bytes} "
                f"(got {stride})"
            )
        self.page_size = page_size
        self.row_bytes = row_bytes
        self.num_pages = num_pages
        self.page_stride_bytes = stride
        size = num_pages * stride
        if initial is None:
            initial = bytes(size)
        if len(initial) != size:
            raise StoreContractError(
                f"initial must hold num_pages * page_stride_bytes = {size} bytes "
                f"(got {len(initial)})"
            )
        self._buf = bytearray(initial)
        self.dummy_written = False

    @property
    def num_slots(self) -> int:
        return self.num_pages * self.page_size

    def offset(self, slot: int) -> int:
        """Byte offset of ``slot`` in the buffer."""
        return (slot // self.page_size) * self.page_stride_bytes + (slot % self.page_size) * \
            self.row_bytes

    def store(self, writes: Iterable[tuple[int, bytes]]) -> None:
        """Apply one launch's writes ``[(loc, row_bytes), ...]`` (checked first, then applied)."""
        writes = list(writes)
        seen: dict[int, int] = {}
        for i, (loc, row) in enumerate(writes):
            if len(row) != self.row_bytes:
                raise StoreContractError(
                    f"rows[{i}] must hold row_bytes = {self.row_bytes} bytes (got {len(row)})"
                )
            if loc < 0:
                raise StoreContractError(f"loc[{i}] = {loc}: no negative write location")
            if loc >= self.num_slots:
                raise StoreContractError(
                    f"loc[{i}] = {loc} is outside the buffer: every write location must be "
                    f"< num_pages * P = {self.num_slots}"
                )
            if loc >= self.page_size:
                if loc in seen:
                    raise StoreContractError(
                        f"loc[{seen[loc]}] and loc[{i}] both write slot {loc}: two rows may share "
                        f"a target only inside the dummy page 0 (slots < P = {self.page_size})"
                    )
                seen[loc] = i
        for loc, row in writes:
            if loc < self.page_size:
                self.dummy_written = True
            o = self.offset(loc)
            self._buf[o:o + self.row_bytes] = row

    def slot(self, s: int) -> bytes:
        """Expected bytes of slot ``s`` (meaningful for ``s >= P``)."""
        o = self.offset(s)
        return bytes(self._buf[o:o + self.row_bytes])

    def expected_slots(self) -> dict[int, bytes]:
        """``{slot: bytes}`` for every slot outside the dummy page 0 (``slot >= P``)."""
        return {s: self.slot(s) for s in range(self.page_size, self.num_slots)}

    def expected_buffer(self) -> bytes:
        """The whole expected buffer; page 0's rows hold their last-written value in write order,
        which the kernels do not guarantee: compare with :meth:`mismatches`, not equality."""
        return bytes(self._buf)

    def mismatches(self, actual: bytes | bytearray | Sequence[int]) -> list[tuple[str, int]]:
        """Where ``actual`` (the whole buffer's bytes) differs from the expectation, ignoring the
        rows of page 0: ``[("slot", s), ...]`` for slots ``>= P`` and ``[("page_padding", page),
        ...]`` for padding bytes after a page's rows. Empty when they agree."""
        actual = bytes(actual)
        if len(actual) != len(self._buf):
            raise StoreContractError(
                f"actual must hold {len(self._buf)} bytes (got {len(actual)})"
            )
        out: list[tuple[str, int]] = []
        rows_end = self.page_size * self.row_bytes
        for page in range(self.num_pages):
            base = page * self.page_stride_bytes
            if page > 0 and actual[base:base + rows_end] != self._buf[base:base + rows_end]:
                for off in range(self.page_size):
                    o = base + off * self.row_bytes
                    if actual[o:o + self.row_bytes] != self._buf[o:o + self.row_bytes]:
                        out.append(("slot", page * self.page_size + off))
            pad = slice(base + rows_end, base + self.page_stride_bytes)
            if actual[pad] != self._buf[pad]:
                out.append(("page_padding", page))
        return out


def shadow_store(page_size: int, row_bytes: int, num_pages: int, initial: bytes | None,
                 writes: Iterable[tuple[int, bytes]],
                 page_stride_bytes: int | None = None) -> dict[int, bytes]:
    """One launch on a fresh shadow: ``{slot: expected bytes}`` for every slot ``>= P``."""
    s = ShadowStore(page_size, row_bytes, num_pages, initial, page_stride_bytes)
    s.store(writes)
    return s.expected_slots()
