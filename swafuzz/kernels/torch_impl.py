"""The torch-op path: translate and store as plain aten ops, as upstream's Python code does.

Shapes (``N`` rows, ``D`` elements per row, ``P`` page size; all rules: :mod:`kernels.contracts`):

* ``translate(mapping, loc, *, out=None) -> out``: int32 ``[N]`` = ``int32(mapping[loc])``;
  negative ``loc`` wraps as torch indexing does (``-1`` gives the sentinel ``-1``); ``out``
  (int32 ``[N]``) is written in place, so a captured graph keeps one buffer.
* ``store(cache, loc, rows) -> None``: ``rows[i]`` into ``cache[loc[i] >> log2(P), loc[i] &
  (P-1)]``, bytes exactly (bf16 moved as int16, NaN payloads survive).
* ``translate_store(mapping, loc, rows, cache, *, out=None) -> out``: both (one launch in the
  Triton / CUDA twins); returns the int32 SWA locations.

Static contracts always run; value contracts (a host sync) only when not
``kernels.launch.capturing()`` (a tape records aten ops; a CUDA graph capture forbids syncs).
"""

from __future__ import annotations

import torch

from swafuzz.kernels import contracts
from swafuzz.kernels.launch import capturing


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Same memory, integer dtype: bfloat16 -> int16, uint8 stays."""
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t


def _translate(mapping: torch.Tensor, loc: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    res = mapping[loc].to(torch.int32)
    if out is None:
        return res
    out.copy_(res)
    return out


def _store(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, log2p: int) -> None:
    if loc.numel() == 0:
        return
    num_pages, page_size, d = cache.shape
    c = _bits(cache)
    r = _bits(rows)
    if num_pages <= 1 or cache.stride(0) == page_size * d:
        # Dense pages: one flat [slots, D] view of the same memory, indexed by the slot id.
        flat = c.as_strided((num_pages * page_size, d), (d, 1))
        flat.index_put_((loc,), r)
    else:
        # Padded pages (page stride > P*D): page / offset with int32 arithmetic.
        c.index_put_((loc >> log2p, loc & (page_size - 1)), r)


def translate(mapping: torch.Tensor, loc: torch.Tensor, *,
              out: torch.Tensor | None = None) -> torch.Tensor:
    """int32 ``[N]`` = ``int32(mapping[loc])`` (see module docstring)."""
    contracts.check_translate_static(mapping, loc, out)
    if not capturing():
        contracts.check_translate_values(mapping, loc)
    return _translate(mapping, loc, out)


def store(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
    """Write ``rows[i]`` to slot ``loc[i]`` of ``cache`` (see module docstring)."""
    log2p = contracts.check_store_static(cache, loc, rows)
    if not capturing():
        contracts.check_store_values(cache, loc)
    _store(cache, loc, rows, log2p)


def store_unchecked(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
    """:func:`store` with the static contract only (for mutants that reproduce a missing host
    check); negative locations wrap Python-style here, as torch indexing does."""
    log2p = contracts.check_store_static(cache, loc, rows)
    _store(cache, loc, rows, log2p)


def translate_store(mapping: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor,
                    cache: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """Translate full ``loc`` (int64 ``[N]``), store ``rows`` at the int32 results; return them."""
    log2p = contracts.check_translate_store_static(mapping, loc, rows, cache, out)
    if not capturing():
        contracts.translate_store_values_validator(mapping, loc, cache)()
    swa = _translate(mapping, loc, out)
    _store(cache, swa, rows, log2p)
    return swa
