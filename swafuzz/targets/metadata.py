"""Attention metadata and its copy/assign semantics across graph replays (spec §4.1, §4.2).

* :class:`CoreAttnMetadata` models ``DSV4AttnMetadata``'s write-path fields: ``page_size``
  (check-eq); ``raw_out_loc`` int64 ``[rows]``, ``seq_lens`` int64 ``[bs]``, ``positions`` int64
  ``[rows]`` (copied in place: the graph reads the persistent tensors); ``swa_out_cache_loc``
  int32 ``[rows]`` or None (assigned, never copied: the in-graph op recomputes it each replay).
* :class:`AttnMetadata` (``DSV4Metadata``): a ``core_attn_metadata`` holder;
  :class:`RawDecodeMetadata` (``DSV4RawDecodeMetadata``): raw inputs, **no**
  ``core_attn_metadata``; the in-graph init upgrades it. :func:`copy_metadata`: the field copier.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch


def copy_metadata(src, dst, check_eq: tuple[str, ...], copy: tuple[str, ...],
                  assign: tuple[str, ...]) -> None:
    """Refresh ``dst`` (persistent) from ``src`` (fresh): check-eq fields asserted equal; copy
    fields ``dst.f.copy_(src.f)`` in place (both tensors, or both None: skipped); assign fields
    rebound. AssertionError names the field on a broken rule, or a dataclass field missing from
    or repeated in the three lists."""
    names = [f.name for f in dataclasses.fields(dst)]
    listed = list(check_eq) + list(copy) + list(assign)
    for n in names:
        assert listed.count(n) == 1, (
            f"copy_metadata: field {n!r} must appear exactly once across check_eq/copy/assign "
            f"(appears {listed.count(n)} times)"
        )
    extra = set(listed) - set(names)
    assert not extra, f"copy_metadata: unknown fields {sorted(extra)}"
    for n in check_eq:
        a, b = getattr(src, n), getattr(dst, n)
        assert a == b, f"copy_metadata: check-eq field {n!r} differs ({a!r} vs {b!r})"
    for n in copy:
        s, d = getattr(src, n), getattr(dst, n)
        if s is None and d is None:
            continue
        assert d is not None, f"copy_metadata: copy field {n!r}: destination is None"
        assert s is not None, f"copy_metadata: copy field {n!r}: source is None"
        d.copy_(s)
    for n in assign:
        setattr(dst, n, getattr(src, n))


@dataclass
class CoreAttnMetadata:
    """``DSV4AttnMetadata`` (subset). Shapes: ``rows`` query-token rows, ``bs`` requests."""

    page_size: int
    raw_out_loc: torch.Tensor | None  # int64 [rows] full locations the metadata was built from
    seq_lens: torch.Tensor  # int64 [bs]
    positions: torch.Tensor  # int64 [rows]
    swa_out_cache_loc: torch.Tensor | None = None  # int32 [rows] = int32(M[loc])

    CHECK_EQ_FIELDS = ("page_size",)
    COPY_FIELDS = ("raw_out_loc", "seq_lens", "positions")
    ASSIGN_FIELDS = ("swa_out_cache_loc",)

    def copy_(self, src: CoreAttnMetadata) -> None:
        copy_metadata(src, self, self.CHECK_EQ_FIELDS, self.COPY_FIELDS, self.ASSIGN_FIELDS)


@dataclass
class AttnMetadata:
    """``DSV4Metadata``: the per-forward metadata the backend exposes as ``forward_metadata``."""

    core_attn_metadata: CoreAttnMetadata


@dataclass
class RawDecodeMetadata:
    """``DSV4RawDecodeMetadata``: raw inputs, no ``core_attn_metadata`` (spec §4.1)."""

    seq_lens: torch.Tensor  # int64 [bs]
    out_cache_loc: torch.Tensor | None  # int64 [rows]
    positions: torch.Tensor  # int64 [rows]

    def copy_(self, src: RawDecodeMetadata) -> None:
        copy_metadata(src, self, (), ("seq_lens", "out_cache_loc", "positions"), ())
